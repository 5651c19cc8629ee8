"""The sections of a run config besides the judge's: dataset, limits, budget, cache, run and target.

Part of the run config (`tracejudge.core.config`, which re-exports every name here).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from tracejudge.core import registry
from tracejudge.core.strict_numbers import NoBoolNumbers
from tracejudge.core.urls import http_url

__all__ = ["MAX_TRIALS", "WORKERS_DEPRECATED", "trials_without_target", "BudgetConfig", "CacheConfig", "DatasetConfig", "LimitsConfig", "RunSection", "TargetConfig"]


class _Strict(NoBoolNumbers):
    model_config = ConfigDict(extra="forbid")


class DatasetConfig(_Strict):
    """Where the cases come from.

    `format` names an input adapter (`native`, `tau-bench`, …); `tasks` is the
    companion tasks file that some formats need; `options` are passed to the
    adapter; `limit` keeps only the first N records (handy for smoke runs).
    `path` is required except for formats that read from a server
    (`phoenix`, `mlflow-server`: the server is named in `options`).
    """

    path: Path | None = None
    format: str = "native"
    tasks: Path | None = None
    options: dict[str, Any] = Field(default_factory=dict)
    limit: int | None = Field(default=None, ge=1)


class LimitsConfig(_Strict):
    """Judge rate limits: requests/min, tokens/min (input + output), requests in flight.

    `window`: how the provider counts them — `bucket` (refilling
    continuously), `strict` (a 60-second window), or `auto` (a bucket until
    the provider's rate-limit headers show a window). `window_s`: the
    window's length in seconds (60); `rpm`/`tpm` count per window.
    """

    rpm: int = Field(default=3000, ge=1)
    tpm: int = Field(default=1_000_000, ge=1)
    max_in_flight: int = Field(default=64, ge=1)
    window: Literal["auto", "bucket", "strict"] = "auto"
    window_s: float = Field(default=60.0, gt=0)


class BudgetConfig(_Strict):
    """Hard caps on judge spending for one run (tokens, US dollars); `None` means no cap.

    A dollar cap needs every judge model priced (`judge.prices` or the shipped
    table): `validate_config` refuses one it could not enforce (`unpriced_cost_cap`).
    """

    max_judge_tokens: int | None = Field(default=None, ge=0)
    max_cost_usd: float | None = Field(default=None, ge=0)


class CacheConfig(_Strict):
    """Where the content-addressed judge cache lives; `enabled: false` neither reads nor writes it.

    `explain: true` (or `tracejudge run --explain-cache`) records, for every
    miss, which key component differs from the nearest earlier entry for the
    same case and metric.
    """

    dir: Path = Path(".tracejudge/cache")
    enabled: bool = True
    explain: bool = False


WORKERS_DEPRECATED = (
    "run.workers is deprecated and has no effect: extract and deterministic scoring run in "
    "run.processes worker processes (run.executor), a live target's concurrency is target.concurrency, "
    "the judge's is judge.workers and limits.max_in_flight; remove run.workers from the config"
)


def trials_without_target(trials: int) -> str:
    """The warning for `run.trials` above 1 on recorded traces (no `target:`): the traces do not change between trials."""
    return (f"run.trials is {trials} but there is no target: each recorded trace is scored {trials} times over, and deterministic "
            f"metrics give the same result every time (pass@{trials} equals pass@1, and the CI narrows as if there were {trials} times the "
            "cases); trials need a `target:` section that runs the agent again. To measure the judge's own variance, use "
            "judge.samples; else set run.trials: 1")

# More trials than any pass@k needs, and 10,000 × the cases results to write: a larger count is a typo
# (or an extra zero) that would run for days and make every resume check that many keys per case.
MAX_TRIALS = 10_000


class RunSection(_Strict):
    """The run directory and the pipeline's own knobs.

    `queue_size` bounds every inter-stage stream (about that many cases in
    flight per hop), which CPU-bound hops fill in chunks of `chunk_size`;
    `workers` is deprecated: accepted from older configs, it has no effect and a run that sets it
    logs a warning saying what to set instead (`WORKERS_DEPRECATED`); `trials` runs each case N times
    (at most `MAX_TRIALS`);
    `flush_every` is how many results are fsynced together (half as many after 0.5 s, any after 2 s);
    `max_resume_retries` is how many times re-running the same command redoes a
    (case, trial) that ended in a transient failure (`judge_error`,
    `target_error`, `rate_limited`), counted from results.jsonl.
    `shard` ("I/N", 1-based) scores only the cases whose id hashes into
    shard I of N (`tracejudge.engine.shards`; `tracejudge run --shard I/N`).
    `executor` says where extract and deterministic scoring run
    (`tracejudge.engine.executors`): `inprocess` on the event loop, `processes`
    in a pool of `processes` worker processes (default: the machine's cores;
    `processes: 1` means in-process), `ray` on the Ray cluster at
    `ray_address` (none: a local one; `tracejudge.engine.executors.ray_executor`).
    `metric_timeout_s` bounds each deterministic metric call, in seconds (None: unbounded; from 1e-3 to 1e9); a call cut
    there scores `value: null` with a `metric_timeout:` reason and the run goes on.
    """

    dir: Path = Path("runs/default")
    workers: int = Field(default=1, ge=1, le=256)  # deprecated, inert: see WORKERS_DEPRECATED
    queue_size: int = Field(default=64, ge=1, le=100_000)
    chunk_size: int = Field(default=16, ge=1, le=1024)
    trials: int = Field(default=1, ge=1)
    flush_every: int = Field(default=256, ge=1)
    max_resume_retries: int = Field(default=2, ge=0)
    executor: Literal["inprocess", "processes", "ray"] = "processes"
    processes: int = Field(default_factory=lambda: os.cpu_count() or 1, ge=1, le=1024)
    ray_address: str | None = None
    shard: str | None = None
    # (From a millisecond: a timer of a microsecond or less fires again inside its own handler; to about 31 years: it
    # overflows past ~1e12 s. `None` is the way to say unbounded.)
    metric_timeout_s: float | None = Field(default=60.0, ge=1e-3, le=1e9, allow_inf_nan=False)

    @field_validator("trials")
    @classmethod
    def _trials_bound(cls, value: int) -> int:
        if value > MAX_TRIALS:
            raise ValueError(f"at most {MAX_TRIALS:,} trials: each is one more result of every case (pass@k needs k ≤ trials, "
                             "and pass@100 is estimated well from 200); a larger count would run for days")
        return value

    @field_validator("shard", mode="before")
    @classmethod
    def _shard_form(cls, value: Any) -> str | None:
        if value is None:
            return None
        from tracejudge.engine.shards import parse_shard

        i, n = parse_shard(str(value))  # ValueError → a config error naming run.shard
        return f"{i}/{n}"


class TargetConfig(_Strict):
    """The agent under test, run live by stage `target` (see `stages/target`).

    `kind` picks how it is called, once per turn of each (case, trial):

    - `python`: `callable` is `pkg.module:attr` (sync or async), imported
      with `pythonpath` (a folder) put first on `sys.path`;
    - `http`: a JSON POST to `url`; `headers` values may name environment
      variables as `${NAME}`, expanded when the run starts (secrets stay out
      of the config, the manifest and the logs);
    - `command`: `command` (an argv list, or a string split like a shell
      would) runs in `cwd` with the request JSON on stdin and a reply JSON on
      stdout; an exit status in `transient_exit_codes` is retried;
    - `replay`: no agent call: serve the traces recorded in a run
      directory's `traces.jsonl` (`traces`), for re-scoring.

    `trace_format` names the input format a reply's `trace` is in when the
    reply does not say (`native` = our `Trace`). `timeout_s` bounds a whole
    case (all turns, retries and back-off), in seconds. `retries` is how many
    times a transient failure restarts the conversation, waiting
    `backoff_s` doubling up to `max_backoff_s` (jittered). `concurrency` caps
    the cases in flight at the target, apart from the judge's limits.
    `max_response_bytes` caps the bytes read of one `http` reply (longer: the case fails).
    """

    kind: Literal["python", "http", "command", "replay"]
    callable: str | None = None
    pythonpath: Path | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    command: list[str] | None = None
    cwd: Path | None = None
    traces: Path | None = None
    trace_format: str = "native"
    timeout_s: float = Field(default=120.0, gt=0)
    retries: int = Field(default=2, ge=0, le=100)
    backoff_s: float = Field(default=0.5, ge=0)
    max_backoff_s: float = Field(default=30.0, ge=0)
    concurrency: int = Field(default=4, ge=1, le=4096)
    max_response_bytes: int = Field(default=8 << 20, ge=1024)
    transient_exit_codes: list[int] = Field(default_factory=lambda: [75])

    @model_validator(mode="before")
    @classmethod
    def _split_command(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("command"), str):
            import shlex

            data = {**data, "command": shlex.split(data["command"])}
        return data

    @field_validator("url")
    @classmethod
    def _url(cls, url: str | None) -> str | None:
        return http_url(url, "http://127.0.0.1:8000/agent")

    @model_validator(mode="after")
    def _needs(self) -> TargetConfig:
        required = {"python": "callable", "http": "url", "command": "command", "replay": "traces"}[self.kind]
        if not getattr(self, required):
            raise ValueError(f"a {self.kind} target needs `{required}`")
        if self.kind == "python" and (self.callable is None or ":" not in self.callable):
            raise ValueError(f"callable {self.callable!r}: expected `package.module:function`")
        if self.trace_format not in registry.formats():
            known = ", ".join(sorted(registry.formats()))
            raise ValueError(f"trace_format {self.trace_format!r}: unknown format; expected one of: {known}")
        return self

