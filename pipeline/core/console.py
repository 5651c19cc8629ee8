"""The one way tracejudge makes a rich `Console`: text from traces and configs is never markup.

Case ids, metric names, file names and reasons come from users' data. Printed
through rich's default console, `[/x]` in an id raised `MarkupError` after a
run had finished, `[red]` in a file name vanished, and `file.jsonl:100:`
became an emoji. Consoles made here parse neither markup nor emoji codes; a
line that styles itself passes `markup=True` and escapes (`rich.markup.escape`)
every piece of data in it, and table cells that carry data are `Text`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

__all__ = ["cell", "fits", "fitted", "plain_console", "stdout_console", "wrap_name"]

# Piped output (a CI log, a file): as wide as COLUMNS says, else 100 columns.
PLAIN_WIDTH = 100


class _Console(Console):
    def on_broken_pipe(self) -> None:
        # rich exits with status 1 when stdout's reader goes away (`| head -1`); the CLI ends such a command
        # quietly with 141 (`entrypoints.commands.failures.broken_pipe`), whichever way it writes.
        raise BrokenPipeError


def plain_console(**options: Any) -> Console:
    """A `rich.console.Console(**options)` that prints strings literally (no markup, no emoji codes).

    A closed stdout raises `BrokenPipeError` (rich's own handling exits with status 1).
    """
    return _Console(markup=False, emoji=False, **options)


def cell(text: Any, style: str = "") -> Text:
    """A table cell holding `text` literally, whatever the console's markup setting (a caller's own console included)."""
    return Text(str(text), style=style)


def stdout_console() -> Console:
    """The console for a command's tables on stdout: the terminal's width, or `COLUMNS` (else 100) when stdout is not a terminal."""
    probe = plain_console()
    if probe.is_terminal:
        return probe
    columns = os.environ.get("COLUMNS", "")
    return plain_console(width=int(columns) if columns.isdigit() and int(columns) > 0 else PLAIN_WIDTH)


def fits(console: Console, table: Table) -> bool:
    """Whether `table` fits `console`'s width with every unbreakable cell whole (its natural width, not capped by the console's)."""
    return Measurement.get(console, console.options.update_width(10_000), table).maximum <= console.width


_BREAK = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[_\-./@( ])(?=[^_\-./@( ])")


def wrap_name(name: str, width: int) -> str:
    """`name` on lines of at most `width` characters, broken only between words (`ToolCall|Necessity`, `writes_|exact`).

    A word longer than `width` keeps a line of its own, whole.
    """
    lines: list[str] = []
    for part in _BREAK.split(name):
        if lines and len(lines[-1]) + len(part) <= width:
            lines[-1] += part
        else:
            lines.append(part)
    return "\n".join(line.rstrip() for line in lines)


def fitted(console: Console, build: Callable[[int, Callable[[str], str]], Table], levels: int) -> Table:
    """The first of `levels` layouts (`build(level, name)`; higher is narrower) that fits `console` with names whole;
    else the narrowest with names wrapped between words to the widest that fits. Figures are never cut: their columns are `no_wrap`.

    `build` applies `name` to each name cell (identity, or a `wrap_name` at some width).
    """
    for level in range(levels):
        table = build(level, lambda s: s)
        if fits(console, table):
            return table
    for width in range(40, 3, -1):
        table = build(levels - 1, lambda s, w=width: wrap_name(s, w))  # type: ignore[misc]
        if fits(console, table):
            return table
    return table
