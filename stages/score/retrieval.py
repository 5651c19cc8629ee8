"""`RetrievalRecall`, `RetrievalPrecision`, `RetrievalMRR`: did retrieval surface the expected passages?

Source: cogitator evals `retrievalRecall()` / `retrievalPrecision()` /
`retrievalMRR()` (docs: cogitator.app/docs/evals/agents, "Retrieval").
"""

from __future__ import annotations

from tracejudge.core.records import Case, Passage, Score
from tracejudge.core.registry import register_metric
from tracejudge.llm.redact import redact_quoted
from tracejudge.stages.score.base import Metric, no_expectation, no_trace

__all__ = ["RetrievalMRR", "RetrievalPrecision", "RetrievalRecall", "passage_matches"]

_MIN_CONTAINED_WORDS = 3


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def passage_matches(expected: str, passage: Passage) -> bool:
    """Does a retrieved `passage` match an `expected` passage (an id or a text)?

    Cogitator's rule: equal `id`; or equal text once case and whitespace are
    normalized; or one normalized text contains the other *and the contained
    one has at least three words* — so a short id or a single word never
    matches every passage that happens to hold it.
    """
    if passage.id is not None and passage.id == expected:
        return True
    want, have = _norm(expected), _norm(passage.content)
    if not want or not have:
        return False
    if want == have:
        return True
    if want in have:
        return len(want.split(" ")) >= _MIN_CONTAINED_WORDS
    if have in want:
        return len(have.split(" ")) >= _MIN_CONTAINED_WORDS
    return False


class _RetrievalMetric(Metric):
    """Shared edge cases: no expectation → null; expected `[]` → 1 iff nothing retrieved."""

    def _inputs(self, case: Case) -> tuple[list[str], list[Passage]] | Score:
        if case.trace is None:
            return no_trace()
        if case.expected_passages is None:
            return no_expectation("expected_passages")
        expected, retrieved = case.expected_passages, case.trace.retrieved
        if not expected:
            if not retrieved:
                return self.verdict(1.0, "no passage expected and none retrieved", {"matched": []})
            return self.verdict(0.0, f"no passage expected, but {len(retrieved)} retrieved", {"matched": []})
        return expected, retrieved


def _label(p: Passage, rank: int) -> str:
    return f"#{rank} " + (repr(p.id) if p.id is not None else repr(redact_quoted(p.content, 60)[:60]))


@register_metric
class RetrievalRecall(_RetrievalMetric):
    """Share of the expected passages that some retrieved passage matches (`passage_matches`).

    Edge cases: no `expected_passages` → `value: null` (cogitator scores 0
    with "no expected passages provided"; we keep it out of the mean); expected
    `[]` → 1.0 iff nothing was retrieved, else 0.0; expected but nothing
    retrieved → 0.0. A duplicated expected passage counts twice; one retrieved
    passage may match several expected ones. `details.missing` lists the
    indices of expected passages no retrieved passage matches.
    """

    def evaluate(self, case: Case) -> Score:
        got = self._inputs(case)
        if isinstance(got, Score):
            return got
        expected, retrieved = got
        found = [any(passage_matches(e, p) for p in retrieved) for e in expected]
        k = sum(found)
        missing = [i for i, f in enumerate(found) if not f]
        reason = f"{k}/{len(expected)} expected passages retrieved (from {len(retrieved)} retrieved)"
        if missing:
            reason += "; missing: " + "; ".join(repr(redact_quoted(expected[i], 60)[:60]) for i in missing[:5])
        return self.verdict(k / len(expected), reason, {"missing": missing})


@register_metric
class RetrievalPrecision(_RetrievalMetric):
    """Share of the retrieved passages that match some expected passage.

    Edge cases as `RetrievalRecall`; expected but nothing retrieved → 0.0.
    `details.irrelevant` lists the (0-based) ranks of retrieved passages that
    match nothing expected.
    """

    def evaluate(self, case: Case) -> Score:
        got = self._inputs(case)
        if isinstance(got, Score):
            return got
        expected, retrieved = got
        if not retrieved:
            return self.verdict(0.0, f"nothing retrieved; {len(expected)} passage(s) expected", {"irrelevant": []})
        relevant = [any(passage_matches(e, p) for e in expected) for p in retrieved]
        k = sum(relevant)
        irrelevant = [i for i, r in enumerate(relevant) if not r]
        reason = f"{k}/{len(retrieved)} retrieved passages match an expected one"
        if irrelevant:
            reason += "; irrelevant: " + ", ".join(_label(retrieved[i], i + 1) for i in irrelevant[:5])
        return self.verdict(k / len(retrieved), reason, {"irrelevant": irrelevant})


@register_metric
class RetrievalMRR(_RetrievalMetric):
    """Reciprocal rank: 1 / rank of the first retrieved passage matching an expected one, 0 if none.

    Ranks are 1-based in the order passages came (tool result after tool
    result). Edge cases as `RetrievalRecall`. `details.rank` is the rank
    found (`null` when none matches).
    """

    def evaluate(self, case: Case) -> Score:
        got = self._inputs(case)
        if isinstance(got, Score):
            return got
        expected, retrieved = got
        for rank, p in enumerate(retrieved, 1):
            if any(passage_matches(e, p) for e in expected):
                return self.verdict(1.0 / rank, f"first relevant passage at rank {rank}: {_label(p, rank)}", {"rank": rank})
        return self.verdict(0.0, f"none of the {len(retrieved)} retrieved passages matches an expected one", {"rank": None})
