"""`tracejudge export --to parquet|csv`: one row per (case, trial, metric), checked against results.jsonl; README's DuckDB query runs."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest
from tracejudge.entrypoints.cli import main

from _runs import seven_and_three, write_config
import _forkserver

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
REPO = Path(__file__).resolve().parent.parent


def _run(tmp_path: Path, *extra: str) -> Path:
    data = seven_and_three(tmp_path / "cases.jsonl")
    cfg = write_config(tmp_path / "cfg.yaml", data, tmp_path / "run",
                       metrics=[{"type": "ToolCorrectness", "name": "tc"}, {"type": "TaskCompletion"}],
                       judge={"provider": "simulator", "model": "gpt-4o-mini"})
    assert main(["run", str(cfg), "--no-progress", *extra]) in (0, 1)
    return tmp_path / "run"


def _expected(run_dir: Path) -> list[tuple]:
    """The rows results.jsonl says the export must hold, in order: (case, trial, metric, value, passed, status, kind, reason, model, tokens…)."""
    out = []
    for line in (run_dir / "results.jsonl").read_text().splitlines():
        r = json.loads(line)
        kind = (r.get("error") or {}).get("kind")
        if not r["scores"]:
            out.append((r["case_id"], r["trial"], None, None, None, r["status"], kind, r["error"]["message"], None, None, None, None, r["tags"]))
        for name, s in r["scores"].items():
            j = s.get("judge") or {}
            out.append((r["case_id"], r["trial"], name, s["value"], s["passed"], r["status"], kind, s["reason"],
                        j.get("model"), j.get("input_tokens"), j.get("output_tokens"), j.get("cost_usd"), r["tags"]))
    return out


def test_parquet_holds_every_score_of_results_jsonl_row_by_row(tmp_path):
    run_dir = _run(tmp_path)
    out = tmp_path / "verdicts.parquet"
    assert main(["export", str(run_dir), "--to", "parquet", str(out)]) == 0
    table = pq.read_table(out)
    assert "run" not in table.column_names  # one run directory: no run column
    got = [tuple(r[c] for c in ("case_id", "trial", "metric", "value", "passed", "status", "error_kind", "reason", "judge_model",
                               "input_tokens", "output_tokens", "cost_usd", "tags")) for r in table.to_pylist()]
    expected = _expected(run_dir)
    assert got == expected
    assert {r[2] for r in got} == {"tc", "TaskCompletion", None}  # three invalid_input records have no score: one row each
    assert any(r[8] == "gpt-4o-mini" and r[9] > 0 for r in got)  # the judge's model and tokens travel
    manifest = json.loads((run_dir / "manifest.json").read_text())
    started = json.loads((run_dir / "summary.json").read_text())["segments"][0]["started_at"]
    assert set(table.column("config_hash").to_pylist()) == {manifest["config_hash"]}
    assert {t.isoformat() for t in table.column("run_started_at").to_pylist()} == {started.replace("Z", "000+00:00")}
    assert table.schema.field("run_started_at").type == pa.timestamp("ms", tz="UTC")


def test_csv_matches_the_parquet_rows(tmp_path):
    run_dir = _run(tmp_path)
    assert main(["export", str(run_dir), "--to", "csv", str(tmp_path / "v.csv")]) == 0
    rows = list(csv.DictReader((tmp_path / "v.csv").open(encoding="utf-8")))
    expected = _expected(run_dir)
    assert [(r["case_id"], int(r["trial"]), r["metric"] or None, r["reason"] or None) for r in rows] == [(e[0], e[1], e[2], e[7] or None) for e in expected]
    assert [json.loads(r["tags"]) for r in rows] == [e[12] for e in expected]


def test_shards_add_a_run_column_and_readme_duckdb_query_runs(tmp_path):
    duckdb = pytest.importorskip("duckdb")
    for i in (1, 2):
        _run(tmp_path, "--shard", f"{i}/2")
    out = tmp_path / "verdicts.parquet"
    assert main(["export", str(tmp_path / "run"), "--to", "parquet", str(out)]) == 0  # the unsharded name: both shards
    table = pq.read_table(out)
    assert set(table.column("run").to_pylist()) == {"run-shard-1-of-2", "run-shard-2-of-2"}
    assert table.num_rows == sum(len(_expected(tmp_path / f"run-shard-{i}-of-2")) for i in (1, 2))
    sql = re.search(r"```sql\n(.*?)```", (REPO / "README.md").read_text(encoding="utf-8"), re.S).group(1)
    got = duckdb.connect().execute(sql.replace("verdicts.parquet", str(out))).fetchall()
    # As summary.json counts them: a deterministic score of a result whose judge failed (or was skipped) still counts.
    scored = [r for r in table.to_pylist() if r["status"] in ("ok", "judge_error", "skipped_budget", "rate_limited") and r["value"] is not None]
    means = {m: sum(r["value"] for r in scored if r["metric"] == m) / sum(1 for r in scored if r["metric"] == m) for m in {r["metric"] for r in scored}}
    assert {row[0]: pytest.approx(row[1]) for row in got} == means


def test_missing_run_dir_and_bad_kind_are_usage_errors(tmp_path, capsys):
    assert main(["export", str(tmp_path / "nope"), "--to", "parquet", str(tmp_path / "x.parquet")]) == 2
    run_dir = _run(tmp_path)
    assert main(["export", str(run_dir), "--to", "excel", "x"]) == 2
    assert main(["export", str(run_dir), "--to", "parqet", "x"]) == 2  # a slip of a kind names it (it listed the kinds alone)
    assert "error: --to parqet: expected one of parquet, csv, mlflow, phoenix; did you mean parquet?" in capsys.readouterr().err
    assert main(["export", str(run_dir), "--to", "parquet"]) == 2
    assert "--to parquet PATH" in capsys.readouterr().err
    assert not (tmp_path / "x.parquet").exists()


def test_readme_store_dataset_sections_load(tmp_path):
    """The nightly `dataset:` sections README shows for Phoenix and MLflow are valid configs (no dataset.path)."""
    import yaml
    from tracejudge.core.config import load_config

    text = (REPO / "README.md").read_text(encoding="utf-8")
    blocks = [b for b in re.findall(r"```yaml\n(.*?)```", text, re.S) if "format: phoenix" in b or "format: mlflow-server" in b]
    assert len(blocks) == 2
    for block in blocks:
        cfg = {"dataset": yaml.safe_load(block), "metrics": [{"type": "MaxToolCalls", "max_calls": 8}], "run": {"dir": str(tmp_path / "r")}}
        (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg))
        assert load_config(tmp_path / "c.yaml").dataset.path is None
    cfg["dataset"]["path"] = "x.jsonl"
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg))
    with pytest.raises(Exception, match="dataset.path is not used"):
        load_config(tmp_path / "c.yaml")


@pytest.mark.parametrize("kind", ["parquet", "csv"])
def test_a_destination_that_cannot_be_written_is_named_as_given_and_leaves_no_temporary(tmp_path, kind):
    import subprocess
    import sys

    run_dir = _run(tmp_path)
    (tmp_path / "a_folder").mkdir()
    for dest, why in ((tmp_path / "missing" / f"v.{kind}", "No such file or directory"), (tmp_path / "a_folder", "Is a directory")):
        proc = _forkserver.run([sys.executable, "-m", "tracejudge", "export", str(run_dir), "--to", kind, str(dest)],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.strip() == f"error: {dest}: {why}"  # the path given, not the writer's temporary beside it
    assert not [p for p in tmp_path.rglob("*.tmp")]


def test_two_runs_of_the_same_name_get_run_values_that_tell_them_apart(tmp_path):
    # `export runs/mt copy/mt` labelled every row `mt`: the two runs could not be told apart.
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = _run(tmp_path / "a")
    second = first.rename(tmp_path / "b" / "run")
    again = _run(tmp_path / "a")
    out = tmp_path / "both.csv"
    assert main(["export", str(again), str(second), "--to", "csv", str(out)]) == 0
    with open(out, newline="") as fh:
        labels = [row["run"] for row in csv.DictReader(fh)]
    assert labels[0] == "a/run" and labels[-1] == "b/run" and set(labels) == {"a/run", "b/run"}


def test_csv_text_a_spreadsheet_would_run_as_a_formula_starts_with_a_quote(tmp_path):
    # OWASP's CSV injection: a case id (or reason, tag…) `=HYPERLINK(…)` opened in a spreadsheet program ran as a formula.
    import subprocess
    import sys

    risky = ["=HYPERLINK(\"http://127.0.0.1/x\",\"y\")", "+1+2", "-2+3", "@SUM(A1)", "\tcmd", "\rcmd"]
    ids = [*risky, "plain-1", "a=b"]
    data = tmp_path / "cases.jsonl"
    data.write_text("".join(json.dumps({"id": i, "trace": {"steps": [], "output": "done"}}) + "\n" for i in ids), encoding="utf-8")
    cfg = write_config(tmp_path / "cfg.yaml", data, tmp_path / "run", metrics=[{"type": "Contains", "value": "done"}])
    assert main(["run", str(cfg), "--no-progress"]) == 0
    proc = _forkserver.run([sys.executable, "-m", "tracejudge", "export", str(tmp_path / "run"), "--to", "csv", "-"],
                          capture_output=True, timeout=120)  # bytes: text mode would read the `\r` as a line end
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.DictReader(io.StringIO(proc.stdout.decode("utf-8"), newline="")))
    assert [r["case_id"] for r in rows] == ["'" + i for i in risky] + ["plain-1", "a=b"]
    assert {r["value"] for r in rows} == {"1.0"} and {r["trial"] for r in rows} == {"0"}  # numbers stay numbers
    assert {r["metric"] for r in rows} == {"Contains"}
    from tracejudge.stages.export.table import csv_cell

    assert csv_cell(-0.25) == -0.25 and csv_cell(-3) == -3 and csv_cell(False) is False and csv_cell(None) == ""
    # Text that starts with the quote gets one more: `'=1+1` and `=1+1` were one cell.
    assert csv_cell("'=1+1") == "''=1+1" and csv_cell("=1+1") == "'=1+1" and csv_cell("it's") == "it's"
    # Parquet holds the text as recorded.
    assert main(["export", str(tmp_path / "run"), "--to", "parquet", str(tmp_path / "v.parquet")]) == 0
    assert pq.read_table(tmp_path / "v.parquet").column("case_id").to_pylist() == ids
