"""Format `langfuse`: a v2 observations page fetched without a field group is told from one whose values are null.

`GET /api/public/v2/observations` returns only the field groups `fields` names, `core,basic` when it names none, and
leaves a group out of every observation as keys. The pages here are built by `tests/frameworks/langfuse_api.py` from the
OTLP Langfuse's SDK sent for the LangGraph agent of `tests/data/langfuse-api-langgraph/` (`lf-react`, its truth file),
as the server answers each `fields` (its `FIELD_GROUPS`). Before, every such page read without a word:

- without `io` (the API's default `core,basic`): a case with no input, no output, every call's arguments null (exit 0);
  without `basic`: no tool names, no errors. Now the record is refused, naming the group and the query that gets it.
- without `metadata`: LangGraph's node "agent" (typed `AGENT` by Langfuse's `CallbackHandler`) read as agent runs of
  their own: 5 calls in 3 steps instead of 3 in 2; so did a v1 trace whose observations had `metadata: null`. Now it is
  said once per file, the missing groups listed in `metadata.langfuse.missing_fields`; so for `usage` and `trace_context`.
- a page whose `meta.cursor` says more observations follow (the API's `limit` is 50 unless asked) read as the whole run.
- `observations` that is not a list was called "missing".
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any

import pytest
from test_langfuse_api_langgraph import DATA, check
from tracejudge.core import registry
from tracejudge.core.config import DatasetConfig
from tracejudge.core.records import Case
from tracejudge.stages.extract import extract_record
import _forkserver

pytest.importorskip("langfuse.api")
sys.path.insert(0, str(Path(__file__).parent / "frameworks"))
try:
    from langfuse_api import observations_v2
finally:
    sys.path.pop(0)

DOCS = [json.loads(line) for line in (DATA / "lf-react.otlp.jsonl").read_text().splitlines()]
QUERY = "fields=core,basic,io,metadata,usage,trace_context&expandMetadata=langgraph_node,tool_call_id,thread_id&limit=1000"
WHOLE = "core,basic,io,metadata,usage,trace_context"


def extract(path: Path) -> list[Any]:
    fmt = registry.format_for("langfuse")
    ds = DatasetConfig(path=path, format="langfuse", options={})
    ctx = fmt.prepare(ds)
    return [extract_record(raw, fmt, ctx) for raw in fmt.read(ds)]


def page(tmp_path: Path, name: str, fields: str | None, expand: str | None = None, limit: int = 1000) -> Path:
    path = tmp_path / f"{name}.json"
    (body,) = observations_v2(DOCS, fields, expand, limit)
    path.write_text(json.dumps(body) + "\n")
    return path


def said(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and r.getMessage().startswith("langfuse:")]


@pytest.mark.parametrize("fields, lacking, field", [(None, "`io`", "data[0].input"), ("core,basic,metadata,usage,trace_context", "`io`", "data[0].input"),
                                                    ("core,io,metadata,usage", "`basic`", "data[0].name"), ("io", "`basic`", "data[0].name")])
def test_a_page_without_io_or_basic_is_refused_naming_the_query(tmp_path: Path, fields: str | None, lacking: str, field: str) -> None:
    (result,) = extract(page(tmp_path, f"refused-{fields}", fields))
    assert not isinstance(result, Case), result
    cid, error = result
    assert error.kind == "invalid_input" and error.field == field and cid == DOCS[0]["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"]
    assert f"fetched without the {lacking} field group" in error.message and QUERY in error.message and f"traceId={cid}" in error.message


@pytest.mark.parametrize("fields, missing", [("core,basic,io,usage", ["metadata", "trace_context"]), ("core,basic,io,metadata,usage", ["trace_context"]),
                                             ("core,basic,io,metadata,trace_context", ["usage"])])
def test_a_page_without_metadata_usage_or_trace_context_is_read_and_says_so_once(tmp_path: Path, caplog: pytest.LogCaptureFixture, fields: str,
                                                                                  missing: list[str]) -> None:
    caplog.set_level(logging.WARNING, logger="tracejudge")
    (whole,) = extract(page(tmp_path, f"whole-{fields}", WHOLE, "langgraph_node,tool_call_id,thread_id"))
    check(whole)  # the query the warnings name reads the run as it ran, and says nothing
    assert "missing_fields" not in whole.metadata["langfuse"] and said(caplog) == []
    path = page(tmp_path, f"partial-{fields}", fields)
    (case,) = extract(path)
    assert extract(path)[0].metadata == case.metadata  # (read again: said once per file)
    assert case.metadata["langfuse"]["missing_fields"] == missing
    (warning,) = said(caplog)
    assert warning.startswith(f"langfuse: {path.name}:1: ") and QUERY in warning and all(f"`{g}`" in warning for g in missing)
    if "metadata" in missing:
        assert "LangGraph node heuristics cannot apply" in warning and "2 `AGENT` observations" in warning
    else:
        check(case)  # (a page with `metadata` reads the graph's nodes as nodes)


def test_a_v1_trace_whose_observations_have_no_metadata_says_so(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="tracejudge")
    trace = json.loads((DATA / "lf-react.json").read_text())
    path = tmp_path / "v1-no-metadata.json"
    path.write_text(json.dumps({**trace, "observations": [{**o, "metadata": None} for o in trace["observations"]]}) + "\n")
    (case,) = extract(path)
    assert case.metadata["langfuse"]["missing_fields"] == ["metadata"]
    (warning,) = said(caplog)
    assert "has no observation with `metadata`" in warning and "LangGraph node heuristics cannot apply" in warning


def test_a_page_that_is_not_the_last_is_refused(tmp_path: Path) -> None:
    path = page(tmp_path, "first-page", WHOLE, limit=10)
    assert len(json.loads(path.read_text())["data"]) == 10  # the newest 10 of 18: the run's start is on the next page
    ((_, error),) = extract(path)
    assert error.kind == "invalid_input" and error.field == "meta.cursor" and "more observations follow" in error.message


@pytest.mark.parametrize("record, field, said_", [({"id": "t", "observations": "x"}, "observations", "got a string"),
                                                  ({"id": "t", "observations": {"a": 1}}, "observations", "got an object"),
                                                  ({"data": "x"}, "data", "got a string")])
def test_observations_that_are_no_list_are_named_so(tmp_path: Path, record: dict[str, Any], field: str, said_: str) -> None:
    path = tmp_path / "shapes.jsonl"
    path.write_text(json.dumps(record) + "\n")
    ((_, error),) = extract(path)
    assert error.field == field and f"{field}: expected a list of observations, {said_}" in error.message and "missing" not in error.message


def test_an_otlp_file_given_as_langfuse_says_which_format_reads_it_and_names_its_field_once(tmp_path: Path) -> None:
    """`tracejudge extract` named the field twice (`observations: observations: required list …`: the place names it and
    the message began with it) and did not say that the line is OTLP, which format `otel` reads."""
    import subprocess

    otlp = tmp_path / "spans.jsonl"
    otlp.write_text('{"resourceSpans": []}\n{"id": "t2", "observations": "abc"}\n', encoding="utf-8")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"dataset: {{path: {otlp}, format: langfuse}}\nmetrics: [{{type: MaxToolCalls, max_calls: 5}}]\n", encoding="utf-8")
    got = _forkserver.run([sys.executable, "-m", "tracejudge", "extract", str(cfg), "-o", str(tmp_path / "out.jsonl")],
                         capture_output=True, text=True, timeout=120)
    assert got.returncode == 1, got.stderr
    assert "observations: observations" not in got.stderr, got.stderr
    assert f"{otlp}:1: observations: required list of observations is missing: this line is an OTLP export request" in got.stderr
    assert "format `otel` reads" in got.stderr
    assert f"{otlp}:2: observations (t2): expected a list of observations, got a string" in got.stderr, got.stderr


def test_a_page_joining_observations_fetched_with_and_without_io_is_refused(tmp_path: Path) -> None:
    """One line holding the observations of two fetches, one with `io` and one without: the group check looked for its
    keys on any observation, so the others' input, output and results read as unknown, silently."""
    (whole,) = observations_v2(DOCS, WHOLE, None, 1000)
    (bare,) = observations_v2(DOCS, None, None, 1000)
    keep = len(whole["data"]) // 2
    mixed = {**whole, "data": whole["data"][:keep] + bare["data"][keep:]}
    path = tmp_path / "mixed.json"
    path.write_text(json.dumps(mixed) + "\n")
    (result,) = extract(path)
    assert not isinstance(result, Case), result
    _, error = result
    assert error.kind == "invalid_input" and error.field == f"data[{keep}].input", error
    assert "fetched with different field groups" in error.message and QUERY in error.message
