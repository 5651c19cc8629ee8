"""`tracejudge view` the command: which run directories and folders of runs to serve, then the server until a signal."""

from __future__ import annotations

import sys
from pathlib import Path
from urllib.parse import quote

import anyio
from tracejudge.entrypoints.serve import until_signal
from tracejudge.viewer.app import start_viewer
from tracejudge.viewer.runs import load_runs, viewer_paths, watched_folders

__all__ = ["serve_command"]


def serve_command(run_dirs: list[Path], port: int = 8765, baseline: Path | None = None, *, cwd: Path | None = None) -> int:
    """`tracejudge view`: serve until SIGINT/SIGTERM; prints the URL. Returns the exit status (2 when no run directory is found)."""
    from tracejudge.engine.run_lock import in_progress_note

    paths = viewer_paths(run_dirs, cwd or Path.cwd())
    try:
        runs = load_runs(paths + ([baseline] if baseline is not None else []))
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not runs:
        print("error: no run directory given and none found under runs/", file=sys.stderr)
        return 2
    base = next((r for r in runs if baseline is not None and r.path.resolve() == Path(baseline).resolve()), None)
    if (note := in_progress_note([r.path for r in runs], "the pages show its results so far and catch up as it writes")) is not None:
        print(note, file=sys.stderr, flush=True)

    async def serve() -> int:
        try:
            runner, address = await start_viewer(runs, port, base, watched_folders(run_dirs, cwd or Path.cwd()))
        except OSError as exc:
            print(f"error: cannot listen on 127.0.0.1:{port}: {exc.strerror} (pick another with --port, or 0 for any free one)", file=sys.stderr)
            return 2
        page = f"{address}/run/{quote(runs[0].rid)}" if len(runs) == 1 else f"{address}/"
        print(f"tracejudge view: {page}  ({len(runs)} run{'s' if len(runs) != 1 else ''}; Ctrl-C stops)", flush=True)
        await until_signal(runner)
        return 0

    return anyio.run(serve)
