"""Text from traces shown inert: its control characters visible, never acted on or hidden.

A terminal acts on control characters (ESC starts a colour or cursor sequence, OSC 8 opens a hyperlink) and a
viewer hides them, so where text from traces is shown for reading (`estimate --show-prompt`, `report.md`) each of
C0 but newline and tab, DEL and C1 is written as `\\xNN`. So that the text `\\x1b` and a real ESC do not look alike,
a backslash of the text right before `xNN` (a hex pair) or before a control character is doubled: an odd run of
backslashes before `xNN` shown ends in a control character, an even one is text. Every other character, backslashes
included, is shown as it is, so text without control characters or `\\xNN` is unchanged.

Characters a reader cannot see but a model reads are shown the same way, as `\\u{NNNN}`: the zero-width space,
word joiner, byte-order mark and soft hyphen, the combining grapheme joiner and Hangul fillers, line and paragraph separators, bidirectional overrides and isolates
(which reorder what is shown, as in "Trojan Source") and Unicode tag characters (which can carry a whole hidden
instruction). A
backslash of the text right before `u{…}` is doubled too. (`\\uNNNN` without braces, common in JSON text, is
left as it is.)
"""

from __future__ import annotations

import re

__all__ = ["CONTROL", "DOUBLED", "INVISIBLE", "visible"]

_CONTROLS = "[\x00-\x08\x0b-\x1f\x7f-\x9f]"
# Format characters that hide or reorder text when shown: zero-width space, word joiner and invisible operators, the BOM,
# the soft hyphen, line and paragraph separators, bidirectional embeddings, overrides and isolates, interlinear
# annotation and tag characters; and the default-ignorable letters that show as nothing or a blank (the combining grapheme
# joiner, the Hangul fillers, the Khmer inherent vowels: names that read as another or as none). Not the joiners (U+200C, U+200D) nor the LRM/RLM/ALM marks: Persian, Indic and
# emoji text and right-to-left writing use them as they are meant.
_INVISIBLE = "[\u00ad\u034f\u115f\u1160\u17b4\u17b5\u180e\u200b\u2028-\u202e\u2060-\u2064\u2066-\u206f\u3164\ufeff\uffa0\ufff9-\ufffb\U000e0001\U000e0020-\U000e007f]"
_ESCAPES = "x[0-9a-fA-F]{2}|u\\{[0-9a-fA-F]+\\}"  # what `visible` writes for a character it shows
CONTROL = re.compile(_CONTROLS)
INVISIBLE = re.compile(_INVISIBLE)
_SHOWN = re.compile(f"(\\\\+)(?={_ESCAPES})|(\\\\*)({_CONTROLS})|(\\\\*)({_INVISIBLE})")
DOUBLED = re.compile(f"\\\\(?={_ESCAPES}|{_CONTROLS}|{_INVISIBLE})")  # a backslash `visible` doubles
# Any character `visible` may write otherwise (a backslash only before an escape's shape or such a character): text with
# none is returned as it is, told by one scan of a character class (a reason per metric per case goes through here).
_ANY = re.compile(f"[{_CONTROLS[1:-1]}{_INVISIBLE[1:-1]}\\\\]")


def _show(m: re.Match[str]) -> str:
    if m.group(1) is not None:
        return m.group(1) * 2
    if m.group(3) is not None:
        return m.group(2) * 2 + f"\\x{ord(m.group(3)):02x}"
    return m.group(4) * 2 + f"\\u{{{ord(m.group(5)):04x}}}"


def visible(text: str) -> str:
    """`text` with each control character but newline and tab as `\\xNN`, each invisible character as `\\u{NNNN}`,
    and a backslash of the text right before `xNN`, `u{…}` or such a character doubled (the module doc); the rest as it is."""
    if (text.isascii() and text.isprintable() and "\\" not in text) or _ANY.search(text) is None:
        return text  # (the same object: nothing to show, which most text is)
    return _SHOWN.sub(_show, text)
