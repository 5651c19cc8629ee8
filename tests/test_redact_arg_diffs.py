"""A credential's value never reaches a run's files through the text of an argument's difference, and a PIN or a
numeric password under its key is masked in structured data as in text.

A reason shows a differing argument's value apart from its key (`password: expected …, got …`), where the masking of a
field by its name cannot see the key: `value_match.short_json` / `short_pair` take the argument's name and show a value
that `redact.masked_under` it as `[REDACTED]`. The values below are ordinary words and digits, not credential-shaped:
only their key says they are secrets.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import yaml
from tracejudge.core.records import Case, Score
from tracejudge.llm.redact import MASK, masked_under, redact, redact_details, redact_labels, redact_quoted
from tracejudge.stages.score.arguments import ArgumentCorrectness
from tracejudge.stages.score.masking import masked
from tracejudge.stages.score.value_match import first_difference, short_json, short_pair
from tracejudge.stages.target import Attempt
from tracejudge.stages.target.scrub import scrub
from tracejudge.viewer.masking import shown_case
from tracejudge.viewer.pages_case import closest_call
import _forkserver

TRACEJUDGE = Path(sys.executable).with_name("tracejudge")

TOKEN = "tok" + "A1b2C3d4E5f6G7h8"  # token-shaped: masked after `token` in text
# (expected, actual) of each secret argument; every value must stay out of every file of the run.
SECRETS = {
    "password": ("hunter2", "hunter3"),
    "api_key": ("keyAlpha", "keyBeta"),
    "token": (TOKEN + "x", TOKEN + "y"),
    "pin": ("738291", "738292"),
    "card_pin": (90210457, 90210458),
    "passphrase": ("correct horse battery staple", "correct horse battery stapler"),
    "db_password": (12345678, 87654321),
}
CANARIES = [str(v) for pair in SECRETS.values() for v in pair] + ["NestedSecret1", "NestedSecret2", "MissingPw77", "ExtraKey55"]
CONFIG_SECRET = "CfgSecret9"


def _call(name: str, arguments: dict) -> dict:
    return {"name": name, "arguments": arguments}


def _case(cid: str, expected: dict, actual: dict, name: str = "login") -> dict:
    return {"id": cid, "input": "log in", "expected_tool_calls": [_call(name, expected)],
            "trace": {"steps": [{"tool_calls": [_call(name, actual)]}], "output": "done"}}


def _lines() -> list[dict]:
    lines = [_case(f"c_{key}", {key: exp}, {key: got}) for key, (exp, got) in SECRETS.items()]
    lines += [
        _case("nested", {"auth": {"client_secret": "NestedSecret1", "user": "ann"}}, {"auth": {"client_secret": "NestedSecret2", "user": "ann"}}),
        _case("missing", {"password": "MissingPw77"}, {"user": "ann"}),
        _case("unexpected", {"user": "ann"}, {"user": "ann", "api_key": "ExtraKey55"}),
        # Ordinary values stay as written: a page token that is no token's shape, a map's pin, a PIN code.
        _case("page", {"page_token": "pg2"}, {"page_token": "pg3"}),
        _case("map_pin", {"pin": "blue"}, {"pin": "red"}),
        _case("postal", {"pincode": "560001"}, {"pincode": "560002"}),
    ]
    lines += [_case(cid, {"password": exp}, {"password": got}, name) for cid, name, exp, got in SHAPES]
    return lines


# A value under a credential's key that is no string: a matcher, a mapping, a short or a decimal number. The reasons
# render the calls (`login({...})`) beside the argument's difference: both show it `[REDACTED]`.
SHAPES = [
    ("matcher", "login", {"$any_of": ["ANYexp1", "ANYexp2"]}, {"value": "ANYgot3"}),
    ("mapping", "login4", {"value": "MapVal41"}, {"value": "MapVal42"}),
    ("short", "unlock2", 731, 732),
    ("decimal", "unlock3", 5551.5, 5552.5),
    ("python_eq", "unlock4", {"$python_eq": 7349}, 7350),  # τ²-bench's expected values compare with Python's ==
]
SHAPE_LEAKS = re.compile(r"ANYexp|ANYgot|MapVal4|555[12]\.5|password\W{0,24}73[12]\b|\b73(?:49|50)\b")


def _run(tmp_path: Path) -> Path:
    data = tmp_path / "cases.jsonl"
    data.write_text("".join(json.dumps(line) + "\n" for line in _lines()), encoding="utf-8")
    metrics = [
        {"type": "ToolCalls"},
        {"type": "ToolCalls", "name": "ToolCallsExact", "arguments": "exact", "order": "in_order"},
        {"type": "ArgumentCorrectness", "tool_name": "login", "expected_arguments": {"password": CONFIG_SECRET}, "match_mode": "exact"},
    ]
    cfg = tmp_path / "t.yaml"
    cfg.write_text(yaml.safe_dump({"dataset": {"path": str(data), "format": "native"}, "metrics": metrics,
                                   "run": {"dir": str(tmp_path / "run")}, "cache": {"dir": str(tmp_path / "cache")}}), encoding="utf-8")
    got = _forkserver.run([str(TRACEJUDGE), "run", str(cfg), "--no-progress"], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert got.returncode == 0, got.stderr
    assert not [c for c in CANARIES if c in got.stdout + got.stderr]
    return tmp_path / "run"


def test_argument_differences_mask_credential_values_in_every_file_of_the_run(tmp_path: Path) -> None:
    run_dir = _run(tmp_path)
    files = {p.name: p.read_text(encoding="utf-8", errors="replace") for p in sorted(run_dir.iterdir()) if p.is_file()}
    assert {"results.jsonl", "report.html", "junit.xml", "report.md", "summary.json"} <= files.keys()
    leaks = {name: [c for c in CANARIES if c in text] + SHAPE_LEAKS.findall(text) for name, text in files.items()}
    assert not {name: found for name, found in leaks.items() if found}
    # The config's own expected value is in no file either: configs.jsonl and manifest.json record the config masked.
    assert not [name for name, text in files.items() if CONFIG_SECRET in text]

    results = {r["case_id"]: r["scores"] for r in map(json.loads, files["results.jsonl"].splitlines())}
    reason = results["c_password"]["ToolCalls"]["reason"]
    # The message keeps its shape: the argument differs, its values are not shown.
    assert "password: expected [REDACTED], got [REDACTED]" in reason, reason
    assert closest_call(reason, 0) == (0, "password: expected [REDACTED], got [REDACTED]")  # the viewer's "differs:" cell
    assert "auth.client_secret: expected [REDACTED], got [REDACTED]" in results["nested"]["ToolCalls"]["reason"]
    assert "password: expected [REDACTED], missing" in results["missing"]["ToolCalls"]["reason"]
    assert "api_key: unexpected argument [REDACTED]" in results["unexpected"]["ToolCallsExact"]["reason"]
    for key in SECRETS:
        assert f"{key}: expected [REDACTED], got [REDACTED]" in results[f"c_{key}"]["ToolCalls"]["reason"], key
    arg = results["c_password"]["ArgumentCorrectness"]
    assert "password: expected [REDACTED], got [REDACTED]" in arg["reason"], arg["reason"]
    assert arg["details"]["mismatches"]["password"] == {"expected": MASK, "actual": MASK, "present": True}
    assert "db_password: unexpected argument [REDACTED]" in results["c_db_password"]["ArgumentCorrectness"]["reason"]
    # A call rendered in a reason masks what the argument's difference beside it masks, whatever the value's shape.
    for cid, name, _, _ in SHAPES:
        reason = results[cid]["ToolCalls"]["reason"]
        assert "password: expected [REDACTED], got [REDACTED]" in reason and f'{name}({{"password":[REDACTED]}})' in reason, reason
    assert 'login({"password":[REDACTED]})' in results["matcher"]["ArgumentCorrectness"]["reason"]
    # Ordinary values, as written.
    assert 'page_token: expected "pg2", got "pg3"' in results["page"]["ToolCalls"]["reason"]
    assert 'pin: expected "blue", got "red"' in results["map_pin"]["ToolCalls"]["reason"]
    assert 'pincode: expected "560001", got "560002"' in results["postal"]["ToolCalls"]["reason"]


def test_short_texts_of_a_value_under_its_arguments_name() -> None:
    assert short_pair("hunter2", "hunter3", key="password") == (MASK, MASK)
    assert short_pair("hunter2", "", key="password") == (MASK, '""')  # an empty value is no secret
    assert short_json(["a", "b"], key="client_secret") == MASK
    assert short_json("738291", key="cardPin") == MASK
    assert short_json("blue", key="pin") == '"blue"' and short_json("560001", key="pincode") == '"560001"'
    # A pagination cursor is no credential, however token-shaped; a token-shaped value after another `…token` name is.
    assert short_json("pg2", key="page_token") == '"pg2"' and short_json(TOKEN, key="page_token") == f'"{TOKEN}"'
    assert short_json(TOKEN, key="github_token") == MASK
    assert short_pair("hunter2", "hunter3") == ('"hunter2"', '"hunter3"')  # no key: the value alone
    assert first_difference({"auth": {"client_secret": "s1"}}, {"auth": {"client_secret": "s2"}}) == \
        "auth.client_secret: expected [REDACTED], got [REDACTED]"
    assert first_difference({"password": "p"}, {}) == "password: expected [REDACTED], missing"
    assert first_difference({}, {"passwd": "p"}, "exact") == "passwd: unexpected argument [REDACTED]"
    assert first_difference({"q": "a"}, {"q": "b"}) == 'q: expected "a", got "b"'
    assert not masked_under("password", None) and not masked_under("password", True) and not masked_under("pin", 123)


def test_argument_correctness_details_mask_values_under_credential_keys() -> None:
    case = Case.model_validate(_case("c", {}, {"password": "hunter3", "auth": {"client_secret": "s2"}, "pin": "1234", "q": "x"}))
    metric = ArgumentCorrectness(tool_name="login", expected_arguments={"password": "hunter2", "pin": "4321", "q": "y",
                                                                       "auth": {"client_secret": "s1"}})
    score = metric.evaluate(case)
    mism = score.details["mismatches"]
    assert mism["password"]["expected"] == mism["password"]["actual"] == MASK
    assert mism["pin"]["expected"] == mism["pin"]["actual"] == MASK
    assert mism["auth"]["actual"] == {"client_secret": MASK} and mism["auth"]["expected"] == {"client_secret": MASK}
    assert mism["q"] == {"expected": "y", "actual": "x", "present": True}
    assert "hunter" not in score.reason and "1234" not in score.reason and "s2" not in score.reason


PINS = {"card_pin": "738291", "pin": 90210457, "cardPin": "55443322", "ATM_PIN": "0042", "password": 12345678}


def test_a_pin_and_a_numeric_password_are_masked_in_a_custom_metrics_details() -> None:
    assert redact_details({**PINS, "nested": [dict(PINS)]}) == {**{k: MASK for k in PINS}, "nested": [{k: MASK for k in PINS}]}
    kept = {"pin": "blue", "pincode": "560001", "reset_password": 3, "short_pin": "12", "card_pin": 1234567890123, "note": 12345678}
    assert redact_details(kept) == kept
    score = masked(Score(value=1.0, reason="ok", details={"args": dict(PINS)}))
    assert score.details == {"args": {k: MASK for k in PINS}}


def test_a_numeric_password_is_masked_in_text() -> None:
    for text in ('{"password": 12345678}', '{"db_password":12345678,"x":1}', "{'api_key': 55556666}", '{\\"passwd\\": 98765}'):
        assert "[REDACTED]" in redact_quoted(text) and "[REDACTED]" in redact(text), text
        assert not any(d in redact_quoted(text) for d in ("12345678", "55556666", "98765")), text
    for text in ('{"reset_password": 3}', '{"password": 1234.5}', '{"pincode": 560001}', '{"note": 12345678}'):
        assert redact_quoted(text) == text, text


def test_a_pin_under_its_key_is_masked_in_the_viewer_and_a_live_targets_trace() -> None:
    args = {**PINS, "pin_note": "blue", "pincode": "560001"}
    case = Case.model_validate(_case("c", {}, args, name="pay"))
    want = {**{k: MASK for k in PINS}, "pin_note": "blue", "pincode": "560001"}
    shown = shown_case(case)
    assert shown is not None and shown.trace.steps[0].tool_calls[0].arguments == want
    out = scrub(Attempt(trace=case.trace), (), ())
    assert out.trace.steps[0].tool_calls[0].arguments == want
    tags, metadata = redact_labels([], {"pin": "1234", "pin_hint": "blue"})
    assert metadata == {"pin": MASK, "pin_hint": "blue"}


def test_a_matcher_under_a_credentials_key_is_masked_in_the_viewers_expected_calls() -> None:
    # The viewer masks the case it re-reads; τ²-bench's expected calls wrap numbers as `{"$python_eq": …}`, whose
    # own key names no credential: the value it holds is the one its argument's name says is secret.
    case = Case.model_validate({"id": "c", "input": "pay", "trace": {"steps": [], "output": "done"},
                                "expected_tool_calls": [{"name": "pay", "arguments": {
                                    "card_pin": {"$python_eq": 482913}, "password": {"$strict": "hunter22"},
                                    "amount": {"$python_eq": 50}, "filter": {"$gt": 5}}}]})
    shown = shown_case(case)
    assert shown is not None
    assert shown.expected_tool_calls[0].arguments == {"card_pin": {"$python_eq": MASK}, "password": {"$strict": MASK},
                                                      "amount": {"$python_eq": 50}, "filter": {"$gt": 5}}
