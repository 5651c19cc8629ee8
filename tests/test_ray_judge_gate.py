"""Two Ray workers judging for one sweep share one rate limiter and one budget (`tracejudge.llm.ray_gate`)."""

from __future__ import annotations

import json
from pathlib import Path

from tracejudge.core.config import load_config
from tracejudge.simulator.server import SimConfig, SimulatorThread
from tracejudge.stages.judge.estimate import estimate

RPM = 300


def _dataset(path: Path, n: int) -> Path:
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(n):
            fh.write(json.dumps({"id": f"case-{i}", "input": f"Book flight {i} to Paris", "expected_tool_calls": [{"name": "book"}],
                                 "trace": {"steps": [{"tool_calls": [{"name": "book", "arguments": {"flight": i}}]}], "output": f"booked {i}"}}) + "\n")
    return path


def test_two_ray_workers_stay_inside_one_rate_limit_and_one_budget(tmp_path, ray_cluster):
    import ray_helpers

    ray = ray_cluster
    with SimulatorThread(SimConfig(rpm=RPM, tpm=2_000_000, seed=1)) as sim:
        cfg = tmp_path / "sweep.yaml"
        cfg.write_text(
            f"dataset: {{path: {_dataset(tmp_path / 'cases.jsonl', 420)}}}\n"
            "metrics: [{type: TaskCompletion}]\n"
            f"judge: {{provider: openai, base_url: '{sim.url}/v1', model: gpt-4o-mini, max_attempts: 3}}\n"
            f"limits: {{rpm: {RPM}, tpm: 2000000, max_in_flight: 32}}\n"
            f"cache: {{dir: {tmp_path / 'cache'}}}\nrun: {{dir: {tmp_path / 'sweep'}, executor: ray, processes: 1}}\n"
        )
        # A budget of 75% of the expected tokens: it binds, and only a shared budget holds it over both workers.
        needed = estimate(load_config(cfg))["total"]
        cap = int(0.75 * (needed.input_tokens + needed.output_tokens))
        shard = ray.remote(num_cpus=0)(ray_helpers.run_shard)
        summaries = ray.get([shard.remote(str(cfg), [f"run.shard={i}/2", f"budget.max_judge_tokens={cap}"]) for i in (1, 2)])
        stats = sim.stats
        sent = stats.requests
        assert sent > RPM  # the bucket emptied: the limit was in force, not just its burst
        # Two workers drawing from one gate get a handful of 429s at most (4 of 356 once, on a loaded machine);
        # two separate limits would send twice the rate and see a third of their requests refused.
        assert stats.rate_limited / sent < 0.03, f"{stats.rate_limited} of {sent} requests answered 429"
        assert stats.input_tokens + stats.output_tokens <= cap
        skipped = sum(s["status"].get("skipped_budget", 0) for s in summaries)
        ok = sum(s["status"].get("ok", 0) for s in summaries)
        assert skipped > 0 and ok + skipped == 420
    for gate in [a for a in ray.util.list_named_actors(all_namespaces=True) if a["name"].startswith("tracejudge-judge-gate-")]:
        ray.kill(ray.get_actor(gate["name"], namespace=gate["namespace"]))
