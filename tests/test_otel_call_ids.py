"""Tool results of calls whose ids do not tell them apart, recorded by the real instrumentations in `tests/data/call-ids/`.

Recorded by `tests/frameworks/record_call_ids.py` (its docstring says what each scenario runs); each
`<scenario>.truth.json` is what the application itself sent and got. A call's result is the tool message that
answered it in the conversation's order, never merely the first message that carried its id:

- ids reused across rounds (`call_0` in every response), under OpenInference, OpenLLMetry and MLflow (format
  `mlflow` and its OTLP export): each call keeps its own round's result;
- ids `""` (OpenLLMetry writes them, OpenInference leaves them out): every call keeps its result, also when
  several returned the same text;
- parallel calls that nothing but their order ties to their results (ids `""`, or OpenLLMetry's Responses API
  spans, which write a call's item id `fc_…` and its output's `call_id`): read in order, and a warning says the
  pairing is by order only. OpenInference records the `call_id` on both sides: read as sent, no warning.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from helpers import extract_path
from tracejudge.core.records import Case

DATA = Path(__file__).parent / "data" / "call-ids"
BY_ORDER = "paired with the tool messages that answered them by order only"


def extract(path: Path, fmt_name: str = "otel") -> list[Case]:
    cases = extract_path(path, fmt_name)
    assert all(isinstance(c, Case) for c in cases), cases
    return cases


def truth(name: str) -> dict[str, Any]:
    (case,) = json.loads((DATA / f"{name}.truth.json").read_text())["cases"]
    return case


def calls(case: Case) -> list[dict[str, Any]]:
    return [{"id": c.id, "name": c.name, "arguments": c.arguments, "result": c.result, "error": c.error} for c in case.trace.tool_calls()]


def sent(name: str) -> list[dict[str, Any]]:
    return [{"id": c["id"], "name": c["name"], "arguments": c["arguments"], "result": c["result"], "error": None} for c in truth(name)["calls"]]


def warned(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if BY_ORDER in r.getMessage()]


@pytest.mark.parametrize(("file", "fmt_name", "name"), [
    ("oi-dup-ids.jsonl", "otel", "oi-dup-ids"),
    ("tl-dup-ids.jsonl", "otel", "tl-dup-ids"),
    ("tl-dup-ids-parallel.jsonl", "otel", "tl-dup-ids-parallel"),
    ("oi-dup-ids-turns.jsonl", "otel", "oi-dup-ids-turns"),
    ("mlflow-dup-ids.otlp.jsonl", "otel", "mlflow-dup-ids"),
    ("mlflow-dup-ids.mlflow.jsonl", "mlflow", "mlflow-dup-ids"),
])
def test_an_id_reused_across_rounds_answers_each_round_with_its_own_result(file: str, fmt_name: str, name: str,
                                                                          caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        (case,) = extract(DATA / file, fmt_name)
    want = truth(name)
    assert len({c["id"] for c in want["calls"]}) < len(want["calls"])  # the recording does reuse an id
    assert calls(case) == sent(name)
    assert [m.content for m in case.trace.user_messages] == want["user_turns"] and case.trace.output == want["output"]
    assert not warned(caplog)  # the ids and the rounds decide every pairing


@pytest.mark.parametrize("name", ["oi-empty-ids-same", "tl-empty-ids-same", "oi-empty-ids", "tl-empty-ids"])
def test_calls_without_ids_keep_every_result(name: str) -> None:
    (case,) = extract(DATA / f"{name}.jsonl")
    got, want = calls(case), sent(name)
    # OpenLLMetry keeps the empty id; OpenInference writes none for it
    assert [c["id"] for c in got] == ([None] * len(want) if name.startswith("oi-") else [""] * len(want))
    assert [{**c, "id": ""} for c in got] == want


@pytest.mark.parametrize("name", ["oi-empty-ids-same", "tl-empty-ids-same"])
def test_calls_without_ids_that_returned_the_same_text_need_no_warning(name: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        extract(DATA / f"{name}.jsonl")
    assert not warned(caplog)  # any pairing gives every call "ok"


@pytest.mark.parametrize("name", ["oi-empty-ids", "tl-empty-ids"])
def test_parallel_calls_without_ids_paired_by_order_say_so(name: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        extract(DATA / f"{name}.jsonl")
    (said,) = warned(caplog)
    assert '"Paris"' in said and '"Tokyo"' in said and "Oslo" not in said  # the parallel pair only, not the lone call after


def _recorded_ids(path: Path) -> tuple[set[str], set[str]]:
    """(ids on the `tool_call` parts of the model outputs, ids on the `tool_call_response` parts) OpenLLMetry recorded."""
    asked, answered = set(), set()
    for line in path.read_text().splitlines():
        for rs in json.loads(line)["resourceSpans"]:
            for span in (s for ss in rs["scopeSpans"] for s in ss["spans"]):
                attrs = {a["key"]: a["value"].get("stringValue") for a in span["attributes"]}
                for m in json.loads(attrs.get("gen_ai.output.messages") or "[]"):
                    asked |= {p["id"] for p in m["parts"] if p["type"] == "tool_call"}
                for m in json.loads(attrs.get("gen_ai.input.messages") or "[]"):
                    answered |= {p["id"] for p in m["parts"] if p["type"] == "tool_call_response"}
    return asked, answered


def test_openllmetry_responses_outputs_sent_out_of_order_are_paired_by_order_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    name = "tl-responses-rev"
    want = truth(name)
    asked, answered = _recorded_ids(DATA / f"{name}.jsonl")
    assert asked == {c["item_id"] for c in want["calls"]} and answered == {c["id"] for c in want["calls"]}  # nothing links the two
    assert want["sent_order"][:2] == [want["calls"][1]["id"], want["calls"][0]["id"]]  # Tokyo's output first
    with caplog.at_level(logging.WARNING):
        (case,) = extract(DATA / f"{name}.jsonl")
    got = calls(case)
    assert [(c["id"], c["name"], c["arguments"]) for c in got] == [(c["item_id"], c["name"], c["arguments"]) for c in want["calls"]]
    assert sorted(c["result"] for c in got[:2]) == sorted(c["result"] for c in want["calls"][:2])  # which is whose: not recorded
    assert got[2]["result"] == want["calls"][2]["result"]  # a lone call's result is decided
    (said,) = warned(caplog)
    assert "fc_p1" in said and "fc_t2" in said and "fc_o3" not in said


def test_openinference_responses_outputs_sent_out_of_order_are_read_as_sent(caplog: pytest.LogCaptureFixture) -> None:
    name = "oi-responses-rev"
    with caplog.at_level(logging.WARNING):
        (case,) = extract(DATA / f"{name}.jsonl")
    want = truth(name)
    assert calls(case) == [{"id": c["id"], "name": c["name"], "arguments": c["arguments"], "result": c["result"], "error": None} for c in want["calls"]]
    assert not warned(caplog)
