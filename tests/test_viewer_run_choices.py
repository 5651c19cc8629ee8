"""The runs a Case page offers to show a case beside (`vs=`) and a Diff page to pick from follow the folder of runs as it
changes while `tracejudge view` runs: a run written since is offered (and `vs=` naming it shows it beside) without a
visit to the Runs page first, and one removed is no longer offered. Over HTTP on 127.0.0.1 (a real `tracejudge view`).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from _runs import copy_run, small_runs, view_server
from test_viewer_usability import get


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """`east` and `west`: runs of 3 native cases each, over datasets of their own."""
    return small_runs(tmp_path_factory.mktemp("choices"), ("east", "west"))


def _beside(page: str) -> list[str]:
    """The runs a Case page offers to show the case beside."""
    return re.findall(r'class="vs-link" href="[^"]*vs=([^"&]+)', page)


def _picks(page: str) -> list[str]:
    """The runs a Diff page's "baseline" select offers."""
    return re.findall(r'<option value="([^"]+)"', re.search(r'<select name="a">(.*?)</select>', page, re.S).group(1))


def test_a_case_page_offers_the_runs_written_since_and_not_those_removed(built: dict[str, Path], tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    copy_run(built["east"], runs / "east")
    copy_run(built["east"], runs / "east-old")  # (the same dataset: the case can be shown beside it)
    copy_run(built["west"], runs / "west")
    case = "/run/east/case?id=east-0"
    with view_server(str(runs)) as url:
        assert _beside(get(url + case)[1]) == ["east-old"]
        copy_run(built["east"], runs / "east-new")  # written after the viewer started; no other page is visited
        assert _beside(get(url + case)[1]) == ["east-old", "east-new"]
        page = get(url + case + "&vs=east-new")[1]
        assert 'id="vs-note"' not in page and 'class="sides two"' in page, re.findall(r'id="vs-note">([^<]*)', page)
        assert "east-new" in _picks(get(url + "/diff?a=east&b=west")[1])
        shutil.rmtree(runs / "east-old")
        assert _beside(get(url + case)[1]) == ["east-new"]
        assert _picks(get(url + "/diff?a=east&b=east-new")[1]) == ["east", "west", "east-new"]
        page = get(url + case + "&vs=east-old")[1]  # (a link kept from before: the case alone, saying why)
        assert "that run&#x27;s directory is gone" in page and 'class="sides one"' in page
