"""`tracejudge init`: the paths it writes read back as the same paths, and what it refuses before writing anything."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from tracejudge.core.config import load_config
from tracejudge.entrypoints.cli import main

CASE = {"id": "c1", "input": "book it", "trace": {"steps": [{"tool_calls": [{"name": "search", "arguments": {}}]}]},
        "expected_tool_calls": [{"name": "search", "arguments": {}}]}

# Names YAML reads as another type (a boolean, null, a number, a date) or whose first character or inner `: ` / ` #`
# means something to YAML (an alias, a tag, a directive, a comment, a mapping).
TRICKY = ["yes", "no", "null", "on", "off", "1.0", "2024-01-01", "*star", "&anchor", "!tag", "%pct", "@at", "#hash",
          "a: b", "a #b", "a,b", "[x]", "{x}", "- x", "0x1f", ".inf", "é ünï", "line\nbreak"]


@pytest.mark.parametrize("name", TRICKY)
def test_init_writes_a_dataset_path_that_reads_back_as_the_same_path(name: str, tmp_path: Path, monkeypatch) -> None:
    # `init --dataset yes` wrote `path: yes`, which the config read as `true` ("Input is not a valid path").
    monkeypatch.chdir(tmp_path)
    (tmp_path / name).write_text(json.dumps(CASE) + "\n")
    assert main(["init", "--dataset", name, "-o", "c.yaml"]) == 0
    assert yaml.safe_load((tmp_path / "c.yaml").read_text())["dataset"]["path"] == name
    assert load_config(tmp_path / "c.yaml").dataset.path == tmp_path / name


@pytest.mark.parametrize("stem", ["null", "yes", "1.0"])
def test_init_writes_a_run_dir_that_reads_back_as_the_same_folder(stem: str, tmp_path: Path, monkeypatch) -> None:
    # A config written into runs/ names its run dir `runs/<stem>` relative to itself: the bare stem, which YAML typed too.
    monkeypatch.chdir(tmp_path)
    assert main(["init", "-o", f"runs/{stem}.yaml"]) == 0
    assert yaml.safe_load((tmp_path / "runs" / f"{stem}.yaml").read_text())["run"]["dir"] == stem


def test_a_leading_tilde_is_the_home_folder_in_init_in_the_config_and_in_set(tmp_path: Path, monkeypatch) -> None:
    # The shell leaves `--dataset=~/x.jsonl` as typed: init said "no such file", or, with a folder named `~` beside it,
    # wrote `~/x.jsonl`, which the config read as the home one; `--set dataset.path=~/x` was of the config's folder.
    home, proj = tmp_path / "home", tmp_path / "proj"
    (proj / "~").mkdir(parents=True)
    home.mkdir()
    for data in (home / "x.jsonl", proj / "~" / "y.jsonl"):
        data.write_text(json.dumps(CASE) + "\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(proj)
    assert main(["init", "--dataset=~/x.jsonl", "-o", "home.yaml"]) == 0
    assert load_config(proj / "home.yaml").dataset.path == home / "x.jsonl"
    # A folder really named `~` is written `./~/…`, which the config reads as that folder.
    assert main(["init", "--dataset", "./~/y.jsonl", "-o", "here.yaml"]) == 0
    assert yaml.safe_load((proj / "here.yaml").read_text())["dataset"]["path"] == "./~/y.jsonl"
    assert load_config(proj / "here.yaml").dataset.path == proj / "~" / "y.jsonl"
    assert load_config(proj / "here.yaml", ["dataset.path=~/x.jsonl"]).dataset.path == home / "x.jsonl"
    assert load_config(proj / "here.yaml", ["dataset.path=./~/y.jsonl"]).dataset.path == proj / "~" / "y.jsonl"
    assert main(["init", "-o", "~/c.yaml"]) == 0
    assert (home / "c.yaml").is_file() and sorted(p.name for p in (proj / "~").iterdir()) == ["y.jsonl"]


def test_init_refuses_an_output_that_is_a_folder_lies_under_a_file_or_breaks_a_line_in_one_line(tmp_path: Path, monkeypatch, capsys) -> None:
    # `-o DIR --force` printed the raw errno (`error: DIR: Is a directory`), without --force it said --force would do;
    # `-o FILE/c.yaml` was an internal error (FileExistsError from mkdir), exit 3.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "configs").mkdir()
    (tmp_path / "cases.jsonl").write_text(json.dumps(CASE) + "\n")
    for force in ([], ["--force"]):
        assert main(["init", "-o", "configs", *force]) == 2
        assert capsys.readouterr().err.strip() == ("error: -o configs: is a folder; init writes one config file: "
                                                   "name the file (configs/tracejudge.yaml, say)")
    assert main(["init", "-o", "cases.jsonl/c.yaml"]) == 2
    assert capsys.readouterr().err.strip() == "error: -o cases.jsonl/c.yaml: cases.jsonl is a file, not a folder: name a path in a folder"
    (tmp_path / "dangling.yaml").symlink_to(tmp_path / "nowhere" / "c.yaml")
    assert main(["init", "-o", "dangling.yaml"]) == 2
    assert capsys.readouterr().err.strip() == "error: -o dangling.yaml: cannot write it: No such file or directory"
    # A line break in the name ended the header's comment line there: the rest of the name was read as YAML.
    assert main(["init", "-o", "x\nrun: 5.yaml"]) == 2
    assert capsys.readouterr().err.strip() == ("error: -o 'x\\nrun: 5.yaml': the name holds a line break, which the config's comment "
                                               "lines cannot hold; rename it")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cases.jsonl", "configs", "dangling.yaml"]
