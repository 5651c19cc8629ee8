"""Decode a τ²-bench results object member by member, each simulation on its own (`split_results`).

One simulation that cannot be read (too deep, huge numbers, a byte that is not UTF-8, not JSON) is one error at its
own offset, not the file's, stepped over by a scan of its brackets. The read stops at one whose end no scan can tell
(a quote or a bracket lost: read on, the messages of later simulations would pass for simulations), saying the rest
of the file is not read; the file ending inside the list (a copy stopped at a size, a file still being written) ends
it there, saying the file ends early; a file whose object lacks only its closing `}` is read whole, with a warning saying
so. The commas between simulations are a warning when one is lost, repeated, or
left before `]` or the first simulation, never a simulation (`framing.Notes`).
"""

from __future__ import annotations

import json
from typing import Any

from tracejudge.stages.load import (JSON_ERRORS, LOST_QUOTES, UNBALANCED, NotUtf8, json_error, json_message, skip_broken_value,
                                    skip_json_value, truncation_note)
from tracejudge.stages.load.encoding import ESCAPED, escaped_byte_in
from tracejudge.stages.load.framing import CUT_SHORT, REST, cut_between, key_for_record, lost_brackets, lost_quote, misread, missing_colon

__all__ = ["Entry", "NotResults", "split_results"]

Entry = tuple[int, Any, str | None]
"""One simulation: `(its offset in the text, the simulation, None)`, or `(offset, None, why it cannot be read)`."""

_DECODER = json.JSONDecoder()
_WS = " \t\r\n"
_NO_SIMULATION_AFTER = "tau2-bench: a comma with no simulation after it; passed over"


def skip_ws(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in _WS:
        pos += 1
    return pos


class NotResults(ValueError):
    """Valid JSON, perhaps, but not a τ²-bench results object: the file is another one, not a broken one."""


def _array_kind(text: str, pos: int) -> str:
    """Why a file that is a JSON array is no results object, by what its first element looks like."""
    try:
        first, _ = _DECODER.raw_decode(text, skip_ws(text, pos + 1))
    except (ValueError, RecursionError):
        first = None
    if isinstance(first, dict) and "messages" in first and "task_id" in first:
        # (a submission that saved its simulations alone: no task says what each was expected to do)
        return ("a JSON array of simulations, not a results object: a results file is one object with `tasks` and "
                "`simulations`, and each simulation is scored against its task there; this file holds no tasks")
    return "a JSON array, not a results object: a τ²-bench tasks file? (a results file is one object with `tasks` and `simulations`)"


def split_results(text: str, base: int = 0) -> tuple[dict[str, Any], list[Entry], list[tuple[int, str, int]]]:
    """`(the object's other members, its simulations, warnings)` of a results object's text.

    `top["simulations"]` is True when the object has a `simulations` list. Each warning is `(the index of the
    simulation it comes before, what, line)`. `text` was decoded with `errors="surrogateescape"`; `base` is the
    byte offset it starts at. Raises `ValueError` when the text is not a JSON object, `NotUtf8` for a byte that
    is not UTF-8 outside the simulations.
    """
    top: dict[str, Any] = {}
    sims: list[Entry] = []
    spans: list[tuple[int, int]] = []
    notes: list[tuple[int, str, int]] = []
    pos = skip_ws(text, 0)
    if text[pos : pos + 1] == "[":
        raise NotResults(_array_kind(text, pos))
    if text[pos : pos + 1] != "{":
        raise NotResults("expected a JSON object at the top level")
    pos = skip_ws(text, pos + 1)
    while pos < len(text) and text[pos] != "}":
        key, pos = _DECODER.raw_decode(text, pos)
        pos = skip_ws(text, pos)
        if text[pos : pos + 1] != ":":
            raise ValueError(f"expected ':' at offset {pos}")
        pos = skip_ws(text, pos + 1)
        if key == "simulations" and text[pos : pos + 1] == "[":
            top[key] = True
            pos = _simulations(text, pos + 1, base, sims, spans, notes)
            if pos < 0:
                break
        else:
            top[key], pos = _DECODER.raw_decode(text, pos)
        pos = skip_ws(text, pos)
        if text[pos : pos + 1] == ",":
            pos = skip_ws(text, pos + 1)
    if 0 <= pos and pos >= len(text):
        # Every member read, but the object's own `}` never came: a file cut at its very end (a writer killed as it closed
        # the object, a copy stopped short). Each simulation read whole, so each is scored; the cut is said, not lost.
        notes.append((len(sims), "tau2-bench: the file ends before the results object's closing '}': it looks truncated "
                                 "(the '}' is missing); every simulation in it was read", _line(text, len(text.rstrip()))))
    elif pos >= 0 and (pos := skip_ws(text, pos + 1)) < len(text):
        # A second results object, a simulation pasted after the end: never read as if the file ended at the `}`.
        sims.append((pos, None, f"the file goes on after the results object's closing '}}': found {_found(text, pos, base)}{REST}"))
        spans.append((pos, len(text)))
    _outside(text, spans, base)
    return top, sims, notes


def _simulations(text: str, pos: int, base: int, sims: list[Entry], spans: list[tuple[int, int]], notes: list[tuple[int, str, int]]) -> int:
    """Read the list from `text[pos]` (after its `[`) into `sims`: the offset after its `]`, or -1 where the read stops."""
    while True:
        commas: list[int] = []  # the offsets of the first, second and last comma
        while (pos := skip_ws(text, pos)) < len(text) and text[pos] == ",":
            commas[min(len(commas), 2) :] = [pos]
            pos += 1
        n = len(sims)
        if pos == len(text):  # cut between two simulations: the ones read score, and the cut is said
            sims.append((pos, None, f"simulations[{n}]: {cut_between('the list', 'simulations')}"))
            return -1
        if text[pos] == "]":
            if commas:
                notes.append((n, _NO_SIMULATION_AFTER, _line(text, commas[-1])))
            return pos + 1
        if commas and not n:
            notes.append((n, "tau2-bench: a comma with no simulation before it; passed over", _line(text, commas[0])))
        elif n and not commas:
            if text[pos] not in "{[":
                # (A `}` doubled after a simulation: stepping on from here would read the same character for ever.)
                sims.append((pos, None, f"simulations[{n}]: expected ',' or ']' after a simulation, found {_found(text, pos, base)}{REST}"))
                spans.append((pos, len(text)))
                return -1
            notes.append((n, "tau2-bench: a comma is missing between two simulations; read as if it were there", _line(text, pos)))
        elif len(commas) > 1:
            notes.append((n, _NO_SIMULATION_AFTER, _line(text, commas[1])))
        end, sim, why = _simulation(text, pos, base)
        sims.append((pos, sim, None if why is None else f"simulations[{n}]: {why}"))
        if end < 0:
            spans.append((pos, len(text)))
            return -1
        spans.append((pos, end))
        pos = end


def _simulation(text: str, pos: int, base: int) -> tuple[int, Any, str | None]:
    """`(its end, the simulation, None)` of the one at `text[pos]`, or `(its end, None, why)`; the end is -1 where the read stops."""
    scan, opened, colon = skip_broken_value, "", None
    try:
        sim, end = _DECODER.raw_decode(text, pos)
        after = skip_ws(text, end)
        if (bad := ESCAPED.search(text, pos, end)) is not None:
            return end, None, f"not valid UTF-8: {escaped_byte_in(text, bad.start(), base)}"
        how = misread(sim, text[after : after + 1])
        if how is None:
            return end, sim, None
        if how == "quote":
            where = _where(text, after)
            return -1, None, f"invalid JSON: a string where a simulation starts, followed by {text[after]!r} at {where}{lost_quote('simulation')}"
        # A simulation whose `{` was lost: its end is the `}` that would have closed it.
        why, opened = key_for_record(sim, _where(text, pos), "simulation"), "{"
    except json.JSONDecodeError as exc:
        # A byte that is not UTF-8 where JSON allows no such character, a comma doubled by hand: stepped over by its brackets.
        if (bad := ESCAPED.search(text, pos, exc.pos + 1)) is not None:
            why, scan = f"not valid UTF-8: {escaped_byte_in(text, bad.start(), base)}", skip_json_value
        else:
            why = f"invalid JSON: {json_message(exc)} at {_where(text, exc.pos)}{truncation_note(exc, 'file')}"
            colon = missing_colon(exc, _where(text, exc.pos))  # (said once the scan found the simulation's end)
    except JSON_ERRORS as exc:
        why, scan = json_error(exc), skip_json_value
    end = scan(text, pos, opened=opened)
    if end == LOST_QUOTES:
        return -1, None, why + lost_quote("simulation")
    if end > pos and text[(after := skip_ws(text, end)) : after + 1] not in ("", ",", "]"):
        end = UNBALANCED  # its brackets paired up, but not where a simulation ends (`"id":} "s1", …`): the scan ended inside it
    if end == UNBALANCED:
        return -1, None, why + lost_brackets("simulation")
    if end == pos or (end == -1 and not why.endswith(CUT_SHORT)):  # (`pos`: a stray `}` or `]` where a simulation goes)
        return -1, None, why + REST
    return end, None, colon if colon is not None and end > pos else why


def _line(text: str, at: int) -> int:
    return text.count("\n", 0, at) + 1


def _where(text: str, at: int) -> str:
    return f"line {_line(text, at)} column {at - text.rfind(chr(10), 0, at)}"


def _found(text: str, at: int, base: int) -> str:
    return f"a byte that is not valid UTF-8: {escaped_byte_in(text, at, base)}" if ESCAPED.match(text, at) else repr(text[at])


def _outside(text: str, spans: list[tuple[int, int]], base: int) -> None:
    """Raise `NotUtf8` for a byte that is not UTF-8 outside every simulation (`spans`, in order): in a task or the
    `info`, which every simulation may be scored with, it is the file's error."""
    i = 0
    for bad in ESCAPED.finditer(text):
        while i < len(spans) and spans[i][1] <= bad.start():
            i += 1
        if i == len(spans) or bad.start() < spans[i][0]:
            raise NotUtf8(f"not valid UTF-8: {escaped_byte_in(text, bad.start(), base)}")
