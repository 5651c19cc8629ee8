"""Reading `results.jsonl`: its complete lines, which of them still stand (a resumed run's later line of the same
(case, trial) supersedes a provisional one), and the results they hold as the readers use them.

A run appends to the file and never rewrites a line, so the file may hold a torn last line (no newline: never yielded)
and provisional results that a resume redid; every reader (report, compare, export, the viewer, a resume) reads
the standing lines through here, so they all count the same results.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pydantic_core
from tracejudge.core.errors import TracejudgeError
from tracejudge.core.regular_file import open_regular
from tracejudge.engine.result_shape import json_line_problem, result_problem
from tracejudge.engine.result_writer import RESULTS

__all__ = ["MANIFEST", "PROVISIONAL_MARKS", "SKIPPED_MARK", "TORN_LAST_LINE", "error_place", "iter_current_numbered",
           "iter_current_result_lines", "iter_result_lines", "iter_results", "line_key", "superseded_lines", "torn_line_problem"]

# How a last line without a line break is named (`iter_results(torn=True)`): the field is the line itself.
TORN_LAST_LINE = "(root): the last line ends without a line break (cut off as it was written), so it is not a result"
MANIFEST = "manifest.json"  # (re-exported as `store.MANIFEST`; `iter_results` needs it: a run killed before its first result)


def iter_result_lines(path: Path, start: int = 0) -> Iterator[bytes]:
    """Every complete, non-blank line of a results file from byte `start`, as bytes."""
    if not path.exists():
        return
    # (`open_regular`: a FIFO in its place, as a crafted or unpacked run directory may hold, waited for a writer forever
    # and hung report and a resume; it raises `NotRegularFile`, an OSError, instead.)
    with open_regular(path) as fh:
        fh.seek(start)
        for line in fh:
            if line.endswith(b"\n") and line.strip():
                yield line


SKIPPED_MARK = b'"status":"skipped_budget"'
# Statuses a later line of the same (case, trial) supersedes (`records.PROVISIONAL_STATUSES`).
PROVISIONAL_MARKS = (SKIPPED_MARK, b'"status":"judge_error"', b'"status":"target_error"', b'"status":"rate_limited"',
                     b'"kind":"worker_error"',  # a dead worker's case (`records.WORKER_ERROR`)
                     b'"kind":"unterminated_line"')  # a torn last line (`records.UNTERMINATED_LINE`)


def _provisional(line: bytes) -> bool:
    return any(mark in line for mark in PROVISIONAL_MARKS)


_WORKER_TEXT = '"kind":"worker_error"'  # a dead worker's result (`records.WORKER_ERROR`)
_WORKER_MARK = _WORKER_TEXT.encode()


def error_place(line: bytes | str, *, dead: bool = False) -> tuple[str, int] | None:
    """`(file, line)` the error of a result line names (where its record was read), or None; with `dead`, only for a
    dead worker's result (error kind `worker_error`), the only lines parsed then.

    An earlier version filed a dead worker's result for an unreadable line under an id read from the line's first
    bytes (`badjson`), a key no later run writes again; the line's result is now filed under its place
    (`extract.line_case_id`). So a standing dead worker's result is superseded by a later final result naming the
    same file and line, as by a later result of its own key (`superseded_lines`, `RunJournal`).
    """
    if dead and (_WORKER_MARK not in line if isinstance(line, bytes) else _WORKER_TEXT not in line):
        return None
    try:
        error = pydantic_core.from_json(line)["error"]
        if dead and error["kind"] != "worker_error":  # (not a case's own metadata that says it)
            return None
        file, at = error["file"], error["line"]
    except (ValueError, KeyError, TypeError):
        return None
    return (file, at) if isinstance(file, str) and type(at) is int else None


def line_key(line: bytes) -> tuple[str, int] | None:
    """`(case_id, trial)` of a result line, or None when it is not JSON with those fields."""
    try:
        data = pydantic_core.from_json(line)
        return str(data["case_id"]), int(data.get("trial", 0))
    except (ValueError, KeyError, TypeError):
        return None


def superseded_lines(path: Path) -> set[int]:
    """0-based numbers (among `iter_result_lines`) of the lines a later line of the same key replaces.

    Only provisional results (a budget skip, a judge/target/provider failure,
    see `records.PROVISIONAL_STATUSES`) are ever superseded: a resumed run
    redoes them and appends the new result. A dead worker's result is also
    superseded by a later final result naming its file and line (`error_place`).
    One pass; only lines after the first provisional one are parsed, and memory
    grows only with the number of provisional lines.
    """
    pending: dict[tuple[str, int], int] = {}
    dead: dict[tuple[str, int], tuple[tuple[str, int], int]] = {}  # (file, line) → a pending dead worker's (key, number)
    out: set[int] = set()
    for i, line in enumerate(iter_result_lines(path)):
        marked = _provisional(line)
        if not (marked or pending):
            continue
        key = line_key(line)
        if key is None:
            continue
        if key in pending:
            out.add(pending.pop(key))
        if marked:
            pending[key] = i
            if (place := error_place(line, dead=True)) is not None:
                dead[place] = (key, i)
        elif dead and (place := error_place(line)) in dead:  # a final result of a dead worker's place (`error_place`)
            was, at = dead.pop(place)  # type: ignore[arg-type]
            if pending.get(was) == at:
                out.add(pending.pop(was))
    return out


def iter_current_result_lines(path: Path) -> Iterator[bytes]:
    """The lines of a results file that still stand, in file order: all but superseded ones.

    A provisional result (`skipped_budget`, `judge_error`, `target_error`,
    `rate_limited`) is redone by a resumed run, whose new line for the same
    (case, trial) supersedes it (see `superseded_lines`; two passes over the file).
    """
    for _, line in iter_current_numbered(path):
        yield line


def iter_current_numbered(path: Path, on_torn: Callable[[int, bytes], None] | None = None) -> Iterator[tuple[int, bytes]]:
    """`iter_current_result_lines` with each line's 1-based line number in the file (to name a bad one); `on_torn(N,
    line)` is called for a last line that ends without a line break (never yielded), once the others are read."""
    gone = superseded_lines(path)
    if not path.exists():
        return
    i = 0
    with open(path, "rb") as fh:
        for lineno, line in enumerate(fh, 1):
            if line.endswith(b"\n") and line.strip():
                if i not in gone:
                    yield lineno, line
                i += 1
            elif on_torn is not None and line.strip() and not line.endswith(b"\n"):  # (only the last line can be)
                on_torn(lineno, line)


def torn_line_problem(line: bytes) -> str:
    """How a last line that ends without a line break is named (`TORN_LAST_LINE`), with what is wrong in it when it is
    not JSON (most such lines are cut mid-value: `…; invalid JSON: … the line ends early (it looks truncated)`)."""
    try:
        pydantic_core.from_json(line)
        return TORN_LAST_LINE
    except ValueError as exc:
        return TORN_LAST_LINE + "; " + json_line_problem(line, exc).removeprefix("(root): ")


def iter_results(run_dir: Path, unreadable: list[int] | None = None,
                 on_bad: Callable[[int, str], None] | None = None, *, once: bool = False, torn: bool = False) -> Iterator[dict[str, Any]]:
    """Each result of `RUN_DIR/results.jsonl` as a dict. A line that is not JSON, or not a result in the fields readers
    use (`result_shape.result_problem`: a score of NaN or `"high"` typed in by hand), is skipped: counted in
    `unreadable[0]` and passed to `on_bad(line_number, "field: what is wrong")` when given. With `once`, so is a line
    repeating the (case, trial) of an earlier standing line (a line pasted twice), as `report` counts it; the set of
    keys read grows with the run.

    Raises `TracejudgeError` when the directory has no results file, unless it holds a manifest: a run killed after
    writing its manifest and before creating results.jsonl has no result yet.

    With `torn`, a last line that ends without a line break (a run killed mid-write; pass it only for a run no process
    writes, whose last line nothing will finish) is counted and named too (`TORN_LAST_LINE`), after the others.
    """
    path = Path(run_dir) / RESULTS
    if not path.exists():
        if (Path(run_dir) / MANIFEST).is_file():
            return
        raise TracejudgeError(f"{run_dir}: no {RESULTS} here (is this a run directory?)")
    seen: set[tuple[str, int]] = set()

    def cut(lineno: int, line: bytes) -> None:
        if unreadable is not None:
            unreadable[0] += 1
        if on_bad is not None:
            on_bad(lineno, torn_line_problem(line))

    for lineno, line in iter_current_numbered(path, cut if torn else None):
        try:
            # pydantic-core's parser: reports re-read every result, ~3x faster than json.loads.
            data = pydantic_core.from_json(line)
            problem = result_problem(data)
        except ValueError as exc:
            data, problem = None, json_line_problem(line, exc)
        if problem is None and once:
            key = (data["case_id"], int(data.get("trial", 0)))
            if key in seen:
                problem = f"(case {key[0]!r}, trial {key[1]}) repeats an earlier line"
            seen.add(key)
        if problem is None:
            yield data
            continue
        if unreadable is not None:
            unreadable[0] += 1
        if on_bad is not None:
            on_bad(lineno, problem)
