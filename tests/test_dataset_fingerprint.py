"""A folder dataset (OTel exports) is fingerprinted by its files: the viewer's "changed since the run" and the
resume's dataset check see a file added, removed or edited, and nothing else (not the folder's own size, not a touch)."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest
from helpers import DATA
from tracejudge.engine.dataset_fingerprint import changed_since, file_fingerprint, listing
from tracejudge.entrypoints.cli import main
from tracejudge.viewer.traces import CaseSource

HAND = DATA / "otel_genai" / "hand"
FILES = ["mcp_tool_call.json", "mcp_tool_call.truth.json", "openai_agents_handoff.json", "openai_agents_handoff.truth.json"]
pytestmark = pytest.mark.skipif(not HAND.is_dir(), reason=f"data not found: {HAND}")


def _setup(tmp_path: Path) -> tuple[Path, Path, Path]:
    folder = tmp_path / "exports"
    shutil.copytree(HAND, folder)
    for f in folder.iterdir():
        f.chmod(f.stat().st_mode | stat.S_IWUSR)  # the shared copy is read-only
    cfg = tmp_path / "eval.yaml"
    cfg.write_text(f"dataset: {{path: {folder}, format: otel, options: {{exclude: ['*.truth.json']}}}}\n"
                   "metrics: [{type: MaxToolCalls, max_calls: 10}]\n")
    return folder, cfg, tmp_path / "run"


def _run(cfg: Path, run_dir: Path) -> int:
    return main(["run", str(cfg), "--run-dir", str(run_dir), "--no-progress"])


def _note(run_dir: Path) -> str:
    manifest = json.loads((run_dir / "manifest.json").read_text())
    return CaseSource(run_dir, manifest).dataset()[2]


def _edit_keeping_size(path: Path) -> None:
    text = path.read_text()
    i = text.index('"', text.index('"name"') + 7) + 1  # the first letter of the first name's value
    path.write_text(text[:i] + ("X" if text[i] != "X" else "Y") + text[i + 1:])


def test_a_folder_run_is_not_changed_until_a_file_is(tmp_path: Path, capsys) -> None:
    folder, cfg, run_dir = _setup(tmp_path)
    assert _run(cfg, run_dir) == 0
    recorded = json.loads((run_dir / "manifest.json").read_text())["dataset"]["path"]
    assert sorted(recorded["files"]) == FILES and recorded["count"] == 4
    assert recorded["size"] == sum(f.stat().st_size for f in folder.iterdir()) != folder.stat().st_size
    assert "changed" not in _note(run_dir)

    # Touched, not changed (a checkout, a copy): the viewer hashes the file and finds it equal; a resume goes on.
    later = (folder / FILES[0]).stat().st_mtime_ns + 5_000_000_000
    os.utime(folder / FILES[0], ns=(later, later))
    assert "changed" not in _note(run_dir)
    assert _run(cfg, run_dir) == 0
    capsys.readouterr()

    _edit_keeping_size(folder / FILES[2])
    assert "changed since the run" in _note(run_dir)
    assert _run(cfg, run_dir) == 2
    err = capsys.readouterr().err
    assert f"dataset.path: folder {folder}: {FILES[2]} changed: same size" in " ".join(err.split())


@pytest.mark.parametrize("change", ["added", "removed"])
def test_a_file_added_or_removed_is_named(tmp_path: Path, capsys, change: str) -> None:
    folder, cfg, run_dir = _setup(tmp_path)
    assert _run(cfg, run_dir) == 0
    capsys.readouterr()
    if change == "added":
        (folder / "sub").mkdir()
        shutil.copy(folder / FILES[0], folder / "sub" / "late.json")
        name = "sub/late.json"
    else:
        (folder / FILES[1]).unlink()
        name = FILES[1]
    assert "changed since the run" in _note(run_dir)
    assert _run(cfg, run_dir) == 2
    assert f"dataset.path: folder {folder}: {name} {change}" in " ".join(capsys.readouterr().err.split())


def test_a_run_directory_with_the_old_fingerprint_still_resumes(tmp_path: Path, capsys) -> None:
    """Before files were listed a folder recorded its hash and total size only; the hash is unchanged, so it resumes."""
    folder, cfg, run_dir = _setup(tmp_path)
    assert _run(cfg, run_dir) == 0
    path = run_dir / "manifest.json"
    manifest = json.loads(path.read_text())
    old = {k: manifest["dataset"]["path"][k] for k in ("path", "size", "sha256", "sampled")}
    manifest["dataset"]["path"] = old
    manifest.pop("history", None)
    path.write_text(json.dumps(manifest))
    assert "changed" not in _note(run_dir)
    assert _run(cfg, run_dir) == 0
    capsys.readouterr()

    (folder / "late.json").write_text("{}")
    assert "changed since the run" in _note(run_dir)  # from the total size
    path.write_text(json.dumps(manifest))  # the resume above recorded the new form: back to the old one
    assert _run(cfg, run_dir) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert f"dataset.path: folder {folder} changed: size {old['size']} → {old['size'] + 2} bytes" in err


def test_changed_since_for_a_single_file(tmp_path: Path) -> None:
    data = tmp_path / "cases.jsonl"
    data.write_text('{"id": "a"}\n')
    recorded = file_fingerprint(data)
    assert not changed_since(recorded, data)
    data.write_text('{"id": "b"}\n')  # same size, new content (and mtime)
    os.utime(data, ns=(recorded["mtime_ns"] + 10**9,) * 2)
    assert changed_since(recorded, data)
    old_style = {k: recorded[k] for k in ("size", "sha256", "sampled")}  # no mtime recorded: the size is all it has
    assert not changed_since(old_style, data) and listing(data) == {"": (12, recorded["mtime_ns"] + 10**9)}


def test_a_fifo_in_the_file_s_place_is_refused_not_waited_on_and_a_stop_ends_a_folder_s_listing(tmp_path: Path,
                                                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    from tracejudge.engine.dataset_fingerprint import Stopped

    # A FIFO put where the dataset was checked to be a file (between the check and the hash): opened without blocking,
    # then refused. Opened as a file, it waited for a writer for ever (a command that never ended).
    fifo = tmp_path / "data.jsonl"
    os.mkfifo(fifo)
    outcome: list[BaseException] = []

    def fingerprint() -> None:
        try:
            file_fingerprint(fifo)
        except BaseException as exc:  # noqa: BLE001 (what it raised is the assertion below)
            outcome.append(exc)

    hashing = threading.Thread(target=fingerprint, daemon=True)
    hashing.start()
    hashing.join(30)
    assert not hashing.is_alive() and isinstance(outcome[0], OSError) and "not a regular file" in str(outcome[0])

    # A folder is listed with the stop looked at: a hash no longer wanted (a config error, a Ctrl-C) ends at once, not
    # after listing a whole tree (a mistyped `dataset.path: /usr`).
    tree = tmp_path / "tree"
    for i in range(50):
        (tree / f"d{i}").mkdir(parents=True)
        (tree / f"d{i}" / "x.json").write_text("{}")
    looked_at = []
    real_is_file = Path.is_file
    monkeypatch.setattr(Path, "is_file", lambda self: looked_at.append(self) or real_is_file(self))
    stop = threading.Event()
    stop.set()
    with pytest.raises(Stopped):
        file_fingerprint(tree, stop)
    assert looked_at == []  # (before: every entry of the tree was looked at, then the stop was seen)
    assert file_fingerprint(tree)["count"] == 50



def test_a_valid_config_whose_dataset_becomes_a_fifo_before_the_run_reads_it_is_bad_input_not_a_hang(tmp_path: Path) -> None:
    import io
    import threading

    import anyio
    from rich.console import Console
    from tracejudge.core.config import load_config
    from tracejudge.core.errors import ConfigError
    from tracejudge.core.regular_file import NotRegularFile
    from tracejudge.engine import runner
    from tracejudge.entrypoints.commands.failures import unusable_path

    data = tmp_path / "cases.jsonl"
    data.write_text(json.dumps({"id": "c1", "trace": {"steps": []}, "expected_tool_calls": []}) + "\n")
    (tmp_path / "c.yaml").write_text("dataset: {path: cases.jsonl}\nmetrics: [{type: ToolCalls}]\nrun: {dir: run}\n")
    config = load_config(tmp_path / "c.yaml")  # validated while it is a regular file
    data.unlink()
    os.mkfifo(data)  # then swapped (a script between the check and the run): before, the hash or the reader waited for ever
    raised: list[BaseException] = []

    def run() -> None:
        try:
            anyio.run(runner.run, config)
        except BaseException as exc:  # noqa: BLE001 (what it raised is the assertion below)
            raised.append(exc)

    running = threading.Thread(target=run, daemon=True)
    running.start()
    running.join(60)
    assert not running.is_alive() and raised, "the run waited on the FIFO"
    # A config error naming the file (the run's first-records check reads it first), as for any dataset it cannot read.
    assert isinstance(raised[0], ConfigError) and str(data) in str(raised[0]) and "not a regular file" in str(raised[0]), raised[0]

    # Where the hash meets it first (its own thread, or the manifest's wait), the command's exit is bad input too.
    fifo_error = NotRegularFile(22, "not a regular file (a FIFO, a device or a socket)", str(data))
    assert unusable_path(fifo_error, Console(file=io.StringIO())) == 2
    assert unusable_path(ExceptionGroup("run", [fifo_error]), Console(file=io.StringIO())) == 2
