"""`tracejudge init --dataset PATH` without `--format`: the format is the one the data's first records read as.

The same trial read a run's config check makes when no record of a file reads under its format
(`stages.extract.first_records.formats_that_read`): the first records of the file under each built-in
format. `native` wins when it reads them (the default, and what a config of tracejudge's own records
names); else the one format that reads them. A folder is told by its first data file (τ²-bench's
`results.json` first), for a format that reads folders (`otel`, `inspect`, `tau2-bench`). Else (none,
several, a format `init` has no starter for) `native`, the default, with a line saying why and what to give.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["NoStarter", "detect_format"]

_DEFAULT = "native"
_DATA = (".json", ".jsonl", ".ndjson", ".eval")


class NoStarter(ValueError):
    """The data reads only as a format `init` writes no starter config for (its message says where to start instead)."""


def detect_format(dataset: Path, starters: set[str], live_only: dict[str, str]) -> tuple[str, str | None]:
    """(the format to write for `dataset`, a line telling the user, or None when the default reads it as it stands).

    `starters` are the formats `init` writes a starter config for; `live_only` maps each format that needs a live
    target to the message saying where to start (raised as `NoStarter` when the data reads only as one). Never raises
    otherwise: an unreadable file is the run's to name.
    """
    probe, folder = dataset, dataset.is_dir()
    if folder:
        probe = _first_data_file(dataset)
        if probe is None:
            return _DEFAULT, None
    found = _reading(probe)
    if not folder and _DEFAULT in found:
        return _DEFAULT, None
    if folder:
        from tracejudge.core import registry

        found = [name for name in found if registry.format_for(name).reads_dirs]
    usable = [name for name in found if name in starters]
    what = f"its files ({probe.name} first)" if folder else "its first records"
    if len(usable) == 1:
        return usable[0], f"format: {usable[0]} ({what} read as {usable[0]}; give --format for another)"
    if usable:
        return _DEFAULT, f"format: {_DEFAULT} (the default; {what} read as {' or '.join(usable)}: give --format to choose)"
    live = [name for name in found if name in live_only]
    if live:
        raise NoStarter(f"error: --dataset {dataset}: {what} read as {live[0]}, which " + live_only[live[0]])
    if folder:
        return _DEFAULT, None  # (the folder check says a folder is no native dataset, and to give --format)
    return _DEFAULT, (f"format: {_DEFAULT} (the default, though no format reads {what}: `tracejudge list formats` "
                      "says what each reads; give --format)")


def _reading(path: Path) -> list[str]:
    from tracejudge.core.config_sections import DatasetConfig
    from tracejudge.stages.extract.first_records import formats_that_read

    try:
        return formats_that_read(DatasetConfig(path=str(path), format=_DEFAULT), tried="")
    except Exception:  # noqa: BLE001 - a file that cannot be tried is left to the run, which names what is wrong with it
        return []


def _first_data_file(folder: Path) -> Path | None:
    """τ²-bench's `results.json` when the folder holds one, else its first data file by name (truth files aside), in it or
    in its first subfolder holding one (two levels: a folder of traces per agent; not a walk of a whole tree)."""
    if (folder / "results.json").is_file():
        return folder / "results.json"
    try:
        entries = sorted(folder.iterdir())
        for entry in entries:
            if entry.suffix in _DATA and not entry.name.endswith(".truth.json") and entry.is_file():
                return entry
        for sub in (e for e in entries if e.is_dir()):
            for entry in sorted(sub.iterdir()):
                if entry.suffix in _DATA and not entry.name.endswith(".truth.json") and entry.is_file():
                    return entry
    except OSError:
        return None
    return None
