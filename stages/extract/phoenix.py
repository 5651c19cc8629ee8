"""Format `phoenix`: traces pulled from a running Phoenix (REST API, `arize-phoenix-client`), read as OpenInference spans.

`dataset.options`: `url` (default `PHOENIX_COLLECTOR_ENDPOINT`), `project` (default
`default`), `start` / `end` (ISO 8601 bounds on the trace's start; `start: last_run`
reads only what arrived since the last finished run in the same run directory, see
`tracejudge.stages.extract.remote`), `overlap_s`, `filter` (root span attributes that
must equal the given values, e.g. `{"metadata.env": "prod"}`), `max_traces`,
`page_size`, and `otel` (the `otel` format's options: `error_prefixes`, `answer_tools`,
…). `dataset.path` is not used. `PHOENIX_API_KEY` is sent as a bearer token and never
written.

Streaming: the project's traces are listed a page at a time (`v1/projects/…/traces`; with a
`filter`, its root spans, `parent_id=null`), oldest first (`sort=start_time`), and the spans
of each page's traces are fetched together (`trace_id=…`), so memory holds one page of traces
(and the ids of the traces read: a trace with two root spans, on two pages, is read once)
whatever the size of the project. A trace whose root span never reached Phoenix (a dropped
batch; a smolagents run that raised, whose agent span is never ended) is read as `otel` reads
it, once its last span ended `overlap_s` ago: until then, rootless, it is most likely still
running, and is skipped and held for the next `start: last_run` window as MLflow's
`IN_PROGRESS` traces are (`sweep`). `max_traces` (and `dataset.limit`) stop the read after
that many traces, the oldest of the window; with `start: last_run` it counts only traces the
run directory has no result for, and the next run goes on where the cap stopped this one
(`sweep`). A cut window is warned about; a Phoenix that lists out of order (one that ignores
`sort`) is refused under a cap, which would otherwise skip traces. Each trace becomes one
`otel` `Group` of `Span`s, their attributes as the exporter sent them where Phoenix's changes
can be undone (`to_span`), hung together as `otel` hangs a trace's (`trace_group`), and one
case adapted by `otel` (a trace of set-up spans only is none, as in `otel`); the case id is
the trace id and `metadata.phoenix` = `{project, trace_id, root_span_id}`, which `tracejudge export --to
phoenix` annotates. The annotations of the trace and of its root spans are its labels (`metadata.labels`, a `HUMAN`
annotator's; `metadata.other_labels`, the others'), those tracejudge exported left out (`_annotations`, `store_labels`). A Phoenix that is down, refuses the key or answers an error ends the
run with `Unreachable` naming the URL (exit 3): never a run of zero cases that passes.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator
from tracejudge.core.errors import ConfigError, Unreachable
from tracejudge.core.registry import Format, register_format
from tracejudge.core.urls import http_url
from tracejudge.stages.extract import otel
from tracejudge.stages.extract.otel.conventions import group_views
from tracejudge.stages.extract.otel.lost_roots import warn_lost_roots
from tracejudge.stages.extract.otel.value_limit import warn_cut
from tracejudge.stages.extract.otel.value_tails import mend_tails
from tracejudge.stages.extract.otel.spans import Group, Span, hung_trace
from tracejudge.stages.extract.phoenix_attrs import json_texts, unsynthesized
from tracejudge.stages.extract.remote import TimeOption, answer_line, bind_last_run, no_credentials, parse_time, probe, safe_url
from tracejudge.stages.extract.store_labels import StoreLabel, label_metadata, plain_value, unknown_source
from tracejudge.stages.extract.sweep import Sweep
from tracejudge.stages.load import RawRecord

__all__ = ["Options", "Refused", "adapt", "client", "get", "json_texts", "project_path", "project_ref", "read", "to_span", "trace_group",
           "unsynthesized"]


class Options(BaseModel):
    """`dataset.options` of `phoenix` (see the module docstring)."""

    model_config = ConfigDict(extra="forbid")
    _plain = field_validator("url")(no_credentials)
    _http = field_validator("url")(lambda url: http_url(url, "http://127.0.0.1:6006"))

    url: str | None = None
    project: str = "default"
    start: TimeOption = None
    end: TimeOption = None
    overlap_s: float = Field(default=600, ge=0)
    filter: dict[str, str | int | float | bool] = {}
    max_traces: int | None = Field(default=None, ge=1)
    page_size: int = Field(default=50, ge=1, le=500)
    otel: dict[str, Any] = {}


def client(url: str | None) -> tuple[Any, str]:
    """`(phoenix.client.Client, url)` for `url` (else `PHOENIX_COLLECTOR_ENDPOINT`), after a health probe.

    Raises `TracejudgeError` without a URL, `MissingExtra` without the client,
    `Unreachable` when Phoenix does not answer.
    """
    from tracejudge.core.errors import TracejudgeError
    from tracejudge.stages.export import require

    url = url or os.environ.get("PHOENIX_COLLECTOR_ENDPOINT")
    if not url:
        raise TracejudgeError("name the Phoenix server: its url (or set PHOENIX_COLLECTOR_ENDPOINT)")
    require("phoenix.client")
    from phoenix.client import Client

    px = Client(base_url=url, api_key=os.environ.get("PHOENIX_API_KEY") or None)
    # The probe carries what every read and write will (Bearer PHOENIX_API_KEY, PHOENIX_CLIENT_HEADERS): an auth proxy
    # in front of Phoenix refuses a bare /healthz that it lets the client's own requests through.
    probe(url, "/healthz", headers={k: v for k, v in px._client.headers.items() if k.lower() not in _HTTPX_DEFAULTS})
    return px, url


_HTTPX_DEFAULTS = ("accept", "accept-encoding", "connection", "user-agent")  # httpx's own, not the store's credentials


class Refused(Unreachable):
    """Phoenix answered an HTTP error to a GET; `status` is its code (a sink tells a gone span's 404 from a gone project's)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def get(px: Any, url: str, path: str, params: dict[str, Any]) -> dict[str, Any]:
    """One GET of Phoenix's REST API through the client's HTTP session; `Refused` on an error answer, `Unreachable` on any other failure."""
    import httpx

    try:
        resp = px._client.get(path, params=params, headers={"accept": "application/json"}, timeout=60)
        resp.raise_for_status()
        return dict(resp.json())
    except httpx.HTTPStatusError as exc:
        code = exc.response.status_code
        said = answer_line(exc.response.text)
        raise Refused(f"{safe_url(url)} answered HTTP {code} to GET {path}" + (f" ({said})" if said else ""), code) from None
    except (httpx.HTTPError, ValueError) as exc:
        raise Unreachable(f"{safe_url(url)} failed GET {path} ({type(exc).__name__})") from None


def project_ref(px: Any, url: str, project: str) -> str:
    """The path segment naming `project` in Phoenix's REST paths (`project_path`): its name escaped whole, so `#`, `?` or a
    space (which Phoenix accepts over OTLP) cannot cut the path (`demo#x` → `v1/projects/demo`, a route of its own).

    A name with `/` is looked up in `v1/projects` and named by its id: Phoenix decodes `%2F` before routing, so no escape
    of it reaches the project. `Refused` (404) when no project has that name.
    """
    from urllib.parse import quote

    if "/" not in project:
        return quote(project, safe="")
    cursor = None
    while True:
        page = get(px, url, "v1/projects", {"limit": 100, **({"cursor": cursor} if cursor else {})})
        found = [p for p in page.get("data") or [] if isinstance(p, dict) and p.get("name") == project]
        if found:
            return quote(str(found[0]["id"]), safe="")
        cursor = page.get("next_cursor")
        if not cursor or not page.get("data"):
            raise Refused(f"{safe_url(url)} answered HTTP 404 to GET v1/projects (no project {project!r})", 404)


def project_path(ref: str, tail: str = "") -> str:
    """`v1/projects/<ref>[/tail]`, `ref` as `project_ref` made it."""
    return f"v1/projects/{ref}" + (f"/{tail}" if tail else "")


def _nanos(text: Any) -> int:
    when = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    return int(when.timestamp()) * 1_000_000_000 + when.microsecond * 1000


def to_span(raw: dict[str, Any], where: str, line: int) -> Span:
    """One span of Phoenix's REST API (`v1.Span`) as the otel `Span` model: `openinference.span.kind` only when the span
    had one (Phoenix says `UNKNOWN` for none), JSON text Phoenix parsed put back (`json_texts`), the OpenInference keys it
    made up from `gen_ai.*` ones taken away (`unsynthesized`). Scope, resource, kind and dropped counts are not kept."""
    ctx = raw.get("context") or {}
    attrs = dict(raw.get("attributes") or {})
    kind = raw.get("span_kind")
    if isinstance(kind, str) and kind and kind.upper() != "UNKNOWN":
        attrs.setdefault("openinference.span.kind", kind)
    attrs = unsynthesized(json_texts(attrs))
    problem = None
    try:
        start, end = _nanos(raw.get("start_time")), _nanos(raw.get("end_time"))
    except (TypeError, ValueError):
        start = end = 0
        problem = f"span {ctx.get('span_id')}: start_time/end_time are not ISO times"
    return Span(trace_id=str(ctx.get("trace_id") or ""), span_id=str(ctx.get("span_id") or ""), parent_id=raw.get("parent_id") or None,
                name=str(raw.get("name") or ""), kind=0, start=start, end=end, attrs=attrs,
                status_error=str(raw.get("status_code")).upper() == "ERROR", status_message=raw.get("status_message") or None,
                events=[(str(e.get("name", "")), dict(e.get("attributes") or {})) for e in raw.get("events") or [] if isinstance(e, dict)],
                service=None, file=where, line=line, problem=problem)


def _pages(px: Any, url: str, path: str, params: dict[str, Any], key: str = "context") -> Iterator[list[dict[str, Any]]]:
    """Every page of a listing of spans (each with its `context`) or of traces (`key` `trace_id`), by Phoenix's cursor."""
    cursor = None
    while True:
        page = get(px, url, path, {**params, **({"cursor": cursor} if cursor else {})})
        data = page.get("data") or []
        if not isinstance(data, list) or not all(isinstance(s, dict) and isinstance(s.get(key), dict if key == "context" else str) for s in data):
            raise Unreachable(f"{safe_url(url)} answered GET {path} with something that is not a list of "
                              f"{'spans' if key == 'context' else 'traces'}: is it Phoenix?")
        yield data
        cursor = page.get("next_cursor")
        if not cursor or not page.get("data"):
            return


def read(dataset: Any) -> Iterator[RawRecord]:
    """Yield one `RawRecord` per trace (payload: an otel `Group`), a page of traces at a time, oldest first (module docstring)."""
    options, sweep = Sweep.take(dataset, "max_traces")
    opts = Options.model_validate(options)
    px, url = client(opts.url)
    where = f"{safe_url(url)}/projects/{opts.project}"
    ref = project_ref(px, url, opts.project)
    path = project_path(ref, "spans")
    params: dict[str, Any] = {"limit": opts.page_size, "sort": "start_time", "order": "asc"}
    for key in ("start", "end"):
        when = parse_time(getattr(opts, key), f"dataset.options.{key}")
        if when is not None:
            params[f"{key}_time"] = when.isoformat()
    if opts.filter:  # attributes of the root span: its root spans are listed
        from phoenix.client.resources.spans import _serialize_attributes

        params.update(parent_id="null", attribute=_serialize_attributes(opts.filter))
        listed = ([(str(r["context"]["trace_id"]), _when(r.get("start_time"))) for r in page] for page in _pages(px, url, path, params))
    else:  # its traces, those whose root span never reached Phoenix too
        listed = ([(str(t["trace_id"]), _when(t.get("start_time"))) for t in page]
                  for page in _pages(px, url, project_path(ref, "traces"), params, "trace_id"))
    settled = (datetime.now(UTC).timestamp() - opts.overlap_s) * 1e9  # a rootless trace's last span ended before: not running
    taken: set[str] = set()  # a trace's second root span (page_size 1, or a later page) is not a second case
    count, previous = 0, None
    for page in listed:
        starts: dict[str, datetime | None] = {}
        for trace_id, started in page:
            if sweep.cap is not None and started is not None and previous is not None and started < previous:
                raise ConfigError(f"dataset.options.max_traces: {where} lists traces newest first (a Phoenix without "
                                  "sort=start_time): a capped read would skip the older traces for good; upgrade Phoenix or drop the cap")
            previous = started or previous
            if trace_id not in taken:
                starts.setdefault(trace_id, started)
        spans: dict[str, list[Span]] = {t: [] for t in starts}
        for got in _pages(px, url, path, {"limit": 1000, "trace_id": list(starts)}) if starts else ():
            for raw in got:
                span = to_span(raw, where, count + 1)
                spans.setdefault(span.trace_id, []).append(span)
        labels = _annotations(px, url, ref, {t: [s.span_id for s in spans[t] if not s.parent_id] for t in starts})
        for trace_id, started in starts.items():
            if spans[trace_id] and all(s.parent_id for s in spans[trace_id]) and max(s.end for s in spans[trace_id]) > settled:
                taken.add(trace_id)
                sweep.hold(trace_id, started)  # no root span yet, its last span just ended: most likely still running
                continue
            if sweep.full(trace_id):
                break
            taken.add(trace_id)
            sweep.took(trace_id, started)
            group = trace_group(trace_id, spans[trace_id], count + 1)
            group = Labelled(**{f.name: getattr(group, f.name) for f in fields(Group)}, labels=labels.get(trace_id) or {})
            if not any(v.role for v in group_views(group).values()):
                continue  # set-up spans only (OpenLLMetry's `create_agent`): nothing ran, no case, as format `otel` reads it
            warn_cut(group.spans)  # (values past the length limit: said once per project, as `otel` says it once per file)
            mend_tails(group)  # (a request whose history the length limit cut: the rest from the requests beside it, as `otel`)
            count += 1
            yield RawRecord(where, count, group)
        if sweep.cut:
            break
    sweep.finish(where, "max_traces")


@dataclass
class Labelled(Group):
    """A trace's `Group` with the `store_labels` metadata of its annotations (`_annotations`), which `adapt` puts in its case."""

    labels: dict[str, Any] = field(default_factory=dict)


_KINDS = {"HUMAN": "human", "LLM": "llm", "CODE": "code"}  # (an annotation's `annotator_kind`: `store_labels`)


def _annotations(px: Any, url: str, ref: str, roots: dict[str, list[str]]) -> dict[str, dict[str, Any]]:
    """The `store_labels` metadata of each trace of `roots` (trace id → its root spans' ids), from the annotations on its
    root spans (`v1/projects/…/span_annotations`) and on the trace (`…/trace_annotations`).

    An annotation's value is its `result.score`, else its `result.label`; one with neither (a note) is none. One that
    `tracejudge export --to phoenix` wrote (identifier `tracejudge:…`, or `tracejudge.run` in its metadata) is the judge's
    own verdict, not a label: left out. A Phoenix that answers 404 (spans deleted since they were listed, a Phoenix
    older than trace annotations) has none there.
    """
    trace_of = {span: trace for trace, spans in roots.items() for span in spans}
    found: dict[str, list[StoreLabel]] = {}
    for tail, param, ids in (("span_annotations", "span_ids", list(trace_of)), ("trace_annotations", "trace_ids", list(roots))):
        for i in range(0, len(ids), 500):  # (Phoenix takes at most 1000 ids a request)
            listed = list(_listed(px, url, project_path(ref, tail), {param: ids[i:i + 500], "limit": 1000}))
            for a in reversed(listed):  # (listed newest first: two made in one instant keep the order they were made in)
                trace = trace_of.get(str(a.get("span_id"))) if param == "span_ids" else str(a.get("trace_id"))
                label = _label(a)
                if trace in roots and label is not None:
                    found.setdefault(trace, []).append(label)
    return {trace: label_metadata(got) for trace, got in found.items()}


def _listed(px: Any, url: str, path: str, params: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every annotation of a listing, by Phoenix's cursor; none on a 404."""
    cursor = None
    while True:
        try:
            page = get(px, url, path, {**params, **({"cursor": cursor} if cursor else {})})
        except Refused as exc:
            if exc.status != 404:
                raise
            return
        yield from (a for a in page.get("data") or [] if isinstance(a, dict))
        cursor = page.get("next_cursor")
        if not cursor or not page.get("data"):
            return


def _label(a: dict[str, Any]) -> StoreLabel | None:
    """One annotation (as Phoenix lists it) as a `StoreLabel`; None for tracejudge's own or a note. An `annotator_kind` this
    reader does not know is no person's: kept among the others' (`store_labels.unknown_source`)."""
    meta: dict[str, Any] = a["metadata"] if isinstance(a.get("metadata"), dict) else {}
    if str(a.get("identifier") or "").startswith("tracejudge:") or "tracejudge.run" in meta:
        return None  # a verdict `tracejudge export --to phoenix` wrote: the judge's own
    result: dict[str, Any] = a["result"] if isinstance(a.get("result"), dict) else {}
    score = result.get("score")
    value = plain_value(score) if score is not None and not isinstance(score, bool) else plain_value(result.get("label"))
    name = a.get("name")
    if value is None or not isinstance(name, str) or not name:
        return None
    kind = _KINDS.get(str(a.get("annotator_kind") or "").upper()) or unknown_source("phoenix", a.get("annotator_kind"), "HUMAN, LLM, CODE")
    return StoreLabel(name, value, kind, f"{a.get('created_at') or ''}")


def _when(text: Any) -> datetime | None:
    try:
        when = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def trace_group(trace_id: str, spans: list[Span], line: int) -> Group:
    """The `Group` of one trace's spans as listed by Phoenix, hung together as format `otel` hangs a trace's spans
    (`Collector.groups`): each span id once (`spans.once_spans`), parent loops broken, a span whose parent never reached
    Phoenix hung from the trace's root, or the spans naming one lost parent from a stand-in of it (`links`, warned
    about as `otel` warns), in order of start, every span placed at `line` (the trace's number in the sweep)."""
    group, stand_ins = hung_trace(spans)
    if stand_ins:
        warn_lost_roots([(trace_id, stand_ins, group)])
    for s in group:
        s.line = line
    return Group(key=trace_id, key_attr=None, traces=[trace_id], spans=group)


def _prepare(dataset: Any) -> Any:
    return otel.Options.model_validate(Options.model_validate(dataset.options).otel)


def adapt(group: Group, options: Any = None) -> Any:
    """One trace's `Group` → `Case` by the `otel` adapter, with `metadata.phoenix` naming its root span: a span Phoenix holds
    (a trace whose root was lost: its earliest top span, not the stand-in `trace_group` made, and no latency)."""
    case = otel.adapt(group, options)
    case.metadata.update(getattr(group, "labels", None) or {})  # (`Labelled`: its annotations, `store_labels`)
    ids = {s.span_id for s in group.spans if not s.stand_in}
    root = next((s for s in group.spans if not s.stand_in and (not s.parent_id or s.parent_id not in ids)), None)
    case.metadata["phoenix"] = {"project": group.spans[0].file.rsplit("/projects/", 1)[-1] if group.spans else None,
                                "trace_id": group.key, "root_span_id": root.span_id if root else None}
    return _with_latency(case, root if root is not None and not root.parent_id else None).model_copy(update={"id": group.key})


def _with_latency(case: Any, root: Span | None) -> Any:
    """`case` with its trace's `usage.latency_s` = the root span's end − start (the trace's latency as Phoenix shows it),
    unless the trace has one: the `otel` adapter fills none, and `Latency` was never computed for Phoenix.

    Unchanged without a trace or a root, or with times that are missing (0) or run backwards: none beats a wrong one.
    """
    from tracejudge.core.records import Usage

    trace = case.trace
    if trace is None or root is None or not root.start or root.end < root.start:
        return case
    usage = trace.usage or Usage()
    if usage.latency_s is not None:
        return case
    usage = usage.model_copy(update={"latency_s": (root.end - root.start) / 1e9})
    return case.model_copy(update={"trace": trace.model_copy(update={"usage": usage})})


register_format(Format("phoenix", read=read, adapt=adapt, prepare=_prepare, options=Options, remote=True, bind=bind_last_run))
