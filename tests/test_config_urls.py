"""URL keys of the config are checked when it loads: a value that is no http(s) URL with a host is a config error
(exit 2) naming the key, its line or `--set`, the value and an example; the URLs real servers use pass.

Real CLI processes on real files; the accepted URLs go through `load_config` on a real file, and one run
goes to the bundled judge simulator on 127.0.0.1 through its host name.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import _forkserver

CASE = {"id": "c1", "input": "Book a flight", "trace": {"steps": [{"tool_calls": [{"name": "a", "arguments": {}}]}], "output": "done"},
        "expected_tool_calls": [{"name": "a"}]}
JUDGE = "metrics: [{type: ToolCalls}, {type: TaskCompletion}]\njudge:\n  provider: openai\n  model: gpt-4o-mini\n  api_key_env: null\n"
WANTED = "Input should be an http:// or https:// URL{}, such as {}"


def cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return _forkserver.run([sys.executable, "-m", "tracejudge", *args], capture_output=True, text=True, cwd=cwd, timeout=120,
                          env={**os.environ, **(env or {})})


def write(tmp_path: Path, body: str) -> Path:
    (tmp_path / "cases.jsonl").write_text(json.dumps(CASE) + "\n")
    cfg = tmp_path / "eval.yaml"
    cfg.write_text("dataset: {path: cases.jsonl}\nrun: {dir: run}\n" + body)
    return cfg


def config_error(proc: subprocess.CompletedProcess[str], tmp_path: Path) -> list[str]:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.startswith("config error") and "Traceback" not in proc.stderr, proc.stderr
    assert not (tmp_path / "run").exists()  # refused before anything was run
    return proc.stderr.splitlines()


@pytest.mark.parametrize(("url", "detail"), [("localhost:8000", ""), ("http://:8000/v1", " with a host"), ("http://", " with a host"),
                                             ("ftp://gpu-box/v1", ""), ("http://gpu-box:80000/v1", " (port out of range 0-65535)"),
                                             ("http://[::1:8000/v1", " (invalid IPv6 URL)"),
                                             ("http://gpu box:8000/v1", " without spaces or control characters")])
def test_a_judge_base_url_that_is_no_url_is_a_config_error_naming_its_line(tmp_path: Path, url: str, detail: str) -> None:
    cfg = write(tmp_path, JUDGE + f"  base_url: {json.dumps(url)}\n")
    err = config_error(cli("run", str(cfg), cwd=tmp_path), tmp_path)
    assert f"{cfg}:8: judge.base_url: {WANTED.format(detail, 'http://127.0.0.1:8000/v1')} (got {json.dumps(url)})" in err, err


def test_a_judge_base_url_given_with_set_names_the_option(tmp_path: Path) -> None:
    cfg = write(tmp_path, JUDGE + "  base_url: http://127.0.0.1:8000/v1\n")
    err = config_error(cli("run", str(cfg), "--set", "judge.base_url=localhost:8000", cwd=tmp_path), tmp_path)
    assert (f'--set judge.base_url=localhost:8000: judge.base_url: {WANTED.format("", "http://127.0.0.1:8000/v1")} '
            '(got "localhost:8000")') in err, err
    # `estimate` loads the config the same way: no estimate of a judge that cannot be reached.
    err = config_error(cli("estimate", str(cfg), "--set", "judge.base_url=localhost:8000", cwd=tmp_path), tmp_path)
    assert any(line.endswith('(got "localhost:8000")') for line in err), err


@pytest.mark.parametrize(("body", "key", "example"), [
    ("metrics: [{type: ToolCalls}]\ntarget: {kind: http, url: 'localhost:8000/agent'}\n", "target.url", "http://127.0.0.1:8000/agent"),
    (JUDGE + "  models: [{model: m, base_url: 'gpu-box:8000/v1'}]\n", "judge.models.0.base_url", "http://127.0.0.1:8000/v1"),
    ("metrics: [{type: ToolCalls}]\ndataset: {format: phoenix, options: {url: 'localhost:6006'}}\n", "dataset.options.url",
     "http://127.0.0.1:6006"),
])
def test_every_url_key_has_the_same_check(tmp_path: Path, body: str, key: str, example: str) -> None:
    cfg = write(tmp_path, body)
    if key.startswith("dataset"):  # a second `dataset:` would be a duplicate key: give the store with --set
        cfg.write_text(cfg.read_text().replace("dataset: {path: cases.jsonl}\n", ""))
    err = " ".join(config_error(cli("run", str(cfg), cwd=tmp_path), tmp_path))
    assert f"{key}: " in err and WANTED.format("", example) in err and "(got \"" in err, err


def test_a_bad_base_url_from_the_environment_names_the_variable(tmp_path: Path) -> None:
    cfg = write(tmp_path, "metrics: [{type: ToolCalls}, {type: TaskCompletion}]\njudge: {provider: openai, model: gpt-4o-mini}\n")
    err = config_error(cli("run", str(cfg), cwd=tmp_path, env={"OPENAI_BASE_URL": "localhost:8000", "OPENAI_API_KEY": "k"}), tmp_path)
    assert f"{cfg}:4: judge: base_url from OPENAI_BASE_URL='localhost:8000': {WANTED.format('', 'http://127.0.0.1:8000/v1')}" in err, err


@pytest.mark.parametrize(("body", "key"), [
    (JUDGE + "  base_url: 'http://${TJ_TEST_UNSET_HOST}:8000/v1'\n", "judge.base_url"),
    (JUDGE + "  models: [{model: m, base_url: 'https://gpu-box/${TJ_TEST_UNSET_HOST}/v1'}]\n", "judge.models.0.base_url"),
    ("metrics: [{type: ToolCalls}]\ntarget: {kind: http, url: 'http://${TJ_TEST_UNSET_HOST}/agent'}\n", "target.url"),
], ids=["judge", "panel", "target"])
def test_a_url_naming_an_unset_variable_is_a_config_error_naming_the_key_and_the_variable(tmp_path: Path, body: str, key: str) -> None:
    # It passed the check and the run sent its requests to a host named `${tj_test_unset_host}`: a URL is never expanded.
    env = {k: v for k, v in os.environ.items() if k != "TJ_TEST_UNSET_HOST"}
    proc = _forkserver.run([sys.executable, "-m", "tracejudge", "run", str(write(tmp_path, body))], capture_output=True, text=True,
                          cwd=tmp_path, timeout=120, env=env)
    err = " ".join(config_error(proc, tmp_path))
    assert f"{key}: Input should be an http:// or https:// URL without ${{TJ_TEST_UNSET_HOST}} (environment variable TJ_TEST_UNSET_HOST is not set" in err, err


@pytest.mark.parametrize(("url", "detail"), [("http://${TJ_TEST_SET_HOST}:8000/v1", " without ${TJ_TEST_SET_HOST} (a URL is not expanded"),
                                             ("http://gpu-box:8000/v1/${", " without `${`: a URL is not expanded")], ids=["set", "bare"])
def test_a_url_holding_a_reference_is_refused_even_when_its_variable_is_set(tmp_path: Path, url: str, detail: str) -> None:
    cfg = write(tmp_path, JUDGE + f"  base_url: {json.dumps(url)}\n")
    err = config_error(cli("run", str(cfg), cwd=tmp_path, env={"TJ_TEST_SET_HOST": "gpu-box"}), tmp_path)
    assert any(line.startswith(f"{cfg}:8: judge.base_url: Input should be an http:// or https:// URL{detail}") and line.endswith(f"(got {json.dumps(url)})")
               for line in err), err


@pytest.mark.parametrize("url", ["http://127.0.0.1:8000/v1", "https://api.openai.com/v1", "http://gpu-box:8000/v1", "http://gpu_box/v1",
                                 "http://[::1]:8000/v1", "http://[fe80::1%25eth0]:8000", "HTTPS://Example.COM",
                                 "https://my.openai.azure.com/openai/deployments/x", "http://localhost:11434/v1/",
                                 "http://127.0.0.1:8000/v1?api-version=2024-06-01"])
def test_the_urls_real_servers_use_pass(tmp_path: Path, url: str) -> None:
    from tracejudge.core.config import load_config

    cfg = write(tmp_path, JUDGE + f"  base_url: {json.dumps(url)}\n  models: [{{model: m, base_url: {json.dumps(url)}}}]\n"
                          f"target: {{kind: http, url: {json.dumps(url)}}}\n")
    config = load_config(cfg)
    assert config.judge.base_url == url and config.judge.models[0].base_url == url and config.target.url == url


def test_a_run_reaches_the_judge_by_its_host_name(tmp_path: Path, simulator) -> None:
    sim = simulator()
    cfg = write(tmp_path, JUDGE + f"  base_url: {sim.url.replace('127.0.0.1', 'localhost')}/v1\n")
    run = cli("run", str(cfg), "--no-progress", cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 results: ok 1" in run.stdout


@pytest.mark.parametrize("given", ["file", "set"])
@pytest.mark.parametrize(("fmt", "key", "url"), [("phoenix", "url", "http://user:pw@127.0.0.1:1/?tok=abc"),
                                                 ("phoenix", "url", "ftp://127.0.0.1:1/x?tok=abc#frag"),
                                                 ("mlflow-server", "tracking_uri", "http://user:pw@127.0.0.1:1/?tok=abc")])
def test_a_store_url_in_a_config_error_is_shown_without_user_password_or_query(tmp_path: Path, fmt: str, key: str, url: str,
                                                                                given: str) -> None:
    # README: URLs are shown without user, password or query (a token hides in either)
    body = f"dataset:\n  format: {fmt}\n  options: {{{key}: {json.dumps(url if given == 'file' else 'http://127.0.0.1:1')}}}\n"
    cfg = tmp_path / "eval.yaml"
    cfg.write_text(body + "metrics: [{type: MaxToolCalls, max_calls: 2}]\nrun: {dir: run}\n")
    extra = ["--set", f"dataset.options.{key}={url}"] if given == "set" else []
    err = "\n".join(config_error(cli("run", str(cfg), *extra, cwd=tmp_path), tmp_path))
    assert f"dataset.options.{key}" in err and "127.0.0.1:1/" in err, err
    assert "tok=abc" not in err and "user" not in err and "pw" not in err and "frag" not in err, err
