"""Tables at any width: `compare`, `estimate` and the summary in an 80-column terminal (a pty), and piped (100 columns).

Metric names wrap between words, never mid-word or cut to `Tool…`; figures are never cut.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from _pty import run_in_pty
from _runs import result_line
import _forkserver

REPO = Path(__file__).resolve().parent.parent
NAMES = ["ToolCorrectness", "ToolCallNecessity", "DeepEvalToolCorrectness", "writes_exact"]


def in_pty(args: list[str], cwd: Path, columns: int = 80) -> str:
    """`tracejudge ARGS` on a `columns`-wide pty: the text it drew."""
    return run_in_pty([sys.executable, "-m", "tracejudge", *args], cwd, columns=columns)[0]


def _runs(tmp: Path) -> tuple[Path, Path]:
    a, b = tmp / "a", tmp / "b"
    for d, shift in ((a, 0.0), (b, -0.25)):
        d.mkdir()
        with open(d / "results.jsonl", "w") as fh:
            for i in range(40):
                v = 1.0 if i % 3 else 0.0
                scores = {n: (max(0.0, v + (shift if i % 2 else 0.0)), f"reason {i}") for n in NAMES}
                fh.write(result_line(f"case-{i:02d}", 0, scores) + "\n")
    return a, b


def _check(text: str, width: int) -> None:
    assert "…" not in text, text
    lines = text.splitlines()
    assert max(len(line.rstrip()) for line in lines) <= width, "\n".join(x for x in lines if len(x.rstrip()) > width)
    flat = re.sub(r"\s+", "", text)
    for name in NAMES:  # each name whole (its parts may sit on successive lines of its cell, broken between words)
        assert name in flat, name


def test_compare_at_80_columns_keeps_names_and_figures_whole(tmp_path: Path) -> None:
    a, b = _runs(tmp_path)
    text = in_pty(["compare", str(a), str(b)], tmp_path)
    _check(text, 80)
    table = text.split("B − A per metric")[1].split("unchanged =")[0]
    starts = [line.split()[0] for line in table.splitlines() if line.strip() and line[:1].isalpha()]
    # Each name starts its row whole, or broken between words onto the next line of its cell: never `Tool…`.
    joined = [a + b for a, b in zip(starts, starts[1:])]
    for name in NAMES:
        assert name in starts or name in joined, (name, starts)
    assert re.search(r"-0\.081 +0\.0005 +13 +0", table) and "[-0.119, -0.044]" in table  # figures whole


def test_compare_piped_prints_100_columns(tmp_path: Path) -> None:
    a, b = _runs(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    proc = _forkserver.run([sys.executable, "-m", "tracejudge", "compare", str(a), str(b)], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    _check(proc.stdout, 100)
    assert any(len(line.rstrip()) > 80 for line in proc.stdout.splitlines())  # it uses the 100 columns


def test_estimate_at_80_columns_wraps_names_between_words(tmp_path: Path) -> None:
    text = in_pty(["estimate", str(REPO / "configs" / "demo.yaml")], REPO)
    assert "judge estimate" in text, text
    assert "…" not in text and max(len(line.rstrip()) for line in text.splitlines()) <= 80
    rows = [line.split()[0] for line in text.splitlines() if line.strip() and line.split()[0][:1].isalpha()]
    for name in ("TaskCompletion", "ToolCallNecessity"):
        assert name in rows or any(r + s == name for r, s in zip(rows, rows[1:])), rows  # whole, or broken between words
    assert not [r for r in rows if r in ("TaskComp", "ToolCallNec")]
