"""report.md escapes the breakdown tables' headers as it escapes their cells: a case-level metric's name comes from the dataset."""

from __future__ import annotations

import json
import re
from pathlib import Path

from _runs import write_dataset
from markdown_it import MarkdownIt
from tracejudge.entrypoints.cli import main

XSS = '<img src=x onerror="window.__xss=1">'
PIPE = "a|b"


def _run(tmp_path: Path) -> str:
    # Two case-level metrics named from the dataset, beside the config's own; every case is tagged, so a breakdown by tag
    # has one column per metric, headed by its name.
    lines = [
        {"id": "c1", "input": "x", "tags": ["t"], "trace": {"steps": [], "output": "o"},
         "metrics": [{"type": "MaxToolCalls", "name": XSS, "max_calls": 3}, {"type": "MaxToolCalls", "name": PIPE, "max_calls": 3}]},
        {"id": "c2", "input": "x", "tags": ["t"], "trace": {"steps": [], "output": "o"}},
    ]
    data = write_dataset(tmp_path / "d.jsonl", lines)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(json.dumps({"dataset": {"path": str(data), "format": "native"}, "metrics": [{"type": "MaxToolCalls", "max_calls": 1}],
                               "run": {"dir": str(tmp_path / "run")}, "cache": {"dir": str(tmp_path / "cache")}}))
    assert main(["run", str(cfg), "--no-progress"]) == 0
    return (tmp_path / "run" / "report.md").read_text(encoding="utf-8")


def test_report_md_escapes_metric_names_in_breakdown_headers(tmp_path: Path) -> None:
    md = _run(tmp_path)
    assert "<img" not in md  # nowhere raw: not in the summary's cells, not in the breakdown's headers
    header = next(line for line in md.splitlines() if line.startswith("| tag |"))
    assert "&lt;img src=x onerror=\"window.__xss=1\"&gt; mean (scored)" in header
    assert "a\\|b mean (scored)" in header
    # Every row of every table has as many cells as its header: no `|` of a name split a column.
    rendered = MarkdownIt("commonmark").enable("table").render(md)
    assert "<img" not in rendered and "__xss=1\">" not in rendered
    for table in rendered.split("<table>")[1:]:
        head, body = table.split("</thead>")[0], table.split("<tbody>")[1].split("</tbody>")[0] if "<tbody>" in table else ""
        width = len(re.findall(r"<th[ >]", head))
        for row in body.split("</tr>")[:-1]:
            assert len(re.findall(r"<td[ >]", row)) == width, (head, row)
    assert "<th>a|b mean (scored)</th>" in rendered
