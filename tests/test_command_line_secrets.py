"""A credential typed on the command line (`--set`) is masked wherever the command is shown or recorded, as the config's
own value is: the resume command on the verdict line, on stderr, in `report`, in checkpoint.json and manifest.json,
and the option a config error quotes.

A key pasted where `judge.api_key_env` names a variable (`--set judge.api_key_env=sk-proj-…`) and a URL's password
(`--set judge.base_url=http://ann:…@host/v1`) were recorded and printed in clear in the resume command of a stopped run;
a config error quoted `--set judge.api_key=sk-…` whole. Through the real command line in subprocesses, the run stopped
by SIGINT; the judge is the simulator the run starts on 127.0.0.1. The canaries are fake.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from tracejudge.llm.redact import MASK, redact_config
from tracejudge.llm.redact_command import MASKED_NOTE, masked_line, redact_option
from tracejudge.stages.aggregate.gate_judge import raised_command

from _runs import native_case, sigkill_when, write_config, write_dataset
import _forkserver

KEY = "sk-proj-" + "CmdLine0042abcdEFGH5678ijkl"
PASSWORD = "Hunt3r" + "CmdPass77"
SHAPELESS = "Xq7" + "Lm2Np9Rt4Vw8Yz3Bc6Df1Gh5Jk0Ms7"  # (a key of no known prefix: only its place says what it is)
N = 40


def _tracejudge(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return _forkserver.run([sys.executable, "-m", "tracejudge", *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def _setup(tmp: Path) -> None:
    write_dataset(tmp / "c.jsonl", [{**native_case(f"case-{i}", ["lookup"], ["lookup"]), "input": f"Find item {i}"}
                                          for i in range(N)])
    # A slow simulated judge and one case at a time: the stop lands with most cases not yet taken.
    write_config(tmp / "eval.yaml", tmp / "c.jsonl", tmp / "runs" / "eval", metrics=[{"type": "TaskCompletion"}],
                 judge={"provider": "simulator", "model": "gpt-4o-mini", "simulator": {"latency_ms": 150}},
                 limits={"max_in_flight": 1})


def _leaks(text: str) -> list[str]:
    return [s for s in (KEY, PASSWORD) if s in text]


def test_a_stopped_runs_resume_command_masks_what_its_set_options_held(tmp_path: Path) -> None:
    _setup(tmp_path)
    run_dir = tmp_path / "runs" / "eval"
    argv = [sys.executable, "-m", "tracejudge", "run", "eval.yaml", "--no-progress", "--set", f"judge.api_key_env={KEY}",
            "--set", f"judge.base_url=http://ann:{PASSWORD}@127.0.0.1:9/v1", "--set", "dataset.limit=30"]
    with open(tmp_path / "out.txt", "w") as out_fh, open(tmp_path / "err.txt", "w") as err_fh:
        proc = _forkserver.popen(argv, cwd=tmp_path, stdout=out_fh, stderr=err_fh, text=True)
        results = run_dir / "results.jsonl"
        sigkill_when(proc, lambda: results.exists() and results.read_bytes().count(b"\n") >= 1, "a first result", sig=signal.SIGINT)
    out, err = (tmp_path / "out.txt").read_text(), (tmp_path / "err.txt").read_text()
    assert proc.returncode == 130, err
    assert not _leaks(out) and not _leaks(err), (out, err)
    (verdict,) = [line for line in out.splitlines() if line.startswith("verdict: INTERRUPTED (resume with: ")]
    assert f"'judge.api_key_env={MASK}'" in verdict and f"'judge.base_url=http://ann:{MASK}@127.0.0.1:9/v1'" in verdict, verdict
    assert verdict.endswith(f"{MASKED_NOTE})") and "dataset.limit=30" in verdict, verdict  # (it cannot be run as printed: it says so)
    assert MASKED_NOTE in err

    # No file of the run directory holds either: the recorded command (checkpoint.json, manifest.json) is the masked one.
    written = {p.name: p.read_bytes().decode("utf-8", "replace") for p in run_dir.rglob("*") if p.is_file()}
    assert {"checkpoint.json", "manifest.json", "summary.json"} <= set(written), sorted(written)
    assert {name: _leaks(text) for name, text in written.items() if _leaks(text)} == {}
    manifest = json.loads(written["manifest.json"])
    assert manifest["command"]["line"].endswith(MASKED_NOTE) and manifest["config"]["judge"]["api_key_env"] == MASK

    report = _tracejudge(tmp_path, "report", str(run_dir))
    assert report.returncode == 130, report.stdout + report.stderr
    assert not _leaks(report.stdout + report.stderr), report.stdout
    assert f"'judge.api_key_env={MASK}'" in report.stdout and MASKED_NOTE in report.stdout, report.stdout


@pytest.mark.parametrize("option, secret", [
    (f"judge.api_key={KEY}", KEY),
    (f"judge.apikey={KEY}", KEY),
    (f"judge.api_key={SHAPELESS}", SHAPELESS),
    (f"run.processes=Bearer {SHAPELESS}", SHAPELESS),
    (f"judge.password={{{PASSWORD}", PASSWORD),  # (not YAML: PyYAML's message quotes the value)
    (KEY, KEY),  # (no `=`)
    (f"={KEY}", KEY),
    (f"metrics=[{{type: ToolCalls, password: {PASSWORD}}}]", PASSWORD),
])
def test_a_config_error_quotes_the_set_option_masked(tmp_path: Path, option: str, secret: str) -> None:
    _setup(tmp_path)
    got = _tracejudge(tmp_path, "run", "eval.yaml", "--no-progress", "--set", option)
    assert got.returncode != 0 and "config error" in got.stdout + got.stderr, got.stdout + got.stderr
    assert secret not in got.stdout + got.stderr and MASK in got.stderr, got.stderr


def test_a_value_that_is_no_equal_of_itself_is_no_secret() -> None:
    # `.nan` is unequal to itself, so it passed for a value the masking had changed: `--set judge.temperature=[REDACTED]`.
    assert redact_option("judge.temperature=.nan") == "judge.temperature=.nan"
    assert redact_option("judge.extra_body.x=.NaN") == "judge.extra_body.x=.NaN"
    assert redact_option(f"judge.api_key=.nan{KEY}") == f"judge.api_key={MASK}"


def test_the_recorded_config_masks_a_key_pasted_as_the_variables_name() -> None:
    # (the rule the command's `--set judge.api_key_env=…` is masked by: what an error hides of it, `variable_name`)
    masked = redact_config({"judge": {"api_key_env": SHAPELESS, "models": [{"api_key_env": "MY_JUDGE_KEY"}]}})
    assert masked == {"judge": {"api_key_env": MASK, "models": [{"api_key_env": "MY_JUDGE_KEY"}]}}


def test_a_command_recorded_in_clear_is_masked_as_read_and_a_masked_one_keeps_its_note() -> None:
    old = f"tracejudge run eval.yaml --set 'judge.base_url=http://ann:{PASSWORD}@h/v1' --set dataset.limit=2"
    got = masked_line(old)
    assert PASSWORD not in got and got.endswith(MASKED_NOTE) and masked_line(got) == got, got
    assert masked_line("tracejudge run eval.yaml --set dataset.limit=2") == "tracejudge run eval.yaml --set dataset.limit=2"
    # The budget check's command raises the caps inside the command, the note staying after it.
    raised = raised_command(got, {"max_cost_usd": 5.0})
    assert raised.endswith(f"--set 'budget.max_cost_usd=<more than 5>' {MASKED_NOTE}"), raised
