"""A dollar budget for a judge model missing from the price table (a variant named like a cheaper family too) is refused at load; `estimate` says its cost is unknown."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _runs import view_server
from test_judge_batch_api import write_cases
from tracejudge.simulator.server import SimulatorThread
import _forkserver

CLI = str(Path(sys.executable).with_name("tracejudge"))


def write_config(tmp: Path, judge: dict[str, Any], budget: dict[str, Any]) -> Path:
    cfg = tmp / "cfg.json"
    cfg.write_text(json.dumps({"dataset": {"path": str(write_cases(tmp / "c.jsonl", 3)), "format": "native"},
                               "metrics": [{"type": "TaskCompletion"}], "judge": judge, "budget": budget,
                               "cache": {"enabled": False}, "run": {"dir": str(tmp / "run")}}))
    return cfg


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return _forkserver.run([CLI, *args], capture_output=True, text=True, timeout=120)


def test_a_dollar_cap_on_an_unpriced_model_is_a_config_error_and_nothing_is_sent(simulator: Callable[..., SimulatorThread], tmp_path: Path) -> None:
    sim = simulator()
    cfg = write_config(tmp_path, {"provider": "openai", "model": "o1", "base_url": sim.url + "/v1", "api_key_env": None},
                       {"max_cost_usd": 0.0000001})
    got = cli("run", str(cfg), "--no-progress")
    assert got.returncode == 2, got.stdout + got.stderr
    text = " ".join(got.stderr.split())
    assert "budget.max_cost_usd" in text and "'o1' has no price" in text, text
    assert "judge.prices" in text and "budget.max_judge_tokens" in text, text  # how to fix it, both ways
    assert sim.stats.requests == 0 and not (tmp_path / "run").exists()


def test_the_simulator_under_a_model_name_of_its_own_is_refused_too(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, {"provider": "simulator"}, {"max_cost_usd": 5})
    assert cli("run", str(cfg), "--no-progress", "--set", "judge.model=my-local-model").returncode == 2
    panel = write_config(tmp_path, {"provider": "simulator", "models": ["gpt-4o-mini", "my-local-model"]}, {"max_cost_usd": 5})
    got = cli("run", str(panel), "--no-progress")
    assert got.returncode == 2 and "'my-local-model' has no price" in " ".join(got.stderr.split()), got.stderr


def test_prices_given_in_the_config_make_the_cap_hold(simulator: Callable[..., SimulatorThread], tmp_path: Path) -> None:
    sim = simulator()
    judge = {"provider": "openai", "model": "o1", "base_url": sim.url + "/v1", "api_key_env": None,
             "prices": {"o1": {"input": 15.0, "output": 60.0}}}
    got = cli("run", str(write_config(tmp_path, judge, {"max_cost_usd": 0.0000001})), "--no-progress")
    assert got.returncode in (0, 1), got.stderr
    statuses = [json.loads(line)["status"] for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert statuses == ["skipped_budget"] * 3 and sim.stats.requests == 0


def test_estimate_says_an_unpriced_models_cost_is_unknown(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, {"provider": "simulator", "model": "my-local-model"}, {"max_judge_tokens": 100000})
    got = cli("estimate", str(cfg))
    assert got.returncode == 0, got.stderr
    text = " ".join(got.stdout.split())
    assert "cost unknown (no price for 'my-local-model'" in text and "$0.0000" not in text, text
    capped = write_config(tmp_path, {"provider": "simulator", "model": "my-local-model"}, {"max_cost_usd": 1})
    refused = cli("estimate", str(capped))
    assert refused.returncode == 2 and "budget.max_cost_usd" in refused.stderr, refused.stdout + refused.stderr


def test_a_run_on_an_unpriced_model_says_its_cost_is_unknown(tmp_path: Path) -> None:
    got = cli("run", str(write_config(tmp_path, {"provider": "simulator", "model": "my-local-model"}, {})), "--no-progress")
    assert got.returncode == 0, got.stderr
    text = " ".join(got.stdout.split())
    assert "cost unknown (no price for 'my-local-model'" in text and "$0.0000" not in text, text


def test_a_variant_named_like_a_cheaper_family_is_unpriced_and_a_dated_snapshot_is_not(tmp_path: Path) -> None:
    capped = write_config(tmp_path, {"provider": "simulator"}, {"max_cost_usd": 1})
    for variant in ("o3-pro", "gpt-5-pro", "o3-deep-research", "gpt-4ox"):
        got = cli("estimate", str(capped), "--set", f"judge.model={variant}")
        assert got.returncode == 2 and f"'{variant}' has no price" in " ".join(got.stderr.split()), got.stdout + got.stderr
    for snapshot in ("gpt-4o-mini-2024-07-18", "claude-sonnet-4-20250514", "gpt-4o-2024-05-13"):
        assert cli("estimate", str(capped), "--set", f"judge.model={snapshot}").returncode == 0, snapshot
    from tracejudge.llm.prices import price_for

    # A snapshot priced apart from its family has its own entry.
    dated = price_for("gpt-4o-2024-05-13")
    assert dated is not None and (dated.input, dated.output) == (5.0, 15.0)
    assert price_for("gpt-4o-2024-08-06") == price_for("gpt-4o")


def test_an_unpriced_models_dollars_are_null_in_the_summary_and_unknown_wherever_shown(tmp_path: Path) -> None:
    # summary.json said `judge.cost_usd: 0.0`: whatever reads it (compare, a dashboard, a cost check of one's own) saw a free run.
    cfg = write_config(tmp_path, {"provider": "simulator", "model": "my-local-model"}, {})
    assert cli("run", str(cfg), "--no-progress").returncode == 0
    run = tmp_path / "run"
    judge = json.loads((run / "summary.json").read_text())["judge"]
    assert judge["requests"] == 3 and judge["cost_usd"] is None and judge["sync_equivalent_usd"] is None, judge
    report = " ".join((run / "report.md").read_text().split())
    assert "cost unknown (no price for 'my-local-model'; give one under judge.prices)" in report and "$0.0000" not in report, report
    # A later segment adds its requests to the earlier one's: the sum is still unknown, not the new segment's dollars.
    write_cases(tmp_path / "c.jsonl", 5)
    assert cli("run", str(cfg), "--no-progress", "--force").returncode == 0
    judge = json.loads((run / "summary.json").read_text())["judge"]
    assert judge["requests"] == 5 and judge["cost_usd"] is None, judge
    rebuilt = cli("report", str(run))
    assert rebuilt.returncode == 0 and "cost unknown (no price for 'my-local-model'" in " ".join(rebuilt.stdout.split()), rebuilt.stderr
    (tmp_path / "priced").mkdir()
    priced = write_config(tmp_path / "priced", {"provider": "simulator"}, {})
    assert cli("run", str(priced), "--no-progress").returncode == 0
    compared = cli("compare", str(tmp_path / "priced" / "run"), str(run))
    assert compared.returncode in (0, 1) and "Traceback" not in compared.stderr, compared.stderr
    with view_server(str(run)) as url, urllib.request.urlopen(url + "/", timeout=60) as reply:
        page = reply.read().decode()
    assert "<th>cost usd</th><td class=num>unknown (no price)</td>" in page, page


def test_a_panel_model_without_a_price_makes_the_panels_dollars_unknown(tmp_path: Path) -> None:
    got = cli("run", str(write_config(tmp_path, {"provider": "simulator", "models": ["gpt-4o-mini", "my-local-model"]}, {})), "--no-progress")
    assert got.returncode == 0, got.stdout + got.stderr
    judge = json.loads((tmp_path / "run" / "summary.json").read_text())["judge"]
    models = judge["panel"]["models"]
    assert judge["cost_usd"] is None and models["simulator:my-local-model"]["cost_usd"] is None, judge
    assert models["simulator:gpt-4o-mini"]["cost_usd"] > 0, models  # the priced member's own dollars stay known
    text = " ".join(got.stdout.split())
    assert "cost unknown (no price for 'simulator:my-local-model'; give one under judge.prices)" in text, text
    assert "simulator:my-local-model 3 requests cost unknown" in text, text



def test_a_panel_of_priced_members_is_priced_whatever_the_sections_own_model(tmp_path: Path) -> None:
    # The section's own model judges nothing beside a panel: a price missing for it refused the dollar cap, and the
    # terminal and report.md said "cost unknown (no price for 'qwen-local')" while summary.json had the dollars.
    judge = {"provider": "simulator", "model": "qwen-local", "models": ["gpt-4o-mini", "gpt-4o"]}
    got = cli("run", str(write_config(tmp_path, judge, {"max_cost_usd": 5})), "--no-progress")
    assert got.returncode == 0, got.stdout + got.stderr
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())["judge"]
    assert summary["priced"] is True and summary["cost_usd"] > 0, summary
    assert all(m["priced"] for m in summary["panel"]["models"].values()), summary["panel"]["models"]
    assert "cost unknown" not in got.stdout and "no price" not in (tmp_path / "run" / "report.md").read_text()


def test_a_shard_with_unknown_dollars_makes_the_merged_dollars_unknown(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, {"provider": "simulator", "model": "my-local-model"}, {})
    cache = ("--set", "cache.enabled=true", "--set", f"cache.dir={tmp_path / 'cache'}")
    assert cli("run", str(cfg), "--shard", "1/2", "--no-progress", *cache).returncode == 0
    shutil.rmtree(tmp_path / "run-shard-1-of-2")
    assert cli("run", str(cfg), "--shard", "1/2", "--no-progress", *cache).returncode == 0  # answered whole by the cache: $0, known
    assert cli("run", str(cfg), "--shard", "2/2", "--no-progress", *cache).returncode == 0
    shards = [json.loads((tmp_path / f"run-shard-{i}-of-2" / "summary.json").read_text())["judge"] for i in (1, 2)]
    assert (shards[0]["requests"], shards[0]["cost_usd"]) == (0, 0.0) and shards[1]["requests"] > 0, shards
    merged = cli("report", str(tmp_path / "run-shard-1-of-2"), str(tmp_path / "run-shard-2-of-2"))
    assert merged.returncode == 0, merged.stdout + merged.stderr
    judge = json.loads((tmp_path / "run" / "summary.json").read_text())["judge"]
    assert judge["requests"] == shards[1]["requests"] and judge["cost_usd"] is None, judge
