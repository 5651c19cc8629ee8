"""Format `otel`: a span is its trace id and span id together; a log record joins only the span of the trace it names.

Two traces may hold spans of one span id (an id generator seeded alike, fixed ids in a harness). A record naming both
ids joined every span of that span id, so one trace's message events and evaluation results were read into the other
trace's case too. A record naming a span id and no trace joins the one span of that id; when spans of several traces
carry it, which one it is about cannot be told: it is read nowhere, with a warning. A log record's id that is no text
(`spanId: 99`) is warned of with its file, line and field, and the record read as naming no span.
"""

from __future__ import annotations

import copy
import json
import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import extract_path
from test_otel_loop_faults import facts

ROOT = Path(__file__).parent / "data"
EVENTS = ROOT / "openllmetry-events" / "tl-events-n2.jsonl"  # two traces, one chat span each, its messages as log records
EVALUATED = ROOT / "agentevals" / "hand" / "ext_eval_span_event.json"  # an agent span, a chat span with an evaluation event


def _items(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every span and log record of `docs`."""
    return ([s for d in docs for rs in d.get("resourceSpans", []) for ss in rs["scopeSpans"] for s in ss["spans"]]
            + [r for d in docs for rl in d.get("resourceLogs", []) for sl in rl["scopeLogs"] for r in sl["logRecords"]])


def _events(tmp_path: Path, shared: bool, traced: bool = True) -> list[Any]:
    """The recording read by trace: with the second trace's chat span given the first's span id (`shared`), and its
    log records' trace ids dropped (`traced=False`)."""
    docs = [json.loads(line) for line in EVENTS.read_text().splitlines()]
    spans = [i for i in _items(docs) if "name" in i]
    assert len({s["traceId"] for s in spans}) == 2 and len(spans) == 2  # what the recording holds
    first, second = spans[0]["spanId"], spans[1]["spanId"]
    for item in _items(docs):
        if shared and item.get("spanId") == second:
            item["spanId"] = first
        if not traced and "name" not in item:
            item.pop("traceId")
    path = tmp_path / "events.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in docs))
    return extract_path(path, "otel", {"group_by": "trace"})


def test_message_events_join_only_the_span_of_the_trace_they_name(tmp_path: Path) -> None:
    # before, each trace's request read both traces' messages: Tokyo's call and three answers in each case
    apart = [facts(c) for c in _events(tmp_path, shared=False)]
    assert [facts(c) for c in _events(tmp_path, shared=True)] == apart
    assert apart[0] != apart[1]


def test_a_record_naming_only_a_span_id_joins_it_when_one_trace_holds_it(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    apart = [facts(c) for c in _events(tmp_path, shared=False)]
    assert [facts(c) for c in _events(tmp_path, shared=False, traced=False)] == apart
    with caplog.at_level(logging.WARNING):
        got = _events(tmp_path, shared=True, traced=False)
    said = [r.getMessage() for r in caplog.records if "hold a span of that id" in r.getMessage()]
    assert len(said) == 1 and said[0].startswith(f"otel: {tmp_path / 'events.jsonl'}:") and "and 2 traces read" in said[0], said
    assert "10 log record(s) (the first 'gen_ai.system.message'" in said[0], said
    # neither trace took the other's messages: each is left with no content, its conversation's error
    assert [(c[1].kind, "carry no content" in c[1].message) for c in got] == [("invalid_input", True)] * 2, got


def _evaluated(folder: Path, name: str, trace: int, chat_span: str, record: dict[str, Any] | None) -> None:
    """`ext_eval_span_event.json` as trace `trace` (its chat span `chat_span`), with `record` (a log record's fields
    besides its time and event name; its `traceId` and `spanId` default to the chat span's) in a logs export."""
    doc = copy.deepcopy(json.loads(EVALUATED.read_text()))
    root, chat = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    tid = f"{trace:032x}"
    root.update(traceId=tid, spanId=f"{trace + 5000:016x}")
    chat.update(traceId=tid, spanId=chat_span, parentSpanId=root["spanId"])
    if record is not None:
        rec = {"timeUnixNano": "1760000000070000000", "eventName": "gen_ai.evaluation.result", "traceId": tid, "spanId": chat_span,
               **record}
        doc["resourceLogs"] = [{"resource": {"attributes": []}, "scopeLogs": [{"scope": {"name": "ev"}, "logRecords": [rec]}]}]
    (folder / f"{name}.json").write_text(json.dumps(doc))


def _score(name: str, value: float) -> list[dict[str, Any]]:
    return [{"key": "gen_ai.evaluation.name", "value": {"stringValue": name}},
            {"key": "gen_ai.evaluation.score.value", "value": {"doubleValue": value}}]


def test_an_evaluation_record_is_a_label_of_the_trace_it_names_only(tmp_path: Path) -> None:
    """Through `tracejudge extract` (a process), as a user ran it: trace 9 reuses the span id of trace 8's chat span, and
    only trace 8's record names it; a record whose `spanId` is a number is its trace's, and said so."""
    data = tmp_path / "in"
    data.mkdir()
    _evaluated(data, "h_dup1", 8, "abcd" * 4, {"attributes": _score("Tox", 0.1)})
    _evaluated(data, "h_dup2", 9, "abcd" * 4, None)
    _evaluated(data, "f_spanint", 6, f"{1006:016x}", {"attributes": _score("Tone", 0.5), "spanId": 99})
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"dataset: {{path: {data}, format: otel, options: {{group_by: trace}}}}\n"
                   "metrics: [{type: MaxToolCalls, max_calls: 10}]\n")
    proc = subprocess.run([sys.executable, "-m", "tracejudge", "extract", str(cfg), "-o", "-"], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    labels = {c["id"][-2:]: c["metadata"]["other_labels"] for c in map(json.loads, proc.stdout.splitlines())}
    # (the fixture's own span event gives each its Relevance)
    assert labels == {"08": {"Relevance": 0.9, "Tox": 0.1}, "09": {"Relevance": 0.9}, "06": {"Relevance": 0.9, "Tone": 0.5}}
    assert (f"{data / 'f_spanint.json'}:1: resourceLogs[0].scopeLogs[0].logRecords[0] (gen_ai.evaluation.result): spanId must be "
            "text (OTLP/JSON writes ids as hex), got number 99: the record is read as naming no span") in proc.stderr
