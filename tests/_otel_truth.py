"""Format `otel` against a `.truth.json` of the developer set (`otel_genai/`): what a trace file must read as.

Shared by the tests of the real exports (`test_extract_otel_truth`), of the same exports written in the other
shapes agentevals' loader reads (`test_otel_input_shapes`), and of agentevals' own fixture corpus
(`test_agentevals_fixtures`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tracejudge.core import registry
from tracejudge.core.config import DatasetConfig
from tracejudge.core.records import Case
from tracejudge.stages.extract import extract_record
from tracejudge.stages.extract.otel import turn_calls


def extract(path: Path, **options: Any) -> list[Any]:
    """Every record of `path` read as format `otel` with `options`: a `Case`, or the `(case id, error)` of one that did not read."""
    fmt = registry.format_for("otel")
    ds = DatasetConfig(path=path, format="otel", options=options)
    ctx = fmt.prepare(ds)
    return [extract_record(raw, fmt, ctx) for raw in fmt.read(ds)]


def assert_turn(got: dict[str, Any], calls: list[Any], want: dict[str, Any]) -> None:
    """One turn of `metadata.otel.turns`, with its tool calls, holds what a truth turn says: texts, agents, usage, calls."""
    assert got["user_text"] == want["user_text"]
    assert got["final_text"] == want["final_text"]
    assert got["intermediate_texts"] == want["intermediate_texts"]
    assert got["agents"] == want["agents"]
    assert {"input": got["usage"]["input_tokens"], "output": got["usage"]["output_tokens"]} == want["tokens"]
    if "llm_calls" in want:
        assert got["usage"]["requests"] == want["llm_calls"]
    actual = [
        {
            "name": c.name,
            "args": None if c.arguments_missing else c.arguments,
            "result": c.result,
            "is_error": c.failed,
            "error_type": c.error.split(":", 1)[0] if c.error else None,
        }
        for c in calls
    ]
    expected = [{k: tc[k] for k in ("name", "args", "result", "is_error", "error_type")} for tc in want["tool_calls"]]
    assert actual == expected


def assert_truth(case: Case, truth: dict[str, Any]) -> None:
    """`case` holds exactly what `truth` says: per turn its texts, agents, usage and tool calls, then the case's totals."""
    turns = case.metadata["otel"]["turns"]
    assert len(turns) == len(truth["turns"])
    for got, want, calls in zip(turns, truth["turns"], turn_calls(case)):
        assert_turn(got, calls, want)
    assert case.trace.usage.input_tokens == truth["tokens"]["input"]
    assert case.trace.usage.output_tokens == truth["tokens"]["output"]
    assert case.input == truth["turns"][0]["user_text"]
    # `turns` are the later user texts a live re-run sends: a turn whose text was not recorded (content capture off) is
    # in `metadata.otel.turns` with `user_text: None`, and has nothing to send
    assert case.turns == [t["user_text"] for t in truth["turns"][1:] if t["user_text"] is not None]
    assert case.trace.output == truth["turns"][-1]["final_text"]
    if "session_key" in truth:
        assert case.id == truth["session_key"]["value"]
    assert_evaluations(case, [e for t in truth["turns"] for e in t.get("external_evaluations", [])])


def _results(case: Case) -> list[dict[str, Any]]:
    """The evaluation results `case` holds as labels (`metadata.other_labels`), as a truth lists them: name, score
    value (None for a result of a text label only) and score label."""
    out = []
    labels, details = case.metadata.get("other_labels", {}), case.metadata.get("other_label_details", {})
    for name, value in labels.items():
        for i, detail in enumerate(details.get(name, [])):
            one = value[i] if isinstance(value, list) else value
            number = one if isinstance(one, float) else None
            out.append({"name": name, "score_value": number, "score_label": detail.get("score_label", None if number is not None else one)})
    return out


def assert_evaluations(case: Case, want: list[dict[str, Any]]) -> None:
    """`case`'s labels are the evaluation results a truth lists (`external_evaluations`: name, score value and label),
    in any order; a truth listing none leaves the case without."""
    key = lambda r: (r["name"], str(r["score_value"]), str(r["score_label"]))  # noqa: E731
    expected = [{k: e.get(k) for k in ("name", "score_value", "score_label")} for e in want]
    assert sorted(_results(case), key=key) == sorted(expected, key=key)


def assert_cases_truth(cases: list[Any], truth: dict[str, Any]) -> None:
    """`cases`, read from one fixture, hold what `truth` says.

    One conversation is one case. A fixture of several traces that carry no conversation key reads as a case a trace
    (format `otel`'s rule, where agentevals keeps one session a file): each case then holds the truth's next turns, in
    order. A truth with `extra_turns_allowed` lists only some turns; the case's other turns are not compared.
    """
    bad = [c for c in cases if not isinstance(c, Case)]
    assert not bad, bad
    if truth.get("extra_turns_allowed"):
        read = {t["user_text"]: (t, calls) for c in cases for t, calls in zip(c.metadata["otel"]["turns"], turn_calls(c))}
        for want in truth["turns"]:
            assert want["user_text"] in read, f"turn {want['user_text']!r} is read"
            assert_turn(read[want["user_text"]][0], read[want["user_text"]][1], want)
        return
    # each turn's user text is a user message of the case, and nothing else is (a framework's own note is not)
    assert [m.content for c in cases for m in c.trace.user_messages] == [t["user_text"] for t in truth["turns"] if t["user_text"] is not None]
    if len(cases) == 1 or "session_key" in truth:
        assert len(cases) == 1, "one conversation per fixture"
        assert_truth(cases[0], truth)
        return
    start = 0
    for case in cases:
        part = truth["turns"][start:start + len(case.metadata["otel"]["turns"])]
        start += len(part)
        tokens = {k: sum(t["tokens"][k] for t in part) for k in ("input", "output")}
        assert_truth(case, dict(truth, turns=part, tokens=tokens))
    assert start == len(truth["turns"]), "every turn of the truth is read"
