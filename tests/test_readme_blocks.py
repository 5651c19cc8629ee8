"""Every shell block of README.md runs, in README order, in a fresh copy of the repository, as a user following it would.

The copy is clone-like (tracked and unignored files only: no runs, no judge cache) with the
shared data at `../shared/data`, as README expects. Blocks run one after another from the copy's
root with bash (`set -eo pipefail`), so a block may rely on what the ones before it made
(`runs/demo` for the reports, `examples/data` for `init`). A block that exits non-zero fails the
test; where README shows output, what the block printed must match it (`tests/readme_blocks.py`
says how varying figures are marked). Blocks README marks as skipped are listed, each with its
reason, by `test_readme_block_is_skipped_for_a_reason` (`pytest -rs` prints them).
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import DATA
from readme_blocks import PORT, Block, copy_layout, mismatch, parse
import _forkserver

REPO = Path(__file__).resolve().parents[1]
BLOCKS = parse((REPO / "README.md").read_text(encoding="utf-8"))
BLOCK_TIMEOUT_S = 300


def test_readme_shows_shell_blocks_and_marks_what_it_skips() -> None:
    # The set-up blocks come first and the demo one runs: a README whose blocks were all skipped would test nothing.
    assert BLOCKS and BLOCKS[0].kind == "installed" and "tracejudge run configs/demo.yaml" in BLOCKS[0].script
    assert sum(b.kind == "run" for b in BLOCKS) >= 5
    for block in BLOCKS:
        if block.kind == "skip":
            assert block.expected is None, f"{block.where}: output shown for a block that is never run cannot be checked"


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.kind == "skip"], ids=lambda b: f"line{b.line}")
def test_readme_block_is_skipped_for_a_reason(block: Block) -> None:
    pytest.skip(f"{block.where}: {block.reason}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_listening(port: int, proc: subprocess.Popen[bytes], where: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"{where}: the background command exited with status {proc.returncode}"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"{where}: nothing listens on its port after 60 s")


def _env() -> dict[str, str]:
    """A user's shell: this environment's `python3` and `tracejudge` first on PATH, no provider keys,
    no COLUMNS (output is piped, so tables are 100 columns as README shows them)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENAI_", "ANTHROPIC_", "PYTEST_", "PYTHONPATH", "COLUMNS", "LINES"))}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def test_readme_shell_blocks_run_as_written(tmp_path: Path) -> None:
    if not DATA.is_dir():
        pytest.skip(f"the shared data README reads is not beside the repository ({DATA.name} not found)")
    root = copy_layout(REPO, DATA, tmp_path)
    env = _env()
    ports = {p: str(_free_port()) for b in BLOCKS if b.kind == "background" for p in PORT.findall(b.script)}

    def localise(script: str) -> str:
        return re.sub(r"\b(" + "|".join(ports) + r")\b", lambda m: ports[m.group(1)], script) if ports else script

    background: list[subprocess.Popen[bytes]] = []
    try:
        for block in BLOCKS:
            if block.kind == "skip":
                continue
            script = "set -eo pipefail\n" + localise(block.script)
            if block.kind == "background":
                with open(tmp_path / f"background-{block.line}.log", "wb") as log:  # the child keeps its own descriptor
                    proc = _forkserver.popen(["bash", "-c", script], cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT,
                                            start_new_session=True)
                background.append(proc)
                for port in PORT.findall(block.script):
                    _wait_listening(int(ports[port]), proc, block.where)
                continue
            began = time.monotonic()
            done = _forkserver.run(["bash", "-c", script], cwd=root, env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True, timeout=BLOCK_TIMEOUT_S)
            printed = done.stdout
            print(f"{block.where}: {time.monotonic() - began:.1f} s")  # with -s: where the test's time goes
            for readme_port, port in ports.items():
                printed = re.sub(rf"\b{port}\b", readme_port, printed)
            assert done.returncode == 0, f"{block.where} exited with status {done.returncode}:\n{block.script}\n{printed[-3000:]}"
            if block.expected is not None:
                wrong = mismatch(block.expected, printed)
                assert wrong is None, f"{block.where}: the output README shows is not what it printed: {wrong}"
    finally:
        for proc in background:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def test_shown_output_placeholders_match_only_what_they_stand_for() -> None:
    shown = ["judge bench: at http://127.0.0.1:8787/v1", "│ latency │ <n> ms / <n> ms │", "…", "│ spent   │ $<n> (stopped by …) │",
             "limits: {rpm: 500}"]
    printed = ("judge bench: at http://127.0.0.1:8787/v1   \n│ latency │ 430 ms / 1,449 ms          │\n│ errors  │ rate_limited 1 │\n"
               "│         │ HTTP 429 │\n│ spent   │ $0.0652 (stopped by duration) │\nlimits: {rpm: 500}\n\n")
    assert mismatch(shown, printed) is None
    assert mismatch(shown, printed.replace("\n│ errors  │ rate_limited 1 │\n│         │ HTTP 429 │", "")) is None  # `…` alone: no line too
    wrong = mismatch(shown, printed.replace("rpm: 500", "rpm: 600"))
    assert wrong is not None and "shown line 5, 'limits: {rpm: 500}'" in wrong
    assert mismatch(shown, printed.replace("430 ms", "fast")) is not None  # <n> is a number, nothing else
    assert mismatch(shown, printed + "one more line\n") is not None


def test_markers_are_read_from_the_line_before_the_fence() -> None:
    text = ("## Set-up\n\n<!-- readme-test: installed (the environment) -->\n```bash\npython3 -m pip install -e . && tracejudge run x.yaml\n```\n"
            "\n<!-- readme-test: skip (serves forever) -->\n```sh\ntracejudge view\n```\n\n## Bench\n"
            "```console\n$ tracejudge list formats\nnative  one case per line\n```\n```bash\necho hi\n```\n\n```text\nhi\n```\n")
    installed, skipped, console, plain = parse(text)
    assert (installed.kind, installed.script, installed.section) == ("installed", "tracejudge run x.yaml\n", "Set-up")
    assert (skipped.kind, skipped.reason) == ("skip", "serves forever")
    assert (console.script, console.expected, console.section) == ("tracejudge list formats\n", ["native  one case per line"], "Bench")
    assert (plain.kind, plain.expected) == ("run", ["hi"])
    with pytest.raises(ValueError, match=r"README.md:3 \(top\): a skipped block says why"):
        parse("\n<!-- readme-test: skip -->\n```bash\nls\n```\n")
    with pytest.raises(ValueError, match="unknown readme-test marker 'skipp'"):
        parse("<!-- readme-test: skipp (typo) -->\n```bash\nls\n```\n")
