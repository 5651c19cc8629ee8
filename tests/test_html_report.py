"""report.html renders in headless Chromium: verdict, coverage, distributions, baseline comparison, a sortable case table."""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from html.parser import HTMLParser
from pathlib import Path

import pytest
from _runs import planted_runs, seven_and_three, write_config
from tracejudge.entrypoints.cli import main
import _forkserver

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (CI installs Debian's `chromium` in .ci/run)")


def dump_dom(page: Path, fragment: str = "") -> str:
    """The DOM after the page's scripts ran, from a fresh headless Chromium profile."""
    with tempfile.TemporaryDirectory() as profile:
        proc = _forkserver.run(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
             "--dump-dom", page.resolve().as_uri() + fragment],
            capture_output=True, text=True, timeout=90,
        )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


class _Rows(HTMLParser):
    """Collects the case table's rows (data-case attributes) and the SVG histograms."""

    def __init__(self) -> None:
        super().__init__()
        self.cases: list[str] = []
        self.hists: list[str] = []
        self.sorted = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "tr" and "data-case" in a:
            self.cases.append(a["data-case"] or "")
        if tag == "svg" and "data-metric" in a:
            self.hists.append(a["data-metric"] or "")
        if tag == "table" and a.get("id") == "cases":
            self.sorted = a.get("data-sorted")


def test_report_html_is_self_contained(tmp_path: Path) -> None:
    data = seven_and_three(tmp_path / "cases.jsonl")
    run_dir = tmp_path / "run"
    assert main(["run", str(write_config(tmp_path / "c.yaml", data, run_dir)), "--no-progress"]) == 0
    page = (run_dir / "report.html").read_text()
    assert not re.search(r"""\b(src|href)\s*=|@import|url\(""", page)  # no external assets of any kind
    assert "</script>" not in page.split('id="case-data">')[1].split("</script>")[0]


@needs_chromium
def test_report_html_renders_and_sorts_in_chromium(tmp_path: Path) -> None:
    data = seven_and_three(tmp_path / "cases.jsonl")
    run_dir = tmp_path / "run"
    assert main(["run", str(write_config(tmp_path / "c.yaml", data, run_dir)), "--no-progress"]) == 0
    page = run_dir / "report.html"

    dom = dump_dom(page)
    rows = _Rows()
    rows.feed(dom)
    assert 'id="verdict" class="badge PASS">PASS' in dom
    assert "<b>7 of 10</b>" in dom
    assert rows.hists == ["tc", "traj"]  # one distribution per metric
    assert len(rows.cases) == 10  # the script built every row from the embedded data
    assert rows.cases[:3] == sorted(rows.cases[:3]) and all(c for c in rows.cases)
    assert 'id="rows-shown">10<' in dom
    assert "missing tools: 'b'" in dom and "case has no trace" in dom  # reasons and errors in the table
    assert "No baseline configured" in dom

    dom = dump_dom(page, "#sort=-traj")
    rows = _Rows()
    rows.feed(dom)
    assert rows.sorted == "-traj"
    assert rows.cases[:4] == ["good-0", "good-1", "good-2", "good-3"]  # traj 1.0 first
    assert rows.cases[4:7] == ["half-0", "half-1", "half-2"]  # then 0.667; errored rows (no value) last
    dom = dump_dom(page, "#sort=case")
    rows = _Rows()
    rows.feed(dom)
    assert rows.cases == sorted(rows.cases)


@needs_chromium
def test_report_html_shows_the_baseline_comparison(tmp_path: Path) -> None:
    a, b, planted, _ = planted_runs(tmp_path)
    (b / "summary.json").write_text('{"complete": true}')  # hand-made: say it finished, as a run's own summary does
    assert main(["report", str(b), "--baseline", str(a), "--out", str(tmp_path / "vs-a")]) == 1
    dom = dump_dom(tmp_path / "vs-a" / "report.html")
    assert 'class="badge FAIL">FAIL' in dom
    assert "Regressed most: acc" in dom and "planted regression" in dom
    assert dom.count('class="bar-baseline"') == 20  # baseline bars beside the current ones, 10 bins per metric
    shown = re.findall(r"<tr><td>(c\d{3})</td>", dom.split("Regressed most: acc")[1])
    assert shown and set(shown) <= planted


@needs_chromium
def test_report_html_case_table_is_paginated(tmp_path: Path) -> None:
    _, b, _, _ = planted_runs(tmp_path)
    main(["report", str(b)])
    pages = []
    for fragment in ("", "#page=2", "#sort=case&page=6", "#page=99"):
        rows = _Rows()
        dom = dump_dom(b / "report.html", fragment)
        rows.feed(dom)
        pages.append((rows.cases, re.search(r'id="page-no">(\d+)<', dom).group(1)))
    assert [len(c) for c, _ in pages] == [50, 50, 50, 50] and 'id="pages">6<' in dom  # 300 results, 50 a page
    assert [n for _, n in pages] == ["1", "2", "6", "6"]  # a page past the end shows the last
    assert not set(pages[0][0]) & set(pages[1][0])
    assert pages[2][0] == sorted(pages[2][0]) and pages[2][0][-1] == "c299"
    assert dom.count('class="why" hidden') == 50  # every reason one click away, not on the page's length


def test_histogram_label_fits_inside_its_svg() -> None:
    """The metric's label under a histogram sits a font's descent above the SVG's bottom edge: at y = height - 2 the
    descenders of `writes_exact`'s underscore (and of g, p, y) were cut off, so it read `writes exact`."""
    from tracejudge.stages.reports.html import _histogram_svg

    svg = _histogram_svg("writes_exact", [3, 0, 1, 0, 0, 0, 0, 0, 2, 4], None)
    height = float(re.search(r'<svg[^>]* height="([\d.]+)"', svg).group(1))
    label = re.search(r'<text x="[\d.]+" y="([\d.]+)" font-size="(\d+)" text-anchor="middle">writes_exact', svg)
    assert label is not None, svg
    baseline, size = float(label.group(1)), float(label.group(2))
    assert height - baseline >= 0.25 * size, (height, baseline)  # room for the font's descent
