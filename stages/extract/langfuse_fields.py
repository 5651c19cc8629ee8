"""Format `langfuse`: what a trace was fetched without, told from what it recorded as null.

`GET /api/public/v2/observations` returns only the field groups its `fields` parameter names, and `core,basic` when it
names none (Langfuse's `getObservationsV2FromEventsTableForPublicApi`); a group left out is left out of every
observation as keys (`convertEventsObservation` sets only the keys of the columns it selected), where a value the trace
holds as null is a key with `null`. So a page whose observations all lack a group's keys was fetched without it:

- without `io` (`input`, `output`) the run's input and answer, the model's messages and the calls' arguments and
  results are unknown, and without `basic` (`name`, `level`, …) the tools' names and the errors: read, it is a run with
  nothing to judge, which a sweep would score as an empty run. The record is refused (`invalid_input`, naming the
  group and the query that fetches it): a run of many traces then fails visibly instead of scoring empty runs.
- a page whose `meta.cursor` says more observations follow (`limit`, default 50, per page, newest first) is refused
  too: alone it is the run's last observations, without its start.
- without `metadata`: LangGraph's node "agent", which Langfuse's LangChain `CallbackHandler` types `AGENT`, is told from
  an agent run of its own only by its `metadata.langgraph_node`, a LangGraph `thread_id` (`metadata.thread_id`) joins a
  thread's traces into one conversation, and `metadata.tool_call_id` pairs a tool with the model's call (else name and
  arguments do); without `usage` tokens and cost are unknown; without `trace_context` the trace's tags. The case is
  read, said once per file (`warn_missing`), and lists those groups in `metadata.langfuse.missing_fields`. So is a
  trace of `GET /api/public/traces/{id}` none of whose observations has `metadata` (null or absent: the server gives
  at least `{}`).

Other lines of Langfuse's API hold part of a run, or none of it (`listed_by_id`, `_v1_page`): a page of `GET
/api/public/traces` (the traces list), or one trace of it, names each trace's observations by id only and is refused
saying so; a page of the older `GET /api/public/observations` (numbered: `meta.page`, `totalPages`, `totalItems`) that
holds fewer observations than its query matched is refused as a v2 page with a `meta.cursor` is, and a whole one is read,
said to lack the trace's own fields (`trace_context`: no `sessionId`, `userId`, `tags` in that API).

`metadata` asked for without `io` and without `expandMetadata` comes from `events_core`, each value cut to its first
200 characters with no mark of the cut; the keys this reader looks at (`langgraph_node`, `tool_call_id`, `thread_id`:
names and ids) are whole in it, and the query `QUERY` asks for `io`, with which the server reads metadata whole
(`events_full`), and names them in `expandMetadata` (its list of keys to return whole).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NoReturn

from tracejudge.core.log import get_logger
from tracejudge.stages.extract.common import fail, json_type
from tracejudge.stages.extract.said_once import first_time

__all__ = ["QUERY", "listed_by_id", "missing_groups", "no_list", "query", "warn_missing"]

log = get_logger("tracejudge.extract.langfuse")

# The metadata keys the reader looks at (`langfuse_api._META_ATTRS`, a root's `thread_id`).
_EXPAND = "langgraph_node,tool_call_id,thread_id"
QUERY = f"fields=core,basic,io,metadata,usage,trace_context&expandMetadata={_EXPAND}&limit=1000"
# A field group's keys (Langfuse's `FIELD_SETS` of the public v2 API, as the converter names them); a page has the group
# when any observation has one of them.
_GROUPS = {
    "basic": ("name", "level", "statusMessage", "version", "environment", "userId", "sessionId", "isRootObservation"),
    "io": ("input", "output"),
    "metadata": ("metadata",),
    "usage": ("usageDetails", "costDetails", "totalCost", "inputUsage", "outputUsage", "totalUsage"),
    "trace_context": ("tags", "release", "traceName"),
}
_REFUSED = ("basic", "io")  # without them a run has nothing to judge: refused
_LOST = {
    "basic": "the tools' names, the levels that mark errors and their messages",
    "io": "the run's input and answer, the model's messages and the calls' arguments and results",
    "usage": "tokens and cost (none in the case's usage; its requests counted in `metadata.requests_without_usage`)",
    "trace_context": "the trace's tags (the case's tags)",
}


def query(trace_id: Any) -> str:
    """The request that fetches a trace's observations whole."""
    return f"GET /api/public/v2/observations?traceId={trace_id if trace_id not in (None, '') else '…'}&{QUERY}"


def listed_by_id(record: dict[str, Any], cid: str) -> None:
    """Raise the `AdapterError` of a line of `GET /api/public/traces` (the traces list): a page of it (`{"data": [trace…],
    "meta": {"page", …}}`) or one trace of it. The list gives each trace's `observations` (and `scores`) as ids only, or
    leaves them out (`fields`), so it holds none of the run's steps: read, the page's traces would be called observations
    without a `type`, the trace's ids observations without one either."""
    data = record.get("data")
    if "observations" not in record and isinstance(data, list):
        traces = [t for t in data if isinstance(t, dict) and "type" not in t and "startTime" not in t
                  and ("htmlPath" in t or "timestamp" in t or isinstance(t.get("observations"), list))]
        if traces:
            tid = traces[0].get("id")
            fail(f"this line is a page of GET /api/public/traces (the traces list), not of observations: it holds {len(data)} "
                 "trace(s) whose `observations` are ids only, or left out (the list never gives the observations themselves), so the runs' steps, "
                 f"calls and answers are not in it. Fetch each trace on a line of its own with GET /api/public/traces/{tid or '{id}'} "
                 f"(its observations whole), or its observations with {query(tid)}", field="data[0].observations", case_id=cid)
        return
    observations = record.get("observations")
    if isinstance(observations, list) and observations and all(isinstance(o, str) for o in observations):
        fail(f"observations: this trace lists its {len(observations)} observations by id only, as GET /api/public/traces (the "
             "traces list) gives them: the run's steps, calls and answer are not in it. Fetch the trace with "
             f"GET /api/public/traces/{cid} (its observations whole), or its observations with {query(cid)}",
             field="observations[0]", case_id=cid)


def _v1_page(meta: dict[str, Any], obs: list[dict[str, Any]], tid: Any, cid: str) -> list[str]:
    """The field groups a page of the older `GET /api/public/observations` lacks, or the `AdapterError` of one that holds
    only part of its query's observations.

    That endpoint pages by number (`meta`: `page`, `limit` (50 unless asked, at most 100), `totalItems`, `totalPages`),
    newest first, and gives every field of an observation but none of its trace's (`sessionId`, `userId`, `tags`): a
    page that holds fewer observations than its query matched is the run without its start (or its end), and is
    refused as a v2 page whose `meta.cursor` says more follow is."""
    total, page, pages = (meta.get(k) if isinstance(meta.get(k), int) and not isinstance(meta.get(k), bool) else None
                          for k in ("totalItems", "page", "totalPages"))
    if (total is not None and len(obs) < total) or (total is None and page is not None and pages is not None and page < pages):
        lacks = "its start (the older observations)" if page is None or pages is None or page < pages else "its end (the newer observations)"
        fail(f"this page of GET /api/public/observations is page {page} of {pages}: it holds {len(obs)} of the {total} observations its "
             f"query matched ({meta.get('limit')} per page, newest first), so alone it is part of the run, without {lacks}. Fetch the "
             f"trace whole with GET /api/public/traces/{tid if tid not in (None, '') else '{id}'}, or its observations with "
             f"{query(tid)} (or every page, `page=1…{pages}`, their `data` in one line)", field="meta.page", case_id=cid)
    return ["trace_context"] + (["metadata"] if all(o.get("metadata") is None for o in obs) else [])


def missing_groups(record: dict[str, Any], observations: list[Any], cid: str) -> list[str]:
    """The field groups a trace was fetched without (module docstring); raises `AdapterError` for a page without `io` or
    `basic`, or one of more pages.

    `record` is the line as read: a v2 page (`{"data": [...], "meta": {...}}`) or a `GET /api/public/traces/{id}` trace.
    """
    obs = [o for o in observations if isinstance(o, dict)]
    if "observations" in record or not obs:
        # a trace of the v1 API: every observation has `metadata` (at least `{}`), unless it was left out
        return ["metadata"] if obs and all(o.get("metadata") is None for o in obs) else []
    tid = next((o.get("traceId") for o in obs if o.get("traceId") not in (None, "")), None)
    meta = record.get("meta") if isinstance(record.get("meta"), dict) else {}
    if any(k in meta for k in ("page", "totalPages", "totalItems")):
        return _v1_page(meta, obs, tid, cid)  # (a page of the older, numbered observations API: every field, no `fields` groups)
    lacking = [g for g, keys in _GROUPS.items() if not any(k in o for o in obs for k in keys)]
    refused = [g for g in _REFUSED if g in lacking]
    if refused:
        keys = " or ".join(f"`{k}`" for g in refused for k in _GROUPS[g][:2])
        fail(f"this page of GET /api/public/v2/observations was fetched without the {_groups(refused)} field group"
             f"{'s' if len(refused) > 1 else ''}: none of its {len(obs)} observations has {keys} (the API returns only `core,basic` "
             f"unless `fields` asks for more), so {' and '.join(_LOST[g] for g in refused)} are unknown; read, it would be a run "
             f"with nothing to judge. Fetch it with {query(tid)}", field=f"data[0].{_GROUPS[refused[0]][0]}",
             case_id=cid)
    for g in _REFUSED:  # (a line joining observations fetched with and without a group: the others read as unknown, silently)
        without = next((i for i, o in enumerate(obs) if not any(k in o for k in _GROUPS[g])), None)
        if without is not None:
            fail(f"this page's observations were fetched with different field groups: data[{without}] has none of "
                 f"{' or '.join(f'`{k}`' for k in _GROUPS[g][:2])} where others have them (the `{g}` group): what it "
                 f"holds of {_LOST[g]} would read as unknown. Fetch the trace's observations in one query: {query(tid)}",
                 field=f"data[{without}].{_GROUPS[g][0]}", case_id=cid)
    cursor = meta.get("cursor")
    if isinstance(cursor, str) and cursor:
        fail(f"this page of GET /api/public/v2/observations is not the trace's last: its `meta.cursor` says more observations "
             f"follow (the API lists `limit` of them per page, 50 unless asked, newest first), so alone it lacks the run's start. "
             f"Fetch every page ({query(tid)}, then `&cursor=<meta.cursor>` until the page has none) and put their `data` in one "
             "line", field="meta.cursor", case_id=cid)
    return lacking


def no_list(record: dict[str, Any], cid: str) -> NoReturn:
    """Raise the `AdapterError` of a record whose observations are no list: what it holds instead (a string, an object), or
    that it holds none."""
    field = "data" if "observations" not in record and "data" in record else "observations"
    got = record.get(field)
    if got is None and ("resourceSpans" in record or "resource_spans" in record):
        fail("observations: required list of observations is missing: this line is an OTLP export request "
             "(`resourceSpans`), which format `otel` reads", field=field, case_id=cid)
    fail(f"{field}: expected a list of observations, got {json_type(got)}" if got is not None else
         "observations: required list of observations is missing (fetch the trace with GET /api/public/traces/{id})",
         field=field, case_id=cid)


def _groups(names: list[str]) -> str:
    return " and ".join(f"`{n}`" for n in names)


def warn_missing(place: str | None, cid: str, missing: list[str], observations: list[dict[str, Any]], page: bool | str) -> None:
    """Say, once per file (`place`: `file:line`), what a trace read without `missing` field groups lacks (module docstring).

    `page`: the line is a v2 page (True), a page of the older `GET /api/public/observations` (`"v1"`), or a trace (False)."""
    if not missing or place is None or not first_time("langfuse_missing_fields", Path(place.rpartition(":")[0]).name):
        return
    if page == "v1":
        log.warning(f"langfuse: {place}: trace {cid} is a page of GET /api/public/observations, which gives none of the trace's own "
                    "fields (`sessionId`, `userId`, `tags`, its name): its case has no tags and is not joined with the other traces of "
                    "its session" + (", and none of its observations has `metadata`" if "metadata" in missing else "")
                    + ". Read as it is; each such case lists them in `metadata.langfuse.missing_fields` (said once per file). To read "
                    f"it whole, fetch it with GET /api/public/traces/{cid}")
        return
    lost = []
    if "metadata" in missing:
        agents = sum(1 for o in observations if o.get("type") == "AGENT")
        lost.append("without `metadata` the LangGraph node heuristics cannot apply: a LangGraph node that Langfuse's LangChain "
                    "`CallbackHandler` typed `AGENT` (the node \"agent\") is told from an agent run only by `metadata.langgraph_node`, "
                    + (f"so each of this trace's {agents} `AGENT` observations reads as an agent run of its own (if it is a node, the "
                       "graph's calls are read again, in steps of no model request)" if agents else "else it reads as an agent run of its own")
                    + (", a trace without `sessionId` is not joined with the other invokes of its LangGraph thread "
                       "(`metadata.thread_id`)" if page else "")
                    + ", and a tool result is paired with the model's call by name and arguments, not `metadata.tool_call_id`")
    lost += [f"without `{g}` {_LOST[g]} are unknown" for g in missing if g in _LOST]
    what = (f"was fetched without the {_groups(missing)} field group{'s' if len(missing) > 1 else ''} of GET /api/public/v2/observations "
            f"(none of its {len(observations)} observations has {'their' if len(missing) > 1 else 'its'} keys; the API returns only `core,basic` "
            "unless `fields` asks for more)" if page else
            f"has no observation with `metadata` (null or absent, where Langfuse's GET /api/public/traces/{{id}} gives at least `{{}}`)")
    fetch = f"fetch it with {query(cid)}" if page else "fetch it again with GET /api/public/traces/{id} and keep each observation's `metadata`"
    log.warning(f"langfuse: {place}: trace {cid} {what}: {'; '.join(lost)}. Read as it is; each such case lists them in "
                f"`metadata.langfuse.missing_fields` (said once per file). To read it whole, {fetch}")
