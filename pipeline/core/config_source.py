"""Where a run config's values come from: the YAML file's lines, `--set` overrides, paths and defaults.

`tracejudge.core.config.load_config` reads a file with these; error messages
name the file and line of a key (`_fmt`) or the `--set` option that gave it.
PyYAML is imported by the functions that read YAML, so the config models
alone (a worker process, a report) never import it.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from tracejudge.core.errors import ConfigError
from tracejudge.core.field_paths import shown_path
from tracejudge.core.inert_text import visible
from tracejudge.core.config_yaml import parse, read_text
from tracejudge.core.yaml_checks import MAX_EXPANDED_NODES, cycle

if TYPE_CHECKING:
    import yaml

__all__ = ["MAX_EXPANDED_NODES", "ConfigSource", "apply_overrides", "locate", "read_config"]

# Keys holding filesystem paths: resolved against the config's folder.
# `-` for a dataset file (standard input, to many tools) is left as it is, not resolved to a file named `-`:
# `validate_config` refuses it saying why (`./-` names such a file).
STDIN = "-"
_STDIN_KEYS = {("dataset", "path"), ("dataset", "tasks")}
_PATH_KEYS = {
    ("dataset", "path"),
    ("dataset", "tasks"),
    ("cache", "dir"),
    ("run", "dir"),
    ("target", "pythonpath"),
    ("target", "cwd"),
    ("target", "traces"),
    ("judge", "tokenizer"),
    ("assertions", "regression", "baseline"),
    ("judge", "labels", "path"),
}


def _line_index(root: yaml.Node | None) -> dict[tuple[str, ...], int]:
    """Map every key path of a composed YAML document to its 1-based line."""
    import yaml

    index: dict[tuple[str, ...], int] = {}

    def walk(node: Any, path: tuple[str, ...], inside: frozenset[int]) -> None:
        if id(node) in inside:  # an alias to a node that contains it (`&a {y: *a}`): load_config refuses it
            return
        inside = inside | {id(node)}
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                sub = (*path, str(key.value))
                index[sub] = key.start_mark.line + 1
                walk(value, sub, inside)
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                sub = (*path, str(i))
                index[sub] = item.start_mark.line + 1
                walk(item, sub, inside)

    walk(root, (), frozenset())
    return index


def _locate(path: tuple[str, ...], lines: dict[tuple[str, ...], int]) -> int | None:
    for n in range(len(path), 0, -1):
        if path[:n] in lines:
            return lines[path[:n]]
    return None


def _fmt(source: str, loc: tuple[Any, ...], msg: str, lines: dict[tuple[str, ...], int], overridden: dict[tuple[str, ...], str],
         about: tuple[tuple[str, ...], ...] = ()) -> str:
    # `overridden`: key path → the `--set KEY=VALUE` that gave it, so an error in a value from the
    # command line names that option, not a line of a file the user did not change. `about`: the other key paths the
    # error depends on (`*` standing for any one key), such as the metrics' names for a gate naming a metric: a `--set`
    # of one of them is named beside the file's line, for it may be what made the error.
    key = tuple(str(p) for p in loc)
    # (a metric named `tool.acc` is shown as `--set` takes it, `assertions.metrics["tool.acc"]`, not as keys `tool`, `acc`;
    # a zero-width space pasted into a key, or a `--set`, is shown escaped: else `assertions\u200b` reads `assertions`)
    dotted = shown_path(key) or "(top level)"
    for o, item in overridden.items():
        if key[: len(o)] == o:
            return f"{visible(item)}: {dotted}: {msg}"
    line = _locate(key, lines)
    where = f"{source}:{line}" if line else source
    # An error on a whole section (a model validator) may come from a value set inside it on the command line; so may
    # one on a key of the file beside a `type` (`format`, `provider`, `kind`) given there, which says what fits beside it
    # (`--set metrics.0.type=Regex` leaves the file's `arguments: exact` of ToolCalls an unknown key).
    inside = [item for o, item in overridden.items()
              if key and (o[: len(key)] == key or (o[-1] in _SELECTORS and len(o) <= len(key) and key[: len(o) - 1] == o[:-1]))
              or any(_matches(o, pattern) for pattern in about)]
    return f"{where}: {dotted}: {msg}" + (f" (with {', '.join(map(visible, inside))})" if inside else "")


def _matches(key: tuple[str, ...], pattern: tuple[str, ...]) -> bool:
    """Whether `key` is `pattern`, a `*` of the pattern standing for any one key."""
    return len(key) == len(pattern) and all(p in ("*", k) for k, p in zip(key, pattern, strict=True))


# The keys that say what the other keys of their mapping may be: a metric's `type`, the dataset's `format`, the judge's
# `provider`, the target's `kind`.
_SELECTORS = frozenset({"type", "format", "provider", "kind"})


# A message about a key of the config that does not say where the key is: `dataset.path: …` raised once the config is
# read (an empty dataset file, the wrong format found in its first records, a target that cannot start).
_KEY_FIRST = re.compile(r"([a-z_]+(?:\.[A-Za-z0-9_]+)+): ")


def locate(message: str, source: "ConfigSource") -> str:
    """`message` (a `ConfigError`'s, one problem a line) with each line that starts with a key path of a section `source`
    holds or a config has (`dataset.path: …`) and names no place prefixed as `_fmt` prefixes the problems it finds
    itself: `FILE:LINE:`, or the `--set` option that gave the key. A line already naming the file is kept."""
    from tracejudge.core.config import RunConfig

    sections = set(RunConfig.model_fields) | set(source.data)
    out = []
    for line in message.split("\n"):
        m = _KEY_FIRST.match(line)
        if m is None or line.startswith(source.source) or m.group(1).split(".", 1)[0] not in sections:
            out.append(line)
            continue
        key = tuple(m.group(1).split("."))
        out.append(_fmt(source.source, key, line[m.end():], source.lines, source.overridden))
    return "\n".join(out)


def _key_parts(dotted: str) -> list[str]:
    """The keys of `--set` key path `dotted`: split at each `.`, but a key in brackets is one key, dots and all
    (`assertions.metrics["tool.acc"].min_mean`, as in a labels field path: `field_paths`). Raises `ConfigError`
    for brackets that do not parse."""
    if "[" not in dotted and "]" not in dotted:
        return dotted.split(".")
    from tracejudge.core.field_paths import parse_path

    try:
        return [key for key, _ in parse_path(dotted)]
    except ValueError as exc:
        raise ConfigError(f"--set {visible(dotted)}: {exc}") from None


def _split_metric_name(data: dict[str, Any], dotted: str, parts: list[str]) -> None:
    """Raise `ConfigError` when `parts` (`assertions.metrics.a.b.min_mean`) split the name of a metric that holds a dot
    (`a.b`, where no metric is named `a`), saying how to write it: the split set a rule for a metric `a` that is not there."""
    metrics = data.get("metrics")
    if len(parts) < 4 or parts[:2] != ["assertions", "metrics"] or not isinstance(metrics, list):
        return
    names = {m.get("name") or m.get("type") for m in metrics if isinstance(m, dict)}
    if parts[2] in names:
        return
    for end in range(len(parts), 3, -1):
        name = ".".join(parts[2:end])
        if name in names:
            rest = "".join(f".{p}" for p in parts[end:])
            raise ConfigError(f"--set {visible(dotted)}: the metric {name!r} holds a dot, which a key path splits: write its name "
                              f"in brackets, --set 'assertions.metrics[\"{visible(name)}\"]{visible(rest)}=…'")


def _set_path(data: dict[str, Any], dotted: str, value: Any) -> tuple[str, ...]:
    parts = _key_parts(dotted)
    _split_metric_name(data, dotted, parts)
    node: Any = data
    for i, part in enumerate(parts[:-1]):
        nxt = parts[i + 1]
        if isinstance(node, list):
            if not part.isdigit() or int(part) >= len(node):
                raise ConfigError(f"--set {visible(dotted)}: {shown_path(parts[: i + 1])} is not an index of the list")
            node = node[int(part)]
            continue
        if not isinstance(node, dict):
            raise ConfigError(f"--set {visible(dotted)}: {shown_path(parts[:i])} is not a mapping")
        if part not in node or node[part] is None:
            node[part] = [] if nxt.isdigit() else {}
        node = node[part]
    last = parts[-1]
    if isinstance(node, list):
        if not last.isdigit() or int(last) > len(node):
            raise ConfigError(f"--set {visible(dotted)}: {last!r} is not an index of the list")
        if int(last) == len(node):
            node.append(value)
        else:
            node[int(last)] = value
    elif isinstance(node, dict):
        node[last] = value
    else:
        raise ConfigError(f"--set {visible(dotted)}: {shown_path(parts[:-1])} is not a mapping")
    return tuple(parts)


def apply_overrides(data: dict[str, Any], overrides: list[str], cwd: Path,
                    typed: dict[str, str] | None = None) -> dict[tuple[str, ...], str]:
    """Apply `--set dotted.key=value` overrides in place; values parse as YAML scalars.

    A relative value of a path key (`run.dir`, `dataset.path`, …) resolves
    against `cwd`: `load_config` passes the config's folder, as for the
    same value written in the file; so do the path keys inside a section set
    whole (`--set 'run={dir: ../runs/x}'`). Returns the key paths that were
    overridden, each with the option as typed (`--set key=value`, the value
    masked as the run's recorded command masks it and cut to 80 characters; or `typed[override]` for an override a command-line
    option stands for, e.g. `--shard 3/2`), for error messages. Raises `ConfigError` for an
    override without `=` or one that walks into a non-mapping; an error quotes
    no value that the recorded command would mask (`redact_command.redact_option`).
    """
    import yaml

    from tracejudge.llm.redact_command import redact_option  # (an error quotes an option as the run's recorded command shows it)

    touched: dict[tuple[str, ...], str] = {}
    for item in overrides:
        if "=" not in item:
            raise ConfigError(f"--set {redact_option(item)!r}: expected KEY.PATH=VALUE")
        dotted, raw = item.split("=", 1)
        dotted = dotted.strip()
        if not dotted:
            raise ConfigError(f"--set {redact_option(item)!r}: empty key path")
        try:
            # (`-`, standard input to many tools, is YAML for a list holding null: kept as typed, `validate_config` says why
            # it is no dataset)
            value = yaml.safe_load(raw) if raw.strip() not in ("", STDIN) else raw.strip()
        except RecursionError:
            raise ConfigError(f"--set {redact_option(item)[:80]!r}: the value is nested too deeply (thousands of levels)") from None
        except ValueError:  # (a whole number Python will not read from text: `sys.get_int_max_str_digits()`)
            raise ConfigError(f"--set {visible(dotted)}=…: {shown_path(_key_parts(dotted))}: a whole number of more than "
                              f"{sys.get_int_max_str_digits():,} digits is not read") from None
        except yaml.YAMLError as exc:
            shown = redact_option(item)
            # (PyYAML's message quotes the value's text: only a value with nothing masked is quoted whole)
            why = f"value {raw!r} is not valid YAML: {exc}" if shown == item else f"the value is not valid YAML ({_yaml_problem(exc)})"
            raise ConfigError(f"--set {visible(dotted if shown == item else shown)}: {why}") from None
        key = _set_path(data, dotted, value)
        if key in _STDIN_KEYS and value == STDIN:
            pass
        elif key in _PATH_KEYS and isinstance(value, str) and value:
            _set_path(data, dotted, _resolved(value, cwd))
        else:  # a whole section (`--set 'run={dir: ../runs/x}'`): the path keys in it resolve as they would in the file
            _resolve_paths(data, cwd, under=key)
        shown = redact_option(item).split("=", 1)[1]
        if key and key[-1] in ("base_url", "url", "tracking_uri") and isinstance(value, str):
            from tracejudge.core.urls import shown_url

            shown = shown_url(value)  # (README: a URL is shown without user, password or query)
        touched[key] = (typed or {}).get(item) or f"--set {dotted}={shown if len(shown) <= 80 else shown[:77] + '...'}"
    return touched


def _yaml_problem(exc: Exception) -> str:
    """What PyYAML says is wrong and where in the value, without the value's text it quotes."""
    mark = getattr(exc, "problem_mark", None)
    where = f" at column {mark.column + 1}" if mark is not None else ""
    return f"{getattr(exc, 'problem', None) or type(exc).__name__}{where}"


def _resolve_paths(data: dict[str, Any], base: Path, under: tuple[str, ...] = ()) -> None:
    # (`under`: only the path keys inside that section, such as `("run",)` for `--set 'run={dir: …}'`)
    for *sections, key in _PATH_KEYS:
        if under and (len(sections) + 1 <= len(under) or tuple(sections[: len(under)]) != under):
            continue
        block: Any = data
        for section in sections:
            block = block.get(section) if isinstance(block, dict) else None
        if isinstance(block, dict) and isinstance(block.get(key), str) and block[key] and (block[key] != STDIN or (*sections, key) not in _STDIN_KEYS):
            block[key] = _resolved(block[key], base)


def _resolved(text: str, base: Path) -> str:
    """Path key `text` made absolute: a leading `~` or `~user` is that home folder, as in a shell; anything else
    relative is of `base`. (`os.path.expanduser` reads the text, so `./~/x` stays the folder named `~`: `Path`
    drops the `./` first.) Before, `--set dataset.path=~/x` was of the config's folder, the same value in the file of home."""
    p = Path(os.path.expanduser(text))
    return str(p if p.is_absolute() else _resolve(base / p))


def _resolve(path: Path) -> Path:
    """`path.resolve()`, or `path` as given when it is a symlink loop: the file checks then name it with its key and line."""
    try:
        return path.resolve()
    except RuntimeError:  # "Symlink loop from ...", raised before any file check could say where
        return path


def _default_run_dir(data: dict[str, Any], default: Path) -> None:
    # `runs/<stem>` beside the config: a second config never lands in the first one's run directory.
    run = data.get("run")
    if run is None:
        data["run"] = run = {}
    if isinstance(run, dict) and run.get("dir") in (None, ""):
        run["dir"] = str(default)


def _search_config_folder(data: dict[str, Any], base: Path) -> None:
    """Let user code named by the config (`module:attr` adapters, metrics, targets) import from the config's folder.

    The folder is appended to `sys.path`, after installed packages, so it never
    shadows them; worker processes inherit `sys.path`, so they import the same
    modules. The current directory is searched too (see `registry.import_user_module`).
    """
    named = [((data.get("dataset") or {}) if isinstance(data.get("dataset"), dict) else {}).get("format")]
    metrics = data.get("metrics")  # anything but a list is validation's to name (`metrics: 5` is no crash)
    named += [m.get("type") for m in metrics if isinstance(m, dict)] if isinstance(metrics, list) else []
    target = data.get("target")
    if isinstance(target, dict):
        named.append(target.get("callable"))
    if any(isinstance(n, str) and ":" in n for n in named):
        from tracejudge.core import registry  # (here: pydantic is not needed to read a config's text)

        registry.add_search_dir(base)


class ConfigSource(NamedTuple):
    """A run config as read from its file and `--set`, before validation: what `config.validate_config` takes.

    `data`: the mapping, paths absolute; `source`: the file as named; `lines`: key path → 1-based line in the file;
    `overridden`: key path → the option as typed, for the keys `--set` gave.
    """

    data: dict[str, Any]
    source: str
    lines: dict[tuple[str, ...], int]
    overridden: dict[tuple[str, ...], str]


def read_config(path: str | Path, overrides: list[str] | None = None, *, cwd: Path | None = None,
                typed: dict[str, str] | None = None) -> ConfigSource:
    """The config file at `path` read, checked as YAML, its paths resolved and `overrides` applied (`config.load_config`'s
    first half: PyYAML only, no pydantic, so `tracejudge run` can start hashing the dataset before its models load).

    Raises `ConfigError` naming the file (and line) for a missing, unreadable or non-regular file (a FIFO), invalid YAML
    (line and column), an alias bomb, a duplicate key, a number of too many digits, a recursive alias, a top level that
    is not a mapping, or a bad `--set`.
    """
    cfg_path = Path(path)
    source = str(path)
    root, data = parse(read_text(cfg_path, source), source)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{source}:1: (top level): expected a mapping of sections, got {type(data).__name__}")
    lines = _line_index(root)
    if (looped := cycle(data, ())) is not None:
        dotted = shown_path(looped)
        where = f"{source}:{lines[looped]}" if looped in lines else source
        raise ConfigError(f"{where}: {dotted}: a YAML alias refers to a mapping or list that contains it; "
                          "a config must not recurse")
    base = cfg_path.resolve().parent
    _resolve_paths(data, base)
    touched = apply_overrides(data, overrides or [], cwd or base, typed)
    _default_run_dir(data, base / "runs" / cfg_path.stem)
    _search_config_folder(data, base)
    return ConfigSource(data, source, lines, touched)
