"""The public surface type-checks under `mypy --strict`, and user code gets real types from it (not `Any`)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

USAGE = textwrap.dedent(
    """\
    import tracejudge
    from tracejudge import Case, Score, Trace


    @tracejudge.metric
    def short(case: Case, trace: Trace, *, limit: int = 2) -> bool:
        return len(trace.tool_calls()) <= limit


    @tracejudge.metric(threshold=0.5)
    async def half(case: Case, trace: Trace) -> Score:
        return Score(value=0.5)


    report = tracejudge.evaluate([{"id": "a"}], [short, half(), tracejudge.ToolCalls(), {"type": "TrajectoryMatch"}])
    failures: list[tracejudge.Failure] = report.failed()
    value: float | None = report.results[0].scores["short"].value
    tracejudge.assert_trajectory(Case(id="c"), ["search"], order="in_order")
    """
)


def _mypy(*files: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mypy", "--strict", *files], cwd=REPO, capture_output=True, text=True)


def test_mypy_strict_passes_on_the_public_module_and_a_user_of_it(tmp_path):
    pytest.importorskip("mypy")
    usage = tmp_path / "usage.py"
    usage.write_text(USAGE)
    wrong = tmp_path / "wrong.py"
    wrong.write_text("import tracejudge\n\nreport: int = tracejudge.evaluate([], [], trials='3')\n")
    proc = _mypy("tracejudge.py", "pipeline/pytest_plugin.py", str(usage))
    assert proc.returncode == 0, proc.stdout
    bad = _mypy(str(wrong))
    assert bad.returncode == 1
    assert 'Incompatible types in assignment (expression has type "RunReport", variable has type "int")' in bad.stdout
    assert 'Argument "trials" to "evaluate" has incompatible type "str"; expected "int"' in bad.stdout
