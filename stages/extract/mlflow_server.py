"""Format `mlflow-server`: traces read from an MLflow tracking server with `MlflowClient.search_traces`.

`dataset.options`: `tracking_uri` (default `MLFLOW_TRACKING_URI`), `experiment` (a name)
or `experiment_ids`, `filter_string` (MLflow's trace filter, e.g. `tags.env = 'prod'`),
`max_results` (stop after this many traces, see below), `start` / `end` (ISO 8601 times on the
trace's start, or `start: last_run`, see `tracejudge.stages.extract.remote`), `overlap_s`,
`page_size`. `dataset.path` is not used. A token (`MLFLOW_TRACKING_TOKEN`, or user and
password) comes from MLflow's own environment variables and is never written.

Traces are fetched a page at a time, oldest first, each page asked for from the start of
the last trace read (MLflow's page token is an offset, which a trace deleted during the read
moves past one never read: `_traces`), and each is read by format `mlflow`
(`Trace.to_json()`): the case id is the trace id, which is what `tracejudge export --to
mlflow` writes the verdicts back on. So each trace stays a case of its own: the traces of one
session (`mlflow.trace.session`) are not joined as format `mlflow` joins them from a file (a
session's id names no trace to write a verdict on, and its turns may fall in different
`start: last_run` windows). A trace MLflow holds as still running (`IN_PROGRESS`)
is skipped with a warning, and kept inside the next `start: last_run` window (`sweep`); with a `filter_string`, so is
every trace of the window still running, matching or not (`_unfinished`): what a run tags or records at its end reaches
the server only then, and the filter is applied to the finished trace by the night that reads it.
An `experiment` or an id in `experiment_ids` the server does not hold, or holds deleted,
is a config error. A server that is down, answers an error or answers
what is not JSON ends the run with `Unreachable` naming the URL (exit 3) — never a run of
zero cases — in seconds: MLflow's own retries are capped (`remote.mlflow_limits`). The
health probe sends the client's own credentials (`remote.mlflow_headers`).

`max_results` (and `dataset.limit`) stop the read after that many traces, the oldest of the
window; with `start: last_run` it counts only traces the run directory has no result for, and
the next run goes on where the cap stopped this one (`sweep`). A cut window is warned about.

A smolagents `CodeAgent`'s tool calls, which `mlflow.smolagents.autolog()` writes as traces of their own, are read in
the case of the run whose trace holds them in time, as format `mlflow` reads them from a file (`mlflow_code_tools.
ListedRuns`): the run's case holds its calls, and a call so joined is no case (nor counted by a cap); a managed
`CodeAgent`'s run under a `CodeAgent` manager, a trace of its own, joins its manager's run as such a call, with its
own code's calls. A call whose run began before the window stays a case of its own.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator
from tracejudge.core.errors import ConfigError, Unreachable
from tracejudge.core.registry import Format, format_for, register_format
from tracejudge.stages.extract.remote import (TimeOption, bind_last_run, mlflow_headers, mlflow_limits, no_credentials, parse_time, probe, safe_url,
                                              store_failure)
from tracejudge.stages.extract.mlflow_code_tools import ListedRuns
from tracejudge.stages.extract.mlflow_trace import SESSION
from tracejudge.stages.extract.sweep import Sweep
from tracejudge.stages.load import RawRecord

__all__ = ["Options", "adapt", "read"]


class Options(BaseModel):
    """`dataset.options` of `mlflow-server` (see the module docstring)."""

    model_config = ConfigDict(extra="forbid")
    _plain = field_validator("tracking_uri")(no_credentials)

    tracking_uri: str | None = None
    experiment: str | None = None
    experiment_ids: list[str] = []
    filter_string: str | None = None
    max_results: int | None = Field(default=None, ge=1)
    start: TimeOption = None
    end: TimeOption = None
    overlap_s: float = Field(default=600, ge=0)
    page_size: int = Field(default=200, ge=1, le=1000)


def _uri(opts: Options) -> str:
    uri = opts.tracking_uri or os.environ.get("MLFLOW_TRACKING_URI")
    if not uri:
        raise ConfigError("dataset.options.tracking_uri: required (or set MLFLOW_TRACKING_URI)")
    return uri


def _filter(opts: Options, since: int | None = None, *, own: bool = True) -> str | None:
    """The window as MLflow's filter; `since` (ms) the key of the read so far (`_traces`); `own`: with `filter_string`."""
    # MLflow's trace filters are conjunctions only, so clauses join with AND.
    clauses = [opts.filter_string] if opts.filter_string and own else []
    for key, op in (("start", ">="), ("end", "<")):
        when = parse_time(getattr(opts, key), f"dataset.options.{key}")
        if when is not None:
            clauses.append(f"timestamp_ms {op} {int(when.timestamp() * 1000)}")
    if since is not None:
        clauses.append(f"timestamp_ms >= {since}")
    return " AND ".join(clauses) or None


def _experiments(client: Any, opts: Options, uri: str) -> list[str]:
    """The ids to search: `experiment_ids` each looked up, or `experiment`'s id. `ConfigError` naming the experiment when the
    server has no such one, or holds it deleted: a typo'd id would otherwise read as nights without traffic."""
    if opts.experiment_ids:
        for eid in opts.experiment_ids:
            _live(_experiment_by_id(client, eid, uri), f"dataset.options.experiment_ids: experiment {eid}", uri)
        return list(opts.experiment_ids)
    if not opts.experiment:
        raise ConfigError("dataset.options: name the traces' `experiment` (or `experiment_ids`)")
    found = client.get_experiment_by_name(opts.experiment)
    if found is None:
        raise ConfigError(f"dataset.options.experiment: no experiment {opts.experiment!r} at {safe_url(uri)}")
    _live(found, f"dataset.options.experiment: experiment {opts.experiment!r}", uri)
    return [found.experiment_id]


def _experiment_by_id(client: Any, eid: str, uri: str) -> Any:
    from mlflow.exceptions import MlflowException

    try:
        return client.get_experiment(str(eid))
    except MlflowException as exc:
        # An unknown id is RESOURCE_DOES_NOT_EXIST; one that is not a number, INVALID_PARAMETER_VALUE. Any other error
        # (a server in trouble) is the read's to report.
        if exc.error_code not in ("RESOURCE_DOES_NOT_EXIST", "INVALID_PARAMETER_VALUE"):
            raise
        raise ConfigError(f"dataset.options.experiment_ids: no experiment {eid} at {safe_url(uri)}") from None


def _live(experiment: Any, what: str, uri: str) -> None:
    if getattr(experiment, "lifecycle_stage", "active") == "deleted":
        raise ConfigError(f"{what} is deleted at {safe_url(uri)}: restore it, or name another")


def read(dataset: Any) -> Iterator[RawRecord]:
    """Yield one `RawRecord` per finished trace (payload: the `Trace.to_json()` mapping), a page at a time, oldest first.

    A trace still in progress is skipped (`Sweep.hold`, warned about). Raises `Unreachable` (URL named) when the server
    is down or answers an error, `ConfigError` for an unknown or deleted experiment or a bad time.
    """
    from tracejudge.stages.export import require

    options, sweep = Sweep.take(dataset, "max_results")
    opts = Options.model_validate(options)
    uri = _uri(opts)
    require("mlflow")
    probe(uri, "/health", headers=mlflow_headers(uri))
    mlflow_limits()
    import json

    from mlflow import MlflowClient
    from mlflow.exceptions import MlflowException

    where = f"{safe_url(uri)} (MLflow)"
    client = MlflowClient(tracking_uri=uri)
    count = 0
    runs = ListedRuns(SESSION)  # a smolagents CodeAgent's tool calls, each a trace of its own, read in its run's case
    try:
        experiments = _experiments(client, opts, uri)
        # Listed before the read: one that ends during it is then held or read, never neither (`_unfinished`).
        unfinished = _unfinished(client, experiments, opts) if opts.filter_string else {}
        for trace in _traces(client, experiments, opts):
            trace_id, started = str(trace.info.trace_id), datetime.fromtimestamp(trace.info.request_time / 1000, UTC)
            unfinished.pop(trace_id, None)
            yield from runs.due(trace.info.request_time * 1_000_000)
            if sweep.cut and not runs.open:
                break
            if _in_progress(trace):
                if not sweep.cut:
                    sweep.hold(trace_id, started)
                continue
            record = RawRecord(where, count + 1, json.loads(trace.to_json()))
            if runs.joined_call(record):
                continue  # no case of its own: the cap does not count it
            if sweep.cut or sweep.full(trace_id):
                continue  # past the cap: listed on only for the calls of the runs held, which were taken
            count += 1
            sweep.took(trace_id, started)
            if not runs.held(record):
                yield record
        for trace_id, started in unfinished.items():
            if not sweep.cut or (sweep.last is not None and started <= sweep.last):  # (past a cut: the next window's)
                sweep.hold(trace_id, started)
        yield from runs.rest()
    except (MlflowException, OSError, json.JSONDecodeError) as exc:
        raise Unreachable(_failed(uri, exc, "listing traces")) from None
    sweep.finish(where, "max_results")


def _unfinished(client: Any, experiments: list[str], opts: Options) -> dict[str, datetime]:
    """trace id → start of the traces of the window MLflow holds as `IN_PROGRESS`, `filter_string` aside.

    A tag or metadata set while the trace runs (`mlflow.update_current_trace(tags=…)`) reaches the server only when
    it ends, so a filter on it never lists the trace while it runs: without this it was neither read nor held, and
    lost once a later window no longer held its start. Held, it is read (and the filter applied) once it ends.
    """
    clauses = ["trace.status = 'IN_PROGRESS'", _filter(opts, own=False)]
    found: dict[str, datetime] = {}
    token = None
    while True:
        page = client.search_traces(locations=experiments, filter_string=" AND ".join(c for c in clauses if c),
                                    max_results=opts.page_size, order_by=["timestamp_ms ASC"], page_token=token)
        found.update({str(t.info.trace_id): datetime.fromtimestamp(t.info.request_time / 1000, UTC) for t in page})
        if not page.token:
            return found
        token = page.token


def _in_progress(trace: Any) -> bool:
    """Whether MLflow holds `trace` as still running (`IN_PROGRESS`: logged when it began, its root not ended yet)."""
    state = getattr(trace.info, "state", None)
    return str(getattr(state, "value", state)) == "IN_PROGRESS"


def _traces(client: Any, experiments: list[str], opts: Options) -> Iterator[Any]:
    """Every trace of the window once, oldest first, paged by key: each page is asked for from the start time of the last
    trace read (`timestamp_ms >= since`), the ones read at that millisecond dropped.

    MLflow's own page token is an offset into the result: a trace deleted during the read (a retention job) moves every
    later one a place back, and the next page starts one past a trace never read. A key does not move. Only when a whole
    page is of that one millisecond, all read (more ties than `page_size`), does the offset take the read past them.
    """
    since: int | None = None  # the start (ms) of the last trace read
    at_since: set[str] = set()  # the ids read that started at `since`
    token = None
    while True:
        page = client.search_traces(locations=experiments, filter_string=_filter(opts, since), max_results=opts.page_size,
                                    order_by=["timestamp_ms ASC"], page_token=token)
        fresh = [t for t in page if not (t.info.request_time == since and str(t.info.trace_id) in at_since)]
        yield from fresh
        if not page.token:
            return
        if not fresh:
            token = page.token  # a page of ties all read: on by offset, within this key
            continue
        last = fresh[-1].info.request_time
        if last != since:
            since, at_since, token = last, set(), None
        else:
            token = page.token  # still within the ties of `since`: the offset of this same query goes on
        at_since |= {str(t.info.trace_id) for t in fresh if t.info.request_time == since}


def _failed(uri: str, exc: BaseException, doing: str) -> str:
    kind, detail = store_failure(exc)
    if kind == "unreachable":
        return f"{safe_url(uri)} cannot be reached or did not answer in time while {doing} ({detail})"
    if kind == "not_json":
        return f"{safe_url(uri)} answered {doing} with something that is not JSON: is it an MLflow tracking server?"
    return f"{safe_url(uri)}: MLflow answered an error while {doing}: {detail}"


def adapt(payload: Any, options: Any = None) -> Any:
    """One trace's `Trace.to_json()` mapping → `Case`, by format `mlflow`'s adapter."""
    return format_for("mlflow").adapt(payload, None)


register_format(Format("mlflow-server", read=read, adapt=adapt, options=Options, remote=True, bind=bind_last_run))
