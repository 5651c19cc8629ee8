"""Every config README.md shows is a file in examples/ and runs as written (so README and examples cannot drift).

(README's shell blocks, and the output it shows for them, are run by `tests/test_readme_blocks.py`.)

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
import _forkserver

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
    proc = _forkserver.run([str(TJ), "run", str(REPO / path), "--run-dir", str(tmp_path / "run"), "--no-progress"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "verdict: PASS" in proc.stdout and "invalid_input" not in proc.stdout
