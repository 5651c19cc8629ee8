"""Every config README.md shows is a file in examples/ and runs as written (so README and examples cannot drift),
and the bench output README shows is what its command prints (rows that vary with timing are marked in README).

The YAML blocks are read from README.md itself. A block that is a whole config
(it has a `dataset:`) starts with the comment `# examples/NAME.yaml`; the file must
hold exactly the block, and `tracejudge run examples/NAME.yaml` must PASS. Each
run goes to a temporary `--run-dir` from a temporary working directory, so the
config's own relative paths (data, user modules) are what make it work.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
TJ = Path(sys.executable).with_name("tracejudge")
LABEL = re.compile(r"^# (examples/[\w/]+\.yaml)\b")


def _yaml_blocks() -> list[str]:
    return re.findall(r"```yaml\n(.*?)```", (REPO / "README.md").read_text(encoding="utf-8"), re.S)


def _examples() -> dict[str, str]:
    found = {}
    for block in _yaml_blocks():
        m = LABEL.match(block)
        if m:
            assert m.group(1) not in found, f"two README blocks claim {m.group(1)}"
            found[m.group(1)] = block
    return found


def test_every_config_block_is_an_example_file() -> None:
    for block in _yaml_blocks():
        data = yaml.safe_load(block)
        if isinstance(data, dict) and "dataset" in data:
            assert LABEL.match(block), f"a README config block names no examples/ file:\n{block}"
    on_disk = {p.relative_to(REPO).as_posix() for p in (REPO / "examples").glob("*.yaml")}
    assert on_disk == set(_examples()), "every examples/*.yaml is shown in README.md, and every labelled block exists"


@pytest.mark.parametrize("path", sorted(_examples()))
def test_readme_example_runs_as_written(path: str, tmp_path: Path) -> None:
    block = _examples()[path]
    assert (REPO / path).read_text(encoding="utf-8") == block, f"{path} differs from its README block"
    shared = [m for m in re.findall(r"\.\./\.\./shared/data/[^\s,}]+", block) if not (REPO / "examples" / m).exists()]
    if shared:
        pytest.skip(f"data not found beside the repository: {shared[0]}")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    proc = subprocess.run([str(TJ), "run", str(REPO / path), "--run-dir", str(tmp_path / "run"), "--no-progress"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "verdict: PASS" in proc.stdout and "invalid_input" not in proc.stdout


def _rows(text: str) -> dict[str, str]:
    """A bench table's rows: figure → value, continuation lines joined."""
    rows: dict[str, str] = {}
    last = ""
    for line in text.splitlines():
        if not line.startswith("│"):
            continue
        figure, value = (part.strip() for part in line.strip("│").split("│", 1))
        if figure:
            last = figure
            rows[last] = value
        else:
            rows[last] += " " + value
    return rows


# Rows bench prints only when they happened: their presence depends on the machine's load, not on the tool.
_EVENT_ROWS = {"rate_limited", "timeouts", "errors", "server errors", "retries"}


def test_readme_bench_output_is_what_the_command_prints(tmp_path: Path) -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    m = re.search(r"<!-- output of the command above; rows whose figures vary from run to run \(timing, load\): (.*?) -->\n```text\n(.*?)```", readme, re.S)
    assert m is not None
    varying = {x.strip() for x in m.group(1).split(", ")} - {""}
    shown = _rows(m.group(2))
    sim = subprocess.Popen([str(TJ), "simulate", "--rpm", "500", "--tpm", "400000", "--latency-ms", "400", "--port", "0"],
                           stdout=subprocess.PIPE, text=True)
    try:
        line = sim.stdout.readline() if sim.stdout else ""
        url = re.search(r"http://127\.0\.0\.1:\d+", line).group(0)
        env = {**os.environ, "COLUMNS": "100"}
        proc = subprocess.run([str(TJ), "bench", "configs/demo.yaml", "--provider", "openai", "--base-url", url + "/v1", "--requests", "400",
                               "--duration", "20", "--set", f"cache.dir={tmp_path / 'cache'}"], cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    finally:
        sim.terminate()
        sim.wait(timeout=30)
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = _rows(proc.stdout)
    # The same figures in the same order; a busy machine may add rows for what it provoked (429s, timeouts, errors).
    assert [k for k in got if k in shown] == list(shown), list(got)
    assert set(got) - set(shown) <= _EVENT_ROWS, set(got) - set(shown)
    for figure, value in shown.items():
        if figure not in varying:
            assert got[figure] == value, figure
    # Varying rows keep what does not vary: the sweep's cases and requests, counted from the dataset and the cache.
    assert got["full sweep"].split(" requests to send")[0] == shown["full sweep"].split(" requests to send")[0]
    assert got["sync"].split(",")[0] == shown["sync"].split(",")[0] and got["batch"].split(",")[0] == shown["batch"].split(",")[0]
    assert proc.stdout.strip().splitlines()[-1].startswith("limits: {rpm: 500, tpm: 400000, max_in_flight: ")
