"""Format `langfuse`: a trace's `scores` (`GET /api/public/traces/{id}`'s `APIScoreV1`s) as its labels, for `langfuse_api`.

A person's score (`source: ANNOTATION`) is `metadata.labels.<name>`, Langfuse's evaluators' (`EVAL`) and the API's
(`API`) `metadata.other_labels.<name>`, and so is one of a source this reader does not know (`store_labels`). Only the
trace's own scores are its labels: a score whose `traceId` is another trace's (a session's or a page's scores listed
on each of its traces) would label the wrong run. A score on one observation (`observationId`: a generation's, a tool
call's) is about that step, not the run, and is no label, as Phoenix's annotations of other spans than the root and
MLflow's feedback on a span are not (a step's `correct` beside the run's would read as two reviewers disagreeing).
"""

from __future__ import annotations

from typing import Any

from tracejudge.core.log import get_logger
from tracejudge.stages.extract.said_once import first_time
from tracejudge.stages.extract.store_labels import StoreLabel, label_metadata, plain_value, unknown_source

__all__ = ["trace_labels"]

log = get_logger("tracejudge.extract.langfuse")

_SCORE_SOURCES = {"ANNOTATION": "human", "API": "api", "EVAL": "llm"}  # (a score's `source`: who made it, `store_labels`)


def _own(score: dict[str, Any], trace: str | None, observations: set[str]) -> bool:
    """Whether `score` is one of trace `trace`'s (whose observations' ids are `observations`): its `traceId` is the trace's,
    or, without one, it is on one of the trace's observations, or on nothing else (no session, no dataset run). A trace
    read without its id (`trace` None) has all of its own. (Whether it labels the run is `_of_run`'s.)"""
    owner = score.get("traceId")
    if trace is None:
        return True
    if owner not in (None, ""):
        return str(owner) == trace
    if score.get("observationId") not in (None, ""):
        return str(score["observationId"]) in observations
    return score.get("sessionId") in (None, "") and score.get("datasetRunId") in (None, "")


def _of_run(score: dict[str, Any]) -> bool:
    """Whether `score` is about the whole run (the module doc): not one on an observation."""
    return score.get("observationId") in (None, "")


def trace_labels(scores: Any, trace: str | None = None, observations: set[str] | frozenset[str] = frozenset()) -> dict[str, Any]:
    """The `store_labels` metadata of trace `trace`'s `scores` (`GET /api/public/traces/{id}`: `APIScoreV1`s): those of
    the trace itself (`_own`, `_of_run`: a score another trace holds, listed beside, a session's or a page's scores put on
    every trace, is left out and said once per trace; one on an observation is no label), each `NUMERIC`'s `value`, a `BOOLEAN`'s
    `true`/`false` (its `stringValue`) or a `CATEGORICAL`'s category (`stringValue`); other kinds (`TEXT`, `CORRECTION`)
    are no verdict. A `source` this reader does not know is kept among the others' (`store_labels.unknown_source`)."""
    found, others, ids = [], set(), set(observations)
    for s in scores if isinstance(scores, list) else []:
        if not isinstance(s, dict) or not isinstance(s.get("name"), str) or not s["name"]:
            continue
        if not _own(s, trace, ids):
            others.add(str(s.get("traceId") or s.get("sessionId") or s.get("datasetRunId") or s.get("observationId")))
            continue
        if not _of_run(s):
            continue
        kind, value, text = s.get("dataType"), s.get("value"), s.get("stringValue")
        if kind == "NUMERIC":
            got = None if isinstance(value, bool) else plain_value(value)
        elif kind == "BOOLEAN":
            got = (text.strip().lower() == "true") if isinstance(text, str) and text.strip().lower() in ("true", "false") else \
                (bool(value) if value in (0, 1) and not isinstance(value, bool) else None)
        elif kind == "CATEGORICAL":
            got = plain_value(text)
        else:
            continue
        if got is not None:
            source = _SCORE_SOURCES.get(str(s.get("source") or "").upper()) or unknown_source("langfuse", s.get("source"), "ANNOTATION, API, EVAL")
            found.append(StoreLabel(s["name"], got, source, str(s.get("createdAt") or s.get("timestamp") or "")))
    if others and first_time("langfuse_other_scores", str(trace)):
        log.warning(f"langfuse: trace {trace} lists scores that are not its own (of {', '.join(sorted(others))}: their `traceId`, or a "
                    "session's): left out of its labels, which are the scores on the trace")
    return label_metadata(found)
