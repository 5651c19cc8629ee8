"""A user's own pytest run with the `peers` extra installed: what deepeval's auto-loaded plugin adds, and README's one-line opt-out.

deepeval registers a pytest plugin (entry point `deepeval`) wherever it is installed; it prints
"Running teardown with pytest sessionfinish..." into every session's output, and the pytest-asyncio
it brings adds an `asyncio: mode=…` header line. README tells users to put `-p no:deepeval -p
no:asyncio` in their addopts, as this repository's pyproject.toml does; this runs a throwaway
project both ways in a real `python -m pytest` process.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import _forkserver

# Found, not imported: the runs below are pytest processes of their own, and importing deepeval here cost every collecting worker seconds.
if importlib.util.find_spec("deepeval") is None:
    pytest.skip("the peers extra is not installed", allow_module_level=True)

NOISE = ("Running teardown with pytest sessionfinish", "asyncio: mode=")
OPT_OUT = "-p no:deepeval -p no:asyncio"


def _user_pytest(project: Path, addopts: str | None) -> str:
    (project / "test_mine.py").write_text("def test_sum():\n    assert 1 + 1 == 2\n", encoding="utf-8")
    ini = "[tool.pytest.ini_options]\n" + (f'addopts = "{addopts}"\n' if addopts else "")
    (project / "pyproject.toml").write_text(ini, encoding="utf-8")
    # The user's environment, not this suite's: no xdist worker variables or addopts of ours.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHONPATH"))}
    # Phoenix's client plugin (stores extra) is left out of both runs: its import alone costs ~13 s of CPU.
    done = _forkserver.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:phoenix"], cwd=project, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done.stdout + done.stderr


def test_peers_noise_in_a_users_pytest_and_the_readme_opt_out(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    (tmp_path / "quiet").mkdir()
    noisy = _user_pytest(tmp_path / "plain", None)
    assert all(n in noisy for n in NOISE), noisy  # what README says the extra adds
    quiet = _user_pytest(tmp_path / "quiet", OPT_OUT)
    assert not any(n in quiet for n in NOISE), quiet
    assert "1 passed" in quiet


def test_this_suite_and_readme_use_the_opt_out() -> None:
    repo = Path(__file__).resolve().parents[1]
    addopts = tomllib.loads((repo / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"]["ini_options"]["addopts"]
    assert OPT_OUT in addopts
    assert f'addopts = "{OPT_OUT}"' in " ".join((repo / "README.md").read_text(encoding="utf-8").split())
