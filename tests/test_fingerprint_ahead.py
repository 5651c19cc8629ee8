"""The dataset is hashed for the manifest in a thread while the run sets up (`engine.fingerprint_ahead`): the manifest
records the same fingerprints as a hash made on the spot, of the run's own dataset, and the thread never outlives
the point where the manifest takes its result (nor a run that ends before it)."""

from __future__ import annotations

import functools
import hashlib
import json
import threading
from pathlib import Path

import anyio
import pytest
from tracejudge.core.config import load_config
from tracejudge.engine import runner
from tracejudge.engine.dataset_fingerprint import file_fingerprint
from tracejudge.engine.fingerprint_ahead import FingerprintAhead
from tracejudge.engine.manifest import dataset_files


def _case(i: int) -> str:
    call = {"name": "get_order", "arguments": {"order_id": i}}
    return json.dumps({"id": f"c{i}", "expected_tool_calls": [call], "trace": {"steps": [{"tool_calls": [call]}]}}) + "\n"


def _config(tmp_path: Path, name: str, cases: int):
    data = tmp_path / f"{name}.jsonl"
    data.write_text("".join(_case(i) for i in range(cases)))
    cfg = tmp_path / f"{name}.yaml"
    cfg.write_text(f"dataset: {{path: {data.name}}}\nmetrics: [{{type: ToolCalls, arguments: exact}}]\n"
                   f"run: {{dir: run-{name}, executor: inprocess}}\n")
    return load_config(cfg), data


def _hash_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "tracejudge-dataset-hash"]


def test_the_manifest_records_the_hash_made_ahead_of_the_run_own_dataset_only(tmp_path: Path) -> None:
    config, data = _config(tmp_path, "a", 5)
    other, _ = _config(tmp_path, "b", 3)

    out = anyio.run(functools.partial(runner.run, config, fingerprints=FingerprintAhead(config)))
    manifest = json.loads((out.run_dir / "manifest.json").read_text())
    assert manifest["dataset"]["path"]["sha256"] == hashlib.sha256(data.read_bytes()).hexdigest()
    assert manifest["dataset"] == dataset_files(config)
    assert not _hash_threads()

    # A hash started for another dataset is not taken: the run hashes its own.
    again = anyio.run(functools.partial(runner.run, config.model_copy(update={"run": config.run.model_copy(update={"dir": tmp_path / "run-c"})}),
                                        fingerprints=FingerprintAhead(other)))
    assert json.loads((again.run_dir / "manifest.json").read_text())["dataset"] == manifest["dataset"]
    assert not _hash_threads()


def test_a_folder_is_hashed_ahead_as_on_the_spot(tmp_path: Path) -> None:
    folder = tmp_path / "exports"
    (folder / "sub").mkdir(parents=True)
    (folder / "one.json").write_bytes(b"x" * (5 << 20))  # more than one read block
    (folder / "sub" / "two.json").write_text("{}")
    (folder / "empty.json").write_text("")
    config, _ = _config(tmp_path, "a", 1)
    config = config.model_copy(update={"dataset": config.dataset.model_copy(update={"path": folder})})
    ahead = FingerprintAhead(config)
    assert ahead.files() == {"path": {"path": str(folder), **file_fingerprint(folder)}}
    ahead.close()


def test_a_dataset_that_cannot_be_read_raises_where_the_result_is_taken(tmp_path: Path) -> None:
    config, data = _config(tmp_path, "a", 2)
    data.unlink()  # gone after the config was loaded
    ahead = FingerprintAhead(config)
    with pytest.raises(FileNotFoundError) as raised:
        ahead.files()
    assert raised.value.filename == str(data)
    ahead.close()
    assert not _hash_threads()


def test_a_hash_whose_result_is_not_taken_is_stopped(tmp_path: Path) -> None:
    config, data = _config(tmp_path, "a", 1)
    data.write_bytes(b"y" * (24 << 20))
    ahead = FingerprintAhead(config)
    ahead.close()
    assert not _hash_threads()

    # A run that stops before its manifest (here: the run directory is a file) leaves no hash running either.
    (tmp_path / "run-a").write_text("not a directory")
    with pytest.raises(Exception, match="exists and is not a directory"):
        anyio.run(functools.partial(runner.run, config, fingerprints=FingerprintAhead(config)))
    assert not _hash_threads()


def test_the_command_line_hashes_from_the_config_text_and_the_run_takes_that_hash(tmp_path: Path, monkeypatch) -> None:
    from tracejudge.engine import fingerprint_ahead
    from tracejudge.entrypoints.cli import main

    _, data = _config(tmp_path, "a", 4)
    started: list[FingerprintAhead] = []
    real = fingerprint_ahead.ahead_of_source

    def watched(source_data):
        got = real(source_data)
        started.append(got)
        return got

    monkeypatch.setattr(fingerprint_ahead, "ahead_of_source", watched)
    assert main(["run", str(tmp_path / "a.yaml"), "--no-progress"]) == 0
    # Started before pydantic validated the config (from its text, paths resolved against the config's folder), and taken.
    assert len(started) == 1 and started[0] is not None and started[0].hashes(load_config(tmp_path / "a.yaml"))
    manifest = json.loads((tmp_path / "run-a" / "manifest.json").read_text())
    assert manifest["dataset"] == {"path": {"path": str(data), **file_fingerprint(data)}}
    assert not _hash_threads()


def test_a_config_error_after_the_hash_started_leaves_no_hash_running(tmp_path: Path, capsys) -> None:
    from tracejudge.entrypoints.cli import main

    _config(tmp_path, "a", 2)
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("dataset: {path: a.jsonl}\nmetrics: [{type: NoSuchMetric}]\n")  # the file exists: hashed ahead, then refused
    assert main(["run", str(cfg), "--no-progress"]) == 2
    assert "NoSuchMetric" in capsys.readouterr().err
    assert not _hash_threads()


@pytest.mark.parametrize("value", [None, 5, "", "missing.jsonl", "fifo", "folder"])
def test_nothing_but_a_regular_file_or_folder_is_hashed_ahead(tmp_path: Path, value) -> None:
    import os

    from tracejudge.engine.fingerprint_ahead import ahead_of_source

    os.mkfifo(tmp_path / "fifo")  # opened for reading, it would block until a writer came: never opened ahead
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder" / "x.json").write_text("{}")
    path = str(tmp_path / value) if isinstance(value, str) and value else value
    ahead = ahead_of_source({"dataset": {"path": path}})
    if value == "folder":
        assert ahead is not None and ahead.files() == {"path": {"path": path, **file_fingerprint(Path(path))}}
        ahead.close()
    else:
        assert ahead is None
    assert ahead_of_source({"dataset": {"path": str(tmp_path / "folder"), "tasks": str(tmp_path / "fifo")}}) is None
    assert ahead_of_source({"dataset": "a.jsonl"}) is None and ahead_of_source({}) is None
    assert not _hash_threads()
