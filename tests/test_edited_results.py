"""A results.jsonl edited by hand (a score of NaN, Infinity or "high", a trial of "1"): every command that reads it names
the file, line and field, and none fails with an internal error.

`report` crashed on NaN (exit 3: `cannot convert float NaN to integer`), `compare` on a string (exit 3) and printed `nan`
for NaN, `export --to parquet` crashed on a string and `--to csv` wrote `nan` and `high` in the value column, and the
viewer's index failed on a trial that is not a number. A real run is made, then one line of it edited.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest
from _runs import native_case, write_dataset
from tracejudge.viewer.index import RunIndex
import _forkserver

EDITS = {
    "NaN": ('"value": NaN', "scores.tc.value: NaN is not a number a score can hold (a score's value is a number from 0 to 1, or null)"),
    "Infinity": ('"value": Infinity', "scores.tc.value: Infinity is not a number a score can hold"),
    "string": ('"value": "high"', 'scores.tc.value: "high" is not a number (a score\'s value is a number from 0 to 1, or null)'),
    "above one": ('"value": 2.5', "scores.tc.value: 2.5 is outside [0, 1]"),
    "trial": ('"trial": "one"', 'trial: "one" is not a whole number'),
    "status": ('"status": "weird"', 'status: "weird" is not a status a run writes (ok, target_error, invalid_input, '
                                    'judge_error, skipped_budget or rate_limited)'),
}
# What `report` says where its validation of the whole result finds the fault first (pydantic's words).
REPORT_SAYS = {"trial": "trial: Input should be a valid integer, unable to parse string as an integer",
               "status": "status: Input should be 'ok', 'target_error', 'invalid_input', 'judge_error', 'skipped_budget' "
                         "or 'rate_limited'",
               "string": "scores.tc.value: Input should be a valid number, unable to parse string as a number"}


def _tj(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return _forkserver.run([sys.executable, "-m", "tracejudge", *args], cwd=cwd, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished run of three cases scored by ToolCorrectness (`tc`), in `runs/clean`."""
    base = tmp_path_factory.mktemp("edited")
    write_dataset(base / "cases.jsonl", [native_case(f"c{i}", ["a", "b"], ["a", "b"][: 1 + i % 2]) for i in range(3)])
    (base / "eval.yaml").write_text("dataset: {path: cases.jsonl}\nmetrics: [{type: ToolCorrectness, name: tc}]\n"
                                    "run: {dir: runs/clean}\n")
    done = _tj("run", "eval.yaml", cwd=base)
    assert done.returncode in (0, 1), done.stderr
    return base


def _edited(finished: Path, edit: str, name: str) -> Path:
    """A copy of the finished run whose second result line holds `edit` in place of its `tc` value (or its trial or
    status)."""
    run = finished / "runs" / name
    run.mkdir(exist_ok=True)
    lines = (finished / "runs" / "clean" / "results.jsonl").read_text().splitlines()
    second = json.loads(lines[1])
    key = next((k for k in ("trial", "status") if edit.startswith(f'"{k}"')), "value")
    marker = 12345.25  # a number no result holds, replaced by the edit's text
    if key != "value":
        second[key] = marker
    else:
        second["scores"]["tc"]["value"] = marker
    lines[1] = json.dumps(second).replace(f'"{key}": {marker}', edit)
    assert edit in lines[1]
    (run / "results.jsonl").write_text("\n".join(lines) + "\n")
    for other in ("manifest.json", "summary.json", "checkpoint.json"):
        if (finished / "runs" / "clean" / other).exists():
            (run / other).write_bytes((finished / "runs" / "clean" / other).read_bytes())
    return run


@pytest.mark.parametrize("what", list(EDITS))
def test_every_command_names_the_edited_line_and_field(finished: Path, what: str) -> None:
    edit, said = EDITS[what]
    run = _edited(finished, edit, what.replace(" ", "-"))
    where = f"{run / 'results.jsonl'}:2: {said}"

    report = _tj("report", str(run), cwd=finished)
    assert report.returncode == 1, report.stdout + report.stderr  # the gate fails on a damaged line, as on one not JSON
    assert f"results.jsonl:2: {REPORT_SAYS.get(what, said)}" in report.stdout and "internal error" not in report.stderr

    compare = _tj("compare", "runs/clean", str(run), "--json", cwd=finished)
    assert compare.returncode == 0, compare.stderr
    data = json.loads(compare.stdout)
    assert data["unreadable_b"] == 1 and data["unreadable_lines_b"][0].startswith(where), data["unreadable_lines_b"]
    assert all(m["mean_b"] is None or 0 <= m["mean_b"] <= 1 for m in data["metrics"].values())  # (it was `nan`)
    text = _tj("compare", "runs/clean", str(run), cwd=finished)
    assert "warning: 1 line(s) of B's results.jsonl are not results and were left out: " in text.stdout
    assert "results.jsonl:2: " in text.stdout and text.returncode == 0

    for kind in ("csv", "parquet"):
        export = _tj("export", str(run), "--to", kind, str(finished / f"{what}.{kind}"), "--force", cwd=finished)
        assert export.returncode == 0, export.stderr
        flat = " ".join(export.stderr.split())
        assert "warning: 1 line(s) of results.jsonl are not results and were left out of the export: " in flat
        assert where in flat and "exported 2 rows" in flat
    with open(finished / f"{what}.csv", newline="") as fh:
        values = [row["value"] for row in csv.DictReader(fh)]
    assert len(values) == 2 and all(0 <= float(v) <= 1 for v in values)

    assert RunIndex(run).refresh() == 2  # the viewer's index leaves it out, as a line that is not JSON


@pytest.mark.parametrize("what", ["NaN", "not JSON"])
def test_report_out_and_a_merge_of_shards_fail_as_report_in_place_does(finished: Path, what: str) -> None:
    # `report RUN --out DIR` copied a line scored NaN and, its run's count of results not copied, passed (exit 0) where
    # `report RUN` fails; a line that is not JSON stopped the copy with exit 2 ("cannot merge"). A CI gate reads either.
    run = _edited(finished, EDITS["NaN"][0], f"out-{what.replace(' ', '-')}")
    if what == "not JSON":
        lines = (run / "results.jsonl").read_text().splitlines()
        lines[1] = lines[1][:25]
        (run / "results.jsonl").write_text("\n".join(lines) + "\n")
    in_place = _tj("report", str(run), cwd=finished)
    copied = _tj("report", str(run), "--out", str(finished / f"copy-{what.replace(' ', '-')}"), cwd=finished)
    for report in (in_place, copied):
        assert report.returncode == 1, report.stdout + report.stderr
        assert "verdict: FAIL" in report.stdout and "FAIL results readable: 1 of the 3 results the run counted" in report.stdout
        assert "results.jsonl:2: " in report.stdout


def test_a_merge_of_shards_fails_on_a_damaged_line_of_one_shard(finished: Path) -> None:
    # Merging shards is the CI form of `report`: a shard's damaged line is a result lost, as in that shard's own report.
    for i in (1, 2):
        done = _tj("run", "eval.yaml", "--shard", f"{i}/2", "--run-dir", f"runs/sharded-shard-{i}-of-2", cwd=finished)
        assert done.returncode in (0, 1), done.stderr
    shards = [finished / "runs" / f"sharded-shard-{i}-of-2" for i in (1, 2)]
    edited = next(s for s in shards if len((s / "results.jsonl").read_text().splitlines()) >= 1)
    lines = (edited / "results.jsonl").read_text().splitlines()
    lines[0] = lines[0].replace('"value":', '"value": NaN, "was":', 1)
    (edited / "results.jsonl").write_text("\n".join(lines) + "\n")
    merged = _tj("report", *map(str, shards), "--out", str(finished / "merged"), cwd=finished)
    assert merged.returncode == 1, merged.stdout + merged.stderr
    assert "FAIL results readable: 1 of the 3 results the run counted" in merged.stdout, merged.stdout
    assert "scores.tc.value: NaN is not a number a score can hold" in merged.stdout


def test_a_manifest_that_is_not_json_gets_advice_the_command_can_follow(finished: Path) -> None:
    # `compare`, `export` and `report` said "move the run directory aside or use --fresh": `run`'s advice, which none of
    # them takes. The advice they give now works: running the config on the run again rewrites the manifest.
    run = _edited(finished, EDITS["above one"][0], "bad-manifest")
    (run / "results.jsonl").write_bytes((finished / "runs" / "clean" / "results.jsonl").read_bytes())
    (run / "manifest.json").write_text("{not json\n")
    said = "manifest is not valid JSON"
    for command in (["compare", "runs/clean", str(run)], ["export", str(run), "--to", "csv", str(finished / "m.csv")], ["report", str(run)]):
        proc = _tj(*command, cwd=finished)
        flat = " ".join(proc.stderr.split())
        assert proc.returncode == 2 and said in flat, proc.stderr
        assert "--fresh" not in flat and f"{command[0]} reads the run's config from it: restore it from a copy, or run the config " in flat
        assert f"(tracejudge run CONFIG --run-dir {run})" in flat
    before = (run / "results.jsonl").read_bytes()
    again = _tj("run", "eval.yaml", "--run-dir", str(run), cwd=finished)
    assert again.returncode == 0, again.stderr
    assert (run / "results.jsonl").read_bytes() == before and json.loads((run / "manifest.json").read_text())["config"]
    assert _tj("report", str(run), cwd=finished).returncode == 0


@pytest.mark.parametrize("what", ["NaN", "not JSON"])
def test_evaluate_on_a_kept_run_with_a_damaged_line_returns_its_results(tmp_path: Path, what: str) -> None:
    # `evaluate(…, run_dir=…)` redid the damaged line's case, then read every line back and raised pydantic's
    # ValidationError on the damaged one.
    import tracejudge

    cases = [native_case(f"c{i}", ["a", "b"], ["a", "b"][: 1 + i % 2]) for i in range(3)]
    metrics = [{"type": "ToolCorrectness", "name": "tc"}]
    first = tracejudge.evaluate(cases, metrics, run_dir=tmp_path / "kept")
    path = tmp_path / "kept" / "results.jsonl"
    lines = path.read_text().splitlines()
    lines[1] = lines[1][:20] if what == "not JSON" else lines[1].replace('"value":1.0', '"value":NaN', 1)
    assert lines[1] != path.read_text().splitlines()[1]
    path.write_text("\n".join(lines) + "\n")
    again = tracejudge.evaluate(cases, metrics, run_dir=tmp_path / "kept")
    assert sorted(r.case_id for r in again.results) == sorted(r.case_id for r in first.results) == ["c0", "c1", "c2"]


def test_run_resumes_a_run_with_a_line_scored_nan_and_redoes_its_case(finished: Path) -> None:
    # The resume folded the NaN into the run's figures and stopped as an internal error (exit 3: "cannot convert float NaN
    # to integer"); a line that is not JSON was already skipped and its case redone.
    run = _edited(finished, EDITS["NaN"][0], "resumed-nan")
    again = _tj("run", "eval.yaml", "--run-dir", str(run), cwd=finished)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "damaged result line skipped; its case is redone" in again.stderr and "internal error" not in again.stderr
    assert len((run / "results.jsonl").read_text().splitlines()) == 4  # (the damaged line stays; its case is written again)
    report = _tj("report", str(run), cwd=finished)
    assert report.returncode == 0 and "results.jsonl:2: not a valid result" in report.stderr, report.stdout + report.stderr


def test_export_leaves_out_a_repeated_line_as_report_does(finished: Path) -> None:
    # A line pasted twice: `report` counts the second as damaged and `compare` counts the pair once; export wrote its
    # rows twice, so a mean taken from the file (README's DuckDB query) weighed that case double.
    run = finished / "runs" / "repeated"
    run.mkdir(exist_ok=True)
    lines = (finished / "runs" / "clean" / "results.jsonl").read_text().splitlines()
    (run / "results.jsonl").write_text("\n".join([*lines, lines[0]]) + "\n")
    (run / "manifest.json").write_bytes((finished / "runs" / "clean" / "manifest.json").read_bytes())
    first = json.loads(lines[0])
    for kind in ("csv", "parquet"):
        export = _tj("export", str(run), "--to", kind, str(finished / f"repeated.{kind}"), "--force", cwd=finished)
        assert export.returncode == 0, export.stderr
        flat = " ".join(export.stderr.split())
        assert (f"{run / 'results.jsonl'}:4: (case {first['case_id']!r}, trial 0) repeats an earlier line" in flat
                and "exported 3 rows" in flat), flat
    with open(finished / "repeated.csv", newline="") as fh:
        keys = [(row["case_id"], row["trial"], row["metric"]) for row in csv.DictReader(fh)]
    assert len(keys) == len(set(keys)) == 3


def test_report_out_reads_a_repeated_line_as_report_in_place_does(finished: Path) -> None:
    # `report RUN` leaves a line pasted twice out with a warning naming it (no result is lost: the gate holds);
    # `report RUN --out DIR` refused the copy with exit 2 ("cannot merge … each (case, trial) must come from one
    # shard, once"), for a run that has no shards.
    run = finished / "runs" / "repeated-out"
    run.mkdir(exist_ok=True)
    lines = (finished / "runs" / "clean" / "results.jsonl").read_text().splitlines()
    (run / "results.jsonl").write_text("\n".join([*lines, lines[0]]) + "\n")
    for other in ("manifest.json", "summary.json"):
        (run / other).write_bytes((finished / "runs" / "clean" / other).read_bytes())
    first = json.loads(lines[0])["case_id"]
    in_place = _tj("report", str(run), cwd=finished)
    copied = _tj("report", str(run), "--out", str(finished / "copy-repeated"), cwd=finished)
    for report in (in_place, copied):
        assert report.returncode == 0, report.stdout + report.stderr
        assert "verdict: PASS" in report.stdout and "3 results: ok 3" in report.stdout
        flat = " ".join(report.stderr.split())
        assert "results.jsonl:4: not a valid result" in flat and f"(case {first!r}, trial 0) repeats an earlier line" in flat
        assert "shard" not in report.stdout + report.stderr
