"""A credential written in a metric's config never reaches a reason: the built-in reasons quote a configured value as they
quote a case's text (`redact_quoted`), in results, reports and JUnit alike; a value with nothing to mask reads as before.

The canaries are assembled at run time (no credential-shaped literal in the source) and are fake.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml
from tracejudge.core.records import Case
from tracejudge.stages.score import score_case
from tracejudge.stages.score.arguments import ArgumentCorrectness
from tracejudge.stages.score.inspect_scorers import InspectPattern
from tracejudge.stages.score.output import Contains, Regex
from tracejudge.stages.score.tool_correctness import ToolCorrectness
from tracejudge.stages.score.trajectory import TrajectoryMatch
import _forkserver

TRACEJUDGE = Path(sys.executable).with_name("tracejudge")

KEY = "sk-" + "proj-" + "CCCCxxxxYYYYwwwwVVVVuuuu9876"
OTHER = "sk-" + "proj-" + "RRRRxxxxYYYYwwwwVVVVuuuu9876"
TAILS = ("CCCCxxxx", "RRRRxxxx", "YYYYwwww")


def _case(output: str, calls: tuple[str, ...] = ("search",)) -> Case:
    return Case.model_validate({"id": "c", "expected_output": "x",
                                "trace": {"steps": [{"tool_calls": [{"name": n, "arguments": {}} for n in calls]}], "output": output}})


def test_configured_values_are_masked_in_every_reason_that_quotes_them() -> None:
    metrics = [Contains(value=KEY), Contains(name="other", value=OTHER), Regex(pattern=KEY), Regex(name="full", pattern=OTHER, full_match=True),
               InspectPattern(pattern=KEY), ArgumentCorrectness(tool_name=KEY), ToolCorrectness(expected_tools=[KEY]),
               TrajectoryMatch(expected_trajectory=["search", KEY])]
    # The output holds the key: Contains' "contains" reason quotes it too, not only the "does not contain" one.
    for case in (_case(f"Logged in with {KEY}"), _case("nothing here")):
        scores = score_case(case, metrics)
        assert len(scores) == len(metrics)
        for key, score in scores.items():
            assert not any(t in score.reason for t in TAILS), (key, score.reason)
            assert "[REDACTED]" in score.reason, (key, score.reason)
    hit = score_case(_case(f"Logged in with {KEY}"), metrics)
    assert hit["Contains"].passed and hit["Contains"].reason == "output contains '[REDACTED]'"
    assert hit["Regex"].reason == "output contains a match for /[REDACTED]/"
    assert score_case(_case("nothing"), metrics)["full"].reason == "output does not match /[REDACTED]/"


def test_values_with_nothing_to_mask_give_the_reasons_they_gave() -> None:
    long = "reservation " * 10
    got = score_case(_case("Your Reservation is made"), [Contains(value="reservation"), Contains(name="long", value=long),
                                                          Regex(pattern=r"(?i)\bres\w+"), Regex(name="nope", pattern="^x$", full_match=True),
                                                          InspectPattern(pattern="(made)"), ArgumentCorrectness(tool_name="book")])
    assert got["Contains"].reason == "output contains 'reservation'"
    assert got["long"].reason == f"output 'Your Reservation is made' does not contain {long[:80]!r}"
    assert got["Regex"].reason == r"output contains a match for /(?i)\bres\w+/"
    assert got["nope"].reason == "output does not match /^x$/"
    assert got["pattern"].reason.startswith("I: /(made)/ captured 'made', none of the targets 'x'")
    assert got["ArgumentCorrectness"].reason == "no call to tool 'book' was recorded"


def test_a_run_writes_no_configured_credential_in_results_reports_or_junit(tmp_path: Path) -> None:
    data = tmp_path / "cases.jsonl"
    data.write_text(json.dumps({"id": "e1", "input": "x", "trace": {"steps": [], "output": f"Logged in with {KEY}"}}) + "\n"
                    + json.dumps({"id": "e2", "input": "x", "trace": {"steps": [], "output": "no key"}}) + "\n", encoding="utf-8")
    cfg = tmp_path / "run.yaml"
    cfg.write_text(yaml.safe_dump({"dataset": {"path": str(data), "format": "native"},
                                   "metrics": [{"type": "Regex", "pattern": OTHER}, {"type": "Contains", "value": KEY}],
                                   "run": {"dir": str(tmp_path / "run")}}), encoding="utf-8")
    got = _forkserver.run([str(TRACEJUDGE), "run", str(cfg), "--no-progress"], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert got.returncode in (0, 1), got.stderr
    written = {p.name: p.read_text(encoding="utf-8") for p in (tmp_path / "run").iterdir() if p.suffix in (".jsonl", ".md", ".xml", ".html", ".json")}
    assert {"results.jsonl", "report.md", "junit.xml", "report.html"} <= set(written)
    leaks = {name: [t for t in TAILS if t in text] for name, text in written.items()}
    assert not any(leaks.values()), leaks
    assert not any(t in got.stdout + got.stderr for t in TAILS)
    reasons = [s["reason"] for line in written["results.jsonl"].splitlines() for s in json.loads(line)["scores"].values()]
    assert sorted(reasons) == sorted(["output does not match /[REDACTED]/"] * 2 + ["output contains '[REDACTED]'", "output 'no key' does not contain '[REDACTED]'"])
