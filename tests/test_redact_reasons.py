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
import _forkserver

TRACEJUDGE = Path(sys.executable).with_name("tracejudge")

OPENAI = "sk-" + "proj-" + "Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0UvWxYz"
JWT = "eyJ" + "hbGciOiJIUzI1NiJ9" + ".eyJ" + "zdWIiOiIxMjM0NTY3ODkwIn0" + ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
AWS = "AKIA" + "IOSFODNN7" + "EXAMPLE"
SLACK = "xox" + "b-" + "1234567890-0987654321-" + "AbCdEfGhIjKlMnOpQrSt"
GITHUB = "gh" + "p_" + "a1B2c3D4e5F6g7H8i9J0" * 2
# Shapes the first list missed; the AWS secret is AWS's documented example.
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY"
GOOGLE = "AI" + "zaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"
HF = "hf" + "_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"
HEX_KEY = "9f86d081884c7d65" + "9a2feaa0c55ad015"
ANTHROPIC = "sk-" + "ant-api03-" + "Xy12Ab34Cd56Ef78Gh90Ij12Kl34Mn56Op78"
DB_PASSWORD = "Tr0ub4dor" + "-and-3"
BASIC = "dXNlcjpz" + "ZWNyZXQ="  # base64 of a user:password with no digit, padded
PEM = "-----BEGIN " + "RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7bq2\n-----END RSA PRIVATE KEY-----"
CANARIES = {"openai": OPENAI, "jwt": JWT, "aws": AWS, "slack": SLACK, "github": GITHUB, "pem": PEM}
# What must not appear anywhere: each canary's distinctive tail (a cut key would still leak its start).
FRAGMENTS = ("Ab1Cd2Ef3Gh4", "IOSFODNN7", "SflKxwRJSMeK", "zdWIiOiIxMjM0", "0987654321", "a1B2c3D4e5F6", "MIIEpAIBAAKCAQEA",
             "EXAMPLEKEY", GOOGLE[4:20], HF[3:20], DB_PASSWORD)


def _run(tmp_path: Path, name: str, lines: list[dict], fmt: str, metrics: list[dict], code: int = 0) -> Path:
    data = tmp_path / f"{name}.jsonl"
    data.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    cfg = tmp_path / f"{name}.yaml"
    cfg.write_text(yaml.safe_dump({"dataset": {"path": str(data), "format": fmt}, "metrics": metrics,
                                   "run": {"dir": str(tmp_path / name)}, "cache": {"dir": str(tmp_path / "cache")}}), encoding="utf-8")
    got = _forkserver.run([str(TRACEJUDGE), "run", str(cfg), "--no-progress"], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert got.returncode == code, got.stderr
    assert not any(f in got.stdout + got.stderr for f in FRAGMENTS)
    return tmp_path / name


def _export_csv(tmp_path: Path, run_dir: Path) -> str:
    csv = tmp_path / f"{run_dir.name}.csv"
    got = _forkserver.run([str(TRACEJUDGE), "export", str(run_dir), "--to", "csv", str(csv)], capture_output=True, text=True, timeout=120)
    assert got.returncode == 0, got.stderr
    return csv.read_text(encoding="utf-8")


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
    csv = _export_csv(tmp_path, run_dir)
    assert _leaks(run_dir) == {}
    assert not any(f in csv for f in FRAGMENTS)
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


def test_a_credential_used_as_a_key_is_masked_in_the_field_path(tmp_path: Path) -> None:
    lines = [{"id": "s6", "input": "x", "trace": {"steps": [], "output": "o"}, OPENAI: 1}]
    run_dir = _run(tmp_path, "keyed", lines, "native", [{"type": "ToolCalls"}], code=1)
    result = json.loads((run_dir / "results.jsonl").read_text(encoding="utf-8"))
    assert result["status"] == "invalid_input"
    assert result["error"]["field"] == MASK
    assert _leaks(run_dir) == {}


def test_a_credential_inside_a_key_name_is_masked_in_the_field_path(tmp_path: Path) -> None:
    # An unknown key that holds a key after an underscore (`extra_sk-…`): `sk-` counted only after a word boundary.
    call = {"name": "f", "arguments": {}, "extra_" + OPENAI: 1}
    lines = [{"id": "s8", "input": "x", "trace": {"steps": [{"tool_calls": [call]}], "output": "o"}}]
    run_dir = _run(tmp_path, "inner", lines, "native", [{"type": "ToolCalls"}], code=1)
    result = json.loads((run_dir / "results.jsonl").read_text(encoding="utf-8"))
    assert result["status"] == "invalid_input" and result["error"]["field"].endswith(f"extra_{MASK}"), result["error"]
    assert _leaks(run_dir) == {}
    assert redact_quoted("task-100200300 risk_sk-1 SKU sk-100200300") == "task-100200300 risk_sk-1 SKU sk-100200300"


def test_a_credential_used_as_a_case_metric_key_is_masked_in_the_reason(tmp_path: Path) -> None:
    lines = [{"id": "s7", "input": "x", "trace": {"steps": [], "output": "o"}, "metrics": [{"type": "ToolCalls", OPENAI: 1}]}]
    run_dir = _run(tmp_path, "spec", lines, "native", [{"type": "ToolCalls"}], code=1)
    reason = json.loads((run_dir / "results.jsonl").read_text(encoding="utf-8"))["scores"]["ToolCalls"]["reason"]
    assert f"metrics.0.{MASK} does not validate" in reason
    assert _leaks(run_dir) == {}


def test_credential_shapes_are_masked_and_ordinary_text_is_not() -> None:
    for secret in CANARIES.values():
        assert redact(f"x {secret} y") == f"x {MASK} y"
        assert redact_quoted(f"x {secret} y") == f"x {MASK} y"
    assert redact_quoted(f"Authorization: Basic dXNlcjpwYXNzd29yZA== ok") == f"Authorization: Basic {MASK} ok"  # (its scheme kept)
    assert redact_quoted(f'{{"api_key":"{HEX_KEY}","x":1}}') == f'{{"api_key":"{MASK}","x":1}}'
    ordinary = [
        "Basic economy flights cannot be modified; bearer bonds are fine",
        '{"cabin":"basic_economy","api_key":{"type":"string"},"task_id":"task_abcdefgh"}',
        "an authorization level of 3; the eyJ prefix alone; AKIA123; xoxb-short; ghp_short; asked-for-it",
    ]
    for text in ordinary:
        assert redact_quoted(text) is text
        assert redact_quoted(text, 20) is text


# (where, credential): `where % credential` is masked to `where % MASK`, in a trace's text and in a reply's.
MUST_MASK = [
    ("key %s", OPENAI), ("key %s", ANTHROPIC), ("Authorization: Bearer %s", JWT), ("Authorization: Basic %s", BASIC),
    ("api_key: %s", HEX_KEY), ('{"API_KEY": "%s"}', HEX_KEY), ("aws_secret_access_key=%s", AWS_SECRET),
    ("AWS_SECRET_ACCESS_KEY: %s next", AWS_SECRET), ("maps key %s.", GOOGLE), ("token=%s", HF),
    ("postgres://admin:%s@db.internal:5432/app", DB_PASSWORD), ("redis://:%s@cache/0", DB_PASSWORD),
    ('{"dsn": "mysql+pymysql://u:%s@h/db"}', DB_PASSWORD),
]
# Trace text that only looks like a credential's surroundings: `redact_quoted` keeps it as it is.
MUST_KEEP = [
    "api_key: not configured",
    "payment authorization: declined by bank",
    "pre-authorization: $120.00 hold",
    "Basic plan-2024",
    "basic 2024-fare",
    "the bearer 12345678 of this bond",
    "sk-2024-05-26-A",
    "SKU sk-100200300",
    '{"aws_secret_access_key": "<set me>", "url": "https://example.com/users/@me"}',
    "write to ops@example.com or https://example.com:8080/path",
    "hf_hub_download('gpt2'); AIza is a prefix",
]


def test_credentials_in_trace_text_are_masked_and_look_alikes_kept() -> None:
    for where, credential in MUST_MASK:
        text, want = where % credential, where % MASK
        assert redact_quoted(text) == want, text
        assert redact(text) == want, text
        assert DB_PASSWORD not in redact_quoted(text, 20)
    for text in MUST_KEEP:
        assert redact_quoted(text) is text, text
        assert redact_quoted(text, 10) is text, text
    # A reply's text keeps the stricter rule: any value after a credential's name is masked.
    assert redact("api_key: not configured") == f"api_key: {MASK} configured"
    assert redact("Basic plan-2024") == f"Basic {MASK}"


def test_look_alikes_survive_and_new_shapes_are_masked_in_results(tmp_path: Path) -> None:
    args = {"note": "api_key: not configured", "auth": "payment authorization: declined by bank", "hold": "pre-authorization: $120.00 hold",
            "plan": "Basic plan-2024", "sku": "SKU sk-100200300", "aws": f"aws_secret_access_key={AWS_SECRET}",
            "maps": GOOGLE, "hf": HF, "dsn": f"postgres://admin:{DB_PASSWORD}@db/app"}
    lines = [{"id": "args", "input": "x", "trace": {"steps": [{"tool_calls": [{"name": "setup", "arguments": args}]}], "output": "x"},
              "expected_tool_calls": [{"name": "setup", "arguments": {"note": "y"}}]}]
    run_dir = _run(tmp_path, "shapes", lines, "native", [{"type": "ToolCalls"}, {"type": "ArgumentCorrectness", "tool_name": "setup",
                                                                                 "expected_arguments": {"note": "y"}, "match_mode": "exact"}])
    csv = _export_csv(tmp_path, run_dir)
    assert _leaks(run_dir) == {}
    assert not any(f in csv for f in FRAGMENTS)
    (result,) = map(json.loads, (run_dir / "results.jsonl").read_text(encoding="utf-8").splitlines())
    reason = result["scores"]["ToolCalls"]["reason"]
    for kept in ('got "api_key: not configured"', '"auth":"payment authorization: declined by bank"', '"aws":"aws_secret_access_key=[REDACTED]"'):
        assert kept in reason, reason
    actual = result["scores"]["ArgumentCorrectness"]["details"]["mismatches"]
    assert actual["note"]["actual"] == "api_key: not configured"
    assert actual["auth"]["actual"] == "payment authorization: declined by bank"
    assert actual["hold"]["actual"] == "pre-authorization: $120.00 hold"
    assert actual["plan"]["actual"] == "Basic plan-2024" and actual["sku"]["actual"] == "SKU sk-100200300"
    assert actual["aws"]["actual"] == f"aws_secret_access_key={MASK}"
    assert actual["dsn"]["actual"] == f"postgres://admin:{MASK}@db/app"
    assert actual["maps"]["actual"] == actual["hf"]["actual"] == MASK


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


LEAKY = '''
import tracejudge
from tracejudge import Score
from tracejudge.stages.score.base import Metric


@tracejudge.metric
def echoes(case, trace):
    """Quotes the output in its reason, as metric authors do."""
    return Score(value=0.0, reason=f"output was {trace.output!r}", details={"seen": trace.output})


@tracejudge.metric
def raises(case, trace):
    raise ValueError(f"could not parse {trace.output}")


class EchoClass(Metric):
    """A metric class of the user's own, not made by the decorator."""

    def evaluate(self, case):
        return Score(value=1.0, passed=True, reason="first tool: " + case.trace.tool_calls()[0].name)
'''


def test_custom_metric_reasons_and_tool_names_are_masked_in_every_output(tmp_path: Path) -> None:
    # A custom metric's reason (and a tool name) went into results.jsonl, report.md and exports as they were:
    # only the built-in metrics' quotes of trace text were masked.
    (tmp_path / "leaky.py").write_text(LEAKY, encoding="utf-8")
    url = f"mcp://admin:{DB_PASSWORD}@tools/search"
    calls = [{"name": url, "arguments": {}}, {"name": AWS, "arguments": {}}]
    lines = [{"id": "keys", "input": "x", "trace": {"steps": [{"tool_calls": calls}], "output": f"key {OPENAI} and {AWS}"},
              "expected_tool_calls": [{"name": "search", "arguments": {}}]}]
    metrics = [{"type": "leaky:echoes"}, {"type": "leaky:raises"}, {"type": "leaky:EchoClass"}, {"type": "ToolCalls"},
               {"type": "ToolCorrectness"}, {"type": "TrajectoryMatch"}, {"type": "ToolCallAccuracy"}, {"type": "DeepEvalToolCorrectness"}]
    # `raises` raising fails the gate (`assertions.max_metric_error_share`), whose line quotes its masked reason.
    run_dir = _run(tmp_path, "custom", lines, "native", metrics, code=1)
    csv = _export_csv(tmp_path, run_dir)
    assert _leaks(run_dir) == {}
    assert not any(f in csv for f in FRAGMENTS)
    (result,) = map(json.loads, (run_dir / "results.jsonl").read_text(encoding="utf-8").splitlines())
    scores = result["scores"]
    assert scores["echoes"]["reason"] == f"output was 'key {MASK} and {MASK}'" and scores["echoes"]["details"] == {"seen": f"key {MASK} and {MASK}"}
    assert scores["raises"]["reason"].startswith(f"metric raised ValueError: could not parse key {MASK} and {MASK} (at ")
    assert scores["EchoClass"]["reason"] == f"first tool: mcp://admin:{MASK}@tools/search"
    assert f"mcp://admin:{MASK}@tools/search" in scores["TrajectoryMatch"]["reason"], scores["TrajectoryMatch"]["reason"]


ECHO = '''
import tracejudge


@tracejudge.metric
def answered(case, trace) -> bool:
    return bool(trace.output)
'''


def test_credentials_in_a_cases_tags_and_metadata_are_masked_in_every_output(tmp_path: Path) -> None:
    # A case's tags and metadata were copied into results.jsonl and the reports as the dataset wrote them.
    (tmp_path / "echo.py").write_text(ECHO, encoding="utf-8")
    meta = {"deploy": {"token": OPENAI, "notes": [f"Bearer {JWT}"]}, "aws": AWS, "api_key": HEX_KEY, AWS: "as a key",
            "plan": "basic economy", "sku": "sk-100200300"}
    clean = {"task_id": 7, "source": "user", "plan": "basic economy", "nested": {"a": [1, "b"]}}
    lines = [{"id": "leaky", "input": "x", "tags": ["prod", f"owner {SLACK}"], "metadata": meta, "trace": {"output": "ok"}},
             {"id": "clean", "input": "x", "tags": ["prod"], "metadata": clean, "trace": {"output": "ok"}}]
    # Contains alone takes the struct path (rendered where scored); a custom metric the general one.
    for name, metrics in (("struct", [{"type": "Contains", "value": "ok"}]), ("general", [{"type": "echo:answered"}])):
        run_dir = _run(tmp_path, name, lines, "native", metrics)
        assert _leaks(run_dir) == {}
        results = {r["case_id"]: r for r in map(json.loads, (run_dir / "results.jsonl").read_text(encoding="utf-8").splitlines())}
        got = results["leaky"]
        assert got["tags"] == ["prod", f"owner {MASK}"], got["tags"]
        assert got["metadata"] == {"deploy": {"token": MASK, "notes": [f"Bearer {MASK}"]}, "aws": MASK, "api_key": MASK,
                                   MASK: "as a key", "plan": "basic economy", "sku": "sk-100200300"}, got["metadata"]
        assert results["clean"]["metadata"] == clean and results["clean"]["tags"] == ["prod"]
        csv = _export_csv(tmp_path, run_dir)
        assert not any(f in csv for f in FRAGMENTS)


NAMED = "hunter2hunter2" + "hunter2X9"  # token-shaped, and no credential by its shape alone


def test_a_token_under_any_credentials_name_is_masked_in_every_output_and_look_alikes_are_kept(tmp_path: Path) -> None:
    # Only api_key, authorization and secret_access_key counted as credentials' names: a password, a client secret or
    # an access token kept under its own name was written in clear to results.jsonl and every report.
    names = ["password", "passwd", "db_password", "PASSWORD", "secret", "client_secret", "token", "access_token",
             "github_token", "private_key", "Password"]
    kept = {"max_tokens": "1000", "tokens": NAMED, "token_count": NAMED, "password_hint": "short", "secretary": NAMED,
            "password_set": "no"}
    # Under a credential's name the value is the secret whatever its shape: a human password is no token.
    plain = {"db_password": "s3cr3t-db", "password": "correct horse battery staple", "api_key": "plainvalue123"}
    lines = [{"id": "named", "input": "x", "metadata": {**{n: NAMED for n in names}, **kept}, "trace": {"output": "ok"}},
             {"id": "in-text", "input": "x", "tags": [f"password: {NAMED}"], "trace": {"output": "ok"}},
             {"id": "plain", "input": "x", "metadata": {**plain, "note": "the password policy", "reset_token": ""}, "trace": {"output": "ok"}}]
    run_dir = _run(tmp_path, "named", lines, "native", [{"type": "Contains", "value": "ok"}])
    results = {r["case_id"]: r for r in map(json.loads, (run_dir / "results.jsonl").read_text(encoding="utf-8").splitlines())}
    assert results["named"]["metadata"] == {**{n: MASK for n in names}, **kept}
    assert results["plain"]["metadata"] == {**{n: MASK for n in plain}, "note": "the password policy", "reset_token": ""}
    # A number, list or mapping under such a name, and a name in mixed case alone in its mapping, are masked too.
    typed = {"password": 12345678, "client_secret": ["abc-secret-1"], "github_token": {"value": "ghval-2"}, "pin_password": True}
    more = _run(tmp_path, "typed", [{"id": "typed", "input": "x", "metadata": {**typed, "max_tokens": 5}, "trace": {"output": "ok"}},
                                    {"id": "cased", "input": "x", "metadata": {"PassWord": "caseAlone"}, "trace": {"output": "ok"}}],
                "native", [{"type": "Contains", "value": "ok"}])
    got = {r["case_id"]: r["metadata"] for r in map(json.loads, (more / "results.jsonl").read_text(encoding="utf-8").splitlines())}
    assert got == {"typed": {**{n: MASK for n in typed}, "max_tokens": 5}, "cased": {"PassWord": MASK}}, got
    assert not any(v in (run_dir / name).read_text(encoding="utf-8") for v in plain.values() for name in ("results.jsonl", "report.md", "report.html", "junit.xml"))
    assert results["in-text"]["tags"] == [f"password: {MASK}"]
    assert redact_quoted(f"password: {NAMED}") == f"password: {MASK}"
    assert redact(f"client_secret={NAMED}") == f"client_secret={MASK}"
    for ordinary in ("max_tokens: 1000", "the password is: short", f"tokens: {NAMED}", "a secret: kept safe"):
        assert redact_quoted(ordinary) == ordinary


def test_a_duplicate_case_ids_message_masks_a_credential_in_the_id(tmp_path: Path) -> None:
    url = "https://user:" + DB_PASSWORD + "@host/run1"
    lines = [{"id": url, "input": "x", "trace": {"output": "ok"}}, {"id": url, "input": "x", "trace": {"output": "ok"}}]
    run_dir = _run(tmp_path, "dup", lines, "native", [{"type": "Contains", "value": "ok"}], code=1)
    errors = [r["error"]["message"] for r in map(json.loads, (run_dir / "results.jsonl").read_text(encoding="utf-8").splitlines())
              if r["status"] == "invalid_input"]
    assert errors == ["duplicate case id 'https://user:[REDACTED]@host/run1': first at "
                      f"{tmp_path / 'dup.jsonl'}:1, again at {tmp_path / 'dup.jsonl'}:2"], errors


KEYED = '''
import tracejudge
from tracejudge import Score


@tracejudge.metric
def configured(case, trace):
    """Reports the settings it ran with, credentials among them, and counts by tool name."""
    return Score(value=1.0, passed=True, details={"password": "Xy7Qw9Lm", "API_KEY": "plainvalue", "nested": {"client_secret": "Aa1Bb2"},
                                                  "by_tool": {"reset_password": 2, "get_token": 1}, "note": "fine"})
'''


def test_a_custom_metrics_details_under_a_credentials_name_are_masked_and_counts_kept(tmp_path: Path) -> None:
    # A value under `password` / `api_key` / `client_secret` in a custom metric's details was written in clear
    # unless it was token-shaped; the same value in a case's metadata was masked whole.
    (tmp_path / "keyed.py").write_text(KEYED, encoding="utf-8")
    lines = [{"id": "k", "input": "x", "trace": {"steps": [], "output": "done"}}]
    run_dir = _run(tmp_path, "keyed", lines, "native", [{"type": "keyed:configured"}])
    (result,) = map(json.loads, (run_dir / "results.jsonl").read_text(encoding="utf-8").splitlines())
    assert result["scores"]["configured"]["details"] == {"password": MASK, "API_KEY": MASK, "nested": {"client_secret": MASK},
                                                          "by_tool": {"reset_password": 2, "get_token": 1}, "note": "fine"}
    assert not any(s in (run_dir / p).read_text(encoding="utf-8") for s in ("Xy7Qw9Lm", "plainvalue", "Aa1Bb2") for p in ("results.jsonl", "report.md"))


def test_a_text_seen_clean_as_a_tag_is_still_masked_as_a_credential_keys_value() -> None:
    # The memo of clean label texts let `{"PassWord": "hunter2"}` through once "PassWord: hunter2" had been a tag.
    from tracejudge.llm.redact import redact_labels

    assert redact_labels(["PassWord: hunter2"], {}) == (["PassWord: hunter2"], {})  # a tag: prose, not a key's value
    tags, metadata = redact_labels([], {"PassWord": "hunter2"})
    assert "hunter2" not in str(metadata), metadata
    tags, metadata = redact_labels(["x"], {"PassWord": "hunter2", "n": 1})
    assert "hunter2" not in str(metadata), metadata


def test_a_password_fields_value_is_masked_whatever_its_shape() -> None:
    # `connect_db({"db_password":"Winter2024!",…,"password":"hunter2"})` went into reasons, and from there into Phoenix
    # annotations and MLflow rationales: only token-shaped values were masked.
    from tracejudge.llm.redact import redact_quoted

    text = 'connect_db({"db_password":"Winter2024!","host":"db","password":"hunter2","password_policy":"min 8","next_token":"p2"})'
    assert redact_quoted(text) == ('connect_db({"db_password":"[REDACTED]","host":"db","password":"[REDACTED]",'
                                   '"password_policy":"min 8","next_token":"p2"})')
    assert redact_quoted("{'client_secret': 'abc'}") == "{'client_secret': '[REDACTED]'}"  # a Python repr (smolagents)
    assert redact_quoted('curl -H "x" Bearer abcdefghijklmnop1234567890xyz') == 'curl -H "x" Bearer [REDACTED]'


# Keys of letters alone: the bare `sk-` rule wants a digit ("sk-learn-…" is a phrase), but these prefixes say what follows.
LETTER_KEYS = {"proj": "sk-" + "proj-" + "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN", "ant": "sk-" + "ant-api-" + "QwErTyUiOpAsDfGhJkLzXcVbNm",
               "svcacct": "sk-" + "svcacct-" + "ZyXwVuTsRqPoNmLkJiHgFeDcBa", "admin": "sk-" + "admin-" + "MnBvCxZlKjHgFdSaPoIuYtRe"}


def test_prefixed_keys_of_letters_alone_are_masked_in_every_output(tmp_path: Path) -> None:
    # `sk-proj-` + 40 letters in a tool argument, its expected call, a result and the output reached results.jsonl,
    # report.md, report.html and junit.xml in clear (only keys holding a digit were masked).
    keys = list(LETTER_KEYS.values())
    lines = [{"id": "letters", "input": f"use {keys[0]}", "expected_output": "ok",
              "trace": {"steps": [{"tool_calls": [{"name": "set_env", "arguments": {"value": keys[0], "other": keys[1]},
                                                   "result": f"set {keys[2]}"}]}], "output": f"done with {keys[3]}"},
              "expected_tool_calls": [{"name": "set_env", "arguments": {"value": keys[0], "other": "x"}}]}]
    run_dir = _run(tmp_path, "letters", lines, "native", [{"type": "ToolCalls"}, {"type": "ExactMatch"}])
    tails = [k[-20:] for k in keys]
    leaked = {p.name: [t for t in tails if t in p.read_text(encoding="utf-8", errors="replace")] for p in run_dir.iterdir() if p.is_file()}
    assert {k: v for k, v in leaked.items() if v} == {}
    csv = _export_csv(tmp_path, run_dir)
    assert not any(t in csv for t in tails)
    for key in keys:
        assert redact_quoted(f"x {key} y") == f"x {MASK} y" and redact(key) == MASK
    assert redact_quoted("sk-learning-materials-list-for-you") == "sk-learning-materials-list-for-you"  # a phrase stays
