"""Python niceties: `print(report)` is the summary table, the library never prints log lines, a target's traceback is kept."""

from __future__ import annotations

import io
import logging
import textwrap
from pathlib import Path

import tracejudge
from live_support import live_config, read_jsonl, run_live
from rich.console import Console
from tracejudge import ToolCalls, TrajectoryMatch

TRACE = {"steps": [{"tool_calls": [{"name": "search", "arguments": {"q": "x"}}, {"name": "book", "arguments": {"id": 1}}]}]}
CASES = [{"id": f"c{i}", "expected_tool_calls": [{"name": "search"}, {"name": "book" if i % 2 else "refund"}], "trace": TRACE} for i in range(6)]


def test_print_report_shows_the_summary_table_and_report_print_the_same_with_rich(capsys) -> None:
    report = tracejudge.evaluate(CASES, [ToolCalls(), TrajectoryMatch()])
    text = str(report)
    assert text.startswith("6 results: ok 6")
    rows = [line.split() for line in text.splitlines()]
    assert ["ToolCalls", "6/6", "0.750"] == rows[[r[:1] for r in rows].index(["ToolCalls"])][:3]
    assert any(r[:1] == ["TrajectoryMatch"] for r in rows)
    assert len(text) < 2_000 and "CaseResult" not in text  # not the model's repr of every result
    # (README: `run_dir` is by default a temporary directory; the repr said `run_dir=None` as if there had been none)
    assert repr(report) == "RunReport(results=6, status={'ok': 6}, run_dir=None (a temporary directory, removed))"
    assert report.run_dir is None and repr(type(report)(results=[], summary={})).endswith("run_dir=None)")
    buf = io.StringIO()
    report.print(Console(file=buf, width=100, color_system=None))
    assert buf.getvalue() == text
    print(report)
    assert capsys.readouterr().out == text + "\n"


def test_library_mode_logs_through_stdlib_logging_and_never_to_stdout(tmp_path: Path, capsys, caplog) -> None:
    caplog.set_level(logging.INFO, logger="tracejudge")
    tracejudge.evaluate(CASES, [ToolCalls()], run_dir=tmp_path / "run")
    again = tracejudge.evaluate(CASES, [ToolCalls()], run_dir=tmp_path / "run")  # resumes: logs "resuming" at INFO
    assert again.new_results == 0
    out = capsys.readouterr().out
    assert out == ""  # nothing printed by the library itself
    resuming = [r for r in caplog.records if getattr(r, "tracejudge_event", None) == "resuming"]
    assert resuming and resuming[0].name == "tracejudge.runner" and resuming[0].levelno == logging.INFO
    assert resuming[0].tracejudge["finished"] == 6 and resuming[0].getMessage().startswith("resuming run_dir=")


def test_a_python_targets_error_keeps_its_traceback_redacted(tmp_path: Path) -> None:
    (tmp_path / "failing_agent.py").write_text(textwrap.dedent("""\
        def lookup(key):
            raise RuntimeError(f"upstream refused Bearer {key}")

        def respond(request):
            return lookup("sk-proj-abcdefghijklmnopqrstuvwxyz0123456789")
    """))
    cases = [{"id": "a", "input": "hi", "expected_tool_calls": [{"name": "x"}]}]
    config = live_config(tmp_path, cases, {"kind": "python", "callable": "failing_agent:respond", "pythonpath": str(tmp_path)})
    outcome = run_live(config)
    assert outcome.summary["status"] == {"target_error": 1}
    (result,) = read_jsonl(tmp_path / "run" / "results.jsonl")
    tb = result["error"]["details"]["traceback"]
    assert tb.startswith("Traceback (most recent call last):")
    assert "anyio" not in tb and "python_target.py" not in tb  # the agent's frames, not the machinery that called it
    assert 'failing_agent.py", line 5, in respond' in tb and 'failing_agent.py", line 2, in lookup' in tb
    assert "RuntimeError: upstream refused" in tb and "[REDACTED]" in tb
    assert "abcdefghijklmnopqrstuvwxyz" not in (tmp_path / "run" / "results.jsonl").read_text()
