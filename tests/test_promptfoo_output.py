"""promptfoo's deterministic output assertions (`contains`, `icontains`, `contains-any`, `contains-all`, their `i…`
forms, `equals`, `starts-with`, `levenshtein`, `regex`, `is-json`, and the `not-` forms).

The table's cases are promptfoo's own, from `test/assertions/contains.test.ts`, `equals.test.ts`,
`levenshtein.test.ts`, `json.test.ts` and `index.test.ts`: the same value on the same output, with promptfoo's
expected pass and reason. Where JavaScript and Python read a text or a pattern differently, the JavaScript reading
is checked against Node itself when `node` is on the PATH.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_promptfoo_trajectory import refused, run_cli
from tracejudge.core.records import Case
from tracejudge.core.registry import build_metric
from tracejudge.stages.score.promptfoo_js import js_regex, levenshtein, parse_comma_separated
import _forkserver

OK = "Assertion passed"


def graded(kind: str, value: Any, output: str | None, **spec: Any) -> tuple[float | None, bool | None, str]:
    params = {"type": kind, **({} if value is ... else {"value": value}), **spec}
    s = build_metric(params).evaluate(Case.model_validate({"id": "c", "trace": {"steps": [], "output": output}}))
    return s.value, s.passed, s.reason


TABLE = [
    # contains.test.ts
    ("contains", "world", "hello world", True, OK),
    ("contains", "universe", "hello world", False, 'Expected output to contain "universe"'),
    ("not-contains", "universe", "hello world", True, OK),
    ("not-contains", "world", "hello world", False, 'Expected output to not contain "world"'),
    ("icontains", "WORLD", "hello world", True, OK),
    ("icontains", "WoRlD", "Hello WORLD", True, OK),
    ("contains", 0, "There are 0 errors", True, OK),
    ("icontains", 0, "no digits here", False, 'Expected output to contain "0"'),
    ("contains", float("inf"), "Infinity", True, OK),
    ("contains-any", ["world", "universe"], "hello world", True, OK),
    ("contains-any", "world,universe", "hello world", True, OK),
    ("contains-any", '"hello, world",universe', "hello, world", True, OK),
    ("contains-any", '"hello, dear world", "goodbye, universe", simple', "hello, dear world is here", True, OK),
    ("contains-any", '"",', "", True, OK),
    ("contains-any", '"hello, world"\t,foo', "zzz", False, 'Expected output to contain one of "hello, world, foo"'),
    ("contains-any", '"hello, world"\t,\t"foo"', "foo", True, OK),
    ("contains-any", '"a""b",c', 'a"b', True, OK),
    ("contains-any", '"a""b",c', "b", False, 'Expected output to contain one of "a"b, c"'),
    ("contains-any", '"hello\\"world,test", "another,test"', 'hello"world,test', True, OK),
    ("contains-any", '"hello\\"world,test", "another,test"', "another,test", True, OK),
    ("contains-any", '"test\\\\test"', "test\\test", True, OK),
    ("icontains-any", '"hello\\"world,test", "another,test"', "ANOTHER,TEST", True, OK),
    ("not-contains-any", ["world", "universe"], "hello world", False, 'Expected output to not contain one of "world, universe"'),
    ("contains-all", ["hello", "world"], "hello world", True, OK),
    ("contains-all", ["hello", "universe"], "hello world",
     False, "Expected output to contain all of [hello, universe]. Missing: [universe]"),
    ("icontains-all", "HELLO, World", "hello world", True, OK),
    ("not-contains-all", ["hello", "world"], "hello world",
     False, "Expected output to not contain all of [hello, world]. Missing: []"),
    ("contains-all", [], "anything", True, OK),  # (an empty array is truthy: nothing is missing)
    ("contains-all", ["a", None, 1], "a null 1", True, OK),  # (String(null) is "null")
    ("contains-all", ["b", None], "a", False, "Expected output to contain all of [b, ]. Missing: [b, ]"),  # (join writes null as "")
    # equals.test.ts
    ("equals", "Expected output", "Expected output", True, OK),
    ("equals", "Expected output", "Different output", False, 'Expected output "Different output" to equal "Expected output"'),
    ("not-equals", "Expected output", "Different output", True, OK),
    ("equals", {"key": "value"}, '{"key": "value"}', True, OK),
    ("equals", {"key": "value"}, '{"key": "not value"}',
     False, 'Expected output "{"key": "not value"}" to equal "{"key":"value"}"'),
    ("equals", {"key": "value"}, "not json", False, 'Expected output "not json" to equal "{"key":"value"}"'),
    ("not-equals", {"key": "value"}, "not json", True, OK),
    ("equals", {"a": 1, "b": [True]}, '{"b": [true], "a": 1.0}', True, OK),
    ("equals", [1], "[true]", False, 'Expected output "[true]" to equal "[1]"'),
    ("equals", None, "null", True, OK),
    ("equals", 5, "5", True, OK),
    ("equals", 1.5e21, "1.5e+21", True, OK),
    ("equals", "A", "a", False, 'Expected output "a" to equal "A"'),
    # startsWith (index.test.ts)
    ("starts-with", "Expected", "Expected output", True, OK),
    ("starts-with", "Expected", "Different output", False, 'Expected output to start with "Expected"'),
    ("not-starts-with", "Expected", "Expected output", False, 'Expected output to not start with "Expected"'),
    # levenshtein.test.ts
    ("levenshtein", "test", "test", True, OK),
    ("levenshtein", "test", "tast", True, OK),
    ("levenshtein", "test", "completely different", False, "Levenshtein distance 17 is greater than threshold 5"),
    ("levenshtein", "", "", True, OK),
    ("levenshtein", "test!@#$", "test!@#$", True, OK),
    ("levenshtein", "ab", "😀😀ab", True, OK),  # 4 UTF-16 units added: within 5
    ("levenshtein", "ab", "😀😀😀ab", False, "Levenshtein distance 6 is greater than threshold 5"),  # 6 units, not 3 characters
    # regex (index.test.ts)
    ("regex", "\\d{3}-\\d{3}-\\d{4}", "Contact me at 123-456-7890", True, OK),
    ("regex", "\\d{3}-\\d{3}-\\d{4}", "No phone numbers here", False, 'Expected output to match regex "\\d{3}-\\d{3}-\\d{4}"'),
    ("not-regex", "\\d{3}-\\d{3}-\\d{4}", "No phone numbers here", True, OK),
    ("not-regex", "\\d{3}-\\d{3}-\\d{4}", "Contact me at 123-456-7890",
     False, 'Expected output to not match regex "\\d{3}-\\d{3}-\\d{4}"'),
    ("regex", "^\\d+$", "42\n", False, 'Expected output to match regex "^\\d+$"'),  # JavaScript's $ is the end only
    ("regex", "^.$", "😀", False, 'Expected output to match regex "^.$"'),  # `.` is one UTF-16 unit
    ("regex", "^..$", "😀", True, OK),
    ("regex", "^\\d$", "٣", False, 'Expected output to match regex "^\\d$"'),  # \d is ASCII
    ("regex", "a{,2}", "a{,2}", True, OK),  # a literal brace in JavaScript, a quantifier in Python
    ("regex", "^\\s$", "\ufeff", True, OK),  # JavaScript's \s has the byte-order mark
    ("regex", "^a.b$", "a\u2028b", False, 'Expected output to match regex "^a.b$"'),
    ("regex", "(?<y>\\d{4})", "in 2024", True, OK),
    ("regex", "\\e\\A", "eA", True, OK),  # identity escapes
    # json.test.ts (is-json)
    ("is-json", ..., '{"key": "value"}', True, OK),
    ("is-json", ..., "not json", False, "Expected output to be valid JSON"),
    ("not-is-json", ..., "not json", True, OK),
    ("not-is-json", ..., '{"key": "value"}', False, "Expected output to be valid JSON"),
    ("is-json", ..., "NaN", False, "Expected output to be valid JSON"),  # Python's json reads it; JSON.parse does not
    ("is-json", ..., "\ufeff{}", False, "Expected output to be valid JSON"),
    ("is-json", {"required": ["latitude", "longitude"], "type": "object",
                 "properties": {"latitude": {"type": "number"}, "longitude": {"type": "number"}}},
     '{"latitude": 80.123, "longitude": -1}', True, OK),
    ("is-json", "required: [latitude]\ntype: object", '{"longitude": 1}', False,
     "JSON does not conform to the provided schema. Errors: data: 'latitude' is a required property"),
    ("not-is-json", {"type": "object"}, '{"a": 1}', False, "Output is JSON that conforms to the provided schema"),
    ("not-is-json", {"type": "object"}, "[1]", True, OK),
]


@pytest.mark.parametrize("kind, value, output, passed, reason", TABLE)
def test_as_promptfoo_grades_it(kind: str, value: Any, output: str, passed: bool, reason: str) -> None:
    assert graded(kind, value, output) == (1.0 if passed else 0.0, passed, reason)


def test_levenshtein_threshold_and_a_missing_output() -> None:
    assert graded("levenshtein", "test", "tist", threshold=2)[:2] == (1.0, True)
    assert graded("levenshtein", "abc", "", threshold=2) == (0.0, False, "Levenshtein distance 3 is greater than threshold 2")
    assert graded("contains", "x", None)[1] is False  # a missing output is the empty text
    assert build_metric({"type": "contains", "value": "x"}).evaluate(Case.model_validate({"id": "c", "input": "hi"})).value is None


@pytest.mark.parametrize("kind, value, message", [
    ("contains", ..., '"contains" assertion type must have a string or number value'),
    ("contains", "", '"contains" assertion type must have a string or number value'),
    ("icontains", True, '"icontains" assertion type must have a string or number value'),
    ("icontains", float("nan"), '"icontains" assertion type must have a string or number value'),
    ("contains-any", ..., '"contains-any" assertion type must have a value'),
    ("contains-all", 0, '"contains-all" assertion type must have a value'),
    ("contains-any", 3, '"contains-any" assertion type must have an array value'),
    ("contains-any", {"a": 1}, '"contains-any" assertion type must have an array value'),
    ("contains-any", [{"a": 1}], "each item is a text or a number"),
    ("contains-any", '"test', "Unterminated quoted field in contains assertion value"),
    ("icontains-any", '"hello"world', "Expected comma after quoted field in contains assertion value"),
    ("contains-any", '"hello" world', "Expected comma after quoted field in contains assertion value"),
    ("starts-with", "", '"starts-with" assertion type must have a string value'),
    ("starts-with", 5, '"starts-with" assertion type must have a string value'),
    ("levenshtein", 123, '"levenshtein" assertion type must have a string value'),
    ("not-levenshtein", "x", "ignores the not- prefix"),
    ("equals", ..., '"equals" assertion needs a value'),
    ("regex", "", '"regex" assertion type must have a string value'),
    ("regex", "(abc", "invalid regular expression"),
    ("regex", "(?i)abc", "JavaScript has no such group"),
    ("regex", "(?P<n>a)", "JavaScript has no such group"),
    ("regex", "(a)\\1", "back references are not carried over"),
    ("regex", "(?<n>a)\\k<n>", "back references are not carried over"),
    ("regex", "a++", "nothing to repeat"),
    ("regex", "a{2}{3}", "nothing to repeat"),
    ("regex", "\\01", "legacy octal escape"),
    ("is-json", {"type": "nope"}, "Invalid JSON schema"),
    ("is-json", 5, "is-json assertion must have a string, boolean, or object value"),
])
def test_values_promptfoo_throws_on_are_config_errors(kind: str, value: Any, message: str) -> None:
    if value is ...:
        with pytest.raises(Exception) as err:
            build_metric({"type": kind})
        assert message in str(err.value)
        return
    assert message in refused(kind, value)


@pytest.mark.parametrize("spec, message", [
    ({"type": "contains", "value": "x", "threshold": 0.5}, "ignores threshold"),
    ({"type": "levenshtein", "value": "x", "threshold": 0}, "threshold 0 is read as 5"),
    ({"type": "levenshtein", "value": "x", "threshold": -1}, "a distance nothing is within"),
])
def test_threshold_where_promptfoo_ignores_or_misreads_it(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(Exception) as err:
        build_metric(spec)
    assert message in str(err.value)


def test_metric_is_read_as_name() -> None:
    assert build_metric({"type": "icontains", "value": "x", "metric": "mentions_x"}).key == "mentions_x"


def test_comma_separated_values_as_promptfoo_splits_them() -> None:
    assert parse_comma_separated(" a , b,,c ,") == ["a", "b", "c"]
    assert parse_comma_separated('"x, y" , z') == ["x, y", "z"]


def test_levenshtein_agrees_with_a_table() -> None:
    def table(a: str, b: str) -> int:
        row = list(range(len(b) + 1))
        for i, ca in enumerate(a, 1):
            prev, row[0] = row[0], i
            for j, cb in enumerate(b, 1):
                prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (ca != cb))
        return row[-1]

    rnd = random.Random(7)
    for _ in range(400):
        a = "".join(rnd.choice("abc") for _ in range(rnd.randrange(0, 90)))
        b = "".join(rnd.choice("abcd") for _ in range(rnd.randrange(0, 90)))
        assert levenshtein(a, b) == table(a, b), (a, b)


NODE = shutil.which("node")
PATTERNS = ["^\\d+$", "^.$", "^..$", "a{,2}", "a{2}", "\\bfoo\\b", "^\\s+$", "\\w+", "[\\s\\S]", "[^]", "[]", "x$", "\\e",
            "[\\d-]", "\\x4", "\\u12", "\\cJ", "(?<y>\\d)", "(?=a)a", "(?<=a)b", "(?<!a)b", "[\\b]", "\\/", "a|b", "[a-c]+?",
            "\\S+", "\\W", "\\D", "[\\w.]+@", "\\}", "}", "]", "{", "\\p{L}", "\\0"]
TEXTS = ["42", "42\n", "😀", "a{,2}", "aa", "foo bar", " \ufeff\u2028", "é", "x\n", "e", "-", "x4", "u12", "\n", "ab",
         "\x08", "/", "abc", "p{L}", "\x00", "٣", "\u00a0", "a@b.c", "}", "]", "{"]


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_patterns_match_as_javascript_matches_them() -> None:
    import regex

    script = "const [ps, ts] = JSON.parse(require('fs').readFileSync(0, 'utf8'));" \
             "console.log(JSON.stringify(ps.map(p => ts.map(t => new RegExp(p).test(t)))))"
    done = _forkserver.run([NODE, "-e", script], input=json.dumps([PATTERNS, TEXTS]), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    expected = json.loads(done.stdout)
    from tracejudge.stages.score.promptfoo_js import utf16_units

    for p, row in zip(PATTERNS, expected):
        rx = regex.compile(js_regex(p), regex.ASCII)
        got = [rx.search(utf16_units(t)) is not None for t in TEXTS]
        assert got == row, (p, [t for t, g, e in zip(TEXTS, got, row) if g != e])


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_case_folding_is_javascripts_for_the_texts_python_knows() -> None:
    # Python 3.11's `lower` and Node's `toLowerCase` agree on every character of Unicode 14 (final sigma included).
    texts = ["İstanbul", "ΣΑΣ ΟΔΟΣ", "ǅ", "ẞ", "Ω", "K", "ÅNGSTRÖM", "ＡＢＣ"]
    done = _forkserver.run([NODE, "-e", "console.log(JSON.stringify(JSON.parse(require('fs').readFileSync(0,'utf8'))"
                           ".map(t => t.toLowerCase())))"], input=json.dumps(texts), capture_output=True, text=True, timeout=60)
    assert json.loads(done.stdout) == [t.lower() for t in texts]
    assert graded("icontains", "i̇stanbul", "İSTANBUL")[1] is True


def test_end_to_end_through_the_command_line(tmp_path: Path) -> None:
    cases = [{"id": "c1", "trace": {"steps": [], "output": '{"status": "shipped", "order": 42}'}},
             {"id": "c2", "trace": {"steps": [], "output": "Sorry, I cannot help."}}]
    metrics = [{"type": "icontains", "value": "SHIPPED"},
               {"type": "not-icontains-any", "value": "sorry, cannot"},
               {"type": "contains-all", "value": ["status", "order"]},
               {"type": "is-json", "value": {"type": "object", "required": ["status"]}},
               {"type": "regex", "value": '"order": \\d+\\}$'},
               {"type": "starts-with", "value": "{"},
               {"type": "equals", "value": {"order": 42, "status": "shipped"}, "metric": "exact_json"},
               {"type": "levenshtein", "value": "Sorry, I can't help.", "threshold": 3}]
    done = run_cli(tmp_path, metrics, cases)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = {r["case_id"]: r["scores"] for r in map(json.loads, (tmp_path / "run" / "results.jsonl").read_text().splitlines())}
    passed = {cid: {k: s["passed"] for k, s in scores.items()} for cid, scores in rows.items()}
    assert passed["c1"] == {"icontains": True, "not-icontains-any": True, "contains-all": True, "is-json": True,
                            "regex": True, "starts-with": True, "exact_json": True, "levenshtein": False}
    assert passed["c2"] == {"icontains": False, "not-icontains-any": False, "contains-all": False, "is-json": False,
                            "regex": False, "starts-with": False, "exact_json": False, "levenshtein": True}
    assert rows["c2"]["not-icontains-any"]["reason"] == 'Expected output to not contain one of "sorry, cannot"'


def test_is_json_without_a_schema_runs_in_a_run_and_in_worker_processes(tmp_path: Path) -> None:
    # `is-json` with no `value` (promptfoo's plain "the output is JSON") is a valid config: writing the run's
    # manifest and handing the metric to worker processes must carry the missing value, not stop the run.
    cases = [{"id": "c1", "trace": {"steps": [], "output": '{"a": 1}'}},
             {"id": "c2", "trace": {"steps": [], "output": "no JSON"}}]
    for processes in (1, 2):
        run = tmp_path / f"p{processes}"
        run.mkdir()
        data = run / "cases.jsonl"
        data.write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
        (run / "cfg.yaml").write_text(json.dumps({
            "dataset": {"path": "cases.jsonl", "format": "native"}, "cache": {"enabled": False},
            "metrics": [{"type": "is-json"}, {"type": "not-is-json", "name": "not_json"}],
            "run": {"dir": "run", "processes": processes}}), encoding="utf-8")
        done = _forkserver.run([sys.executable, "-m", "tracejudge", "run", "cfg.yaml", "--no-progress"], cwd=run,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        rows = {r["case_id"]: r["scores"] for r in map(json.loads, (run / "run" / "results.jsonl").read_text().splitlines())}
        assert {c: (s["is-json"]["passed"], s["not_json"]["passed"]) for c, s in rows.items()} == {
            "c1": (True, False), "c2": (False, True)}, processes
