"""json-path filters (`list[field=value]`): semantics, config errors, the parser's properties,
and the OpenAI Agents SDK's tracing export mapped to calls with json-path alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from conftest import extract_lines
from hypothesis import given, settings
from hypothesis import strategies as st
from tracejudge.core.config import ConfigError, load_config
from tracejudge.core.records import Case
from tracejudge.stages.extract.json_path_syntax import MISSING, Cond, Each, Index, Key, PathError, format_path, parse_path, walk

REPO = Path(__file__).resolve().parents[1]


def _get(record, path):
    return walk(record, parse_path(path))


ITEMS = {"xs": [
    {"kind": "a", "n": 1, "flag": True, "who": {"name": "first one"}},
    {"kind": "b", "n": "1", "flag": 1, "who": {"name": "second"}},
    {"kind": "a", "n": 1.0, "flag": False, "who": None},
    {"kind": "c", "n": None},
    "a bare string",
    {"kind": "true", "n": 2, "flag": None, "who": {"name": "fourth"}},
]}


@pytest.mark.parametrize("path,expected", [
    ("xs[kind=a].n", [1, 1.0]),
    ("xs[kind!=a].kind", ["b", "c", "true"]),  # the bare string is kept by no filter
    ("xs[n=1].kind", ["a", "a"]),  # 1 equals 1.0, never "1"
    ('xs[n="1"].kind', ["b"]),
    ("xs[flag=true].kind", ["a"]),  # true is not 1
    ("xs[flag=1].kind", ["b"]),
    ("xs[flag=null].kind", ["true"]),  # an explicit null equals null; an absent field does not
    ("xs[n=null].kind", ["c"]),
    ('xs[kind="true"].n', [2]),  # quoted: the string, not the boolean
    ("xs[kind=true].n", []),
    ('xs[who.name="first one"].kind', ["a"]),  # nested field, quoted value with a space
    ("xs[ who.name = second ].kind", ["b"]),  # spaces inside brackets are ignored
    ("xs[kind=a][flag=false].n", [1.0]),  # several filters: all must match
    ("xs[kind=a]", [ITEMS["xs"][0], ITEMS["xs"][2]]),
    ("xs[kind=a][0].who.name", "first one"),  # an index after filters picks a match
    ("xs[kind=a][-1].flag", False),
    ("xs[kind=zzz][0].n", MISSING),  # fewer matches than the index: no value
    ("xs[4]", "a bare string"),
    ("xs[kind=a].who.name", ["first one"]),  # a null along the way adds nothing, as with `*`
])
def test_filter_semantics(path, expected):
    got = _get(ITEMS, path)
    assert got is MISSING if expected is MISSING else got == expected


@pytest.mark.parametrize("path,message", [
    ("xs.0[kind=a]", "`[kind=a]` needs a list at xs.0, found dict"),
    ("xs[9]", "xs[9]: index 9 is past the end of a list of 6"),
    ("xs.0[0]", "xs.0[0]: [0] needs a list, found dict"),
])
def test_filter_on_what_is_not_a_list_is_an_error(path, message):
    with pytest.raises(ValueError) as exc:
        _get(ITEMS, path)
    assert not isinstance(exc.value, PathError) and str(exc.value) == message


def test_a_record_whose_filtered_field_is_not_a_list_is_one_invalid_input(tmp_path: Path):
    got = extract_lines(tmp_path, "json-path", [{"spans": {"a": 1}}, {"spans": [{"t": "f", "name": "x"}]}],
                        {"tool_calls": "spans[t=f]"})
    (cid, err), case = got
    assert (err.kind, err.line) == ("invalid_input", 1)
    assert "option tool_calls ('spans[t=f]'): `[t=f]` needs a list at spans, found dict" in err.message
    assert [c.name for c in case.trace.tool_calls()] == ["x"]


# ------------------------------------------------------------------------ config errors

def _config(tmp_path: Path, options: str) -> Path:
    (tmp_path / "d.jsonl").write_text("{}\n")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"dataset:\n  path: d.jsonl\n  format: json-path\n  options:\n{options}\nmetrics: [{{type: ToolCalls}}]\n")
    return cfg


@pytest.mark.parametrize("options,message", [
    ("    tool_calls: 'spans[span_data.type=]'",
     "c.yaml:5: dataset.options.tool_calls: json-path: 'spans[span_data.type=]' at character 22: expected a value after the operator"),
    ("    output: x\n    call: {name: 'span_data[name==f]'}",
     "c.yaml:6: dataset.options.call.name: json-path: 'span_data[name==f]' at character 16: write '=' (not '==') to compare"),
    ("    input: 'a[b=\"x]'", "dataset.options.input: json-path: 'a[b=\"x]' at character 5: the quoted value is never closed"),
    ("    input: 'a[b=1 2]'", "at character 7: expected ']' after the value (quote a value that has spaces or brackets)"),
    ("    input: '*[k=v]'", "at character 2: a filter or index cannot follow `*`"),
])
def test_a_bad_path_is_a_config_error_naming_option_and_character(tmp_path: Path, options: str, message: str):
    with pytest.raises(ConfigError) as exc:
        load_config(_config(tmp_path, options))
    assert message in str(exc.value)


# ------------------------------------------------------------------------ parser properties

NAME = st.text(st.characters(blacklist_characters=".[]", blacklist_categories=("Cs",)), min_size=1, max_size=6).filter(lambda s: s != "*")
FIELD_NAME = st.text(st.characters(blacklist_characters='.[]=!" \t\r\n', blacklist_categories=("Cs",)), min_size=1, max_size=6)
SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), st.floats(allow_nan=False, allow_infinity=False),
                   st.text(st.characters(blacklist_categories=("Cs",)), max_size=8))
COND = st.builds(Cond, st.lists(FIELD_NAME, min_size=1, max_size=3).map(tuple), st.sampled_from(["=", "!="]), SCALAR)
KEYED = st.one_of(
    st.builds(lambda k: [Key(k)], NAME),
    st.builds(lambda k, i: [Key(k), Index(i)], NAME, st.integers(-5, 5)),
    st.builds(lambda k, w, p: [Key(k), Each(tuple(w), p)], NAME, st.lists(COND, min_size=1, max_size=3), st.one_of(st.none(), st.integers(-3, 3))),
)
STEPS = st.lists(st.one_of(KEYED, st.just([Each()])), min_size=1, max_size=5).map(lambda parts: tuple(s for p in parts for s in p))


@settings(max_examples=300, deadline=None)
@given(STEPS)
def test_format_then_parse_is_the_identity(steps):
    assert parse_path(format_path(steps)) == steps


ALPHABET = st.sampled_from(list('ab.*[]=!"\\ 0-1etrunl') + ["true", "null", "1.5", "\\u00e9"])


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.text(max_size=30), st.lists(ALPHABET, max_size=20).map("".join)))
def test_any_string_parses_or_is_a_clean_path_error(text):
    try:
        steps = parse_path(text)
    except PathError as exc:
        assert 1 <= exc.position <= len(text) + 1 and str(exc).startswith(repr(text))
        return
    assert parse_path(format_path(steps)) == steps
    try:  # and walking any record with it returns a value or raises ValueError, nothing else
        walk({"a": [{"b": 1}, None, "x", [1]], "0": {"a": True}}, steps)
    except ValueError:
        pass


# ------------------------------------------------------------------------ OpenAI Agents SDK export

def _span(sid, parent, data, error=None):
    return {"object": "trace.span", "id": sid, "trace_id": "trace_0a1b", "parent_id": parent,
            "started_at": "2025-06-01T10:00:00.000001+00:00", "ended_at": "2025-06-01T10:00:01.000001+00:00",
            "span_data": data, "error": error}


USER = {"role": "user", "content": "Weather in Paris, then book HAT113?"}
# One line of `{"trace": Trace.export(), "spans": [Span.export(), …]}`, spans in the order they ended (as processors see them).
AGENTS_RECORD = {
    "trace": {"object": "trace", "id": "trace_0a1b", "workflow_name": "Agent workflow", "group_id": None,
              "metadata": {"expected_tools": ["get_weather", "book_flight"]}},
    "spans": [
        _span("span_g1", "span_a", {"type": "generation", "input": [{"role": "system", "content": "Be brief."}, USER],
                                    "output": [{"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]}],
                                    "model": "gpt-4o-mini", "model_config": None, "usage": {"input_tokens": 20, "output_tokens": 9}}),
        _span("span_f1", "span_a", {"type": "function", "name": "get_weather", "input": "{\"city\":\"Paris\"}", "output": "sunny", "mcp_data": None}),
        _span("span_f2", "span_a", {"type": "function", "name": "book_flight", "input": "{\"flight\":\"HAT113\"}", "output": None, "mcp_data": None},
              error={"message": "Error running tool", "data": {"tool_name": "book_flight", "error": "seat map unavailable"}}),
        _span("span_h", "span_a", {"type": "handoff", "from_agent": "Triage", "to_agent": "Booking"}),
        _span("span_g2", "span_a", {"type": "generation", "input": [USER], "output": [{"role": "assistant", "content": "Sunny; booking failed."}],
                                    "model": "gpt-4o-mini", "model_config": None, "usage": {"input_tokens": 40, "output_tokens": 6}}),
        _span("span_a", None, {"type": "agent", "name": "Assistant", "handoffs": [], "tools": ["get_weather", "book_flight"], "output_type": "str"}),
    ],
}


def _example_options() -> dict:
    return yaml.safe_load((REPO / "examples" / "openai_agents_json_path.yaml").read_text())["dataset"]["options"]


def test_openai_agents_export_maps_to_calls_with_json_path_alone(tmp_path: Path):
    (case,) = extract_lines(tmp_path, "json-path", [AGENTS_RECORD], _example_options())
    assert isinstance(case, Case), case
    assert (case.id, case.input, case.trace.output) == ("trace_0a1b", USER["content"], "Sunny; booking failed.")
    assert [(c.id, c.name, c.arguments, c.result, c.error) for c in case.trace.tool_calls()] == [
        ("span_f1", "get_weather", {"city": "Paris"}, "sunny", None),
        ("span_f2", "book_flight", {"flight": "HAT113"}, None, "Error running tool"),
    ]
    assert [e.name for e in case.expected_tool_calls] == ["get_weather", "book_flight"]


def test_the_hand_made_record_has_the_installed_sdks_shape(tmp_path: Path):
    """The SDK's own span objects export the same keys as AGENTS_RECORD, and the example reads them too."""
    tracing = pytest.importorskip("agents.tracing")
    from agents.tracing.processor_interface import TracingProcessor
    from agents.tracing.spans import SpanError

    got: dict = {"spans": []}

    class Keep(TracingProcessor):
        def on_trace_start(self, trace): pass
        def on_trace_end(self, trace): got["trace"] = trace.export()
        def on_span_start(self, span): pass
        def on_span_end(self, span): got["spans"].append(span.export())
        def shutdown(self): pass
        def force_flush(self): pass

    tracing.set_trace_processors([Keep()])
    try:
        with tracing.trace("Agent workflow", metadata={"expected_tools": ["get_weather", "book_flight"]}):
            with tracing.agent_span(name="Assistant", tools=["get_weather", "book_flight"], output_type="str"):
                with tracing.generation_span(input=[USER], output=[{"role": "assistant", "content": "Sunny; booking failed."}], model="gpt-4o-mini"):
                    pass
                with tracing.function_span(name="get_weather", input="{\"city\":\"Paris\"}") as f:
                    f.span_data.output = "sunny"
                with tracing.function_span(name="book_flight", input="{\"flight\":\"HAT113\"}") as f:
                    f.set_error(SpanError(message="Error running tool", data={"tool_name": "book_flight", "error": "seat map unavailable"}))
                with tracing.handoff_span(from_agent="Triage", to_agent="Booking"):
                    pass
    finally:
        tracing.set_trace_processors([])

    def shape(record):
        return {s["span_data"]["type"]: (sorted(s), sorted(s["span_data"])) for s in record["spans"]}

    got = json.loads(json.dumps(got))  # as a line of the file holds it
    assert shape(got) == shape(AGENTS_RECORD) and set(got["trace"]) == set(AGENTS_RECORD["trace"])
    (case,) = extract_lines(tmp_path, "json-path", [got], _example_options())
    assert isinstance(case, Case), case
    assert [(c.name, c.arguments, c.result, c.error) for c in case.trace.tool_calls()] == [
        ("get_weather", {"city": "Paris"}, "sunny", None), ("book_flight", {"flight": "HAT113"}, None, "Error running tool")]
    assert (case.input, case.trace.output) == (USER["content"], "Sunny; booking failed.")
