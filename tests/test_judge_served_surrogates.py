"""What a self-hosted judge server says of itself is read safely when it holds a lone surrogate.

A llama-server whose `/props` `model_path` held `\\ud800` (a JSON escape of half a UTF-16 pair, which Python's `json`
decodes and UTF-8 cannot carry) failed every case with `UnicodeEncodeError ... surrogates not allowed`, named no
endpoint or field, and was called transient, so a resume failed alike. The judge simulator presents itself as each
server over real HTTP on 127.0.0.1 with such a path; the run judges every case and records the weights with U+FFFD.
"""

from __future__ import annotations

import pytest
from tracejudge.simulator.served import Weights
from test_judge_cache_served_model import cases, results
from test_judge_served_recorded import run, summary


@pytest.mark.parametrize("server", ["llama.cpp", "vllm"])
def test_a_lone_surrogate_in_what_the_server_says_of_its_weights_reads_as_u_fffd(simulator, tmp_path, server):
    sim = simulator(served=Weights(server, "/m/\ud800x.gguf", name="judge"))
    data = cases(tmp_path / "c.jsonl", 2)
    run(tmp_path, sim.url, data, "a")
    rows = results(tmp_path, "a")
    assert [r["status"] for r in rows] == ["ok", "ok"], [r.get("error") for r in rows]
    said = summary(tmp_path, "a")["judge"]["served_model"]
    assert said["server"] == ("llama.cpp" if server == "llama.cpp" else "vllm") and said["name"] == "\ufffdx.gguf", said
    # The cache keyed by those weights answers a second run.
    run(tmp_path, sim.url, data, "b")
    assert [r["status"] for r in results(tmp_path, "b")] == ["ok", "ok"]
