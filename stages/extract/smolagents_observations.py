"""Which part of a smolagents step's `observations` each of its parallel calls returned, when only one answer fits.

smolagents 1.20+ runs a `ToolCallingAgent` step's calls in threads and keeps no
per-call result in memory: `observations` is every call's `str(result).strip()`
followed by a newline, in call id order, with the trailing newlines cut off
(`process_tool_calls`). A result may hold newlines itself and may be empty, and
an empty result at the end leaves no line at all, so `"sunny\\nwind 5 km/h"`
for two calls is as much `("sunny\\nwind 5 km/h", "")` as `("sunny", "wind 5 km/h")`.

The text fixes the results only where the rules of that join leave one way to
cut it: a stripped result neither starts nor ends with whitespace (so a line
that does cannot begin or end a call's result), an empty line is a result of its
own or lies inside one, and there are at most as many results as calls.
"""

from __future__ import annotations

__all__ = ["AMBIGUOUS", "NOT_JOINED", "split_observations"]


def _starts(line: str) -> bool:
    return not line or not line[0].isspace()


def _ends(line: str) -> bool:
    return not line or not line[-1].isspace()


AMBIGUOUS = ("smolagents joins the results with newlines, and this text can be cut between the calls more than one way "
             "(a result may span lines or be empty)")
NOT_JOINED = "the text is not smolagents' join of one stripped result per call"


def split_observations(text: str, calls: int) -> tuple[list[str] | None, str | None]:
    """`(each call's result in call id order, None)` when `text` can only be cut one way, else `(None, why not)`.

    `calls` is how many calls the step ran (two or more). The cuts are the line breaks that end one result and
    begin the next; an empty line ties the break before it to the break after it (a result of its own needs
    both, a line inside a result neither). A break that may be cut or not, within the number of calls, means more
    than one reading.
    """
    if not text:
        return [""] * calls, None  # every call returned nothing: smolagents' join cut away every newline
    lines = text.split("\n")
    if not _starts(lines[0]) or not lines[-1] or not _ends(lines[-1]):
        return None, NOT_JOINED  # not a join of stripped results (older smolagents, or a text made another way)
    # the breaks, 0..len-2, grouped: an empty line j joins breaks j-1 and j; a unit is cut whole or not at all
    unit = list(range(len(lines) - 1))
    for j in range(1, len(lines) - 1):
        if not lines[j]:
            unit[j] = unit[j - 1]
    size: dict[int, int] = {}
    allowed: dict[int, bool] = {}
    for b, u in enumerate(unit):
        size[u] = size.get(u, 0) + 1
        allowed[u] = allowed.get(u, True) and _ends(lines[b]) and _starts(lines[b + 1])
    forced = {unit[0]} if len(lines) > 1 and not lines[0] else set()  # a first line left empty is the first call's ""
    if any(not allowed[u] for u in forced):
        return None, NOT_JOINED
    cuts = sum(size[u] for u in forced)
    room = calls - 1 - cuts
    if room < 0:
        return None, NOT_JOINED
    if any(allowed[u] and u not in forced and size[u] <= room for u in size):
        return None, AMBIGUOUS
    results, start = [], 0
    for b, u in enumerate(unit):
        if u in forced:
            results.append("\n".join(lines[start:b + 1]))
            start = b + 1
    results.append("\n".join(lines[start:]))
    return results + [""] * (calls - len(results)), None
