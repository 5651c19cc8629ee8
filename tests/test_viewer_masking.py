"""`tracejudge view` masks credentials in the traces it shows and in the search index it keeps in the run directory.

The viewer re-reads the dataset for the case page and the search text, and showed (and stored in `view.idx`,
inside the run directory a CI job uploads) every key as the agent left it, while results and reports masked them.
A real `tracejudge run`, then a real `tracejudge view` process over HTTP on 127.0.0.1.
"""

from __future__ import annotations

import time
import urllib.parse
import urllib.request
from pathlib import Path

from _runs import native_case, view_server, write_config, write_dataset
from tracejudge.entrypoints.cli import main

OPENAI = "sk-proj-ABCDEFghijkl0123456789mnopQRST"
GITHUB = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
AWS = "AKIAIOSFODNN7EXAMPLE"
PASSWORD = "hunter2-Horse"
SECRETS = (OPENAI, GITHUB, AWS, PASSWORD)


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as resp:
        return resp.read().decode()


def test_the_case_page_the_search_and_the_index_hold_no_credential(tmp_path: Path) -> None:
    case = native_case("s1", ["login"], ["login"], metadata={"api_key": OPENAI})
    case["input"] = f"my key is {OPENAI}, please rotate zebrafish"
    case["trace"]["steps"][0]["tool_calls"][0]["arguments"] = {"token": GITHUB, "password": PASSWORD, "user": "ana"}
    case["trace"]["steps"][0]["tool_calls"][0]["result"] = f"aws key {AWS} rotated"
    case["trace"]["output"] = f"Done: {OPENAI}"
    data = write_dataset(tmp_path / "c.jsonl", [case, native_case("plain", ["login"], ["login"])])
    run_dir = tmp_path / "run"
    assert main(["run", str(write_config(tmp_path / "c.yaml", data, run_dir)), "--no-progress"]) == 0
    with view_server(str(run_dir)) as url:
        page = _get(f"{url}/run/run/case?id=s1")
        assert "rotate zebrafish" in page and "ana" in page and "Done:" in page  # the trace is shown…
        assert not [s for s in SECRETS if s in page]  # …with its credentials masked
        for _ in range(100):  # the search text is read in the background
            if "s1" in _get(f"{url}/run/run/cases?q=zebrafish"):
                break
            time.sleep(0.2)
        else:
            raise AssertionError("the search text never arrived")
        listing = _get(f"{url}/run/run/cases?q=zebrafish")
        assert not [s for s in SECRETS if s in listing]
        assert "s1" not in _get(f"{url}/run/run/cases?q=" + urllib.parse.quote(OPENAI[:20]))
    stored = b"".join(p.read_bytes() for p in run_dir.iterdir() if p.name.startswith("view.idx"))
    assert stored and not [s for s in SECRETS if s.encode() in stored]
