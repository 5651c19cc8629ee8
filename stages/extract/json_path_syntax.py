"""The path language of format `json-path`: parse a path once, walk records with it.

Grammar (whitespace is kept inside keys, ignored inside brackets)::

    path     := segment ("." segment)*
    segment  := "*" | key selector*
    key      := one or more characters other than "." "[" "]"
    selector := "[" int "]" | "[" field op value "]"
    field    := name ("." name)*          name: characters other than . [ ] = ! " and spaces
    op       := "=" | "!="
    value    := "..." (a JSON string) | bare word

A bare value that is a JSON number, `true`, `false` or `null` is that
scalar; any other bare word is a string; a quoted value is always a string.
Values compare as JSON scalars of the same type (`true` never equals `1`,
`1` never equals `"1"`; `1` equals `1.0`).

Meaning: `key` takes a mapping's key (or, when it is an integer, a list's
index); `*` maps the rest of the path over a list and flattens; a filter
`[field=value]` does the same over the items that match only (several
filters in a row must all match; an object without the field fails `=` and
passes `!=`; a bare scalar item is kept by no filter); an index `[n]` right after filters picks the
n-th matching item (no value when fewer match), elsewhere it indexes the
list (past its end is an error, like `.n`).
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["MISSING", "Cond", "Each", "Index", "Key", "PathError", "format_path", "parse_path", "walk"]

MISSING: Any = object()  # a key that is absent: "no value", not an error

_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_INT = re.compile(r"\s*(-?[0-9]+)\s*")
_NAME_STOP = set('.[]=!" \t\r\n')
_BARE_STOP = set('[]=!" \t\r\n')
_LITERALS = {"true": True, "false": False, "null": None}


class PathError(ValueError):
    """A path expression that does not parse; `position` is the 1-based character where it goes wrong."""

    def __init__(self, path: str, position: int, problem: str):
        self.path, self.position, self.problem = path, position, problem
        super().__init__(f"{path!r} at character {position}: {problem}")


@dataclass(frozen=True)
class Key:
    """A mapping's key (or, when it reads as an integer, a list's index)."""

    name: str


@dataclass(frozen=True)
class Index:
    """`[n]` on a list (negative counts from the end)."""

    index: int


@dataclass(frozen=True)
class Cond:
    """`field op value`: `field` is a tuple of names walked leniently, `op` is `=` or `!=`."""

    field: tuple[str, ...]
    op: str
    value: Any


@dataclass(frozen=True)
class Each:
    """Map the rest of the path over a list's items that meet every condition (none: `*`), or pick one of them."""

    where: tuple[Cond, ...] = ()
    pick: int | None = None


Step = Key | Index | Each


@functools.lru_cache(maxsize=512)
def parse_path(path: str) -> tuple[Step, ...]:
    """The steps of `path` (see the module docstring).

    Raises `PathError` naming the 1-based character where the expression goes
    wrong; any string either parses or raises that, never another exception.
    """
    if not isinstance(path, str) or not path:
        raise PathError(str(path), 1, "empty path")
    steps: list[Step] = []
    i, n = 0, len(path)
    while True:
        start = i
        if path.startswith("*", i) and (i + 1 == n or path[i + 1] in ".["):
            i += 1
            if i < n and path[i] == "[":
                raise PathError(path, i + 1, "a filter or index cannot follow `*`: write `list[field=value]` where you would write `list.*`")
            steps.append(Each())
        else:
            while i < n and path[i] not in ".[]":
                i += 1
            if i == start:
                raise PathError(path, i + 1, "empty key" if i == n or path[i] != "]" else "unmatched ']'")
            steps.append(Key(path[start:i]))
            i = _selectors(path, i, steps)
        if i == n:
            return tuple(steps)
        if path[i] != ".":
            raise PathError(path, i + 1, f"unexpected {path[i]!r}")
        i += 1
        if i == n:
            raise PathError(path, i + 1, "empty key after the last '.'")


def _selectors(path: str, i: int, steps: list[Step]) -> int:
    """Parse `[...]` selectors from `i`, appending their steps; the index after the last one."""
    where: list[Cond] = []
    while i < len(path) and path[i] == "[":
        close = _closing(path, i)
        body = path[i + 1 : close]
        if (m := _INT.fullmatch(body)) is not None:
            if where:
                steps.append(Each(tuple(where), int(m.group(1))))
                where = []
            else:
                steps.append(Index(int(m.group(1))))
        else:
            where.append(_cond(path, i + 1))
        i = close + 1
    if where:
        steps.append(Each(tuple(where)))
    return i


def _closing(path: str, i: int) -> int:
    """The index of the `]` closing the bracket at `i` (quotes skipped)."""
    j = i + 1
    while j < len(path):
        ch = path[j]
        if ch == '"':
            j = _string_end(path, j)
        elif ch == "]":
            return j
        elif ch == "[":
            raise PathError(path, j + 1, "'[' inside a filter: brackets do not nest")
        j += 1
    raise PathError(path, i + 1, "'[' is never closed")


def _string_end(path: str, j: int) -> int:
    """The index of the quote closing the string that opens at `j`."""
    k = j + 1
    while k < len(path):
        if path[k] == "\\":
            k += 2
            continue
        if path[k] == '"':
            return k
        k += 1
    raise PathError(path, j + 1, "the quoted value is never closed")


def _cond(path: str, i: int) -> Cond:
    """Parse `field op value` starting at `i` (just after `[`), up to the closing `]`."""
    i = _skip_space(path, i)
    field: list[str] = []
    while True:
        start = i
        while path[i] not in _NAME_STOP:
            i += 1
        if i == start:
            what = "a field name" if not field else "a field name after '.'"
            raise PathError(path, i + 1, f"expected {what} (a filter reads `[field=value]` or `[field!=value]`)")
        field.append(path[start:i])
        if path[i] != ".":
            break
        i += 1
    i = _skip_space(path, i)
    if path.startswith("!=", i):
        op, i = "!=", i + 2
    elif path[i] == "=":
        op, i = "=", i + 1
        if path[i] == "=":
            raise PathError(path, i + 1, "write '=' (not '==') to compare")
    else:
        raise PathError(path, i + 1, "expected '=' or '!=' after the field name")
    i = _skip_space(path, i)
    value, i = _value(path, i)
    i = _skip_space(path, i)
    if path[i] != "]":
        raise PathError(path, i + 1, "expected ']' after the value (quote a value that has spaces or brackets)")
    return Cond(tuple(field), op, value)


def _value(path: str, i: int) -> tuple[Any, int]:
    if path[i] == '"':
        end = _string_end(path, i)
        try:
            text = json.loads(path[i : end + 1])
        except ValueError as exc:  # a bad escape such as "\q"
            raise PathError(path, i + 1, f"the quoted value is not a JSON string: {exc.args[0].split(':')[0]}") from None
        return text, end + 1
    start = i
    while path[i] not in _BARE_STOP:
        i += 1
    if i == start:
        raise PathError(path, i + 1, "expected a value after the operator")
    word = path[start:i]
    if word in _LITERALS:
        return _LITERALS[word], i
    if _NUMBER.fullmatch(word):
        number = json.loads(word)
        if number in (float("inf"), float("-inf")):
            raise PathError(path, start + 1, f"the number {word} is out of range")
        return number, i
    return word, i


def _skip_space(path: str, i: int) -> int:
    while path[i] in " \t\r\n":
        i += 1
    return i


def format_path(steps: tuple[Step, ...]) -> str:
    """The canonical text of `steps`: `parse_path(format_path(s)) == s` for any steps `parse_path` returns."""
    out: list[str] = []
    for step in steps:
        if isinstance(step, Key):
            out.append(("." if out else "") + step.name)
        elif isinstance(step, Index):
            out.append(f"[{step.index}]")
        elif not step.where:
            out.append((".*" if out else "*"))
        else:
            out.append("".join(f"[{'.'.join(c.field)}{c.op}{_show(c.value)}]" for c in step.where))
            if step.pick is not None:
                out.append(f"[{step.pick}]")
    return "".join(out)


def _show(value: Any) -> str:
    """A filter's value as written: bare when it reads back as the same string, else JSON."""
    bare = isinstance(value, str) and value and value not in _LITERALS and not _NUMBER.fullmatch(value) and not _BARE_STOP.intersection(value)
    return value if bare else json.dumps(value)


def walk(node: Any, steps: tuple[Step, ...], i: int = 0) -> Any:
    """The value at `steps[i:]` from `node`; `MISSING` when a key is absent.

    Raises `ValueError` when the path runs into a scalar, indexes past a
    list, uses a non-integer key on a list, or maps/filters what is not a list.
    """
    while i < len(steps):
        step = steps[i]
        if isinstance(step, Each):
            if node is None:
                return MISSING
            if not isinstance(node, list):
                raise ValueError(f"{_selector_text(step)} needs a list at {_where(steps, i)}, found {type(node).__name__}")
            items = [item for item in node if all(_meets(item, c) for c in step.where)]
            if step.pick is not None:
                if not -len(items) <= step.pick < len(items):
                    return MISSING  # fewer items matched: data, not a broken path
                node = items[step.pick]
                i += 1
                continue
            out: list[Any] = []
            for item in items:
                got = walk(item, steps, i + 1)
                if got is MISSING or got is None:
                    continue  # `messages.*.tool_calls`: a message whose tool_calls is null adds nothing
                if isinstance(got, list) and i + 1 < len(steps):
                    out.extend(got)  # `steps.*.calls`: each step's list of calls, flattened
                else:
                    out.append(got)
            return out
        if node is None:
            return MISSING
        if isinstance(step, Index):
            if not isinstance(node, list):
                raise ValueError(f"{_where(steps, i + 1)}: [{step.index}] needs a list, found {type(node).__name__}")
            node = _index(node, step.index, steps, i)
        elif isinstance(node, dict):
            if step.name not in node:
                return MISSING
            node = node[step.name]
        elif isinstance(node, list):
            try:
                index = int(step.name)
            except ValueError:
                raise ValueError(f"{_where(steps, i + 1)}: {step.name!r} is not a list index") from None
            node = _index(node, index, steps, i)
        else:
            raise ValueError(f"{_where(steps, i + 1)}: cannot take {step.name!r} of a {type(node).__name__}")
        i += 1
    return node


def _index(node: list[Any], index: int, steps: tuple[Step, ...], i: int) -> Any:
    if not -len(node) <= index < len(node):
        raise ValueError(f"{_where(steps, i + 1)}: index {index} is past the end of a list of {len(node)}")
    return node[index]


def _where(steps: tuple[Step, ...], upto: int) -> str:
    return format_path(steps[:upto]) or "(record)"


def _selector_text(step: Each) -> str:
    return "`*`" if not step.where else f"`{format_path((step,))}`"


def _meets(item: Any, cond: Cond) -> bool:
    if not isinstance(item, (dict, list)):
        return False  # a bare scalar in the list has no fields: kept by no filter, `!=` included
    value = item
    for name in cond.field:
        if isinstance(value, dict):
            value = value.get(name, MISSING)
        elif isinstance(value, list) and _INT.fullmatch(name):
            k = int(name)
            value = value[k] if -len(value) <= k < len(value) else MISSING
        else:
            value = MISSING
        if value is MISSING:
            break
    equal = value is not MISSING and _same(value, cond.value)
    return equal if cond.op == "=" else not equal


def _same(a: Any, b: Any) -> bool:
    """JSON scalar equality: the same JSON type and value (`True` is not `1`, `1` equals `1.0`)."""
    if isinstance(b, bool) or isinstance(a, bool):
        return type(a) is type(b) and a == b
    if b is None:
        return a is None
    if isinstance(b, (int, float)):
        return isinstance(a, (int, float)) and a == b
    return isinstance(a, str) and a == b
