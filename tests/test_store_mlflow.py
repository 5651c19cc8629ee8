"""MLflow as a source and a sink, against a real `mlflow server` (SQLite) on 127.0.0.1.

Traces are made by the plain OpenAI loop under `mlflow.openai.autolog()` against the loopback fake
OpenAI server, read by `dataset.format: mlflow-server`, judged, and written back as assessments
that MLflow's own client reads.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tracejudge.entrypoints.cli import main

pytest.importorskip("mlflow")
pytest.importorskip("openai")
from stores.fault_proxy import FaultProxy  # noqa: E402
from stores.servers import FlakyJudge, free_port, run_loader, sweep_config  # noqa: E402
import _forkserver

LOADER = Path(__file__).resolve().parent / "stores" / "load_mlflow.py"
TASKS = ["sequence", "failing", "parallel"]


def _load(url: str, *tasks: str, experiment: str = "agents") -> list[str]:
    return json.loads(run_loader(LOADER, url, experiment, *tasks).strip().splitlines()[-1])


@pytest.fixture(scope="module")
def server(mlflow_url):
    """The session's MLflow server (tests/conftest.py) and the traces of `TASKS` in its experiment `agents`."""
    return mlflow_url, _load(mlflow_url, *TASKS)


def _config(tmp_path: Path, url: str, **options) -> Path:
    return sweep_config(tmp_path, "mlflow-server", {"tracking_uri": url, "experiment": "agents", **options}, max_calls=2)


def _assessments(url: str, trace_id: str, run_dir: Path | None = None) -> list:
    """The assessments tracejudge wrote on `trace_id` (those of `run_dir`'s run only, when given)."""
    import mlflow
    from tracejudge.stages.export.mlflow_sink import run_key

    key = run_key(run_dir) if run_dir is not None else None
    return [a for a in mlflow.MlflowClient(tracking_uri=url).get_trace(trace_id).info.assessments
            if "tracejudge.run" in (a.metadata or {}) and key in (None, a.metadata["tracejudge.run"])]


def test_traces_in_verdicts_back_once(server, tmp_path, capsys):
    url, ids = server
    cfg = _config(tmp_path, url)
    assert main(["run", str(cfg), "--no-progress"]) in (0, 1)
    results = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert sorted(r["case_id"] for r in results) == sorted(ids)
    by_id = {r["case_id"]: r for r in results}
    assert by_id[ids[0]]["scores"]["MaxToolCalls"]["passed"] is True  # sequence: 2 calls
    assert all(r["status"] == "ok" for r in results)
    capsys.readouterr()
    assert main(["export", str(tmp_path / "run"), "--to", "mlflow", "--tracking-uri", url]) == 0
    assert "exported 6 assessments to MLflow (6 new, 0 updated, 0 already there, 0 traces not found)" in capsys.readouterr().err
    for tid in ids:
        got = {a.name: a for a in _assessments(url, tid)}
        assert set(got) == {"MaxToolCalls", "TaskCompletion"}
        want = by_id[tid]["scores"]
        assert got["TaskCompletion"].source.source_type == "LLM_JUDGE" and got["TaskCompletion"].source.source_id == "gpt-4o-mini"
        assert got["MaxToolCalls"].source.source_type == "CODE" and got["MaxToolCalls"].source.source_id == "tracejudge"
        assert got["MaxToolCalls"].value == want["MaxToolCalls"]["value"]
        assert got["TaskCompletion"].rationale == want["TaskCompletion"]["reason"]
    # Again: nothing is written twice.
    assert main(["export", str(tmp_path / "run"), "--to", "mlflow", "--tracking-uri", url]) == 0
    assert "exported 0 assessments to MLflow (0 new, 0 updated, 6 already there" in capsys.readouterr().err
    assert all(len(_assessments(url, tid)) == 2 for tid in ids)


def test_nightly_sweep_reads_only_what_is_new(server, tmp_path):
    url, ids = server
    cfg = _config(tmp_path, url, start="last_run", overlap_s=0)
    assert main(["run", str(cfg), "--no-progress"]) in (0, 1)
    new = _load(url, "multiturn")
    assert main(["run", str(cfg), "--no-progress"]) in (0, 1)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert [s["results"] for s in summary["segments"]] == [len(ids), 1]
    lines = [json.loads(x)["case_id"] for x in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert lines[-1] == new[0] and len(lines) == len(ids) + 1


def test_a_down_server_fails_in_one_line_with_exit_3(server, tmp_path, capsys, monkeypatch):
    url, _ = server
    assert main(["run", str(_config(tmp_path, f"http://user:s3cret@127.0.0.1:{free_port()}")), "--no-progress"]) == 2
    assert "written to manifest.json" in capsys.readouterr().err  # a token in the URL is refused, not recorded
    monkeypatch.setenv("MLFLOW_TRACKING_TOKEN", "s3cret")
    dead = f"http://127.0.0.1:{free_port()}"
    assert main(["run", str(_config(tmp_path, dead)), "--no-progress"]) == 3
    err = capsys.readouterr().err
    assert "cannot be reached" in err and "s3cret" not in err
    assert not (tmp_path / "run" / "results.jsonl").exists() or not (tmp_path / "run" / "results.jsonl").read_text()
    assert main(["run", str(_config(tmp_path, url)), "--no-progress"]) in (0, 1)
    capsys.readouterr()
    assert main(["export", str(tmp_path / "run"), "--to", "mlflow", "--tracking-uri", dead]) == 3
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: http://127.0.0.1:") and "s3cret" not in err
    assert not any("s3cret" in p.read_text(errors="replace") for p in (tmp_path / "run").rglob("*") if p.is_file())


def _results(run_dir: Path) -> dict:
    from tracejudge.engine import store

    return {r["case_id"]: r for r in store.iter_results(run_dir)}


def test_a_resumed_run_replaces_what_it_exported_and_copies_go(server, tmp_path, capsys):
    # A night whose judge failed was exported (NOT_COMPUTED), then resumed to verdicts: exporting again must bring
    # MLflow to the verdicts, not count the stale assessments as "already there".
    import mlflow

    url, _ = server
    ids = _load(url, "sequence", "failing", experiment="resume")
    run = tmp_path / "run"
    with FlakyJudge() as judge:
        cfg = sweep_config(tmp_path, "mlflow-server", {"tracking_uri": url, "experiment": "resume"}, max_calls=2, judge_url=judge.url)
        assert main(["run", str(cfg), "--no-progress"]) == 1
        assert {r["status"] for r in _results(run).values()} == {"judge_error"}
        assert main(["export", str(run), "--to", "mlflow", "--tracking-uri", url]) == 0
        assert all(a.error is not None and a.error.error_code == "NOT_COMPUTED"
                   for tid in ids for a in _assessments(url, tid, run) if a.name == "TaskCompletion")
        judge.fixed = True
        assert main(["run", str(cfg), "--no-progress"]) in (0, 1)
    results = _results(run)
    assert {r["status"] for r in results.values()} == {"ok"}
    capsys.readouterr()
    assert main(["export", str(run), "--to", "mlflow", "--tracking-uri", url]) == 0
    # Both scores of each trace changed (TaskCompletion's value, MaxToolCalls' recorded status): replaced, one each.
    assert "exported 4 assessments to MLflow (0 new, 4 updated, 0 already there, 0 traces not found)" in capsys.readouterr().err
    for tid in ids:
        got = {a.name: a for a in _assessments(url, tid, run)}
        assert len(_assessments(url, tid, run)) == 2 and set(got) == {"MaxToolCalls", "TaskCompletion"}
        assert got["TaskCompletion"].error is None and got["TaskCompletion"].value == results[tid]["scores"]["TaskCompletion"]["value"]
        assert got["TaskCompletion"].metadata["tracejudge.status"] == "ok"
    # A copy of one (an older export's retried write) goes: one per (trace, metric, run, trial) again.
    old = next(a for a in _assessments(url, ids[0], run) if a.name == "MaxToolCalls")
    mlflow.set_tracking_uri(url)
    mlflow.log_feedback(trace_id=ids[0], name=old.name, value=old.value, source=old.source, rationale=old.rationale, metadata=old.metadata)
    assert len(_assessments(url, ids[0], run)) == 3
    capsys.readouterr()
    assert main(["export", str(run), "--to", "mlflow", "--tracking-uri", url]) == 0
    assert "exported 0 assessments to MLflow (0 new, 0 updated, 4 already there, 0 traces not found, 1 duplicates deleted)" in capsys.readouterr().err
    assert all(len(_assessments(url, tid, run)) == 2 for tid in ids)


def test_a_create_answered_after_the_timeout_is_written_once(server, tmp_path, capsys, monkeypatch):
    # The server commits the first assessment but answers after the client's timeout: MLflow's client used to send
    # it again (and again), and every copy landed. Now it looks, finds it, and writes nothing twice.
    url, _ = server
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "1")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "2")
    assert main(["run", str(_config(tmp_path, url)), "--no-progress"]) in (0, 1)
    run = tmp_path / "run"
    with FaultProxy(url) as proxy:
        proxy.set(match="/assessments", method="POST", mode="late", delay_s=2.5, times=1)
        assert main(["export", str(run), "--to", "mlflow", "--tracking-uri", proxy.url]) == 0
        posts = [p for m, p in proxy.requests if m == "POST" and "/assessments" in p]
    cases = list(_results(run))  # (the experiment's traces: the ones loaded first, and those later tests added)
    assert len(posts) == 2 * len(cases)  # the late one was not sent again
    assert all(len(_assessments(url, tid, run)) == 2 for tid in cases)
    assert f"exported {2 * len(cases)} assessments to MLflow ({2 * len(cases)} new, 0 updated" in capsys.readouterr().err


def test_an_answer_that_is_not_json_or_no_answer_is_one_line_and_exit_3(server, tmp_path, capsys):
    url, ids = server
    run = tmp_path / "run"
    with FaultProxy(url) as proxy:
        proxy.set(match="traces/search", mode="garbage")
        assert main(["run", str(_config(tmp_path, proxy.url)), "--no-progress"]) == 3
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"error: {proxy.url}") and "not JSON" in err and len(err.splitlines()) == 1, err
        assert main(["run", str(_config(tmp_path, url)), "--no-progress"]) in (0, 1)
        capsys.readouterr()
        proxy.set(match="/mlflow/traces/tr-", method="GET", mode="garbage")  # (the export's read of a trace's info)
        assert main(["export", str(run), "--to", "mlflow", "--tracking-uri", proxy.url]) == 3
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"error: {proxy.url}") and "not JSON" in err and len(err.splitlines()) == 1, err
        # A server that stops answering mid-export is unreachable, not "refused the export".
        proxy.set(match="/assessments", method="POST", mode="drop")
        assert main(["export", str(run), "--to", "mlflow", "--tracking-uri", proxy.url]) == 3
        err = capsys.readouterr().err.strip()
        assert "cannot be reached" in err and "refused" not in err and len(err.splitlines()) == 1, err


def test_a_server_error_while_listing_ends_the_run_in_seconds(server, tmp_path):
    # MLflow's client retries a 500 seven times with back-off: ~4 minutes before the run said anything.
    url, _ = server
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_HTTP_REQUEST")}  # MLflow's defaults, as a user has them
    with FaultProxy(url) as proxy:
        proxy.set(match="traces/search", mode="500")
        began = time.monotonic()
        out = _forkserver.run([sys.executable, "-m", "tracejudge", "run", str(_config(tmp_path, proxy.url)), "--no-progress"],
                             capture_output=True, text=True, timeout=120, env=env)
        took = time.monotonic() - began
    assert out.returncode == 3, out.stderr
    assert "HTTP 500" in out.stderr and proxy.url in out.stderr, out.stderr
    assert took < 40, took


def test_a_capped_nightly_sweep_reads_every_trace_once_over_the_nights(server, tmp_path, capsys):
    # max_results 1 with the default overlap (600 s): each night reads the oldest trace it has no result for.
    url, _ = server
    ids = _load(url, "sequence", "failing", "parallel", experiment="capped")
    cfg = sweep_config(tmp_path, "mlflow-server", {"tracking_uri": url, "experiment": "capped", "start": "last_run", "max_results": 1},
                       max_calls=2)
    warned = []
    for _ in range(4):
        assert main(["run", str(cfg), "--no-progress"]) in (0, 1)
        warned.append("cut the window" in capsys.readouterr().err)
    assert [json.loads(x)["case_id"] for x in (tmp_path / "run" / "results.jsonl").read_text().splitlines()] == ids
    assert warned == [True, True, False, False]  # the third night read the last one: nothing was left


def test_traces_deleted_since_the_run_are_counted_once_each(server, tmp_path, capsys):
    import mlflow

    url, _ = server
    ids = _load(url, "sequence", "failing", experiment="gone")
    run = tmp_path / "run"
    cfg = sweep_config(tmp_path, "mlflow-server", {"tracking_uri": url, "experiment": "gone"}, max_calls=2)
    assert main(["run", str(cfg), "--no-progress"]) in (0, 1)
    client = mlflow.MlflowClient(tracking_uri=url)
    experiment = client.get_experiment_by_name("gone").experiment_id
    client.delete_traces(experiment, trace_ids=[ids[0]])
    capsys.readouterr()
    assert main(["export", str(run), "--to", "mlflow", "--tracking-uri", url]) == 0
    assert "exported 2 assessments to MLflow (2 new, 0 updated, 0 already there, 1 traces not found)" in capsys.readouterr().err
    assert len(_assessments(url, ids[1], run)) == 2
    # None of the run's traces there: the wrong server, most likely; said, and not exit 0.
    client.delete_traces(experiment, trace_ids=[ids[1]])
    assert main(["export", str(run), "--to", "mlflow", "--tracking-uri", url]) == 2
    err = capsys.readouterr().err
    assert "holds none of the run's 2 traces" in err and url in err


def test_a_conversation_case_is_written_on_its_sessions_first_trace_with_the_session(server, tmp_path, capsys):
    # Format `mlflow` reads a session's traces as one case named by the session (`group_by: conversation`). Its export
    # looked up a trace named like the session, found none, and wrote nothing ("traces not found"). MLflow's own
    # multi-turn scorers write a session's verdict on its first trace, with `mlflow.trace.session` in the metadata.
    url, ids = server
    cfg = _config(tmp_path, url)
    assert main(["run", str(cfg), "--no-progress"]) in (0, 1)
    run_dir = tmp_path / "run"
    lines = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    first = next(r for r in lines if r["case_id"] == ids[1])
    # The same result as a conversation of two of the server's traces, as format `mlflow` writes one.
    convo = {**first, "case_id": "sess-42", "metadata": {**first["metadata"], "mlflow": {"traces": [ids[1], ids[2]]}}}
    (run_dir / "results.jsonl").write_text(json.dumps(convo) + "\n")
    (run_dir / "results.idx").unlink(missing_ok=True)
    capsys.readouterr()
    assert main(["export", str(run_dir), "--to", "mlflow", "--tracking-uri", url]) == 0
    assert "exported 2 assessments to MLflow (2 new, 0 updated, 0 already there, 0 traces not found)" in capsys.readouterr().err
    got = {a.name: a for a in _assessments(url, ids[1], run_dir)}
    assert set(got) == {"MaxToolCalls", "TaskCompletion"}
    assert all(a.metadata["mlflow.trace.session"] == "sess-42" for a in got.values())
    assert _assessments(url, ids[2], run_dir) == []
    assert main(["export", str(run_dir), "--to", "mlflow", "--tracking-uri", url]) == 0  # once only
    assert "0 new, 0 updated, 2 already there" in capsys.readouterr().err
