"""Judge replies that used to break the reading of a verdict, over real HTTP on 127.0.0.1: a grade of NaN or Infinity
(and other values that are no grade), an Anthropic text block beside the forced tool call, a refusal (Anthropic
`stop_reason: "refusal"`, an OpenAI message's `refusal`, `finish_reason: "content_filter"`) and an answer to a question
id that was not asked.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml
from _loopback import Loopback, completion, verdict
from aiohttp import web
from hypothesis import given, settings
from hypothesis import strategies as st
from test_judge_servers import cases, config, results, run, tj, write
from tracejudge.core.config import load_config, validate_config
from tracejudge.engine import runner
from tracejudge.engine.journal_counts import judge_refused
from tracejudge.engine.retries import standing_retries
from tracejudge.llm.providers import HttpReply, ProviderError, read_reply
from tracejudge.stages.comparison.pairwise import compare_pairwise
from tracejudge.stages.judge.parse import ParseError, parse_parts, parse_scale, parse_yes_no, scale_from, yes_no_from

RUBRIC = {"type": "Rubric", "criteria": "Is the final reply clear?"}
TC = {"type": "TaskCompletion"}


def _is_rubric(body: dict[str, Any]) -> bool:
    schema = body["tools"][0]["input_schema"] if "tools" in body else body["response_format"]["json_schema"]["schema"]
    return "score" in schema["properties"]


# ---------------------------------------------------------------- 1. a grade that is no number, or no finite one


@pytest.mark.parametrize(("value", "shown"), [("NaN", "nan"), ("Infinity", "inf"), ("-Infinity", "-inf"), ("1e400", "inf")])
def test_a_grade_of_nan_or_infinity_is_a_parse_error_with_its_repair_and_the_other_scores_kept(tmp_path: Path, value: str, shown: str) -> None:
    # int(NaN) raised out of the parser: the whole case ended "ValueError: cannot convert float NaN to integer", every
    # judge score of it dropped (the TaskCompletion verdict that parsed too), no repair, no raw reply, nothing counted.
    bad = f'{{"score": {value}, "reason": "unsure"}}'

    def respond(headers: dict[str, str], body: dict[str, Any]) -> Any:
        return 200, completion(bad if _is_rubric(body) else json.dumps(verdict(body)))

    with Loopback(respond) as server:
        summary = run(config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 2), metrics=[TC, RUBRIC]))
        rubric_requests = sum(_is_rubric(body) for _, body in server.requests)
    assert rubric_requests == 4  # each case's request and its one repair request
    for r in results(tmp_path):
        assert r["status"] == "judge_error", r
        assert r["scores"]["TaskCompletion"]["value"] == 0.75, r["scores"]  # (every answer yes: 3 of 4 good)
        rubric = r["scores"]["Rubric"]
        assert rubric["value"] is None and rubric["reason"] == f"parse_error: unusable verdict after one repair request (score must be an integer, got {shown})"
        assert rubric["details"] == {"raw": bad, "error_kind": "parse_error"}
    j = summary["judge"]
    assert (j["judge_errors"], j["error_kinds"], j["parse_failures"], j["repairs"]) == (2, {"parse_error": 2}, 4, 2), j


def test_every_value_that_is_no_grade_is_a_parse_error_never_another_exception() -> None:
    for reply, problem in [
        ('{"score": NaN}', "score must be an integer, got nan"),
        ('{"score": 1e400}', "score must be an integer, got inf"),
        ('{"score": "5"}', "score must be an integer, got '5'"),
        ('{"score": [5]}', "score must be an integer, got [5]"),
        ('{"score": {"value": 5}}', "score must be an integer, got {'value': 5}"),
        ('{"score": true}', "score must be an integer, got True"),
        ('{"score": null}', "score must be an integer, got None"),
        ('{"score": 4.5}', "score must be an integer, got 4.5"),
        ('{"score": -0}', "score 0 is outside the scale 1..5"),
        ('{"score": 1e300}', "score 1e+300 is outside the scale 1..5"),
        ('{"score": ' + "9" * 4000 + "}", "score " + "9" * 80 + "… is outside the scale 1..5"),  # (a problem quotes at most 80 characters)
    ]:
        with pytest.raises(ParseError) as err:
            parse_scale(reply, 1, 5)
        assert str(err.value) == problem, reply[:40]
    # A value that is no grade does not count against a grade; a whole grade is read however it is written.
    assert parse_scale('{"score": 4, "reason": "first"} {"score": NaN}', 1, 5) == {"score": 4, "reason": "first"}
    assert parse_scale('{"score": 5.0, "reason": "ok"}', 1, 5) == {"score": 5, "reason": "ok"}
    assert parse_scale('{"score": -0.0, "reason": NaN}', 0, 5) == {"score": 0, "reason": "nan"}


def test_a_value_the_parser_cannot_handle_is_a_parse_error_not_a_crash() -> None:
    # The guard behind every entry point: whatever a value provokes, the caller sees `ParseError` (so the repair request,
    # the raw reply kept) and never an exception that ends the case.
    class Unprintable:
        def __str__(self) -> str:
            raise RuntimeError("cannot print")

    with pytest.raises(ParseError, match=r"^the reply could not be read \(RuntimeError: cannot print\)$"):
        yes_no_from({"q1": {"answer": "yes", "reason": Unprintable()}}, ["q1"])
    with pytest.raises(ParseError, match=r"^the reply could not be read"):
        scale_from({"score": 3, "reason": Unprintable()}, 1, 5)


def _runs(tmp: Path) -> tuple[Path, Path]:
    out = []
    for name in ("a", "b"):
        data = tmp / f"{name}.jsonl"
        with open(data, "w") as fh:
            for i in range(3):
                fh.write(json.dumps({"id": f"c{i}", "input": f"Book day {i}", "trace": {"steps": [{"output": f"{name} booked {i}"}]}}) + "\n")
        anyio.run(lambda: runner.run(validate_config({"dataset": {"path": str(data)}, "metrics": [{"type": "MaxToolCalls", "max_calls": 5}],
                                                      "run": {"dir": str(tmp / name)}})))
        out.append(tmp / name)
    return out[0], out[1]


def test_compare_judge_reads_a_nan_grade_as_a_verdict_not_given(tmp_path: Path) -> None:
    # `tracejudge compare --judge` ended "internal error: ValueError: cannot convert float NaN to integer", exit 3.
    a, b = _runs(tmp_path)
    with Loopback(lambda headers, body: (200, completion('{"score": NaN, "reason": "unsure"}'))) as server:
        cfg = tmp_path / "judge.yaml"
        cfg.write_text(yaml.safe_dump({"dataset": {"path": str(tmp_path / "a.jsonl")}, "metrics": [TC],
                                       "judge": {"provider": "openai", "model": "gpt-4o-mini", "base_url": server.url + "/v1", "api_key_env": None,
                                                 "pairwise": {"rubric": "Which run booked the day asked for?"}},
                                       "cache": {"enabled": False}}))
        res = compare_pairwise(a, b, load_config(cfg, []))
    assert res.pairs == 0 and res.not_judged == 3 and res.not_judged_verdicts == {"judge_error": 6}, res


# ---------------------------------------------------------------- 2. Anthropic: text beside the forced tool call


class Messages(Loopback):
    """An Anthropic-protocol judge: `POST /v1/messages`, `respond(headers, body)` giving `(status, message)`."""

    def _routes(self, app: web.Application) -> None:
        app.router.add_post("/v1/messages", self._handle)


def _tool_verdict(body: dict[str, Any]) -> dict[str, Any]:
    # `verdict` reads the question ids from the user message's text; Anthropic's may be a list of blocks.
    text = "\n".join(m["content"] if isinstance(m["content"], str) else "".join(b.get("text", "") for b in m["content"]) for m in body["messages"])
    return verdict({"response_format": {"json_schema": {"schema": body["tools"][0]["input_schema"]}},
                    "messages": [{"role": "user", "content": text}]})


def _message(blocks: list[dict[str, Any]], stop: str = "tool_use", **extra: Any) -> dict[str, Any]:
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-haiku-4-5", "content": blocks, "stop_reason": stop,
            "usage": {"input_tokens": 300, "output_tokens": 40}, **extra}


def _draft(final: dict[str, Any]) -> dict[str, Any]:
    # A first impression that disagrees with the verdict: every yes a no, or the highest grade.
    if "score" in final:
        return {**final, "score": 5}
    return json.loads(json.dumps(final).replace('"yes"', '"no"'))


def test_an_anthropic_text_block_before_the_forced_tool_call_is_not_read_as_the_verdict(tmp_path: Path) -> None:
    # The text was joined to the tool's input, so its draft answered every question a second time: "TC1 is answered
    # both yes and no", "the grade is given twice", and every case ended parse_error after a repair request.
    def respond(headers: dict[str, str], body: dict[str, Any]) -> Any:
        final = _tool_verdict(body)
        return 200, _message([{"type": "thinking", "thinking": "Draft: " + json.dumps(_draft(final)), "signature": "s"},
                              {"type": "text", "text": f"Initial impression: {json.dumps(_draft(final))} -- let me record the verdict."},
                              {"type": "tool_use", "id": "toolu_1", "name": body["tool_choice"]["name"], "input": final}])

    with Messages(respond) as server:
        summary = run(config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 2), metrics=[TC, RUBRIC], provider="anthropic",
                             model="claude-haiku-4-5", api_key_env=None))
        sent = len(server.requests)
    assert summary["status"] == {"ok": 2} and sent == 4  # one request per metric and case: no repair request
    for r in results(tmp_path):
        assert r["scores"]["TaskCompletion"]["value"] == 0.75 and r["scores"]["Rubric"]["value"] == 0.0, r["scores"]  # the tool's verdict


def test_an_anthropic_reply_is_its_tool_calls_input_alone_else_its_text() -> None:
    def text(blocks: list[dict[str, Any]]) -> str:
        return read_reply("anthropic", HttpReply(200, {}, _message(blocks), 0.0), 60.0).text

    tool = {"type": "tool_use", "id": "t", "name": "answers", "input": {"score": 3, "reason": "r"}}
    assert json.loads(text([{"type": "text", "text": '{"score": 1} first impression'}, tool])) == {"score": 3, "reason": "r"}
    assert json.loads(text([tool, {"type": "text", "text": "recorded."}])) == {"score": 3, "reason": "r"}
    # An input given as a JSON string (as some gateways send it) is that JSON, not a quoted string.
    assert json.loads(text([{**tool, "input": '{"score": 2, "reason": "s"}'}])) == {"score": 2, "reason": "s"}
    # Two calls of the forced tool are both read, so two different grades are still seen as such.
    with pytest.raises(ParseError, match="the grade is given twice, 3 and 4"):
        parse_scale(text([tool, {**tool, "input": {"score": 4, "reason": "x"}}]), 1, 5)
    # A server that ignores tools answers in text: that text is the verdict.
    assert text([{"type": "text", "text": "Sure.\n"}, {"type": "text", "text": '{"score": 4}'}]) == 'Sure.\n{"score": 4}'


# ---------------------------------------------------------------- 3. a refusal, named as one


@pytest.mark.parametrize(("provider", "body", "named"), [
    ("anthropic", _message([], "refusal"), 'stop_reason "refusal"'),
    ("anthropic", _message([{"type": "text", "text": '{"score": 5} Hello..'}], "refusal",
                           stop_details={"type": "refusal", "category": "cyber", "explanation": "This request was declined."}),
     'stop_reason "refusal": cyber; This request was declined.'),
    ("openai", {**completion(""), "choices": [{"index": 0, "message": {"role": "assistant", "content": None, "refusal": "I can't help with that."},
                                              "finish_reason": "stop"}]}, "message.refusal: I can't help with that."),
    ("openai", {**completion('{"score": 5'), "choices": [{"index": 0, "message": {"role": "assistant", "content": '{"score": 5'},
                                                         "finish_reason": "content_filter"}]}, "finish_reason: content_filter"),
])
def test_a_refusal_is_a_fatal_error_naming_it_and_its_text_is_never_a_verdict(provider: str, body: dict[str, Any], named: str) -> None:
    # It was read as a reply: Anthropic's empty content became "the server returned no text", a partial text a verdict.
    with pytest.raises(ProviderError) as err:
        read_reply(provider, HttpReply(200, {}, body, 0.0), 60.0)
    assert err.value.kind == "fatal" and err.value.status == 200 and not err.value.retryable
    assert str(err.value).startswith(f"HTTP 200: the model refused to judge this request ({named})"), str(err.value)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_refused_case_fails_alone_naming_the_refusal_without_a_retry_or_repair(tmp_path: Path, provider: str) -> None:
    def respond(headers: dict[str, str], body: dict[str, Any]) -> Any:
        refused = "Find item 1" in json.dumps(body["messages"])
        if provider == "anthropic":
            tool = {"type": "tool_use", "id": "t", "name": body["tool_choice"]["name"], "input": _tool_verdict(body)}
            return 200, _message([] if refused else [tool], "refusal" if refused else "tool_use")
        if refused:
            return 200, {**completion(""), "choices": [{"index": 0, "message": {"role": "assistant", "content": None, "refusal": "I can't help."},
                                                        "finish_reason": "stop"}]}
        return 200, completion(json.dumps(verdict(body)))

    server_cls = Messages if provider == "anthropic" else Loopback
    with server_cls(respond) as server:
        summary = run(config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 3), metrics=[TC], provider=provider, api_key_env=None,
                             model="claude-haiku-4-5" if provider == "anthropic" else "gpt-4o-mini"))
        sent = len(server.requests)
    assert summary["status"] == {"ok": 2, "judge_error": 1} and sent == 3, (summary["status"], sent)
    (refused,) = [r for r in results(tmp_path) if r["status"] != "ok"]
    score = refused["scores"]["TaskCompletion"]
    named = 'stop_reason "refusal"' if provider == "anthropic" else "message.refusal: I can't help."
    assert score["reason"].startswith(f"provider_error: HTTP 200: the model refused to judge this request ({named})"), score["reason"]
    assert score["details"] == {"error_kind": "provider_error", "http_status": 200}


def test_a_refused_case_is_said_apart_from_the_transient_failures_the_same_command_retries(tmp_path: Path) -> None:
    # A refusal (`judge_error`, so retried by the same command) was counted and printed among the transient failures:
    # "2 results ended in a transient failure", then "2 retried after a transient failure". It is the judge's answer.
    def respond(headers: dict[str, str], body: dict[str, Any]) -> Any:
        said = json.dumps(body["messages"])
        if "Find item 1" in said:
            return 200, {**completion(""), "choices": [{"index": 0, "message": {"role": "assistant", "content": None, "refusal": "I can't help."},
                                                        "finish_reason": "stop"}]}
        return 200, completion("not a verdict" if "Find item 2" in said else json.dumps(verdict(body)))  # (item 2: a parse error)

    with Loopback(respond) as server:
        cfg = write(tmp_path, config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 3), metrics=[TC]))
        first, again = (tj("run", str(cfg), "--no-progress", cwd=tmp_path, env={"OPENAI_API_KEY": "x"}) for _ in range(2))
    err, out = " ".join(first.stderr.split()), " ".join(again.stdout.split())
    assert first.returncode == 1 and "1 results ended in a transient failure (judge, target or provider); 1 results ended because the " \
        "judge model refused to judge them (a refusal is the judge's answer, not a transient failure" in err, first.stderr
    assert "the same command retries them" in err  # (it does: a refusal's status is judge_error)
    assert "2 retried (1 after a transient failure, 1 after the judge model refused to judge them)" in out, again.stdout
    assert standing_retries(tmp_path / "run") == (2, 1)  # what `tracejudge report` over shards says per shard
    lines = [json.dumps(r) for r in results(tmp_path)]  # (both runs': each case's line of each)
    assert judge_refused(lines) == 2 and judge_refused(line for line in lines if '"case-2"' in line) == 0


def test_a_content_filters_400_is_a_refusal_too_not_a_transient_failure(tmp_path: Path) -> None:
    # A content filter's HTTP 400 refusing the prompt (as the README says, the same as a 200 refusal) was counted among
    # the transient failures; a 400 that is no filter's (a request the server refuses) is not a refusal.
    def respond(headers: dict[str, str], body: dict[str, Any]) -> Any:
        said = json.dumps(body["messages"])
        if "Find item 1" in said:
            return 400, {"error": {"code": "content_filter", "message": "The prompt was flagged by the content filter."}}
        return 200, completion(json.dumps(verdict(body)))

    with Loopback(respond) as server:
        cfg = write(tmp_path, config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 3), metrics=[TC]))
        first = tj("run", str(cfg), "--no-progress", cwd=tmp_path, env={"OPENAI_API_KEY": "x"})
    err = " ".join(first.stderr.split())
    assert "1 results ended because the judge model refused to judge them" in err and "transient failure (" not in err, first.stderr
    assert standing_retries(tmp_path / "run") == (1, 1)
    line = json.dumps({"status": "judge_error", "scores": {"TaskCompletion": {
        "value": None, "passed": None, "reason": "request_error: HTTP 400: max_tokens is too large",
        "details": {"error_kind": "request_error", "http_status": 400}}}})
    assert judge_refused([line]) == 0


# ---------------------------------------------------------------- 4. an answer to a question that was not asked


A = {"answer": "yes", "reason": "a"}


def test_an_answer_to_an_id_not_asked_is_a_parse_error_naming_it() -> None:
    # parse.py's doc said an extra id is an error, but TC9 was accepted and the reply's TC1 scored.
    for reply in [{"TC1": A, "TC9": {"answer": "no", "reason": "invented"}}, {"TC1": A, "TC9": "no"},
                  {"answers": [{"id": "TC1", **A}, {"id": "TC9", "answer": "no"}]}]:
        with pytest.raises(ParseError, match=r"^the reply answers TC9, which was not asked \(asked: TC1\)"):
            parse_yes_no(json.dumps(reply), ["TC1"])
    # A key holding no answer answers nothing; a missing answer is named before an extra one.
    assert parse_yes_no(json.dumps({"TC1": A, "summary": "fine", "notes": {"length": 3}}), ["TC1"]) == {"TC1": A}
    with pytest.raises(ParseError, match=r"^missing answers for TC1$"):
        parse_yes_no(json.dumps({"tc1": A}), ["TC1"])


def test_ids_a_grouped_request_asked_are_not_extra_but_an_id_no_part_asked_is() -> None:
    reply = {"TC1": A, "TCN1": {"answer": "no", "reason": "b"}}
    assert parse_parts(json.dumps(reply), [["TC1"], ["TCN1"]])[0] == [{"TC1": A}, {"TCN1": {"answer": "no", "reason": "b"}}]
    with pytest.raises(ParseError, match=r"^the reply answers TC9, which was not asked \(asked: TC1, TCN1\)"):
        parse_parts(json.dumps({**reply, "TC9": A}), [["TC1"], ["TCN1"]])
    # One item of a multi-item reply is read alone: an id of its own metric it was not asked about is extra too.
    with pytest.raises(ParseError, match=r"^the reply answers TC2, TC3, which were not asked"):
        yes_no_from({"TC1": A, "TC2": A, "TC3": A}, ["TC1"])


def _with_extra(v: dict[str, Any]) -> dict[str, Any]:
    if "answers" in v:
        return {"answers": [*v["answers"], {"id": "TC9", "answer": "no", "reason": "invented"}]}
    return {**v, "TC9": {"answer": "no", "reason": "invented"}}


def test_a_reply_answering_an_id_not_asked_gets_its_repair_request_then_a_parse_error(tmp_path: Path) -> None:
    with Loopback(lambda headers, body: (200, completion(json.dumps(_with_extra(verdict(body)))))) as server:
        summary = run(config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 2), metrics=[TC]))
        sent = len(server.requests)
    assert summary["status"] == {"judge_error": 2} and sent == 4  # each case's request and its one repair request
    for r in results(tmp_path):
        score = r["scores"]["TaskCompletion"]
        assert score["value"] is None and "(the reply answers TC9, which was not asked (asked: TC1, TC2, TC3, TC4)" in score["reason"], score
        assert json.loads(score["details"]["raw"])["TC9"]["reason"] == "invented"


def test_an_item_of_a_multi_item_reply_answering_an_id_not_asked_is_re_asked_alone(tmp_path: Path) -> None:
    def respond(headers: dict[str, str], body: dict[str, Any]) -> Any:
        fmt = body["response_format"]["json_schema"]
        if fmt["name"] != "verdicts":
            return 200, completion(json.dumps(verdict(body)))
        schema = fmt["schema"]
        subs = {item: schema["$defs"][ref["$ref"].rsplit("/", 1)[1]] for item, ref in schema["properties"].items()}
        return 200, completion(json.dumps({item: _with_extra(verdict({"response_format": {"json_schema": {"schema": sub}}, "messages": []}))
                                           for item, sub in subs.items()}))

    with Loopback(respond) as server:
        summary = run(config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 2), metrics=[TC], group="none", items_per_request=2))
        names = [body["response_format"]["json_schema"]["name"] for _, body in server.requests]
    assert summary["status"] == {"ok": 2} and names.count("verdicts") == 1 and len(names) == 3  # the shared request, then each alone
    for r in results(tmp_path):
        score = r["scores"]["TaskCompletion"]
        assert score["value"] == 0.75 and re.search(r"TC9, which was not asked", score["details"]["batch"]["why"]), score


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(["<think>", "</think>", "<THINKING >", "</thinking>", "<reasoning>", "</reasoning >", "a", " ",
                                 '{"answer": "yes"}', "<", "</", "<think", "\n", "<seed:think>", "</seed:think>", "[THINK]", "[/think]",
                                 "\u25c1think\u25b7", "\u25c1/think\u25b7"]), max_size=14).map("".join))
def test_reasoning_blocks_are_dropped_as_the_pattern_drops_them(text):
    # The blocks are dropped by a scan, not by the lazy pattern, which read to the end of the reply from every opening
    # tag that never closes (a reply of 32,000 of them took 79 s on the event loop); what is dropped is the same.
    from tracejudge.stages.judge.reasoning_blocks import without_closed_blocks

    pattern = r"<(think|thinking|reasoning|seed:think)\s*>.*?</\1\s*>|\[THINK\].*?\[/THINK\]|\u25c1think\u25b7.*?\u25c1/think\u25b7"
    assert without_closed_blocks(text) == re.sub(pattern, " ", text, flags=re.S | re.I)
