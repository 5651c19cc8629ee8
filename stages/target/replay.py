"""Kind `replay`: re-score a live run from its `traces.jsonl` without calling the agent.

`replay_stage` serves each (case, trial) the trace recorded by an earlier live
run; `rescore_config` turns a config into one that replays a run directory
(`tracejudge run CONFIG --rescore RUN_DIR`).
"""

from __future__ import annotations

from pathlib import Path

from tracejudge.core.config import RunConfig, TargetConfig
from tracejudge.core.errors import ConfigError
from tracejudge.core.records import ErrorInfo, Status, Trace
from tracejudge.core.work import Stage, Work
from tracejudge.stages.target.traces import TRACES, TraceIndex, TraceWriter

__all__ = ["replay_stage", "rescore_config"]


def replay_stage(cfg: TargetConfig, run_dir: Path | None) -> Stage:
    """Kind `replay`: give each (case, trial) the trace recorded in `cfg.traces`; no agent is called.

    The current dataset's case keeps its expectations (so fixed expectations
    and new metrics apply); only the trace, the turns and a recorded
    `target_error` come from the recording. A pair with no recording is a
    `target_error` saying so. The records are copied to this run's own
    `traces.jsonl`, so a re-scored run can be re-scored again.
    """
    path = cfg.traces
    assert path is not None
    try:
        index = TraceIndex(path)
    except FileNotFoundError:
        raise ConfigError(f"target.traces: {path} not found (is it a run directory of a live run?)") from None
    own = run_dir / TRACES if run_dir is not None else None
    writer = TraceWriter(own) if own is not None and own.resolve() != path.resolve() else None

    async def process(work: Work) -> None:
        rec = index.get(work.case.id, work.trial)
        if rec is None:
            work.result.status = Status.target_error
            work.result.error = ErrorInfo(kind="target_error", message=f"no recorded trace for case {work.case.id!r} trial {work.trial} in {path}")
            return
        if writer is not None:
            writer.add(rec)
        if rec.get("turns") is not None:
            work.result.metadata = {**work.result.metadata, "turns": rec["turns"]}
        if rec.get("status") != Status.ok.value:
            work.result.status = Status.target_error
            work.result.error = ErrorInfo.model_validate(rec.get("error") or {"kind": "target_error", "message": "recorded as failed"})
            return
        trace = (rec.get("case") or {}).get("trace")
        work.case = work.case.model_copy(update={"trace": Trace.model_validate(trace or {})})

    async def aclose() -> None:
        index.close()
        if writer is not None:
            writer.close()

    return Stage("target", process, workers=1, aclose=aclose)


def rescore_config(config: RunConfig, recorded_run: Path) -> RunConfig:
    """`config` with its target replaced by a replay of `recorded_run/traces.jsonl`.

    Raises `ConfigError` when the directory has no `traces.jsonl`.
    """
    traces = Path(recorded_run) / TRACES
    if not traces.exists():
        raise ConfigError(f"--rescore {recorded_run}: no {TRACES} there (only runs with a live target record traces)")
    replay = TargetConfig(kind="replay", traces=traces.resolve())
    return config.model_copy(update={"target": replay})
