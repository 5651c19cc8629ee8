"""Format `otel` on the real OTLP/JSON traces: every `.truth.json` is reproduced exactly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _otel_truth import assert_truth, extract
from conftest import DATA
from tracejudge.core.records import Case

OTEL = DATA / "otel_genai"
TRUTHS = sorted(OTEL.rglob("*.truth.json")) if OTEL.exists() else []

_extract = extract  # (the name this file's tests call it by)


def test_every_truth_file_is_found():
    assert len(TRUTHS) == 7, "the developer set ships 7 traces with truth files"


@pytest.mark.parametrize("truth_path", TRUTHS, ids=lambda p: str(p.relative_to(OTEL)).removesuffix(".truth.json"))
def test_truth_reproduced(truth_path: Path):
    truth = json.loads(truth_path.read_text())
    cases = _extract(truth_path.with_name(truth_path.name.replace(".truth.json", ".json")))
    assert len(cases) == 1, "one conversation per fixture"
    case = cases[0]
    assert isinstance(case, Case), case
    assert_truth(case, truth)


def test_multi_trace_conversation_grouped_or_split():
    """S3 is one session over three traces: one case by conversation, three by trace id."""
    path = OTEL / "adk_py" / "v2_span_only" / "S3.json"
    by_conv = _extract(path)
    assert [c.id for c in by_conv] == ["sess-S3-v2_span_only"]
    by_trace = _extract(path, group_by="trace")
    assert len(by_trace) == 3
    assert [c.input for c in by_trace] == ["Hi, my name is Ada.", "What is the weather in Rome?", "Thanks, bye!"]
    assert [len(c.trace.tool_calls()) for c in by_trace] == [0, 1, 0]


def test_directory_with_exclude_reads_every_export():
    cases = _extract(OTEL, exclude=["*.truth.json"])
    assert len(cases) == 7 and all(isinstance(c, Case) for c in cases)
    assert sum(len(c.trace.tool_calls()) for c in cases) == 2 + 1 + 1 + 1 + 2 + 2 + 10


def test_directory_without_exclude_reports_truth_files_as_invalid():
    got = _extract(OTEL)
    bad = [g for g in got if not isinstance(g, Case)]
    assert len(bad) == 7
    cid, err = bad[0]
    assert err.kind == "invalid_input" and err.file.endswith(".truth.json") and err.line == 1
    assert "not an OTLP/JSON export" in err.message
