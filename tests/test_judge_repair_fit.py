"""A repair request stays within the judge's context: the unusable reply is cut to fit, and a repair the server still
refuses costs its case, not the run (it stopped the run with exit 2 and advice the user had already followed)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import anyio
from _loopback import Loopback, completion, verdict
from tracejudge.llm.providers import JudgeRequest
from tracejudge.stages.judge.calls.repair import repair_request
from tracejudge.stages.judge.fit import count_prompt
import _forkserver

RAMBLE = "Let me think about whether the agent did this right. " * 800  # about 10,000 tokens, no JSON
NOTE = "left out to fit the context window"


def _request(prompt_chars: int) -> JudgeRequest:
    return JudgeRequest("gpt-4o-mini", ({"role": "system", "content": "You grade agents."}, {"role": "user", "content": "word " * prompt_chars}),
                        {"type": "object", "properties": {"answer": {"type": "string"}}}, "answers", 512, 0.0)


def test_the_reply_in_a_repair_is_cut_to_fit_and_no_repair_is_sent_when_nothing_fits() -> None:
    judge = SimpleNamespace(cfg=SimpleNamespace(context_tokens=4096), tokenizer=None)

    async def go() -> None:
        req = _request(2000)  # about 2,000 tokens: fits with room for some of the reply
        fixed = await repair_request(judge, req, RAMBLE, "no JSON object")
        assert fixed is not None and await count_prompt(fixed, None) <= 4096 - 512
        said = fixed.messages[-2]["content"]
        assert said.startswith(RAMBLE[:200]) and NOTE in said and len(said) < len(RAMBLE)
        assert fixed.messages[:2] == req.messages and "no JSON object" in fixed.messages[-1]["content"]
        short = await repair_request(judge, req, '{"answer": ', "cut off")  # a reply that fits is sent whole
        assert short is not None and short.messages[-2]["content"] == '{"answer": '
        assert await repair_request(judge, _request(3560), RAMBLE, "no JSON object") is None  # the prompt alone all but fills the window

    anyio.run(go)


def _run(tmp_path: Path, tau_paths, server: Loopback, context_tokens: int | None) -> tuple[subprocess.CompletedProcess, list[dict]]:
    trajectories, tasks = tau_paths
    judge = {"provider": "openai", "model": "gpt-4o-mini", "base_url": server.url + "/v1", "max_tokens": 512}
    if context_tokens:
        judge["context_tokens"] = context_tokens
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"dataset": {"path": str(trajectories), "format": "tau-bench", "tasks": str(tasks), "limit": 2},
                               "metrics": [{"type": "TaskCompletion"}], "judge": judge, "cache": {"enabled": False},
                               "run": {"dir": str(tmp_path / "run")}}))
    proc = _forkserver.run([sys.executable, "-m", "tracejudge", "run", str(cfg), "--no-progress"], capture_output=True, text=True, timeout=300,
                          env={"OPENAI_API_KEY": "test", **{k: v for k, v in __import__("os").environ.items() if k != "OPENAI_API_KEY"}})
    results = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()] if (tmp_path / "run" / "results.jsonl").exists() else []
    return proc, results


def _is_repair(body: dict) -> bool:
    return str(body["messages"][-1]["content"]).startswith("Your previous reply could not be used")


def test_a_repair_the_server_refuses_costs_its_case_not_the_run(tmp_path: Path, tau_paths) -> None:
    # The server's window is smaller than judge.context_tokens says (the default): the first requests fit it, the
    # repairs carrying a long reply do not.
    def respond(headers, body):
        if _is_repair(body):
            return 400, {"error": {"message": "This model's maximum context length is 8192 tokens. However, you requested 13051 tokens.",
                                   "type": "invalid_request_error"}}
        return 200, completion(RAMBLE)

    with Loopback(respond) as server:
        proc, results = _run(tmp_path, tau_paths, server, None)
    assert proc.returncode == 1, proc.stdout + proc.stderr  # the gate fails on judge errors; the run is not stopped (exit 2)
    assert "refused the request itself" not in proc.stderr and len(results) == 2
    for r in results:
        score = r["scores"]["TaskCompletion"]
        reason = score["reason"]
        assert score["value"] is None and "no JSON object" in reason and "the repair request was refused" in reason, score
        assert "maximum context length is 8192" in reason.split("the repair request was refused")[1], score


def test_a_long_unusable_reply_is_cut_in_its_repair_and_the_case_is_judged(tmp_path: Path, tau_paths) -> None:
    seen: list[str] = []

    def respond(headers, body):
        if _is_repair(body):
            seen.append(body["messages"][-2]["content"])
            return 200, completion(json.dumps(verdict(body)))
        return 200, completion(RAMBLE)

    with Loopback(respond) as server:
        proc, results = _run(tmp_path, tau_paths, server, 8192)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert len(seen) == 2 and all(NOTE in s for s in seen)
    assert [r["scores"]["TaskCompletion"]["value"] is not None for r in results] == [True, True]


def test_a_reply_using_all_max_tokens_that_does_not_parse_is_truncated_whatever_its_finish_reason(tmp_path: Path, tau_paths) -> None:
    # Ollama's /v1 said finish_reason "stop" for every reply: a reply cut at max_tokens read as a parse error, with no
    # word of max_tokens.
    def respond(headers, body):
        reply = completion('{"answers": [{"id": "TC1", "answer": "yes", "reason": "the agent booked the fli')
        reply["usage"] = {"prompt_tokens": 900, "completion_tokens": body["max_tokens"], "total_tokens": 900 + body["max_tokens"]}
        return 200, reply

    with Loopback(respond) as server:
        proc, results = _run(tmp_path, tau_paths, server, None)
    assert proc.returncode == 1 and len(results) == 2, proc.stdout + proc.stderr
    for r in results:
        reason = r["scores"]["TaskCompletion"]["reason"]
        assert reason.startswith("truncated: ") and "used all max_tokens=512" in reason and "raise judge.max_tokens" in reason, reason
