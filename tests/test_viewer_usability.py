"""`tracejudge view` used as a demanding reader would, over HTTP on 127.0.0.1 (a real `tracejudge view` process).

Filters say what they apply (`below=*`, a metric, status or tag the run does not have), every page gives times
in one format (a run merged from shards as a normal one), and a run directory deleted or rewritten while the
viewer is open is said to be so, or read anew: never a 500, never the old run's text.
"""

from __future__ import annotations

import html
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _runs import http_get as get, native_case, view_server, write_config, write_dataset
from tracejudge.entrypoints.cli import main
import _forkserver

SECRET = "sk-proj-" + "Q7wErTy8uIoP1aSdFgH2jKlZ3xCvBnM4qWeRtY5uIoPaSdF6"
TIME = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$")


def _cases(prefix: str, word: str, n: int = 8) -> list[Any]:
    """`n` native cases `prefix-i` whose request holds `word`: every third calls one tool too few; one holds a key."""
    out: list[Any] = []
    for i in range(n):
        c = native_case(f"{prefix}-{i}", ["lookup", "book"], ["lookup", "book"] if i % 3 else ["lookup"], tags=[f"{prefix}-tag", f"g{i % 2}"])
        c["input"] = f"{word} request {i}"
        out.append(c)
    out[1]["trace"]["steps"][0]["tool_calls"][0]["arguments"] = {"api_key": SECRET, "note": f"token {SECRET} here"}
    return out


def matching(page: str) -> int:
    return int(re.search(r'id="n-matching">(\d+)<', page).group(1))


def selected(page: str, name: str) -> str:
    """The label of the option shown selected in the filter form's select `name`."""
    select = re.search(rf'<select name="{name}"[^>]*>(.*?)</select>', page, re.S).group(1)
    return re.search(r"<option [^>]*selected>([^<]*)</option>", select).group(1)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """`alpha` (8 native cases), its two shards merged into `merged`, and `zebra`, a run of other cases."""
    tmp = tmp_path_factory.mktemp("usability")
    out: dict[str, Path] = {}
    for name, word in (("alpha", "alpine"), ("zebra", "zebracrossing")):
        data = write_dataset(tmp / f"{name}.jsonl", _cases(name, word))
        cfg = write_config(tmp / f"{name}.yaml", data, tmp / name)
        assert main(["run", str(cfg), "--no-progress"]) in (0, 1)
        out[name] = tmp / name
    cfg = tmp / "alpha.yaml"
    for i in (1, 2):
        assert main(["run", str(cfg), "--no-progress", "--shard", f"{i}/2"]) in (0, 1)
    assert main(["report", str(tmp / "alpha-shard-1-of-2"), str(tmp / "alpha-shard-2-of-2"), "--out", str(tmp / "merged")]) in (0, 1)
    out["merged"] = tmp / "merged"
    return out


@pytest.fixture(scope="module")
def server(runs: dict[str, Path]) -> Iterator[str]:
    with view_server(str(runs["alpha"]), str(runs["merged"])) as url:
        yield url


def test_below_any_metric_and_a_metric_the_run_lacks(server: str) -> None:
    status, page = get(server + "/run/alpha/cases")
    total = matching(page)
    assert status == 200 and total == 8
    # "Not filtered" is what the empty choice says: not "any metric", which reads as "failed on any metric".
    assert selected(get(server + "/run/alpha/cases?below=")[1], "below") == "— (not filtered)"
    failed_any = matching(get(server + "/run/alpha/cases?status=failed")[1])
    page = get(server + "/run/alpha/cases?below=*")[1]
    assert 0 < matching(page) == failed_any < total  # every result with a failed verdict, on whichever metric
    assert selected(page, "below") == "any metric failed"
    assert len(re.findall(r"<tr data-case=", page)) == matching(page)
    assert all('class="chip fail"' in row for row in re.findall(r"<tr data-case=.*?</tr>", page, re.S))
    # A metric this run does not have (a link from another run): nothing is below it, and the page says why.
    page = get(server + "/run/alpha/cases?below=writes_exact")[1]
    assert matching(page) == 0
    assert "this run has no metric writes_exact (its metrics: tc, traj)" in page
    assert selected(page, "below") == "writes_exact (not in this run)"


def test_a_filter_value_the_run_lacks_is_shown_as_applied(server: str) -> None:
    page = get(server + "/run/alpha/cases?status=target_error")[1]
    assert matching(page) == 0
    assert selected(page, "status") == "target_error (not in this run)"  # not "any status" over an empty table
    assert "status=target_error: no result of this run has that status." in page
    page = get(server + "/run/alpha/cases?tag=no-such-tag")[1]
    assert matching(page) == 0 and selected(page, "tag") == "no-such-tag (not in this run)"
    page = get(server + "/run/alpha/cases?sort=no-such-column")[1]
    assert matching(page) == 8 and selected(page, "sort") == "case id"  # the order applied, not an option for it


def notes(page: str) -> list[str]:
    """The notes above the Cases table (and the Case page's), unescaped as a reader sees them."""
    return [html.unescape(n) for n in re.findall(r'<p class="bad filter-note"[^>]*>(.*?)</p>', page, re.S)]


def test_a_value_or_a_name_the_page_does_not_apply_is_said_on_it(server: str) -> None:
    # Each was a silent fall-back: another order, page size or page than the one asked for, and nothing said so.
    page = get(server + "/run/alpha/cases?sort=scroe")[1]
    assert matching(page) == 8 and selected(page, "sort") == "case id"  # the fall-back order, kept
    assert notes(page) == ["sort=scroe: this run has no column or metric of that name (it sorts by case, trial, status, duration, "
                           "metric:tc, metric:traj); sorted by case id."]
    page = get(server + "/run/alpha/cases?size=30&desc=yes&page=9")[1]
    assert re.search(r"id=\"page-no\">1<", page)
    assert notes(page) == ["desc=yes: not a yes or no the page reads (1, on or true; 0, off, false or nothing); sorted ascending.",
                           "size=30: a page holds 25, 50, 100 or 200 rows; showing 50.",
                           "page=9: pages count from 1 and this query has 1; showing page 1."]
    # A whole number out of range is one of those too (it was a bare 400 for a negative one or one past 2**62).
    status, page = get(server + f"/run/alpha/cases?size=-5&page={-2**70}")
    assert status == 200 and matching(page) == 8 and re.search(r"id=\"page-no\">1<", page)
    assert notes(page) == ["size=-5: a page holds 25, 50, 100 or 200 rows; showing 50.",
                           f"page={str(-2**70)[:40]}: pages count from 1 and this query has 1; showing page 1."]
    assert notes(get(server + f"/run/alpha/cases?size={2**70}&page=-1")[1]) == [
        f"size={2**70}: a page holds 25, 50, 100 or 200 rows; showing 50.", "page=-1: pages count from 1 and this query has 1; showing page 1."]
    page = get(server + "/run/alpha/cases?sotr=status&status=failed")[1]
    assert notes(page) == ["sotr: not a parameter of this page (it takes status, below, tag, q, sort, desc, page, size); ignored."]
    # What the page itself links to says nothing.
    for query in ("sort=traj&desc=1&size=25&page=1", "sort=duration&desc=&q=&tag=&below=&status=", "desc=0", ""):
        assert notes(get(server + "/run/alpha/cases?" + query)[1]) == [], query
    # The Case page beside a run that is not served: shown alone, saying why.
    case = re.search(r'class="case-link" href="([^"]+)"', get(server + "/run/alpha/cases")[1]).group(1)
    page = get(server + html.unescape(case) + "&vs=alpah")[1]
    assert notes(page) == ["vs=alpah: no run of that id is served here; the case is shown alone."]
    assert notes(get(server + html.unescape(case) + "&vs=merged")[1]) == []


def test_merged_and_normal_runs_give_their_start_in_one_format(server: str) -> None:
    page = get(server + "/?list")[1]
    started = dict(re.findall(r'<tr data-run="([^"]+)">(?:<td.*?</td>){6}<td>([^<]*)</td>', page))
    assert set(started) == {"alpha", "merged"}
    assert all(TIME.match(t) for t in started.values()), started
    for rid in ("alpha", "merged"):
        head = re.search(r"started ([^·]*) UTC ·", get(server + f"/run/{rid}")[1])
        assert head is not None and TIME.match(head.group(1)), rid


def test_a_key_in_a_tool_argument_is_never_shown(server: str) -> None:
    pages = [get(server + "/run/alpha/case?id=alpha-1")[1], get(server + "/run/alpha/cases")[1], get(server + "/run/alpha/cases?q=alpha-1")[1]]
    assert "api_key" in pages[0] and "[REDACTED]" in pages[0]
    assert not any(SECRET in p or SECRET[8:30] in p for p in pages)
    assert matching(get(server + f"/run/alpha/cases?q={SECRET[8:30]}")[1]) == 0


def _wait(what: str, check: Any, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.2)


def test_a_run_directory_deleted_under_the_viewer(runs: dict[str, Path], tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    shutil.copytree(runs["alpha"], victim, ignore=shutil.ignore_patterns("view.idx*"))
    with view_server(str(victim), str(runs["zebra"])) as url:
        assert matching(get(url + "/run/victim/cases")[1]) == 8
        shutil.rmtree(victim)
        for path in ("/run/victim", "/run/victim/cases", "/run/victim/case?id=alpha-0", "/diff?a=victim&b=zebra"):
            status, page = get(url + path)
            assert status == 410, (path, status, page[:300])
            assert "is not there any more" in page and "Traceback" not in page
        page = get(url + "/?list")[1]
        row = re.search(r'<tr data-run="victim"[^>]*>.*?</tr>', page, re.S).group(0)
        assert "gone:" in row and ">8<" not in row  # no counts of results that are not there
        assert get(url + "/run/zebra/cases")[0] == 200


def test_a_run_written_after_the_viewer_started_is_served_and_one_removed_says_so(runs: dict[str, Path], tmp_path: Path) -> None:
    # It was a 404 until the viewer was restarted: the folder of runs was listed once, at start.
    folder = tmp_path / "runs"
    folder.mkdir()
    shutil.copytree(runs["alpha"], folder / "first", ignore=shutil.ignore_patterns("view.idx*"))
    with view_server(str(folder)) as url:
        assert get(url + "/run/later")[0] == 404
        shutil.copytree(runs["zebra"], folder / "later", ignore=shutil.ignore_patterns("view.idx*"))
        status, page = get(url + "/run/later/cases")  # its pages open straight away, the Runs list not visited first
        assert status == 200 and matching(page) == 8
        assert re.findall(r'<tr data-run="([^"]+)"', get(url + "/?list")[1]) == ["first", "later"]
        (folder / "notes").mkdir()  # (a folder that is no run is not listed)
        shutil.copytree(runs["alpha"], folder / "first-copy", ignore=shutil.ignore_patterns("view.idx*"))
        (folder / "first-copy").rename(folder / "moved")
        assert re.findall(r'<tr data-run="([^"]+)"', get(url + "/?list")[1]) == ["first", "later", "moved"]
        shutil.rmtree(folder / "later")
        for path in ("/run/later", "/run/later/cases", "/run/later/case?id=zebra-0"):
            status, page = get(url + path)
            assert status == 410 and "is not there any more" in page, (path, status, page[:300])
        row = re.search(r'<tr data-run="later"[^>]*>.*?</tr>', get(url + "/?list")[1], re.S).group(0)
        assert "gone:" in row
    # Run directories named one by one are served alone: a sibling written since is not added.
    with view_server(str(folder / "first"), str(folder / "moved")) as url:
        shutil.copytree(runs["zebra"], folder / "sibling", ignore=shutil.ignore_patterns("view.idx*"))
        assert get(url + "/run/sibling")[0] == 404
        assert re.findall(r'<tr data-run="([^"]+)"', get(url + "/?list")[1]) == ["first", "moved"]


def test_a_run_directory_rewritten_under_the_viewer(runs: dict[str, Path], tmp_path: Path) -> None:
    target = tmp_path / "target"
    shutil.copytree(runs["alpha"], target, ignore=shutil.ignore_patterns("view.idx*"))
    with view_server(str(target)) as url:
        _wait("the alpha cases' text is indexed", lambda: matching(get(url + "/run/target/cases?q=alpine")[1]) == 8)
        assert "alpine request 0" in get(url + "/run/target/case?id=alpha-0")[1]
        for name in ("manifest.json", "summary.json", "results.jsonl"):  # another run written over it
            shutil.copy(runs["zebra"] / name, target / f"{name}.new")
            (target / f"{name}.new").replace(target / name)
        assert matching(get(url + "/run/target/cases")[1]) == 8
        # The new run's dataset text is read again: search finds its words, the case page its trace.
        _wait("the rewritten run's text is indexed", lambda: matching(get(url + "/run/target/cases?q=zebracrossing")[1]) == 8)
        assert matching(get(url + "/run/target/cases?q=alpine")[1]) == 0
        page = get(url + "/run/target/case?id=zebra-0")[1]
        assert "zebracrossing request 0" in page and "has no readable record" not in page


def test_the_state_a_page_polls_follows_summary_json_rewritten(runs: dict[str, Path], tmp_path: Path) -> None:
    # summary.json is read once per change, not once per poll: a rewrite (in place or replaced whole) is still seen.
    import json

    target = tmp_path / "polled"
    shutil.copytree(runs["alpha"], target, ignore=shutil.ignore_patterns("view.idx*"))
    summary = json.loads((target / "summary.json").read_text())
    with view_server(str(target)) as url:
        state = lambda: json.loads(get(url + "/api/run/polled/state")[1])  # noqa: E731
        assert state() == {"results": 8, "complete": True}
        (target / "summary.new").write_text(json.dumps({**summary, "complete": False}))
        (target / "summary.new").replace(target / "summary.json")  # a resume begun: the run is written again
        assert state()["complete"] is False
        (target / "summary.json").write_text(json.dumps({**summary, "complete": True}))  # in place
        assert state()["complete"] is True


def test_a_nul_in_a_search_is_not_echoed_into_the_page(server: str) -> None:
    # No HTML document may hold a NUL: the search box's value showed `%00` raw.
    status, page = get(server + "/run/alpha/cases?q=a%00b")
    assert status == 200 and "\x00" not in page and 'value="a\ufffdb"' in page


def test_a_search_with_a_nul_applies_what_the_box_shows(server: str) -> None:
    # SQLite cut the text at the NUL: `?q=%00` matched every row and `alpine%00` matched as `alpine`.
    for query in ("%00", "alpine%00"):
        page = get(server + f"/run/alpha/cases?q={query}")[1]
        assert matching(page) == 0, query
    assert matching(get(server + "/run/alpha/cases?q=alpine")[1]) == 8


def test_a_killed_run_reads_interrupted_and_a_held_one_in_progress(tmp_path: Path) -> None:
    # A run killed before its end wrote no verdict: `tracejudge report` calls it INTERRUPTED and gives the command that
    # resumes it; the viewer said "no verdict yet" for ever, as for a run still being written.
    import subprocess
    import sys

    from _runs import sigkill_when
    from tracejudge.engine.run_lock import RunLock

    data = write_dataset(tmp_path / "cases.jsonl", _cases("slow", "slowly", n=40))
    cfg = write_config(tmp_path / "slow.yaml", data, tmp_path / "killed", metrics=[{"type": "TaskCompletion"}],
                       judge={"provider": "simulator", "model": "sim", "simulator": {"latency_ms": 300}}, limits={"max_in_flight": 2},
                       run={"dir": str(tmp_path / "killed"), "flush_every": 1})
    proc = _forkserver.popen([str(Path(sys.executable).with_name("tracejudge")), "run", str(cfg), "--no-progress"], cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    results = tmp_path / "killed" / "results.jsonl"
    sigkill_when(proc, lambda: results.exists() and results.read_bytes().count(b"\n") >= 2, "the run wrote no results")
    assert not (tmp_path / "killed" / "summary.json").exists() or '"verdict"' not in (tmp_path / "killed" / "summary.json").read_text()
    with view_server(str(tmp_path / "killed")) as url:
        command = f"tracejudge run {cfg} --no-progress"  # (after a `cd` to the folder it was run from)
        for path in ("/?list", "/run/killed"):
            page = get(url + path)[1]
            assert 'class="badge INTERRUPTED"' in page and "no verdict yet" not in page, page[:2000]
            assert f"{command}</code>" in page, page  # (on the runs page too, not in a tooltip only)
        with RunLock(tmp_path / "killed"):  # a process writes it again (a resume)
            for path in ("/?list", "/run/killed"):
                page = get(url + path)[1]
                assert "no verdict yet" in page and 'badge INTERRUPTED' not in page, page[:2000]
                assert "in progress (process" in page
        assert 'class="badge INTERRUPTED"' in get(url + "/run/killed")[1]


def test_a_case_whose_run_ended_in_an_error_says_so_on_its_page(tmp_path: Path) -> None:
    # An inspect sample that crashed (its tool raised) keeps what it did and the error as `metadata.run_error`: the
    # transcript stopped after the call with nothing saying why.
    import yaml

    log = Path(__file__).parent / "data" / "inspect" / "weather-chat.eval"
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({"dataset": {"path": str(log), "format": "inspect"}, "metrics": [{"type": "MaxToolCalls", "max_calls": 9}],
                                   "run": {"dir": str(tmp_path / "insp")}}))
    assert main(["run", str(cfg), "--no-progress"]) in (0, 1)
    with view_server(str(tmp_path / "insp")) as url:
        page = get(url + "/run/insp/case?id=crash")[1]
        assert "the run ended in an error" in page and "weather backend crashed" in page, page[-3000:]
        assert "the run ended in an error" not in get(url + "/run/insp/case?id=chat")[1]


def test_a_page_names_its_own_icon(server: str) -> None:
    # Without one the browser asks for /favicon.ico on every page, and the 404 is an error in its console.
    status, page = get(server + "/?list")
    assert status == 200 and '<link rel="icon" href="data:,">' in page
