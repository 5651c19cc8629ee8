"""`tracejudge compare --judge` counts the pairs judged in both orders in the singular for one: "1 pair judged in both
orders" (it printed "1 pairs")."""

from __future__ import annotations

import pytest
from rich.console import Console
from tracejudge.stages.comparison.pairwise import PairwiseResult, print_pairwise


@pytest.mark.parametrize(("pairs", "said"), [(0, "0 pairs"), (1, "1 pair"), (2, "2 pairs")])
def test_the_pairs_judged_in_both_orders_are_counted_in_the_singular_for_one(pairs: int, said: str) -> None:
    res = PairwiseResult("a", "b", pairs=pairs, ties=pairs, win_rate=0.5 if pairs else None, win_rate_ci=[0.5, 0.5] if pairs else None,
                         win_rate_ci_informative=False if pairs else None, win_rate_ci_why="every pair is a tie" if pairs else None,
                         cases=pairs, flipped=0, first_shown_win_rate=0.5 if pairs else None)
    console = Console(record=True, width=200)
    print_pairwise(res, console)
    first = console.export_text().splitlines()[0]
    assert first == f"pairwise: A a vs B b; {said} judged in both orders", first
