"""Credentials inside JSON-encoded strings, key shapes of the common secret scanners, one masked form per rule.

An HTTP tool's `body` argument is often a JSON document in a string: its `\\"password\\": \\"…\\"` went through the
ToolCalls reason, a custom metric's `json.dumps(arguments)`, the viewer and a live run's `traces.jsonl` in clear.
The canaries are assembled at run time (no credential-shaped literal in the source) and are fake.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
import yaml
from _redact_timing import redaction_seconds
from _runs import view_server
from tracejudge.llm.redact import MASK, redact, redact_details, redact_quoted
import _forkserver

PASSWORD = "S3cret" + "Passw0rd99xyz"
GOOGLE_TOKEN = "ya29" + ".A0ARrdaM-abcdefghijklmnop1234567890"
HEX_KEY = "9f86d081884c7d65" + "9a2feaa0c55ad015"
OPENAI = "sk-" + "proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"
BODY = {"username": "alice", "password": PASSWORD, "access_token": GOOGLE_TOKEN, "api_key": HEX_KEY}
FRAGMENTS = (PASSWORD, GOOGLE_TOKEN[5:], HEX_KEY, OPENAI[8:])


def _nested(value: object, depth: int) -> str:
    text = json.dumps(value)
    for _ in range(depth):
        text = json.dumps({"body": text})
    return text


@pytest.mark.parametrize("depth", [0, 1, 2, 3])
def test_a_credentials_field_is_masked_whatever_the_escaping_of_its_quotes(depth: int) -> None:
    text = _nested(BODY, depth)
    for masked in (redact_quoted(text), redact(text)):
        assert not [f for f in FRAGMENTS if f in masked], masked
        assert "alice" in masked
        inner = json.loads(masked)
        for _ in range(depth):
            inner = json.loads(inner["body"])  # still valid JSON at every depth: an escaped quote ends the value
        assert inner == {"username": "alice", "password": MASK, "access_token": MASK, "api_key": MASK}
    cut = redact_quoted(text, 60)
    assert PASSWORD[:10] not in cut[:60]


def test_escaped_text_without_a_credential_is_kept() -> None:
    ordinary = [
        _nested({"username": "alice", "next_token": "p2", "password_policy": "min 8", "api_key": {"type": "string"}}, 1),
        _nested({"note": "api_key: not configured", "plan": "Basic plan-2024", "sku": "SKU sk-100200300"}, 2),
        '\\"the word password\\" and \\"token\\" in prose; key_id 7; glpat- alone; npm_install',
        "AccountKey=short; SG.x.y; hooks.slack.com/services/ is the host; rk_live_x",
    ]
    for text in ordinary:
        assert redact_quoted(text) is text, text
        assert redact_quoted(text, 20) is text, text


# A quarter megabyte of adversarial text for each rule that escaped quotes touch, and for the URL scheme that made a
# run of scheme characters quadratic (about 50 s for these 256 KB before, 800 s for a megabyte). Linear, each takes a
# fraction of a second (a megabyte about a second).
_N = 256 * 1024
ADVERSARIAL = {
    "backslashes": "\\" * _N,
    "open escaped field": '\\"password\\": \\"' + "a" * _N,
    "escaped names": '\\"token\\":' * (_N // 10),
    "scheme run": "a-" * (_N // 2) + "://",
    # A quoted value's end: an opening quote after ever more backslashes (each value would run over the later ones),
    # a value opened after many backslashes holding many quotes after fewer, escaped line breaks before `Cookie:`.
    "rising backslashes": "".join("'password': " + "\\" * i + '"' for i in range(int((2 * _N) ** 0.5))),
    "deep opening": '"password": ' + "\\" * (_N // 2) + '"' + ("\\" * 3 + '"') * (_N // 8),
    "cookie names": "\\nCookie: " * (_N // 10),
    # Every `sk-` of a run of them looked for a digit to the run's end (100 KB: 14 s).
    "sk runs": "sk-" * (_N // 3),
    "sk_ runs": "sk_" * (_N // 3),
}


@pytest.mark.parametrize("name", list(ADVERSARIAL))
def test_the_search_stays_linear_on_adversarial_text(name: str) -> None:
    assert redaction_seconds(ADVERSARIAL[name], time.perf_counter) < 5, name


# Shapes the secret scanners (gitleaks, detect-secrets) flag by their prefix alone: (text around it, credential).
SHAPES = {
    "gitlab": ("ci token %s", "glpat-" + "xY12aBcD34eFgH56iJkL"),
    "gitlab trigger": ("trigger %s", "glptt-" + "Ab12Cd34Ef56Gh78Ij90Kl"),
    "npm": ("//registry.npmjs.org/:_authToken=%s", "npm_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"),
    "npm bare": ("publish with %s", "npm_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"),
    "pypi": ("password = %s", "pypi-" + "AgEIcHlwaS5vcmc" + "CJDk3ZTA2YjU2LWE5NjMtNGY3Yy1iODE3LTU5YzI4ZjQ5Y2VmNA"),
    "stripe restricted": ("key %s", "rk_" + "live_" + "51HxYzAbCdEfGhIjKlMn"),
    "stripe secret": ("key %s", "sk_" + "live_" + "abcdefghijKLMNOPqrst"),
    "sendgrid": ("SENDGRID %s", "SG." + "abcdefghijklmnopqrstuv" + "." + "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopq"),
    "shopify": ("store %s", "shpat_" + "0123456789abcdef0123456789abcdef"),
    "google oauth after its scheme": ("Authorization: Bearer %s", GOOGLE_TOKEN),
    "slack app": ("app %s", "xapp-" + "1-A0123456789-1234567890123-abcdef0123456789"),
    "slack webhook": ("post to https://%s", "hooks.slack.com/services/" + "T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX"),
    "aws ABIA": ("id %s", "ABIA" + "IOSFODNN7EXAMPLE"),
}


@pytest.mark.parametrize("name", list(SHAPES))
def test_a_scanners_key_shape_is_masked(name: str) -> None:
    where, credential = SHAPES[name]
    text = where % credential
    for masked in (redact_quoted(text), redact(text)):
        assert credential[-12:] not in masked, (name, masked)
        assert MASK in masked


def test_an_azure_connection_string_and_a_service_account_are_masked() -> None:
    conn = "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=" + "Zm9vYmFyYmF6cXV4" * 5 + "ab==;EndpointSuffix=core.windows.net"
    want = f"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={MASK};EndpointSuffix=core.windows.net"
    assert redact_quoted(conn) == want and redact(conn) == want
    bus = "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=root;SharedAccessKey=" + "Qm9vYmFyYmF6cXV4" * 3 + "="
    assert redact_quoted(bus).endswith(f"SharedAccessKey={MASK}") and redact(bus).endswith(f"SharedAccessKey={MASK}")
    pem = "-----BEGIN " + "PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n"
    account = {"type": "service_account", "project_id": "demo", "private_key_id": "3f2a9c1b7e4d" + "5a6f8091b2c3d4e5f6a7b8c9",
               "private_key": pem, "client_email": "bot@demo.iam.gserviceaccount.com"}
    for depth in (0, 1):
        text = _nested(account, depth)
        for masked in (redact_quoted(text), redact(text)):
            assert "MIIEvQIBADAN" not in masked and "5a6f8091b2c3" not in masked, masked
            assert "bot@demo.iam.gserviceaccount.com" in masked
    assert redact_details(account)["private_key_id"] == MASK


def test_a_header_is_masked_one_way_in_reasons_replies_and_the_viewer() -> None:
    # `"Authorization":"[REDACTED]"` beside `Bearer [REDACTED]` in one reason; the viewer masked `Bearer XYZ` whole
    # where the reason showed it: the scheme is kept, the value masked, whatever the rule that saw it.
    token = "abcdef" + "1234567890ghijkl"
    for value in (f"Bearer {token}", "Bearer XYZ"):
        args = {"headers": {"Authorization": value}}
        text = json.dumps(args, separators=(",", ":"))
        want = '{"headers":{"Authorization":"Bearer ' + MASK + '"}}'
        assert redact_quoted(text) == want, value
        assert redact(text) == want, value
        assert redact_details(args) == {"headers": {"Authorization": f"Bearer {MASK}"}}, value
    assert redact_quoted(f"Authorization: Bearer {token}") == f"Authorization: Bearer {MASK}" == redact(f"Authorization: Bearer {token}")
    assert redact_quoted(f"curl -H 'x' Bearer {token}") == f"curl -H 'x' Bearer {MASK}"


MYMETRICS = '''
import json
import tracejudge as tj


@tj.metric
def args_dump(case: tj.Case, trace: tj.Trace) -> tj.Score:
    return tj.Score(value=0.0, reason="calls: " + json.dumps([c.arguments for c in trace.tool_calls()]))


@tj.metric
def args_raise(case: tj.Case, trace: tj.Trace) -> float:
    raise ValueError("cannot parse " + json.dumps(trace.tool_calls()[0].arguments))
'''


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return _forkserver.run([sys.executable, "-m", "tracejudge", *args], capture_output=True, text=True, timeout=120, cwd=cwd)


def _leaks(run_dir: Path) -> dict[str, list[str]]:
    found = {p.name: [f for f in FRAGMENTS if f in p.read_text(encoding="utf-8", errors="replace")] for p in run_dir.iterdir() if p.is_file()}
    return {k: v for k, v in found.items() if v}


def test_an_escaped_credential_reaches_no_output_and_no_search(tmp_path: Path) -> None:
    body = json.dumps(BODY)
    case = {"id": "http-body", "input": "log in zebrafish", "expected_output": "ok",
            "expected_tool_calls": [{"name": "http_post", "arguments": {"url": "https://x/login"}}],
            "trace": {"steps": [{"tool_calls": [{"name": "http_post", "arguments": {"url": "https://x/login", "body": body}, "result": body}]}],
                      "output": "Logged in. " + body}}
    (tmp_path / "data.jsonl").write_text(json.dumps(case) + "\n", encoding="utf-8")
    (tmp_path / "mymetrics.py").write_text(MYMETRICS, encoding="utf-8")
    run_dir = tmp_path / "run"
    metrics = [{"type": "ToolCalls", "arguments": "exact"}, {"type": "ExactMatch"}, {"type": "mymetrics:args_dump"}, {"type": "mymetrics:args_raise"}]
    (tmp_path / "c.yaml").write_text(yaml.safe_dump({"dataset": {"path": "data.jsonl", "format": "native"}, "metrics": metrics,
                                                     "run": {"dir": str(run_dir)}, "cache": {"dir": str(tmp_path / "cache")}}), encoding="utf-8")
    got = _cli("run", "c.yaml", "--no-progress", cwd=tmp_path)
    assert got.returncode in (0, 1), got.stderr  # (a metric that raises may fail the run's gate)
    assert not [f for f in FRAGMENTS if f in got.stdout + got.stderr]
    (line,) = (run_dir / "results.jsonl").read_text(encoding="utf-8").splitlines()
    reason = json.loads(line)["scores"]["ToolCalls"]["reason"]
    assert f'\\"password\\": \\"{MASK}' in reason, reason  # the ToolCalls reason quotes the body, masked
    assert {"results.jsonl", "report.md", "junit.xml", "report.html"} <= {p.name for p in run_dir.iterdir()}
    assert _leaks(run_dir) == {}
    with view_server(str(run_dir)) as url:
        for _ in range(100):  # the search text is read in the background
            if "http-body" in _get(f"{url}/run/run/cases?q=zebrafish"):
                break
            time.sleep(0.2)
        else:
            raise AssertionError("the search text never arrived")
        assert "http-body" not in _get(f"{url}/run/run/cases?q=" + urllib.parse.quote(PASSWORD))
        page = _get(f"{url}/run/run/case?id=http-body")
        assert "alice" in page and not [f for f in FRAGMENTS if f in page]
    assert _leaks(run_dir) == {}  # (the viewer's index, `view.idx`, included)


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as resp:
        return resp.read().decode()


AGENT = '''
def respond(request):
    res = "HTTP 200\\nAuthorization: Bearer %s\\n{\\"password\\": \\"%s\\"}"
    return {"output": "done",
            "trace": {"steps": [{"tool_calls": [{"name": "http_get", "arguments": {"url": "https://api.x/me", "api_key": "%s"}, "result": res}]}],
                      "output": "done"}}
''' % (OPENAI, PASSWORD, OPENAI)


def test_a_live_runs_traces_hold_no_credential_and_a_rescore_scores_the_same(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(AGENT, encoding="utf-8")
    cases = [{"id": "a", "input": "who am i", "expected_tool_calls": [{"name": "http_get", "arguments": {"url": "https://api.x/me"}}]},
             {"id": "b", "input": "again"}]
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    for name in ("live", "again"):
        config = {"dataset": {"path": "cases.jsonl", "format": "native"}, "target": {"kind": "python", "callable": "agent:respond"},
                  "metrics": [{"type": "ToolCalls"}], "run": {"dir": str(tmp_path / name)}, "cache": {"dir": str(tmp_path / "cache")}}
        (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    got = _cli("run", "live.yaml", "--no-progress", cwd=tmp_path)
    assert got.returncode == 0, got.stderr
    traces = [json.loads(line) for line in (tmp_path / "live" / "traces.jsonl").read_text(encoding="utf-8").splitlines()]
    call = traces[0]["case"]["trace"]["steps"][0]["tool_calls"][0]
    assert call["arguments"] == {"url": "https://api.x/me", "api_key": MASK}
    assert call["result"] == f'HTTP 200\nAuthorization: Bearer {MASK}\n{{"password": "{MASK}"}}'
    assert _leaks(tmp_path / "live") == {}
    got = _cli("run", "again.yaml", "--rescore", str(tmp_path / "live"), "--no-progress", cwd=tmp_path)
    assert got.returncode == 0, got.stderr

    def scores(name: str) -> list[object]:
        return sorted((r["case_id"], json.dumps(r["scores"], sort_keys=True))  # (lines in the order cases finished)
                      for r in map(json.loads, (tmp_path / name / "results.jsonl").read_text(encoding="utf-8").splitlines()))

    assert scores("again") == scores("live")
    assert _leaks(tmp_path / "again") == {}


# A value holding a quote or a backslash: inside a JSON string an escaped quote is part of the value. The value ends at
# its own quote after n backslashes (its opening quote's: 0, 1, 3, 7 at depth 0–3) plus 2n+2 for each backslash it
# ends with; a quote after 2n+1 (plus 2n+2 each) is inside it. Before, `"ab\"hunter2…"` kept `\"hunter2…` in clear.
TAIL = "hunter2" + "hunter"
QUOTING = {
    "escaped quote": 'ab"' + TAIL,
    "quote last": TAIL + '"',
    "backslash": "ab\\" + TAIL,
    "backslash last": TAIL + "\\",
    "backslash alone": "\\",
    "backslash then quote": 'ab\\"' + TAIL,
    "two backslashes then quote": 'ab\\\\"' + TAIL,
    "single quote": "it's " + TAIL,
    "unicode": "é☃\u2028\x01" + TAIL,
    "json inside": json.dumps({"k": 'v"' + TAIL}),
}


@pytest.mark.parametrize("depth", [0, 1, 2, 3])
@pytest.mark.parametrize("name", list(QUOTING))
def test_a_quoted_value_is_masked_to_its_strings_end_at_every_depth(name: str, depth: int) -> None:
    value = QUOTING[name]
    for key in ("password", "passphrase", "db_password", "Cookie"):
        doc = {"user": "alice", key: value, "next": ["x", {"y": "z"}]}
        for ascii_only in (True, False):
            text = json.dumps(doc, ensure_ascii=ascii_only)
            for _ in range(depth):
                text = json.dumps({"body": text, "n": 1}, ensure_ascii=ascii_only)
            for masked in (redact(text), redact_quoted(text), redact_details({"body": text})["body"]):
                assert TAIL not in masked, (key, masked)
                inner = json.loads(masked)
                for _ in range(depth):
                    inner = json.loads(inner["body"])  # valid JSON at every depth
                assert inner == {**doc, key: MASK}, (key, masked)


def test_a_value_cut_before_its_closing_quote_is_masked_to_the_end() -> None:
    for text in ('{"password": "correct horse ' + TAIL, '{"body": "{\\"password\\": \\"ab\\\\\\"' + TAIL):
        assert redact_quoted(text).endswith(MASK) and redact(text).endswith(MASK), text


def test_a_judges_prompt_gives_a_quoted_value_as_written_and_decoded() -> None:
    from tracejudge.llm.reply_secrets import quoted_values

    text = _nested({"password": 'ab"' + TAIL}, 1)
    assert 'ab"' + TAIL in quoted_values(text)


COOKIE = "sid=" + "9f2c4e" + "71aa03"
SET_COOKIE = "session=" + "Qm9vYmFy" + "YmF6cXV4; Path=/; HttpOnly"


def test_a_cookie_header_is_masked_whole_in_text_fields_and_mappings() -> None:
    # Names and attributes too: one masked form whatever the rule that sees it (a cookie's name may carry an id).
    for text, want in (
        (f"GET / HTTP/1.1\r\nCookie: {COOKIE}; theme=dark\r\nHost: x", f"GET / HTTP/1.1\r\nCookie: {MASK}\r\nHost: x"),
        (f"HTTP/1.1 200 OK\nSet-Cookie: {SET_COOKIE}\n", f"HTTP/1.1 200 OK\nSet-Cookie: {MASK}\n"),
        (json.dumps(f"HTTP/1.1 200 OK\r\nset-cookie: {SET_COOKIE}\r\n\r\nok"), json.dumps(f"HTTP/1.1 200 OK\r\nset-cookie: {MASK}\r\n\r\nok")),
        (json.dumps({"headers": {"Cookie": COOKIE, "Accept": "*/*"}}), json.dumps({"headers": {"Cookie": MASK, "Accept": "*/*"}})),
        (_nested({"Set-Cookie": SET_COOKIE}, 2), _nested({"Set-Cookie": MASK}, 2)),
    ):
        assert redact_quoted(text) == want == redact(text), text
    assert redact_details({"headers": {"Cookie": COOKIE, "set-cookie": "x"}}) == {"headers": {"Cookie": MASK, "set-cookie": MASK}}
    for prose in ("cookie: chocolate chip", '{"accept_cookie": "yes", "cookie_banner": "shown"}', "Cookies: 3 kinds"):
        assert redact_quoted(prose) is prose and redact(prose) == prose
    assert redact_details({"accept_cookie": "yes"}) == {"accept_cookie": "yes"}


def test_a_passphrase_is_masked_as_a_password_is() -> None:
    words = "correct horse " + "battery staple"
    token = "Tr0ub4dor" + "-and-3-x1y2"
    for text, want in (
        (json.dumps({"passphrase": words}), json.dumps({"passphrase": MASK})),
        (_nested({"key_passphrase": words}, 1), _nested({"key_passphrase": MASK}, 1)),
        (f"PASSPHRASE={token}", f"PASSPHRASE={MASK}"),
    ):
        assert redact_quoted(text) == want == redact(text), text
    assert redact_details({"ssh": {"passphrase": words}}) == {"ssh": {"passphrase": MASK}}

