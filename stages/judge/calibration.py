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

Each compared score also carries `details.calibration` with the alone
value and the questions that agreed.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tracejudge.core.judge_modes import CalibrationConfig

if TYPE_CHECKING:
    from tracejudge.stages.judge.client import Outcome

__all__ = ["Calibration"]

_COUNTS = ("items", "not_compared", "questions", "agreed_questions", "equal_values")


@dataclass
class _Tally:
    items: int = 0
    not_compared: int = 0
    questions: int = 0
    agreed_questions: int = 0
    equal_values: int = 0
    abs_diff_sum: float = 0.0


def _answer(a: Any) -> Any:
    return a.get("answer", a.get("score")) if isinstance(a, dict) else a


class Calibration:
    """The sample and the tallies of one run segment (`cfg` `None`: nothing is sampled)."""

    def __init__(self, cfg: CalibrationConfig | None) -> None:
        self.cfg = cfg
        self.tallies: dict[str, _Tally] = {}

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
        ba, aa = (b.details or {}).get("answers") or {}, (a.details or {}).get("answers") or {}
        qids = sorted(set(ba) | set(aa))
        agreed = [q for q in qids if _answer(ba.get(q)) == _answer(aa.get(q))]
        t.items += 1
        t.questions += len(qids)
        t.agreed_questions += len(agreed)
        t.equal_values += int(abs(b.value - a.value) < 1e-9)
        t.abs_diff_sum += abs(b.value - a.value)
        return {"alone_value": a.value, "agreed": agreed, "questions": len(qids)}

    def summary(self, prior: dict[str, Any] | None = None) -> dict[str, Any]:
        """Per metric: the counts (added to an earlier segment's `prior` block) and the shares."""
        out: dict[str, Any] = {}
        for metric in sorted(set(self.tallies) | set(prior or {})):
            t = self.tallies.get(metric, _Tally())
            p = (prior or {}).get(metric) or {}
            counts = {k: getattr(t, k) + int(p.get(k, 0)) for k in _COUNTS}
            diff = t.abs_diff_sum + float(p.get("abs_diff_sum", 0.0))
            out[metric] = {
                **counts,
                "abs_diff_sum": round(diff, 6),
                "question_agreement": round(counts["agreed_questions"] / counts["questions"], 6) if counts["questions"] else None,
                "value_agreement": round(counts["equal_values"] / counts["items"], 6) if counts["items"] else None,
                "mean_abs_diff": round(diff / counts["items"], 6) if counts["items"] else None,
            }
        return out
