"""Stage `target`: run the agent under test on each (case, trial) and keep what it did.

Built by `target_stage(config, run_dir)` when the config has a `target:`
section (see `tracejudge.core.config.TargetConfig`); it sits before `score`.
For each work item it runs one fresh conversation (`conversation.converse`)
through the configured kind (`python_target`, `http_target`,
`command_target`), then:

- on success the work's case gets the live trace (a per-trial copy; the
  case object shared by trials is never changed), and a multi-turn case's
  result gets `metadata["turns"]`: each turn's `{input, output, tool_calls}`;
- on failure the result is `status: target_error` with the error (the turn
  that failed, the timeout, the last transient error after the retries) and
  the turns so far; the run goes on;
- either way the attempt is appended to `RUN_DIR/traces.jsonl`
  (`tracejudge.stages.target.traces`), which kind `replay` serves back to re-score a
  run without calling the target (`tracejudge run CONFIG --rescore RUN_DIR`).

Timeout: `timeout_s` bounds the whole case (every turn, retry and back-off).
Retries: a transient failure (`TransientTargetError`) restarts the
conversation with a fresh `conversation_id` after a jittered exponential
back-off (tenacity), at most `retries` times; any other failure is final.
Secrets: the values of the environment variables the target's config names
as `${NAME}` (headers, URL, command) and the judge's API key are masked,
with anything credential-shaped, in what is kept of the target's replies:
error messages and details, turns, and any trace text holding a secret
(`tracejudge.llm.redact`), before a result, a report, `traces.jsonl` or
the judge's prompt sees it; the case a `traces.jsonl` line copies is masked
as a result line masks what it copies (`traces.recorded_case`). The
deterministic metrics score the trace as the agent produced it (`Attempt.raw`,
handed to the score stage as `Work.scratch[AGENT_TRACE]`), as they score a
dataset's trace: masking is for what is kept, not for what is compared.
Concurrency: the stage runs `concurrency` workers, so at most that many
cases are at the target at once, independently of the judge's limits.
"""

from __future__ import annotations

import itertools
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt, wait_exponential, wait_random
from tracejudge.core import registry
from tracejudge.core.config import RunConfig, TargetConfig
from tracejudge.core.errors import ConfigError, Unreachable
from tracejudge.core.log import get_logger
from tracejudge.core.records import Case, ErrorInfo, Status, Trace
from tracejudge.core.work import AGENT_ANSWERED, AGENT_SECRETS, AGENT_TRACE, Stage, Work
from tracejudge.llm.redact import redact
from tracejudge.stages.target.conversation import Conversation, converse, merge_traces
from tracejudge.stages.target.protocol import (
    HistoryItem,
    TargetError,
    TargetReply,
    TargetRequest,
    TransientTargetError,
    normalize_reply,
)
from tracejudge.stages.target.replay import replay_stage, rescore_config
from tracejudge.stages.target.scrub import echo_forms, scrub, target_secrets
from tracejudge.stages.target.traces import TRACES, Answered, TraceIndex, TraceWriter, recorded_case, target_fingerprint

__all__ = [
    "TRACES",
    "Attempt",
    "HistoryItem",
    "TargetError",
    "TargetReply",
    "TargetRequest",
    "TargetRunner",
    "TransientTargetError",
    "check_target",
    "rescore_config",
    "target_secrets",
    "target_stage",
]

_log = get_logger("tracejudge.target")


class _Contexts(dict[str, Any]):
    """Adapter contexts for reply traces: the dataset's own format is prepared on first use."""

    def __init__(self, config: RunConfig) -> None:
        super().__init__()
        self._config = config

    def get(self, name: str, default: Any = None) -> Any:
        if name not in self:
            ds = self._config.dataset
            self[name] = registry.format_for(name).prepare(ds) if name == ds.format else None
        return self[name]


def _caller(cfg: TargetConfig) -> tuple[Callable[[TargetRequest], Awaitable[TargetReply]], Callable[[], Awaitable[None]] | None]:
    if cfg.kind == "python":
        from tracejudge.stages.target.python_target import load_callable, python_caller

        return python_caller(load_callable(cfg.callable or "", cfg.pythonpath)), None
    if cfg.kind == "http":
        from tracejudge.stages.target.http_target import expand_headers, http_caller

        return http_caller(cfg.url or "", expand_headers(cfg.headers), cfg.concurrency, cfg.max_response_bytes)
    from tracejudge.stages.target.command_target import command_caller

    return command_caller(cfg.command or [], cfg.cwd, cfg.transient_exit_codes), None


def check_target(cfg: TargetConfig) -> None:
    """Raise `ConfigError` for what would stop `target_stage(cfg)`, starting nothing and writing nothing.

    Checked: a python callable imports, every `${VAR}` of an http target's
    headers is set, a command's program exists, a replay's traces file exists.
    The runner calls it before it creates the run directory.
    """
    if cfg.kind == "python":
        from tracejudge.stages.target.python_target import load_callable

        load_callable(cfg.callable or "", cfg.pythonpath)
    elif cfg.kind == "http":
        from tracejudge.stages.target.http_target import expand_headers

        expand_headers(cfg.headers)
    elif cfg.kind == "command":
        from tracejudge.stages.target.command_target import check_program

        check_program(cfg.command or [""], cfg.cwd)
    elif cfg.traces is None or not Path(cfg.traces).is_file():
        raise ConfigError(f"target.traces: {cfg.traces} not found (is it a run directory of a live run?)")


def _wait(cfg: TargetConfig) -> Callable[[Any], float]:
    # backoff_s, 2x, 4x … up to max_backoff_s, plus up to backoff_s of jitter so retries spread out.
    base = wait_exponential(multiplier=cfg.backoff_s, max=cfg.max_backoff_s) + wait_random(0, cfg.backoff_s)

    def wait(state: Any) -> float:
        exc = state.outcome.exception() if state.outcome is not None else None
        hint = getattr(exc, "retry_after", None) or 0.0
        return max(float(base(state)), min(hint, cfg.max_backoff_s))

    return wait


def _turn_prefix(case: Case, state: Conversation | None) -> str:
    if not case.turns or state is None:
        return ""
    return f"turn {state.current} of {len(case.turns) + 1}: "


def _turn_field(case: Case, state: Conversation | None) -> str | None:
    if not case.turns or state is None:
        return None
    return "input" if state.current == 0 else f"turns[{state.current - 1}]"


@dataclass
class Attempt:
    """What running one (case, trial) at the target gave; small and picklable (it may come from a Ray worker).

    `trace` is the merged live trace on success, masked (`scrub`), and `raw`
    the same trace as the agent produced it (the object itself when nothing
    needed masking), for the deterministic metrics only; otherwise `message` says why
    the case failed (with the failing turn, `field` naming it). `partial` is
    what the target did before failing (for `traces.jsonl`); `turns` the
    per-turn record of a multi-turn case; `attempts` how many conversations
    were started (retries included); `details` the error's details (a
    python target's traceback).
    """

    trace: Trace | None
    message: str | None = None
    field: str | None = None
    attempts: int = 0
    conversation_id: str | None = None
    turns: list[dict[str, Any]] | None = None
    partial: Trace | None = None
    details: dict[str, Any] | None = None
    stopped: bool = False  # a stop came while it waited to retry: nothing to write, the resume redoes the case
    raw: Trace | None = None


def _unreachable(cfg: TargetConfig, exc: TransientTargetError, attempts: int, secrets: tuple[str, ...]) -> Unreachable:
    """The one-line error that stops a run whose http target never answered (exit 3, like an unreachable judge)."""
    from tracejudge.llm.wire.payload import public_url

    why = redact(" ".join(str(exc).split())[:400], secrets)
    return Unreachable(f"target: cannot reach the http target at {public_url(cfg.url or '')} after {attempts} attempts ({why}); "
                       "nothing of the run was answered; is the agent running and target.url right? stopped without marking any case; "
                       "fix it and run the same command to resume")


class _StoppedBeforeRetry(Exception):
    """Raised from a retry's back-off when the run is stopping: no new agent call starts after a stop."""


class TargetRunner:
    """Runs conversations with `config.target` (`attempt(case, trial)`), in this process.

    The target stage uses one on the event loop; the Ray executor keeps one in
    each of its target workers. Raises `ConfigError` when the target cannot be
    set up (see `target_stage`). `backing_off` maps an attempt in back-off
    before a retry to when the retry is due (`time.monotonic()`), for the
    progress display.
    """

    def __init__(self, config: RunConfig, stop: anyio.Event | None = None) -> None:
        assert config.target is not None
        self.cfg = config.target
        self.stop = stop
        self.call, self._close = _caller(self.cfg)
        contexts = _Contexts(config)
        self.normalize = lambda reply: normalize_reply(reply, self.cfg.trace_format, contexts)
        self.backing_off: dict[int, float] = {}
        self._keys = itertools.count()
        self.secrets = target_secrets(config)
        # How each secret appears inside a JSON dump (quotes, backslashes, control characters escaped), and as it is.
        self._escaped = echo_forms(self.secrets)

    async def attempt(self, case: Case, trial: int) -> Attempt:
        """One fresh conversation (retried on transient failures, within `timeout_s`); never raises for a target failure."""
        cfg = self.cfg
        key = next(self._keys)

        async def sleep(seconds: float) -> None:
            self.backing_off[key] = time.monotonic() + seconds
            try:
                if self.stop is None:
                    await anyio.sleep(seconds)
                else:
                    with anyio.move_on_after(seconds):
                        await self.stop.wait()
                    if self.stop.is_set():
                        raise _StoppedBeforeRetry
            finally:
                self.backing_off.pop(key, None)

        inputs = [case.input, *case.turns]
        box: dict[str, Any] = {"state": None, "attempts": 0}
        trace: Trace | None = None
        message: str | None = None
        details: dict[str, Any] | None = None
        retrying = AsyncRetrying(
            stop=stop_after_attempt(cfg.retries + 1),
            wait=_wait(cfg),
            retry=retry_if_exception_type(TransientTargetError),
            sleep=sleep,
            reraise=True,
        )
        try:
            with anyio.move_on_after(cfg.timeout_s) as scope:
                async for attempt in retrying:
                    with attempt:
                        box["attempts"] += 1
                        box["state"] = Conversation(f"{case.id}/{trial}/{uuid.uuid4().hex[:16]}", inputs)
                        trace = await converse(self.call, self.normalize, case, trial, box["state"])
            if scope.cancelled_caught:
                trace = None
                if box["state"] is not None:
                    box["state"].fail(f"timed out after {cfg.timeout_s:g}s")
                message = f"timed out after {cfg.timeout_s:g}s"
        except _StoppedBeforeRetry:
            return Attempt(None, message="the run stopped before a retry", attempts=box["attempts"], stopped=True)
        except TransientTargetError as exc:
            if exc.unreachable:
                raise _unreachable(cfg, exc, box["attempts"], self.secrets) from None
            message = f"{exc} (gave up after {box['attempts']} attempts)"
        except TargetError as exc:
            message = str(exc)
            details = {"traceback": exc.traceback} if exc.traceback else None
        state: Conversation | None = box["state"]
        turns = state.turns if (state is not None and case.turns) else None
        out = Attempt(trace, attempts=box["attempts"], conversation_id=state.conversation_id if state is not None else None, turns=turns)
        if message is not None or trace is None:
            out.trace = None
            out.details = details
            out.message = _turn_prefix(case, state) + (message or "no trace")
            out.field = _turn_field(case, state)
            given = state.inputs[: state.current + 1] if state is not None and case.turns else None
            out.partial = merge_traces(state.traces, given) if state is not None and state.traces else None
        return scrub(out, self.secrets, self._escaped)

    async def aclose(self) -> None:
        """Close the target's connections (http)."""
        if self._close is not None:
            await self._close()


RemoteAttempt = Callable[[Case, int], Awaitable[Attempt]]


def target_stage(config: RunConfig, run_dir: Path | None = None, remote: RemoteAttempt | None = None,
                 stop: anyio.Event | None = None) -> Stage:
    """The `target` stage for `config.target`; traces go to `run_dir/traces.jsonl` when `run_dir` is given.

    `remote(case, trial)`, when given, runs each attempt elsewhere (the Ray
    executor's target workers) instead of a `TargetRunner` here; the stage
    still applies the outcome and writes `traces.jsonl` in this process.

    Raises `ConfigError` before any case runs when the target cannot be set
    up: a python callable that does not import, an unset header variable, a
    command not found, a replay file missing.
    """
    cfg = config.target
    if cfg is None:
        raise ValueError("target_stage needs a config with a `target` section")
    if cfg.kind == "replay":
        return replay_stage(cfg, run_dir)
    runner = TargetRunner(config, stop) if remote is None else None
    attempt = remote if remote is not None else runner.attempt  # type: ignore[union-attr]
    fingerprint = target_fingerprint(cfg)
    echoes = echo_forms(target_secrets(config))  # what the scores of an unmasked trace must not quote (`AGENT_SECRETS`)
    # Before the writer opens the file: what a killed segment's agent answered is reused, not asked again.
    answered = Answered(run_dir / TRACES, fingerprint) if run_dir is not None and (run_dir / TRACES).is_file() else None
    writer = TraceWriter(run_dir / TRACES) if run_dir is not None else None
    # What the stage waits on, for the progress display: case → since when at the agent.
    at_agent: dict[int, float] = {}

    def activity() -> str | None:
        now = time.monotonic()
        backing_off = runner.backing_off if runner is not None else {}
        parts = []
        if at_agent:
            parts.append(f"{len(at_agent)} case{'s' if len(at_agent) != 1 else ''} at the agent (slowest {now - min(at_agent.values()):.0f} s)")
        if backing_off:
            parts.append(f"{len(backing_off)} in back-off before a retry (next in {max(0.0, min(backing_off.values()) - now):.0f} s)")
        return "target: " + ", ".join(parts) if parts else None

    async def process(work: Work) -> None:
        case = work.case
        work.scratch[AGENT_ANSWERED] = True
        rec = answered.get(case, work.trial) if answered is not None else None
        if rec is not None:
            if rec.get("turns") is not None:
                work.result.metadata = {**work.result.metadata, "turns": rec["turns"]}
            work.case = case.model_copy(update={"trace": Trace.model_validate(rec["case"]["trace"])})
            return
        at_agent[id(work)] = time.monotonic()
        try:
            got = await attempt(case, work.trial)
        finally:
            at_agent.pop(id(work), None)
        if got.stopped:
            work.scratch["unfinished"] = True  # not written; the resume asks the agent again
            work.result.status = Status.target_error  # so no later stage works on it
            return
        if got.turns is not None:
            work.result.metadata = {**work.result.metadata, "turns": got.turns}
        if got.trace is not None:
            work.case = case.model_copy(update={"trace": got.trace})
            if got.raw is not None and got.raw is not got.trace:
                work.scratch[AGENT_TRACE] = got.raw  # scored as the agent produced it; the judge and the files see the copy
                work.scratch[AGENT_SECRETS] = echoes
        else:
            work.result.status = Status.target_error
            work.result.error = ErrorInfo(kind="target_error", message=got.message or "no trace", field=got.field, details=got.details)
            _log.info("target_error", case_id=case.id, trial=work.trial, attempts=got.attempts, error=got.message)
        if writer is not None:
            writer.add(
                {
                    "case_id": case.id,
                    "trial": work.trial,
                    "target": fingerprint,
                    "status": work.result.status.value,
                    "error": work.result.error.model_dump(mode="json") if work.result.error else None,
                    "conversation_id": got.conversation_id,
                    "attempts": got.attempts,
                    "turns": got.turns,
                    "case": recorded_case(case, got.trace if got.trace is not None else got.partial),
                }
            )

    async def aclose() -> None:
        if runner is not None:
            await runner.aclose()
        if answered is not None:
            answered.close()
        if writer is not None:
            writer.close()

    # `io`: each case moves on (scored, judged, written) as soon as its agent answered, not with its chunk.
    return Stage("target", process, workers=cfg.concurrency, aclose=aclose, activity=activity, io=True)
