"""Credentials in a trace never reach results, reports or exports through a deterministic metric's reason.

The canaries are assembled at run time (no credential-shaped literal in the source) and are
fake: AWS's documented example key id, a JWT of `{"alg":"HS256"}` / `{"sub":"1234567890"}`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml
from tracejudge.llm.redact import MASK, redact, redact_quoted
from tracejudge.stages.score.value_match import render_call, short_json, short_pair

TRACEJUDGE = Path(sys.executable).with_name("tracejudge")

OPENAI = "sk-" + "proj-" + "Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0UvWxYz"
JWT = "eyJ" + "hbGciOiJIUzI1NiJ9" + ".eyJ" + "zdWIiOiIxMjM0NTY3ODkwIn0" + ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
AWS = "AKIA" + "IOSFODNN7" + "EXAMPLE"
SLACK = "xox" + "b-" + "1234567890-0987654321-" + "AbCdEfGhIjKlMnOpQrSt"
GITHUB = "gh" + "p_" + "a1B2c3D4e5F6g7H8i9J0" * 2
PEM = "-----BEGIN " + "RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7bq2\n-----END RSA PRIVATE KEY-----"
CANARIES = {"openai": OPENAI, "jwt": JWT, "aws": AWS, "slack": SLACK, "github": GITHUB, "pem": PEM}
# What must not appear anywhere: each canary's distinctive tail (a cut key would still leak its start).
FRAGMENTS = ("Ab1Cd2Ef3Gh4", "IOSFODNN7", "SflKxwRJSMeK", "zdWIiOiIxMjM0", "0987654321", "a1B2c3D4e5F6", "MIIEpAIBAAKCAQEA")


def _run(tmp_path: Path, name: str, lines: list[dict], fmt: str, metrics: list[dict], code: int = 0) -> Path:
    data = tmp_path / f"{name}.jsonl"
    data.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    cfg = tmp_path / f"{name}.yaml"
    cfg.write_text(yaml.safe_dump({"dataset": {"path": str(data), "format": fmt}, "metrics": metrics,
                                   "run": {"dir": str(tmp_path / name)}, "cache": {"dir": str(tmp_path / "cache")}}), encoding="utf-8")
    got = subprocess.run([str(TRACEJUDGE), "run", str(cfg), "--no-progress"], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert got.returncode == code, got.stderr
    assert not any(f in got.stdout + got.stderr for f in FRAGMENTS)
    return tmp_path / name


def _leaks(run_dir: Path) -> dict[str, list[str]]:
    return {p.name: [f for f in FRAGMENTS if f in p.read_text(encoding="utf-8", errors="replace")]
            for p in sorted(run_dir.iterdir()) if p.is_file() and any(f in p.read_text(encoding="utf-8", errors="replace") for f in FRAGMENTS)}


def test_reasons_quoting_trace_text_mask_credentials_in_every_output(tmp_path: Path) -> None:
    args = {"token": OPENAI, "auth": f"Bearer {JWT}", "aws": AWS, "slack": SLACK, "gh": GITHUB, "key": PEM}
    output = "creds: " + " ".join(CANARIES.values())
    lines = [
        {"id": "calls", "input": "deploy", "expected_output": "ok",
         "trace": {"steps": [{"tool_calls": [{"name": "set_env", "arguments": args}]}], "output": output},
         "expected_tool_calls": [{"name": "set_env", "arguments": {"token": "x", "aws": "y"}}]},
        # The value whose cut once left the first characters of a key id: it starts just before the cut.
        {"id": "cut", "input": "x", "expected_output": {"a": 1},
         "trace": {"steps": [{"tool_calls": [{"name": "f", "arguments": {"a": "x" * 108 + " " + AWS}}]}], "output": "x" * 70 + " " + AWS},
         "expected_tool_calls": [{"name": "f", "arguments": {"a": "z"}}]},
        {"id": "json", "input": "x", "expected_output": {"k": "v"},
         "trace": {"output": json.dumps({"k": SLACK, "n": [GITHUB]})}},
        {"id": "passages", "input": "x", "expected_passages": [f"the key is {AWS}"],
         "trace": {"output": "x", "retrieved": [{"content": f"token {SLACK} here"}]}},
    ]
    metrics = [{"type": "ToolCalls"}, {"type": "ExactMatch"}, {"type": "ArgumentCorrectness", "tool_name": "set_env",
               "expected_arguments": {"token": "x"}, "match_mode": "exact"}, {"type": "RetrievalRecall"}, {"type": "RetrievalPrecision"},
               {"type": "JsonSchema", "schema": {"type": "object", "properties": {"k": {"type": "integer"}}}}]
    run_dir = _run(tmp_path, "run", lines, "native", metrics)
    csv = tmp_path / "out.csv"
    got = subprocess.run([str(TRACEJUDGE), "export", str(run_dir), "--to", "csv", str(csv)], capture_output=True, text=True, timeout=120)
    assert got.returncode == 0, got.stderr
    assert _leaks(run_dir) == {}
    assert not any(f in csv.read_text(encoding="utf-8") for f in FRAGMENTS)
    results = {r["case_id"]: r for r in map(json.loads, (run_dir / "results.jsonl").read_text(encoding="utf-8").splitlines())}
    reasons = {cid: {k: s["reason"] for k, s in r["scores"].items()} for cid, r in results.items()}
    assert f'"auth":"Bearer {MASK}"' in reasons["calls"]["ToolCalls"]
    assert f'"aws":"{MASK}"' in reasons["calls"]["ToolCalls"]
    assert reasons["calls"]["ExactMatch"].startswith(f"expected 'ok', got 'creds: {MASK} {MASK} {MASK} {MASK} {MASK}")
    assert " [RED…" in reasons["cut"]["ToolCalls"] and "AK" not in reasons["cut"]["ToolCalls"]  # the mask cut, not the key
    assert reasons["cut"]["ExactMatch"].endswith(" [REDACTED'")  # cut at 80 characters, as before
    assert MASK in reasons["json"]["JsonSchema"]
    assert all(MASK in e["message"] for e in results["json"]["scores"]["JsonSchema"]["details"]["errors"])
    assert MASK in reasons["passages"]["RetrievalRecall"] and MASK in reasons["passages"]["RetrievalPrecision"]


def test_invalid_input_messages_mask_quoted_values(tmp_path: Path) -> None:
    lines = [{"id": "m1", "messages": [{"role": "user", "content": "hi"}, {"role": AWS, "content": "x"}]}]
    run_dir = _run(tmp_path, "chats", lines, "openai-messages", [{"type": "ExactMatch", "expected": "ok"}], code=1)
    result = json.loads((run_dir / "results.jsonl").read_text(encoding="utf-8"))
    assert result["status"] == "invalid_input"
    assert result["error"]["message"] == f"unknown message role '{MASK}'"
    assert _leaks(run_dir) == {}


def test_credential_shapes_are_masked_and_ordinary_text_is_not() -> None:
    for secret in CANARIES.values():
        assert redact(f"x {secret} y") == f"x {MASK} y"
        assert redact_quoted(f"x {secret} y") == f"x {MASK} y"
    assert redact_quoted(f"Authorization: Basic dXNlcjpwYXNzd29yZA== ok") == f"Authorization: {MASK} ok"
    assert redact_quoted('{"api_key":"abc123","x":1}') == f'{{"api_key":"{MASK}","x":1}}'
    ordinary = [
        "Basic economy flights cannot be modified; bearer bonds are fine",
        '{"cabin":"basic_economy","api_key":{"type":"string"},"task_id":"task_abcdefgh"}',
        "an authorization level of 3; the eyJ prefix alone; AKIA123; xoxb-short; ghp_short; asked-for-it",
    ]
    for text in ordinary:
        assert redact_quoted(text) is text
        assert redact_quoted(text, 20) is text


def test_a_cut_never_leaves_part_of_a_key() -> None:
    value = "x" * 50 + " " + AWS + " " + "y" * 200
    for shown in (51, 55, 59, 60, 70):
        text = redact_quoted(json.dumps(value), shown)[:shown]
        assert "AK" not in text and "IOSF" not in text
    assert "AK" not in short_json(value) and "AK" not in render_call("f", {"a": value})
    assert "AK" not in render_call("f", {"a": "x" * 108 + " " + AWS, "b": "c" * 300})
    want, seen = short_pair("z" * 100 + " a", "z" * 100 + " " + AWS)
    assert MASK[:5] in seen and "IOSF" not in seen
    # Shortened by the mask, a start of the arguments is still marked as cut.
    assert render_call("f", {"a": AWS, "b": "q" * 200}).endswith("…)")
