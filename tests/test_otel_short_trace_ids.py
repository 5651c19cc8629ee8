"""A 64-bit trace id (Jaeger's, Zipkin's) is one trace however it is spelled: its 16 hex digits, or zero-padded to 32
as the Collector's Jaeger and Zipkin receivers write it (`0000000000000000` + the 16, in hex or in base64).

Before, the padded spelling was a 128-bit id of its own: the spans of a trace exported through a Zipkin receiver and
its log records (or the rest of its spans) sent with the 16 digits read as two traces, each without the other's part.
The recordings are real (`tests/data/openllmetry-events/`, `tests/data/otel-loop-faults/`), their ids respelled.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from helpers import extract_path
from test_otel_loop_faults import facts

DATA = Path(__file__).parent / "data"
PAD = "0" * 16


def _docs(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _items(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The spans and log records of one export."""
    return ([s for rs in doc.get("resourceSpans", []) for ss in rs["scopeSpans"] for s in ss["spans"]]
            + [r for rl in doc.get("resourceLogs", []) for sl in rl["scopeLogs"] for r in sl["logRecords"]])


def _write(path: Path, docs: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(d) + "\n" for d in docs))
    return path


@pytest.mark.parametrize("padded", ["hex", "base64"])
def test_spans_with_the_padded_id_and_records_with_the_16_digits_are_one_trace(tmp_path: Path, padded: str) -> None:
    docs = _docs(DATA / "openllmetry-events" / "tl-events-n2.jsonl")
    short = "00f067aa0ba902b7"
    spelled = {"hex": PAD + short, "base64": base64.b64encode(bytes.fromhex(PAD + short)).decode()}[padded]
    for d in docs:
        for item in _items(d):
            item["traceId"] = spelled if "spanId" in item and "name" in item else short
    got = extract_path(_write(tmp_path / "t.jsonl", docs), "otel", {"group_by": "trace"})
    truth = json.loads((DATA / "openllmetry-events" / "tl-events-n2.truth.json").read_text())["cases"]
    assert [facts(c) for c in got] == truth, got
    assert [c.id for c in got] == [short]


def test_a_trace_whose_spans_came_in_both_spellings_is_one_tree(tmp_path: Path) -> None:
    # the 23 spans of one LangGraph run, every other one in a second file with the padded id: one case, as recorded
    name = "oi-rag-graph"
    docs = _docs(DATA / "otel-loop-faults" / f"{name}.jsonl")
    padded = json.loads(json.dumps(docs))
    for whole, half in zip(docs, padded, strict=True):
        for i, (a, b) in enumerate(zip(_items(whole), _items(half), strict=True)):
            keep = a if i % 2 else b
            keep["traceId"] = PAD + keep["traceId"][16:] if keep is b else keep["traceId"][16:]
            (b if i % 2 else a)["traceId"] = "drop"
    for d in docs + padded:
        for rs in d.get("resourceSpans", []):
            for ss in rs["scopeSpans"]:
                ss["spans"] = [s for s in ss["spans"] if s["traceId"] != "drop"]
    folder = tmp_path / "both"
    _write(folder / "zipkin.jsonl", padded)
    _write(folder / "jaeger.jsonl", docs)
    (case,) = extract_path(folder, "otel")
    (want,) = json.loads((DATA / "otel-loop-faults" / f"{name}.truth.json").read_text())["cases"]
    assert facts(case) == {k: want[k] for k in ("user_turns", "calls", "output", "usage")}
    assert [p.model_dump(exclude_none=True) for p in case.trace.retrieved] == want["retrieved"]


def test_a_128_bit_id_with_a_nonzero_upper_half_is_kept_whole(tmp_path: Path) -> None:
    docs = _docs(DATA / "openllmetry-events" / "tl-events-n2.jsonl")
    for d in docs:
        for item in _items(d):
            item["traceId"] = "0000000000000001" + "00f067aa0ba902b7"
    (case,) = extract_path(_write(tmp_path / "t.jsonl", docs), "otel", {"group_by": "trace"})
    assert case.id == "000000000000000100f067aa0ba902b7"
