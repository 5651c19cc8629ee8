"""Credentials that went through redaction in clear: a repr of tool arguments, keys written with `\\u` escapes, query
strings and form bodies, names in mixed case, a PIN's field, and token shapes not known before; and the floor
benchmark's copy of the rules (`benchmarks/_floor_rules.py`) masking as tracejudge does.

The canaries are assembled at run time (no credential-shaped literal in the source) and are fake.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from tracejudge.llm.redact import MASK, redact, redact_details, redact_labels, redact_quoted
from tracejudge.llm.reply_secrets import quoted_values

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import _floor_rules as floor  # noqa: E402
import _forkserver

TAIL = "secret" + "TAIL42"  # what must never be left in clear
TOKEN = "Zx81qWe" + "rtyUiop4455"  # token-shaped (16+ characters, letters and digits)


def _both(text: str) -> tuple[str, str]:
    return redact_quoted(text), redact(text)


# ---- 1. Python's repr / an f-string of tool arguments: the backslash before a JSON-escaped quote is doubled ----

BODY = {"body": json.dumps({"password": 'ab"' + TAIL, "user": "alice"})}


@pytest.mark.parametrize("render", [repr, str, lambda a: f"args: {a}", lambda a: f"calls: {[a, {'x': 1}]!r}",
                                    lambda a: repr({"outer": json.dumps(a)}), lambda a: repr(json.dumps(a))])
def test_a_repr_of_arguments_masks_the_whole_value(render) -> None:
    text = render(BODY)
    for masked in _both(text):
        assert "TAIL42" not in masked, masked
        assert "alice" in masked
    masked = redact_quoted(repr(BODY))
    assert masked == repr({"body": json.dumps({"password": MASK, "user": "alice"})})
    assert json.loads(ast.literal_eval(masked)["body"]) == {"password": MASK, "user": "alice"}  # still a repr of JSON


def test_a_repr_value_ending_in_a_backslash_or_quote_is_masked_to_its_end() -> None:
    for value in ("ab\\", 'ab"', 'a"b"' + TAIL, "a\\\\" + TAIL, '"' + TAIL + '"'):
        text = repr({"body": json.dumps({"password": value, "n": 1})})
        for masked in _both(text):
            assert TAIL not in masked and "ab" not in masked.split("password")[1][:12], (value, masked)
            assert json.loads(ast.literal_eval(masked)["body"]) == {"password": MASK, "n": 1}, (value, masked)


# ---- 2. keys written with `\u` escapes, query strings and form bodies, mixed-case names, a PIN ----

def _escaped(name: str) -> str:
    return "".join(f"\\u{ord(c):04x}" if c in "wokPi" else c for c in name)


@pytest.mark.parametrize("depth", [0, 1, 2])
@pytest.mark.parametrize("name", ["password", "api_key", "Cookie", "pin"])
def test_a_key_written_with_unicode_escapes_is_masked_as_its_name(name: str, depth: int) -> None:
    value = "4821" if name == "pin" else TAIL
    text = '{"%s": "%s", "user": "alice"}' % (_escaped(name), value)
    assert json.loads(text) == {name: value, "user": "alice"}  # what JSON reads
    for _ in range(depth):
        text = json.dumps({"body": text})
    for masked in _both(text):
        assert value not in masked, masked
        inner = json.loads(masked)
        for _ in range(depth):
            inner = json.loads(inner["body"])
        assert inner == {name: MASK, "user": "alice"}, masked
    if name != "pin":  # (a value under 8 characters is left out there: it would mask ordinary text in a reply)
        assert value in quoted_values(text)  # a judge quoting it back bare has it masked too


def test_a_key_written_with_escapes_that_names_no_credential_is_left_as_written() -> None:
    for text in ('{"n\\u0061me": "alice", "x": "\\u0041BC"}', '"\\u0070assport": "X1234567"', '{"c\\u00e9": "\\u00e9t\\u00e9"}'):
        assert redact_quoted(text) is text and redact(text) == text, text


FORMS = [
    # (text, what it masks to)
    (f"POST /login body: username=alice&password={TAIL}&remember=1", f"POST /login body: username=alice&password={MASK}&remember=1"),
    (f"password={TAIL}&remember=1", f"password={MASK}&remember=1"),
    (f"-d 'user=alice&Password={TAIL}'", f"-d 'user=alice&Password={MASK}'"),
    (f"GET https://api.example.com/v1/search?q=shoes&api_key={TAIL}&page=2", f"GET https://api.example.com/v1/search?q=shoes&api_key={MASK}&page=2"),
    (f'{{"url": "https://x.example/cb?client_secret={TAIL}#top"}}', f'{{"url": "https://x.example/cb?client_secret={MASK}#top"}}'),
    (f"redirect=%2Flogin%3Fuser%3Da%26password%3D{TAIL}%26x%3D1", f"redirect=%2Flogin%3Fuser%3Da%26password%3D{MASK}%26x%3D1"),
    (f"next=%252Flogin%253Fpassword%253D{TAIL}%2526x%253D1", f"next=%252Flogin%253Fpassword%253D{MASK}%2526x%253D1"),
    (f"body=access_token%3D{TAIL}", f"body=access_token%3D{MASK}"),
    (f"a=1&amp;api_key={TAIL}&amp;b=2", f"a=1&amp;api_key={MASK}&amp;b=2"),
    (f"https://x/a?apiKey={TAIL}", f"https://x/a?apiKey={MASK}"),
]


@pytest.mark.parametrize("text,want", FORMS)
def test_a_credentials_field_in_a_query_string_or_form_body_is_masked(text: str, want: str) -> None:
    assert redact_quoted(text) == want
    assert redact(text) == want
    assert TAIL not in redact_quoted(text, 30)


CASES = [  # (text, what it masks to): a credential's name in mixed case
    (f"PassWord: {TOKEN}", f"PassWord: {MASK}"), (f"API_Key: {TOKEN}", f"API_Key: {MASK}"),
    (f"ApiKey={TOKEN}", f"ApiKey={MASK}"), (f"X-Api-Key: {TOKEN}", f"X-Api-Key: {MASK}"), (f"apiKey: {TOKEN}", f"apiKey: {MASK}"),
    (f"Apikey = {TOKEN}", f"Apikey = {MASK}"), (f"ACCESS_Token: {TOKEN}", f"ACCESS_Token: {MASK}"),
    ('{"PassWord": "hunter2"}', f'{{"PassWord": "{MASK}"}}'), ('{"passWord": "hunter2"}', f'{{"passWord": "{MASK}"}}'),
    ('{"PassPhrase": "correct horse"}', f'{{"PassPhrase": "{MASK}"}}'), ("{'API_Key': 'abc'}", f"{{'API_Key': '{MASK}'}}"),
    ('{"X-Api-Key": "abc"}', f'{{"X-Api-Key": "{MASK}"}}'), ('{"ClientSecret": "abc"}', f'{{"ClientSecret": "{MASK}"}}'),
]


@pytest.mark.parametrize("text,want", CASES)
def test_a_credentials_name_in_any_letter_case_is_masked(text: str, want: str) -> None:
    assert redact_quoted(text) == want
    assert redact(text) == want


PINS = [
    ('{"pin": "4821"}', f'{{"pin": "{MASK}"}}'), ('{"card_pin": 482193}', f'{{"card_pin": {MASK}}}'),
    ('{"cardPin": "004821", "x": 1}', f'{{"cardPin": "{MASK}", "x": 1}}'), ("{'ATM_PIN': '1234'}", f"{{'ATM_PIN': '{MASK}'}}"),
    (json.dumps({"body": json.dumps({"new-pin": "7391"})}), json.dumps({"body": json.dumps({"new-pin": MASK})})),
]
# Where "pin" is no credential: a postal PIN code, a map's pin, a flag, prose, a short number, a name ending in "pin".
PIN_LOOK_ALIKES = ['{"pincode": "560001", "pin_code": "110001"}', '{"pin": "Paris, 48.85,2.35"}', '{"pinned": "1234", "pin": true}',
                   '{"spin": "1234", "pin": "12"}', "pin the tab; PIN: 1234 printed on the card; pin=1234", '{"pin": 1234.5}']


def test_a_pins_field_is_masked_and_look_alikes_are_kept() -> None:
    for text, want in PINS:
        assert redact_quoted(text) == want and redact(text) == want, text
    for text in PIN_LOOK_ALIKES:
        assert redact_quoted(text) is text and redact(text) == text, text


# ---- 3. token shapes: Google OAuth, DigitalOcean, GitLab's documented prefixes ----

_BODY20 = "Ab3dEf6hIj9kLm2nOp5q"
SHAPES = {
    "google oauth": "ya29" + ".a0AfH6SMBx" + _BODY20 + "-x_y",
    "google oauth service account": "ya29" + ".c.b0Aaek" + _BODY20 + ".Zz9",
    **{f"digitalocean {p}": p + "_v1_" + "0123456789abcdef" * 4 for p in ("dop", "doo", "dor")},
    **{f"gitlab {p}": "gl" + p + "-" + _BODY20 for p in ("pat", "ptt", "dt", "rt", "rtr", "cbt", "ft", "imt", "agent", "oas",
                                                           "soat", "ffct", "wt")},
    "gitlab routable": "gl" + "pat-" + _BODY20 + "xyz1234.01.0a1b2c3d4",
    "gitlab runner registration": "GR" + "1348941" + _BODY20,
}


@pytest.mark.parametrize("name", list(SHAPES))
def test_a_new_token_shape_is_masked_whole(name: str) -> None:
    token = SHAPES[name]
    for where in ("%s", "token %s here", "Authorization: %s", '{"value": "%s"}', "export X=%s;"):
        text = where % token
        for masked in _both(text):
            assert masked == where % MASK, (name, masked)
    session = "_gitlab_session=" + "0123456789abcdef" * 2
    assert redact_quoted(f"curl -b {session}") == f"curl -b _gitlab_session={MASK}" == redact(f"curl -b {session}")


TOKEN_LOOK_ALIKES = ["glad-to-help-you-today-with-it", "global-settings-for-the-account-2024", "gl-2024 glpat- alone, gldt-short",
                     "dop_v1_short", "ya29.5 degrees", "ya29 and yay", "GR1348941", "goodbye_v1_file"]


def test_look_alikes_of_the_new_shapes_are_kept() -> None:
    for text in TOKEN_LOOK_ALIKES:
        assert redact_quoted(text) is text and redact(text) == text, text


# ---- what a trace says in ordinary words stays as written ----

FLIGHTS = """Available flights JFK -> LAX on 2024-05-20:
  HAT001  08:00-11:05  economy $120  basic_economy $89  seats 9
  HAT170  13:30-16:40  business $610  (pin your seat at check-in)
Passenger: Mia Li, DOB 1990-04-02, membership gold, reservation 4WQ150, payment credit_card_4421
"""
ORDINARY = [
    "password reset link sent", "api_key: not configured", "SKU sk-100200300", FLIGHTS,
    "my password is hunter2",  # prose: the value cannot be told from the words around it (see the note in redact.py)
    "the password is incorrect; your api key is invalid", "password=None  # set later", "connect(password=pw, host=h)",
    "GET /items?page_token=abc123&next_token=xyz&limit=5", "https://x.example/login?user=alice&remember=1",
    '{"password_policy": "min 8", "api_key": {"type": "string"}, "token_count": 12}', "a=b%3Dc&d=e",
    "Token: 5, Secret: none, Password: required", "pin it to the board",
]


def test_ordinary_text_is_left_as_written() -> None:
    for text in ORDINARY:
        assert redact_quoted(text) is text, text
        assert redact_quoted(text, 20) is text, text
    assert redact_labels(["password reset link sent"], {"note": "api_key: not configured", "sku": "sk-100200300"}) == (
        ["password reset link sent"], {"note": "api_key: not configured", "sku": "sk-100200300"})
    assert redact_details({"flights": FLIGHTS, "reset": "password reset link sent"}) == {"flights": FLIGHTS, "reset": "password reset link sent"}


# ---- linear time: a megabyte of each new rule's repeated fragments takes a fraction of a second ----

_N = 128 * 1024  # (a megabyte of each takes well under a second of CPU; quadratic, these 128 KB would take minutes)
ADVERSARIAL = {
    "repr escapes": '"password": "' + 'a\\\\"b' * (_N // 5),
    "repr quotes": '{"password": "' + '"a' * (_N // 2),
    "deep repr escapes": '\\"password\\": \\"' + '\\\\\\"x' * (_N // 5),
    "quotes before backslash runs": '\\"password\\": \\"' + ('\\"' + '\\' * 3 + 'n') * (_N // 6),
    "escaped key": '"' + "\\u0041" * (_N // 6),
    "escaped keys": '"p\\u0041"' * (_N // 9),
    "escaped key starts": '"\\u0041' * (_N // 7),
    "form fields": "&password=" * (_N // 10),
    "form words": "password=a " * (_N // 11),
    "form long words": ("x" * 50 + "=") * (_N // 51),
    "form percent": "%3Fpassword%3D" + "%25" * (_N // 3),
    "pin prefix": '"' + "a_" * (_N // 2) + 'pin": 1',
    "pin values": '"pin": "' * (_N // 8),
    "names": "ApiKey: " * (_N // 8),
    "google oauth": "ya29." + "a." * (_N // 2),
    "gitlab dots": "glrt-" + "a" * 30 + ".ab" * (_N // 3),
}


@pytest.mark.parametrize("name", list(ADVERSARIAL))
def test_the_new_rules_stay_linear_on_adversarial_text(name: str) -> None:
    text = ADVERSARIAL[name]
    started = time.process_time()  # (CPU time: other processes on the machine do not count)
    redact_quoted(text)
    redact(text)
    assert time.process_time() - started < 1.5, name


# ---- 4. the floor benchmark's copy of the rules masks as tracejudge does ----

def _corpus() -> list[str]:
    texts = [t for t, _ in FORMS + CASES + PINS] + PIN_LOOK_ALIKES + TOKEN_LOOK_ALIKES + ORDINARY
    texts += [w % t for t in SHAPES.values() for w in ("%s", '{"v": "%s"}')]
    texts += [render(BODY) for render in (repr, str, json.dumps)]
    texts += [json.dumps({"body": '{"%s": "%s"}' % (_escaped(n), TAIL)}) for n in ("password", "pin", "api_key")]
    texts += [f"Authorization: Bearer {TOKEN}", f'{{"Authorization": "Basic {TOKEN}"}}', "Cookie: sid=" + TOKEN + "; theme=dark",
              "postgres://admin:" + TAIL + "@db/app", "AKIA" + "IOSFODNN7EXAMPLE", "xapp-" + "1-A0123456789-" + TOKEN,
              "npm_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8", "rk_" + "live_" + _BODY20, "AccountKey=" + "Zm9vYmFy" * 4 + "==",
              "shpat_" + "0123456789abcdef" * 2, "SG." + "a" * 22 + "." + "B" * 43, "hooks.slack.com/services/" + "T0/B0/" + "X" * 24,
              "sk-" + "learn-and-more-text-here-123", "sk-" + "proj-" + _BODY20, '{"private_key_id": "3f2a9c1b7e4d5a6f8091"}']
    return texts


def test_the_floor_benchmarks_rules_mask_as_tracejudges() -> None:
    texts = _corpus()
    for text in texts:
        assert floor.redact(text) == redact_quoted(text), text
        for shown in (10, 40):
            assert floor.redact(text, shown) == redact_quoted(text, shown), (text, shown)
    labelled = [
        (["prod", f"PassWord: {TOKEN}"], {"ApiKey": f"Bearer {TAIL}", "note": "api_key: not configured", "pin": "1234"}),
        (["x"], {"PassWord": "hunter2", "n": 1, "cookie": "sid=1", "private_key_id": 7}),
        ([f"owner {SHAPES['gitlab dt']}"], {"db": {"Client_Secret": ["a"], "url": f"https://x/?api_key={TAIL}&y=1"}}),
    ]
    for tags, metadata in labelled:
        assert floor.labels(tags, metadata) == redact_labels(tags, metadata), (tags, metadata)
        assert floor._masked(metadata, False) == redact_details(metadata)


# ---- end to end: a custom metric's reason built with repr() reaches no output ----

MYMETRICS = '''
import tracejudge as tj


@tj.metric
def args_repr(case: tj.Case, trace: tj.Trace) -> tj.Score:
    calls = trace.tool_calls()
    return tj.Score(value=0.0, reason=f"calls: {[c.arguments for c in calls]}", details={"first": repr(calls[0].arguments)})
'''


def test_a_custom_metrics_repr_of_arguments_reaches_no_output(tmp_path: Path) -> None:
    args = {**BODY, "query": f"https://x.example/s?q=a&api_key={TAIL}1&p=2", "form": f"user=a&password={TAIL}2",
            "raw": '{"pass\\u0077ord": "%s3"}' % TAIL, "hdr": f"PassWord: {TAIL}4{TOKEN}", "pin": json.dumps({"card_pin": "482193"}),
            "google": SHAPES["google oauth"], "gitlab": SHAPES["gitlab dt"], "do": SHAPES["digitalocean dop"]}
    case = {"id": "repr-args", "input": "log in", "trace": {"steps": [{"tool_calls": [{"name": "http_post", "arguments": args}]}],
                                                             "output": "done"}}
    (tmp_path / "data.jsonl").write_text(json.dumps(case) + "\n", encoding="utf-8")
    (tmp_path / "mymetrics.py").write_text(MYMETRICS, encoding="utf-8")
    run_dir = tmp_path / "run"
    config = {"dataset": {"path": "data.jsonl", "format": "native"}, "metrics": [{"type": "mymetrics:args_repr"}],
              "run": {"dir": str(run_dir)}, "cache": {"dir": str(tmp_path / "cache")}}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    got = _forkserver.run([sys.executable, "-m", "tracejudge", "run", "c.yaml", "--no-progress"], capture_output=True, text=True,
                         timeout=120, cwd=tmp_path)
    assert got.returncode in (0, 1), got.stderr
    secrets = ["TAIL42", "482193", _BODY20]
    assert not [s for s in secrets if s in got.stdout + got.stderr]
    assert {"results.jsonl", "report.md", "junit.xml", "report.html"} <= {p.name for p in run_dir.iterdir()}
    leaks = {p.name: [s for s in secrets if s in p.read_text(encoding="utf-8", errors="replace")] for p in run_dir.iterdir() if p.is_file()}
    assert {k: v for k, v in leaks.items() if v} == {}
    (line,) = (run_dir / "results.jsonl").read_text(encoding="utf-8").splitlines()
    reason = json.loads(line)["scores"]["args_repr"]["reason"]
    assert "alice" in reason and "https://x.example/s?q=a&api_key=" in reason, reason
