"""The viewer's Cases page names the lines of `results.jsonl` it does not show (not JSON, or not a result), as
`report` and `compare` do: they were left out without a word, so a hand-edited or damaged file read as fewer cases.

A real `tracejudge view` process over HTTP on 127.0.0.1; lines appended while it runs are picked up and named too.
"""

from __future__ import annotations

import html
import json
import os
import re
import select
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from _runs import native_case, view_process, view_server, write_config, write_dataset
from tracejudge.entrypoints.cli import main
import _forkserver


def _page(url: str) -> str:
    with urllib.request.urlopen(url, timeout=60) as reply:
        return html.unescape(reply.read().decode())


def test_lines_that_are_not_results_are_named_on_the_cases_page(tmp_path: Path) -> None:
    data = write_dataset(tmp_path / "d.jsonl", [native_case(f"c{i}", ["lookup"], ["lookup"]) for i in range(3)])
    cfg = write_config(tmp_path / "c.yaml", data, tmp_path / "run")
    assert main(["run", str(cfg), "--no-progress"]) in (0, 1)
    results = tmp_path / "run" / "results.jsonl"
    good = results.read_text().splitlines()
    nan = json.loads(good[0])
    nan["case_id"], nan["scores"] = "edited", {k: {**v, "value": "high"} for k, v in nan["scores"].items()}
    results.write_text("\n".join([good[0], '{"case_id": "cut", "trial": 0, "sta', "", json.dumps(nan), *good[1:]]) + "\n")
    with view_server(str(tmp_path / "run")) as url:
        page = _page(url + "/run/run/cases")
        assert "results.jsonl: 2 lines not a result, not shown here" in page, page
        assert "line 2: (root): invalid JSON" in page and "line 4: scores." in page and ".value:" in page
        assert "line 3" not in page  # (a blank line is no result and no damage)
        assert 'id="n-matching">3<' in page
        with results.open("a") as fh:  # appended while the viewer is open: read on the next page
            fh.write("[1, 2]\n")
        page = _page(url + "/run/run/cases")
        assert "3 lines not a result" in page and "line 7: (root): expected a JSON object" in page, page


def test_a_last_line_cut_off_in_a_run_no_process_writes_is_named(tmp_path: Path) -> None:
    # A run killed mid-write leaves its last line without a line break; nothing will finish it. It was left out unnamed.
    data = write_dataset(tmp_path / "d.jsonl", [native_case(f"c{i}", ["lookup"], ["lookup"]) for i in range(3)])
    cfg = write_config(tmp_path / "c.yaml", data, tmp_path / "run")
    assert main(["run", str(cfg), "--no-progress"]) in (0, 1)
    results = tmp_path / "run" / "results.jsonl"
    text = results.read_text()
    results.write_text(text[: text.rindex("\n", 0, len(text) - 1) + 1] + text.splitlines()[-1][:120])
    with view_server(str(tmp_path / "run")) as url:
        page = _page(url + "/run/run/cases")
        assert "results.jsonl: line 3, the last, ends without a line break" in page and 'id="n-matching">2<' in page, page
        page = " ".join(_page(url + "/run/run").split())  # and the run page says the summary's 3 are not the file's 2
        assert "summary.json counts 3 results; results.jsonl now holds 2 readable results (line 3, the last, ends without" in page, page
        with results.open("a") as fh:  # finished after all: shown, and no longer named
            fh.write(text.splitlines()[-1][120:] + "\n")
        page = _page(url + "/run/run/cases")
        assert "ends without a line break" not in page and 'id="n-matching">3<' in page


def _finished(tmp_path: Path, n: int = 4) -> Path:
    data = write_dataset(tmp_path / "d.jsonl", [native_case(f"c{i}", ["lookup"], ["lookup"]) for i in range(n)])
    cfg = write_config(tmp_path / "c.yaml", data, tmp_path / "run")
    assert main(["run", str(cfg), "--no-progress"]) in (0, 1)
    return tmp_path / "run"


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=60) as reply:
            return int(reply.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def _damaged(run: Path, metric: str, rest: Any) -> None:
    """Line 2 (c1) gets `metric` scored "high", line 3 (c2) is cut short; `rest(lines)` gives the lines after them."""
    results = run / "results.jsonl"
    lines = results.read_text().splitlines()
    edited = json.loads(lines[1])
    edited["scores"][metric]["value"] = "high"
    results.write_text("\n".join([lines[0], json.dumps(edited), lines[2][:60], *rest(lines)]) + "\n")


def test_the_run_page_says_results_no_longer_match_the_summary(tmp_path: Path) -> None:
    # The run page showed summary.json's means and counts (4 results, all passed) over a results.jsonl damaged since,
    # which the Cases page showed holding 2; it now says the figures are the summary's, not the file's.
    run = _finished(tmp_path)
    _damaged(run, "tc", lambda lines: lines[3:])
    with view_server(str(run)) as url:
        page = re.sub(r'<a class="bad-line" [^>]*>|</a>', "", " ".join(_page(url + "/run/run").split()))  # (each line names its case)
        assert "The results no longer match the summary: summary.json counts 4 results; results.jsonl now holds 2 readable results" in page, page
        assert '2 lines of it are not a result (line 2: scores.tc.value: "high" is not a number' in page and "line 3: (root): invalid JSON" in page
        assert "The figures below are summary.json's, not the file's; <code>tracejudge report " in page
    assert main(["report", str(run)]) == 1  # rebuilt from the file: its figures are the file's now, and the page says why
    with view_server(str(run)) as url:
        page = re.sub(r'<a class="bad-line" [^>]*>|</a>', "", " ".join(_page(url + "/run/run").split()))
        assert "no longer match" not in page, page
        assert "results.jsonl: 2 lines of it are not a result (line 2:" in page and "summary.json counts 2 results; the figures below leave them out" in page


def test_a_summary_that_is_not_json_is_said_to_be_damaged_not_unwritten(tmp_path: Path) -> None:
    # It read as a run that had not ended: "summary.json is written when the run finishes", INTERRUPTED, "resume with";
    # a manifest that is not JSON read as none ("the run has no manifest.json naming its dataset").
    run = _finished(tmp_path, 2)
    (run / "summary.json").write_text('{"results": 2, "compl')
    (run / "manifest.json").write_text("[1, 2]")
    with view_server(str(run)) as url:
        page = " ".join(_page(url + "/run/run").split())
        assert "summary.json is there but not JSON (" in page and "tracejudge report" in page, page
        assert "summary.json is written when the run finishes" not in page and "not written yet" not in page
        assert "INTERRUPTED" not in page and "resume with" not in page and '<span id="state">finished</span>' in page
        page = " ".join(_page(url + "/run/run/case?id=c1").split())
        assert "the run's manifest.json is not a JSON object, so the viewer cannot tell which dataset holds the trace" in page, page


def test_the_case_page_of_a_damaged_line_says_which_line_and_what_is_wrong(tmp_path: Path) -> None:
    # Its case page answered a bare 404 ("no result for case 'c1'"), though the Cases page named the line.
    run = _finished(tmp_path)
    _damaged(run, "traj", lambda lines: [lines[3], lines[0][:40] + "x"])  # (line 5: c0's, cut)
    with view_server(str(run)) as url:
        assert _status(url + "/run/run/case?id=c1") == 200
        page = " ".join(_page(url + "/run/run/case?id=c1").split())
        assert "results.jsonl holds a line for this (case, trial) that is not a result, so it has no result to show" in page, page
        assert 'line 2: scores.traj.value: "high" is not a number' in page and "lookup" in page  # (and its trace)
        page = " ".join(_page(url + "/run/run/case?id=c2").split())  # a line cut short: its id read from what is left
        assert "line 3: (root): invalid JSON" in page and "the line ends early" in page, page
        page = " ".join(_page(url + "/run/run/case?id=c0").split())  # a good line, and a damaged one of the same case after it
        assert "results.jsonl also holds a line for this (case, trial) that is not a result" in page and "line 5: (root): invalid JSON" in page
        assert "<h3>Scores</h3>" in _page(url + "/run/run/case?id=c0").replace("\n", "")
        assert _status(url + "/run/run/case?id=nope") == 404 and _status(url + "/run/run/case?id=c1&trial=1") == 404


def test_a_results_file_that_cannot_be_read_is_a_page_saying_so_not_a_500(tmp_path: Path) -> None:
    # A results.jsonl that is a directory (or unreadable: no permission, an I/O error) failed every page of the viewer
    # with a 500 and a traceback in its log, the Runs list of every other run too.
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    run, other = _finished(tmp_path / "a", 2), _finished(tmp_path / "b", 2)
    (run / "results.jsonl").unlink()
    (run / "results.jsonl").mkdir()
    with view_process(str(run), str(other)) as (url, proc):
        for page in ("/run/run", "/run/run/cases", "/run/run/case?id=c0", "/diff?a=run-2&b=run"):
            assert _status(url + page) == 503, page
        try:
            urllib.request.urlopen(url + "/run/run", timeout=60)
        except urllib.error.HTTPError as exc:
            text = html.unescape(exc.read().decode())
        assert "results.jsonl cannot be read (Is a directory)" in text, text
        assert _status(url + "/?list") == 200 and _status(url + "/run/run-2") == 200
        assert _status(url + "/run/run-2/case?id=c0&vs=run") == 200  # (beside it: the case alone)
        with urllib.request.urlopen(url + "/api/run/run/state", timeout=60) as reply:
            assert json.loads(reply.read())["unreadable"] == "results.jsonl cannot be read (Is a directory)"
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    assert "Traceback" not in err, err


def _row(page: str, rid: str) -> str:
    """The Runs table's row of run `rid`."""
    start = page.index(f'<tr data-run="{rid}"')
    return page[start:page.index("</tr>", start)]


def test_the_runs_list_marks_a_run_whose_results_no_longer_match_its_summary(tmp_path: Path) -> None:
    # Only the run's own page said so: listed among others, its row showed the file's counts beside summary.json's
    # verdict with no sign that they disagree.
    for name in ("a", "b", "c"):
        (tmp_path / name).mkdir()
    intact, damaged, unsummed = _finished(tmp_path / "a"), _finished(tmp_path / "b"), _finished(tmp_path / "c")
    _damaged(damaged, "tc", lambda lines: lines[3:])
    (unsummed / "summary.json").write_text('{"results": 4, "compl')  # (no figures to match: damaged itself)
    with view_server(str(intact), str(damaged), str(unsummed)) as url:
        page = _page(url + "/?list")
        assert "drift" not in _row(page, "run"), _row(page, "run")
        row = _row(page, "run-2")
        assert 'class="bad small drift"><a href="/run/run-2#results-drift">results.jsonl no longer matches summary.json</a>' in row, row
        assert 'id="results-drift"' in _page(url + "/run/run-2")  # (where the mark leads: the lines named)
        assert '<a href="/run/run-3#summary-unreadable">summary.json is damaged</a>' in _row(page, "run-3"), _row(page, "run-3")
        assert 'id="summary-unreadable"' in _page(url + "/run/run-3")
    assert main(["report", str(damaged)]) == 1  # the summary rebuilt from the file: its damaged lines are still there
    with view_server(str(intact), str(damaged), str(unsummed)) as url:
        row = _row(_page(url + "/?list"), "run-2")
        assert ">results.jsonl has lines that are not results</a>" in row and "no longer matches" not in row, row


def test_the_cases_page_links_each_damaged_line_it_names_to_its_case(tmp_path: Path) -> None:
    # The note named `line 2: scores.tc.value: …` as plain text, though that case's page exists and says what is wrong.
    run = _finished(tmp_path)
    _damaged(run, "tc", lambda lines: [*lines[3:], "[1, 2]"])  # (line 5: no case named)
    with view_server(str(run)) as url:
        with urllib.request.urlopen(url + "/run/run/cases", timeout=60) as reply:
            page = reply.read().decode()
        links = dict((html.unescape(text), html.unescape(href)) for href, text in re.findall(r'<a class="bad-line" href="([^"]*)">([^<]*)</a>', page))
        assert sorted(links.values()) == ["/run/run/case?id=c1", "/run/run/case?id=c2"], page
        named = next(k for k, v in links.items() if v.endswith("c1"))
        assert named.startswith('line 2: scores.tc.value: "high" is not a number'), named
        assert "line 5: (root): expected a JSON object" in html.unescape(page)  # named, with no case to link to
        case = " ".join(_page(url + links[named]).split())  # where the link leads: the page saying what is wrong
        assert 'line 2: scores.tc.value: "high" is not a number' in case, case
        with urllib.request.urlopen(url + "/run/run", timeout=60) as reply:  # and the Run page, which names them too
            page = reply.read().decode()
        assert re.findall(r'<a class="bad-line" href="([^"]*)">line [23]: ', page) == ["/run/run/case?id=c1", "/run/run/case?id=c2"], page


def test_a_fifo_in_place_of_a_run_file_is_said_not_waited_on(tmp_path: Path) -> None:
    # An unpacked artifact may hold a FIFO where a run file was: opened to be read, it waits for a writer forever.
    # summary.json's hung every page of the viewer (read on the event loop); results.jsonl's hung its run's pages and
    # the Runs list; traces.jsonl's its case pages.
    runs = {}
    for name in ("summary.json", "results.jsonl", "traces.jsonl", "checkpoint.json", "none"):
        (tmp_path / name).mkdir()
        runs[name] = _finished(tmp_path / name, 2)
        if name != "none":
            (runs[name] / name).unlink(missing_ok=True)
            os.mkfifo(runs[name] / name)
    summary = runs["checkpoint.json"] / "summary.json"  # (its checkpoint is read for a run not complete: a resume command)
    summary.write_text(json.dumps({**json.loads(summary.read_text()), "complete": False}))
    with view_process(*map(str, runs.values())) as (url, proc):
        rids = dict(zip(runs, ("run", "run-2", "run-3", "run-4", "run-5"), strict=True))

        def page(path: str) -> tuple[int, str]:
            try:
                with urllib.request.urlopen(url + path, timeout=20) as reply:
                    return int(reply.status), html.unescape(reply.read().decode())
            except urllib.error.HTTPError as exc:
                return exc.code, html.unescape(exc.read().decode())

        assert page("/?list")[0] == 200
        for rid in rids.values():
            assert page(f"/run/{rid}")[0] == (503 if rid == rids["results.jsonl"] else 200), rid
        status, text = page(f"/run/{rids['results.jsonl']}/cases")
        assert status == 503 and "results.jsonl cannot be read (not a regular file (a FIFO, a device or a socket))" in text, text
        status, text = page(f"/run/{rids['summary.json']}")
        assert "summary.json is there but cannot be read (not a regular file" in " ".join(text.split()), text
        status, text = page(f"/run/{rids['traces.jsonl']}/case?id=c0")
        assert status == 200 and "traces.jsonl is not a regular file (a FIFO, a device or a socket), so it is not read" in text, text
        assert page(f"/run/{rids['none']}/case?id=c0")[0] == 200
        assert "interrupted; resume with:" in page(f"/run/{rids['checkpoint.json']}")[1]
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    assert "Traceback" not in err, err


def test_a_fifo_in_place_of_the_run_lock_is_not_waited_on(tmp_path: Path) -> None:
    # `view` asks whether a process holds each run (its `.lock`) before it serves: a FIFO there was opened to be read
    # and waited for a writer forever, so the viewer never started (nor did `report` say anything).
    run = _finished(tmp_path, 2)
    (run / ".lock").unlink(missing_ok=True)
    os.mkfifo(run / ".lock")
    proc = _forkserver.popen([sys.executable, "-m", "tracejudge", "view", str(run), "--port", "0"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        ready, _, _ = select.select([proc.stdout], [], [], 60)
        assert ready, "tracejudge view printed nothing within 60 s"
        url = proc.stdout.readline().split()[2]
        with urllib.request.urlopen(url, timeout=30) as reply:
            assert "complete" in reply.read().decode()
    finally:
        proc.kill()
        proc.communicate(timeout=30)
    report = _forkserver.run([sys.executable, "-m", "tracejudge", "report", str(run)], capture_output=True, text=True, timeout=120)
    assert report.returncode == 0, report.stderr[-2000:]
