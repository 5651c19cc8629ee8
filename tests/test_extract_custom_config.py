"""User adapters by import path, option validation at config load, and `tracejudge extract` end to end."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import extract_lines
from tracejudge.core.config import load_config
from tracejudge.core.errors import ConfigError
from tracejudge.core.records import Case
import _forkserver

ADAPTER = textwrap.dedent('''
    def from_runs(record):
        return {"id": record["run"], "input": record["q"],
                "trace": {"steps": [{"tool_calls": [{"name": n} for n in record["tools"]]}], "output": record["a"]}}

    def with_options(record, options):
        return {"id": record["run"], "tags": [options["tag"]]}

    def broken(record):
        raise KeyError("q")

    NOT_A_FUNCTION = 3
''')


@pytest.fixture
def adapters(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    pkg = tmp_path / "userpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "adapters.py").write_text(ADAPTER)
    (tmp_path / "failing_on_import.py").write_text("raise RuntimeError('needs a licence key')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    return "userpkg.adapters"


def test_user_function_adapter(tmp_path: Path, adapters: str):
    got = extract_lines(tmp_path, f"{adapters}:from_runs", [{"run": "r1", "q": "hi", "tools": ["a", "b"], "a": "ok"}, {"run": "r2"}])
    assert isinstance(got[0], Case) and [c.name for c in got[0].trace.tool_calls()] == ["a", "b"]
    cid, err = got[1]
    assert err.kind == "invalid_input" and err.line == 2 and "KeyError" in err.message


def test_user_function_with_options(tmp_path: Path, adapters: str):
    (case,) = extract_lines(tmp_path, f"{adapters}:with_options", [{"run": "r1"}], {"tag": "mine"})
    assert case.tags == ["mine"]


def _config(tmp_path: Path, dataset: str) -> Path:
    (tmp_path / "d.jsonl").write_text('{"messages": []}\n')
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"dataset:\n  path: d.jsonl\n{textwrap.indent(dataset, '  ')}\nmetrics: []\n")
    return cfg


@pytest.mark.parametrize(
    "dataset,message",
    [
        ("format: nosuchpkg.adapters:from_x", "c.yaml:3: dataset.format: cannot import adapter 'nosuchpkg.adapters:from_x': No module named 'nosuchpkg'"),
        ("format: userpkg.adapters:missing", "module 'userpkg.adapters' has no attribute 'missing'"),
        ("format: userpkg.adapters:NOT_A_FUNCTION", "is a int, not a function or a Format"),
        ("format: failing_on_import:f", "importing 'failing_on_import' raised RuntimeError: needs a licence key"),
        ("format: no-such-format", "unknown format 'no-such-format'; expected one of: anthropic-messages, bfcl, inspect, json-path, langfuse, mlflow, mlflow-server, multivon, native, openai-agents, openai-messages, otel, phoenix, smolagents, tau-bench, tau-bench-tasks, tau2-bench"),
        ("format: otel\noptions: {group_by: span}", "c.yaml:4: dataset.options.group_by"),
        ("format: openai-messages\noptions: {error_prefix: 'Error:'}", "c.yaml:4: dataset.options.error_prefix: openai-messages: unknown key"),
        ("format: json-path\noptions: {input: 'a..b'}", "c.yaml:4: dataset.options.input: json-path: 'a..b' at character 3: empty key"),
    ],
)
def test_config_errors_name_file_line_and_key(tmp_path: Path, adapters: str, dataset: str, message: str):
    with pytest.raises(ConfigError) as exc:
        load_config(_config(tmp_path, dataset))
    assert message in str(exc.value)


def test_valid_options_load(tmp_path: Path, adapters: str):
    cfg = load_config(_config(tmp_path, "format: otel\noptions: {group_by: [session.id], exclude: ['*.truth.json']}"))
    assert cfg.dataset.options["group_by"] == ["session.id"]
    assert load_config(_config(tmp_path, "format: userpkg.adapters:from_runs")).dataset.format == "userpkg.adapters:from_runs"


def test_cli_extract_writes_native_cases(tmp_path: Path):
    data = tmp_path / "chats.jsonl"
    rows = [{"id": "a", "messages": [{"role": "user", "content": "hi"},
                                     {"role": "assistant", "tool_calls": [{"id": "1", "type": "function", "function": {"name": "f", "arguments": "{\"x\": 1}"}}]},
                                     {"role": "tool", "tool_call_id": "1", "content": "ok"}, {"role": "assistant", "content": "done"}]},
            "not json"]
    data.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    cfg = tmp_path / "c.yaml"
    cfg.write_text("dataset: {path: chats.jsonl, format: openai-messages}\n")
    out = tmp_path / "cases.jsonl"
    exe = Path(sys.executable).with_name("tracejudge")
    proc = _forkserver.run([str(exe), "extract", str(cfg), "-o", str(out)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1, proc.stderr  # a record was invalid: the valid one is written, the status says so
    assert "chats.jsonl:2" in proc.stderr and "invalid JSON" in proc.stderr
    (line,) = out.read_text().splitlines()
    case = json.loads(line)
    assert case["id"] == "a" and case["trace"]["steps"][0]["tool_calls"] == [{"id": "1", "name": "f", "arguments": {"x": 1}, "result": "ok"}]
