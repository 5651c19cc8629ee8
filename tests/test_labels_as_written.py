"""Judge labels are named as the labels file wrote them, in every message: `yes`, `PASS`, `4.0`, `0,5`.

Before, a label was shown as it was read: `yes`/`pass` printed as `true`, `no`/`fail` as `false`, `4.0` as `4` (and a
decimal comma `0,0` as `0`), in the repeat/conflict notes, the label problems (true/false among grades, out of range)
and calibrate's disagreeing cases, so a user searching the file for what a message named did not find it.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from rich.console import Console
from tracejudge.stages.judge.agreement import agreement_block
from tracejudge.stages.judge.labels import field_labels, load_label_file


def test_repeats_and_conflicts_name_labels_as_written(tmp_path: Path) -> None:
    csv = tmp_path / "labels.csv"
    csv.write_text("case_id,metric,label\na,M,yes\na,M,no\nb,M,pass\nb,M,1.0\nc,M,4.0\nc,M, 4.0 \n")
    assert load_label_file(csv).problems == [
        f"{csv}:3: label: no conflicts with line 2's yes for case 'a' metric 'M': both left out",
        f"{csv}:5: label: repeats line 4 for case 'b' metric 'M' (same label 1.0): counted once",
        f"{csv}:7: label: repeats line 6 for case 'c' metric 'M' (same label 4.0): counted once",
    ]
    jsonl = tmp_path / "labels.jsonl"
    jsonl.write_text('{"case_id": "a", "metric": "M", "label": "PASS"}\n{"case_id": "a", "metric": "M", "label": "fail"}\n'
                     '{"case_id": "b", "metric": "M", "label": 4.0}\n{"case_id": "b", "metric": "M", "label": 3}\n'
                     '{"case_id": "c", "metric": "M", "label": "Yes"}\n{"case_id": "c", "metric": "M", "label": false, "trial": 1}\n')
    assert load_label_file(jsonl).problems == [
        f"{jsonl}:2: label: fail conflicts with line 1's PASS for case 'a' metric 'M': both left out",
        f"{jsonl}:4: label: 3 conflicts with line 3's 4.0 for case 'b' metric 'M': both left out",
        f"{jsonl}:6: label: false for case 'c' metric 'M' trial 1 differs from line 5's Yes for the whole case: trial 1 takes this one",
    ]


def test_labels_read_from_results_keep_their_text() -> None:
    got = field_labels([{"case_id": "x", "trial": 0, "metadata": {"r": "Yes"}}, {"case_id": "y", "trial": 0, "metadata": {"r": 1.0}}],
                       {"M": "metadata.r"})
    assert [(lab.value, lab.text) for lab in got.labels] == [(True, "Yes"), (1.0, "1.0")]


def _result(cid: str, grade: int) -> dict[str, Any]:
    return {"case_id": cid, "trial": 0, "status": "ok", "tags": [],
            "scores": {"R": {"value": grade / 4, "passed": grade >= 2, "reason": "r", "details": {"answers": {"q": {"score": grade}}}},
                       "Y": {"value": 1.0 if grade >= 2 else 0.0, "passed": grade >= 2, "reason": "r"}}}


def test_label_problems_and_calibrates_disagreements_show_labels_as_written(tmp_path: Path) -> None:
    from tracejudge.entrypoints.calibrate import print_agreement

    # `;`-separated, as Excel writes where the decimal mark is a comma: `1,5` and `0,0` are decimals
    labels = tmp_path / "labels.csv"
    labels.write_text("case_id;metric;label\na;R;3.0\nb;R;1\nc;R;yes\nd;R;4.0\ne;R;2\nf;R;0\n"
                      "a;Y;pass\nb;Y;1,5\nc;Y;fail\nd;Y;No\ne;Y;0,0\n")
    grades = {"a": 3, "b": 0, "c": 1, "d": 4, "e": 2, "f": 1}
    block = agreement_block([_result(c, g) for c, g in grades.items()], load_label_file(labels), resamples=20,
                            scales={"R": (0.0, 4.0)}, with_cases=True)
    assert block["problems"] == [
        f"{labels}:4: label: yes (case 'c') is pass/fail among the grades of metric 'R' (5 of its 6 labels are numbers, read as "
        "grades): a metric's labels are read one way, so it is left out; write the grade it stands for on its scale 0..4 instead "
        "(or every label of the metric as true/false)",
        f"{labels}:9: label: 1,5 is out of range for metric 'Y', which takes a yes/no label (true/false, or a number from 0 to 1)",
    ], block["problems"]
    wrong = block["metrics"]["Y"]["disagreements"]
    # the value read stays `label` (JSON); the text is beside it
    assert [(d["case_id"], d["label"], d.get("label_written")) for d in wrong] == [("d", False, "No"), ("e", 0.0, "0,0")], wrong
    cases = {(c["case_id"], c["metric"]): c for c in block["cases"]}  # (calibrate --json lists every labelled verdict so too)
    assert (cases[("d", "Y")]["label"], cases[("d", "Y")]["label_written"]) == (False, "No")
    assert (cases[("d", "R")]["label"], cases[("d", "R")]["label_written"]) == (4.0, "4.0")
    out = io.StringIO()
    print_agreement(block, Console(file=out, width=200))
    shown = [line.strip() for line in out.getvalue().splitlines() if line.strip().startswith("disagrees:")]
    assert "disagrees: case d trial 0: label No, verdict pass (value 1.000): r" in shown, shown
    assert "disagrees: case e trial 0: label 0,0, verdict pass (value 1.000): r" in shown, shown
    assert "disagrees: case b trial 0: label 1, verdict 0 (value 0.000): r" in shown, shown
