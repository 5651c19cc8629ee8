"""`judge.mode: batch` against the simulator's batch endpoints over real HTTP; a SIGKILLed run re-attaches."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import anyio
import pytest
from tracejudge.core.config import JudgeConfig, validate_config
from tracejudge.core.records import Case
from tracejudge.engine import runner
from tracejudge.llm.batch_api import batch_line, submit_batch
from tracejudge.llm.batch_journal import BatchJournal
from tracejudge.llm.cache import cache_key
from tracejudge.llm.prices import price_for
from tracejudge.llm.providers import auth_headers, build_payload
from tracejudge.simulator.server import SimulatorThread
from tracejudge.stages.judge.base import Plan
from tracejudge.stages.judge.batch_runner import CHUNK_KEY
from tracejudge.stages.judge.client import build_request, key_components
from tracejudge.stages.judge.metrics import TaskCompletion
import _forkserver

TJ = Path(sys.executable).with_name("tracejudge")


def write_cases(path: Path, n: int) -> Path:
    with open(path, "w") as fh:
        for i in range(n):
            steps = [{"tool_calls": [{"id": f"c{i}", "name": "lookup", "arguments": {"q": f"item {i}"}, "result": f"found {i}"}]}]
            fh.write(json.dumps({"id": f"case-{i}", "input": f"Find item {i}", "trace": {"steps": steps, "output": f"Item {i} is found."}}) + "\n")
    return path


def batch_judge(sim_url: str, provider: str = "openai", **batch: Any) -> dict[str, Any]:
    return {"provider": provider, "model": "gpt-4o-mini", "base_url": sim_url + "/v1", "mode": "batch",
            "batch": {"flush_after_s": 0.3, "poll_interval_s": 0.05, **batch}}


def run(tmp: Path, judge: dict[str, Any], n: int) -> dict[str, Any]:
    data = {"dataset": {"path": str(write_cases(tmp / "c.jsonl", n)), "format": "native"}, "metrics": [{"type": "TaskCompletion"}],
            "judge": judge, "cache": {"dir": str(tmp / "cache")}, "run": {"dir": str(tmp / "run")}}
    return anyio.run(lambda: runner.run(validate_config(data))).summary


def results(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]


def test_openai_batch_that_says_completed_with_errors_and_expired_requests_resubmits_them(simulator: Callable[..., SimulatorThread], tmp_path: Path) -> None:
    # The first batch "completes" but its error file holds 2 errored and 1 expired request; results come back shuffled.
    sim = simulator(batch_completion_s=0.2, batch_script=[{"errors": 2, "expired": 1, "status": "completed"}])
    # The first batch is closed by its count (12), not by a clock: a loaded machine cannot split it.
    summary = run(tmp_path, batch_judge(sim.url, max_requests=12, flush_after_s=3.0), 12)
    assert summary["status"] == {"ok": 12}
    j = summary["judge"]
    assert (sim.stats.batches_created, sim.stats.batch_requests, sim.stats.files_uploaded) == (2, 15, 2)
    assert (j["batches_submitted"], j["batch_requests"], j["batch_request_errors"], j["batch_expired"], j["batch_resubmits"]) == (2, 15, 2, 1, 3)
    assert sim.stats.requests == 0  # nothing went to the synchronous endpoint
    assert (j["input_tokens"], j["output_tokens"]) == (sim.stats.input_tokens, sim.stats.output_tokens)
    price = price_for("gpt-4o-mini")
    assert price is not None
    assert j["cost_usd"] == pytest.approx(price.cost(j["input_tokens"], j["output_tokens"]) * 0.5, abs=2e-6)
    assert j["sync_equivalent_usd"] == pytest.approx(price.cost(j["input_tokens"], j["output_tokens"]), abs=2e-6)
    journal = [json.loads(line) for line in (tmp_path / "run" / "batches.jsonl").read_text().splitlines()]
    assert [r["event"] for r in journal] == ["intent", "submitted", "intent", "submitted", "ended", "ended"]
    first, second = journal[1], journal[3]
    assert len(first["custom_ids"]) == 12 and len(second["custom_ids"]) == 3 and set(second["custom_ids"]) <= set(first["custom_ids"])
    assert journal[0]["chunk"] == first["chunk"] != second["chunk"]


def test_anthropic_message_batches_with_errored_and_expired_results(simulator: Callable[..., SimulatorThread], tmp_path: Path) -> None:
    sim = simulator(batch_completion_s=0.2, batch_script=[{"errors": 1, "expired": 2}])
    summary = run(tmp_path, batch_judge(sim.url, "anthropic", max_requests=5), 12)
    assert summary["status"] == {"ok": 12}
    j = summary["judge"]
    # 12 requests and the 3 failed ones again, in batches of at most 5.
    assert sim.stats.batch_requests == 15 and (j["batch_request_errors"], j["batch_expired"], j["batch_resubmits"]) == (1, 2, 3)
    assert sim.stats.batches_created == j["batches_submitted"] >= 3


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_result_line_cut_short_is_billed_then_its_request_resubmitted(simulator: Callable[..., SimulatorThread], tmp_path: Path,
                                                                        provider: str) -> None:
    """A line of the output file that is not JSON holds a request the provider answered, and billed (OpenAI's Batch API bills
    every request in the output file; Anthropic every `succeeded` one). Its request is resubmitted, as before; now the
    spend counts the first answer too, at its estimated prompt tokens (its usage cannot be read), not only the second."""
    sim = simulator(batch_completion_s=0.1, batch_script=[{"cut": 2}])
    summary = run(tmp_path, batch_judge(sim.url, provider, max_requests=6, flush_after_s=3.0), 6)
    assert summary["status"] == {"ok": 6}
    j = summary["judge"]
    assert sim.stats.batch_requests == 8 and (j["batch_request_errors"], j["batch_resubmits"], j["batch_unread_billed"]) == (2, 2, 2)
    # every answer the simulator billed is counted: the 2 unread ones at their estimated prompt, no output tokens read
    assert j["input_tokens"] == pytest.approx(sim.stats.input_tokens, rel=0.1)
    per_request = sim.stats.input_tokens / 8
    assert j["input_tokens"] > sim.stats.input_tokens - per_request
    assert j["output_tokens"] < sim.stats.output_tokens  # (the unread answers' output is unknown)
    scored = [r["scores"]["TaskCompletion"]["judge"] for r in results(tmp_path / "run")]
    assert sum(s["input_tokens"] for s in scored) == j["input_tokens"]  # (each score shows what its request was billed)


@pytest.mark.parametrize("marred", ["nameless", "non_object"])
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_result_line_naming_no_request_is_billed_as_one_left_without_a_result(simulator: Callable[..., SimulatorThread],
                                                                               tmp_path: Path, provider: str, marred: str) -> None:
    """A billed answer whose line lost its `custom_id` cannot be joined to its request, which is resubmitted; the answer
    was paid all the same, so it is billed at the estimated prompt of a request of its batch left without a result. So is
    one whose line is JSON but not an object (`non_object`: the line as a JSON string), never read as an answer."""
    sim = simulator(batch_completion_s=0.1, batch_script=[{marred: 2}])
    summary = run(tmp_path, batch_judge(sim.url, provider, max_requests=6, flush_after_s=3.0), 6)
    assert summary["status"] == {"ok": 6}
    j = summary["judge"]
    per_request = sim.stats.input_tokens / 8  # (the 2 answers naming no request were paid: counted at their estimated prompt)
    assert j["input_tokens"] == pytest.approx(sim.stats.input_tokens, rel=0.1) and j["input_tokens"] > sim.stats.input_tokens - per_request
    assert sim.stats.batch_requests == 8 and (j["batch_resubmits"], j["batch_unread_billed"], j["batch_nameless_billed"]) == (2, 2, 2)
    assert j["batch_nameless_unbilled"] == 0
    scored = [r["scores"]["TaskCompletion"]["judge"] for r in results(tmp_path / "run")]
    assert sum(s["input_tokens"] for s in scored) == j["input_tokens"]


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_result_naming_its_request_whose_answer_is_not_an_object_is_billed_then_resubmitted(
        simulator: Callable[..., SimulatorThread], tmp_path: Path, provider: str) -> None:
    """A `succeeded` Anthropic result whose `message` is not a JSON object (an OpenAI output line whose `response.body` is
    not) was an error, billed nothing, though the provider answered and billed it: it is an unread answer, billed at
    its estimated prompt (its usage cannot be read), as a line that is not JSON is, and its request resubmitted."""
    sim = simulator(batch_completion_s=0.1, batch_script=[{"odd_answer": 2}])
    summary = run(tmp_path, batch_judge(sim.url, provider, max_requests=6, flush_after_s=3.0), 6)
    assert summary["status"] == {"ok": 6}
    j = summary["judge"]
    assert sim.stats.batch_requests == 8 and (j["batch_request_errors"], j["batch_resubmits"], j["batch_unread_billed"]) == (2, 2, 2)
    per_request = sim.stats.input_tokens / 8
    assert j["input_tokens"] == pytest.approx(sim.stats.input_tokens, rel=0.1) and j["input_tokens"] > sim.stats.input_tokens - per_request
    scored = [r["scores"]["TaskCompletion"]["judge"] for r in results(tmp_path / "run")]
    assert sum(s["input_tokens"] for s in scored) == j["input_tokens"]
    from tracejudge.llm.spend_journal import spend_totals

    spent = spend_totals(tmp_path / "run")  # (what a resume after a kill would count)
    assert spent is not None and spent["input_tokens"] == j["input_tokens"]


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_an_answer_of_the_wrong_shape_that_reports_usage_is_billed_at_it_then_resubmitted(simulator, tmp_path, provider):
    """An answer the provider billed whose object is of the wrong shape (`choices` / `content` a string) but reports its
    usage was an error billed nothing in a batch, where the synchronous path bills that usage and retries: it is billed
    at the usage it reports, in the summary, the score and the spend journal, and its request resubmitted."""
    sim = simulator(batch_completion_s=0.1, batch_script=[{"shapeless": 2}])
    summary = run(tmp_path, batch_judge(sim.url, provider, max_requests=6, flush_after_s=3.0), 6)
    assert summary["status"] == {"ok": 6}
    j = summary["judge"]
    assert sim.stats.batch_requests == 8 and (j["batch_request_errors"], j["batch_resubmits"], j["batch_unread_billed"]) == (2, 2, 2)
    # every answer the simulator counted, the two of the wrong shape at the usage they reported
    assert (j["input_tokens"], j["output_tokens"]) == (sim.stats.input_tokens, sim.stats.output_tokens)
    scored = [r["scores"]["TaskCompletion"]["judge"] for r in results(tmp_path / "run")]
    assert sum(s["input_tokens"] for s in scored) == j["input_tokens"]
    assert sum(s["output_tokens"] for s in scored) == j["output_tokens"]
    from tracejudge.llm.spend_journal import spend_totals

    spent = spend_totals(tmp_path / "run")
    assert spent is not None and (spent["input_tokens"], spent["output_tokens"]) == (j["input_tokens"], j["output_tokens"])


def test_result_lines_naming_no_request_are_told_apart_from_failures() -> None:
    from tracejudge.llm.batch_api import _lines

    body = "\n".join([
        '{"custom_id": "a", "response": {"status_code": 200}}',
        '{"id": "batch_req_1", "response": {"status_code": 200, "body": {}}}',  # JSON, no custom_id: an answer
        '{"id": "batch_req_2", "response": {"status_c',                        # cut before its custom_id
        '{"custom_id": "b", "resp',                                            # cut after it: unread, named
        '{"result": {"type": "errored", "error": {}}}',                        # Anthropic: not an answer, not billed
        '{"result": {"type": "succeeded", "mess',                              # Anthropic: an answer, cut
        '[1, 2]',
        '"{\\"custom_id\\": \\"c\\"}"',                                      # JSON, not an object: no request named
        '3',
        'null',
    ])
    records, unread, nameless = _lines(body.encode())
    assert [r["custom_id"] for r in records] == ["a"] and unread == ["b"] and nameless == 7


def test_a_result_line_naming_its_request_with_parts_of_the_wrong_shape_is_unread_not_a_crash() -> None:
    # A line naming its request whose `response` (or `result`, `error`) is a list or a string raised AttributeError out of
    # `fetch_results`, which lost every result of the batch. In the output file the request was run and billed, so it is
    # an unread answer (billed, resubmitted), as a line that is not JSON is; in the error file, or from Anthropic (which
    # bills only a result saying `succeeded`), an error.
    from tracejudge.llm.batch_api import _anthropic_result, _openai_result

    for part in ({"response": [1]}, {"response": "x"}, {"response": {"status_code": "two hundred"}}):
        got = _openai_result({"custom_id": "a", **part})
        assert (got.custom_id, got.kind) == ("a", "unread") and "could not be read (its response is not the Batch API's)" in got.message
        assert _openai_result({"custom_id": "a", **part}, answered=False).kind == "error"
    assert (_openai_result({"custom_id": "a", "error": "boom"}).kind, _openai_result({"custom_id": "a", "error": "boom"}).message) == ("error", '"boom"')
    got = _anthropic_result({"custom_id": "a", "result": ["succeeded"]})
    assert got.kind == "error" and "no result object" in got.message
    # (the shapes the Batch API writes read as before)
    assert _openai_result({"custom_id": "a", "response": {"status_code": 500, "body": {}}}).kind == "error"
    assert _openai_result({"custom_id": "a", "error": {"code": "batch_expired", "message": "late"}}).kind == "expired"


def test_resubmission_is_bounded_then_judge_error(simulator: Callable[..., SimulatorThread], tmp_path: Path) -> None:
    sim = simulator(batch_completion_s=0.05, batch_script=[{"errors": 1}] * 5)
    run(tmp_path, batch_judge(sim.url, max_resubmits=2), 1)
    (r,) = results(tmp_path / "run")
    assert r["status"] == "judge_error" and "3 submissions" in r["error"]["message"]
    assert sim.stats.batches_created == 3


CONFIG = """\
dataset: {{path: cases.jsonl, format: native}}
metrics: [{{type: TaskCompletion}}]
judge: {{provider: openai, model: gpt-4o-mini, base_url: "{url}/v1", mode: batch,
        batch: {{max_requests: 40, flush_after_s: 30, poll_interval_s: 0.1}}}}
cache: {{dir: cache}}
run: {{dir: runs/main}}
"""


def test_sigkill_with_a_batch_in_flight_then_resume_reattaches_without_a_second_submission(simulator: Callable[..., SimulatorThread], tmp_path: Path) -> None:
    # The simulator lives in this process, so it outlives the killed run; its batch takes 4 s. The batch
    # is closed by its count (40), not by a clock: on a loaded machine the cases trickle in.
    sim = simulator(batch_completion_s=4.0)
    write_cases(tmp_path / "cases.jsonl", 40)
    (tmp_path / "config.yaml").write_text(CONFIG.format(url=sim.url))
    journal = tmp_path / "runs" / "main" / "batches.jsonl"
    proc = _forkserver.popen([str(TJ), "run", "config.yaml", "--no-progress"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not (journal.exists() and '"submitted"' in journal.read_text()):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "no batch was journaled"
            time.sleep(0.02)
        assert sim.stats.batches_created == 1
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL
    assert not (tmp_path / "runs" / "main" / "results.jsonl").exists() or not (tmp_path / "runs" / "main" / "results.jsonl").read_text()
    intent, rec = [json.loads(line) for line in journal.read_text().splitlines()]
    assert (intent["event"], rec["event"]) == ("intent", "submitted") and len(rec["custom_ids"]) == 40

    done = _forkserver.run([str(TJ), "run", "config.yaml", "--no-progress"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "1 re-attached" in done.stdout
    assert sim.stats.batches_created == 1 and sim.stats.batch_requests == 40 and sim.stats.files_uploaded == 1
    got = results(tmp_path / "runs" / "main")
    assert sorted(r["case_id"] for r in got) == sorted(f"case-{i}" for i in range(40))  # every case once
    assert all(r["status"] == "ok" and r["scores"]["TaskCompletion"]["value"] is not None for r in got)
    summary = json.loads((tmp_path / "runs" / "main" / "summary.json").read_text())
    j = summary["judge"]
    assert (j["batches_submitted"], j["batches_reattached"], j["answered"]) == (0, 1, 40)
    assert (j["input_tokens"], j["output_tokens"]) == (sim.stats.input_tokens, sim.stats.output_tokens)  # paid once
    assert [json.loads(line)["event"] for line in journal.read_text().splitlines()] == ["intent", "submitted", "ended"]


def test_a_batch_created_but_never_logged_is_found_by_its_metadata_and_not_submitted_again(
        simulator: Callable[..., SimulatorThread], tmp_path: Path) -> None:
    # A run killed between the provider creating its batch and the log line: only the intent is on disk.
    sim = simulator(batch_completion_s=0.3)
    cases = write_cases(tmp_path / "c.jsonl", 6)
    cfg = JudgeConfig(provider="openai", model="gpt-4o-mini", base_url=sim.url + "/v1")
    lines, cids = [], []
    for raw in cases.read_text().splitlines():
        plan = TaskCompletion().plan(Case.model_validate_json(raw))
        assert isinstance(plan, Plan)
        req = build_request(plan, plan.questions, cfg)
        cid = cache_key(key_components("openai", sim.url + "/v1", req, TaskCompletion.prompt_version, None, 0))
        cids.append(cid)
        lines.append(batch_line("openai", cid, build_payload("openai", req)))
    (tmp_path / "run").mkdir()
    BatchJournal(tmp_path / "run").record_intent("c0ffee", "openai", sim.url + "/v1", cids)

    async def create() -> None:
        async with aiohttp.ClientSession() as session:
            await submit_batch(session, "openai", sim.url + "/v1", auth_headers("openai", None), lines, metadata={CHUNK_KEY: "c0ffee"})

    anyio.run(create)
    assert sim.stats.batches_created == 1
    summary = run(tmp_path, batch_judge(sim.url), 6)
    assert summary["status"] == {"ok": 6}
    assert sim.stats.batches_created == 1 and sim.stats.batch_requests == 6
    assert (summary["judge"]["batches_reattached"], summary["judge"]["batches_submitted"]) == (1, 0)
