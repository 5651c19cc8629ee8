"""Format `langfuse`: lines of Langfuse's API that hold part of a run, or none of it, are refused saying what to fetch.

Built by `tests/frameworks/langfuse_api.py` (as Langfuse's server answers) from the OTLP Langfuse's SDK sent for the
`@observe` order desk of `tests/data/langfuse-api-observe/` (`lf-args`, its truth file: six observations).

- A page of `GET /api/public/traces` (the traces list), or one trace of it, gives the trace's `observations` as ids
  only. It was refused as "expected an observation with `id` and `type`" at `observations[0].type`, which says neither
  what the line is nor what to fetch; now the error says it is the traces list and names `GET /api/public/traces/{id}`
  and the v2 observations query.
- A page of the older `GET /api/public/observations` (paged by number: `meta.page`, `meta.totalPages`, 50 observations
  a page unless asked, newest first) that held only part of its query's observations read as the whole run (here: the
  desk's last calls and its answer, without its question and first calls), with a warning naming the v2 API's
  `trace_context` group it never had. Now such a page is refused, as a v2 page whose `meta.cursor` says more follow
  is; a page holding all of them (or the pages' `data` joined) is read, said once to lack the trace's own fields.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any

import pytest
from tracejudge.core import registry
from tracejudge.core.config import DatasetConfig
from tracejudge.core.records import Case
from tracejudge.stages.extract import extract_record

sys.path.insert(0, str(Path(__file__).parent / "frameworks"))
try:
    from langfuse_api import observations_v1, traces_list
finally:
    sys.path.pop(0)

DATA = Path(__file__).parent / "data" / "langfuse-api-observe"
DOCS = [json.loads(line) for line in (DATA / "lf-args.otlp.jsonl").read_text().splitlines()]
TRUTH = json.loads((DATA / "lf-args.truth.json").read_text())
TRACE_ID = json.loads((DATA / "lf-args.json").read_text())["id"]
V2_QUERY = f"GET /api/public/v2/observations?traceId={TRACE_ID}&fields=core,basic,io,metadata,usage,trace_context"


def extract(tmp_path: Path, name: str, lines: list[Any]) -> list[Any]:
    path = tmp_path / f"{name}.json"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    fmt = registry.format_for("langfuse")
    ds = DatasetConfig(path=path, format="langfuse", options={})
    ctx = fmt.prepare(ds)
    return [extract_record(raw, fmt, ctx) for raw in fmt.read(ds)]


def refused(result: Any) -> Any:
    assert not isinstance(result, Case), result
    return result[1]


def test_a_page_of_the_traces_list_is_refused_naming_what_to_fetch(tmp_path: Path) -> None:
    page = traces_list(DOCS)
    assert page["data"][0]["observations"] and all(isinstance(o, str) for o in page["data"][0]["observations"])
    (result,) = extract(tmp_path, "traces", [page])
    error = refused(result)
    assert error.kind == "invalid_input" and error.field == "data[0].observations"
    assert "GET /api/public/traces (the traces list)" in error.message and "ids only" in error.message
    assert f"GET /api/public/traces/{TRACE_ID}" in error.message and V2_QUERY in error.message


def test_a_trace_of_the_traces_list_is_refused_naming_what_to_fetch(tmp_path: Path) -> None:
    (trace,) = traces_list(DOCS)["data"]
    (result,) = extract(tmp_path, "trace", [trace])
    error = refused(result)
    assert result[0] == TRACE_ID and error.field == "observations[0]"
    assert "by id only" in error.message and "traces list" in error.message
    assert f"GET /api/public/traces/{TRACE_ID}" in error.message and V2_QUERY in error.message


@pytest.mark.parametrize("page", [1, 2])
def test_a_numbered_page_of_observations_that_is_not_the_whole_run_is_refused(tmp_path: Path, page: int) -> None:
    (body,) = observations_v1(DOCS, limit=4, page=page)
    assert body["meta"] == {"page": page, "limit": 4, "totalItems": 6, "totalPages": 2} and len(body["data"]) == (4 if page == 1 else 2)
    (result,) = extract(tmp_path, f"page{page}", [body])
    error = refused(result)
    assert error.kind == "invalid_input" and error.field == "meta.page" and result[0] == TRACE_ID
    assert f"page {page} of 2" in error.message and f"{len(body['data'])} of the 6 observations" in error.message
    assert f"GET /api/public/traces/{TRACE_ID}" in error.message and V2_QUERY in error.message


def test_a_numbered_page_holding_the_whole_run_is_read(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="tracejudge")
    (whole,) = observations_v1(DOCS)
    first, second = observations_v1(DOCS, limit=4, page=1)[0], observations_v1(DOCS, limit=4, page=2)[0]
    joined = {"data": first["data"] + second["data"], "meta": first["meta"]}  # the pages' `data` in one line
    for case in extract(tmp_path, "whole", [whole]) + extract(tmp_path, "joined", [joined]):
        assert isinstance(case, Case), case
        assert [(c.name, c.result, c.error) for c in case.trace.tool_calls()] == [(c["name"], c["result"], c["error"]) for c in TRUTH["calls"]]
        assert case.input == TRUTH["input"] and case.trace.output == TRUTH["output"]
        assert case.metadata["langfuse"]["missing_fields"] == ["trace_context"]
    said = [r.getMessage() for r in caplog.records if r.getMessage().startswith("langfuse:")]
    assert len(said) == 2 and all("is a page of GET /api/public/observations" in m and "sessionId" in m for m in said)
    assert not any("/v2/observations" in m for m in said)  # (it is no v2 page: no field groups were left out)
