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
