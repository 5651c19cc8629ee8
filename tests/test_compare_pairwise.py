"""`tracejudge compare A --vs B --judge CONFIG`: pairwise verdicts asked in both orders cancel a judge's position bias.

The simulator's pairwise judge prefers the run of higher hidden quality (a hash of its trajectory) and, with
`position_bias` b, answers "the first shown" with probability b whatever the runs.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml
from scipy.stats import binomtest
from tracejudge.core.config import load_config, validate_config
from tracejudge.engine import runner
from tracejudge.entrypoints.cli import main
from tracejudge.stages.comparison.pairwise import compare_pairwise

N = 120


def make_run(tmp: Path, name: str, variant: str) -> Path:
    cases = tmp / f"{name}.jsonl"
    with open(cases, "w") as fh:
        for i in range(N):
            steps = [{"tool_calls": [{"name": "search", "arguments": {"day": i}, "result": f"{variant} flights {i}"}]}, {"output": f"{variant} booked {i}"}]
            fh.write(json.dumps({"id": f"c{i}", "input": f"Book a flight on day {i}", "expected_output": f"booked {i}", "trace": {"steps": steps}}) + "\n")
    cfg = {"dataset": {"path": str(cases)}, "metrics": [{"type": "Contains"}], "run": {"dir": str(tmp / name)}}
    anyio.run(lambda: runner.run(validate_config(cfg)))
    return tmp / name


def judge_config(tmp: Path, bias: float, name: str, data: Path) -> Path:
    """A config whose judge compares (its dataset and metrics are any valid ones: only `judge:` is used)."""
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"dataset": {"path": str(data)}, "metrics": [{"type": "TaskCompletion"}],
                                    "judge": {"provider": "simulator", "model": "gpt-4o-mini", "simulator": {"position_bias": bias},
                                              "pairwise": {"rubric": "Which run booked the flight the user asked for?"}},
                                    "cache": {"dir": str(tmp / f"cache-{name}")}, "run": {"dir": str(tmp / f"run-{name}")}}))
    return path


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    tmp = tmp_path_factory.mktemp("pairwise")
    a, b = make_run(tmp, "a", "alpha"), make_run(tmp, "b", "beta")
    return tmp, a, b


def test_both_orders_cancel_the_position_bias_of_identical_runs(runs: tuple[Path, Path, Path], tmp_path: Path) -> None:
    tmp, a, _ = runs
    same = tmp_path / "a-again"
    shutil.copytree(a, same)
    b = 0.3
    res = compare_pairwise(a, same, load_config(judge_config(tmp_path, b, "same", tmp / "a.jsonl"), []))
    assert res.pairs == N and res.not_judged == 0
    # Shown one order only, the first run wins whenever the bias strikes; both orders leave identical runs level.
    assert res.win_rate == 0.5 and res.wins == res.losses == 0
    assert res.first_shown_win_rate > 0.5
    assert binomtest(res.flipped, N, b).pvalue > 0.01
    assert abs(res.first_shown_win_rate - (0.5 + res.position_bias_rate / 2)) < 1e-5


def test_pairwise_verdicts_match_the_unbiased_judge_where_both_orders_agree(runs: tuple[Path, Path, Path], tmp_path: Path) -> None:
    tmp, a, b_run = runs
    fair = compare_pairwise(a, b_run, load_config(judge_config(tmp_path, 0.0, "fair", tmp / "a.jsonl"), []), top=N)
    b = 0.3
    biased = compare_pairwise(a, b_run, load_config(judge_config(tmp_path, b, "biased", tmp / "a.jsonl"), []), top=N)
    assert fair.flipped == 0 and fair.wins + fair.losses + fair.ties == N and fair.wins > 0 and fair.losses > 0
    truth = {d["case_id"]: d["winner"] for d in fair.deciding}
    # A verdict both orders agree on is the fair judge's: the bias never decides a pair, it only costs decisions.
    assert all(truth.get(d["case_id"]) == d["winner"] for d in biased.deciding) and biased.deciding
    # Flips: a decided pair flips when the order against the first-shown winner is biased (b); a tie when either order is.
    tie = 1 - 0.95 ** 2  # the simulator calls runs whose qualities (uniform) differ by < 0.05 equal
    assert binomtest(biased.flipped, N, (1 - tie) * b + tie * (1 - (1 - b) ** 2)).pvalue > 0.01
    assert biased.wins <= fair.wins and biased.losses <= fair.losses  # flipped pairs become ties, never the other run's wins


def test_compare_judge_cli_gates_on_min_win_rate(runs: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tmp, a, b = runs
    cfg = judge_config(tmp_path, 0.1, "cli", tmp / "a.jsonl")
    assert main(["compare", str(a), "--vs", str(b), "--judge", str(cfg), "--min-win-rate", "0.99", "--json"]) == 1
    got: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert got["verdict"] == "FAIL" and got["pairs"] == N and got["judge"]["requests"] > 0
    assert main(["compare", str(a), str(b), "--judge", str(cfg), "--min-win-rate", "0.0"]) == 0
    out = capsys.readouterr().out
    assert "position bias" in out and "verdict: PASS" in out
    assert main(["compare", str(a), str(b), "--judge", str(tmp_path / "missing.yaml")]) == 2


def _pair(first_prompt: str | None, second_prompt: str | None) -> Any:
    from tracejudge.core.records import Case

    def run(prompt: str | None, said: str) -> dict[str, Any]:
        trace = {"steps": [{"output": said}], "output": said, "system_prompts": [{"text": prompt}] if prompt else []}
        return Case(id="c", input="Refund my ticket.", trace=trace).model_dump(mode="json")

    return Case(id="c|0|ab", input="Refund my ticket.", metadata={"pairwise": {"first": run(first_prompt, "Refunded."),
                                                                               "second": run(second_prompt, "No refund.")}})


def test_the_pairwise_judge_shows_each_runs_own_system_prompt_when_asked(tmp_path: Path) -> None:
    from tracejudge.stages.comparison.pairwise import pairwise_metric

    (tmp_path / "d.jsonl").write_text("")
    cfg = yaml.safe_load(judge_config(tmp_path, 0.5, "sys", tmp_path / "d.jsonl").read_text())
    cfg["judge"]["pairwise"]["include_system_prompt"] = True
    (tmp_path / "sys.yaml").write_text(yaml.safe_dump(cfg))
    metric = pairwise_metric(load_config(tmp_path / "sys.yaml", []))
    assert metric.include_system_prompt
    plan = metric.plan(_pair("Refunds need a receipt.", "Never refund."))
    text = plan.render(0)
    run1, run2 = text.split("\nRun 2:\n")
    assert "## System prompt\nRefunds need a receipt.\n" in run1 and "Never refund." not in run1, run1
    assert "## System prompt\nNever refund.\n" in run2 and "receipt" not in run2, run2
    assert plan.prompt_version.endswith(";system-prompt/1")
    # a run that recorded none shows none; the option off, neither run's prompt is shown and the prompt is as before
    assert "System prompt" not in metric.plan(_pair("Refunds need a receipt.", None)).render(0).split("\nRun 2:\n")[1]
    off = pairwise_metric(load_config(judge_config(tmp_path, 0.5, "off", tmp_path / "d.jsonl"), []))
    assert "System prompt" not in off.plan(_pair("Refunds need a receipt.", "Never refund.")).render(0)
    assert "include_system_prompt" not in load_config(tmp_path / "off.yaml", []).judge.model_dump()["pairwise"]  # (hashes as before)


def test_a_pairwise_include_system_prompt_that_is_no_boolean_is_a_config_error(tmp_path: Path) -> None:
    from tracejudge.core.errors import ConfigError

    (tmp_path / "d.jsonl").write_text("")
    cfg = yaml.safe_load(judge_config(tmp_path, 0.5, "bad", tmp_path / "d.jsonl").read_text())
    cfg["judge"]["pairwise"]["include_system_prompt"] = "yes"
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(cfg))
    with pytest.raises(ConfigError, match="judge.pairwise.include_system_prompt"):
        load_config(tmp_path / "bad.yaml", [])
