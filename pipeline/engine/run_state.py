"""What a run directory's own files say about it: finished, interrupted, or still being written; the command that resumes it.

Read by `tracejudge report` (a run's verdict line, a merge's shards), by the shard merge (which shards
were interrupted, which lie beside the merge unnamed) and by the regression gate (a baseline that was
interrupted). Reading never runs code and never writes.

- `last_segment_finished(run_dir)`: False when `checkpoint.json`'s last segment did not end `finished`
  (a SIGKILL leaves it `running`); True without a readable checkpoint (a merge, a hand-made directory).
- `resume_command(run_dir)`: the command the last segment recorded, prefixed `cd DIR &&` when it was
  started from another folder than this process's; without a record, or with one that is not a command the tool
  writes (`resume_line.is_run_line`: a crafted directory's `tracejudge run c.yaml; rm -rf ~`), its shape with CONFIG to
  fill in (with the shard's `--shard I/N` when the manifest records one), saying so.
- `run_state(run_dir)`: a `RunState` (state word, standing results, resume command, holder).
- `foreign_files(run_dir)`: the files a run writes that a folder no run made holds (no results, no run's manifest):
  a run there would overwrite them.
- `refuse_special_files(run_dir)`: a FIFO, a device or a socket where a run opens a file in place (`IN_PLACE`) is
  an error naming it, before the run reads or writes anything.
"""

from __future__ import annotations

import errno
import json
import os
import shlex
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tracejudge.core.destination import run_manifest
from tracejudge.core.regular_file import NotRegularFile
from tracejudge.engine import store
from tracejudge.engine.resume_line import PLACEHOLDER, PLACEHOLDER_NOT_SHOWN, is_run_line

__all__ = ["IN_PLACE", "RUN_MARKS", "RUN_WRITES", "RunState", "finished_here", "foreign_files", "refuse_special_files", "last_segment_finished", "resume_command", "results_beyond_checkpoint", "run_state", "summary_of"]


# Every file a run may write in its directory (`.lock` aside, which it removes), in two kinds. `RUN_MARKS`: names only a
# run gives a file, so a folder holding one is a run's (a run killed with a batch in flight, its manifest lost: its
# batches.jsonl re-attaches the batch, never paid twice). `RUN_WRITES`: names a user's own file may have too; a folder no
# run made that holds one is refused as `run.dir` (`foreign_files`), since the run would overwrite it. A test runs a run
# and checks it wrote no other.
RUN_MARKS = (store.RESULTS, store.INDEX, "cursor.ids", "batches.jsonl", "judge_spend.jsonl", "judge_run_id", "case_digests.txt")
RUN_WRITES = (store.MANIFEST, store.CHECKPOINT, store.SUMMARY, *store.REPORT_NAMES, "configs.jsonl", "cursor.json", "traces.jsonl")
# The files a run opens where they stand, to read them or to append to them, rather than writing a new file and renaming
# it over the old one: a FIFO at one of these names (an unpacked artifact, a crafted directory) made the resume wait on
# its open for a writer that never came, deaf to SIGTERM. The others (manifest, checkpoint, cursor.json, summary,
# reports) are read through `open_regular`, and one that is not a file is taken as unreadable and written anew.
IN_PLACE = (store.RESULTS, store.INDEX, "cursor.ids", "configs.jsonl", "judge_spend.jsonl", "batches.jsonl", "case_digests.txt",
            "judge_run_id", "traces.jsonl")


def foreign_files(run_dir: Path) -> list[str]:
    """The names of the files a run writes that a user's may have too (`RUN_WRITES`) that `run_dir` holds although no
    run made it: none of `RUN_MARKS` (`results.jsonl`, a batch journal, …) and no run's `manifest.json`
    (`destination.run_manifest`: a web project's `manifest.json` is none), which a run writes before anything else. A
    user's own `report.md` or `manifest.json` in the folder given as `--run-dir .`. `[]` for a run directory, an empty
    folder or one holding other files only."""
    if any((run_dir / name).exists() for name in RUN_MARKS) or run_manifest(run_dir / store.MANIFEST):
        return []
    return [name for name in RUN_WRITES if (run_dir / name).exists()]


def refuse_special_files(run_dir: Path) -> None:
    """Raise `NotRegularFile` (an `OSError`: `error: PATH: not a regular file (a FIFO, a device or a socket)`) for the
    first of `IN_PLACE` that `run_dir` holds as anything but a regular file or a folder, symlinks followed. A missing
    file, or one whose metadata cannot be read, is left to the reader that opens it (it names the file and its error)."""
    for name in IN_PLACE:
        path = Path(run_dir) / name
        try:
            mode = os.stat(path).st_mode
        except OSError:
            continue
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            raise NotRegularFile(errno.EINVAL, "not a regular file (a FIFO, a device or a socket)", str(path))


def summary_of(run_dir: Path) -> dict[str, Any] | None:
    """`run_dir/summary.json` as a mapping, or None when it is missing or unreadable (a run killed before its end)."""
    try:
        data = json.loads(store.read_text(Path(run_dir) / store.SUMMARY))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _segments(run_dir: Path) -> list[Any] | None:
    try:  # (opened without waiting: a FIFO in its place, as an unpacked artifact may hold, is no checkpoint)
        segments = json.loads(store.read_text(Path(run_dir) / store.CHECKPOINT)).get("segments") or []
    except (OSError, ValueError, AttributeError):
        return None
    return segments if isinstance(segments, list) else None


def last_segment_finished(run_dir: Path) -> bool:
    """False when `checkpoint.json` says the last segment did not finish (killed, interrupted, or still running).

    A run killed with SIGKILL writes no summary; the checkpoint it flushed still says `ended: running`.
    Without a readable checkpoint (a merged or hand-made directory) the summary's own `complete` stands; a directory
    whose run wrote its manifest.json but neither a checkpoint nor a summary was killed before its first checkpoint.
    """
    segments = _segments(run_dir)
    if segments is None:
        run_dir = Path(run_dir)
        return not ((run_dir / store.MANIFEST).is_file() and not (run_dir / store.SUMMARY).exists())
    last = segments[-1] if segments and isinstance(segments[-1], dict) else {}
    return last.get("ended", "finished") == "finished" and not results_beyond_checkpoint(run_dir) and not _started_since(run_dir, last)


def finished_here(run_dir: Path) -> bool:
    """True when the last segment `checkpoint.json` records is this process's (its pid) and `finished`, with no result
    written after that checkpoint: the run is complete, every result on disk, whatever failed after it (its summary or
    a report on a full disk)."""
    segments = _segments(run_dir) or []
    last = segments[-1] if segments and isinstance(segments[-1], dict) else {}
    return last.get("ended") == "finished" and last.get("pid") == os.getpid() and not results_beyond_checkpoint(run_dir)


def _started_since(run_dir: Path, last: dict[str, Any]) -> bool:
    """True when the manifest names another config or dataset than the last segment recorded ran with: a resume with
    `--force` rewrote it and was killed before it recorded its segment (or wrote its first result)."""
    try:
        manifest = store.read_manifest(run_dir, strict=False) or {}
    except (OSError, ValueError):
        return False
    return any(isinstance(last.get(key), str) and isinstance(manifest.get(key), str) and last[key] != manifest[key]
               for key in ("config_hash", "dataset_fingerprint"))


def results_beyond_checkpoint(run_dir: Path) -> bool:
    """True when results.jsonl is what `checkpoint.json` claims with more appended: a segment wrote results after the
    last checkpoint and never ended. A resume records its segment at its first checkpoint, not before (so that one with
    nothing left to do changes no file): killed before it, it left the previous segment's record, `finished`, as the last.
    A segment that ends writes a checkpoint claiming every result it wrote. A file edited within what the checkpoint
    claims (its CRC differs) is no unfinished segment (`report` names its damaged lines); without the figures, False."""
    try:
        cp = json.loads(store.read_text(Path(run_dir) / store.CHECKPOINT))
        claimed, crc = cp.get("results_bytes"), cp.get("results_crc32")
        if not all(isinstance(x, int) and not isinstance(x, bool) for x in (claimed, crc)):
            return False
        results = Path(run_dir) / store.RESULTS
        return results.stat().st_size > claimed and store.file_crc32(results, claimed) == crc and _a_result_after(results, claimed)
    except (OSError, ValueError, AttributeError):
        return False


def _a_result_after(results: Path, offset: int, lines: int = 64) -> bool:
    """Whether one of the first `lines` lines of `results` after `offset` is a result (a JSON object with a `case_id`): what a
    segment writes. Lines appended that are none (a damaged file, an editor's garbage) are no unfinished segment: `report`
    names them as unreadable lines."""
    with open(results, "rb") as fh:
        fh.seek(offset)
        for _, line in zip(range(lines), fh):
            try:
                got = json.loads(line)
            except (ValueError, RecursionError):
                continue
            if isinstance(got, dict) and isinstance(got.get("case_id"), str):
                return True
    return False


def resume_command(run_dir: Path) -> str:
    """The command that resumes an interrupted run: the one its last segment recorded (`run`'s own wording), or, killed
    before its first checkpoint, the one its manifest recorded, run from the folder it was meant for; without a record
    (a run started from the Python API), its shape with CONFIG to fill in, naming the shard a shard directory holds."""
    run_dir = Path(run_dir)
    manifest: dict[str, Any] | None = None
    try:
        segments = _segments(run_dir) or []
        recorded = segments[-1].get("command") if segments and isinstance(segments[-1], dict) else None
        if not isinstance(recorded, dict):
            manifest = _manifest(run_dir)
            recorded = manifest.get("command") or {}
        line, cwd = recorded["line"], recorded.get("cwd")
        if not isinstance(line, str):
            raise TypeError(line)
    except (AttributeError, IndexError, KeyError, TypeError):
        return _shape(run_dir, manifest, PLACEHOLDER)
    # (a line recorded before the command was masked where it is built (`redact_command`) is masked as it is read)
    from tracejudge.llm.redact_command import masked_line

    line = masked_line(line)
    if not is_run_line(line):  # (a run directory is input: a line no `tracejudge run` wrote is not offered to be run)
        return _shape(run_dir, manifest, PLACEHOLDER_NOT_SHOWN)
    if isinstance(cwd, str) and Path(cwd).resolve() != Path.cwd().resolve():
        return f"cd {shlex.quote(cwd)} && {line}"
    return str(line)


def _shape(run_dir: Path, manifest: dict[str, Any] | None, end: str) -> str:
    """`tracejudge run CONFIG --run-dir RUN_DIR` (with the shard the manifest records) then `end`, which says what CONFIG
    is: the command rebuilt from what is known, every part shell-quoted."""
    manifest = manifest if manifest is not None else _manifest(run_dir)
    shard = ((manifest.get("config") or {}).get("run") or {}).get("shard")
    flag = f" --shard {shlex.quote(str(shard))}" if isinstance(shard, str) and shard else ""
    return f"tracejudge run CONFIG --run-dir {shlex.quote(str(run_dir))}{flag}{end}"


def _manifest(run_dir: Path) -> dict[str, Any]:
    """`manifest.json`, or {} when it is missing or cannot be read: not JSON, a FIFO in its place (`store.read_manifest`
    raises for those; here it only names a command and a shard, and the viewer's Run page failed with a 500 on it)."""
    from tracejudge.core.errors import ManifestError

    try:
        return store.read_manifest(run_dir) or {}
    except (ManifestError, OSError):
        return {}


@dataclass
class RunState:
    """One run directory as its files describe it.

    `state` is `finished`, `interrupted` (killed or stopped: its summary says not complete, or its
    checkpoint's last segment never ended; a directory with neither file counts as finished, as `report` reads it) or `in progress` (`holder` still writes it); `results` counts its standing
    (case, trial) results; `resume` is the command that finishes it (None when finished).
    """

    run_dir: Path
    state: str
    results: int
    resume: str | None = None
    holder: str | None = None

    def describe(self) -> str:
        """`interrupted, 1,024 results` / `finished, 5,000 results` / `in progress (process 42 holds it), 12 results`."""
        word = f"in progress ({self.holder} holds it)" if self.holder else self.state
        return f"{word}, {self.results:,} result{'s' if self.results != 1 else ''}"


def run_state(run_dir: Path, *, results: int | None = None) -> RunState:
    """What `run_dir` holds (`RunState`); `results`, when the caller already counted them, saves reading the file."""
    from tracejudge.engine.run_lock import holder

    run_dir = Path(run_dir)
    if results is None:
        seen: set[tuple[str, int]] = set()
        for line in store.iter_result_lines(run_dir / store.RESULTS):
            if (key := store.line_key(line)) is not None:
                seen.add(key)
        results = len(seen)
    who = holder(run_dir)
    if who is not None:
        return RunState(run_dir, "in progress", results, holder=who)
    summary = summary_of(run_dir) or {}
    # As `tracejudge report` reads a run: not complete when its summary says so or its last segment never ended; a
    # directory with neither file (results written by hand or by another tool) stands as finished.
    if summary.get("complete") is not False and last_segment_finished(run_dir):
        return RunState(run_dir, "finished", results)
    return RunState(run_dir, "interrupted", results, resume=resume_command(run_dir))
