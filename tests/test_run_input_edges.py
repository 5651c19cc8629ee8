"""Small faults a new user met: a control character in an id, a whitespace id, a `group_by` key no case has."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml
import _forkserver

TRACEJUDGE = Path(sys.executable).with_name("tracejudge")


def _run(tmp_path: Path, lines: list[dict], **sections: object) -> tuple[Path, subprocess.CompletedProcess[str]]:
    data = tmp_path / "cases.jsonl"
    data.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    cfg = {"dataset": {"path": str(data), "format": "native"}, "metrics": [{"type": "ExactMatch", "expected": "y"}],
           "run": {"dir": str(tmp_path / "run")}, "cache": {"dir": str(tmp_path / "cache")},
           "assertions": {"max_invalid_share": 1.0}, **sections}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg), encoding="utf-8")
    got = _forkserver.run([str(TRACEJUDGE), "run", str(tmp_path / "c.yaml"), "--no-progress"], capture_output=True, text=True, timeout=120)
    assert got.returncode == 0, got.stderr
    return tmp_path / "run", got


def test_control_characters_in_an_id_are_escaped_in_report_md(tmp_path: Path) -> None:
    run_dir, _ = _run(tmp_path, [{"id": "esc\x1b[31mred\x1b[0m\x07\x9b", "trace": {"output": "x"}},
                                 {"id": "tab\tand\nnewline", "trace": {"output": "x"}}])
    md = (run_dir / "report.md").read_text(encoding="utf-8")
    assert not any(ch in md for ch in "\x1b\x07\x9b")
    assert "| esc\\x1b[31mred\\x1b[0m\\x07\\x9b |" in md
    assert "| tab and newline |" in md  # whitespace in a table cell stays a space, as before


def test_the_text_backslash_x1b_and_a_real_esc_look_different_in_report_md(tmp_path: Path) -> None:
    # Both were written `\x1b`: a reader could not tell which one the id held.
    run_dir, _ = _run(tmp_path, [{"id": "real\x1b", "trace": {"output": "x"}}, {"id": "text\\x1b", "trace": {"output": "x"}},
                                 {"id": "both\\\x1b", "trace": {"output": "x"}}, {"id": "path\\to\\file", "trace": {"output": "x"}}])
    md = (run_dir / "report.md").read_text(encoding="utf-8")
    assert "| real\\x1b |" in md and "| text\\\\x1b |" in md  # a real ESC, then the text: its backslash doubled
    assert "| both\\\\\\x1b |" in md  # the text's backslash doubled, then the ESC
    assert "| path\\to\\file |" in md  # any other backslash as it is


def test_a_whitespace_only_id_is_filed_under_its_file_and_line(tmp_path: Path) -> None:
    run_dir, _ = _run(tmp_path, [{"id": "fine", "trace": {"output": "y"}}, {"id": " \t ", "trace": {"output": "y"}}])
    results = [json.loads(line) for line in (run_dir / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    bad = next(r for r in results if r["status"] == "invalid_input")
    assert bad["case_id"] == f"{tmp_path / 'cases.jsonl'}:2"
    assert "empty or only whitespace" in bad["error"]["message"]


def test_a_group_by_key_no_case_has_is_warned_once_with_the_nearest_key(tmp_path: Path) -> None:
    lines = [{"id": f"c{i}", "trace": {"output": "y"}, "metadata": {"reward": i % 2, "domain": "air"}} for i in range(4)]
    _, got = _run(tmp_path, lines, aggregate={"group_by": ["rewrd", "domain"]})
    warnings = [line for line in got.stderr.splitlines() if "aggregate.group_by" in line]
    assert len(warnings) == 1, got.stderr
    assert "'rewrd'" in warnings[0] and "did you mean 'reward'?" in warnings[0] and "'domain'" not in warnings[0]
    (tmp_path / "again").mkdir()
    _, got = _run(tmp_path / "again", lines, aggregate={"group_by": ["reward"]})
    assert "aggregate.group_by" not in got.stderr
