"""The viewer's Cases page names the lines of `results.jsonl` it does not show (not JSON, or not a result), as
`report` and `compare` do: they were left out without a word, so a hand-edited or damaged file read as fewer cases.

A real `tracejudge view` process over HTTP on 127.0.0.1; lines appended while it runs are picked up and named too.
"""

from __future__ import annotations

import html
import json
import urllib.error
import urllib.request
from pathlib import Path

from _runs import native_case, view_server, write_config, write_dataset
from tracejudge.entrypoints.cli import main


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


def test_the_case_page_of_a_damaged_line_says_which_line_and_what_is_wrong(tmp_path: Path) -> None:
    # Its case page answered a bare 404 ("no result for case 'c1'"), though the Cases page named the line.
    run = _finished(tmp_path)
    results = run / "results.jsonl"
    lines = results.read_text().splitlines()
    edited = json.loads(lines[1])
    edited["scores"]["traj"]["value"] = "high"
    results.write_text("\n".join([lines[0], json.dumps(edited), lines[2][:70], lines[3], lines[0][:40] + "x"]) + "\n")
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
