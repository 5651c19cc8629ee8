"""A run directory whose results.jsonl was deleted after results were written: the next run scores every case again.

The resume cursor (`engine.cursor`) lets a resume skip the dataset's lines before it; it is trusted only while the
results it stands for are there. With results.jsonl gone under a checkpoint that counted results, the cursor was
still used: the resume skipped every case those results were for, said "N already finished", and ended complete
with those cases never scored.
"""

from __future__ import annotations

import json
from pathlib import Path

from _runs import native_case, write_dataset
from tracejudge.entrypoints.cli import main


def test_a_deleted_results_file_means_every_case_is_scored_again(tmp_path: Path, capsys) -> None:
    data = write_dataset(tmp_path / "cases.jsonl", [native_case(f"c{i}", ["a"], ["a"]) for i in range(40)])
    cfg = tmp_path / "run.yaml"
    cfg.write_text(f"dataset: {{path: {json.dumps(str(data))}}}\nmetrics: [{{type: MaxToolCalls, max_calls: 5}}]\n"
                   f"run: {{dir: {json.dumps(str(tmp_path / 'run'))}, flush_every: 8}}\n")
    assert main(["run", str(cfg), "--no-progress"]) == 0
    (tmp_path / "run" / "results.jsonl").unlink()
    capsys.readouterr()
    assert main(["run", str(cfg), "--no-progress"]) == 0
    assert "40 new results, 0 already finished" in capsys.readouterr().out
    ids = [json.loads(line)["case_id"] for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert sorted(ids) == sorted(f"c{i}" for i in range(40))
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["results"] == 40 and summary["complete"] is True
