"""A score judged by a model without a price costs an unknown amount: `judge.cost_usd` is null in results.jsonl,
in every way a score's dollars are split or summed, and in whatever reads them (export, report, compare, the viewer,
pairwise compare); a cache hit still costs 0.0.

Real runs over the judge simulator (`provider: simulator`, started by the run on 127.0.0.1).
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import anyio
import pyarrow.parquet as pq
import pytest
from _runs import view_server
from test_judge_batch_api import write_cases
from tracejudge.core.config import validate_config
from tracejudge.engine import runner
import _forkserver

CLI = str(Path(sys.executable).with_name("tracejudge"))
UNPRICED = "my-local-model"


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return _forkserver.run([CLI, *args], capture_output=True, text=True, timeout=120, cwd=cwd)


def config(tmp: Path, name: str, judge: dict[str, Any], *, cache: bool = True) -> dict[str, Any]:
    return {"dataset": {"path": str(write_cases(tmp / "c.jsonl", 4)), "format": "native"},
            "metrics": [{"type": "TaskCompletion"}, {"type": "ToolCallNecessity"}],  # two metrics: one grouped request split in two
            "judge": {"provider": "simulator", "model": UNPRICED, **judge},
            "cache": {"enabled": cache, "dir": str(tmp / "cache")}, "run": {"dir": str(tmp / name)}}


def judge_costs(run_dir: Path) -> list[Any]:
    """Every judge score's `judge.cost_usd` in `run_dir`'s results."""
    return [s["judge"]["cost_usd"] for line in (run_dir / "results.jsonl").read_text().splitlines()
            for s in json.loads(line)["scores"].values() if s.get("judge")]


@pytest.mark.parametrize("judge", [{}, {"group": "none"}, {"group": "none", "items_per_request": 2}, {"samples": 2},
                                   {"models": ["gpt-4o-mini", UNPRICED]}],
                         ids=["grouped", "alone", "multi-item", "samples", "panel"])
def test_every_way_a_scores_dollars_are_split_or_summed_keeps_them_unknown(tmp_path: Path, judge: dict[str, Any]) -> None:
    # Each score's dollars were 0.0: split over the metrics of a grouped request or the items of a multi-item one,
    # summed over samples and panel members (one priced member made the sum look like the whole cost).
    got = anyio.run(lambda: runner.run(validate_config(config(tmp_path, "run", judge))))
    costs = judge_costs(tmp_path / "run")
    assert got.summary["judge"]["requests"] > 0 and len(costs) == 8 and costs == [None] * 8, costs
    # The same run again answered by the cache: nothing billed, so $0 is known, and what the cache saved is not.
    again = anyio.run(lambda: runner.run(validate_config(config(tmp_path, "again", judge))))
    assert again.summary["judge"]["requests"] == 0 and judge_costs(tmp_path / "again") == [0.0] * 8
    j = again.summary["judge"]
    assert (j["saved_usd"] is None) if j["saved_tokens"] else (j["saved_usd"] == 0.0), j  # (hits of a multi-item request count no saving)


def test_export_report_compare_and_the_viewer_read_unknown_dollars(tmp_path: Path) -> None:
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps(config(tmp_path, "run", {}, cache=False)))
    assert cli("run", str(cfg), "--no-progress").returncode == 0
    run = tmp_path / "run"
    assert set(judge_costs(run)) == {None}
    # Export: a nullable double, null for each judge score (an empty CSV field), not 0.0 a sum would take as free.
    assert cli("export", str(run), "--to", "parquet", str(tmp_path / "rows.parquet")).returncode == 0
    table = pq.read_table(tmp_path / "rows.parquet")
    assert str(table.schema.field("cost_usd").type) == "double" and table.column("cost_usd").null_count == table.num_rows == 8
    assert cli("export", str(run), "--to", "csv", str(tmp_path / "rows.csv")).returncode == 0
    with open(tmp_path / "rows.csv", newline="") as fh:
        assert [row["cost_usd"] for row in csv.DictReader(fh)] == [""] * 8
    # report reads the results again; compare reads both runs; the viewer shows a case.
    rebuilt = cli("report", str(run))
    assert rebuilt.returncode == 0 and "cost unknown (no price for 'my-local-model'" in " ".join(rebuilt.stdout.split()), rebuilt.stderr
    compared = cli("compare", str(run), str(run))
    assert compared.returncode == 0 and "Traceback" not in compared.stderr, compared.stdout + compared.stderr
    with view_server(str(run)) as url, urllib.request.urlopen(url + "/run/run/case?id=case-0&trial=0", timeout=60) as reply:
        assert reply.status == 200 and "TaskCompletion" in reply.read().decode()


def test_pairwise_compare_with_an_unpriced_judge_says_its_cost_is_unknown(tmp_path: Path) -> None:
    # `compare A --vs B --judge CONFIG` printed `$…` of the judge's dollars: a null (unknown) crashed it.
    cases = write_cases(tmp_path / "c.jsonl", 3)
    for name in ("a", "b"):  # two runs of the same traces, scored without a judge
        (tmp_path / f"{name}.json").write_text(json.dumps({"dataset": {"path": str(cases), "format": "native"},
                                                          "metrics": [{"type": "ToolCalls"}], "run": {"dir": str(tmp_path / name)}}))
        made = cli("run", str(tmp_path / f"{name}.json"), "--no-progress")
        assert made.returncode in (0, 1), made.stdout + made.stderr
    cfg = tmp_path / "judge.json"
    cfg.write_text(json.dumps(config(tmp_path, "unused", {"pairwise": {"rubric": "Which run found the item?"}}, cache=False)))
    got = cli("compare", str(tmp_path / "a"), "--vs", str(tmp_path / "b"), "--judge", str(cfg))
    assert got.returncode == 0 and "Traceback" not in got.stderr, got.stdout + got.stderr
    text = " ".join(got.stdout.split())
    assert "cost unknown (no price for 'my-local-model'; give one under judge.prices)" in text and "$0.0000" not in text, text
    as_json = cli("compare", str(tmp_path / "a"), "--vs", str(tmp_path / "b"), "--judge", str(cfg), "--json")
    assert json.loads(as_json.stdout)["judge"]["cost_usd"] is None, as_json.stdout


def test_a_run_the_cache_answered_whole_cost_nothing_priced_or_not() -> None:
    # A second run of a model without a price, every answer from the cache: summary.json said $0 and the terminal
    # "cost unknown (no price for 'judge-7b')". Nothing was sent, so nothing was billed: $0 in both.
    from tracejudge.stages.reports.judge_lines import spend_line

    cached = {"judge": {"requests": 0, "cache_hits": 5, "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0, "priced": False,
                        "model": "judge-7b"}}
    assert spend_line(cached).endswith("0 input + 0 output tokens, $0.0000")
    paid = {"judge": {**cached["judge"], "requests": 1, "input_tokens": 10, "cost_usd": None}}
    assert "cost unknown (no price for 'judge-7b'" in spend_line(paid)


def test_a_run_whose_connections_were_all_refused_billed_nothing() -> None:
    # Six attempts at a server that was not there: 6 requests, no token billed, "cost unknown (no price ...)" said.
    from tracejudge.stages.reports.judge_lines import spend_line

    refused = {"judge": {"requests": 6, "cache_hits": 0, "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0, "priced": False,
                         "model": "judge"}}
    assert spend_line(refused).endswith("0 input + 0 output tokens, $0.0000")


def test_the_simulators_dollars_say_they_were_not_spent() -> None:
    # The demo printed "$0.0954" after a run of the bundled simulator: money that looked spent.
    from tracejudge.stages.reports.judge_lines import spend_line

    simulated = {"judge": {"provider": "simulator", "model": "gpt-4o-mini", "requests": 200, "input_tokens": 494_174,
                           "output_tokens": 35_509, "cost_usd": 0.095431, "priced": True}}
    assert spend_line(simulated).endswith("output tokens, $0.0954 at gpt-4o-mini's prices (simulated: nothing was spent)")
    hosted = {"judge": {**simulated["judge"], "provider": "openai"}}
    assert spend_line(hosted).endswith("output tokens, $0.0954")


def test_the_simulators_dollars_name_the_panel_models_they_are_priced_at() -> None:
    # A panel of simulator:gpt-4o alone billed gpt-4o's rates, but the line said "at gpt-4o-mini's prices": the
    # section's default model, which asked nothing.
    from tracejudge.stages.reports.judge_lines import spend_line

    def panel(*models: str) -> dict[str, Any]:
        return {"judge": {"provider": "simulator", "model": "gpt-4o-mini", "requests": 12, "input_tokens": 33_684, "output_tokens": 2_262,
                          "cost_usd": 0.10683, "priced": True, "panel": {"models": {m: {"priced": True} for m in models}}}}

    assert spend_line(panel("simulator:gpt-4o")).endswith("$0.1068 at simulator:gpt-4o's prices (simulated: nothing was spent)")
    assert spend_line(panel("simulator:gpt-4o-mini", "simulator:gpt-4o")).endswith(
        "$0.1068 at the prices of simulator:gpt-4o-mini and simulator:gpt-4o (simulated: nothing was spent)")


def test_a_report_without_summary_still_says_the_simulators_dollars_were_not_spent(tmp_path: Path) -> None:
    # After a kill (no summary.json) `tracejudge report` rebuilt the judge's spending but not whose judge it was, so the
    # simulator's dollars read as spent ("$0.0013"), where the run itself said "(simulated: nothing was spent)".
    run = anyio.run(lambda: runner.run(validate_config(config(tmp_path, "run", {"model": "gpt-4o-mini"}))))
    assert run.summary["judge"]["cost_usd"] > 0
    (tmp_path / "run" / "summary.json").unlink()
    done = cli("report", str(tmp_path / "run"))
    line = next(x for x in done.stdout.splitlines() if x.startswith("judge: "))
    assert line.endswith("at gpt-4o-mini's prices (simulated: nothing was spent)"), done.stdout + done.stderr


def test_a_report_without_summary_keeps_an_unpriced_models_dollars_unknown(tmp_path: Path) -> None:
    # Rebuilt from the spend journal after a kill, the dollars of a model without a price read "$0.0000".
    anyio.run(lambda: runner.run(validate_config(config(tmp_path, "run", {}))))
    (tmp_path / "run" / "summary.json").unlink()
    done = cli("report", str(tmp_path / "run"))
    line = next(x for x in done.stdout.splitlines() if x.startswith("judge: "))
    assert line.endswith(f"cost unknown (no price for {UNPRICED!r}; give one under judge.prices)"), done.stdout + done.stderr
    j = json.loads((tmp_path / "run" / "summary.json").read_text())["judge"]
    assert (j["cost_usd"], j["priced"], j["spend_source"]) == (None, False, "judge_spend.jsonl"), j
