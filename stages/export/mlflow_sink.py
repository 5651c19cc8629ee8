"""`tracejudge export RUN_DIR --to mlflow`: each score as an MLflow assessment (feedback) on its trace.

The case id is the trace id (format `mlflow-server` reads them so). Each score becomes
`mlflow.log_feedback(trace_id, name=metric, value, rationale=reason, source)`, the
source being `LLM_JUDGE` with the judge model for a judge metric, `CODE` with
`tracejudge` for a deterministic one; a score without a value is logged with an
`AssessmentError` (`NOT_COMPUTED`) carrying its reason. Metadata:
`tracejudge.run` (`<config hash 12>@<run start>`), `tracejudge.trial`,
`tracejudge.passed`, `tracejudge.status`.

Idempotent and resumable: before writing on a trace, its assessments are read and a
(metric, run, trial) already there is skipped, so exporting twice, or again after an
interrupted export, leaves one assessment each. A trace the server does not hold is
counted as missing. A server that is down or fails a write raises `Unreachable`
naming the URL; every assessment written before is whole (one request each).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tracejudge.core.errors import TracejudgeError, Unreachable
from tracejudge.engine import store
from tracejudge.stages.export import require
from tracejudge.stages.export.table import run_info
from tracejudge.stages.extract.remote import probe, safe_url

__all__ = ["export", "run_key"]


def run_key(run_dir: Path) -> str:
    """`<first 12 hex of the config hash>@<run start, ISO>`: which run an assessment came from."""
    info = run_info(run_dir)
    started = info["run_started_at"].isoformat() if info["run_started_at"] else "?"
    return f"{(info['config_hash'] or '?')[:12]}@{started}"


def _existing(trace: Any) -> set[tuple[str, str, str]]:
    out = set()
    for a in getattr(trace.info, "assessments", None) or []:
        meta = a.metadata or {}
        if "tracejudge.run" in meta:
            out.add((a.name, str(meta["tracejudge.run"]), str(meta.get("tracejudge.trial"))))
    return out


def export(run_dirs: Sequence[Path], tracking_uri: str | None = None) -> dict[str, int]:
    """Write every score of `run_dirs` to the MLflow server; returns `{"written", "skipped", "missing"}`.

    Raises `TracejudgeError` without a tracking URI, `MissingExtra` without
    mlflow, `Unreachable` (URL named, no credential) when the server is down or
    refuses a write.
    """
    uri = tracking_uri or os.environ.get("MLFLOW_TRACKING_URI")
    if not uri:
        raise TracejudgeError("--to mlflow needs --tracking-uri (or MLFLOW_TRACKING_URI)")
    probe(uri, "/health")
    require("mlflow")
    # MLflow retries a dead server for minutes by default; an export should say so in seconds.
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "2")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "30")
    import mlflow
    from mlflow.entities import AssessmentError, AssessmentSource
    from mlflow.exceptions import MlflowException

    mlflow.set_tracking_uri(uri)
    client = mlflow.MlflowClient(tracking_uri=uri)
    tally = {"written": 0, "skipped": 0, "missing": 0}
    seen: dict[str, set[tuple[str, str, str]] | None] = {}
    try:
        for run_dir in run_dirs:
            key = run_key(run_dir)
            for result in store.iter_results(run_dir):
                scores = result.get("scores") or {}
                if not scores:
                    continue
                trace_id = str(result["case_id"])
                if trace_id not in seen:
                    if len(seen) > 10_000:
                        seen.clear()  # memory stays flat on a large run; a trace seen again is re-read
                    try:
                        seen[trace_id] = _existing(client.get_trace(trace_id, display=False))
                    except MlflowException as exc:
                        if exc.error_code != "RESOURCE_DOES_NOT_EXIST":
                            raise
                        seen[trace_id] = None
                have = seen[trace_id]
                if have is None:
                    tally["missing"] += len(scores)
                    continue
                trial = str(result.get("trial") or 0)
                for name, score in scores.items():
                    if (name, key, trial) in have:
                        tally["skipped"] += 1
                        continue
                    judge = score.get("judge") or {}
                    source = (AssessmentSource(source_type="LLM_JUDGE", source_id=str(judge["model"])) if judge.get("model")
                              else AssessmentSource(source_type="CODE", source_id="tracejudge"))
                    value = score.get("value")
                    meta = {"tracejudge.run": key, "tracejudge.trial": trial, "tracejudge.status": str(result.get("status")),
                            "tracejudge.passed": str(score.get("passed"))}
                    error = None if value is not None else AssessmentError(error_code="NOT_COMPUTED", error_message=score.get("reason") or "")
                    mlflow.log_feedback(trace_id=trace_id, name=name, value=value, source=source, rationale=score.get("reason") or None,
                                        metadata=meta, error=error)
                    have.add((name, key, trial))
                    tally["written"] += 1
    except MlflowException as exc:
        raise Unreachable(f"{safe_url(uri)}: MLflow refused the export after {tally['written']} assessments "
                          f"({str(exc).splitlines()[0][:200]}); the same command resumes") from None
    except OSError as exc:
        raise Unreachable(f"{safe_url(uri)} cannot be reached after {tally['written']} assessments ({type(exc).__name__}); "
                          "the same command resumes") from None
    return tally
