"""A breakdown by a metadata key no result has: a warning naming it and the nearest key results do have.

`aggregate.group_by: [rewrd]` (a typo of `reward`) is valid config and breaks every metric down into
one `(missing)` group: nothing says the key is wrong. After a run it is checked once, from the summary
and, only then, the metadata keys of the first results (the fold itself stays as it is).
"""

from __future__ import annotations

from itertools import islice
from pathlib import Path
from typing import Any

from tracejudge.core import suggest
from tracejudge.core.errors import TracejudgeError
from tracejudge.core.log import get_logger
from tracejudge.engine import store
from tracejudge.stages.aggregate.group_labels import MISSING

__all__ = ["absent_group_keys", "warn_absent_group_keys"]

_SAMPLE = 1000  # results whose metadata keys are offered as the nearest key

log = get_logger("tracejudge.aggregate")


def absent_group_keys(summary: dict[str, Any], group_by: list[str]) -> list[str]:
    """The `group_by` keys whose breakdown in `summary` is only the `(missing)` group (none when there are no results)."""
    if not summary.get("results"):
        return []
    breakdowns = summary.get("breakdowns") or {}
    return [name for name in group_by if set(breakdowns.get(f"metadata.{name}") or {MISSING: None}) <= {MISSING}]


def warn_absent_group_keys(run_dir: Path, summary: dict[str, Any], group_by: list[str]) -> list[str]:
    """Log one warning per `group_by` key no result has, suggesting the nearest metadata key results have; returns the messages."""
    absent = absent_group_keys(summary, group_by)
    if not absent:
        return []
    present: set[str] = set()
    try:
        for res in islice(store.iter_results(run_dir), _SAMPLE):
            if isinstance(res.get("metadata"), dict):
                present.update(res["metadata"])
    except (OSError, ValueError, TracejudgeError):
        pass  # the suggestion is a courtesy: the warning stands without it
    messages = []
    for name in absent:
        near = suggest.closest(name, present - set(group_by), 1)
        hint = f"; did you mean {near[0]!r}?" if near else (f"; metadata keys results have: {', '.join(sorted(present)[:10])}" if present else "")
        msg = f"aggregate.group_by: no result has the metadata key {name!r}, so its breakdown is one {MISSING} group{hint}"
        log.warning(msg)
        messages.append(msg)
    return messages
