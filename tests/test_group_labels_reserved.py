"""A tag or metadata value that reads as a reserved group label keeps a group of its own.

A breakdown names two groups itself: `(missing)` (results without the `group_by` field) and `(other)`
(values past `aggregate.max_groups`). A value that was literally one of those words merged with that
group: a case whose `domain` is the text "(missing)" was counted with the cases that have no domain.
Such a value is labelled in one more pair of parentheses (`((missing))`), a label that depends on the
value alone; every other value keeps its label (real processes and files, resumed and rebuilt), and the
viewer links such a tag's group to the cases carrying the tag.
"""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path

from _runs import view_server
import _forkserver

TRACEJUDGE = Path(sys.executable).with_name("tracejudge")
CONFIG = ("dataset: {path: d.jsonl}\nmetrics:\n  - {type: MaxToolCalls, max_calls: 0}\n"
          "aggregate: {by_tags: true, group_by: [domain], max_groups: 3}\nrun: {dir: out}\n")
CASES = [  # (tags, metadata, tool calls): only c0 scores 0
    (["(other)"], {"domain": "(missing)"}, 1),
    (["t1"], {}, 0),
    (["t2"], {"domain": "((other))"}, 0),
    (["t3"], {"domain": "x"}, 0),
    (["t4"], {"domain": "(other"}, 0),
]


def _run(root: Path) -> subprocess.CompletedProcess[str]:
    return _forkserver.run([str(TRACEJUDGE), "run", "run.yaml", "--no-progress"], cwd=root, capture_output=True, text=True, timeout=120)


def test_values_that_read_as_reserved_labels_get_groups_of_their_own(tmp_path: Path) -> None:
    with open(tmp_path / "d.jsonl", "w") as fh:
        for i, (tags, metadata, calls) in enumerate(CASES):
            steps = [{"tool_calls": [{"name": "get"}]}] * calls
            fh.write(json.dumps({"id": f"c{i}", "tags": tags, "metadata": metadata, "trace": {"steps": steps}}) + "\n")
    (tmp_path / "run.yaml").write_text(CONFIG)
    first = _run(tmp_path)
    assert first.returncode in (0, 1), first.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    tags = summary["breakdowns"]["tag"]
    # The tag "(other)" is a group of its own; t3 and t4 come past max_groups and fold into the real "(other)".
    assert {name: g["results"] for name, g in tags.items()} == {"((other))": 1, "t1": 1, "t2": 1, "(other)": 2}
    assert tags["((other))"]["metrics"]["MaxToolCalls"]["mean"] == 0.0 and tags["(other)"]["metrics"]["MaxToolCalls"]["mean"] == 1.0
    domain = summary["breakdowns"]["metadata.domain"]
    assert {name: g["results"] for name, g in domain.items()} == {"((missing))": 1, "(missing)": 1, "(((other)))": 1, "(other)": 2}
    assert domain["((missing))"]["metrics"]["MaxToolCalls"]["mean"] == 0.0 and domain["(missing)"]["metrics"]["MaxToolCalls"]["mean"] == 1.0

    again = _run(tmp_path)  # resumed: nothing to do, the same figures
    assert again.returncode == first.returncode, again.stderr
    assert json.loads((tmp_path / "out" / "summary.json").read_text()) == summary
    (tmp_path / "out" / "checkpoint.json").unlink()  # refolded from results.jsonl
    rebuilt = _run(tmp_path)
    assert rebuilt.returncode == first.returncode, rebuilt.stderr
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["breakdowns"] == summary["breakdowns"]

    # The viewer's tag groups link to their cases: "((other))" to the cases tagged "(other)"; the overflow group to none.
    with view_server(str(tmp_path / "out")) as url, urllib.request.urlopen(url + "/run/out", timeout=60) as reply:
        page = reply.read().decode("utf-8")
    tables = page.split('data-breakdown="tag"', 1)[1].split("</table>", 1)[0]
    assert '<a href="/run/out/cases?tag=%28other%29">((other))</a>' in tables
    assert "<td>(other)</td>" in tables and "<td><a" in tables.split("<td>(other)</td>", 1)[0]


def test_a_label_depends_on_the_value_alone() -> None:
    from tracejudge.stages.aggregate.group_labels import group_label, group_value

    values = ("(missing)", "(other)", "((other))", "(other", "other", "(x)", "", "()")
    assert [group_label(v) for v in values] == ["((missing))", "((other))", "(((other)))", "(other", "other", "(x)", "", "()"]
    assert [group_value(group_label(v)) for v in values] == list(values)
    assert group_value("(other)") is None and group_value("(missing)") is None
