"""Weights swapped while a run goes: the server dies, comes back on the same port with another GGUF, and the run finishes.

The judge's gate closes while the server is down and reopens when it answers again; the judge then asks the server
again what it serves, and every verdict the new weights gave is cached under the new weights' key — a request made ready
(and keyed) before the outage and answered after it too. The judge simulator runs in a process of its own over real HTTP
on 127.0.0.1 and is killed with SIGKILL; weights A answer every question "yes", weights B "no", so each cache entry says
which weights answered it.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path
from typing import Any

import anyio
import pytest
from tracejudge.core.config import validate_config
from tracejudge.core.records import Case
from tracejudge.engine import runner
from tracejudge.llm import served_model
from tracejudge.llm.cache import DiskJudgeCache, cache_key
from tracejudge.stages.judge.client import key_components
from tracejudge.stages.judge.fit import fit_request
from tracejudge.stages.judge.metrics import TaskCompletion
import _forkserver

# A simulator presenting itself as llama-server serving `served`, on PORT (0: a free one); prints its URL when it listens.
_SERVE = """
import json, sys, anyio
from tracejudge.simulator.server import SimConfig, start_simulator
from tracejudge.simulator.served import Weights
opts = json.loads(sys.argv[1])
served = Weights(**opts.pop("served"))

async def main():
    runner, url = await start_simulator(SimConfig(served=served, **opts), int(sys.argv[2]))
    print(url, flush=True)
    await anyio.sleep_forever()

anyio.run(main)
"""

A = {"server": "llama.cpp", "path": "/models/qwen-7b-q4.gguf", "seed": 1, "yes_share": 1.0}
B = {"server": "llama.cpp", "path": "/models/llama-1b-q8.gguf", "seed": 2, "yes_share": 0.0}
CASES = 10


def _serve(weights: dict[str, Any], port: int = 0, **options: Any) -> tuple[subprocess.Popen[str], str]:
    proc = _forkserver.popen([sys.executable, "-c", _SERVE, json.dumps({"served": weights, **options}), str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()
    if not url.startswith("http://127.0.0.1:"):
        proc.kill()
        raise AssertionError(f"the simulator did not start: {proc.communicate()[1][-2000:]}")
    return proc, url


def _identity(url: str) -> dict[str, Any]:
    """The `served_model` the judge keys by, as the server at `url` describes its weights now."""
    got = anyio.run(served_model.learn, url + "/v1", "judge", {})
    assert got.component is not None
    return got.component


def _stats(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url + "/_sim/stats", timeout=10) as reply:
        return json.load(reply)


def _cases(path: Path) -> Path:
    with open(path, "w") as fh:
        for i in range(CASES):
            fh.write(json.dumps({"id": f"case-{i}", "input": f"Find item {i}", "trace": {"steps": [{"tool_calls": [
                {"id": f"c{i}", "name": "lookup", "arguments": {"q": f"item {i}"}, "result": f"found {i}"}]}],
                "output": f"Item {i} is found."}}) + "\n")
    return path


def _answers(value: Any) -> set[str]:
    """Every `answer` in a cached entry's answers (one request's, or a multi-item request's by item)."""
    if isinstance(value, dict):
        found = {value["answer"]} if isinstance(value.get("answer"), str) else set()
        return found.union(*(_answers(v) for k, v in value.items() if k != "answer"))
    return set()


class _Said(logging.Handler):
    """Every message logged, and an event set once one holds `wanted`."""

    def __init__(self, wanted: str) -> None:
        super().__init__(logging.DEBUG)
        self.wanted, self.seen, self.messages = wanted, threading.Event(), []

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        self.messages.append(text)
        if self.wanted in text:
            self.seen.set()


@pytest.mark.parametrize("items_per_request", [1, 3])
def test_a_weight_swap_during_an_outage_caches_the_new_weights_verdicts_under_their_own_key(tmp_path, items_per_request):
    # A answers three requests, then hangs on the fourth (one request in flight at a time): the run cannot end before
    # A is killed, and that fourth request, keyed under A, is answered by B once the server is back.
    a, url = _serve(A, hang_s=3600, script=["ok", "ok", "ok", "timeout"])
    port = int(url.rsplit(":", 1)[1])
    identities = {"qwen-7b-q4.gguf": _identity(url)}
    cfg = validate_config({
        "dataset": {"path": str(_cases(tmp_path / "c.jsonl")), "format": "native"}, "metrics": [{"type": "TaskCompletion"}],
        "judge": {"provider": "openai", "model": "judge", "api_key_env": None, "base_url": url + "/v1", "timeout_s": 600,
                  "max_retry_wait_s": 600, "items_per_request": items_per_request},
        "limits": {"max_in_flight": 1}, "cache": {"dir": str(tmp_path / "cache")}, "run": {"dir": str(tmp_path / "run")}})
    said = _Said("the judge cannot serve now")
    logger = logging.getLogger("tracejudge")
    logger.addHandler(said)
    level = logger.level
    logger.setLevel(logging.INFO)
    outcome: list[Any] = []
    run = threading.Thread(target=lambda: outcome.append(anyio.run(runner.run, cfg)), daemon=True)
    b = None
    try:
        run.start()
        while _stats(url)["timeouts"] < 1:  # the fourth request hangs at A
            assert run.is_alive(), "the run ended before the server went down"
            threading.Event().wait(0.05)
        a.kill()
        a.communicate(timeout=60)
        assert said.seen.wait(300), said.messages  # the judge's gate closed: the server is down
        b, _ = _serve(B, port)  # another GGUF on the same port
        run.join(600)
        assert not run.is_alive()
        identities["llama-1b-q8.gguf"] = _identity(url)
    finally:
        logger.removeHandler(said)
        logger.setLevel(level)
        for proc in (a, b):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.communicate(timeout=60)
    (summary,) = [o.summary for o in outcome]
    assert summary["status"] == {"ok": CASES}

    # Each case's verdict (A: every answer yes, B: every answer no) and the weights its cache entry was written under.
    verdicts = {r["case_id"]: _answers(r["scores"]["TaskCompletion"]["details"]["answers"])
                for r in map(json.loads, (tmp_path / "run" / "results.jsonl").read_text().splitlines())}
    disk = DiskJudgeCache(tmp_path / "cache")
    try:
        index = {str(k)[2:]: disk._cache.get(k) for k in disk._cache.iterkeys() if str(k).startswith("i:") and not str(k).endswith("|group")}
        assert len(index) == CASES, sorted(index)
        by_weights = {"qwen-7b-q4.gguf": set(), "llama-1b-q8.gguf": set()}
        for slot, comps in index.items():
            case = slot.split("|")[0]
            by_weights[comps["served_model"]["name"]].add(case)
            assert verdicts[case] == ({"yes"} if comps["served_model"]["name"] == "qwen-7b-q4.gguf" else {"no"}), (slot, comps, verdicts[case])
        assert by_weights["qwen-7b-q4.gguf"] and by_weights["llama-1b-q8.gguf"], by_weights
        if items_per_request == 1:
            # The entries themselves: under the key the request makes with the weights that answered it, and no other.
            metric = TaskCompletion()
            assert len(disk) == CASES
            for line in (tmp_path / "c.jsonl").read_text().splitlines():
                case = Case.model_validate_json(line)
                plan = metric.plan(case)
                req = fit_request(plan, plan.questions, cfg.judge).req
                keys = {name: cache_key(key_components("openai", url + "/v1", req, plan.prompt_version, metric.rubric, 0, "json_schema", who))
                        for name, who in identities.items()}
                stored = {name for name, key in keys.items() if disk.get(key) is not None}
                assert stored == {name for name, cases in by_weights.items() if case.id in cases}, (case.id, stored)
        assert disk.last_served("openai", url + "/v1", "judge")["name"] == "llama-1b-q8.gguf"
    finally:
        disk.close()
    # Said once, naming both weights in the order they were served.
    changed = [m for m in said.messages if "served model changed during the run" in m]
    assert len(changed) == 1 and "qwen-7b-q4.gguf" in changed[0] and "llama-1b-q8.gguf" in changed[0], changed
    assert changed[0].index("qwen-7b-q4.gguf") < changed[0].index("→") < changed[0].index("llama-1b-q8.gguf")
