"""Credentials in scores that the built-in reasons' own masking does not reach: custom metrics' scores, tool names.

Built-in metrics mask what they quote from a trace as they build their reasons
(`tracejudge.llm.redact.redact_quoted`, called where the text is cut). Two kinds of
text escaped that:

- a custom metric's reason and details (`@tracejudge.metric` functions, metric
  classes of the user's own), written by code that knows nothing of redaction;
- tool names, which the built-in reasons and details copy as they are (an MCP tool
  named by a URL holding its password, a key pasted where a name belongs), the
  trace's and the case's, and those a metric's config names (`expected_tools`, …:
  `config_keys`, decided once per list of metrics).

`mask_scores` passes the scores of custom metrics through `redact_quoted` always,
and every score of a case whose tool names hold a credential. Built-in reasons get
no second pass otherwise: whether a case's names are clean is one set lookup per
name (`_CLEAN` holds the names already seen clean), so the common case costs a few
tens of nanoseconds per call.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import lru_cache
from operator import attrgetter
from typing import Any

from tracejudge.core.memo import SeenSet
from tracejudge.core.records import Case, Score
from tracejudge.llm.redact import quoted_clean, redact, redact_data, redact_details, redact_quoted

__all__ = ["config_keys", "custom_keys", "mask_echoes", "mask_scores", "masked"]

_NAME = attrgetter("name")
_CLEAN: SeenSet[str] = SeenSet()  # tool names seen to hold no credential (`core.memo`: bounded, per process)


@lru_cache(maxsize=256)
def _is_custom(cls: type) -> bool:
    # A metric class defined outside tracejudge (a decorated function's class takes the function's module).
    return not (cls.__module__ == "tracejudge" or cls.__module__.startswith("tracejudge."))


def custom_keys(metrics: Sequence[Any], keys: Sequence[str]) -> tuple[str, ...]:
    """The keys (of `keys`, one per metric of `metrics`) whose metric is a custom one, in order."""
    return tuple(key for key, m in zip(keys, metrics) if _is_custom(type(m)))


# A built-in metric's parameters that name tools: its reasons quote them as they are (`names_repr`, `render_call`).
_NAME_PARAMETERS = ("expected_tools", "expected_trajectory", "include_tools", "exclude_tools")


def config_keys(metrics: Sequence[Any], keys: Sequence[str]) -> tuple[str, ...]:
    """The keys (of `keys`, one per metric of `metrics`) of the built-in metrics whose configured tool names hold a
    credential: their scores are masked as a custom metric's are (`mask_scores`). Computed once per list of metrics
    (`stages.score._keys`); a configured name seen clean before costs a set lookup."""
    out = []
    for key, m in zip(keys, metrics):
        params = getattr(m, "__dict__", None)
        if not params or _is_custom(type(m)):
            continue
        if any(params.get(p) and not _names_clean(params[p]) for p in _NAME_PARAMETERS):
            out.append(key)
    return tuple(out)


def _names_clean(names: Iterable[str]) -> bool:
    """True when no name of `names` holds a credential (each is what `redact_quoted` leaves as it is)."""
    for name in names:
        if name in _CLEAN:
            continue
        if type(name) is str and redact_quoted(name) != name:
            return False
        _CLEAN.remember_one(name)
    return True


def masked(score: Any) -> Any:
    """`score` with its reason, and the strings and keys of its details, passed through `redact_quoted`; a string in
    its details under a key that names a credential is masked whole (`redact_details`).

    The same object when nothing was masked; anything that is not a `Score` is returned as it is.
    """
    if not isinstance(score, Score):
        return score
    reason = redact_quoted(score.reason) if score.reason else score.reason
    details = redact_details(score.details) if score.details else score.details
    if reason == score.reason and details == score.details:
        return score
    return score.model_copy(update={"reason": reason, "details": details})


def mask_scores(scores: dict[str, Any], case: Case, custom: Sequence[str], calls: Sequence[Any] | None = None) -> None:
    """Mask, in place, the scores of the `custom` keys, and every score when the case's tool names hold a credential.

    `calls`: the trace's tool calls when the caller has them (`CaseViews.calls`), else they are read from the trace.
    """
    if calls is None:
        calls = [c for step in case.trace.steps for c in step.tool_calls] if case.trace is not None else []
    expected = case.expected_tool_calls
    # Every name seen clean before (the common case, in C), else each new one is looked at.
    if _CLEAN.issuperset(map(_NAME, calls)) and (not expected or _CLEAN.issuperset(map(_NAME, expected))):
        if not custom:
            return  # (built-in metrics alone, names clean: nothing to mask)
    elif not (_names_clean(map(_NAME, calls)) and _names_clean(map(_NAME, expected or ()))):
        custom = list(scores)
    # A score with a reason and no details (most custom scores) needs masking only when its reason holds a credential's
    # hint: the reasons are searched together, once a case, instead of once a score (`masked` each cost more than the
    # rest of scoring a case with six quick metrics). Every other score, and all when a hint is found, go through `masked`.
    reasons: list[str] = []
    rest: list[str] = []
    for key in custom:
        score = scores.get(key)
        if type(score) is Score and not score.details and type(score.reason) is str:
            reasons.append(score.reason)
        elif key in scores:
            rest.append(key)
    if reasons and not quoted_clean(reasons):
        rest = [key for key in custom if key in scores]
    for key in rest:
        scores[key] = masked(scores[key])


def mask_echoes(scores: dict[str, Any], secrets: Sequence[str]) -> None:
    """Mask, in place, every exact value of `secrets` (a live target's `${NAME}` values and their JSON-escaped spellings,
    `stages.target.scrub.echo_forms`) in the scores' reasons, details and detail keys.

    The scores of a live agent's unmasked trace (`core.work.AGENT_TRACE`) quote what it sent: a secret that has no
    credential's shape (a plain word passed on the agent's command line) passes `redact_quoted`, so it is masked here
    by value. Only a score that holds one is copied.
    """
    secrets = [s for s in secrets if s and len(s) >= 4]
    if not secrets:
        return
    for key, score in scores.items():
        if not isinstance(score, Score):
            continue
        reason = redact(score.reason, secrets) if any(s in score.reason for s in secrets) else score.reason
        details = redact_data(score.details, secrets, only_with_secret=True, keys=True) if score.details else score.details
        if reason != score.reason or details != score.details:
            scores[key] = score.model_copy(update={"reason": reason, "details": details})
