"""README's scale-out recipe as written: `ray start --head` in its own process (token authentication on, as Ray 2.60
turns it on on a machine that ran Ray before), a `tracejudge run` attached by address, results equal to the in-process run;
an attach that cannot work says why in one line; the actors of a killed head end with its Ray job."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from tracejudge.core.config import load_config
from tracejudge.engine import runner

pytest.importorskip("ray")
if not Path("/proc").is_dir():
    pytest.skip("the Ray process tests read Linux's /proc", allow_module_level=True)

import ray_procs  # noqa: E402
from ray_helpers import native_dataset, results_by_key  # noqa: E402
import _forkserver

TESTS = Path(__file__).resolve().parent


def _config(tmp: Path, n: int = 40, metrics: str = "[{type: ToolCalls}, {type: TrajectoryMatch, order: in_order}]") -> Path:
    cfg = tmp / "run.yaml"
    cfg.write_text(f"dataset: {{path: {native_dataset(tmp / 'cases.jsonl', n, broken=False)}, format: native}}\nmetrics: {metrics}\n"
                   f"run: {{dir: {tmp / 'unused'}, chunk_size: 8}}\ncache: {{dir: {tmp / 'cache'}}}\n")
    return cfg


def _tracejudge(cfg: Path, run_dir: Path, address: str, env: dict[str, str], timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """README's command: `tracejudge run CONFIG --set run.executor=ray --set run.ray_address=HEAD:PORT`."""
    return _forkserver.run([sys.executable, "-m", "tracejudge", "run", str(cfg), "--set", "run.executor=ray", "--set", f"run.ray_address={address}",
                           "--run-dir", str(run_dir), "--no-progress"], env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def head() -> Iterator[ray_procs.Head]:
    with ray_procs.ray_head(num_cpus=2, pythonpath=TESTS) as started:  # its workers import ray_helpers
        yield started


def test_the_readme_recipe_attaches_by_address_with_the_heads_token_and_matches_in_process(tmp_path, head):
    cfg = _config(tmp_path)
    on_cluster = _tracejudge(cfg, tmp_path / "ray", head.address, ray_procs.clean_env(head.home))
    assert on_cluster.returncode == 0, on_cluster.stderr[-3000:]
    config = load_config(cfg, ["run.executor=inprocess"])
    local = anyio.run(lambda: runner.run(config, run_dir=tmp_path / "local"))
    assert local.new_results == 40
    assert results_by_key(tmp_path / "ray") == results_by_key(tmp_path / "local")
    summary = json.loads((tmp_path / "ray" / "summary.json").read_text())
    for key in ("results", "status", "metrics"):
        assert summary.get(key) == local.summary.get(key)
    # The token travelled from ~/.ray/auth_token to Ray, and nowhere else.
    written = [p.read_text(errors="replace") for p in (tmp_path / "ray").rglob("*") if p.is_file()]
    assert not any(head.token in text for text in [on_cluster.stdout, on_cluster.stderr, *written])
    assert "Token authentication" not in on_cluster.stderr


@pytest.mark.parametrize("token", [None, "not-the-heads-token-5e1f"])
def test_an_attach_without_the_heads_token_is_one_line_naming_the_address(tmp_path, head, token):
    home = tmp_path / "home"
    home.mkdir()
    extra = {"RAY_AUTH_TOKEN": token} if token else {}
    # Ray retries a refused attach 20 times, a second apart; 2 say the same here.
    got = _tracejudge(_config(tmp_path, n=4), tmp_path / "run", head.address,
                      ray_procs.clean_env(home, RAY_gcs_server_port_wait_time_s="2", **extra))
    assert got.returncode == 3, got.stderr[-3000:]
    lines = got.stderr.strip().splitlines()
    assert len(lines) == 1, got.stderr
    assert head.address in lines[0]
    assert ("refused the token from RAY_AUTH_TOKEN" if token else "requires a token") in lines[0]
    assert "RAY_AUTH_TOKEN" in lines[0] and "Traceback" not in got.stderr
    assert token is None or token not in got.stderr + got.stdout
    assert not (tmp_path / "run" / "crash.log").exists()


def test_an_attach_to_a_closed_port_is_one_line_naming_the_address(tmp_path):
    address = f"127.0.0.1:{ray_procs.free_port()}"
    got = _tracejudge(_config(tmp_path, n=4), tmp_path / "run", address, ray_procs.clean_env(tmp_path))
    assert got.returncode == 3, got.stderr[-3000:]
    lines = got.stderr.strip().splitlines()
    assert len(lines) == 1, got.stderr
    assert address in lines[0] and "nothing accepts connections there" in lines[0] and "ray start --head" in lines[0]
    assert "Traceback" not in got.stderr and not (tmp_path / "run" / "crash.log").exists()


def test_the_actors_of_a_killed_head_end_with_its_job_and_the_cluster_stays(tmp_path, head):
    cfg = _config(tmp_path, n=2000, metrics="[{type: 'ray_helpers:SlowLength', sleep_ms: 50}]")
    results = tmp_path / "run" / "results.jsonl"
    env = ray_procs.clean_env(head.home, PYTHONPATH=str(TESTS))  # the head imports ray_helpers too (the cluster has it: `head`)
    driver = _forkserver.popen([sys.executable, "-m", "tracejudge", "run", str(cfg), "--set", "run.executor=ray", "--set", f"run.ray_address={head.address}",
                               "--run-dir", str(tmp_path / "run"), "--no-progress"], env=env, start_new_session=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    actors: list[int] = []
    try:
        ray_procs.wait_for_results(driver, results, 8)
        actors = [pid for pid in ray_procs.descendants(head.raylet) if ray_procs.cmdline(pid).startswith("ray::CpuWorker")]
        assert actors, "the run's actors were not found on the cluster"
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait()
        assert ray_procs.wait_gone(actors, 60) == []
        assert ray_procs.running(head.raylet)  # the shared cluster itself goes on
    finally:
        driver.kill()
        driver.wait()
        ray_procs.kill_all(actors)


def test_the_token_source_follows_rays_order_and_never_holds_the_token(tmp_path, monkeypatch):
    from tracejudge.engine.executors.ray_attach import explain, token_source

    for name in ("RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_AUTH_MODE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert token_source() == (None, None)
    (tmp_path / ".ray").mkdir()
    (tmp_path / ".ray" / "auth_token").write_text("secret-in-home")
    assert token_source() == (str(tmp_path / ".ray" / "auth_token"), None)
    monkeypatch.setenv("RAY_AUTH_TOKEN_PATH", str(tmp_path / "missing"))
    source, problem = token_source()
    assert source is None and str(tmp_path / "missing") in problem  # Ray reads only that file then: no fallback
    monkeypatch.setenv("RAY_AUTH_TOKEN", "secret-in-env")
    assert token_source() == ("RAY_AUTH_TOKEN", None)
    # Ray's refusal, as ray.init raises it: a ConnectionError caused by a RuntimeError quoting the last attempt.
    refused = ConnectionError("Failed to connect to Ray cluster at 192.0.2.2:6379")
    refused.__cause__ = RuntimeError("Failed to connect to GCS. Last connection error: Traceback (most recent call last):\n"
                                     "ray.exceptions.AuthenticationError: RPC error: InvalidAuthToken: Authentication token is missing")
    line = explain("127.0.0.1:6379", refused)
    assert line.startswith("cannot attach to the Ray cluster at 127.0.0.1:6379") and "refused the token from RAY_AUTH_TOKEN" in line
    assert "secret" not in line and "\n" not in line
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    assert "RAY_AUTH_MODE=disabled is set here" in explain("127.0.0.1:6379", refused)
    other = ConnectionError("Failed to connect to Ray cluster at 192.0.2.2:6379")
    other.__cause__ = RuntimeError("Failed to connect to GCS. Last connection error: Traceback (most recent call last):\n  File x\nOSError: boom")
    assert explain("127.0.0.1:6379", other).endswith("RuntimeError: OSError: boom (is the head up, and does it run the same Ray, "
                                                     f"{__import__('ray').__version__}, and Python as here?)")
