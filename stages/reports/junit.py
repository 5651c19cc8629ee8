"""`junit.xml`: one `<testcase>` per (case, metric), so CI systems show failures natively.

One `<testsuite>` per metric. A result whose status is not `ok` is an
`<error>` (its message says why); a score with `passed: false` is a
`<failure>` carrying the reason; a score that could not be computed is
`<skipped>`. With several trials, the test name carries the trial
(`case [trial 2]`). Written streaming: the results file is read once per
metric, and the counts in each suite's attributes come from the summary.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path
from typing import Any, TextIO

from tracejudge.core.records import score_counts
from tracejudge.engine.store import iter_results

__all__ = ["JunitWriter", "write_junit"]

# XML 1.0 cannot carry most control characters, even escaped.
_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f]")
# Characters that need escaping (or that XML cannot carry): most values (ids, keys, reasons) have none.
_SPECIAL = re.compile("[\x00-\x1f&<>]")


def _attr(s: Any) -> str:
    s = str(s)
    if _SPECIAL.search(s) is None:  # the common case, as `quoteattr` would write it without its chain of replaces
        if '"' not in s:
            return f'"{s}"'
        if "'" not in s:
            return f"'{s}'"
        return '"' + s.replace('"', "&quot;") + '"'  # both quotes (most reasons): what quoteattr writes then
    from xml.sax.saxutils import quoteattr  # here: it imports urllib.request, http.client and ssl, which a run needs not

    return quoteattr(_ILLEGAL.sub("", s))


def _text(s: str) -> str:
    return _attr(s)[1:-1]


def _testcases(keys: dict[str, str], res: dict[str, Any], multi: bool) -> list[str]:
    """One `<testcase>` per metric (`keys`: metric key → its escaped classname attribute) for one result."""
    trial = int(res.get("trial", 0))
    name = str(res["case_id"]) + (f" [trial {trial}]" if multi else "")
    dur = float(res.get("duration_s", 0.0) or 0.0)
    tail = f" name={_attr(name)} time=\"{dur:.6f}\">\n"  # the same for every metric of the result
    status = res.get("status", "ok")
    scores = res.get("scores") or {}
    error = None
    out = []
    for key, classname in keys.items():
        head = f"    <testcase classname={classname}{tail}"
        score = scores.get(key)
        if status != "ok" and not (isinstance(score, dict) and score_counts(status, score.get("value"))):
            if error is None:
                msg = f"{status}: {(res.get('error') or {}).get('message', '')}"
                error = f"      <error type={_attr(status)} message={_attr(msg)}>{_text(msg)}</error>\n    </testcase>\n"
            out.append(head + error)
        elif not isinstance(score, dict) or score.get("value") is None:
            reason = score.get("reason", "") if isinstance(score, dict) else "metric not computed for this case"
            out.append(f"{head}      <skipped message={_attr(reason)}/>\n    </testcase>\n")
        else:
            msg = f"value {score['value']}: {score.get('reason', '')}"
            if score.get("passed") is False:
                out.append(f"{head}      <failure type=\"threshold\" message={_attr(msg)}>{_text(msg)}</failure>\n    </testcase>\n")
            else:
                out.append(f"{head}      <system-out>{_text(msg)}</system-out>\n    </testcase>\n")
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
        self.bodies = {key: tempfile.TemporaryFile("w+", encoding="utf-8") for key in self.metrics}
        self.classnames = {key: _attr(key) for key in self.metrics}

    def feed(self, res: dict[str, Any]) -> None:
        for fh, case in zip(self.bodies.values(), _testcases(self.classnames, res, self.multi), strict=True):
            fh.write(case)

    def close(self) -> None:
        """Drop the suites' temporary files (when `finish` will not be called)."""
        for fh in self.bodies.values():
            fh.close()

    def finish(self, out: TextIO) -> None:
        try:
            out.write('<?xml version="1.0" encoding="UTF-8"?>\n')
            tot = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
            suites = []
            for key, m in self.metrics.items():
                errors = sum(m.get("excluded", {}).values())
                failures = m.get("with_verdict", 0) - m.get("passed", 0)
                skipped = m.get("not_computed", 0) + m.get("not_applicable", 0)
                counts = {"tests": m["results"], "failures": failures, "errors": errors, "skipped": skipped}
                for k in tot:
                    tot[k] += counts[k]
                suites.append((key, counts))
            out.write(f'<testsuites name="tracejudge" tests="{tot["tests"]}" failures="{tot["failures"]}" errors="{tot["errors"]}" skipped="{tot["skipped"]}">\n')
            for key, counts in suites:
                out.write(f'  <testsuite name={_attr(key)} tests="{counts["tests"]}" failures="{counts["failures"]}" errors="{counts["errors"]}" skipped="{counts["skipped"]}">\n')
                fh = self.bodies[key]
                fh.seek(0)
                shutil.copyfileobj(fh, out)
                out.write("  </testsuite>\n")
            out.write("</testsuites>\n")
        finally:
            self.close()


def write_junit(out: TextIO, run_dir: Path, summary: dict[str, Any]) -> None:
    """Write the JUnit XML of a run to `out`, reading its results once."""
    writer = JunitWriter(summary)
    for res in iter_results(run_dir):
        writer.feed(res)
    writer.finish(out)
