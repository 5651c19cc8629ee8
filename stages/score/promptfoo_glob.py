"""promptfoo's glob matching (`matchesPattern` in `src/assertions/traceUtils.ts`), done the JavaScript way.

The trajectory assertions match a step's name against a glob (`promptfoo_steps.StepMatcher`).
promptfoo compiles it to a JavaScript regular expression with the `i` flag, so it matches
case-insensitively as one without the `u` flag does: letters fold by `toUpperCase`, never
from non-ASCII to ASCII (`ſ` is not `s`), `?` is one UTF-16 unit, and neither wildcard
crosses a line break (`\\n`, `\\r`, U+2028, U+2029).
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["matches_pattern"]


@lru_cache(maxsize=1024)
def _compiled(pattern: str) -> re.Pattern[str]:
    # promptfoo's `matchesPattern`: `*` → `.*`, `?` → `.`, the rest literal, anchored, flag `i`.
    any_unit = "[^\n\r\u2028\u2029]"
    parts = [any_unit + "*" if ch == "*" else any_unit if ch == "?" else re.escape(ch) for ch in _js_fold(pattern)]
    return re.compile("".join(parts))


def matches_pattern(text: str, pattern: str) -> bool:
    """promptfoo's `matchesPattern(text, pattern)`: does the glob (`*` any run, `?` one character) match all of `text`?

    Case-insensitive as JavaScript's `/…/i` is (see the module docstring).
    """
    return _compiled(pattern).fullmatch(_js_fold(text)) is not None


@lru_cache(maxsize=4096)
def _js_fold(text: str) -> str:
    """`text` in UTF-16 units, each as JavaScript's non-Unicode `i` flag canonicalizes it (`Canonicalize` in ECMA-262)."""
    if text.isascii():
        return text.upper()
    out = []
    for ch in text:
        code = ord(ch)
        if code > 0xFFFF:  # two UTF-16 units, each a lone surrogate that no case mapping changes
            code -= 0x10000
            out.append(chr(0xD800 + (code >> 10)) + chr(0xDC00 + (code & 0x3FF)))
            continue
        up = ch.upper()
        out.append(up if len(up) == 1 and not (code >= 128 and ord(up) < 128) else ch)
    return "".join(out)
