"""Counters of a run journal's segments and results: usage sums, the judge gate's and items' counts."""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from tracejudge.core.records import RETRYABLE_STATUSES, UNTERMINATED_LINE, WORKER_ERROR, CaseResult, Status

__all__ = ["KIND", "OVERSIZED", "REFUSED", "add_judge_counts", "add_line_spend", "add_judge_tally", "agent_raised", "judge_block_with", "judge_oversized",
           "judge_refused", "refusal_line", "standing_judge_counts", "standing_judge_tally", "sum_usage", "transient_failure", "worker_died"]

# The prefix of `judge_final`'s keys counting the standing judge failures of one error kind (`add_judge_counts`).
KIND = "error_kind:"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def add_line_spend(into: dict[str, int], result: CaseResult) -> None:
    """Add what one result line says the judge spent to `into` (a journal's `judge_spent`: `input_tokens`,
    `output_tokens`, `requests`, `answered`): every line the run wrote counts, a superseded one too, as it was paid."""
    for score in result.scores.values():
        info = score.judge
        if info is not None and not info.cached:
            into["input_tokens"] += info.input_tokens
            into["output_tokens"] += info.output_tokens
            into["requests"] += info.requests
            if score.value is not None:
                into["answered"] += info.requests - info.cached_requests


def transient_failure(result: CaseResult) -> bool:
    """Whether `result` counts against its (case, trial)'s `run.max_resume_retries`: a judge, target or quota failure,
    or a result whose worker process died (a budget skip or a torn last line is redone without counting)."""
    if result.status is Status.skipped_budget or (result.error is not None and result.error.kind == UNTERMINATED_LINE):
        return False
    return result.status.value in RETRYABLE_STATUSES or (result.error is not None and result.error.kind == WORKER_ERROR)


def sum_usage(segments: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Stage usage counters summed over segments: `{stage: {counter: total}}`."""
    total: dict[str, dict[str, float]] = {}
    for seg in segments:
        for stage, counters in (seg.get("usage") or {}).items():
            into = total.setdefault(stage, {})
            for k, v in counters.items():
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    into[k] = into.get(k, 0) + v
    return total


_BAD_REPLY = '"message":"invalid reply: '  # (how a result line writes such an error's message: no space after the colon)


def agent_raised(lines: Iterable[str]) -> list[str]:
    """The error messages of the `target_error` result lines whose agent raised an exception or replied with what
    cannot be read (`invalid reply: …`, `target.protocol.coerce_reply`: a python agent returning `42`): bugs in the
    agent, not transient failures. The target keeps the agent's traceback in `error.details` only for the first."""
    out = []
    for line in lines:
        if '"traceback"' not in line and _BAD_REPLY not in line:  # (most lines: no parse)
            continue
        try:
            body = json.loads(line)
            error = body["error"]
            message = str(error.get("message") or "")
            if body.get("status") == "target_error" and ((error.get("details") or {}).get("traceback") or message.startswith("invalid reply: ")):
                out.append(message)
        except (ValueError, KeyError, TypeError, AttributeError):
            continue
    return out


def worker_died(lines: Iterable[str]) -> int:
    """How many of the result lines ended because the worker process scoring them died (error kind `worker_error`,
    `records.WORKER_ERROR`): retried like a transient failure, but no judge, target or provider failed."""
    n = 0
    for line in lines:
        if WORKER_ERROR not in line:  # (most lines: no parse)
            continue
        try:
            n += json.loads(line)["error"]["kind"] == WORKER_ERROR  # (not a case's own metadata that says it)
        except (ValueError, KeyError, TypeError):
            continue
    return n


# How a judge model's refusal reads in a score's reason: `llm.wire.read` names a 2xx reply that is one (Anthropic
# `stop_reason: "refusal"`, an OpenAI message's `refusal`, `finish_reason: "content_filter"`; a batch's refused request too).
# A content filter's HTTP 400 is one as well (the README says them alike): a 400 whose reason names the filter
# (`llm.replies.CONTENT_FILTER`).
REFUSED = "the model refused to judge this request"


def refusal_line(line: str | bytes) -> bool:
    """Whether a result line may hold a refusal (`judge_refused` decides): a cheap test that most lines fail."""
    text = line if isinstance(line, str) else line.decode(errors="replace")
    if REFUSED in text:
        return True
    if '"http_status":400' not in text:
        return False
    from tracejudge.llm.replies import CONTENT_FILTER  # (here: a run that refused nothing never imports the replies' rules)

    return any(w in text.lower() for w in CONTENT_FILTER)


def _refused(score: dict[str, Any]) -> bool:
    reason = str(score.get("reason") or "")
    if REFUSED in reason:
        return True
    details = score.get("details") or {}
    if details.get("http_status") != 400:
        return False
    from tracejudge.llm.replies import CONTENT_FILTER

    return any(w in reason.lower() for w in CONTENT_FILTER)


def judge_refused(lines: Iterable[str]) -> int:
    """How many of the result lines ended `judge_error` because the judge model refused to judge them: every score the
    judge failed is a refusal (`REFUSED`, or a content filter's HTTP 400). Retried like a transient failure, but a refusal
    is the judge's answer: the same prompt asked again is most likely refused again."""
    n = 0
    for line in lines:
        if not refusal_line(line):  # (most lines: no parse)
            continue
        try:
            body = json.loads(line)
            failed = [s for s in body["scores"].values()
                      if isinstance(s, dict) and s.get("value") is None and (s.get("details") or {}).get("error_kind")]
            n += body.get("status") == "judge_error" and bool(failed) and all(_refused(s) for s in failed)
        except (ValueError, KeyError, TypeError, AttributeError):
            continue
    return n


# The judge error kinds of a request too large for the server (`stages.judge.calls.outcome.error_kind`): a prompt longer
# than its context, a body over its (or a proxy's) size limit. Retried on resume, but the same request is refused again
# until that limit or judge.context_tokens changes: not a transient failure.
OVERSIZED = ("context_exceeded", "body_too_large")


def judge_oversized(lines: Iterable[str]) -> dict[str, int]:
    """How many of the result lines ended `judge_error` because the judge server refused their request as too large, by
    error kind (`OVERSIZED`: each result under its first failed score's kind; a result failed for another reason too,
    a timeout say, is not counted, as a resume may answer it). `{}` when none."""
    out: dict[str, int] = {}
    for line in lines:
        if not any(kind in line for kind in OVERSIZED):  # (most lines: no parse)
            continue
        try:
            body = json.loads(line)
            kinds = [s["details"]["error_kind"] for s in body["scores"].values()
                     if isinstance(s, dict) and s.get("value") is None and isinstance(s.get("details"), dict) and s["details"].get("error_kind")]
            if body.get("status") == "judge_error" and kinds and all(k in OVERSIZED for k in kinds):
                out[kinds[0]] = out.get(kinds[0], 0) + 1
        except (ValueError, KeyError, TypeError, AttributeError):
            continue
    return out


def _judge_gate_counts(result: CaseResult) -> tuple[int, int]:
    """(judged, judge error) of one result, as the judge stage counts them.

    A result went through the judge when a score carries judge provenance
    or it ended at the judge (`judge_error`, `rate_limited`, `skipped_budget`);
    it is a judge error when it ended `judge_error` or `rate_limited`.
    """
    status = result.status.value
    error = status in ("judge_error", "rate_limited")
    judged = error or status == "skipped_budget" or any(s.judge is not None for s in result.scores.values())
    return int(judged), int(error)


def _item_counts(result: CaseResult) -> tuple[int, int]:
    """(judged scores, those left without a usable verdict: `parse_error` or `truncated`) of one result.

    Per item, not per attempt: the summary's `parse_failure_rate` divides them, the same grouped or not.
    """
    judged = [s for s in result.scores.values() if s.judge is not None]
    return len(judged), sum((s.details or {}).get("error_kind") in ("parse_error", "truncated") for s in judged)


def _group_counts(result: CaseResult) -> tuple[int, int]:
    """(1 when the judge itself answered the result's grouped request, else 0; its metrics re-asked alone with a request sent).

    From each score's `details.group` (`tracejudge.stages.judge.grouped`) and `judge` block: a grouped score whose
    `judge` block is not cached and holds billed tokens had its request answered by the judge, unless the request got
    no answer (`details.error_kind`: a timeout is billed at its estimated input all the same); a grouped answer from
    the cache, a budget skip or a refused request (no tokens billed) is not an answered one, and a re-ask the cache
    answered was not sent. Counted over standing results, so a resume, a kill or a redone line counts each
    (case, trial) once.
    """
    grouped = alone = 0
    for s in result.scores.values():
        g = s.details.get("group") if isinstance(s.details, dict) else None
        if not isinstance(g, dict):
            continue
        paid = s.judge is not None and not s.judge.cached
        if g.get("alone"):
            # (a metric whose own prompt did not fit either, or whose request the budget refused, was not sent: no request)
            alone += paid and s.judge.requests > 0  # type: ignore[union-attr]
        else:
            answered = "error_kind" not in s.details  # (a grouped request that failed as a whole marks every score so)
            grouped |= paid and answered and s.judge.input_tokens + s.judge.output_tokens > 0  # type: ignore[union-attr]
    return int(grouped), alone


def _has_usage(usage: dict[str, dict[str, float]]) -> bool:
    return any(v for counters in usage.values() for v in counters.values())


def _failure_kinds(result: CaseResult) -> list[str]:
    """The error kind of each judge score of `result` left without a verdict by a judge failure, one per score.

    The judge marks such a score with `details.error_kind` (a request that got no answer, or a verdict that stayed
    unusable): the same failures its `judge_errors` and `error_kinds` counters count, here per (case, trial, metric).
    """
    kinds = []
    for s in result.scores.values():
        kind = s.details.get("error_kind") if s.value is None and isinstance(s.details, dict) else None
        if isinstance(kind, str):
            kinds.append(kind)
    return kinds


def add_judge_counts(into: dict[str, int], result: CaseResult) -> None:
    """Add the judge counts of one standing `result` to `into` (the journal's `judge_final` shape, `standing_judge_counts`).

    The judge failures go in as `judge_errors` and one `KIND + kind` key per error kind (flat, so the checkpoint holds
    integers only), and only when there are any: a run without them keeps the counts it always had.
    """
    judged, error = _judge_gate_counts(result)
    into["judged_results"] = into.get("judged_results", 0) + judged
    into["judge_error_results"] = into.get("judge_error_results", 0) + error
    items, unparsed = _item_counts(result)
    into["judged_items"] = into.get("judged_items", 0) + items
    into["parse_failed_items"] = into.get("parse_failed_items", 0) + unparsed
    grouped, alone = _group_counts(result)
    into["grouped_requests"] = into.get("grouped_requests", 0) + grouped
    into["parts_reasked_alone"] = into.get("parts_reasked_alone", 0) + alone
    for kind in _failure_kinds(result):
        into["judge_errors"] = into.get("judge_errors", 0) + 1
        into[KIND + kind] = into.get(KIND + kind, 0) + 1


def standing_judge_counts(final: dict[str, int], provisional: Iterable[str]) -> dict[str, Any]:
    """`{"judged_results", "judge_error_results", "judged_items", "parse_failed_items", "grouped_requests",
    "parts_reasked_alone", "judge_errors", "error_kinds"}`: the `final` counts (the journal's `judge_final`) plus those
    of the `provisional` result lines.

    The first two are what the judge's `max_error_share` gate divides; counted from
    results.jsonl, they are the same whether or not the run was killed, and each
    (case, trial) counts once however many segments asked it (`_group_counts`).
    `judge_errors` and `error_kinds` (`{kind: n}`) count the standing judge scores left without
    a verdict by a judge failure (`_failure_kinds`): a failure a resume retried away is no longer one.
    """
    out = {"judged_items": 0, "parse_failed_items": 0, "grouped_requests": 0, "parts_reasked_alone": 0, "judge_errors": 0, **final}
    for line in provisional:
        if line:  # (empty: superseded, `RunJournal._displace`)
            add_judge_counts(out, CaseResult.model_validate_json(line))
    kinds = {k[len(KIND):]: out.pop(k) for k in [k for k in out if k.startswith(KIND)]}
    return {**out, "error_kinds": dict(sorted(kinds.items()))}


def judge_block_with(block: dict[str, Any], counts: dict[str, Any]) -> dict[str, Any]:
    """The judge stage's summary `block` with `counts` (`standing_judge_counts`) and the share and rate made from them, keys sorted."""
    # (A run killed before its first result has counted nothing: no result, no judge error.)
    block = {"judged_results": 0, "judge_error_results": 0, **block, **counts}
    judged = block["judged_results"]
    block["error_share"] = round(block["judge_error_results"] / judged, 6) if judged else 0.0
    items = block["judged_items"]
    block["parse_failure_rate"] = round(block["parse_failed_items"] / items, 6) if items else 0.0
    if block.get("max_error_share") is not None:
        block["gate_failed"] = block["error_share"] > block["max_error_share"]
    return dict(sorted(block.items()))


def add_judge_tally(tally: Any, result: CaseResult) -> Any:
    """`tally` (a `judge_stats.JudgeTally`, or None before the first) with `result`'s judge samples and panel verdicts
    (`details.samples`, `details.panel`) counted; made at the first result that holds any, else left None."""
    if not any(s.details and ("samples" in s.details or "panel" in s.details) for s in result.scores.values()):
        return tally
    if tally is None:
        from tracejudge.stages.judge.judge_stats import JudgeTally  # (a run without samples or panels never imports it)

        tally = JudgeTally()
    tally.add_result(result)
    return tally


def standing_judge_tally(final: Any, provisional: Iterable[str]) -> Any:
    """The samples and panel counts (`judge_stats.JudgeTally`) of the standing results: `final`'s (None: none) and the
    `provisional` lines' (an empty one was superseded)."""
    from tracejudge.stages.judge.judge_stats import JudgeTally

    tally = final.copy() if final is not None else JudgeTally()
    for line in provisional:
        if line and ('"samples"' in line or '"panel"' in line):
            tally.add_result(CaseResult.model_validate_json(line))
    return tally
