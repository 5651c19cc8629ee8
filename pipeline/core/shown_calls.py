"""How many of a step's tool calls the reports and the viewer show: the first `STEP_CALLS`, then "… and N more calls".

A step of an agent that fans out (5,000 parallel calls) was shown whole: a Case page of megabytes in the viewer, and
a reason listing every call's name (TrajectoryMatch's `expected: [...], actual: [...]`) written whole into
report.html's case table, once per result. What is shown is capped at one place, with the same words everywhere;
results.jsonl and the trace keep every call.

- `more_calls(n)`: the line that stands for the `n` calls left out.
- `capped_calls(text)`: `text` (a reason) with each list of more than `STEP_CALLS` names cut after the first
  `STEP_CALLS`, ending `… and N more calls`.
"""

from __future__ import annotations

import re

__all__ = ["STEP_CALLS", "capped_calls", "lists_past_the_cap", "more_calls"]

STEP_CALLS = 100

# A reason's list of tool names as `names_repr` (`repr` of a list of str) writes it: `['a', 'b']`, a name in single quotes
# with any quote or backslash in it escaped. Possessive (`re` has them since 3.11; `regex` would cost a plain run its
# import): a long reason that is no such list is passed over in one pass.
_ITEM = r"'(?:[^'\\\n]|\\.)*+'"
_NAMES = re.compile(rf"\[{_ITEM}(?:, {_ITEM})*+\]")
_SEP = "', '"


def more_calls(n: int) -> str:
    """`… and 4,900 more calls`: what stands for the `n` calls of a step (or a list) not shown."""
    return f"… and {n:,} more call{'' if n == 1 else 's'}"


def lists_past_the_cap(text: str | bytes) -> bool:
    """Whether `text` may hold a list `capped_calls` cuts: cheap, and never False when it does (it counts separators)."""
    return text.count(_SEP if isinstance(text, str) else _SEP.encode()) >= STEP_CALLS


def capped_calls(text: str) -> str:
    """`text` with each list of names longer than `STEP_CALLS` cut: `['a', 'b', … and 4,900 more calls]`; else `text` itself."""
    if not lists_past_the_cap(text):
        return text

    def cut(m: re.Match[str]) -> str:
        items = _items(m.group())
        if len(items) <= STEP_CALLS:
            return m.group()
        return "[" + ", ".join(items[:STEP_CALLS]) + f", {more_calls(len(items) - STEP_CALLS)}]"

    return _NAMES.sub(cut, text)


def _items(listed: str) -> list[str]:
    # The quoted items of a matched list, as written (quotes and escapes kept).
    return [m.group() for m in re.finditer(_ITEM, listed[1:-1])]
