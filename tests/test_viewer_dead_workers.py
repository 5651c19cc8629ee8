"""The viewer lists one row per case after a run whose workers died is resumed (real processes, `processes: 2`).

A dead worker's result is provisional; the resume's result supersedes it. An earlier version filed the result of an
unreadable dataset line under an id read from the line's first bytes (`badjson`), a key no later run writes again:
every reader takes the line's later final result (same file and line) as superseding it, but the Cases page listed
both, two rows for one case, the dead worker's as a case of its own.
"""

from __future__ import annotations

import html
import re
import urllib.request
from pathlib import Path

from _runs import view_server
from test_worker_death_ids import _as_earlier_versions_filed, _healthy_and_crashed, _run


def _rows(url: str) -> list[str]:
    with urllib.request.urlopen(url + "/run/out/cases?size=200", timeout=60) as reply:
        page = reply.read().decode()
    return [html.unescape(m) for m in re.findall(r'<tr data-case="([^"]*)"', page)]


def test_a_dead_workers_result_superseded_by_its_lines_final_result_is_not_a_row_of_its_own(tmp_path: Path) -> None:
    _, crashed, first = _healthy_and_crashed(tmp_path)  # every worker died: four provisional results
    assert first.returncode != 0
    _as_earlier_versions_filed(crashed)
    with view_server(str(crashed / "out")) as url:
        assert sorted(_rows(url)) == ["badjson", "ok1", "ok2", "u16"]  # standing, provisional
        assert _run(crashed, crash=False).returncode == 0  # resumed while the page is open: the index grows
        want = sorted(["ok1", "ok2", f"{crashed / 'd.jsonl'}:2", f"{crashed / 'd.jsonl'}:3"])
        assert sorted(_rows(url)) == want
        with urllib.request.urlopen(url + "/run/out", timeout=60) as reply:
            assert '<b id="n-results">4</b>' in reply.read().decode()
    (crashed / "out" / "view.idx").unlink()
    with view_server(str(crashed / "out")) as url:  # and built afresh from the whole file
        assert sorted(_rows(url)) == want
