"""Edges of the command line a first user meets: a closed stdout pipe, alias bombs, option names in errors."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path
import _forkserver

REPO = Path(__file__).resolve().parent.parent
DEMO = REPO / "configs" / "demo.yaml"
TRACEJUDGE = Path(sys.executable).with_name("tracejudge")


def _crash_logs() -> set[Path]:
    return set(Path(tempfile.gettempdir()).glob("tracejudge-crash-*.log"))


def test_a_reader_that_closes_stdout_ends_the_command_quietly_with_141():
    before = _crash_logs()
    proc = _forkserver.popen([str(TRACEJUDGE), "extract", str(DEMO), "-o", "-"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()  # like `| head -1`: the reader goes away while the writer has more to say
    stderr = proc.stderr.read()
    assert proc.wait(timeout=120) == 141, stderr
    assert first.startswith("{")
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr
    assert _crash_logs() == before


def _limit_memory() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))  # 1 GiB: an expanded alias bomb would need more


def test_a_yaml_alias_bomb_is_refused_before_it_is_built(tmp_path):
    # Nine levels of nine aliases each: 9**9 leaves from ten short lines, under keys the config does not know.
    names = "abcdefghi"
    lines = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    lines += [f"{n}: &{n} [{', '.join([f'*{prev}'] * 9)}]" for prev, n in zip(names, names[1:], strict=False)]
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("\n".join(lines) + "\n", encoding="utf-8")
    got = _forkserver.run([str(TRACEJUDGE), "estimate", str(bomb)], capture_output=True, text=True,
                         timeout=60, preexec_fn=_limit_memory)
    assert got.returncode == 2, got.stderr
    assert str(bomb) in got.stderr and "aliases expand to more than 1,000,000 nodes" in got.stderr, got.stderr


def test_a_config_with_a_few_aliases_still_loads(tmp_path, data_dir):
    from tracejudge.core.config import load_config

    cfg = tmp_path / "aliased.yaml"
    cfg.write_text(f"""\
dataset:
  path: {data_dir / "tau_bench/historical_trajectories/gpt-4o-airline.json"}
  format: tau-bench
metrics:
  - {{type: ToolCalls, name: writes_exact, arguments: exact, exclude_tools: &reads ["get_*", "search_*", "list_*"]}}
  - {{type: ToolCalls, name: writes_name, arguments: ignore, exclude_tools: *reads}}
""", encoding="utf-8")
    config = load_config(cfg)
    assert [m["name"] for m in config.metrics] == ["writes_exact", "writes_name"]
    assert config.metrics[0]["exclude_tools"] == config.metrics[1]["exclude_tools"] == ["get_*", "search_*", "list_*"]


def test_a_bad_shard_option_is_named_as_typed(tmp_path):
    got = _forkserver.run([str(TRACEJUDGE), "run", str(DEMO), "--shard", "3/2", "--set", f"run.dir={tmp_path / 'r'}"],
                         capture_output=True, text=True, timeout=120)
    assert got.returncode == 2, got.stderr
    assert "--shard 3/2: run.shard:" in got.stderr and "--set run.shard" not in got.stderr, got.stderr
    assert not (tmp_path / "r").exists() and not list(tmp_path.glob("r-shard-*"))


def test_the_native_format_points_to_the_readme_not_a_missing_design_doc(tmp_path):
    listed = _forkserver.run([str(TRACEJUDGE), "list", "formats"], capture_output=True, text=True, timeout=60)
    assert listed.returncode == 0 and "DESIGN" not in listed.stdout, listed.stdout
    assert 'README, "Input formats"' in listed.stdout
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "## Input formats" in readme and "**`native`** — one case per JSONL line, in tracejudge's own record shape" in readme
    made = _forkserver.run([str(TRACEJUDGE), "init", "-o", str(tmp_path / "start.yaml")], capture_output=True, text=True, timeout=60)
    assert made.returncode == 0, made.stderr
    assert "DESIGN" not in (tmp_path / "start.yaml").read_text(encoding="utf-8")


def test_init_for_a_format_without_model_output_says_it_needs_a_live_target(tmp_path):
    for fmt in ("tau-bench-tasks", "bfcl"):
        got = _forkserver.run([str(TRACEJUDGE), "init", "--format", fmt, "-o", str(tmp_path / f"{fmt}.yaml")],
                             capture_output=True, text=True, timeout=60)
        assert got.returncode == 2, got.stderr
        assert "invalid choice" not in got.stderr and "no model output" in got.stderr and "live target" in got.stderr, got.stderr
        example = {"tau-bench-tasks": "examples/agents/airline.yaml", "bfcl": "examples/agents/bfcl.yaml"}[fmt]
        assert example in got.stderr and (REPO / example).is_file()  # (bfcl was sent to the airline agent, which cannot answer it)
        assert not (tmp_path / f"{fmt}.yaml").exists()


def test_report_given_the_run_config_names_the_run_directory_it_writes(tmp_path: Path) -> None:
    # `tracejudge report configs/demo.yaml` (the command `run` took) asked "is it a run directory?" and no more.
    cfg = tmp_path / "nightly.yaml"
    cfg.write_text("dataset: {path: cases.jsonl, format: native}\nmetrics: [{type: MaxToolCalls, max_calls: 3}]\n"
                   "run: {dir: runs/nightly}\n")
    done = _forkserver.run([sys.executable, "-m", "tracejudge", "report", str(cfg)], capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert f"a run config, not a run directory: its run.dir is {tmp_path / 'runs' / 'nightly'}" in done.stderr, done.stderr
    broken = tmp_path / "broken.yaml"
    broken.write_text("dataset: [\n")
    done = _forkserver.run([sys.executable, "-m", "tracejudge", "report", str(broken)], capture_output=True, text=True, timeout=60)
    assert "a run config, not a run directory: give the directory its run.dir names" in done.stderr, done.stderr


def test_a_file_of_a_run_directory_given_for_it_names_the_directory(tmp_path: Path) -> None:
    # `report runs/nightly/results.jsonl` (tab completion one level too deep) said "no results.jsonl here".
    (tmp_path / "cases.jsonl").write_text('{"id": "c1", "trace": {"steps": []}}\n')
    cfg = tmp_path / "nightly.yaml"
    cfg.write_text("dataset: {path: cases.jsonl, format: native}\nmetrics: [{type: MaxToolCalls, max_calls: 3}]\nrun: {dir: runs/nightly}\n")
    assert _forkserver.run([sys.executable, "-m", "tracejudge", "run", str(cfg)], capture_output=True, timeout=120).returncode == 0
    run = tmp_path / "runs" / "nightly"
    for argv in (["report", str(run / "results.jsonl")], ["compare", str(run / "summary.json"), str(run)]):
        done = _forkserver.run([sys.executable, "-m", "tracejudge", *argv], capture_output=True, text=True, timeout=60)
        assert done.returncode == 2 and f"a file of the run directory {run}, not a run directory: give {run}" in done.stderr, done.stderr
    gone = _forkserver.run([sys.executable, "-m", "tracejudge", "report", str(run / "missing")], capture_output=True, text=True, timeout=60)
    assert "no such run directory" in gone.stderr  # a path that is no file keeps its own message
