"""Text from traces shown inert: its control characters visible, never acted on or hidden.

A terminal acts on control characters (ESC starts a colour or cursor sequence, OSC 8 opens a hyperlink) and a
viewer hides them, so where text from traces is shown for reading (`estimate --show-prompt`, `report.md`) each of
C0 but newline and tab, DEL and C1 is written as `\\xNN`. So that the text `\\x1b` and a real ESC do not look alike,
a backslash of the text right before `xNN` (a hex pair) or before a control character is doubled: an odd run of
backslashes before `xNN` shown ends in a control character, an even one is text. Every other character, backslashes
included, is shown as it is, so text without control characters or `\\xNN` is unchanged.
"""

from __future__ import annotations

import re

__all__ = ["CONTROL", "DOUBLED", "visible"]

_CONTROLS = "[\x00-\x08\x0b-\x1f\x7f-\x9f]"
CONTROL = re.compile(_CONTROLS)
_SHOWN = re.compile(f"(\\\\+)(?=x[0-9a-fA-F]{{2}})|(\\\\*)({_CONTROLS})")
DOUBLED = re.compile(f"\\\\(?=x[0-9a-fA-F]{{2}}|{_CONTROLS})")  # a backslash `visible` doubles


def _show(m: re.Match[str]) -> str:
    if m.group(1) is not None:
        return m.group(1) * 2
    return m.group(2) * 2 + f"\\x{ord(m.group(3)):02x}"


def visible(text: str) -> str:
    """`text` with each control character but newline and tab as `\\xNN`, and a backslash of the text right before
    `xNN` or before such a character doubled (the module doc); the rest as it is."""
    return _SHOWN.sub(_show, text)
