"""Known flaws the judge simulator can be given, so tests can measure what tracejudge reports against a known truth.

All three are deterministic functions of the seed and the request (and, for
`noise`, how many times the same request was asked before), so a test can
predict their rates exactly:

- **truth and `agreement`** p: the simulator's *truth* for an answer is the
  verdict it gives with no flaws (a hash of the seed, the request's first
  fenced data tag and the answer's place: a question id such as `TC1`, an
  item id, or for a single verdict such as a Rubric's grade the evaluation
  asked after the data — never the model, so a panel of simulator models
  without flaws is unanimous, on grades too); with `agreement` p each answer equals the truth with probability
  p and is the opposite otherwise (a yes/no answer flipped; a grade moved to
  the mirror grade, `lowest + highest − grade`). The choice is fixed per
  answer (a hash, not a draw), so asking again gives the same wrong answer:
  the judge's systematic error. Labels for a calibration test are the
  verdicts of a run with no flaws.
- **`noise`** q (one number for every model, or `{model: q, "*": q}`, a
  model written bare, `a`, or as the config names a panel member,
  `simulator:a`): every answer is flipped with probability q, decided by a
  hash of the seed, the model, the answer's place and the *occurrence* — the
  how-many-th time the simulator sees this exact request body — so repeated
  samples of one request (`judge.samples`) differ as a model at temperature
  > 0 does, and the models of a panel differ from each other. A pairwise
  grade is flipped too (to its mirror: 1 ↔ 3, 2 stays 2), by a hash of the
  seed, the model, both tags in order and the occurrence.
- **`position_bias`** b, for pairwise requests (`tracejudge.stages.comparison.pairwise`:
  a user message with the line `Evaluation: PairwiseComparison …`, graded
  1 = the first run better, 2 = equal, 3 = the second): the two fenced trajectories each
  get a quality (a hash of the seed and the block's tag, so it does not
  depend on the order); the better one wins, a tie within 0.05. With
  probability b (a hash of the seed, both tags in order and the occurrence)
  the answer is `first` whatever the qualities: the bias that asking in both
  orders cancels. Then `noise` (above) may flip the answer, as any other;
  `agreement` does not apply to pairwise requests.

Multi-item requests (`items_per_request` > 1) get their verdicts as before, without flaws.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

__all__ = ["Flaws", "bare_model", "is_pairwise", "preference"]

_PAIRWISE = re.compile(r"(?m)^Evaluation: PairwiseComparison ")
_TAGS = re.compile(r"==== DATA (\w+) BEGIN ====")


def bare_model(name: str) -> str:
    """`name` without a `simulator:` prefix (any case): the model name the simulator's requests carry."""
    prefix, colon, rest = name.partition(":")
    return rest if colon and prefix.lower() == "simulator" else name


def _u(*parts: object) -> float:
    """A uniform number in [0, 1) from a hash of `parts`."""
    return int(hashlib.sha256(":".join(map(str, parts)).encode()).hexdigest()[:13], 16) / float(1 << 52)


class Flaws:
    """The flaws of one simulator (`seed`, `agreement`, `noise`, `position_bias`; see the module doc) and its occurrence counts."""

    def __init__(self, seed: int, agreement: float = 1.0, noise: float | dict[str, float] = 0.0, position_bias: float = 0.0) -> None:
        self.seed = seed
        self.agreement = agreement
        # Keys as a config writes panel members (`simulator:a`) mean the model the requests name (`a`).
        self.noise = {bare_model(k): v for k, v in noise.items()} if isinstance(noise, dict) else noise
        self.position_bias = position_bias
        self._seen: dict[bytes, int] = {}

    @property
    def active(self) -> bool:
        return self.agreement < 1.0 or bool(self.noise) or self.position_bias > 0

    def noise_for(self, model: str) -> float:
        """The flip probability of `model`."""
        if isinstance(self.noise, dict):
            return float(self.noise.get(model, self.noise.get("*", 0.0)))
        return float(self.noise)

    def occurrence(self, digest: bytes) -> int:
        """How many times the request with `digest` was answered before (counted only when flaws are on)."""
        n = self._seen.get(digest, 0)
        self._seen[digest] = n + 1
        return n

    def apply(self, verdict: Any, model: str, tag: str, occurrence: int) -> Any:
        """`verdict` (any judge verdict object) with its yes/no answers and grades passed through the flaws."""
        if not (self.agreement < 1.0 or self.noise_for(model) > 0):
            return verdict
        return self._walk(verdict, model, tag, occurrence, "", None)

    def _flip(self, model: str, tag: str, place: str, occurrence: int) -> bool:
        wrong = _u(self.seed, "agree", tag, place) >= self.agreement
        noisy = _u(self.seed, "noise", model, tag, place, occurrence) < self.noise_for(model)
        return wrong != noisy

    def _walk(self, node: Any, model: str, tag: str, occ: int, place: str, bounds: tuple[int, int] | None) -> Any:
        if isinstance(node, list):
            return [self._walk(v, model, tag, occ, f"{place}/{v.get('id', i) if isinstance(v, dict) else i}", bounds) for i, v in enumerate(node)]
        if not isinstance(node, dict):
            return node
        out = {k: self._walk(v, model, tag, occ, f"{place}/{k}", bounds) for k, v in node.items()}
        if out.get("answer") in ("yes", "no") and self._flip(model, tag, place, occ):
            out["answer"] = "no" if out["answer"] == "yes" else "yes"
        if isinstance(out.get("score"), int) and bounds is not None and self._flip(model, tag, place, occ):
            out["score"] = bounds[0] + bounds[1] - out["score"]
        return out

    def apply_graded(self, verdict: Any, model: str, tag: str, occurrence: int, bounds: tuple[int, int]) -> Any:
        """`apply` for a verdict holding an integer `score` on the scale `bounds` (a Rubric)."""
        if not (self.agreement < 1.0 or self.noise_for(model) > 0):
            return verdict
        return self._walk(verdict, model, tag, occurrence, "", bounds)


def is_pairwise(texts: list[str]) -> bool:
    """Whether the user message(s) `texts` ask a pairwise comparison (after the last fenced data, so a trace cannot pose as one)."""
    return any(_PAIRWISE.search(t.rsplit(" END ====", 1)[-1]) for t in texts)


def preference(flaws: Flaws, texts: list[str], occurrence: int, model: str = "") -> dict[str, Any]:
    """The verdict of `model` on a pairwise request whose user message(s) `texts` hold two fenced trajectories (see the
    module doc): `{"score": 1 | 2 | 3, "reason"}`."""
    tags = [m for t in texts for m in _TAGS.findall(t)][:2]
    if len(tags) < 2:
        return {"score": 2, "reason": "simulated: fewer than two runs to compare"}
    verdict = _preferred(flaws, tags, occurrence)
    # Noise after the bias, as on any answer: without it a panel's members and a request's samples always agree here.
    if verdict["score"] != 2 and _u(flaws.seed, "noise", model, "pairwise", tags[0], tags[1], occurrence) < flaws.noise_for(model):
        return {"score": 4 - verdict["score"], "reason": verdict["reason"] + " (flipped by noise)"}
    return verdict


def _preferred(flaws: Flaws, tags: list[str], occurrence: int) -> dict[str, Any]:
    """The pairwise verdict on the runs fenced as `tags` (in the order shown) before noise: quality, or position bias."""
    first, second = (_u(flaws.seed, "quality", t) for t in tags)
    if _u(flaws.seed, "position", tags[0], tags[1], occurrence) < flaws.position_bias:
        return {"score": 1, "reason": "simulated: the first run shown (position bias)"}
    if abs(first - second) < 0.05:
        return {"score": 2, "reason": "simulated: equally good"}
    return {"score": 1 if first > second else 3, "reason": f"simulated qualities {first:.2f} vs {second:.2f}"}
