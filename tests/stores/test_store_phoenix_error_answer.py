"""A Phoenix error answer of several lines is quoted by its first line, as MLflow's is (`remote.answer_line`): in the
run's error line, report.md and junit.xml, and in an export's. A real `phoenix serve` behind a loopback proxy answering
500 (tests/stores/fault_proxy.py)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from tracejudge.entrypoints.cli import main

from stores.servers import phoenix_installed, run_loader, sweep_config

if not phoenix_installed():
    pytest.skip("arize-phoenix (the stores extra) is not installed", allow_module_level=True)
pytest.importorskip("openinference.instrumentation.openai")
from stores.fault_proxy import FaultProxy  # noqa: E402
from stores.phoenix_recordings import held_spans  # noqa: E402

LOADER = Path(__file__).resolve().parent / "load_phoenix.py"
BODY = "Internal Server Error: database is locked\nsecond line\n"


@pytest.fixture(scope="module")
def url(phoenix_url):
    """The session's Phoenix server with two traces in project `errs`."""
    sent = json.loads(run_loader(LOADER, phoenix_url, "errs", "sequence", "failing").strip().splitlines()[-1])
    deadline = time.monotonic() + 120
    while held_spans(phoenix_url, "errs") < sent["spans"]:
        assert time.monotonic() < deadline
        time.sleep(0.2)
    return phoenix_url


def test_a_read_answered_500_quotes_the_first_line(url, tmp_path, capsys):
    with FaultProxy(url) as proxy:
        proxy.set(match="/spans?", mode="500", body=BODY)
        cfg = sweep_config(tmp_path, "phoenix", {"url": proxy.url, "project": "errs"}, max_calls=2)
        assert main(["run", str(cfg), "--no-progress"]) == 3
    err = capsys.readouterr().err
    assert "HTTP 500 to GET" in err and "(Internal Server Error: database is locked)" in err, err
    run = tmp_path / "run"
    for text in (err, (run / "report.md").read_text(), (run / "junit.xml").read_text()):
        assert "database is locked" in text and "second line" not in text, text


def test_an_export_answered_500_quotes_the_first_line(url, tmp_path, capsys):
    cfg = sweep_config(tmp_path, "phoenix", {"url": url, "project": "errs"}, max_calls=2)
    assert main(["run", str(cfg), "--no-progress"]) in (0, 1)
    capsys.readouterr()
    with FaultProxy(url) as proxy:
        proxy.set(match="span_annotations", method="POST", mode="500", body=BODY)
        assert main(["export", str(tmp_path / "run"), "--to", "phoenix", "--url", proxy.url]) == 3
    err = capsys.readouterr().err
    assert "(HTTP 500: Internal Server Error: database is locked); the same command resumes" in err, err
    assert "second line" not in err
