"""A config file's text read and its YAML parsed, every fault of either a `ConfigError` naming the file (`read_text`,
`parse`): `config_source.read_config` reads every command's config through these.

A FIFO named as the config waited for a writer for ever, a NUL byte or a number of more than 4,300 digits was an
internal error with a crash log; each is a config error (exit status 2) naming the file and, where it has one, the
line and column or the key.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracejudge.core.errors import ConfigError
from tracejudge.core.field_paths import shown_path
from tracejudge.core.regular_file import NotRegularFile, open_regular, special_kind
from tracejudge.core.yaml_checks import MAX_EXPANDED_NODES, duplicate_key, expanded_size, huge_int

if TYPE_CHECKING:
    import yaml

__all__ = ["parse", "read_text"]


def read_text(path: Path, source: str) -> str:
    """The UTF-8 text of config file `path` (`source`: the path as the user gave it, for messages).

    Raises `ConfigError` naming `source` for a missing or unreadable file, one that is not a regular file (a FIFO, a
    device, a socket: opened without waiting on a writer, refused as `dataset.path` is) and text that is not UTF-8."""
    try:
        with open_regular(path) as fh:
            raw = fh.read()
    except FileNotFoundError:
        raise ConfigError(f"{source}: config file not found") from None
    except NotRegularFile:
        raise ConfigError(f"{source}: the config is {_kind(path)}, not a regular file: save it to a file and name that") from None
    except OSError as exc:
        raise ConfigError(f"{source}: cannot read config: {exc.strerror}") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{source}: not a UTF-8 text file (byte {exc.start}: {exc.reason}); "
                          "save the config as UTF-8 YAML") from None


def _kind(path: Path) -> str:
    try:
        return special_kind(os.stat(path).st_mode) or "a special file"
    except OSError:  # (replaced since it was opened)
        return "a special file"


def parse(text: str, source: str) -> tuple[yaml.Node | None, Any]:
    """`(root node, data)` of one YAML document `text`, parsed once: the node graph gives the alias-bomb, duplicate-key
    and number checks and every key's line, then the data is built from it.

    Raises `ConfigError` naming `source` for an alias bomb, a duplicate key, a whole number Python will not read (more
    than `sys.get_int_max_str_digits()` digits, naming its key), a document nested thousands of levels deep, and any
    YAML error (a character YAML refuses such as NUL, a syntax error), with its line and column."""
    import yaml

    loader = None
    try:
        # (the reader checks every character when made: a NUL byte is refused here, not by the parser)
        loader = yaml.SafeLoader(text)
        root = loader.get_single_node()
        if (expanded := expanded_size(root)) > MAX_EXPANDED_NODES:
            raise ConfigError(f"{source}: its YAML aliases expand to more than {MAX_EXPANDED_NODES:,} nodes "
                              f"({expanded:,}); a config is refused before it is built (an alias bomb would take minutes and gigabytes)")
        if (dup := duplicate_key(root)) is not None:
            key, line, first = dup
            raise ConfigError(f"{source}:{line}: {shown_path(key)}: duplicate key (first on line {first}); "
                              "YAML would keep only this one and drop the first silently: merge them into one")
        if (huge := huge_int(root, sys.get_int_max_str_digits())) is not None:
            key, line, digits = huge
            raise ConfigError(f"{source}:{line}: {shown_path(key) or '(top level)'}: a whole number of {digits:,} digits; "
                              f"at most {sys.get_int_max_str_digits():,} are read")
        data = None if root is None else loader.construct_document(root)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}:{_where(exc, text)}: invalid YAML: {_problem(exc)}") from None
    except RecursionError:  # (PyYAML composes and builds nested collections by recursion)
        raise ConfigError(f"{source}: nested too deeply for a config (thousands of levels of lists or mappings)") from None
    finally:
        if loader is not None:
            loader.dispose()
    return root, data


def _where(exc: Exception, text: str) -> str:
    """`LINE:COLUMN` (1-based) of a YAML error: a scanner's, parser's or composer's mark, or a reader's character offset."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    if mark is not None:
        return f"{mark.line + 1}:{mark.column + 1}"
    position = getattr(exc, "position", None)  # a `ReaderError`: an offset into the text
    if not isinstance(position, int):
        return "1"
    start = text.rfind("\n", 0, position) + 1
    return f"{text.count(chr(10), 0, position) + 1}:{position - start + 1}"


def _problem(exc: Exception) -> str:
    problem = getattr(exc, "problem", None)
    if problem:
        context = getattr(exc, "context", None)
        return f"{problem} ({context})" if context else str(problem)
    character = getattr(exc, "character", None)
    if character is not None:  # a `ReaderError`
        code = character if isinstance(character, int) else ord(character)
        return f"character U+{code:04X} is not allowed in YAML ({getattr(exc, 'reason', 'special characters are not allowed')})"
    return str(exc)
