"""Is a checkpoint that validates also plausible? Cheap checks of its values against `results.jsonl`.

`checkpoint.json` is a cache: its fields are typed (`CheckpointFile`), but a
value can validate and still be absurd — a count of 10³⁰ results, a segment
whose `segment` is text, 50,000 provisional entries for a file of 300 lines.
Trusting one would change the summary without a word or crash every resume.
`implausible` compares what the checkpoint claims with what it covers — the
number of result lines, the keys in `results.idx` — in time linear in the
checkpoint's own size; the caller rebuilds from `results.jsonl` when it
returns a reason.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from tracejudge.core.records import CaseResult
from tracejudge.engine.journal_counts import KIND
from tracejudge.engine.keyset import KeySet, result_key

__all__ = ["implausible", "typed_segments"]

# Aggregate fields that are sizes or positions, not counts of results (so not bounded by the line count); `ks`: the k of
# pass@k / pass^k trackers (pass^4 over recorded trials is tracked from a first checkpoint holding one result line).
_NOT_COUNTS = frozenset({"format", "reservoir_size", "size", "next_at", "ks"})


class _Segment(BaseModel):
    """One segment record, typed as `RunJournal` writes it (other keys are kept as they are)."""

    model_config = ConfigDict(extra="allow", strict=True, defer_build=True)  # built on first use: by a resume only

    segment: int = Field(ge=0)
    started_at: str | None = None
    elapsed_s: float | int | None = Field(default=None, ge=0)
    results: int = Field(ge=0)
    ended: str
    usage: dict[str, dict[str, float | int | bool | str | None]] = {}


def _counts(node: Any, key: str = "") -> Any:
    # Every integer count in the aggregate's state, with its key.
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _counts(v, k)
    elif isinstance(node, list):
        for v in node:
            yield from _counts(v, key)
    elif isinstance(node, int) and not isinstance(node, bool) and key not in _NOT_COUNTS:
        yield key, node


def typed_segments(segments: list[dict[str, Any]]) -> tuple[list[Any], str | None]:
    """`segments` validated as `RunJournal` writes them: `(records, None)`, or `([], why)` when one is mistyped."""
    try:
        return [_Segment.model_validate(s) for s in segments], None
    except ValidationError as exc:
        err = exc.errors()[0]
        return [], f"segments.{'.'.join(map(str, err['loc']))}: {err['msg']}"


# Judge counts per judged item (one metric of one result), not per result line (and those of each error kind, `KIND`...).
_PER_ITEM = frozenset({"judged_items", "parse_failed_items", "parts_reasked_alone", "judge_errors"})


def implausible(cp: Any, done: KeySet) -> str | None:
    """Why checkpoint `cp` (a validated `CheckpointFile`) cannot be true of the results it covers, or None.

    `done` holds the keys of the first `cp.results_lines` lines (from `results.idx`).
    Checked: every count in the aggregate and the judge's gate counts are at most the
    number of result lines (per-item judge counts at least 0, parse failures at most
    the judged items); segments are typed and their results add up to at most
    that; the provisional and failure maps have at most one entry per line, each for
    a key in the index, and each provisional line is a result of its own key.
    """
    lines = cp.results_lines
    for key, n in _counts(cp.aggregator):
        if n > lines:
            return f"aggregator: {key} = {n} exceeds the {lines} result lines the checkpoint covers"
    for name, block in (("judge_final", cp.judge_final), ("failures", cp.failures)):
        for k, n in block.items():
            if k in _PER_ITEM or k.startswith(KIND):  # one per judged metric of a result: up to lines × judge metrics
                if n < 0 or (k == "parse_failed_items" and n > block.get("judged_items", n)):
                    return f"{name}.{k} = {n} is not between 0 and the judged items"
            elif not 0 <= n <= lines:
                return f"{name}.{k} = {n} is not between 0 and the {lines} result lines"
    segments, why = typed_segments(cp.segments)
    if why is not None:
        return why
    if sum(s.results for s in segments) > lines:
        return f"segments: they claim {sum(s.results for s in segments)} results, the checkpoint covers {lines} lines"
    for name, block in (("provisional", cp.provisional), ("failures", cp.failures)):
        if len(block) > lines:
            return f"{name}: {len(block)} entries for {lines} result lines"
        for k in block:
            if not k.isdigit() or int(k) >= 1 << 64 or not done.contains_hash(int(k)):
                return f"{name}: key {k[:24]!r} is not a result in results.idx"
    for k, line in cp.provisional.items():
        if not line:  # a dead worker's result a final one of its place superseded (`RunJournal._displace`)
            continue
        try:
            r = CaseResult.model_validate_json(line)
        except ValueError:
            return f"provisional.{k}: not a result line"
        if result_key(r.case_id, r.trial) != int(k):
            return f"provisional.{k}: the line is a result of another (case, trial)"
    return None
