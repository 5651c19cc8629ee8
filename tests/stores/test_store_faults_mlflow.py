"""MLflow faults found by a round trip against a real `mlflow server` (SQLite) on 127.0.0.1, each fixed and kept so.

- a trace still running (`IN_PROGRESS`) is not scored, and a later `start: last_run` night reads it once finished;
- a reviewer's `mlflow.override_feedback` stands: the next export does not write the judge's verdict again;
- `run --force` keeps the run key: an export after it writes nothing twice (and copies under the old key go);
- the health probe sends `MLFLOW_TRACKING_TOKEN` (a store behind an auth proxy);
- an unknown or deleted experiment is a config error, not a quiet night;
- traces deleted during a paged read do not make it skip the ones after them.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from tracejudge.entrypoints.cli import main

pytest.importorskip("mlflow")
pytest.importorskip("openai")
from stores.fault_proxy import AuthProxy, FaultProxy  # noqa: E402
from stores.servers import run_loader, sweep_config  # noqa: E402
import _forkserver

LOADER = Path(__file__).resolve().parent / "load_mlflow.py"
ENV = "import os; os.environ.update({'MLFLOW_ENABLE_ASYNC_TRACE_LOGGING': 'false', 'MLFLOW_DISABLE_TELEMETRY': 'true'})\n"

# A trace that began 15 minutes ago and ends only when a line comes on stdin (an agent run longer than the overlap).
LONG_TRACE = ENV + textwrap.dedent("""
    import json, sys, time
    import mlflow
    mlflow.set_tracking_uri(sys.argv[1]); mlflow.set_experiment(sys.argv[2])
    t0 = time.time_ns() - 15 * 60 * 10**9
    root = mlflow.start_span_no_context("agent", span_type="AGENT", inputs={"question": "long task"}, start_time_ns=t0)
    child = mlflow.start_span_no_context("lookup", span_type="TOOL", parent_span=root, inputs={"q": 1}, start_time_ns=t0 + 10**9)
    child.end(outputs="ok")
    print(json.dumps(root.trace_id), flush=True)
    sys.stdin.readline()
    root.end(outputs="finished")
""")

# `N` small finished traces, one millisecond apart at least, oldest first; prints their ids.
MANY_TRACES = ENV + textwrap.dedent("""
    import json, sys, time
    import mlflow
    mlflow.set_tracking_uri(sys.argv[1]); mlflow.set_experiment(sys.argv[2])
    ids = []
    for i in range(int(sys.argv[3])):
        with mlflow.start_span("agent", span_type="AGENT") as span:
            span.set_inputs({"question": f"q{i}"}); span.set_outputs(f"a{i}")
        ids.append(mlflow.get_last_active_trace_id()); time.sleep(0.01)
    print(json.dumps(ids))
""")


def _load(url: str, *tasks: str, experiment: str) -> list[str]:
    return json.loads(run_loader(LOADER, url, experiment, *tasks).strip().splitlines()[-1])


def _script(code: str, *args: str) -> list[str]:
    out = _forkserver.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=180, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.fixture
def url(mlflow_url):
    """The session's MLflow server (tests/conftest.py): these tests trace into experiments of their own names."""
    return mlflow_url


def _case_ids(run: Path) -> list[str]:
    return [json.loads(x)["case_id"] for x in (run / "results.jsonl").read_text().splitlines()]


def _ours(url: str, trace_id: str, name: str | None = None) -> list:
    import mlflow

    return [a for a in mlflow.MlflowClient(tracking_uri=url).get_trace(trace_id).info.assessments
            if "tracejudge.run" in (a.metadata or {}) and name in (None, a.name)]


def test_a_trace_in_progress_is_skipped_then_read_once_finished(url, tmp_path, capsys):
    first = _load(url, "sequence", experiment="longrun")
    long = _forkserver.popen([sys.executable, "-c", LONG_TRACE, url, "longrun"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        long_id = json.loads(long.stdout.readline())
        cfg = sweep_config(tmp_path, "mlflow-server", {"tracking_uri": url, "experiment": "longrun", "start": "last_run"}, max_calls=3)
        assert main(["run", str(cfg), "--no-progress"]) in (0, 1)
        assert _case_ids(tmp_path / "run") == first  # not scored on half a trace
        assert "skipped 1 trace(s) still in progress" in capsys.readouterr().err
        long.communicate("done\n", timeout=60)
    finally:
        long.kill()
    # The next night's window (its start less 600 s) begins after the long trace's start: it is read all the same.
    assert main(["run", str(cfg), "--no-progress"]) in (0, 1)
    assert "still in progress" not in capsys.readouterr().err
    assert _case_ids(tmp_path / "run") == [*first, long_id]
    result = json.loads((tmp_path / "run" / "results.jsonl").read_text().splitlines()[-1])
    assert result["status"] == "ok" and result["metadata"]["mlflow"]["state"] == "OK"


def test_a_reviewers_override_stands_at_the_next_export(url, tmp_path, capsys):
    import mlflow
    from mlflow.entities import AssessmentSource

    ids = _load(url, "sequence", experiment="f07")
    cfg = sweep_config(tmp_path, "mlflow-server", {"tracking_uri": url, "experiment": "f07"}, max_calls=3)
    assert main(["run", str(cfg), "--no-progress"]) in (0, 1)
    assert main(["export", str(tmp_path / "run"), "--to", "mlflow", "--tracking-uri", url]) == 0
    judged = next(a for a in _ours(url, ids[0], "TaskCompletion"))
    mlflow.set_tracking_uri(url)
    mlflow.override_feedback(trace_id=ids[0], assessment_id=judged.assessment_id, value=0.0, rationale="reviewer: wrong",
                             source=AssessmentSource(source_type="HUMAN", source_id="alice@example.com"))
    capsys.readouterr()
    assert main(["export", str(tmp_path / "run"), "--to", "mlflow", "--tracking-uri", url]) == 0
    err = capsys.readouterr().err
    assert "exported 0 assessments to MLflow (0 new, 0 updated, 2 already there" in err and "a reviewer overrode" in err
    valid = [a for a in mlflow.MlflowClient(tracking_uri=url).get_trace(ids[0]).info.assessments
             if a.name == "TaskCompletion" and a.valid is not False]
    assert [(a.source.source_type, a.value) for a in valid] == [("HUMAN", 0.0)]


def test_a_forced_resume_keeps_the_run_key(url, tmp_path, capsys):
    import mlflow
    from tracejudge.engine import store
    from tracejudge.stages.export.mlflow_sink import run_key

    ids = _load(url, "sequence", "failing", experiment="forced")
    run = tmp_path / "run"
    cfg = sweep_config(tmp_path, "mlflow-server", {"tracking_uri": url, "experiment": "forced"}, max_calls=3)
    assert main(["run", str(cfg), "--no-progress", "--set", "dataset.limit=1"]) in (0, 1)
    key = run_key(run)
    assert main(["export", str(run), "--to", "mlflow", "--tracking-uri", url]) == 0
    assert main(["run", str(cfg), "--no-progress", "--force"]) in (0, 1)  # the limit dropped: manifest.json's hash changes
    assert run_key(run) == key
    capsys.readouterr()
    assert main(["export", str(run), "--to", "mlflow", "--tracking-uri", url]) == 0
    assert "exported 2 assessments to MLflow (2 new, 0 updated, 2 already there" in capsys.readouterr().err
    assert all(len(_ours(url, tid)) == 2 for tid in ids)
    # An export by an older version after the --force wrote under the manifest's new hash: read as this run's, one kept.
    old = f"{store.read_manifest(run)['config_hash'][:12]}@{key.split('@', 1)[1]}"
    assert old != key
    a = _ours(url, ids[0], "MaxToolCalls")[0]
    mlflow.set_tracking_uri(url)
    mlflow.log_feedback(trace_id=ids[0], name=a.name, value=a.value, source=a.source, rationale=a.rationale,
                        metadata={**a.metadata, "tracejudge.run": old})
    assert main(["export", str(run), "--to", "mlflow", "--tracking-uri", url]) == 0
    assert "0 new, 0 updated, 4 already there, 0 traces not found, 1 duplicates deleted" in capsys.readouterr().err
    assert all(len(_ours(url, tid)) == 2 for tid in ids)


def test_the_probe_sends_the_clients_token(url, tmp_path, capsys, monkeypatch):
    _load(url, "sequence", experiment="authed")
    with AuthProxy(url, "s3cret") as proxy:
        cfg = sweep_config(tmp_path, "mlflow-server", {"tracking_uri": proxy.url, "experiment": "authed"}, max_calls=3)
        assert main(["run", str(cfg), "--no-progress"]) == 3  # no token: refused, and the message says none was sent
        assert "no credential was sent" in capsys.readouterr().err
        monkeypatch.setenv("MLFLOW_TRACKING_TOKEN", "s3cret")
        assert main(["run", str(cfg), "--no-progress"]) in (0, 1)
        assert main(["export", str(tmp_path / "run"), "--to", "mlflow", "--tracking-uri", proxy.url]) == 0
    assert "exported 2 assessments to MLflow (2 new" in capsys.readouterr().err


def test_an_unknown_or_deleted_experiment_is_a_config_error(url, tmp_path, capsys):
    import mlflow

    for options in ({"experiment_ids": ["999"]}, {"experiment_ids": ["not-a-number"]}):
        cfg = sweep_config(tmp_path, "mlflow-server", {"tracking_uri": url, **options}, max_calls=3)
        assert main(["run", str(cfg), "--no-progress"]) == 2
        assert f"no experiment {options['experiment_ids'][0]} at {url}" in capsys.readouterr().err
    client = mlflow.MlflowClient(tracking_uri=url)
    eid = client.create_experiment("smoke")
    client.delete_experiment(eid)
    for options in ({"experiment": "smoke"}, {"experiment_ids": [eid]}):
        cfg = sweep_config(tmp_path, "mlflow-server", {"tracking_uri": url, **options}, max_calls=3)
        assert main(["run", str(cfg), "--no-progress"]) == 2
        assert f"is deleted at {url}" in capsys.readouterr().err


class DeletingProxy(FaultProxy):
    """Forwards everything; before the second `traces/search` it runs `before_second` (a retention job deleting traces)."""

    def __init__(self, target: str, before_second) -> None:  # type: ignore[no-untyped-def]
        self.before_second, self.searches = before_second, 0
        super().__init__(target)

    async def _handle(self, request):  # type: ignore[no-untyped-def]
        if "traces/search" in request.path:
            self.searches += 1
            if self.searches == 2:
                await asyncio.to_thread(self.before_second)
        return await super()._handle(request)


def test_traces_deleted_during_a_paged_read_skip_none_after_them(url, tmp_path):
    import mlflow

    ids = _script(MANY_TRACES, url, "paged", "12")
    client = mlflow.MlflowClient(tracking_uri=url)
    experiment = client.get_experiment_by_name("paged").experiment_id
    with DeletingProxy(url, lambda: client.delete_traces(experiment, trace_ids=ids[:2])) as proxy:
        cfg = sweep_config(tmp_path, "mlflow-server", {"tracking_uri": proxy.url, "experiment": "paged", "page_size": 4}, max_calls=3)
        assert main(["run", str(cfg), "--no-progress"]) in (0, 1)
    got = _case_ids(tmp_path / "run")
    assert sorted(set(ids[2:]) - set(got)) == []  # every trace MLflow still holds was read
    assert len(got) == len(set(got))
