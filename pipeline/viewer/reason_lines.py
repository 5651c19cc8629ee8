"""A metric's reason laid out to be scanned: the clauses metrics join with `; ` (ToolCalls' `missing: …; unexpected: …;
in order, first divergence …`, a judge's `q2 call 2 → no: …; q3 …`) each start a line, the first (the figures) set
apart. The text is the reason's own, escaped and inert (`html.t`): only line breaks are added, so a copy or a search
of the page reads the reason as written."""

from __future__ import annotations

import re

from tracejudge.viewer.html import t

__all__ = ["reason_html"]

# A clause starts after `; ` with a lowercase word and reaches a `:`, `→` or ` (` within a few words, as every built-in
# metric writes them; a `; ` inside an argument's text ("a; b") is left as it is: no bracket, quote or colon follows
# within those words there as a rule, and a wrong break would only move text to the next line.
_CLAUSE = re.compile(r"(?<=;) (?=[a-z][^;:()\[\]{}\"'\n]{0,60}?(?::|→| \())")


def reason_html(reason: str) -> str:
    """`reason` as HTML: one `<span class="clause">` per clause (`_CLAUSE`), each escaped (`html.t`); a reason of one
    clause is its escaped text alone."""
    parts = _CLAUSE.split(reason)
    if len(parts) == 1:
        return t(reason)
    return "".join(f'<span class="clause">{t(p)}{" " if i < len(parts) - 1 else ""}</span>' for i, p in enumerate(parts))
