"""The field paths of `judge.labels.fields` and `--labels-field`: where in a result record a label is.

A path is keys joined by `.`: `metadata.reward`, `metadata.labels.correct`. A key that holds a `.` itself (a label a
trace store keeps as `correct.v2`) is written in brackets: `metadata.labels["correct.v2"]` (or `['correct.v2']`, or
bare, `[correct.v2]`, when it holds no `]`), which names that key and nothing else. The dotted form finds it too:
`metadata.labels.correct.v2` reads the key `correct.v2` of `metadata.labels` when the path's own split
(`correct`, then `v2`) finds no value; when both would, the split wins, and the bracket form says which is meant.

A path that cannot be read this way is refused when the config is read (`parse_path` raises `ValueError`: an empty key,
as in `metadata..x` or a trailing `.`, a bracket left open, a quote left open, text after a bracket that is not `.` or
another bracket).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable
from typing import Any

__all__ = ["dig", "key_path", "parse_path", "shown_path"]

_MISSING: Any = object()


def parse_path(path: str) -> list[tuple[str, bool]]:
    """`path` as its keys, each `(key, bracketed)`; raises `ValueError` naming the character where it goes wrong."""
    parts: list[tuple[str, bool]] = []
    i, n = 0, len(path)
    if not path.strip():
        raise ValueError("the field path is empty")
    while True:
        if i < n and path[i] == "[":
            key, i = _bracket(path, i)
            parts.append((key, True))
        else:
            start = i
            while i < n and path[i] not in ".[]":
                i += 1
            if i < n and path[i] == "]":
                raise ValueError(f"{path!r} at character {i + 1}: a ']' with no '[' before it")
            if i == start:
                where = "at its end" if i == n else f"at character {i + 1}"
                raise ValueError(f"{path!r} {where}: an empty key (two dots in a row, or a dot at an end); a key holding a "
                                 'dot is written in brackets: metadata.labels["correct.v2"]')
            parts.append((path[start:i], False))
        while i < n and path[i] == "[":  # keys in brackets right after a key: `labels["a.b"]["c"]`
            key, i = _bracket(path, i)
            parts.append((key, True))
        if i == n:
            return parts
        if path[i] != ".":
            raise ValueError(f"{path!r} at character {i + 1}: expected '.' or '[' after a key in brackets, got {path[i]!r}")
        i += 1
        if i == n:
            raise ValueError(f"{path!r} at its end: an empty key after the last dot")


def _bracket(path: str, i: int) -> tuple[str, int]:
    """The key in the brackets opening at `path[i]`, and the index after its `]`."""
    j = i + 1
    if j < len(path) and path[j] in "\"'":
        if path[j] == '"':
            try:
                key, end = json.JSONDecoder().raw_decode(path, j)
            except ValueError:
                raise ValueError(f"{path!r} at character {j + 1}: a quoted key that is not a JSON string (a quote left open?)") from None
        else:
            close = path.find("'", j + 1)
            if close < 0:
                raise ValueError(f"{path!r} at character {j + 1}: a quote left open")
            key, end = path[j + 1:close], close + 1
        if end >= len(path) or path[end] != "]":
            where = "at its end" if end >= len(path) else f"at character {end + 1}"
            raise ValueError(f"{path!r} {where}: expected ']' after the quoted key")
        return key, end + 1
    close = path.find("]", j)
    if close < 0:
        raise ValueError(f"{path!r} at character {i + 1}: a '[' with no ']' after it")
    key = path[j:close].strip()
    if not key:
        raise ValueError(f"{path!r} at character {i + 1}: an empty key in brackets")
    return key, close + 1


def key_path(keys: Iterable[object]) -> str:
    """`keys` (a config key's path, list indices as ints or digits) written as `parse_path` and `--set` read them: joined
    by `.`, a key that holds a `.` or a bracket, or that is empty or padded, in brackets as a JSON string
    (`assertions.metrics["tool.acc"].min_mean`), so a metric named `tool.acc` does not read as a key `acc` of `tool`."""
    out = ""
    for key in map(str, keys):
        if key and key == key.strip() and not any(c in key for c in ".[]"):
            out += f".{key}" if out else key
        else:
            out += f"[{json.dumps(key, ensure_ascii=False)}]"
    return out


def shown_path(keys: Iterable[object]) -> str:
    """`key_path(keys)` as an error message shows it: a control or invisible character of a key (a zero-width space
    pasted with it) written as `inert_text.visible` writes it (`assertions\\u{200b}`), so the path does not read as
    another. For display only: `parse_path` reads `key_path`'s own output, not this."""
    from tracejudge.core.inert_text import visible

    return visible(key_path(keys))


def dig(record: Any, path: str) -> Any:
    """The value at `path` in `record` (module docstring), `None` when there is none; `ValueError` for a path `parse_path`
    refuses."""
    got = _walk(record, _parsed(path), 0)
    return None if got is _MISSING else got


@functools.lru_cache(maxsize=256)
def _parsed(path: str) -> tuple[tuple[str, bool], ...]:
    return tuple(parse_path(path))  # (read once: a run's every result is read by the same few paths)


def _walk(node: Any, parts: tuple[tuple[str, bool], ...], i: int) -> Any:
    if i == len(parts):
        return node
    if not isinstance(node, dict):
        return _MISSING
    key, bracketed = parts[i]
    if key in node:
        got = _walk(node[key], parts, i + 1)
        if got is not _MISSING:
            return got
    if bracketed:
        return _MISSING
    joined = key
    for j in range(i + 1, len(parts)):  # a key holding dots, written dotted: `correct.v2`
        if parts[j][1]:
            break
        joined += "." + parts[j][0]
        if joined in node:
            got = _walk(node[joined], parts, j + 1)
            if got is not _MISSING:
                return got
    return _MISSING
