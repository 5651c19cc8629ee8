"""Format `mlflow-server`: traces read from an MLflow tracking server with `MlflowClient.search_traces`.

`dataset.options`: `tracking_uri` (default `MLFLOW_TRACKING_URI`), `experiment` (a name)
or `experiment_ids`, `filter_string` (MLflow's trace filter, e.g. `tags.env = 'prod'`),
`max_results` (stop after this many traces, see below), `start` / `end` (ISO 8601 times on the
trace's start, or `start: last_run`, see `tracejudge.stages.extract.remote`), `overlap_s`,
`page_size`. `dataset.path` is not used. A token (`MLFLOW_TRACKING_TOKEN`, or user and
password) comes from MLflow's own environment variables and is never written.

Traces are fetched a page at a time, oldest first, and each is read by format `mlflow`
(`Trace.to_json()`): the case id is the trace id, which is what `tracejudge export --to
mlflow` writes the verdicts back on. A server that is down, answers an error or answers
what is not JSON ends the run with `Unreachable` naming the URL (exit 3) — never a run of
zero cases — in seconds: MLflow's own retries are capped (`remote.mlflow_limits`).

`max_results` (and `dataset.limit`) stop the read after that many traces, the oldest of the
window; with `start: last_run` it counts only traces the run directory has no result for, and
the next run goes on where the cap stopped this one (`sweep`). A cut window is warned about.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator
from tracejudge.core.errors import ConfigError, Unreachable
from tracejudge.core.registry import Format, format_for, register_format
from tracejudge.stages.extract.remote import bind_last_run, mlflow_limits, no_credentials, parse_time, probe, safe_url, store_failure
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
    start: str | None = None
    end: str | None = None
    overlap_s: float = Field(default=600, ge=0)
    page_size: int = Field(default=200, ge=1, le=1000)


def _uri(opts: Options) -> str:
    uri = opts.tracking_uri or os.environ.get("MLFLOW_TRACKING_URI")
    if not uri:
        raise ConfigError("dataset.options.tracking_uri: required (or set MLFLOW_TRACKING_URI)")
    return uri


def _filter(opts: Options) -> str | None:
    # MLflow's trace filters are conjunctions only, so clauses join with AND.
    clauses = [opts.filter_string] if opts.filter_string else []
    for key, op in (("start", ">="), ("end", "<")):
        when = parse_time(getattr(opts, key), f"dataset.options.{key}")
        if when is not None:
            clauses.append(f"timestamp_ms {op} {int(when.timestamp() * 1000)}")
    return " AND ".join(clauses) or None


def _experiments(client: Any, opts: Options, uri: str) -> list[str]:
    if opts.experiment_ids:
        return list(opts.experiment_ids)
    if not opts.experiment:
        raise ConfigError("dataset.options: name the traces' `experiment` (or `experiment_ids`)")
    found = client.get_experiment_by_name(opts.experiment)
    if found is None:
        raise ConfigError(f"dataset.options.experiment: no experiment {opts.experiment!r} at {safe_url(uri)}")
    return [found.experiment_id]


def read(dataset: Any) -> Iterator[RawRecord]:
    """Yield one `RawRecord` per trace (payload: the `Trace.to_json()` mapping), a page at a time, oldest first.

    Raises `Unreachable` (URL named) when the server is down or answers an
    error, `ConfigError` for an unknown experiment or a bad time.
    """
    from tracejudge.stages.export import require

    options, sweep = Sweep.take(dataset, "max_results")
    opts = Options.model_validate(options)
    uri = _uri(opts)
    probe(uri, "/health")
    require("mlflow")
    mlflow_limits()
    import json

    from mlflow import MlflowClient
    from mlflow.exceptions import MlflowException

    where = f"{safe_url(uri)} (MLflow)"
    client = MlflowClient(tracking_uri=uri)
    token, count = None, 0
    try:
        experiments = _experiments(client, opts, uri)
        while not sweep.cut:
            page = client.search_traces(locations=experiments, filter_string=_filter(opts), max_results=opts.page_size,
                                        order_by=["timestamp_ms ASC"], page_token=token)
            for trace in page:
                if sweep.full(str(trace.info.trace_id)):
                    break
                count += 1
                record = RawRecord(where, count, json.loads(trace.to_json()))
                sweep.took(str(trace.info.trace_id), datetime.fromtimestamp(trace.info.request_time / 1000, UTC))
                yield record
            token = page.token
            if not token:
                break
    except (MlflowException, OSError, json.JSONDecodeError) as exc:
        raise Unreachable(_failed(uri, exc, "listing traces")) from None
    sweep.finish(where, "max_results")


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
