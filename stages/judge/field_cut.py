"""Cutting oversized fields of a judge prompt (`judge.too_long: truncate`, after `fit`'s other means).

A judge prompt is a list of titled sections (`trace_text.fence`): the task, the
trace or conversation, the final output, passages, claims. Steps and user
turns are left out by `fit`; a single field can still be larger than the
whole window (an 8 MB final output, a pasted log as the task). While a
`cutting(chars)` block is active, `cut_sections` cuts every section longer
than `chars` characters to its first `chars`, followed by the marker
`_cut` uses for a long step field (`…[N characters cut]`), so the judge sees
where text is missing (a section of numbered items, `ITEM_SECTIONS`, is cut
line by line instead, so every item asked about stays); the titles of the sections cut are recorded for the
score's reason. Outside such a block nothing is cut: a prompt that fits is
rendered exactly as before (same cache keys).

The cap is a context variable rather than an argument because every metric
renders through its own `Plan.render(omit)` closure; `fit` sets it around
`build_request`, in the thread that renders.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from tracejudge.stages.judge.fence_guard import neutralise_lines

__all__ = ["ITEM_SECTIONS", "TRACE_SECTIONS", "AllData", "Cutting", "ItemsCut", "OwnLead", "PreCut", "cut_note", "cut_sections", "cut_text", "cutting",
           "named", "own_lead", "pre_cut", "water_level"]

TRACE_SECTIONS = frozenset({"Trace", "Conversation"})
"""Sections `fit` shortens by leaving steps and turns out first; their text is cut only as the last resort."""

ITEM_SECTIONS = frozenset({"Claims"})
"""Sections of one item a line that questions ask about by number (`Claim 3: …`): cut line by line, each line
keeping its start, so every item asked about stays in the prompt (cut as a whole, the items past the cap vanished)."""
_ITEM_LINE_FLOOR = 40  # characters a cut item line keeps: its `Claim k:` label and the start of its text


def cut_text(s: str, limit: int) -> str:
    """`s` cut to its first `limit` characters, marked with the count cut (unchanged when not longer)."""
    if len(s) > limit:
        return s[:limit] + f" …[{len(s) - limit} characters cut]"
    return s


class AllData(str):
    """The text of a section that is all data (the task, the final output), not yet neutralised: `cut_sections` gives
    it as `neutralise_lines` of it, cut first when it is over the cap.

    Neutralised first, a field's forged lines each gained a `[data] ` mark before the cut, and the marker counted the
    marks as characters cut: a 2,000,000-character output of forged steps said `…[2789791 characters cut]`. Cut first,
    the count is of the field's own characters, and only the kept part is neutralised (not the whole of a 60 MB field
    at every render of the search). Only a `cut_sections` list may hold one: anything else would show it unneutralised.
    """

    __slots__ = ()


class OwnLead(AllData):
    """A section of all data whose first line, `lead`, the prompt builder wrote (the final output's `(the output of step
    3 above)`): `trace_text.fence` leaves that line unmarked, while the same words on any other line, or as the data's
    own first line, read as the builder's and are marked (`fence_titles.BODIES`)."""

    lead: str


def own_lead(text: str, lead: str) -> OwnLead:
    """`text` (starting with `lead`) as an `OwnLead`."""
    out = OwnLead(text)
    out.lead = lead
    return out


class PreCut(AllData):
    """A section of all data whose texts (`parts`, a blank line apart) were each cut to `limit` characters by the
    metric's own setting (`system_prompt_chars`), not to fit: equal to that rendering, so a prompt that fits is as
    before. `cut_sections` measures it by the characters of the texts it shows (`own`), its `…[N characters cut]`
    markers not counted: at a cap of 2,000 a prompt cut to 2,000 by its setting is not cut again (the marker was, and
    the reason named the setting's cut as one made to fit)."""

    parts: tuple[str, ...]
    limit: int

    @property
    def own(self) -> int:
        """The characters of the texts shown (each at most `limit`), the blank lines between them counted."""
        return sum(min(len(p), self.limit) for p in self.parts) + 2 * max(0, len(self.parts) - 1)

    def cut(self, chars: int) -> str:
        """The section cut to its first `chars` characters of text (`own`), then neutralised: the texts that fit whole
        kept as the setting cut them, the next one cut where the cap falls, and one marker counting every character
        of the texts not shown (the rest of that one and the whole of those after it)."""
        out, left = [], chars
        for i, p in enumerate(self.parts):
            shown = min(len(p), self.limit)
            if shown <= left:
                out.append(cut_text(p, self.limit))
                left -= shown + 2
                continue
            keep = max(0, left)
            rest = len(p) - keep + sum(len(q) for q in self.parts[i + 1:])
            out.append(f"{p[:keep]} …[{rest} characters cut]")
            break
        return neutralise_lines("\n\n".join(out))


def pre_cut(parts: list[str], limit: int) -> PreCut:
    """The `PreCut` section of `parts`, each cut to `limit` characters (`cut_text`), a blank line apart."""
    out = PreCut("\n\n".join(cut_text(p, limit) for p in parts))
    out.parts, out.limit = tuple(parts), limit
    return out


class ItemsCut(str):
    """The title of an `ITEM_SECTIONS` section cut line by line, as `Cutting.cut` records it: equal to the title, and
    saying what was done, `lines_cut` of its `lines` lines cut to `share` characters each (the cap shared among them),
    for the reason (`cut_note`): "cut to N characters" of the section's cap, each claim got a smaller share."""

    lines_cut: int
    lines: int
    share: int


def _items_cut(title: str, lines_cut: int, lines: int, share: int) -> ItemsCut:
    out = ItemsCut(title)
    out.lines_cut, out.lines, out.share = lines_cut, lines, share
    return out


@dataclass
class Cutting:
    """One active cap: `chars` per section (None: measure only), whether trace sections are cut too, and what was seen.

    `lengths` holds the characters of each section rendered that may be cut (cut or not), `cut` the titles cut.
    """

    chars: int | None
    trace_too: bool = False
    lengths: list[int] = field(default_factory=list)
    cut: list[str] = field(default_factory=list)


_ACTIVE: contextvars.ContextVar[Cutting | None] = contextvars.ContextVar("judge_field_cut", default=None)


@contextmanager
def cutting(chars: int | None, trace_too: bool = False) -> Iterator[Cutting]:
    """Within the block, `cut_sections` cuts sections over `chars` characters (None: records their lengths only)."""
    state = Cutting(chars, trace_too)
    token = _ACTIVE.set(state)
    try:
        yield state
    finally:
        _ACTIVE.reset(token)


def cut_sections(sections: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """`sections` with each cuttable one over the active cap cut (`cut_text`); as given outside a `cutting` block, but for
    `AllData` texts, which come out neutralised (`neutralise_lines`) in or out of one."""
    state = _ACTIVE.get()
    if state is None:
        return [(title, _neutralised(text)) for title, text in sections]
    out = []
    for title, text in sections:
        if title in TRACE_SECTIONS and not state.trace_too:
            out.append((title, _neutralised(text)))
            continue
        size = text.own if isinstance(text, PreCut) else len(text)
        state.lengths.append(size)
        if state.chars is not None and size > state.chars:
            if title in ITEM_SECTIONS:
                lines, share, n_cut = _cut_lines(text, state.chars)
                # Named as cut only when a line was: a section of many short lines keeps every one whole
                # (`_ITEM_LINE_FLOOR`), and its reason would say it was cut when nothing of it was.
                if n_cut:
                    state.cut.append(_items_cut(title, n_cut, text.count("\n") + 1, share))
                out.append((title, lines))
                continue
            state.cut.append(title)
            if isinstance(text, PreCut):
                text = text.cut(state.chars)
            elif isinstance(text, AllData):  # (its own characters cut and counted; then the kept part neutralised)
                text = neutralise_lines(text[: state.chars]) + f" …[{len(text) - state.chars} characters cut]"
            else:
                text = cut_text(text, state.chars)
        out.append((title, _neutralised(text)))
    return out


def _neutralised(text: str) -> str:
    return neutralise_lines(str(text)) if isinstance(text, AllData) else text


def _cut_lines(text: str, chars: int) -> tuple[str, int, int]:
    """`(text cut, each line's share, lines cut)`: the cap shared among the lines; each line over its share is cut, so
    every line's label stays."""
    lines = text.split("\n")
    share = max(_ITEM_LINE_FLOOR, chars // len(lines))
    return "\n".join(cut_text(line, share) for line in lines), share, sum(len(line) > share for line in lines)


NAMED = 5  # section titles a reason names before "and N more": 5,000 passages cut made one reason of 5,000 names


def named(titles: list[str] | tuple[str, ...], most: int = NAMED) -> str:
    """`titles` (each once, in order) for a reason: all of them when `most` or fewer, else the first `most` and how many
    more (`Passage 1, …, Passage 5 and 4,995 more`), so the count stays exact while the text stays short."""
    once = list(dict.fromkeys(titles))
    if len(once) <= most:
        return ", ".join(once)
    return f"{', '.join(once[:most])} and {len(once) - most:,} more"


def cut_note(cut: list[str], cap: int | None) -> str:
    """What cutting did to a prompt, for the score's reason: the sections cut to `cap` characters (`named`: a long list
    shortened, its count kept) and each `ItemsCut` section's lines cut to their share (`Claims: 3 of its 40 claims cut
    to 50 characters each`), every figure one a user can recompute from the prompt."""
    once = list(dict.fromkeys(cut))
    whole = [t for t in once if not isinstance(t, ItemsCut)]
    parts = []
    if whole:
        many = f"{len(whole):,} sections ({named(whole)})" if len(whole) > NAMED else named(whole)
        parts.append(f"{many} cut to {cap or 0:,} characters{' each' if len(whole) > 1 else ''}")
    for t in once:
        if isinstance(t, ItemsCut):
            noun = t.lower()  # (`Claims`: one claim a line)
            if t.lines == 1:
                said = f"its one {noun.removesuffix('s')} cut to {t.share:,} characters"
            elif t.lines_cut == t.lines:
                said = f"each of its {t.lines:,} {noun} cut to {t.share:,} characters"
            else:
                said = f"{t.lines_cut:,} of its {t.lines:,} {noun} cut to {t.share:,} characters{'' if t.lines_cut == 1 else ' each'}"
            parts.append(f"{t}: {said}")
    return "; ".join(parts)


def water_level(lengths: list[int], remove: int, floor: int) -> int | None:
    """The largest cap (≥ `floor`) that removes at least `remove` characters from sections of `lengths`; None when even `floor` does not.

    Cutting the longest fields first keeps every short field whole: with lengths [8,000,000, 300] and 7,900,000 to
    remove, the cap is about 100,000 and the 300-character task stays as it is.
    """
    def removed(cap: int) -> int:
        return sum(n - cap for n in lengths if n > cap)

    if removed(floor) < remove:
        return None
    lo, hi = floor, max(lengths, default=floor)
    while lo < hi:  # removed() falls as the cap rises: the largest cap still removing enough
        mid = (lo + hi + 1) // 2
        if removed(mid) >= remove:
            lo = mid
        else:
            hi = mid - 1
    return lo
