"""`judge.simulator.noise: {MODEL: q}` keys: a panel member as the config writes it (`simulator:a`) means the model
`a`, and a key naming no model of the run is a config error, not silently ignored.

Both used to be ignored: with `judge.models: [simulator:a, simulator:b]` only the bare `a` had an effect, so the key
written as every output names the member, and a typo, left the judge noiseless without a word. Real runs against the
simulator over HTTP on 127.0.0.1, and real CLI processes for the config errors (the style of test_config_mistakes.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from test_config_mistakes import cli, config_error, write
from test_judge_samples_panel import run, write_cases

MODELS = ["simulator:a", "simulator:b"]


def member_answers(rows: list[dict[str, Any]], model: str) -> dict[tuple[str, str, str], str]:
    """Every yes/no answer `model` gave in the panel's results, by (case, metric, question)."""
    return {(r["case_id"], k, q): a for r in rows for k, s in r["scores"].items()
            for q, a in s["details"]["panel"]["models"][model]["answers"].items()}


def test_a_prefixed_key_flips_that_member_as_the_bare_key_does(tmp_path: Path) -> None:
    cases = write_cases(tmp_path / "cases.jsonl", 10)
    _, prefixed = run(tmp_path, cases, "prefixed", models=MODELS, sim={"noise": {"simulator:a": 1.0}})
    a, b = member_answers(prefixed, "simulator:a"), member_answers(prefixed, "simulator:b")
    assert a.keys() == b.keys() and len(a) >= 40
    # Both members share the simulator's truth; noise 1 flips every answer of `a` and none of `b`'s.
    assert all(a[k] != b[k] for k in a), sum(a[k] == b[k] for k in a)
    _, bare = run(tmp_path, cases, "bare", models=MODELS, sim={"noise": {"a": 1.0}})
    assert member_answers(bare, "simulator:a") == a and member_answers(bare, "simulator:b") == b


def test_a_key_naming_no_model_is_a_config_error(tmp_path: Path) -> None:
    cfg = write(tmp_path, "metrics: [{type: TaskCompletion}]\n"
                          "judge:\n"
                          "  provider: simulator\n"
                          "  models: [simulator:a, simulator:b, openai:gpt-4o]\n"
                          "  simulator:\n"
                          "    noise:\n"
                          "      simulator:a: 0.3\n"
                          "      bogus: 0.2\n"
                          "      openai:gpt-4o: 0.1\n"
                          "      '*': 0.1\n")
    lines = config_error(cli("run", str(cfg), cwd=tmp_path)).splitlines()[1:]
    assert len(lines) == 2, lines  # `simulator:a` and `*` are fine
    bogus, openai = lines
    assert bogus.startswith(f"{cfg}:9: judge.simulator.noise.bogus: 'bogus' names no model of this run"), bogus
    assert openai.startswith(f"{cfg}:10: judge.simulator.noise.openai:gpt-4o: "), openai
    assert "provider openai, which the simulator does not answer" in openai
    for line in lines:  # the models a key could name
        assert "'simulator:a', 'simulator:b', 'gpt-4o-mini'" in line and "'*' for every model" in line
    assert not (tmp_path / "runs").exists()  # refused before a run directory was made


def test_the_judge_model_the_wildcard_and_a_near_miss(tmp_path: Path) -> None:
    ok = write(tmp_path, "metrics: [{type: TaskCompletion}]\n"
                         "judge: {provider: simulator, model: m, samples: 1, simulator: {noise: {m: 0.2, 'simulator:m': 0.2, '*': 0.1}}}\n"
                         "run: {dir: out}\n")
    proc = cli("run", str(ok), cwd=tmp_path)
    assert proc.returncode in (0, 1) and "config error" not in proc.stderr, proc.stderr
    typo = write(tmp_path, "metrics: [{type: TaskCompletion}]\n"
                           "judge: {provider: simulator, models: [simulator:alpha, simulator:beta], simulator: {noise: {alpah: 0.2}}}\n")
    [line] = config_error(cli("run", str(typo), cwd=tmp_path)).splitlines()[1:]
    assert line.startswith(f"{typo}:3: judge.simulator.noise.alpah: ") and line.endswith("did you mean alpha?"), line
    # One model given two values under its two spellings: which one holds would be a guess.
    both = write(tmp_path, "metrics: [{type: TaskCompletion}]\n"
                           "judge: {provider: simulator, models: [simulator:a], simulator: {noise: {a: 0.2, 'simulator:a': 0.3}}}\n")
    [line] = config_error(cli("run", str(both), cwd=tmp_path)).splitlines()[1:]
    assert "judge.simulator.noise" in line and "model 'a' is given two values (0.2 and 0.3)" in line, line


def test_a_noise_outside_0_to_1_is_a_config_error() -> None:
    # A probability of flipping an answer: 1.5, -0.2 or NaN ran as if it were one (agreement and position_bias refused them).
    import math

    import pytest
    from pydantic import ValidationError
    from tracejudge.core.judge_config import SimulatorOptions

    for bad in (1.5, -0.2, {"a": 1.5}, {"*": -1}):
        with pytest.raises(ValidationError, match="a probability from 0 to 1"):
            SimulatorOptions(noise=bad)
    with pytest.raises(ValidationError, match=r"not NaN \(not a number\)"):  # (said as what it is: NaN fails every bound)
        SimulatorOptions(noise=math.nan)
    assert SimulatorOptions(noise={"simulator:a": 1.0, "*": 0.0}).noise == {"a": 1.0, "*": 0.0}
