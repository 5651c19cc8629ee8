"""Calibration: how much do verdicts change when items or metrics share a request?

With `judge.calibration: {fraction, seed}`, a sample of items — those whose
`case|metric|trial` slot hashes (with the seed) below `fraction`, so the
same items on every run — is judged both shared (the score the run keeps:
batched with other cases when `items_per_request` > 1, grouped with the
case's other metrics when `group: case`) and alone, one request for that
metric on that case. Per metric, the summary's `judge.calibration` block gives:

- `items`: items compared (both verdicts usable, the shared one really
  from a shared request); `not_compared`: sampled items where one side
  failed or the shared verdict had to be re-asked alone;
- `question_agreement`: share of questions answered the same (yes/no, or
  the same grade for a Rubric);
- `value_agreement`: share of items whose score value is equal;
  `mean_abs_diff`: mean |batched − alone| score value.

Each sampled item is also judged with the full rendering (a metric's
`trace_format: full`: values as JSON, tool results cut only at 2,000
characters, never shown as an earlier call's), alone, and compared with its
compact rendering judged alone: the effect of the compact trace and its cut
policy. Per metric, `render` holds the same counts and shares for that
comparison, plus `identical_render`: items whose compact rendering equals
the full one, counted as agreeing without a request (so calibration costs
nothing extra for them).

Each compared score also carries `details.calibration` with the alone
value and the questions that agreed, and `full_render`: the full
rendering's value and the questions that agreed, or `{identical: true}`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tracejudge.core.judge_modes import CalibrationConfig

if TYPE_CHECKING:
    from tracejudge.stages.judge.client import Outcome

__all__ = ["Calibration", "answer_of"]

_COUNTS = ("items", "not_compared", "questions", "agreed_questions", "equal_values")
_RENDER_COUNTS = (*_COUNTS, "identical_render")


@dataclass
class _Tally:
    items: int = 0
    not_compared: int = 0
    questions: int = 0
    agreed_questions: int = 0
    equal_values: int = 0
    abs_diff_sum: float = 0.0
    identical_render: int = 0

    def compare(self, kept: Outcome, other: Outcome) -> dict[str, Any]:
        """Tally one item judged both ways (both `ok`, with values); what goes in its `details.calibration`."""
        k, o = kept.score, other.score
        ka, oa = (k.details or {}).get("answers") or {}, (o.details or {}).get("answers") or {}
        qids = sorted(set(ka) | set(oa))
        agreed = [q for q in qids if answer_of(ka.get(q)) == answer_of(oa.get(q))]
        assert k.value is not None and o.value is not None
        self.items += 1
        self.questions += len(qids)
        self.agreed_questions += len(agreed)
        self.equal_values += int(abs(k.value - o.value) < 1e-9)
        self.abs_diff_sum += abs(k.value - o.value)
        return {"value": o.value, "agreed": agreed, "questions": len(qids)}


def answer_of(a: Any) -> Any:
    """A question's answer as compared across verdicts (here, and by samples and panels): `yes`/`no`, or a grade."""
    return a.get("answer", a.get("score")) if isinstance(a, dict) else a


class Calibration:
    """The sample and the tallies of one run segment (`cfg` `None`: nothing is sampled)."""

    def __init__(self, cfg: CalibrationConfig | None) -> None:
        self.cfg = cfg
        self.tallies: dict[str, _Tally] = {}
        self.render: dict[str, _Tally] = {}

    def sampled(self, slot: str) -> bool:
        """Whether the item of `slot` (`case|metric|trial`) is in the sample."""
        if self.cfg is None:
            return False
        h = int(hashlib.sha256(f"{self.cfg.seed}:{slot}".encode()).hexdigest()[:12], 16)
        return h / float(1 << 48) < self.cfg.fraction

    def add(self, metric: str, batched: Outcome, alone: Outcome) -> dict[str, Any] | None:
        """Tally one sampled item; returns what goes in its `details.calibration`, or `None` when not compared."""
        t = self.tallies.setdefault(metric, _Tally())
        b, a = batched.score, alone.score
        composition = (b.details or {}).get("batch") or {}
        grouping = (b.details or {}).get("group") or {}
        if batched.status != "ok" or alone.status != "ok" or b.value is None or a.value is None or composition.get("alone") or grouping.get("alone"):
            t.not_compared += 1
            return None
        got = t.compare(batched, alone)
        return {"alone_value": got.pop("value"), **got}

    def add_render(self, metric: str, compact: Outcome, full: Outcome | None, questions: int) -> dict[str, Any] | None:
        """Tally one sampled item's compact verdict against its full-rendering one (`full` `None`: the two renderings are
        identical, so no request was sent and its `questions` count as agreeing); what goes in `details.calibration.full_render`,
        or `None` when not compared (a side failed)."""
        t = self.render.setdefault(metric, _Tally())
        if full is None:
            t.identical_render += 1
            t.items += 1
            t.questions += questions
            t.agreed_questions += questions
            t.equal_values += 1
            return {"identical": True}
        if compact.status != "ok" or full.status != "ok" or compact.score.value is None or full.score.value is None:
            t.not_compared += 1
            return None
        return t.compare(compact, full)

    def summary(self, prior: dict[str, Any] | None = None) -> dict[str, Any]:
        """Per metric: the shared-vs-alone counts (added to an earlier segment's `prior` block) and shares, and the same
        for compact-vs-full rendering under `render`."""
        out: dict[str, Any] = {}
        for metric in sorted(set(self.tallies) | set(self.render) | set(prior or {})):
            p = (prior or {}).get(metric) or {}
            out[metric] = {**_block(self.tallies.get(metric, _Tally()), p, _COUNTS),
                           "render": _block(self.render.get(metric, _Tally()), p.get("render") or {}, _RENDER_COUNTS)}
        return out


def _block(t: _Tally, p: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """`t`'s counts plus the earlier segment's `p`, and the shares they give (`None` with nothing compared)."""
    counts = {k: getattr(t, k) + int(p.get(k, 0)) for k in keys}
    diff = t.abs_diff_sum + float(p.get("abs_diff_sum", 0.0))
    return {
        **counts,
        "abs_diff_sum": round(diff, 6),
        "question_agreement": round(counts["agreed_questions"] / counts["questions"], 6) if counts["questions"] else None,
        "value_agreement": round(counts["equal_values"] / counts["items"], 6) if counts["items"] else None,
        "mean_abs_diff": round(diff / counts["items"], 6) if counts["items"] else None,
    }
