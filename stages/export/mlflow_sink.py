"""`tracejudge export RUN_DIR --to mlflow`: each score as an MLflow assessment (feedback) on its trace.

The case id is the trace id (format `mlflow-server` reads them so); a case that is a conversation
of several traces (format `mlflow`'s sessions) is a session-level verdict, written on the
session's first trace with `mlflow.trace.session` in its metadata, as MLflow's own multi-turn
scorers write theirs (`target`). Each score becomes
`mlflow.log_feedback(trace_id, name=metric, value, rationale=reason, source)`, the
source being `LLM_JUDGE` with the judge model for a judge metric, `CODE` with
`tracejudge` for a deterministic one; a score without a value is logged with an
`AssessmentError` (`NOT_COMPUTED`) carrying its reason. Metadata:
`tracejudge.run` (`run_key`: `<config hash 12>@<run start>`, the hash of the config the run
directory *began* with, so a resume with `--force`, which records a new config, keeps the
key), `tracejudge.trial`, `tracejudge.passed`, `tracejudge.status`. Keys an older version
wrote for the same run directory (the hash of any config it ran with: `run_keys`) are read as
this run's: a run exported before and after a `--force` holds one assessment per score.

An assessment of ours a reviewer overrode (`mlflow.override_feedback`, MLflow's UI edit: ours
marked invalid, theirs added with `overrides`) is the reviewer's call: its key is left
alone, never written again (counted as already there, and said in the log).

An export brings the server to what `results.jsonl` says now, one assessment per (trace,
metric, run, trial): before writing on a trace, its assessments are read (its info, not its spans); one that says
the same is left (`skipped`), one that says something else (a resumed run redid a
`judge_error`) is replaced by the new one, which is written first and the old one then
deleted (`updated`), and copies of one key are deleted but one. So exporting twice, or
again after an interrupted export, writes nothing twice.

A create is never sent twice blindly: MLflow's client re-sends a POST whose answer timed
out, and a slow server then holds every copy. Here a create is one attempt; after a failure
the trace is read again, and a create that landed counts as written (else it is sent
again, at most `ATTEMPTS` times). A copy that lands after that look is deleted when the
export re-reads the traces it was unsure of at its end, or by the next export.

A trace the server does not hold is counted as not found (`missing`: traces, not scores).
A server that is down, too slow, answers an error or answers what is not JSON raises
`Unreachable` naming the URL; what was written before stays consistent.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from tracejudge.core.errors import TracejudgeError, Unreachable
from tracejudge.core.log import get_logger
from tracejudge.engine import store
from tracejudge.stages.export import OnBad, require, run_results
from tracejudge.stages.export.table import run_info
from tracejudge.stages.extract.remote import mlflow_headers, mlflow_limits, probe, safe_url, store_failure

__all__ = ["ATTEMPTS", "export", "run_key", "run_keys"]

log = get_logger(__name__)

ATTEMPTS = 3
_RETRIED = ("INTERNAL_ERROR", "TEMPORARILY_UNAVAILABLE", "REQUEST_LIMIT_EXCEEDED")  # a server's transient answers

Key = tuple[str, str, str]  # (metric, run, trial)


def run_key(run_dir: Path) -> str:
    """`<first 12 hex of the first config hash>@<run start, ISO>`: which run an assessment came from (`run_keys`)."""
    return run_keys(run_dir)[0]


def run_keys(run_dir: Path) -> list[str]:
    """`[the run key, then every other key an export of this run directory may have written]`.

    The key's hash is that of the config the directory began with (manifest.json's first `history` entry; the
    manifest's `config_hash` when it has no history): `--force` rewrites `config_hash` but only appends to the
    history, so the key stays. The others are the keys of each later config the directory ran with, which exports
    before this rule wrote (they took `config_hash` as it was then). The start is the first segment's, or `?`.
    """
    from tracejudge.engine import store

    manifest = store.read_manifest(run_dir, strict=False) or {}
    history = manifest.get("history") if isinstance(manifest.get("history"), list) else []
    hashes = [h.get("config_hash") for h in history if isinstance(h, dict)] + [manifest.get("config_hash")]
    info = run_info(run_dir)
    started = info["run_started_at"].isoformat() if info["run_started_at"] else "?"
    keys = [f"{(h or '?')[:12]}@{started}" for h in hashes]
    return list(dict.fromkeys(keys))  # the first, then the others once each


def _ours(info: Any, aliases: dict[str, str] | None = None) -> dict[Key, list[Any]]:
    """Our assessments on the trace of `info` (its `TraceInfo`) by (name, run key, trial), a run's older keys (`aliases`:
    old → current) read as its current one. Invalid ones are kept: an overridden key is the reviewer's (`_reviewed`), not
    a key to write again."""
    out: dict[Key, list[Any]] = {}
    for a in getattr(info, "assessments", None) or []:
        meta = a.metadata or {}
        if "tracejudge.run" in meta:
            run = str(meta["tracejudge.run"])
            out.setdefault((a.name, (aliases or {}).get(run, run), str(meta.get("tracejudge.trial"))), []).append(a)
    return out


def _reviewed(found: list[Any]) -> bool:
    """Whether a reviewer overrode one of `found` (one key's assessments): MLflow marks the overridden one invalid; a
    reviewer's that copied our metadata names the one it `overrides`."""
    return any(getattr(a, "valid", True) is False or getattr(a, "overrides", None) for a in found)


def _wanted(result: dict[str, Any], name: str, score: dict[str, Any], key: str, trial: str, session: str | None = None) -> dict[str, Any]:
    judge = score.get("judge") or {}
    meta = {"tracejudge.run": key, "tracejudge.trial": trial, "tracejudge.status": str(result.get("status")),
            "tracejudge.passed": str(score.get("passed"))}
    if session is not None:
        meta[_SESSION] = session
    return {"name": name, "value": score.get("value"), "rationale": score.get("reason") or None,
            "source": ("LLM_JUDGE", str(judge["model"])) if judge.get("model") else ("CODE", "tracejudge"), "metadata": meta}


_SESSION = "mlflow.trace.session"  # (MLflow's `TraceMetadataKey.TRACE_SESSION`)


def target(result: dict[str, Any]) -> tuple[str, str | None]:
    """The trace a result's verdicts are written on, and the session the result stands for (None: one trace).

    A case read as a conversation (format `mlflow`'s default `group_by: conversation`: its id is the session's,
    `metadata.mlflow.traces` its traces in the order they started) is a session-level verdict: written, as
    `mlflow.genai.evaluate` writes a multi-turn scorer's, on the session's first trace with `mlflow.trace.session` in
    its metadata: the session as the traces recorded it (`metadata.mlflow.session`), which the case id shows quoted
    when it has spaces at an end (`conversation_groups.case_id_of`). Any other case's id is its trace id.
    """
    cid = str(result["case_id"])
    found = (result.get("metadata") or {}).get("mlflow")
    traces = found.get("traces") if isinstance(found, dict) else None
    if isinstance(traces, list) and traces and all(isinstance(t, str) and t for t in traces) and cid not in traces:
        session = found.get("session")  # type: ignore[union-attr]
        return traces[0], session if isinstance(session, str) and session.strip() else cid
    return cid, None


def _same(a: Any, want: dict[str, Any]) -> bool:
    """Whether assessment `a` says what `want` would write (value or its absence, reason, source, our metadata)."""
    error = getattr(a, "error", None)
    if want["value"] is None:
        if error is None or a.value is not None or (error.error_message or "") != (want["rationale"] or ""):
            return False
    elif error is not None or a.value != want["value"]:
        return False
    meta = a.metadata or {}
    # The run key is not compared: `_ours` grouped `a` under this run already, an older key of it included.
    return ((a.rationale or None) == want["rationale"] and (a.source.source_type, a.source.source_id) == want["source"]
            and all(meta.get(k) == v for k, v in want["metadata"].items() if k != "tracejudge.run"))


@contextlib.contextmanager
def _one_attempt() -> Iterator[None]:
    # MLflow's client retries every method, POST included, on a read timeout: a create the slow server did
    # commit was sent again (three assessments of one score). For the create, no client retry; `_create` retries.
    before = os.environ.get("MLFLOW_HTTP_REQUEST_MAX_RETRIES")
    os.environ["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] = "0"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("MLFLOW_HTTP_REQUEST_MAX_RETRIES", None)
        else:
            os.environ["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] = before


class _Sink:
    def __init__(self, uri: str) -> None:
        import mlflow
        from mlflow.exceptions import MlflowException

        self.mlflow, self.MlflowException = mlflow, MlflowException
        mlflow.set_tracking_uri(uri)
        self.client = mlflow.MlflowClient(tracking_uri=uri)
        self.tally = {"written": 0, "updated": 0, "skipped": 0, "duplicates": 0, "missing": 0, "traces": 0, "overridden": 0}
        self.unsure: dict[str, dict[Key, str]] = {}  # trace → key → the id written, for traces where a create was retried
        self.aliases: dict[str, str] = {}  # a run's older key → its key (`run_keys`)
        tracing = getattr(self.client, "_tracing_client", None)  # (MLflow's own: `get_trace` reads the info through it)
        self.info = getattr(tracing, "get_trace_info", None) or (lambda trace_id: self.client.get_trace(trace_id, display=False).info)

    def lookup(self, trace_id: str) -> dict[Key, list[Any]] | None:
        """Our assessments on `trace_id` by key; None when the server does not hold the trace.

        Only the trace's info is read (its assessments are there), never its spans: `get_trace` downloaded every span of
        every trace (a tenth of a second for one of a few MB: minutes for a run of thousands) and failed the export on a trace whose span data is gone (an
        artifact store's retention, or one this machine cannot read), which a verdict does not need."""
        try:
            return _ours(self.info(trace_id), self.aliases)
        except self.MlflowException as exc:
            if exc.error_code == "RESOURCE_DOES_NOT_EXIST":
                return None
            raise

    def delete(self, trace_id: str, assessment: Any) -> None:
        try:
            self.mlflow.delete_assessment(trace_id=trace_id, assessment_id=assessment.assessment_id)
        except self.MlflowException as exc:
            if exc.error_code != "RESOURCE_DOES_NOT_EXIST":  # (already gone: what deleting wanted)
                raise

    def create(self, trace_id: str, want: dict[str, Any], key: Key) -> Any:
        """Write `want` once: one attempt at a time, and after a failed one, a look at whether it landed."""
        from mlflow.entities import AssessmentError, AssessmentSource

        error = None if want["value"] is not None else AssessmentError(error_code="NOT_COMPUTED", error_message=want["rationale"] or "")
        for attempt in range(1, ATTEMPTS + 1):
            try:
                with _one_attempt():
                    return self.mlflow.log_feedback(trace_id=trace_id, name=want["name"], value=want["value"], error=error,
                                                    source=AssessmentSource(source_type=want["source"][0], source_id=want["source"][1]),
                                                    rationale=want["rationale"], metadata=want["metadata"])
            except (self.MlflowException, OSError) as exc:
                transient = store_failure(exc)[0] == "unreachable" or getattr(exc, "error_code", None) in _RETRIED
                if not transient or attempt == ATTEMPTS:
                    raise
            self.unsure.setdefault(trace_id, {})
            time.sleep(attempt)  # a slow server gets a moment to commit what it was sent
            landed = [a for a in ((self.lookup(trace_id) or {}).get(key) or []) if _same(a, want)]
            if landed:
                return landed[0]
        raise AssertionError("unreachable")  # (the loop returns or raises)

    def put(self, trace_id: str, have: dict[Key, list[Any]], key: Key, want: dict[str, Any]) -> None:
        """Bring `key` on `trace_id` to `want`: leave it, replace it, or write it; one assessment of it in the end."""
        olds = have.get(key) or []
        if _reviewed(olds):  # a reviewer's verdict stands: writing ours again would undo it
            self.tally["skipped"] += 1
            self.tally["overridden"] += 1
            return
        keep = next((a for a in olds if _same(a, want)), None)
        if keep is None:
            keep = self.create(trace_id, want, key)
            self.tally["updated" if olds else "written"] += 1
        else:
            self.tally["skipped"] += 1
            self.tally["duplicates"] += len(olds) - 1
        for a in olds:
            if a.assessment_id != keep.assessment_id:
                self.delete(trace_id, a)
        have[key] = [keep]
        if trace_id in self.unsure:
            self.unsure[trace_id][key] = keep.assessment_id

    def settle(self) -> None:
        """Delete a copy a slow server committed after `create` looked: on the traces a create was retried on."""
        for trace_id, kept in self.unsure.items():
            for key, found in (self.lookup(trace_id) or {}).items():
                if key in kept and not _reviewed(found):
                    for a in found:
                        if a.assessment_id != kept[key]:
                            self.delete(trace_id, a)
                            self.tally["duplicates"] += 1


def export(run_dirs: Sequence[Path], tracking_uri: str | None = None, on_bad: OnBad | None = None) -> dict[str, int]:
    """Bring the MLflow server to the scores of `run_dirs`; returns `{"written", "updated", "skipped", "duplicates", "missing",
    "traces"}` (`missing` of `traces` looked up were not there; `duplicates` deleted). A line of results.jsonl that holds
    no result (a score of NaN typed in by hand) is not exported: `on_bad(file, line number, "field: what is wrong")`.

    Raises `TracejudgeError` without a tracking URI, `MissingExtra` without
    mlflow, `Unreachable` (URL named, no credential) when the server is down,
    too slow, answers what is not JSON or refuses a write.
    """
    uri = tracking_uri or os.environ.get("MLFLOW_TRACKING_URI")
    if not uri:
        raise TracejudgeError("--to mlflow needs --tracking-uri (or MLFLOW_TRACKING_URI)")
    require("mlflow")
    probe(uri, "/health", headers=mlflow_headers(uri))
    mlflow_limits()  # MLflow retries a dead server for minutes by default; an export should say so in seconds
    sink = _Sink(uri)
    for run_dir in run_dirs:
        current, *older = run_keys(run_dir)
        sink.aliases |= {old: current for old in older}
    seen: dict[str, dict[Key, list[Any]] | None] = {}
    try:
        for run_dir in run_dirs:
            key = run_key(run_dir)
            for result in run_results(run_dir, on_bad):
                scores = result.get("scores") or {}
                if not scores:
                    continue
                trace_id, session = target(result)
                if trace_id not in seen:
                    if len(seen) > 10_000:
                        seen.clear()  # memory stays flat on a large run; a trace seen again is re-read
                    seen[trace_id] = sink.lookup(trace_id)
                    sink.tally["traces"] += 1
                    sink.tally["missing"] += seen[trace_id] is None
                have = seen[trace_id]
                if have is None:
                    continue
                trial = str(result.get("trial") or 0)
                for name, score in scores.items():
                    try:
                        sink.put(trace_id, have, (name, key, trial), _wanted(result, name, score, key, trial, session))
                    except sink.MlflowException as exc:
                        if exc.error_code != "RESOURCE_DOES_NOT_EXIST":
                            raise
                        seen[trace_id] = None  # deleted while the export ran
                        sink.tally["missing"] += 1
                        break
        sink.settle()
    except (sink.MlflowException, OSError, json.JSONDecodeError) as exc:
        raise Unreachable(_failed(uri, exc, sink.tally)) from None
    if sink.tally["overridden"]:
        log.warning(f"{safe_url(uri)}: left {sink.tally['overridden']} assessment(s) a reviewer overrode (their verdict stands)",
                    overridden=sink.tally["overridden"])
    return sink.tally


def _failed(uri: str, exc: BaseException, tally: dict[str, int]) -> str:
    done = f"after {tally['written'] + tally['updated']} assessments"
    kind, detail = store_failure(exc)
    if kind == "unreachable":
        return f"{safe_url(uri)} cannot be reached or did not answer in time {done} ({detail}); the same command resumes"
    if kind == "not_json":
        return f"{safe_url(uri)} answered with something that is not JSON {done}: is it an MLflow tracking server? the same command resumes"
    return f"{safe_url(uri)}: MLflow refused the export {done} ({detail}); the same command resumes"
