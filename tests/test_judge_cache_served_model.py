"""The judge cache keys a self-hosted server's verdicts by the weights it serves, not by the model name alone.

llama.cpp's `llama-server` answers any `model` name with its one GGUF; Ollama and LM Studio let a user pull
other weights under the same tag; vLLM can be restarted on another checkpoint with the same served name. The
judge simulator presents itself as each of them here (`tracejudge.simulator.served`: their own identity
endpoints and shapes, over real HTTP on 127.0.0.1) and swaps its weights between two runs of the real stage.
"""

from __future__ import annotations

import json
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
from tracejudge.simulator.served import Weights
from tracejudge.stages.judge.client import key_components
from tracejudge.stages.judge.fit import fit_request
from tracejudge.stages.judge.metrics import TaskCompletion
import _forkserver

HOME = "/home/alice/models"
# `cases(...)`'s first case asked by TaskCompletion of gpt-4o-mini at https://api.openai.com/v1, as the judge keyed it
# before the served model was part of any key (computed by that version): a hosted API's cache stays warm.
HOSTED_KEY = "d98f7e37d3ef6bc736ab1c3a9fe8e38757b802151d3d0e946d56262332959375"

# (server, the model name the judge asks for, the weights before the swap, after it). The name never changes.
SWAPS = {
    "llama.cpp": ("judge", Weights("llama.cpp", f"{HOME}/qwen2.5-7b-instruct-q4_k_m.gguf", seed=0, yes_share=0.75),
                  Weights("llama.cpp", f"{HOME}/llama-3.2-1b-instruct-q8_0.gguf", n_params=1_235_814_432, size=1_321_083_072,
                          seed=7, yes_share=0.3)),
    "ollama": ("llama3.1:8b", Weights("ollama", f"{HOME}/blobs/a", name="llama3.1:8b", digest="46e0c10c039e" + "0" * 52, seed=0),
               Weights("ollama", f"{HOME}/blobs/b", name="llama3.1:8b", digest="91ab477bec9d" + "1" * 52, seed=7, yes_share=0.3)),
    "vllm": ("judge", Weights("vllm", f"{HOME}/Qwen2.5-7B-Instruct", name="judge", seed=0),
             Weights("vllm", f"{HOME}/Llama-3.2-1B-Instruct", name="judge", seed=7, yes_share=0.3)),
}


def cases(path: Path, n: int) -> Path:
    with open(path, "w") as fh:
        for i in range(n):
            fh.write(json.dumps({"id": f"case-{i}", "input": f"Find item {i}", "trace": {"steps": [{"tool_calls": [
                {"id": f"c{i}", "name": "lookup", "arguments": {"q": f"item {i}"}, "result": f"found {i}"}]}],
                "output": f"Item {i} is found."}}) + "\n")
    return path


def config(tmp: Path, base_url: str | None, model: str, data: Path, run: str, cache: str = "cache", explain: bool = False) -> Any:
    judge: dict[str, Any] = {"provider": "openai", "model": model, "api_key_env": None}
    if base_url is not None:
        judge["base_url"] = base_url
    return validate_config({"dataset": {"path": str(data), "format": "native"}, "metrics": [{"type": "TaskCompletion"}], "judge": judge,
                            "cache": {"dir": str(tmp / cache), "explain": explain}, "run": {"dir": str(tmp / run)}})


def run(tmp: Path, url: str, model: str, data: Path, name: str, **kw: Any) -> dict[str, Any]:
    return anyio.run(lambda: runner.run(config(tmp, url + "/v1", model, data, name, **kw))).summary


def results(tmp: Path, name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (tmp / name / "results.jsonl").read_text().splitlines()]


def values(tmp: Path, name: str) -> dict[str, Any]:
    return {r["case_id"]: r["scores"]["TaskCompletion"]["value"] for r in results(tmp, name)}


def written(*folders: Path) -> bytes:
    return b"".join(p.read_bytes() for d in folders for p in d.rglob("*") if p.is_file())


def index(folder: Path) -> list[dict[str, Any]]:
    """The components the cache's index keeps for each slot (what `explain` compares with)."""
    disk = DiskJudgeCache(folder)
    try:
        return [disk._cache.get(k) for k in disk._cache.iterkeys() if str(k).startswith("i:")]
    finally:
        disk.close()


@pytest.mark.parametrize("server", sorted(SWAPS))
def test_a_weight_swap_behind_the_same_url_and_name_misses_the_cache_and_explain_says_why(simulator, tmp_path, server):
    model, old, new = SWAPS[server]
    sim = simulator(served=old)
    data = cases(tmp_path / "c.jsonl", 8)
    first = run(tmp_path, sim.url, model, data, "a")
    assert first["status"] == {"ok": 8} and sim.stats.requests == 8

    sim.serve(new)
    second = run(tmp_path, sim.url, model, data, "b", explain=True)
    # Every verdict is asked again: the old weights' verdicts are not the new weights' answers.
    assert sim.stats.requests == 16 and second["judge"]["cache_hits"] == 0
    misses = {r["scores"]["TaskCompletion"]["judge"]["cache_miss"] for r in results(tmp_path, "b")}
    assert len(misses) == 1, misses
    (why,) = misses
    assert why.startswith("served model changed: ") and " → " in why, why
    before, after = why.removeprefix("served model changed: ").split(" → ")
    assert before != after and before.split(" (weights ")[0].split(" ")[0] == after.split(" ")[0]  # the same kind of server
    if server != "ollama":  # (the Ollama tag is the same name: its digest tells the weights apart)
        assert old.path.rsplit("/", 1)[1] in before and new.path.rsplit("/", 1)[1] in after
    assert second["judge"]["cache_misses_explained"] == {why: 8}
    # What the run was given is what the new weights answer on a cache of their own.
    fresh = run(tmp_path, sim.url, model, data, "c", cache="cache2")
    assert fresh["status"] == {"ok": 8} and values(tmp_path, "b") == values(tmp_path, "c") != values(tmp_path, "a")
    # A path that names a home directory is never written in clear (a basename is).
    assert HOME.encode() not in written(tmp_path / "a", tmp_path / "b", tmp_path / "cache")


@pytest.mark.parametrize("server", sorted(SWAPS))
def test_the_same_weights_hit_the_cache_and_the_index_names_them(simulator, tmp_path, server):
    model, weights, _ = SWAPS[server]
    sim = simulator(served=weights)
    data = cases(tmp_path / "c.jsonl", 5)
    run(tmp_path, sim.url, model, data, "a")
    sim.serve(Weights(**vars(weights)))  # the same weights loaded again (a restart)
    again = run(tmp_path, sim.url, model, data, "b")
    assert sim.stats.requests == 5 and again["judge"]["cache_hits"] == 5 and again["judge"]["requests"] == 0
    assert values(tmp_path, "a") == values(tmp_path, "b")
    kept = {json.dumps(c["served_model"], sort_keys=True) for c in index(tmp_path / "cache")}
    assert len(kept) == 1
    (said,) = map(json.loads, kept)
    kind = {"llama.cpp": "llama.cpp", "ollama": "ollama", "vllm": "vllm"}[server]
    assert said["server"] == kind and len(said["sha256"]) == 64
    assert said["name"] == (model if server == "ollama" else weights.path.rsplit("/", 1)[1])


def hosted_judge(tmp_path: Path, base_url: str | None, model: str = "gpt-4o-mini") -> Any:
    from tracejudge.stages.judge.panel import make_judges, panel_members
    from tracejudge.stages.judge.resources import local_resources

    cfg = config(tmp_path, base_url, model, cases(tmp_path / "c.jsonl", 1), "run")
    judges, _ = make_judges(cfg, panel_members(cfg), "sk-test-0000", local_resources(cfg, {}), session=None, sim_base="", run_dir=None, spend=None)
    return judges[0][1]


async def first_key(judge: Any, data: Path) -> tuple[str, dict[str, Any]]:
    metric = TaskCompletion()
    plan = metric.plan(Case.model_validate_json(data.read_text().splitlines()[0]))
    (ready,) = await judge.prepare_many([(plan, plan.questions, 0)])
    return ready.key, ready.components


@pytest.mark.parametrize("base_url", [None, "https://api.openai.com/v1", "https://api.openai.com/v1/"])
def test_a_hosted_api_is_asked_nothing_and_keeps_the_key_earlier_versions_wrote(simulator, tmp_path, monkeypatch, base_url):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)

    async def never(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a hosted API was asked which weights it serves")

    monkeypatch.setattr(served_model, "learn", never)
    key, components = anyio.run(first_key, hosted_judge(tmp_path, base_url), tmp_path / "c.jsonl")
    assert key == HOSTED_KEY and "served_model" not in components
    monkeypatch.undo()
    # The same request to a llama-server on this machine is keyed by the weights it serves.
    sim = simulator(served=SWAPS["llama.cpp"][1])
    key, components = anyio.run(first_key, hosted_judge(tmp_path, sim.url + "/v1"), tmp_path / "c.jsonl")
    assert components["served_model"]["server"] == "llama.cpp" and key != HOSTED_KEY


def test_a_server_that_says_nothing_of_its_weights_keeps_todays_key_and_warns_once(simulator, tmp_path, caplog):
    sim = simulator()  # a plain OpenAI-compatible server: /v1/models lists names, nothing else answers
    data = cases(tmp_path / "c.jsonl", 4)
    summary = run(tmp_path, sim.url, "gpt-4o-mini", data, "a")
    assert summary["status"] == {"ok": 4} and sim.stats.requests == 4
    said = [r.getMessage() for r in caplog.records if "does not say which weights it serves" in r.getMessage()]
    assert len(said) == 1 and sim.url in said[0] and "gpt-4o-mini" in said[0], said
    # Its key is the one such a request always had.
    metric, cfg = TaskCompletion(), config(tmp_path, sim.url + "/v1", "gpt-4o-mini", data, "a")
    plan = metric.plan(Case.model_validate_json(data.read_text().splitlines()[0]))
    fitted = fit_request(plan, plan.questions, cfg.judge)
    disk = DiskJudgeCache(tmp_path / "cache")
    assert disk.get(cache_key(key_components("openai", sim.url + "/v1", fitted.req, plan.prompt_version, metric.rubric, 0))) is not None
    disk.close()
    again = run(tmp_path, sim.url, "gpt-4o-mini", data, "b")
    assert again["judge"]["cache_hits"] == 4 and sim.stats.requests == 4


def test_what_a_server_sends_is_bounded_and_names_no_home_directory(simulator, tmp_path):
    # /props carries a chat template over the bytes read: it is left unread, and the list's `meta` alone identifies the
    # weights. The path names a home directory and its file a key: neither reaches the cache or the results in clear.
    path = f"{HOME}/sk-proj-Zq8Xw2Lr5Tn9Vb3Mk7Hd4Gf6.gguf"
    sim = simulator(served=Weights("llama.cpp", path, chat_template="x" * (served_model.MAX_BYTES + 1)))
    data = cases(tmp_path / "c.jsonl", 2)
    summary = run(tmp_path, sim.url, "judge", data, "a")
    assert summary["status"] == {"ok": 2}
    (said,) = {json.dumps(c["served_model"]) for c in index(tmp_path / "cache")}
    assert json.loads(said)["name"] == "[REDACTED].gguf"
    stored = written(tmp_path / "a", tmp_path / "cache")
    assert HOME.encode() not in stored and b"Zq8Xw2Lr5Tn9Vb3Mk7Hd4Gf6" not in stored
    # What identified the weights is the list alone: the template, had it been read, would be in the digest.
    with urllib.request.urlopen(sim.url + "/v1/models", timeout=5) as reply:
        listed = json.loads(reply.read())
    assert json.loads(said) == served_model.identity("judge", {"models": listed})
    assert json.loads(said) != served_model.identity("judge", {"models": listed, "props": {"model_path": path, "chat_template": "x"}})


def test_hostile_identity_replies_are_no_identity():
    assert served_model.identity("m", {}) is None
    assert served_model.identity("m", {"models": "not json", "props": [], "tags": {"models": [{"name": "m", "digest": ""}]},
                                       "info": {"model_id": 7}, "lmstudio": {"data": "x"}}) is None
    # Only scalars of the expected kinds count; nesting, NaN and lists are dropped, never raised on.
    odd = {"models": {"data": [{"id": "m", "owned_by": "llamacpp", "meta": {"n_params": float("nan"), "size": [1], "n_vocab": {"a": 1}}}]},
           "props": {"model_path": "C:\\Users\\alice\\m\x1b[31m.gguf", "chat_template": 5}}
    got = served_model.identity("m", odd)
    assert got is not None and got["server"] == "llama.cpp" and got["name"] == "m[31m.gguf"
    assert served_model.describe(got).startswith("llama.cpp m[31m.gguf (weights ")
    assert served_model.describe({"server": 1}) == served_model.describe(None) == "not known"


@pytest.mark.parametrize(("url", "mine"), [
    ("http://127.0.0.1:8080/v1", True), ("http://localhost:11434/v1", True), ("http://[::1]:8000/v1", True),
    ("http://192.168.1.20:8000/v1", True), ("http://10.0.0.5/v1", True), ("http://100.101.102.103:8000/v1", True),
    ("http://vllm:8000/v1", True), ("http://gpu-box.local:8000/v1", True), ("http://llm.internal/v1", True),
    ("https://api.openai.com/v1", False), ("https://api.anthropic.com/v1", False), ("https://x.openai.azure.com/openai", False),
    ("https://openrouter.ai/api/v1", False), ("http://8.8.8.8/v1", False), (None, False),
])
def test_which_servers_are_asked_about_their_weights(url, mine):
    assert served_model.self_hosted(url) is mine


def test_a_warm_cache_answers_while_the_server_is_off_and_estimate_counts_its_hits(simulator, tmp_path, caplog):
    from tracejudge.stages.judge.estimate import estimate

    model, weights, _ = SWAPS["llama.cpp"]
    sim = simulator(served=weights)
    data = cases(tmp_path / "c.jsonl", 3)
    url = sim.url
    run(tmp_path, url, model, data, "a")
    assert estimate(config(tmp_path, url + "/v1", model, data, "a"))["metrics"]["TaskCompletion"].cache_hits == 3
    sim.stop()  # the GPU box is off: nothing answers at that address any more
    off = run(tmp_path, url, model, data, "b")
    assert off["status"] == {"ok": 3} and off["judge"]["cache_hits"] == 3 and off["judge"]["requests"] == 0
    assert values(tmp_path, "a") == values(tmp_path, "b")
    said = [r.getMessage() for r in caplog.records if "did not answer when asked which weights" in r.getMessage()]
    assert len(said) == 1 and "qwen2.5-7b-instruct-q4_k_m.gguf" in said[0], said


def test_a_warm_cache_answers_when_only_the_servers_metadata_endpoints_hang(simulator, tmp_path, caplog):
    # llama-server busy or behind a proxy: /props and /v1/models never answer while completions do, and the
    # endpoints it does not have answer 404 at once. Those 404s counted as an answer naming no weights: every verdict
    # was keyed by the model name alone and asked again (0 hits, "served model changed: llama.cpp … → not known").
    model, weights, _ = SWAPS["llama.cpp"]
    sim = simulator(served=weights)
    data = cases(tmp_path / "c.jsonl", 3)
    run(tmp_path, sim.url, model, data, "a")
    sim.serve(Weights(**{**vars(weights), "identity_delay_s": 60.0}))
    got = anyio.run(served_model.learn, sim.url + "/v1", model, {})
    assert got.component is None and not got.answered
    hung = run(tmp_path, sim.url, model, data, "b", explain=True)
    assert hung["status"] == {"ok": 3} and hung["judge"]["cache_hits"] == 3 and hung["judge"]["requests"] == 0
    assert sim.stats.requests == 3 and values(tmp_path, "a") == values(tmp_path, "b")
    said = [r.getMessage() for r in caplog.records if "did not answer when asked which weights" in r.getMessage()]
    assert len(said) == 1 and "qwen2.5-7b-instruct-q4_k_m.gguf" in said[0], said
    assert not any("does not say which weights" in r.getMessage() for r in caplog.records)
    # /props alone silent: /v1/models names the weights without its model path and chat template, another digest.
    sim.serve(Weights(**{**vars(weights), "identity_delay_s": 60.0, "delayed": ("/props",)}))
    part = run(tmp_path, sim.url, model, data, "c", explain=True)
    assert part["judge"]["cache_hits"] == 3 and sim.stats.requests == 3 and values(tmp_path, "a") == values(tmp_path, "c")


def test_a_server_loading_its_model_is_waited_for_before_the_cache_is_read(simulator, tmp_path, caplog):
    import threading

    model, weights, _ = SWAPS["llama.cpp"]
    sim = simulator(served=Weights(**{**vars(weights), "loading": True}))
    data = cases(tmp_path / "c.jsonl", 2)
    loaded = threading.Timer(1.5, sim.serve, [weights])
    loaded.start()
    try:
        summary = run(tmp_path, sim.url, model, data, "a")
    finally:
        loaded.join()
    assert summary["status"] == {"ok": 2}
    (said,) = {json.dumps(c["served_model"]) for c in index(tmp_path / "cache")}
    assert json.loads(said)["name"] == "qwen2.5-7b-instruct-q4_k_m.gguf"
    assert sum("is loading its model" in r.getMessage() for r in caplog.records) == 1


def test_a_server_with_one_slot_is_sent_one_request_at_a_time_so_none_times_out_in_its_queue(simulator, tmp_path):
    # llama-server started with one slot (`--parallel 1`, its `/props` says `total_slots: 1`) computes one request at a
    # time and queues the rest. With limits.max_in_flight 64 the requests at the back of its queue ran out of
    # judge.timeout_s unanswered (each takes 0.4 s here, the timeout is 1.5 s, 8 cases), closed the gate as a slow
    # server and ended their cases `timeout`. Sent one at a time, each is timed from when the server works on it.
    sim = simulator(served=Weights("llama.cpp", f"{HOME}/one-slot.gguf"), slots=1, latency_ms=400)
    data = cases(tmp_path / "c.jsonl", 8)
    for cache in (True, False):  # (the slots are asked for with or without a cache)
        cfg = config(tmp_path, sim.url + "/v1", "judge", data, f"run-{cache}").model_copy(deep=True)
        cfg.judge.timeout_s, cfg.judge.max_attempts = 1.5, 1
        cfg.cache.enabled = cache
        outcome = anyio.run(lambda: runner.run(cfg))
        got = results(tmp_path, f"run-{cache}")
        assert [r["status"] for r in got] == ["ok"] * 8, [r["error"] for r in got]
        assert outcome.summary["judge"]["timeouts"] == 0
    assert sim.sim.queued_peak == 0  # nothing ever waited in the server's queue


def _simulate(port: int, *flags: str) -> Any:
    import subprocess
    import sys

    proc = _forkserver.popen([sys.executable, "-m", "tracejudge", "simulate", "--port", str(port), *flags],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline() if proc.stdout is not None else ""
    assert "listening on" in line, (line, proc.stderr.read() if proc.stderr is not None else "")
    return proc


def test_the_simulate_command_presents_weights_and_slots_a_swap_then_misses_the_cache(tmp_path):
    # A user rehearsing a weight swap with the CLI alone: `tracejudge simulate --serve-as llama.cpp:PATH --slots 1`.
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    data = cases(tmp_path / "c.jsonl", 3)
    url = f"http://127.0.0.1:{port}"
    for name, weights in (("a", "/models/qwen-7b-q4.gguf"), ("b", "/models/llama-1b-q8.gguf"), ("c", "/models/llama-1b-q8.gguf")):
        proc = _simulate(port, "--serve-as", f"llama.cpp:{weights}", "--slots", "1")
        try:
            with urllib.request.urlopen(url + "/props", timeout=10) as resp:
                assert json.load(resp)["total_slots"] == 1
            summary = run(tmp_path, url, "judge", data, name, explain=True)
        finally:
            proc.terminate()
            proc.communicate(timeout=30)
        assert summary["status"] == {"ok": 3}
    misses = {r["scores"]["TaskCompletion"]["judge"]["cache_miss"] for r in results(tmp_path, "b")}
    assert len(misses) == 1 and next(iter(misses)).startswith("served model changed: llama.cpp qwen-7b-q4.gguf"), misses
    c = results(tmp_path, "c")
    assert all(r["scores"]["TaskCompletion"]["judge"]["cached"] for r in c)  # the same weights again: every verdict from the cache
    import subprocess
    import sys

    bad = _forkserver.run([sys.executable, "-m", "tracejudge", "simulate", "--serve-as", "gguf"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "SERVER:WEIGHTS" in bad.stderr


def test_a_server_that_does_not_answer_at_all_is_not_said_to_withhold_its_weights(tmp_path, caplog):
    # Nothing listens on the port: the warning said the server "does not say which weights it serves" (naming five
    # endpoints it never reached), before the connection errors it was really about.
    import socket

    with socket.socket() as s:  # a loopback port that was free a moment ago: nothing listens on it
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    data = cases(tmp_path / "c.jsonl", 1)
    cfg = validate_config({"dataset": {"path": str(data), "format": "native"}, "metrics": [{"type": "TaskCompletion"}],
                           "judge": {"provider": "openai", "model": "m", "api_key_env": None, "base_url": f"http://127.0.0.1:{port}/v1",
                                     "max_retry_wait_s": 0.5, "max_attempts": 1},
                           "cache": {"dir": str(tmp_path / "cache")}, "run": {"dir": str(tmp_path / "run")}})
    with pytest.raises(BaseException):  # (the run stops on the unreachable judge: what matters here is what it said first)
        anyio.run(lambda: runner.run(cfg))
    said = [r.getMessage() for r in caplog.records if "which weights it serves" in r.getMessage()]
    assert said and all("does not say" not in m for m in said), said
    assert any("did not answer when asked which weights it serves" in m and f"127.0.0.1:{port}" in m for m in said), said
