"""Judge replies over real HTTP on 127.0.0.1 that were mishandled: a refusal's tokens went unbilled, an exception outside
the parser ended the whole case uncounted, a multi-item reply's verdict for an item not asked was silently dropped, and
`tracejudge run` named the judge's error kinds but not its first error.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _loopback import Loopback, completion, verdict
from aiohttp import web
from test_judge_reply_values import Messages, _message, _tool_verdict
from test_judge_servers import cases, config, results, run, tj, write

TC = {"type": "TaskCompletion"}
TWO = [TC, {"type": "ToolCallNecessity"}]
SECRET = "sk-proj-" + "Z9x8Y7w6V5u4T3s2R1q0" * 2  # shaped like an OpenAI key: redacted wherever it is copied


class Headed(Loopback):
    """`Loopback` whose `respond` may also give headers: `(status, json, headers)`."""

    async def _handle(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests.append((dict(request.headers), body))
        status, payload, *headers = self.respond(dict(request.headers), body)
        return web.Response(status=status, text=json.dumps(payload), content_type="application/json", headers=headers[0] if headers else None)


def _asks(body: dict[str, Any], item: int, phrase: str = "") -> bool:
    # Whether a request asks about case `item` (and, given, holds `phrase`: TaskCompletion's asks whether the agent gave up).
    text = json.dumps(body["messages"])
    return f"Find item {item}" in text and phrase in text


def _refused(provider: str, how: str, usage: tuple[int, int]) -> dict[str, Any]:
    if provider == "anthropic":
        return {**_message([], "refusal"), "usage": {"input_tokens": usage[0], "output_tokens": usage[1]}}
    message = {"role": "assistant", "content": None, "refusal": "I can't help with that."} if how == "refusal" else \
        {"role": "assistant", "content": '{"answers": [{"id": "q1", "ans'}
    return {**completion(""), "choices": [{"index": 0, "message": message, "finish_reason": "content_filter" if how == "filter" else "stop"}],
            "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1]}}


def _answer(provider: str, body: dict[str, Any]) -> dict[str, Any]:
    if provider == "anthropic":
        return _message([{"type": "tool_use", "id": "t", "name": body["tool_choice"]["name"], "input": _tool_verdict(body)}])
    return completion(json.dumps(verdict(body)))


def _judge(provider: str) -> dict[str, Any]:
    return {"provider": provider, "api_key_env": None, "model": "claude-haiku-4-5" if provider == "anthropic" else "gpt-4o-mini"}


VARIANTS = [("openai", "refusal"), ("openai", "filter"), ("anthropic", "refusal")]


# ---------------------------------------------------------------- 1. a refusal is billed like any answer


@pytest.mark.parametrize(("provider", "how"), VARIANTS)
def test_a_refusals_usage_is_billed_in_the_summary_the_score_and_the_spend_journal(tmp_path: Path, provider: str, how: str) -> None:
    # It was billed nothing: the refused request's 700 + 30 tokens were in no figure of the run, though the provider bills them.
    def respond(headers: dict[str, str], body: dict[str, Any]) -> Any:
        return 200, (_refused(provider, how, (700, 30)) if _asks(body, 1) else _answer(provider, body))

    with (Messages if provider == "anthropic" else Loopback)(respond) as server:
        summary = run(config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 3), metrics=[TC], **_judge(provider)))
        sent = len(server.requests)
    assert summary["status"] == {"ok": 2, "judge_error": 1} and sent == 3, (summary["status"], sent)
    each = (300, 40) if provider == "anthropic" else (50, 10)  # (what the other replies report)
    j = summary["judge"]
    assert (j["input_tokens"], j["output_tokens"]) == (700 + 2 * each[0], 30 + 2 * each[1]), j
    (refused,) = [r for r in results(tmp_path) if r["status"] != "ok"]
    block = refused["scores"]["TaskCompletion"]["judge"]
    assert (block["input_tokens"], block["output_tokens"], block["requests"]) == (700, 30, 1) and block["cost_usd"] > 0, block
    assert refused["scores"]["TaskCompletion"]["details"]["error_kind"] == "provider_error"
    scores = [s["judge"] for r in results(tmp_path) for s in r["scores"].values()]
    assert round(sum(b["cost_usd"] for b in scores), 6) == round(j["cost_usd"], 6), (scores, j)
    spend = [x for x in map(json.loads, (tmp_path / "run" / "judge_spend.jsonl").read_text().splitlines()) if "sent" not in x]
    assert sum(x["input_tokens"] for x in spend) == j["input_tokens"] and sum(x["output_tokens"] for x in spend) == j["output_tokens"]


@pytest.mark.parametrize(("provider", "how"), VARIANTS)
def test_the_budget_counts_what_refusals_cost(tmp_path: Path, provider: str, how: str) -> None:
    # Every request is refused with 9,500 tokens billed. Each request's worst case (its prompt and max_tokens 20,000) fits
    # the 35,000-token cap once, not twice, so the requests go one after another: counting the refusals, the third
    # would cross the cap and is skipped; not counting them (before), all three were sent and the run spent 28,500
    # tokens it reported as none.
    with (Messages if provider == "anthropic" else Loopback)(lambda headers, body: (200, _refused(provider, how, (500, 9000)))) as server:
        data = config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 3), metrics=[TC], max_tokens=20000, **_judge(provider))
        data["budget"] = {"max_judge_tokens": 35000}
        summary = run(data)
        sent = len(server.requests)
    assert summary["status"] == {"judge_error": 2, "skipped_budget": 1} and sent == 2, (summary["status"], sent)
    assert summary["judge"]["input_tokens"] + summary["judge"]["output_tokens"] == 2 * 9500, summary["judge"]


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_refusal_in_a_provider_batch_is_billed_and_not_resubmitted(simulator: Any, tmp_path: Path, provider: str) -> None:
    # In batch mode a refusal was a per-request error: resubmitted (and paid again) up to max_resubmits, never billed.
    from test_judge_batch_api import batch_judge
    from test_judge_batch_api import run as batch_run

    sim = simulator(batch_completion_s=0.05, batch_script=[{"refusals": 1}])
    summary = batch_run(tmp_path, batch_judge(sim.url, provider, max_requests=3, flush_after_s=30.0), 3)
    assert summary["status"] == {"ok": 2, "judge_error": 1}, summary["status"]
    assert sim.stats.batches_created == 1 and summary["judge"]["batch_resubmits"] == 0, summary["judge"]
    j = summary["judge"]
    assert (j["input_tokens"], j["output_tokens"]) == (sim.stats.input_tokens, sim.stats.output_tokens), (j, sim.stats)
    (refused,) = [r for r in results(tmp_path) if r["status"] != "ok"]
    score = refused["scores"]["TaskCompletion"]
    assert "the model refused to judge this request" in score["reason"] and score["judge"]["input_tokens"] > 0, score


# ---------------------------------------------------------------- 2. an exception outside the parser is that request's error


@pytest.mark.parametrize("header", [("x-ratelimit-remaining-tokens", "1e999"), ("retry-after", "1.2.3s")])
def test_a_rate_header_that_cannot_be_read_says_nothing_and_the_verdict_stands(tmp_path: Path, header: tuple[str, str]) -> None:
    # Reading it raised (OverflowError, ValueError) past the wire layer: the case ended with both metrics' verdicts lost
    # and no judge error counted.
    def respond(headers: dict[str, str], body: dict[str, Any]) -> Any:
        return 200, completion(json.dumps(verdict(body))), dict([header])

    with Headed(respond) as server:
        summary = run(config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 2), group="none", api_key_env=None))
    assert summary["status"] == {"ok": 2}, [r.get("error") for r in results(tmp_path)]
    assert all(s["value"] is not None for r in results(tmp_path) for s in r["scores"].values())


@pytest.mark.parametrize("where", ["reading the reply", "billing its usage"])
def test_an_exception_outside_the_parser_is_that_requests_judge_error_and_the_other_verdicts_stand(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    # A reply nothing foresaw makes the code reading it raise (here: its usage figures, marked 77). Before, the exception
    # left the judge: the case ended `judge_error` with no score at all (ToolCallNecessity's good verdict dropped), and
    # summary.json's judge_errors did not count it.
    import tracejudge.llm.wire.read as wire_read
    from tracejudge.stages.judge.client import Judge

    def respond(headers: dict[str, str], body: dict[str, Any]) -> Any:
        reply = completion(json.dumps(verdict(body)))
        if _asks(body, 0, "give up"):
            if where == "reading the reply":
                reply["usage"]["prompt_tokens"] = 77
            else:
                del reply["usage"]
        return 200, reply

    def usage_counts(usage: Any, *args: Any) -> Any:
        if isinstance(usage, dict) and usage.get("prompt_tokens") == 77:
            raise RuntimeError(f"cannot read usage {usage} for key {SECRET}")
        return real_counts(usage, *args)

    def estimate_usage(self: Any, reply: Any, prompt_tokens: int) -> None:
        raise RuntimeError(f"tokenizer broke on {SECRET}")

    real_counts = wire_read.usage_counts
    monkeypatch.setattr(wire_read, "usage_counts", usage_counts)
    if where == "billing its usage":
        monkeypatch.setattr(Judge, "_estimate_usage", estimate_usage)
    with Loopback(respond) as server:
        summary = run(config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 2), group="none", api_key_env=None, max_attempts=2))
    assert summary["status"] == {"ok": 1, "judge_error": 1}, summary["status"]
    assert summary["judge"]["judge_errors"] == 1 and summary["judge"]["error_kinds"] == {"provider_error": 1}, summary["judge"]
    (failed,) = [r for r in results(tmp_path) if r["status"] != "ok"]
    assert failed["case_id"] == "case-0" and failed["scores"]["ToolCallNecessity"]["value"] == 1.0, failed  # the other verdict kept
    score = failed["scores"]["TaskCompletion"]
    assert score["value"] is None and score["details"]["error_kind"] == "provider_error", score
    assert score["reason"].startswith("provider_error: HTTP 200: the judge's reply ") and "RuntimeError" in score["reason"], score["reason"]
    assert SECRET not in json.dumps(failed) and SECRET not in (tmp_path / "run" / "summary.json").read_text()
    if where == "billing its usage":  # an answer was had: billed at its estimated input, in the score as in the summary
        assert score["judge"]["input_tokens"] > 0 and score["judge"]["requests"] == 1, score["judge"]


# ---------------------------------------------------------------- 3. a multi-item reply answering an item not asked


@pytest.mark.parametrize("extra", ["verdict", "note"])
def test_a_multi_item_reply_with_a_verdict_for_an_item_not_asked_does_not_parse(tmp_path: Path, extra: str) -> None:
    # Its asked items' verdicts were kept and the stray one dropped without a word, though the judge may be answering
    # about another item. A key holding no verdict (a summary) is ignored, as in a single-item reply.
    def respond(headers: dict[str, str], body: dict[str, Any]) -> Any:
        spec = body["response_format"]["json_schema"]
        if spec["name"] != "verdicts":
            return 200, completion(json.dumps(verdict(body)))
        schema = spec["schema"]
        out = {item: verdict({"response_format": {"json_schema": {"schema": schema["$defs"][ref["$ref"].rsplit("/", 1)[1]]}}, "messages": []})
               for item, ref in schema["properties"].items()}
        out["i000000000000"] = {q: {"answer": "no", "reason": "another item"} for q in next(iter(out.values()))} if extra == "verdict" \
            else "both items look fine"
        return 200, completion(json.dumps(out))

    with Loopback(respond) as server:
        summary = run(config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 2), metrics=[TC], items_per_request=2, item_wait_s=30,
                             api_key_env=None))
        sent = len(server.requests)
    assert summary["status"] == {"ok": 2}
    batches = [r["scores"]["TaskCompletion"]["details"]["batch"] for r in results(tmp_path)]
    if extra == "note":
        assert sent == 1 and summary["judge"]["items_reasked_alone"] == 0 and all("alone" not in b for b in batches), batches
        return
    assert sent == 3 and summary["judge"]["items_reasked_alone"] == 2, (sent, summary["judge"])
    for b in batches:
        assert b["alone"] is True and "'i000000000000', which was not asked" in b["why"], b


# ---------------------------------------------------------------- 4. `tracejudge run` names the first judge error


def test_run_names_its_first_judge_errors_message_redacted_and_trimmed(tmp_path: Path) -> None:
    # It printed `judge errors: provider_error 1` and nothing of why; `compare --judge` and `calibrate` name the first error.
    said = f"I can't help with that. My key is {SECRET}. " + "I must decline. " * 60

    def respond(headers: dict[str, str], body: dict[str, Any]) -> Any:
        if _asks(body, 1):
            return 200, {**completion(""), "choices": [{"index": 0, "message": {"role": "assistant", "content": None, "refusal": said},
                                                        "finish_reason": "stop"}]}
        return 200, completion(json.dumps(verdict(body)))

    with Loopback(respond) as server:
        cfg = write(tmp_path, config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 3), metrics=[TC], api_key_env=None))
        proc = tj("run", str(cfg), "--no-progress", cwd=tmp_path)
    (line,) = [x for x in proc.stdout.splitlines() if x.startswith("judge errors:")]
    head = "judge errors: provider_error 1; the first (case case-1 trial 0, TaskCompletion): "
    assert line.startswith(head + "provider_error: HTTP 200: the model refused to judge this request (message.refusal: I can't help"), line
    assert SECRET not in proc.stdout + proc.stderr and "[REDACTED]" in line, line
    assert len(line) <= len(head) + 600, line  # trimmed as compare's and calibrate's are: not the refusal's 1,000 characters
    # `report` on the run prints the same line (it printed the kinds alone).
    again = tj("report", str(tmp_path / "run"), cwd=tmp_path)
    assert [x for x in again.stdout.splitlines() if x.startswith("judge errors:")] == [line], again.stdout
