"""Labels files as people make them: Excel's CSVs (a byte-order mark, `;` and decimal commas, a `sep=;` line,
Windows-1252 bytes), quoted cells, blank rows, spaces around case ids, tab-separated text, a JSON array.

Each had given a wrong number or an unclear message: a `;` file was refused whole ("the CSV header lacks the
column(s) case_id, metric, label"); `c1 ` matched no case; `"c1", "m"` kept the quotes in the metric; a pretty-printed
JSON array counted its last element only; an unquoted `0,5` in a `,` file read as the label 0 without a word; a
cp1252 accent in a note column cost its row.

The same labels written each way must give calibrate's figures of the clean JSON Lines file, through real runs of
`tracejudge calibrate` against the judge simulator (over HTTP on 127.0.0.1).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_judge_labels_shown import write_cases
from tracejudge.entrypoints.cli import main
from tracejudge.stages.judge.agreement import agreement_block
from tracejudge.stages.judge.labels import load_label_file

N = 12
FIGURES = ("total_labels", "matched", "not_judged", "unmatched", "problem_count")
METRIC = ("n", "accuracy", "kappa", "kappa_ci", "confusion", "disagreeing")


# The labels every file below holds: case, label (a number where the file writes one).
TRUTH = [(f"c{i}", [1.0, 0.0, True, False, False, 0.0, True][i % 7]) for i in range(N)]


def words(value: Any, i: int, decimal: str = ".") -> str:
    if isinstance(value, bool):
        return [("Yes", "No"), ("TRUE", "FALSE"), ("pass", "fail")][i % 3][0 if value else 1]
    return f"{value:.1f}".replace(".", decimal)


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """A config judged once (the simulator's verdicts cached), and calibrate's figures for the clean JSON Lines labels."""
    tmp = tmp_path_factory.mktemp("judged")
    cfg = {"dataset": {"path": str(write_cases(tmp / "cases.jsonl", N))}, "metrics": [{"type": "TaskCompletion"}],
           "judge": {"provider": "simulator", "model": "gpt-4o-mini"}, "cache": {"dir": str(tmp / "cache")}, "run": {"dir": str(tmp / "run")}}
    (tmp / "c.yaml").write_text(yaml.safe_dump(cfg))
    clean = tmp / "clean.jsonl"
    clean.write_text("".join(json.dumps({"case_id": c, "metric": "TaskCompletion", "label": v}) + "\n" for c, v in TRUTH))
    return tmp, calibrate(tmp, clean)


def calibrate(tmp: Path, labels: Path) -> dict[str, Any]:
    out = tmp / f"{labels.name}.json"
    assert main(["calibrate", str(tmp / "c.yaml"), "--labels", str(labels), "--run-dir", str(tmp / f"run-{labels.name}"),
                 "--json", str(out)]) == 0
    return json.loads(out.read_text())


def figures(block: dict[str, Any]) -> dict[str, Any]:
    return {**{k: block[k] for k in FIGURES}, **{k: block["metrics"]["TaskCompletion"][k] for k in METRIC}}


def semicolon_excel() -> bytes:
    # Excel where the decimal mark is a comma: `;`, decimals as `0,5`, CRLF, a byte-order mark, a `sep=;` line,
    # rows of empty cells, a header in its own words, and spaces a hand left around the case ids.
    rows = ["sep=;", "Case ID;Metric;Label;Note", ";;;"]
    rows += [f" {c} ;TaskCompletion;{words(v, i, ',')};" for i, (c, v) in enumerate(TRUTH)]
    return b"\xef\xbb\xbf" + "\r\n".join([*rows, ";;;", ""]).encode()


def quoted_csv() -> bytes:
    rows = ['"case_id", "metric", "label"', ""]
    rows += [f'"{c}", "TaskCompletion", "{words(v, i)}"' for i, (c, v) in enumerate(TRUTH)]
    return "\n".join([*rows, "   ", ""]).encode()


def windows_1252_csv() -> bytes:
    # Excel's plain "CSV" on Windows: cp1252. A note with an accent changes no label: the row stays.
    rows = ["case_id,note,metric,label"] + [f"{c},caf\xe9 {i},TaskCompletion,{words(v, i)}" for i, (c, v) in enumerate(TRUTH)]
    return "\r\n".join([*rows, ""]).encode("cp1252")


def tab_text() -> bytes:
    # Excel's "Text (Tab delimited)" saves a .txt file; where the decimal mark is a comma, it writes `1,0`.
    return "\n".join(["case_id\tmetric\tlabel", *(f"{c}\tTaskCompletion\t{words(v, i, ',')}" for i, (c, v) in enumerate(TRUTH)), ""]).encode()


def json_array() -> bytes:
    return json.dumps([{"case_id": c, "metric": "TaskCompletion", "label": v} for c, v in TRUTH], indent=2).encode()


@pytest.mark.parametrize(("name", "make"), [("excel-eu.csv", semicolon_excel), ("quoted.csv", quoted_csv),
                                            ("windows.csv", windows_1252_csv), ("tabs.txt", tab_text), ("array.json", json_array)])
def test_a_spreadsheets_labels_give_the_figures_of_the_clean_file(judged: tuple[Path, dict[str, Any]], name: str, make: Any) -> None:
    tmp, clean = judged
    assert clean["matched"] == N and clean["problems"] == []
    path = tmp / name
    path.write_bytes(make())
    got = calibrate(tmp, path)
    assert got["problems"] == [] and figures(got) == figures(clean)


def test_a_value_that_would_read_as_another_number_is_refused_by_name(tmp_path: Path) -> None:
    csv = tmp_path / "labels.csv"
    csv.write_text('case_id,metric,label\nc0,m,0,5\nc1,m,"0,5"\nc2,m,1\nc3,m,1,0,\n')
    got = load_label_file(csv)
    assert [(lab.case_id, lab.value) for lab in got.labels] == [("c2", 1.0)]
    assert got.problems == [
        f"{csv}:2: 4 cells, but the header has 3 columns: a comma in a value must be quoted (a decimal comma? write 0.5, not 0,5)",
        f"{csv}:3: label: '0,5' has a decimal comma: write 0.5",
        f"{csv}:5: 5 cells, but the header has 3 columns: a comma in a value must be quoted (a decimal comma? write 0.5, not 0,5)",
    ]
    jl = tmp_path / "labels.jsonl"
    jl.write_text('{"case_id": "c0", "metric": "m", "label": "1,0"}\n{"case_id": "c1", "metric": "m", "lable": 1}\n'
                  '{"case_id": "c2", "metric": "m" "label": 1}\n')
    got = load_label_file(jl)
    assert got.labels == [] and got.problems == [
        f"{jl}:1: label: '1,0' has a decimal comma: write 1.0",
        f"{jl}:2: label: missing (the object has 'case_id', 'metric', 'lable'; did you mean lable?)",
        f"{jl}:3: not JSON: Expecting ',' delimiter at column 33",
    ]


def test_a_quote_left_open_costs_only_its_own_row(tmp_path: Path) -> None:
    # The csv module read every line up to the next quote into one cell: c1 and c2 were lost without a word.
    csv = tmp_path / "labels.csv"
    csv.write_text('case_id,metric,label,note\nc0,m,yes,"a note\nc1,m,no,x\nc2,m,yes,\nc3,m,no,"a note\nover two lines"\n')
    got = load_label_file(csv)
    assert [(lab.case_id, lab.value) for lab in got.labels] == [("c1", False), ("c2", True), ("c3", False)]
    assert got.problems == [f"{csv}:2: a quoted cell opened on this line runs on to line 5 (a quote left open?); "
                            "the 3 line(s) after it are read on their own"]


def test_a_broken_element_of_a_json_array_costs_only_itself(tmp_path: Path) -> None:
    path = tmp_path / "labels.json"
    path.write_text('[\n  {"case_id": "a", "metric": "m", "label": true},\n  {"case_id": "b", "metric": "m" "label": false},\n'
                    '  {"case_id": "c",\n   "metric": "m", "label": 0}\n]\n')
    got = load_label_file(path)
    assert [(lab.case_id, lab.where) for lab in got.labels] == [("a", f"{path}:2"), ("c", f"{path}:4")]
    assert got.problems == [f"{path}:3: not JSON: Expecting ',' delimiter at column 34"]


def test_a_case_id_a_spreadsheet_changed_is_offered_the_runs_own(tmp_path: Path) -> None:
    def res(cid: str) -> dict[str, Any]:
        return {"case_id": cid, "trial": 0, "status": "ok", "scores": {"m": {"value": 1.0, "passed": True, "reason": ""}}}

    csv = tmp_path / "labels.csv"
    csv.write_text("case_id,metric,label\n7,m,yes\nABC,m,yes\nzz,m,yes\n")
    block = agreement_block([res("007"), res("abc")], load_label_file(csv), resamples=50)
    assert block["problems"] == [f"{csv}:2: case_id: no result of this run is case '7'; did you mean '007'?",
                                 f"{csv}:3: case_id: no result of this run is case 'ABC'; did you mean 'abc'?",
                                 f"{csv}:4: case_id: no result of this run is case 'zz'"]


def test_a_label_cell_ending_in_a_line_break_is_its_label_and_a_column_named_twice_is_refused(tmp_path: Path) -> None:
    # A spreadsheet keeps a cell's trailing Alt+Enter inside its quotes: `"no⏎"` was taken for a quote left open, its
    # row refused and the line after it read as a row of its own. A byte-order mark, CRLF and a note quoted over two
    # lines with commas in it are read as written.
    from tracejudge.core.errors import ConfigError

    csv = tmp_path / "labels.csv"
    csv.write_bytes(b'\xef\xbb\xbfcase_id,metric,label,note\r\nc0,m,"no\r\n","a, b"\r\n'
                    b'c1,m,yes,"first line,\r\nsecond, line"\r\n"c2","m","0,0",x\r\n')
    got = load_label_file(csv)
    assert [(lab.case_id, lab.value, lab.where) for lab in got.labels] == [("c0", False, f"{csv}:2"), ("c1", True, f"{csv}:4")], got
    assert got.problems == [f"{csv}:6: label: '0,0' has a decimal comma: write 0.0"], got.problems
    # Two columns of one name: each row kept the last, a label read from a column no one chose, without a word.
    twice = tmp_path / "twice.csv"
    twice.write_text("case_id,metric,label,Label\nc0,m,true,false\n")
    with pytest.raises(ConfigError, match=r"twice.csv:1: the CSV header names the column label more than once \(columns 3, 4\)"):
        load_label_file(twice)
