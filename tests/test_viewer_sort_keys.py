"""The Cases table's sort keys: a metric named as a built-in column (`case`, `status`, `duration`) sorts by the metric
under `sort=metric:NAME` and leaves the column's own key to the column; a bare metric name from an older link still sorts
by that metric when no column has that name."""

from __future__ import annotations

import html
import re
from pathlib import Path

from _runs import native_case, view_server, write_config, write_dataset
from test_viewer_usability import get
from tracejudge.entrypoints.cli import main
from tracejudge.viewer.index import CaseQuery, RunIndex


def _run(tmp_path: Path) -> Path:
    """12 cases `c-0`…`c-11`; every third calls one tool too few, so the metrics rank `c-0`, `c-3`, … first."""
    data = write_dataset(tmp_path / "d.jsonl", [native_case(f"c-{i}", ["a", "b"], ["a", "b"] if i % 3 else ["a"]) for i in range(12)])
    metrics = [{"type": "ToolCorrectness", "name": "case"}, {"type": "TrajectoryMatch", "name": "status", "order": "in_order"},
               {"type": "ToolCorrectness", "name": "duration"}, {"type": "TrajectoryMatch", "name": "traj", "order": "in_order"}]
    run_dir = tmp_path / "named"
    assert main(["run", str(write_config(tmp_path / "c.yaml", data, run_dir, metrics=metrics)), "--no-progress"]) == 0
    return run_dir


def _ids(idx: RunIndex, sort: str) -> list[str]:
    return [r["case_id"] for r in idx.query(CaseQuery(sort=sort, size=25)).rows]


def test_a_metric_named_as_a_column_sorts_under_its_own_key(tmp_path: Path) -> None:
    run_dir = _run(tmp_path)
    idx = RunIndex(run_dir)
    idx.refresh()
    natural = [f"c-{i}" for i in range(12)]
    by_metric = ["c-0", "c-3", "c-6", "c-9", *(f"c-{i}" for i in range(12) if i % 3)]
    for column in ("case", "status", "duration"):
        q = CaseQuery(sort=column, size=25)
        assert [r["case_id"] for r in idx.query(q).rows] == natural, column  # the column, never the metric of its name
        assert q.sort == column and q.notes == []
        q = CaseQuery(sort=f"metric:{column}", size=25)
        assert [r["case_id"] for r in idx.query(q).rows] == by_metric, column
        assert q.sort == f"metric:{column}" and q.notes == []
    q = CaseQuery(sort="traj", size=25)  # a bookmark from before the prefix: the metric, shown as its prefixed key
    assert [r["case_id"] for r in idx.query(q).rows] == by_metric and q.sort == "metric:traj" and q.notes == []
    idx.close()

    with view_server(str(run_dir)) as url:
        status, page = get(url + "/run/named/cases")
        assert status == 200
        heads = dict(re.findall(r'<th class="[^"]*" data-sort="([^"]+)"><a class="sort" href="([^"]+)"', page))
        assert set(heads) == {"case", "trial", "status", "duration", "metric:case", "metric:status", "metric:duration", "metric:traj"}
        assert "sort=metric%3Acase" in html.unescape(heads["metric:case"]) and "sort=case&" in html.unescape(heads["case"]) + "&"
        options = re.findall(r'<option value="([^"]+)"', re.search(r'<select name="sort".*?</select>', page, re.S).group(0))
        assert options == ["case", "trial", "status", "duration", "metric:case", "metric:status", "metric:duration", "metric:traj"]
        for link in (heads["metric:status"], heads["status"]):  # each header's own link sorts by what it heads, marked as such
            page = get(url + html.unescape(link))[1]
            on = re.findall(r'<th class="[^"]*sorted" data-sort="([^"]+)"', page)
            assert on == [re.search(r"sort=([^&]+)", html.unescape(link)).group(1).replace("%3A", ":")], link


def test_below_takes_a_metric_under_its_sort_key_too(tmp_path: Path) -> None:
    # `sort=metric:status` names the metric `status`; `below=metric:status` said "this run has no metric metric:status".
    idx = RunIndex(_run(tmp_path))
    idx.refresh()
    for below in ("status", "metric:status"):
        q = CaseQuery(below=below, size=25)
        assert [r["case_id"] for r in idx.query(q).rows] == ["c-0", "c-3", "c-6", "c-9"], below
        assert q.below == "status" and q.notes == []
    idx.close()
