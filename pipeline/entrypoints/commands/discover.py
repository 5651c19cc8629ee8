"""`tracejudge init`, `list` and `explain`: what there is, and a starter config to begin with."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from tracejudge.entrypoints.commands.exits import EXIT_BAD_INPUT, EXIT_OK

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["command"]


def command(args: argparse.Namespace, err: Console) -> int:
    """`init`, `list` and `explain` (see `tracejudge.entrypoints.starter`)."""
    from tracejudge.entrypoints import starter

    if args.command == "list":
        if args.what == "formats":
            rows = {name: (summary, False) for name, summary in starter.format_summaries().items()}
        else:
            rows = starter.metric_summaries()
        width = max(map(len, rows)) + 2
        for name, (summary, judge) in rows.items():
            print(f"{name:<{width}}{'[judge] ' if judge else ''}{summary}")
        if args.what == "metrics":
            print("\n[judge]: an LLM judge (needs a judge: section). `tracejudge explain METRIC` for options and sources.")
        return EXIT_OK
    if args.command == "explain":
        try:
            print(starter.describe_metric(args.metric))
        except KeyError as exc:
            err.print(f"error: {exc.args[0]}", highlight=False, markup=False, soft_wrap=True)
            return EXIT_BAD_INPUT
        return EXIT_OK
    out: Path = args.output
    if (problem := _output_problem(out)) is not None:
        err.print(problem, highlight=False, markup=False, soft_wrap=True)
        return EXIT_BAD_INPUT
    if out.exists() and not args.force:
        err.print(f"error: {out} exists; give another -o, or --force to overwrite it", highlight=False, markup=False, soft_wrap=True)
        return EXIT_BAD_INPUT
    for flag, path in (("--dataset", args.dataset), ("--tasks", args.tasks)):
        if path is not None and not path.exists():
            err.print(f"error: {flag} {path}: no such file or folder", highlight=False, markup=False, soft_wrap=True)
            return EXIT_BAD_INPUT
    if args.format is None:
        args.format = "native"
        if args.dataset is not None:
            from tracejudge.entrypoints.commands.init_detect import NoStarter, detect_format

            live = {name: f"holds no model output to score: start from {starter.LIVE_EXAMPLES[name]} (a live target) and set "
                           "dataset.path (README, \"Live targets\")" for name in starter.LIVE_ONLY_FORMATS}
            try:
                args.format, said = detect_format(args.dataset, set(starter.FORMATS), live)
            except NoStarter as exc:
                err.print(str(exc), highlight=False, markup=False, soft_wrap=True)
                return EXIT_BAD_INPUT
            if said is not None:
                err.print(said, highlight=False, markup=False, soft_wrap=True)
    if (folder := _folder_not_read(args.format, args.dataset, args.tasks)) is not None:
        # Said now: written into the config, the folder was a config error at the first `run` of a config said to run as written.
        err.print(folder, highlight=False, markup=False, soft_wrap=True)
        return EXIT_BAD_INPUT
    from tracejudge.core.utf8 import encodable, safe_text

    for flag, path in (("--dataset", args.dataset), ("--tasks", args.tasks), ("-o", out)):
        # A name holding a byte that is not UTF-8 (a Latin-1 file name) cannot be written into a UTF-8 YAML config
        # (`-o`: its stem names the run directory in it): said in one line, not an internal error while writing.
        if path is not None and not encodable(str(path)):
            err.print(f"error: {flag} {safe_text(str(path))}: the name holds a byte that is not UTF-8, which a config (UTF-8 YAML) "
                      "cannot name; rename it", highlight=False, markup=False, soft_wrap=True)
            return EXIT_BAD_INPUT
    tasks = args.tasks
    if args.format == "tau-bench" and args.dataset is not None and tasks is None:
        tasks = starter.tau_tasks_beside(args.dataset)
        said = (f"tasks: {tasks}, found where the trajectory file's layout puts it (give --tasks for another)" if tasks is not None
                else "no --tasks, none found beside the dataset: each run's own task (info.task) gives its expected actions")
        err.print(said, highlight=False, markup=False, soft_wrap=True)
    text = starter.starter_config(args.format, out, args.dataset, tasks)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
    except OSError as exc:  # (no permission, a read-only disk, a symlink into a missing folder): the path and why, one line
        err.print(f"error: -o {out}: cannot write it: {exc.strerror or type(exc).__name__}", highlight=False, markup=False, soft_wrap=True)
        return EXIT_BAD_INPUT
    todo = "" if args.dataset is not None else " (point dataset.path at your data first)"
    # (Quoted as the shell needs it: pasted, a path with a space was two arguments.)
    err.print(f"wrote {out}{todo}; run it with: tracejudge run {shlex.quote(str(out))}", highlight=False, markup=False, soft_wrap=True)
    return EXIT_OK


def _output_problem(out: Path) -> str | None:
    """The error line for an `-o` that names a folder, lies under a file or holds a line break, else None.

    A folder was refused with the raw errno (`error: d: Is a directory`) after `--force`, and without it told to
    give `--force`, which could not help; a path under a file was an internal error (FileExistsError from mkdir).
    """
    from tracejudge.entrypoints.starter import YAML_BREAKS

    if YAML_BREAKS.search(str(out)):
        # Its name goes into the config's comment lines (the command that runs it): a line break ended the comment there,
        # and the rest of the name was read as YAML, so the config written did not load.
        return f"error: -o {str(out)!r}: the name holds a line break, which the config's comment lines cannot hold; rename it"
    if out.is_dir():
        return f"error: -o {out}: is a folder; init writes one config file: name the file ({out / 'tracejudge.yaml'}, say)"
    blocking = next((parent for parent in out.parents if parent.exists() and not parent.is_dir()), None)
    if blocking is not None:
        return f"error: -o {out}: {blocking} is a file, not a folder: name a path in a folder"
    return None


def _folder_not_read(fmt: str, dataset: Path | None, tasks: Path | None) -> str | None:
    """The error line for a folder given where `fmt` reads one file (`--tasks` always; `--dataset` unless the format
    reads folders, as `otel` and `inspect` do), else None."""
    from tracejudge.core import registry

    spec = registry.format_for(fmt)
    for flag, path in (("--dataset", dataset), ("--tasks", tasks)):
        if path is None or not path.is_dir():
            continue
        if flag == "--tasks" or not spec.reads_dirs:
            return f"error: {flag} {path}: is a folder; format {fmt!r} reads one file: name the file"
        # A folder of a format that reads one only with its `beside` folder and `folder_file` in it (τ²-bench's dir
        # layout): any other folder was written into the config, and its first run was a config error.
        if not spec.beside:
            continue
        holding = [name for name in (spec.folder_file, f"{spec.beside}/") if name]
        missing = [name for name in holding if not ((path / name).is_dir() if name.endswith("/") else (path / name).is_file())]
        if missing:
            return (f"error: {flag} {path}: is a folder without {' and '.join(missing)}; format {fmt!r} reads one file, "
                    f"or a folder holding {' and '.join(holding)}: name the file")
    return None
