"""The ids a run files records under when they have none of their own, or one already taken, as README documents
them: each is the key a refused record's result is written once under across resumes, so a resume of a finished run
files nothing again."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import _forkserver

LINES = [
    '{"messages": [{"role": "user", "content": "a"}]}',  # no id: read, under the file's name and line
    '{"id": "x", "messages": [',  # not JSON: refused, under the file's name and line
    '{"id": ["l"], "messages": [{"role": "user", "content": "b"}]}',  # an id that is no text: under the dataset's path
    '{"id": "d", "messages": [{"role": "user", "content": "c"}]}',
    '{"id": "d", "messages": [{"role": "user", "content": "e"}]}',  # a taken id: under the id, then the dataset's path
    "[1]",  # not an object: refused, under the file's name and line
]


def _run(folder: Path) -> tuple[str, list[str]]:
    proc = _forkserver.run([sys.executable, "-m", "tracejudge", "run", "c.yaml"], capture_output=True, text=True, cwd=folder)
    assert proc.returncode in (0, 1), proc.stderr  # (1: the gate, which no metric here passes; not what is tested)
    lines = (folder / "runs" / "c" / "results.jsonl").read_text(encoding="utf-8").splitlines()
    return proc.stdout + proc.stderr, [json.loads(line)["case_id"] for line in lines]


def test_refused_records_keep_their_ids_and_a_resume_files_none_again(tmp_path: Path) -> None:
    data = (tmp_path / "data.jsonl").resolve()
    data.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    (tmp_path / "c.yaml").write_text("dataset: {path: data.jsonl, format: openai-messages}\nmetrics: [{type: ToolCalls}]\n"
                                     "assertions: {max_invalid_share: 1}\n", encoding="utf-8")
    said, ids = _run(tmp_path)
    assert sorted(ids) == sorted(["data.jsonl:1", "data.jsonl:2", f"{data}:3", "d", f"d@{data}:5", "data.jsonl:6"]), ids
    assert "6 new results, 0 already finished" in said, said
    said, again = _run(tmp_path)
    assert again == ids and "0 new results, 6 already finished" in said, said


def test_a_native_line_without_an_id_is_filed_under_the_datasets_path(tmp_path: Path) -> None:
    data = (tmp_path / "data.jsonl").resolve()
    data.write_text('{"id": "a", "trace": {"steps": []}}\n{"id": "x", "trace": \n{"trace": {"steps": []}}\n', encoding="utf-8")
    (tmp_path / "c.yaml").write_text("dataset: {path: data.jsonl}\nmetrics: [{type: ToolCalls}]\nassertions: {max_invalid_share: 1}\n",
                                     encoding="utf-8")
    assert sorted(_run(tmp_path)[1]) == sorted(["a", f"{data}:2", f"{data}:3"])
