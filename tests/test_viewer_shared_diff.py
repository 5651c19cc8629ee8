"""The viewer's Diff page under many identical requests at once, and query parameters it cannot use, against a real `tracejudge view`."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from _runs import http_get, planted_runs, view_process


def _same_dataset(*runs: Path) -> None:
    # The Diff page pairs only runs whose manifests record the same dataset.
    for run in runs:
        (run / "manifest.json").write_text(json.dumps({"dataset_fingerprint": "f" * 64, "config": {"dataset": {"path": "cases.jsonl"}}}))


def _get(url: str) -> tuple[int, str]:
    return http_get(url, timeout=300)


def test_identical_concurrent_diffs_are_computed_once_and_shared(tmp_path: Path) -> None:
    a, b, planted, _ = planted_runs(tmp_path, n=3000, planted=40)
    _same_dataset(a, b)
    with view_process(str(a), str(b)) as (url, proc):
        with ThreadPoolExecutor(20) as pool:
            pages = list(pool.map(_get, [f"{url}/diff?a=run-a&b=run-b"] * 20))
        assert all(status == 200 for status, _ in pages)
        assert len({page for _, page in pages}) == 1 and all(cid in pages[0][1] for cid in sorted(planted)[:3])
        assert _get(f"{url}/diff?a=run-a&b=run-b")[0] == 200  # later: from the kept comparison
        with (b / "results.jsonl").open("a") as fh:  # the run grew: compared again, once
            fh.write((b / "results.jsonl").read_text().splitlines()[0] + "\n")
        with ThreadPoolExecutor(5) as pool:
            assert {s for s, _ in pool.map(_get, [f"{url}/diff?a=run-a&b=run-b"] * 5)} == {200}
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    assert err.count("tracejudge view: compared run-a with run-b") == 2, err


@pytest.mark.parametrize(("query", "name"), [("trial=abc", "trial"), (f"trial={2**63}", "trial"), ("trial=-1", "trial"), ("trial=1.5", "trial")])
def test_a_trial_that_is_no_usable_number_is_a_400_naming_it(tmp_path: Path, query: str, name: str) -> None:
    a, _, _, _ = planted_runs(tmp_path, n=40, planted=1, improved=1)
    with view_process(str(a)) as (url, _):
        status, page = _get(f"{url}/run/run-a/case?id=c000&{query}")
        assert status == 400 and f"{name}=" in page and "Traceback" not in page
        assert _get(f"{url}/run/run-a/case?id=c000&trial=0")[0] == 200
        status, page = _get(f"{url}/run/run-a/cases?page=two")
        assert status == 400 and "page=" in page
