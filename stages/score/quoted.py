"""The final output quoted in a failure reason, as pydantic-evals' `Contains` quotes it: whole when short, else its
start and end.

pydantic-evals' reason (`Output string 'x' does not contain expected string 'y'`) shows the output's `repr`, cut to
its first and last 50 characters around `...` past 100. Here the text is cut before it is quoted (a `repr` cut in
two can split an escape such as `\\x00`), says how long it was, and has credentials masked in both ends: each end is
masked with what lies beyond it in view, so a key crossing a cut is seen whole and masked, not left half shown.
"""

from __future__ import annotations

from tracejudge.llm.redact import redact_quoted

__all__ = ["quoted_output"]

_END = 50  # characters shown of each end of a long output (pydantic-evals' `_truncated_repr(…, max_length=100)`)
# What the end's masking reads before the shown end: a credential (a JWT is several hundred characters) that ends in
# the shown part starts inside it, so it is matched whole. (`redact_quoted` reads as far past a shown head.)
_BEFORE_END = 2048


def quoted_output(out: str) -> str:
    """`out` quoted (`repr`) with credentials masked; past 100 characters its first and last 50 around `…`, followed by
    its length: `'Dear customer, …thanks.' (1234 characters, the middle left out)`. Never raises."""
    if len(out) <= 2 * _END:
        return repr(redact_quoted(out))
    head = redact_quoted(out, _END)[:_END]
    tail = redact_quoted(out[-(_END + _BEFORE_END):])[-_END:]
    return f"{head + '…' + tail!r} ({len(out)} characters, the middle left out)"
