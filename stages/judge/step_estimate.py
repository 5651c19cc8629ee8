"""The estimates `fit` leaves steps out by: each rendered step's tokens, and the fewest middle steps whose leaving out fits.

The whole prompt is counted once and each step's rendered text once (found in the prompt by its `Step N:` header);
the tokens of a prompt with `omit` steps left out are then the total less those steps' prefix sums plus the omission
marker's, one O(1) estimate per candidate (`fit` confirms the chosen one with a real count).
"""

from __future__ import annotations

import itertools

from tracejudge.llm.judge_tokenizer import Spec, prompt_counter
from tracejudge.stages.judge.trace_text import droppable, kept_head

__all__ = ["MARKER_TOKENS", "estimate", "smallest_omit", "step_tokens"]

MARKER_TOKENS = 32  # the "[steps a–b omitted …]" line that replaces the omitted steps


def step_tokens(text: str, n: int, model: str, turns: bool = False, tokenizer: Spec = None) -> list[int]:
    """Tokens of each rendered step 1..n-1 (the last step is never left out), found by its `Step i:` header.

    With `turns` (a conversation) a step ends where a `User k:` line follows it: the user's turns stay when
    steps are left out, so they are not counted as the step's. A step whose header cannot be found counts 0,
    which only makes the estimate low; the confirming count then corrects it.
    """
    out = [0] * n
    starts: list[int] = []
    pos = 0
    for i in range(1, n + 1):
        at = text.find(f"Step {i}:\n", pos)
        if at < 0:
            break
        starts.append(at)
        pos = at + 1
    for i, (a, b) in enumerate(itertools.pairwise(starts)):
        said = text.find("\nUser ", a, b) if turns else -1
        out[i] = prompt_counter(model, tokenizer).text(text[a : said + 1 if said >= 0 else b])
    return out


def estimate(prefix: list[int], n: int, total: int, omit: int, keep: int = 0) -> int:
    """Tokens of the prompt of `total` tokens with `omit` of its `n` steps left out (`keep` leading steps kept whole).

    `prefix[k]` is the tokens of steps 1..k; as `render_steps`, steps head+1 .. head+omit are left out.
    """
    head = kept_head(n, omit, keep)
    return total - (prefix[head + omit] - prefix[head]) + MARKER_TOKENS


def smallest_omit(steps: list[int], n: int, total: int, limit: int, start: int, keep: int = 0) -> int | None:
    """The fewest steps (from `start`) whose leaving out `estimate` puts within `limit`, or None when none does.

    One O(1) estimate per candidate: linear in the number of steps.
    """
    for omit in range(max(1, start), droppable(n, keep) + 1):
        if estimate(steps, n, total, omit, keep) <= limit:
            return omit
    return None
