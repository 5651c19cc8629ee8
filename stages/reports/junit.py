"""`junit.xml`: the gate's checks and one `<testcase>` per (case, metric), so CI systems show the verdict natively.

The first `<testsuite>`, `tracejudge.gate`, holds one test case per check of the gate
(`min_mean`, `max_error_share`, regression, …), named as the check and, when
the check fails, a `<failure>` whose message is the check's line as the run
prints it; an unfinished run adds a `run` test case in `<error>`. So the file
is red in CI exactly when the run's verdict is not PASS.

Then one `<testsuite>` per metric. A result whose status is not `ok` is
`<skipped>`, its message the status and why (`max_invalid_share`,
`max_error_share` and the other checks decide whether such results fail the
run; by default an unreadable record does). A score is a passing test case with its
value and reason in `<system-out>` (the reason, as the skipped message, shown as `report.md` shows it:
control characters, bidirectional overrides, zero-width and tag characters as `\\xNN` / `\\u{NNNN}`,
`inert_text.visible`), starting `below threshold:` when its
`passed` is false: a case below its metric's threshold does not fail the run
(the gate's figures over all cases do; `min_pass_rate: 1.0` asks that every
case pass), as a run's exit status says. A score that could not be computed is
`<skipped>`. With several trials, the test name carries the trial
(`case [trial 2]`). Written streaming: the results file is read once, and the
counts in each suite's attributes come from the summary.

Test case names are distinct and depend only on (case id, trial, trials > 1): an id
holding a control character (which XML 1.0 cannot carry, or a CI viewer would not show),
or ending as a name's own trial part does (` [trial 3]`), is written escaped — its
control characters as `\\xNN` / `\\uNNNN`, its backslashes doubled — and marked
`[trial N, escaped]`, a tail no other name has (`testcase_name`). Any other id is its
name as it is. Metric keys (suite names and classnames) and the gate's check names
follow the same rule, marked ` [escaped]` (`suite_label`).
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import os
import re
import shutil
import tempfile
from itertools import chain, repeat
from pathlib import Path
from typing import Any, BinaryIO, TextIO

from tracejudge.core.inert_text import INVISIBLE, visible
from tracejudge.core.records import score_counts
from tracejudge.stages.aggregate.gate import Verdict
from tracejudge.engine.rendered import Finished, attr, testcase_end, text
from tracejudge.engine.store import iter_results

__all__ = ["JunitWriter", "stopped_junit", "suite_label", "testcase_name", "write_junit"]

_BATCH = 256  # results whose test cases are written together
_COPY = 1 << 20  # bytes a read when the suites are copied into the document

_attr, _text = attr, text

# Characters an id is escaped for: control characters (C0, DEL, C1), lone surrogates, and U+FFFE / U+FFFF (XML 1.0
# cannot carry most of them even escaped; a viewer shows none of them), and the characters that hide or reorder text
# (`inert_text.INVISIBLE`: a bidirectional override would show a CI page's name backwards).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]|" + INVISIBLE.pattern)
# A tail that names give themselves (` [trial 2]`, ` [trial 0, escaped]`): an id ending so is escaped, so that no two
# (case, trial) pairs share a name.
_TRIAL_TAIL = re.compile(r" \[trial [0-9]+(?:, escaped)?\]\Z")


def _escape_char(m: re.Match[str]) -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}" if c < 0x10000 else f"\\U{c:08x}"


def testcase_name(case_id: str, trial: int, multi: bool) -> str:
    """The `<testcase>` name of one (case, trial): `case_id`, then ` [trial N]` when the run has several trials (`multi`).

    An id with a control character (see `_CONTROL`) or ending in a tail names give themselves (`_TRIAL_TAIL`) is
    escaped instead (backslashes doubled, control characters as `\\xNN` / `\\uNNNN`) and always followed by
    ` [trial N, escaped]`, which no other name ends with: so every (case, trial) of a run has a name of its own,
    whatever the other ids, and a name XML 1.0 carries.
    """
    if _plain(case_id) and not (case_id.endswith("]") and _TRIAL_TAIL.search(case_id)):
        return f"{case_id} [trial {trial}]" if multi else case_id
    return f"{_escaped(case_id)} [trial {trial}, escaped]"


def suite_label(name: str) -> str:
    """A metric key (suite name and classname) or a gate check's name as junit.xml writes it: `name` itself, unless it
    holds a control character (`_CONTROL`) or ends in ` [escaped]`; then escaped as `testcase_name` escapes an id and
    followed by ` [escaped]`, which no name written as it is ends with. So two metric keys differing only in control
    characters get suites of their own, and no escaped name is another's literal one."""
    return name if _plain(name) and not name.endswith(" [escaped]") else f"{_escaped(name)} [escaped]"


def _plain(text: str) -> bool:
    # No character to escape (`isprintable` first: the common case, and cheaper than the search).
    return text.isprintable() or _CONTROL.search(text) is None


def _escaped(text: str) -> str:
    # Backslashes doubled, then control characters as \xNN / \uNNNN: the result reads back to one text only.
    return _CONTROL.sub(_escape_char, text.replace(chr(92), chr(92) * 2))


def _testcases(keys: dict[str, str], res: dict[str, Any], multi: bool) -> list[str]:
    """One `<testcase>` per metric (`keys`: metric key → its escaped classname attribute) for one result."""
    name = testcase_name(str(res["case_id"]), int(res.get("trial", 0)), multi)
    dur = float(res.get("duration_s", 0.0) or 0.0)
    tail = f" name={_attr(name)} time=\"{dur:.6f}\""  # the same for every metric of the result
    status = res.get("status", "ok")
    scores = res.get("scores") or {}
    error = None
    out = []
    for key, classname in keys.items():
        head = f"    <testcase classname={classname}{tail}"
        score = scores.get(key)
        if status != "ok" and not (isinstance(score, dict) and score_counts(status, score.get("value"))):
            if error is None:
                msg = visible(f"{status}: {(res.get('error') or {}).get('message', '')}")  # (as report.md shows it)
                error = f">\n      <skipped type={_attr(status)} message={_attr(msg)}/>\n    </testcase>\n"
            out.append(head + error)
        elif not isinstance(score, dict):
            out.append(head + testcase_end(None, None, "", computed=False))
        else:
            out.append(head + testcase_end(score.get("value"), score.get("passed"), score.get("reason", "")))
    return out


class JunitWriter:
    """JUnit XML written in one streaming pass: `feed()` each result, then `finish(out)`.

    Each suite's test cases go to a temporary file of their own while the
    results stream by, then the suites are copied out in order, so memory
    stays flat at any run size and the results are read only once.
    """

    def __init__(self, summary: dict[str, Any]) -> None:
        self.summary = summary
        self.metrics = summary.get("metrics", {})
        self.multi = summary.get("trials", 1) > 1
        # The suites' test cases as UTF-8: a rendered result's come so (`engine.rendered`) and are written as they are.
        self.bodies = {key: tempfile.TemporaryFile("w+b") for key in self.metrics}
        self.classnames = {key: _attr(suite_label(key)) for key in self.metrics}
        # (A result dict's test cases wait as text, encoded when written, as the text file encoded them.)
        self.pending: dict[str, list[bytes | str]] = {key: [] for key in self.metrics}
        # Per suite, in order: where its test cases queue and how each starts (for `feed_finished`).
        self._heads = [(self.pending[key].append, f"    <testcase classname={self.classnames[key]}".encode()) for key in self.metrics]
        self._finished: list[Finished] = []  # rendered results fed since the last batch, their test cases not made yet
        self.queued = 0

    def feed(self, res: dict[str, Any]) -> None:
        """Add one result dict's test cases (one per metric)."""
        if self._finished:
            self._render_finished()  # (they come first)
        for buf, case in zip(self.pending.values(), _testcases(self.classnames, res, self.multi), strict=True):
            buf.append(case)
        self._count()

    def feed_finished(self, done: Finished) -> None:
        """Add the test cases of a result rendered where it was scored (`engine.rendered`): only its name and time are made,
        with those of the results queued beside it, when the batch is written (`_render_finished`)."""
        self.feed_finished_many([done])

    def feed_finished_many(self, batch: list[Finished]) -> None:
        """`feed_finished` each result of `batch`, in order, at once."""
        self._finished.extend(batch)
        self.queued += len(batch)
        if self.queued >= _BATCH:
            self._write()

    def _render_finished(self) -> None:
        # The queued rendered results' test cases, in feeding order: one piece of text per suite.
        batch, multi, n = self._finished, self.multi, len(self._heads)
        ends = [done.rendered.junit for done in batch]
        if any(map(n.__ne__, map(len, ends))):
            raise ValueError("a rendered result's test cases do not match the report's metrics")
        starts = [f" name={_attr(testcase_name(done.case_id, done.trial, multi))} time=\"{done.duration_s:.6f}\"".encode()
                  for done in batch]
        # Suite by suite (`zip(*ends)`: each suite's test case ends), head, start and end of each test case joined at once.
        for (add, head), suite_ends in zip(self._heads, zip(*ends)):
            add(b"".join(chain.from_iterable(zip(repeat(head), starts, suite_ends))))
        self._finished = []

    def _count(self) -> None:
        # Test cases are written in batches: one write per suite per batch, not one per test case.
        self.queued += 1
        if self.queued >= _BATCH:
            self._write()

    def _write(self) -> None:
        if self._finished:
            self._render_finished()
        for key, buf in self.pending.items():
            if buf:
                self.bodies[key].write(b"".join([p if type(p) is bytes else p.encode() for p in buf]))
                buf.clear()
        self.queued = 0

    def close(self) -> None:
        """Drop the suites' temporary files (when `finish` will not be called)."""
        for fh in self.bodies.values():
            fh.close()

    def finish(self, out: TextIO, verdict: Verdict | None = None) -> None:
        """Write the whole document to `out` (the gate's suite from `verdict`, suite counts from the summary), then drop the temporary files."""
        try:
            self._write()
            out.write('<?xml version="1.0" encoding="UTF-8"?>\n')
            gate, gate_counts = _gate_suite(verdict)
            tot = dict(gate_counts)
            suites = []
            for key, m in self.metrics.items():
                skipped = sum(m.get("excluded", {}).values()) + m.get("not_computed", 0) + m.get("not_applicable", 0)
                counts = {"tests": m["results"], "failures": 0, "errors": 0, "skipped": skipped}
                for k in tot:
                    tot[k] += counts[k]
                suites.append((key, counts))
            # `<testsuites>` takes only the attributes every JUnit schema allows there (name, tests, failures, errors; Jenkins
            # xunit's junit-10.xsd rejects `skipped`, as pytest writes none); the skipped counts stay on each `<testsuite>`.
            out.write(f'<testsuites name="tracejudge" tests="{tot["tests"]}" failures="{tot["failures"]}" errors="{tot["errors"]}">\n')
            out.write(gate)
            for key, counts in suites:
                out.write(f'  <testsuite name={self.classnames[key]} tests="{counts["tests"]}" failures="{counts["failures"]}" errors="{counts["errors"]}" skipped="{counts["skipped"]}">\n')
                fh = self.bodies[key]
                if hasattr(out, "buffer") and _utf8(out):  # its bytes copied as they are, not decoded and encoded again (20 MB at 10,000 cases)
                    fh.flush()
                    out.flush()
                    _append_file(fh, out.buffer)
                else:
                    fh.seek(0)
                    shutil.copyfileobj(codecs.getreader("utf-8")(fh), out, _COPY)
                out.write("  </testsuite>\n")
            out.write("</testsuites>\n")
        finally:
            self.close()


def _gate_suite(verdict: Verdict | None) -> tuple[str, dict[str, int]]:
    """The `gate` suite (one test case per check, and `run` when the run is unfinished) and its counts."""
    cases = []
    failures = errors = 0
    for check in verdict.checks if verdict is not None else ():
        line = f"{check.name}: {check.detail}"
        if check.ok:
            cases.append(f"    <testcase classname=\"tracejudge.gate\" name={_attr(suite_label(check.name))}>\n      <system-out>{_text(line)}</system-out>\n    </testcase>\n")
        else:
            failures += 1
            cases.append(f"    <testcase classname=\"tracejudge.gate\" name={_attr(suite_label(check.name))}>\n      <failure type=\"gate\" message={_attr(line)}>"
                         f"{_text(line)}</failure>\n    </testcase>\n")
    if verdict is not None and verdict.unfinished:
        errors += 1
        why = f"verdict: {verdict.word}" + (f" ({verdict.in_progress} is still writing the run)" if verdict.in_progress else "")
        if verdict.stopped and not verdict.in_progress:  # the error or abort that ended the run: what its exit status said
            why += f": {verdict.stopped}"
        cases.append(f"    <testcase classname=\"tracejudge.gate\" name=\"run\">\n      <error type={_attr(verdict.word)} message={_attr(why)}>"
                     f"{_text(why)}</error>\n    </testcase>\n")
    counts = {"tests": len(cases), "failures": failures, "errors": errors, "skipped": 0}
    head = f'  <testsuite name="tracejudge.gate" tests="{counts["tests"]}" failures="{failures}" errors="{errors}" skipped="0">\n'
    return head + "".join(cases) + "  </testsuite>\n", counts


def stopped_junit(word: str, why: str) -> str:
    """The whole junit.xml of a run that stopped before its reports could be made: one `run` test case in `<error>`."""
    line = f"verdict: {word}: {why}"
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="tracejudge" tests="1" failures="0" errors="1">\n'
            '  <testsuite name="tracejudge.gate" tests="1" failures="0" errors="1" skipped="0">\n'
            f'    <testcase classname="tracejudge.gate" name="run">\n      <error type={_attr(word)} message={_attr(line)}>'
            f"{_text(line)}</error>\n    </testcase>\n  </testsuite>\n</testsuites>\n")


def _append_file(src: BinaryIO, dst: BinaryIO) -> None:
    """Copy all of `src` (from its start) to `dst` at its position; both flushed. Raises `OSError` as a write does.

    The kernel copies the bytes (`copy_file_range`, else `sendfile`) where it can: through Python's buffers
    the suites' 20 MB at 10,000 cases cost a read and a write of each chunk. A method the files do not allow
    (another file system, a stream that is not a file) that fails before copying anything gives way to the next,
    and last to `shutil.copyfileobj`.
    """
    done = 0
    try:
        src_fd, dst_fd = src.fileno(), dst.fileno()
        size = os.fstat(src_fd).st_size
    except (OSError, ValueError):  # (io.UnsupportedOperation is both): no file descriptors, or no size
        size = -1
    if size >= 0:
        for copy in _KERNEL_COPIES:
            start = done
            try:
                while done < size and (n := copy(src_fd, dst_fd, done, size - done)):
                    done += n
            except OSError as exc:
                if done > start or exc.errno == errno.ENOSPC:
                    raise
                continue
            break
        if done:
            with contextlib.suppress(OSError, ValueError):  # (a stream that cannot seek keeps no position to learn)
                dst.seek(0, os.SEEK_CUR)  # the buffered writer learns where the kernel left the file's position
    src.seek(done)
    shutil.copyfileobj(src, dst, _COPY)  # what is left: all of it when no kernel copy could start, else nothing


def _copy_file_range(src_fd: int, dst_fd: int, offset: int, count: int) -> int:
    return os.copy_file_range(src_fd, dst_fd, count, offset)


def _sendfile(src_fd: int, dst_fd: int, offset: int, count: int) -> int:
    return os.sendfile(dst_fd, src_fd, offset, count)


# (Only what this system has: `copy_file_range` is Linux's, `sendfile` to a file Linux's and Solaris'.)
_KERNEL_COPIES = tuple(f for name, f in (("copy_file_range", _copy_file_range), ("sendfile", _sendfile)) if hasattr(os, name))


def _utf8(out: TextIO) -> bool:
    # The suites' temporary files are UTF-8: their bytes fit a stream that encodes the same way.
    return str(getattr(out, "encoding", "")).lower().replace("-", "").replace("_", "") == "utf8"


def write_junit(out: TextIO, run_dir: Path, summary: dict[str, Any], verdict: Verdict | None = None) -> None:
    """Write the JUnit XML of a run to `out` (the gate's suite from `verdict`), reading its results once."""
    writer = JunitWriter(summary)
    for res in iter_results(run_dir):
        writer.feed(res)
    writer.finish(out, verdict)
