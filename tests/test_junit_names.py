"""Every (case, trial) has a junit.xml test case name of its own, whatever its id holds.

XML 1.0 cannot carry most control characters, so ids differing only in them once shared a name
(`a\x01` and `a\x02` were both `a`), and a CI system showed one test where there were two. Such an
id is now written escaped (`a\x01`, backslashes doubled) and marked `[trial N, escaped]`, a tail an
id's own name never ends with (an id ending so is escaped too); any other id is its name as before.
Checked as the run writes junit.xml, fast path and worker processes included, and as `tracejudge
report` rebuilds it.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import anyio
import pytest
import yaml

IDS = ["a", "a\x01", "a\x02", "a\\x01", "a\\x01 [trial 0, escaped]", "b [trial 0]", "b", "c\u0085\ufffe", "plain id é"]


def _names(run_dir: Path) -> list[tuple[str, str]]:
    root = ET.fromstring((run_dir / "junit.xml").read_bytes())  # raises on a character XML cannot carry
    return [(tc.get("classname"), tc.get("name")) for tc in root.iter("testcase") if tc.get("classname") != "tracejudge.gate"]


@pytest.mark.parametrize(("processes", "trials"), [(1, 1), (2, 1), (1, 2)])
def test_every_case_and_trial_has_a_name_of_its_own(processes, trials, tmp_path):
    from tracejudge.core.config import load_config
    from tracejudge.engine import runner
    from tracejudge.stages.reports import rebuild

    from _runs import write_dataset

    cases = write_dataset(tmp_path / "cases.jsonl", [{"id": i, "trace": {"steps": [], "output": "done"}} for i in IDS])
    run_dir = tmp_path / "run"
    cfg = tmp_path / "run.yaml"
    cfg.write_text(yaml.safe_dump({"dataset": {"path": str(cases), "format": "native"},
                                   "metrics": [{"type": "Contains", "value": "done"}, {"type": "ExactMatch", "expected": "done"}],
                                   "run": {"dir": str(run_dir), "processes": processes, "trials": trials}}))
    out = anyio.run(runner.run, load_config(cfg))
    assert out.new_results == len(IDS) * trials
    names = _names(run_dir)
    assert len(names) == 2 * len(IDS) * trials
    assert len(set(names)) == len(names)  # distinct (suite, name) for every (case, trial, metric)
    got = {n for _, n in names}
    suffix = (lambda t: f" [trial {t}]") if trials > 1 else (lambda t: "")
    for t in range(trials):
        for plain in ("a", "a\\x01", "b", "plain id é"):  # ordinary ids: named as always
            assert plain + suffix(t) in got
        assert f"a\\x01 [trial {t}, escaped]" in got and f"a\\x02 [trial {t}, escaped]" in got
        assert f"a\\\\x01 [trial 0, escaped] [trial {t}, escaped]" in got
        assert f"b [trial 0] [trial {t}, escaped]" in got
        assert f"c\\x85\\ufffe [trial {t}, escaped]" in got
    as_run = (run_dir / "junit.xml").read_bytes()
    (run_dir / "junit.xml").unlink()
    rebuild(run_dir)
    assert (run_dir / "junit.xml").read_bytes() == as_run


def test_metrics_and_checks_differing_only_in_control_characters_have_names_of_their_own(tmp_path):
    # Metric keys (suite name, classname) and gate check names dropped their control characters: `m\x01` and `m\x02`
    # shared one suite name, `m\x01 min_mean` and `m\x02 min_mean` one check name.
    from tracejudge.core.config import load_config
    from tracejudge.engine import runner
    from tracejudge.stages.reports import rebuild

    from _runs import write_dataset

    keys = ["m\x01", "m\x02", "m\\x01", "m\\x01 [escaped]", "plain é"]
    cases = write_dataset(tmp_path / "cases.jsonl", [{"id": "x", "trace": {"steps": [], "output": "done"}}])
    run_dir = tmp_path / "run"
    cfg = tmp_path / "run.yaml"
    cfg.write_text(yaml.safe_dump({"dataset": {"path": str(cases), "format": "native"},
                                   "metrics": [{"type": "Contains", "value": "done", "name": k} for k in keys],
                                   "assertions": {"metrics": {k: {"min_mean": 0.5} for k in keys}},
                                   "run": {"dir": str(run_dir)}}))
    anyio.run(runner.run, load_config(cfg))
    root = ET.fromstring((run_dir / "junit.xml").read_bytes())
    suites = [s.get("name") for s in root.iter("testsuite")][1:]
    assert suites == ["m\\x01 [escaped]", "m\\x02 [escaped]", "m\\x01", "m\\\\x01 [escaped] [escaped]", "plain é"]
    assert [tc.get("classname") for tc in root.iter("testcase") if tc.get("classname") != "tracejudge.gate"] == suites
    checks = [tc.get("name") for tc in root.iter("testcase") if tc.get("classname") == "tracejudge.gate"]
    assert checks == ["m\\x01 min_mean [escaped]", "m\\x02 min_mean [escaped]", "m\\x01 min_mean", "m\\x01 [escaped] min_mean",
                      "plain é min_mean"]
    as_run = (run_dir / "junit.xml").read_bytes()
    (run_dir / "junit.xml").unlink()
    rebuild(run_dir)
    assert (run_dir / "junit.xml").read_bytes() == as_run
