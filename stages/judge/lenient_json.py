"""A judge reply whose verdict is JSON but not valid JSON: where it is invalid, and the same text read leniently.

Local models without an enforced schema write JavaScript-style objects: a comma before the closing `}` or `]`, a
`// comment` line. The strict reading (`tracejudge.stages.judge.parse`) then finds no object where the verdict is,
only the objects nested in it, and said "missing answers for TC1, …" of a reply that answers each one. `invalid_json`
names json's own error and its line and column, so the reason says what is wrong with the reply.

`relaxed` drops what makes such JSON invalid without changing what it says: commas before a closing bracket and
`//` or `/* … */` comments, outside strings. deepeval does the first (`trimAndLoadJson` retries with trailing commas
removed) and promptfoo the second (`extractJsonObjects` turns `//` comments into YAML's `#` and reads the object as
YAML); inspect_ai and pydantic-evals read strict JSON only (an error, or a retry telling the model). An unescaped
quote inside a string (`"the "refund" worked"`) is not relaxed: where the string ends cannot be known.
"""

from __future__ import annotations

import json
import re

from tracejudge.stages.judge.reasoning_blocks import outside

__all__ = ["invalid_json", "may_relax", "relaxed"]

_LENIENT_CLOSE = re.compile(r",(\s*[}\]])")


def invalid_json(text: str) -> str:
    """json's error for the object of `text` (its thinking left out) that reads furthest before it fails, with its
    line and column (`"Expecting property name enclosed in double quotes: line 1 column 170 (char 169)"`), or `""`
    when every `{` starts a valid object or none gets past its first character (a `{` in prose)."""
    text = outside(text)[0]
    worst: json.JSONDecodeError | None = None
    decoder = json.JSONDecoder()
    start, valid_to = text.find("{"), 0
    while start != -1:
        if start >= valid_to:
            try:
                valid_to = decoder.raw_decode(text, start)[1]
            except json.JSONDecodeError as exc:
                if exc.pos > start + 1 and (worst is None or exc.pos > worst.pos):
                    worst = exc
            except (ValueError, RecursionError):
                pass
        start = text.find("{", start + 1)
    return str(worst) if worst is not None else ""


def may_relax(text: str) -> bool:
    """Whether `text` holds anything `relaxed` could drop (a comma before a closing `}` or `]`, `//`, `/*`); False: its
    strict reading is the only one."""
    return "//" in text or "/*" in text or _LENIENT_CLOSE.search(text) is not None


def relaxed(text: str) -> tuple[str, list[str]] | None:
    """`(text without the commas before a closing `}` or `]` and the `//` and `/* … */` comments that stand outside
    JSON strings, what was dropped: "a trailing comma", "a comment")`, or `None` when it has none (nothing to read
    again)."""
    out: list[str] = []
    dropped: set[str] = set()
    i, n, in_string = 0, len(text), False
    while i < n:
        ch = text[i]
        if in_string:
            out.append(text[i:i + 2] if ch == "\\" else ch)
            i += 2 if ch == "\\" else 1
            in_string = ch != '"'
            continue
        if ch == '"':
            in_string = True
        elif text.startswith("//", i) or text.startswith("/*", i):
            end = text.find("\n", i) if text[i + 1] == "/" else text.find("*/", i + 2) + 2
            i = n if end < (0 if text[i + 1] == "/" else 2) else end
            dropped.add("a comment")
            continue
        elif ch == "," and (m := _LENIENT_CLOSE.match(text, i)):
            out.append(m.group(1))
            i = m.end()
            dropped.add("a trailing comma")
            continue
        out.append(ch)
        i += 1
    if not dropped:
        return None
    # A comment between a comma and its closing bracket hid the comma from the first pass.
    once = "".join(out)
    again = relaxed(once)
    return (again[0], sorted(dropped | set(again[1]))) if again else (once, sorted(dropped))
