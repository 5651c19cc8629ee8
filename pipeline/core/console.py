"""The one way tracejudge makes a rich `Console`: text from traces and configs is never markup.

Case ids, metric names, file names and reasons come from users' data. Printed
through rich's default console, `[/x]` in an id raised `MarkupError` after a
run had finished, `[red]` in a file name vanished, and `file.jsonl:100:`
became an emoji. Consoles made here parse neither markup nor emoji codes; a
line that styles itself passes `markup=True` and escapes (`rich.markup.escape`)
every piece of data in it, and table cells that carry data are `Text`.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.text import Text

__all__ = ["cell", "plain_console"]


def plain_console(**options: Any) -> Console:
    """A `rich.console.Console(**options)` that prints strings literally (no markup, no emoji codes)."""
    return Console(markup=False, emoji=False, **options)


def cell(text: Any, style: str = "") -> Text:
    """A table cell holding `text` literally, whatever the console's markup setting (a caller's own console included)."""
    return Text(str(text), style=style)
