"""The reports say which cases' agent runs ended in an error, and report.html shows text in backticks as code.

A case whose agent run ended in an error the framework recorded (`metadata.run_error`: an inspect-ai sample that
crashed or that a token or time limit stopped, a smolagents run out of steps, an OpenAI Agents SDK "Max turns
exceeded", ...) is scored as its trace recorded it and stays `ok`. Before, nothing but `tracejudge view` told it from a
run that finished: report.md, report.html and the terminal showed it as a plain `ok` case and summary.json did not
count it. Now summary.json counts them (`run_errors`, absent when there are none), the summaries say how many, and the
case rows (worst cases, the HTML case table) mark each one with its run error, also listed apart. The logs are the
real inspect-ai logs of `tests/data/inspect-stops/` (five samples stopped by a raised tool or a limit) and
`tests/data/inspect/` (one crashed sample beside finished ones); their `truth.json` files say how each sample ended.

Before, too, report.html showed text in backticks literally ("expected `get_weather`"); now it is a code span, made
after escaping (page) or as an element holding text (the page's script), so trace text never becomes live HTML.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from _runs import native_case, write_dataset
from tracejudge.entrypoints.cli import main

DATA = Path(__file__).parent / "data"


def _expected_run_errors() -> dict[str, str]:
    """Case id → the error its run ended in, from the truth files: the sample's error, else the limit that stopped it."""
    want = {}
    for samples in json.loads((DATA / "inspect-stops" / "truth.json").read_text()).values():
        for sid, s in samples.items():
            want[sid] = s["error"] if s["error"] is not None else s["limit"]["reason"]
    for task in json.loads((DATA / "inspect" / "truth.json").read_text()).values():
        for sid, s in task["samples"].items():
            if s.get("error"):
                assert task["epochs"] == 1  # (a sample's id is its case id)
                want[sid] = s["error"]
    return want


def _logs(tmp: Path) -> Path:
    """Both folders' inspect logs in one folder (format `inspect` reads every log in it)."""
    logs = tmp / "logs"
    logs.mkdir()
    for log in (*(DATA / "inspect-stops").glob("*.eval"), *(DATA / "inspect").glob("*.eval")):
        shutil.copy(log, logs / log.name)
    return logs


def _config(tmp: Path, dataset: Path, run_dir: Path, processes: int = 1, judged: bool = False) -> Path:
    cfg: dict[str, Any] = {"dataset": {"path": str(dataset), "format": "inspect"},
                           "metrics": [{"type": "MaxToolCalls", "max_calls": 1}, {"type": "ToolCorrectness", "allow_extra": True}],
                           "run": {"dir": str(run_dir), "processes": processes}}
    if judged:  # results made after the judge, not where they were scored: the reports' other path
        cfg["metrics"].append({"type": "TaskCompletion"})
        cfg.update(judge={"provider": "simulator", "model": "gpt-4o-mini"}, cache={"dir": str(tmp / "cache")})
    path = tmp / f"c{processes}.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return path


def _results(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "results.jsonl").read_text(encoding="utf-8").splitlines()]


def _md_cell(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _check_reports(run_dir: Path, want: dict[str, str], total: int, stdout: str) -> None:
    """summary.json, report.md, report.html and the terminal say that `want`'s cases' runs ended in those errors."""
    from tracejudge.stages.reports.html import _code  # (here: the code before had none)

    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    assert summary["run_errors"] == len(want) and summary["status"] == {"ok": total}  # counted; still ok: they were scored
    line = f"{len(want)} of {total} cases: the agent's run ended in an error (`metadata.run_error`)"
    assert line.replace("`", "") in stdout
    md = (run_dir / "report.md").read_text(encoding="utf-8")
    assert f"**{line}" in md
    listed = md.split("## Runs that ended in an error\n", 1)[1].split("\n## ", 1)[0].split("\n---\n", 1)[0]
    assert f"{len(want)} of {total} results" in listed
    rows = re.findall(r"^\| (.+?) \| 0 \| ok \| (.+) \|$", listed, re.M)
    assert dict(rows) == {cid: _md_cell(why) for cid, why in want.items()}
    worst = md.split("## Worst cases\n", 1)[1].split("\n## Runs that ended", 1)[0]
    assert "| case | trial | value | reason | run ended in error |" in worst
    marked = re.findall(r"^\| (\S+) \| 0 \| [0-9.]+ \| .+ \| (.+) \|$", worst, re.M)
    assert marked and all(why == (_md_cell(want[cid]) if cid in want else "—") for cid, why in marked), marked
    assert {cid for cid, why in marked if why != "—"} & set(want)  # (those of them that fell short)
    page = (run_dir / "report.html").read_text(encoding="utf-8")
    assert f'<p id="run-errors" class="warn">{_code(line)}' in page
    table = page.split('<table id="run-error-cases">', 1)[1].split("</table>", 1)[0]
    cells = re.findall(r'<tr><td>(.+?)</td><td class="num">0</td><td>ok</td><td class="reason">(.*?)</td></tr>', table)
    assert dict(cells) == {cid: _code(why) for cid, why in want.items()}
    data = json.loads(page.split('id="case-data">', 1)[1].split("</script>", 1)[0])
    assert {r["case_id"]: r["run_error"] for r in data["rows"] if r["run_error"]} == want
    assert len(data["rows"]) == total


@pytest.mark.parametrize(("processes", "judged"), [(1, False), (2, False), (1, True)])
def test_reports_count_and_mark_the_cases_whose_run_ended_in_an_error(tmp_path: Path, processes: int, judged: bool,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    want = _expected_run_errors()
    run_dir = tmp_path / "run"
    assert main(["run", str(_config(tmp_path, _logs(tmp_path), run_dir, processes, judged)), "--no-progress"]) == 0
    results = _results(run_dir)
    # The line carries it as it did: in the case's metadata, masked as all of it; no field of its own.
    assert {r["case_id"]: r["metadata"]["run_error"] for r in results if "run_error" in r["metadata"]} == want
    assert all("run_error" not in r and r["status"] == "ok" for r in results) and len(results) == 13
    _check_reports(run_dir, want, 13, capsys.readouterr().out)


def test_a_resumed_run_counts_the_run_errors_of_results_before_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    want = _expected_run_errors()
    run_dir = tmp_path / "run"
    config = str(_config(tmp_path, _logs(tmp_path), run_dir))
    assert main(["run", config, "--no-progress", "--set", "dataset.limit=4"]) == 0
    first = json.loads((run_dir / "summary.json").read_text())
    before = {r["case_id"] for r in _results(run_dir)}
    assert first["results"] == 4 and first["run_errors"] == len(before & set(want)) > 0
    capsys.readouterr()
    assert main(["run", config, "--no-progress", "--force"]) == 0  # the rest: the aggregate resumes from the checkpoint
    out = capsys.readouterr().out
    assert "(9 new results, 4 already finished)" in out
    _check_reports(run_dir, want, 13, out)
    checkpoint = json.loads((run_dir / "checkpoint.json").read_text())
    assert checkpoint["aggregator"]["run_errors"] == len(want)

    # A checkpoint written before the count (aggregate state format 6) is not trusted: rebuilt from results.jsonl.
    checkpoint["aggregator"]["format"] = 6
    del checkpoint["aggregator"]["run_errors"]
    (run_dir / "checkpoint.json").write_text(json.dumps(checkpoint))
    for name in ("summary.json", "report.md", "report.html"):
        (run_dir / name).unlink()
    assert main(["run", config, "--no-progress", "--force"]) == 0
    captured = capsys.readouterr()
    assert "state format 6, expected 7" in captured.err
    _check_reports(run_dir, want, 13, captured.out)

    # `tracejudge report` rebuilds them from results.jsonl alone.
    md = (run_dir / "report.md").read_text()
    (run_dir / "checkpoint.json").unlink()
    assert main(["report", str(run_dir)]) == 0
    assert json.loads((run_dir / "summary.json").read_text())["run_errors"] == len(want)
    assert (run_dir / "report.md").read_text() == md


HOSTILE = "AgentMaxStepsError: expected `get_weather`, got `<script>alert(1)</script>` & `a<b`"


def _hostile_run(tmp: Path) -> Path:
    """A native run: one case whose run error and reasons hold backticks round `<script>`, one without a run error, one
    unreadable record (an unknown key, which its error, in the table and the failed check's detail, quotes in backticks)."""
    data = write_dataset(tmp / "d.jsonl", [
        {**native_case("crashed", [], ["get_weather", "b"], metadata={"run_error": HOSTILE}),
         "expected_output": "call `get_weather` then `<script>alert(2)</script>`"},
        native_case("fine", [], ["a", "b"]),
        {"id": "typo", "trace": {"steps": []}, "`<script>alert(3)</script>`": 1},
    ])
    cfg = {"dataset": {"path": str(data), "format": "native"},
           "metrics": [{"type": "Contains"}, {"type": "Regex", "pattern": "`get_weather`"}, {"type": "MaxToolCalls", "max_calls": 1}],
           "assertions": {"max_invalid_share": 0.0}, "run": {"dir": str(tmp / "run")}}
    (tmp / "c.yaml").write_text(yaml.safe_dump(cfg), encoding="utf-8")
    assert main(["run", str(tmp / "c.yaml"), "--no-progress"]) == 1  # (FAIL: the check names the unreadable record)
    return tmp / "run"


def test_code_spans_are_made_after_escaping() -> None:
    from tracejudge.stages.reports.html import _code

    assert _code("expected `get_weather`, got `<script>x</script>`") == (
        "expected <code>get_weather</code>, got <code>&lt;script&gt;x&lt;/script&gt;</code>")
    assert _code("`a & b`, and a lone ` stays") == "<code>a &amp; b</code>, and a lone ` stays"
    assert _code("`` is no span") == "`` is no span"
    assert _code("no span across `lines\nof text`") == "no span across `lines\nof text`"
    assert _code('`"q"` <i>`</i>`') == "<code>&quot;q&quot;</code> &lt;i&gt;<code>&lt;/i&gt;</code>"


def test_report_html_shows_backticks_as_code_and_never_trace_html(tmp_path: Path) -> None:
    run_dir = _hostile_run(tmp_path)
    page = (run_dir / "report.html").read_text(encoding="utf-8")
    assert "<script>alert" not in page
    table = page.split('<table id="run-error-cases">', 1)[1].split("</table>", 1)[0]
    assert ('<td class="reason">AgentMaxStepsError: expected <code>get_weather</code>, got '
            "<code>&lt;script&gt;alert(1)&lt;/script&gt;</code> &amp; <code>a&lt;b</code></td>") in table
    assert "fine" not in table
    # A check's detail quoting an error with backticks (the unreadable record's unknown key).
    checks = page.split('<ul id="checks">', 1)[1].split("</ul>", 1)[0]
    assert "<code>&lt;script&gt;alert(3)&lt;/script&gt;</code>: Extra inputs are not permitted" in checks and "`" not in checks
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["run_errors"] == 1 and summary["status"] == {"invalid_input": 1, "ok": 2}
    md = (run_dir / "report.md").read_text(encoding="utf-8")
    assert "**1 of 3 cases: the agent's run ended in an error (`metadata.run_error`); scored as the trace recorded it, it counts as ok**" in md
    assert "| crashed | 0 | ok | AgentMaxStepsError: expected `get_weather`, got `&lt;script&gt;alert(1)&lt;/script&gt;` &amp; `a&lt;b` |" in md


def test_a_run_without_run_errors_says_nothing_of_them(tmp_path: Path) -> None:
    data = write_dataset(tmp_path / "d.jsonl", [native_case("a", ["x"], ["x"]), native_case("b", ["x"], ["y"])])
    cfg = {"dataset": {"path": str(data), "format": "native"}, "metrics": [{"type": "ToolCorrectness"}], "run": {"dir": str(tmp_path / "run")}}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg), encoding="utf-8")
    assert main(["run", str(tmp_path / "c.yaml"), "--no-progress"]) == 0
    run_dir = tmp_path / "run"
    assert "run_errors" not in json.loads((run_dir / "summary.json").read_text())
    md = (run_dir / "report.md").read_text()
    assert "run ended in" not in md and "| case | trial | value | reason |\n" in md
    page = (run_dir / "report.html").read_text()
    assert 'id="run-errors"' not in page and 'id="run-error-cases"' not in page
    data_rows = json.loads(page.split('id="case-data">', 1)[1].split("</script>", 1)[0])["rows"]
    assert [r["run_error"] for r in data_rows] == ["", ""]  # (the page's script reads the field)


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (CI installs Debian's `chromium` in .ci/run)")
def test_the_case_table_marks_the_run_error_and_makes_code_spans_of_text_only(tmp_path: Path) -> None:
    from test_html_report import dump_dom

    run_dir = _hostile_run(tmp_path)
    dom = dump_dom(run_dir / "report.html", "#sort=case")
    body = dom.split('<table id="cases"', 1)[1].split("</table>", 1)[0]
    assert "<script" not in body  # trace text is text: no element made from it
    rows = dict(re.findall(r'<tr data-case="(\w+)"[^>]*>(.*?)</tr><tr class="why"[^>]*>(?:.*?)</tr>', body))
    assert set(rows) == {"crashed", "fine", "typo"}
    assert re.search(r'<tr data-case="crashed" data-run-error="">', body) and not re.search(r'<tr data-case="fine" data-run-error', body)
    assert '<td class="clip warn" title="run ended in an error: AgentMaxStepsError: expected `get_weather`, got `&lt;script&gt;alert(1)' in rows["crashed"]
    assert ">ok · run error</td>" in rows["crashed"] and '<td class="clip" title="ok">ok</td>' in rows["fine"]
    why = body.split('<tr data-case="crashed"', 1)[1].split('<tr class="why"', 1)[1].split("</tr>", 1)[0]
    assert ('<div class="warn reason"><b>run ended in an error: </b>AgentMaxStepsError: expected <code>get_weather</code>, got '
            "<code>&lt;script&gt;alert(1)&lt;/script&gt;</code> &amp; <code>a&lt;b</code></div>") in why
    assert (" does not contain 'call <code>get_weather</code> then "
            "<code>&lt;script&gt;alert(2)&lt;/script&gt;</code>'</span>") in why
    assert '<span class="reason">output does not match /<code>get_weather</code>/</span>' in why
    typo = body.split('<tr data-case="typo"', 1)[1].split('<tr class="why"', 1)[1].split("</tr>", 1)[0]
    assert "<code>&lt;script&gt;alert(3)&lt;/script&gt;</code>: Extra inputs" in typo and "`" not in typo  # an error's backticks too
