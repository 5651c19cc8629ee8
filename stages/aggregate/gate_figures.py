"""Figures a gate check prints beside its threshold, never rounded into saying the opposite of the check.

A mean of 0.69996 printed with four places reads `mean 0.7000 ... required >= 0.7` on a FAIL line: the
figure and the threshold, as printed, say the check held. `figure` prints a value with the usual number of
places, or with as many more as it takes for the printed value to compare with the printed threshold as
the check decided (`mean 0.69996 ..., required >= 0.7`); a check that held within the gate's tolerance
(1e-12) keeps the usual places, where value and threshold read alike. `limit` prints a share's threshold
as a percentage without losing its digits (`33.3%` for 0.333, `33.33%` for 0.3333, `0.0%` for 0).
"""

from __future__ import annotations

import math
from decimal import Decimal, InvalidOperation

__all__ = ["figure", "limit"]


def limit(bound: float, *, percent: bool = False, places: int = 1) -> str:
    """A threshold as the check line prints it: `str(bound)`, or with `percent` a percentage with at least `places`
    decimals and as many more as `bound` has (`0.05` → `5.0%`, `0.3333` → `33.33%`)."""
    if not percent:
        return str(bound)
    d = Decimal(repr(float(bound))) * 100
    exponent = d.normalize().as_tuple().exponent
    return f"{d:.{max(places, -exponent if isinstance(exponent, int) else 0)}f}%"


def figure(value: float, bound: float, holds: bool, *, at_least: bool = True, places: int = 4, percent: bool = False,
           sign: bool = False) -> str:
    """`value` with `places` decimals, or more when fewer would contradict the check.

    Args:
        value: the figure the check compared (a share, for `percent`: 0.25 prints `25.0%` with `places=1`).
        bound: the threshold it was compared with, printed as `limit(bound, percent=percent)`.
        holds: what the check decided (with its tolerance).
        at_least: the check is `value >= bound` (else `value <= bound`).
        sign: print the sign always (`+0.0012`, a delta).

    The shortest precision from `places` up at which the printed value compares with the printed threshold as
    the check decided; the value's own repr when none does.
    """
    scale = 100 if percent else 1
    if not math.isfinite(value):
        return repr(value)
    try:
        bound_shown = Decimal(limit(bound, percent=percent).rstrip("%"))
    except (InvalidOperation, ValueError):
        return f"{value * scale:{'+' if sign else ''}.{places}f}{'%' if percent else ''}"
    for nd in range(places, 18):
        text = f"{value * scale:{'+' if sign else ''}.{nd}f}"
        shown = Decimal(text)
        if (shown >= bound_shown if at_least else shown <= bound_shown) == holds:
            return text + ("%" if percent else "")
    return f"{value!r} (as a share)" if percent else repr(value)
