"""junit.xml follows the common JUnit schema: `<testsuites>` carries name, tests, failures, errors (Jenkins xunit's
junit-10.xsd allows those and `time`, and rejects `skipped`), each `<testsuite>` its own counts, `skipped` among them."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from _runs import seven_and_three, write_config
from tracejudge.entrypoints.cli import main

# What junit-10.xsd (Jenkins xunit) allows on <testsuites>; the Jenkins JUnit plugin's junit-4.xsd adds `disabled`.
TESTSUITES_ATTRIBUTES = {"name", "time", "tests", "failures", "errors"}


def test_junit_testsuites_attributes_follow_the_schema_and_suites_keep_their_counts(tmp_path: Path) -> None:
    data = seven_and_three(tmp_path / "cases.jsonl")  # three invalid records: `<skipped>` test cases in every metric's suite
    run_dir = tmp_path / "run"
    assert main(["run", str(write_config(tmp_path / "c.yaml", data, run_dir)), "--no-progress"]) == 0
    root = ET.parse(run_dir / "junit.xml").getroot()
    assert root.tag == "testsuites"
    assert set(root.attrib) <= TESTSUITES_ATTRIBUTES, root.attrib
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == ["tracejudge.gate", "tc", "traj"]
    skipped_total = 0
    for suite in suites:
        # Each suite's counts are its test cases' (what junitparser and the CI systems read per suite).
        cases = suite.findall("testcase")
        assert {"name", "tests", "failures", "errors", "skipped"} <= set(suite.attrib)
        assert int(suite.get("tests")) == len(cases)
        for word, child in (("failures", "failure"), ("errors", "error"), ("skipped", "skipped")):
            assert int(suite.get(word)) == sum(c.find(child) is not None for c in cases), (suite.get("name"), word)
        skipped_total += int(suite.get("skipped"))
    assert skipped_total == 6  # 3 invalid records × 2 metrics, counted on the suites
    for word in ("tests", "failures", "errors"):
        assert int(root.get(word)) == sum(int(s.get(word)) for s in suites)
