"""Format `anthropic-messages` on conversations with Anthropic server tools, made by the real SDK.

Server tools (`server_tool_use`: web_search, web_fetch, code_execution, bash / text_editor code execution, tool
search; `mcp_tool_use` with the MCP connector) run inside the model's response: their result blocks follow them in
the same assistant message, and the text after the last of them is the reply to the user. That text was read as
the thought of a step with calls, so a turn answered after a web search had no output.

Each conversation here is made by the anthropic SDK (`messages.create`, `messages.stream(...)` +
`get_final_message()`, the beta client for the MCP connector) against the scripted Anthropic server on 127.0.0.1
(`frameworks/fake_anthropic.py`, here also streaming server tool blocks as the API does: a server call's input as
`input_json_delta`s, a result block whole in its `content_block_start`, citations as `citations_delta`s), written as
the SDK returned each message (`message.model_dump()` content), then extracted. Plus the user trial's file as it
was written by hand.

The last tests record the conversations under the OTel instrumentations of the Anthropic SDK (OpenInference,
OpenLLMetry; in a subprocess, run as `python tests/test_anthropic_server_tools.py record-otel KIND OUT [SCENARIO]`:
instrumentors patch the process) and read them with format `otel`: OpenInference's reading is the native one;
OpenLLMetry's has what its spans keep (server blocks only in a later request's replay of the response).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import _forkserver

FRAMEWORKS = Path(__file__).resolve().parent / "frameworks"
MODEL = "claude-sonnet-4-5"
SYSTEM = "You are a research assistant."


# ------------------------------------------------------------------------------------------------ the scripts
def _text(text: str, *citations: dict[str, Any]) -> dict[str, Any]:
    return {"type": "text", "text": text, **({"citations": list(citations)} if citations else {})}


def _server(cid: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"type": "server_tool_use", "id": cid, "name": name, "input": args}


def _result(kind: str, cid: str, content: Any) -> dict[str, Any]:
    return {"type": kind, "tool_use_id": cid, "content": content}


def _use(cid: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": cid, "name": name, "input": args}


PARIS_PAGE = {"type": "web_search_result", "title": "Paris weather today", "url": "https://weather.example/paris",
              "encrypted_content": "EqwBCioIAhgB", "page_age": "1 hour ago"}
CITED = {"type": "web_search_result_location", "url": "https://weather.example/paris", "title": "Paris weather today",
         "encrypted_index": "Eo8BCioIAhgB", "cited_text": "Paris: sunny, 21 C, light wind."}
FETCHED = {"type": "web_fetch_result", "url": "https://example.com/report", "retrieved_at": "2025-06-01T10:00:00Z",
           "content": {"type": "document", "title": "Q1 report", "citations": {"enabled": True},
                       "source": {"type": "text", "media_type": "text/plain", "data": "Revenue rose 5% in Q1."}}}
FORMULA = {"type": "web_fetch_result", "url": "https://units.example/f", "retrieved_at": "2025-06-01T10:05:00Z",
           "content": {"type": "document", "title": "Fahrenheit", "citations": {"enabled": True},
                       "source": {"type": "text", "media_type": "text/plain", "data": "F = C x 9/5 + 32"}}}
FORMULA_CITED = {"type": "char_location", "cited_text": "F = C x 9/5 + 32", "document_index": 0, "document_title": "Fahrenheit",
                 "start_char_index": 0, "end_char_index": 16, "file_id": None}
CRASH = {"type": "bash_code_execution_result", "stdout": "", "stderr": "ZeroDivisionError: division by zero", "return_code": 1, "content": []}
TOOL_REFS = {"type": "tool_search_tool_search_result", "tool_references": [{"type": "tool_reference", "tool_name": "get_weather"}]}

SEARCH_REPLY = "Based on the search, Paris is sunny at 21 C. Expect clouds by evening."
MIXED_SOURCE = "Per the page, F = C x 9/5 + 32."


@dataclass
class Scenario:
    """A conversation: the application's first message, then per request the model's reply and what the application
    sends next (`None` after the last). `beta`: through `client.beta.messages` (the MCP connector)."""

    first: Any
    replies: list[list[dict[str, Any]]]
    sends: list[Any]
    tools: list[dict[str, Any]] = field(default_factory=list)
    beta: bool = False


WEATHER_TOOL = {"name": "get_weather", "description": "Current weather in a city.",
                "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
LOG_TOOL = {"name": "log_reading", "description": "Store a reading.",
            "input_schema": {"type": "object", "properties": {"value": {"type": "number"}}, "required": ["value"]}}

SCENARIOS: dict[str, Scenario] = {
    # The trial's shape: a web search answered in the same response (the reply cut around its citation), then a
    # turn that calls a client tool.
    "search": Scenario(
        "What's the weather in Paris right now?",
        [[{"type": "thinking", "thinking": "Live weather: search the web.", "signature": "sig-1"},
          _text("I'll search for Paris's weather."),
          _server("srvtoolu_01", "web_search", {"query": "Paris weather today"}),
          _result("web_search_tool_result", "srvtoolu_01", [PARIS_PAGE]),
          _text("Based on the search, "), _text("Paris is sunny at 21 C.", CITED), _text(" Expect clouds by evening.")],
         [_text("Checking Tokyo."), _use("toolu_02", "get_weather", {"city": "Tokyo"})],
         [_text("Tokyo is rainy at 14 C.")]],
        ["And Tokyo?", [{"type": "tool_result", "tool_use_id": "toolu_02", "content": "rainy, 14 C"}], None],
        tools=[{"type": "web_search_20250305", "name": "web_search", "max_uses": 3}, WEATHER_TOOL],
    ),
    # Every server tool in one response, failing and succeeding, then the reply.
    "server-tools": Scenario(
        "Summarise the Q1 report and check my script.",
        [[_text("Let me look."),
          _server("srvtoolu_11", "web_search", {"query": "Q1 report"}),
          _result("web_search_tool_result", "srvtoolu_11", {"type": "web_search_tool_result_error", "error_code": "max_uses_exceeded"}),
          _server("srvtoolu_12", "web_fetch", {"url": "https://example.com/report"}),
          _result("web_fetch_tool_result", "srvtoolu_12", FETCHED),
          _server("srvtoolu_13", "bash_code_execution", {"command": "python -c 'print(1/0)'"}),
          _result("bash_code_execution_tool_result", "srvtoolu_13", CRASH),
          _server("srvtoolu_14", "text_editor_code_execution", {"command": "view", "path": "/tmp/missing.py"}),
          _result("text_editor_code_execution_tool_result", "srvtoolu_14",
                  {"type": "text_editor_code_execution_tool_result_error", "error_code": "file_not_found", "error_message": "File not found: /tmp/missing.py"}),
          _server("srvtoolu_15", "code_execution", {"code": "print(2 + 2)"}),
          _result("code_execution_tool_result", "srvtoolu_15", {"type": "code_execution_tool_result_error", "error_code": "unavailable"}),
          _server("srvtoolu_16", "tool_search_tool_regex", {"query": "weather"}),
          _result("tool_search_tool_result", "srvtoolu_16", TOOL_REFS),
          _text("Revenue rose 5% in Q1. Your script divides by zero.")]],
        [None],
        tools=[{"type": "web_search_20250305", "name": "web_search", "max_uses": 1}, {"type": "web_fetch_20250910", "name": "web_fetch"},
               {"type": "code_execution_20250825", "name": "code_execution"}, {"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"}],
    ),
    # The MCP connector: the remote server's tools answer inside the response too.
    "mcp": Scenario(
        "How many people live in Paris?",
        [[_text("Let me check the knowledge base."),
          {"type": "mcp_tool_use", "id": "mcptoolu_01", "name": "lookup", "server_name": "kb", "input": {"term": "Parys"}},
          {"type": "mcp_tool_result", "tool_use_id": "mcptoolu_01", "is_error": True, "content": [_text("no entry for Parys")]},
          {"type": "mcp_tool_use", "id": "mcptoolu_02", "name": "lookup", "server_name": "kb", "input": {"term": "Paris"}},
          {"type": "mcp_tool_result", "tool_use_id": "mcptoolu_02", "is_error": False, "content": [_text('{"population": 2102650}')]},
          _text("Paris has 2,102,650 inhabitants.")]],
        [None],
        beta=True,
    ),
    # A server tool, then a client tool in the same response: that response waits for the application, its words
    # are a thought; a later turn's reply after a web fetch is its output.
    "mixed": Scenario(
        "Convert 21 C to Fahrenheit and log it.",
        [[_server("srvtoolu_21", "code_execution", {"code": "print(21 * 9 / 5 + 32)"}),
          _result("code_execution_tool_result", "srvtoolu_21",
                  {"type": "code_execution_result", "stdout": "69.8\n", "stderr": "", "return_code": 0, "content": []}),
          _text("That is 69.8 F; I'll log it."), _use("toolu_22", "log_reading", {"value": 69.8})],
         [_text("Logged: 21 C is 69.8 F.")],
         [_server("srvtoolu_23", "web_fetch", {"url": "https://units.example/f"}),
          _result("web_fetch_tool_result", "srvtoolu_23", FORMULA),
          _text("Per the page, "), _text("F = C x 9/5 + 32", FORMULA_CITED), _text(".")]],
        [[{"type": "tool_result", "tool_use_id": "toolu_22", "content": "logged"}], "Source for the formula?", None],
        tools=[{"type": "code_execution_20250825", "name": "code_execution"}, {"type": "web_fetch_20250910", "name": "web_fetch"}, LOG_TOOL],
    ),
}


# ------------------------------------------------------------------------------- the server and the application
def _server_deltas(plain: Any) -> Any:
    """`fake_anthropic._deltas` that also streams server tool blocks as the API does (`plain`: the original)."""

    def deltas(block: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        kind = block["type"]
        if kind in ("server_tool_use", "mcp_tool_use"):
            raw = json.dumps(block["input"])
            return {**block, "input": {}}, [{"type": "input_json_delta", "partial_json": raw[i:i + 6]} for i in range(0, len(raw), 6)]
        if kind.endswith("_tool_result"):
            return block, []  # a result arrives whole
        if kind == "text" and block.get("citations"):
            start, parts = plain({"type": "text", "text": block["text"]})
            return start, parts + [{"type": "citations_delta", "citation": c} for c in block["citations"]]
        return plain(block)

    return deltas


@contextmanager
def scripted(replies: list[list[dict[str, Any]]]) -> Iterator[Any]:
    """`ScriptedAnthropic` answering `replies` in order (usage made up), server tool blocks streamed too."""
    if str(FRAMEWORKS) not in sys.path:
        sys.path.insert(0, str(FRAMEWORKS))
    import fake_anthropic

    plain = fake_anthropic._deltas
    fake_anthropic._deltas = _server_deltas(plain)
    try:
        with fake_anthropic.ScriptedAnthropic([(r, {"input_tokens": 100 + 10 * k, "output_tokens": 20 + k}) for k, r in enumerate(replies)]) as fake:
            yield fake
    finally:
        fake_anthropic._deltas = plain


def converse(client: Any, s: Scenario, stream: bool) -> dict[str, Any]:
    """The application: send, keep each reply as the SDK returned it (`model_dump()` content), send what comes next."""
    api = client.beta.messages if s.beta else client.messages
    extra: dict[str, Any] = {"mcp_servers": [{"type": "url", "url": "https://kb.example/mcp", "name": "kb"}],
                             "betas": ["mcp-client-2025-04-04"]} if s.beta else {}
    messages: list[dict[str, Any]] = [{"role": "user", "content": s.first}]
    usage = {"input_tokens": 0, "output_tokens": 0}
    for send in s.sends:
        kw = dict(model=MODEL, max_tokens=2048, system=SYSTEM, messages=messages, **({"tools": s.tools} if s.tools else {}), **extra)
        if stream:
            with api.stream(**kw) as st:
                reply = st.get_final_message()
        else:
            reply = api.create(**kw)
        usage = {k: usage[k] + getattr(reply.usage, k) for k in usage}
        messages.append({"role": "assistant", "content": reply.model_dump()["content"]})
        if send is None:
            break
        messages.append({"role": "user", "content": send})
    return {"system": SYSTEM, "messages": messages, "usage": usage}


def record(name: str, stream: bool) -> dict[str, Any]:
    import anthropic

    s = SCENARIOS[name]
    with scripted(s.replies) as fake:
        client = anthropic.Anthropic(base_url=fake.url, api_key="sk-ant-fake", max_retries=0)
        return {"id": name, **converse(client, s, stream)}


# ------------------------------------------------------------------------------------------------ reading
@pytest.fixture(scope="module")
def recorded() -> dict[tuple[str, bool], dict[str, Any]]:
    pytest.importorskip("anthropic")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # the SDK warns of the model alias's end of life
        return {(name, stream): record(name, stream) for name in SCENARIOS for stream in (False, True)}


def _case(tmp_path: Path, record: dict[str, Any]) -> Any:
    from conftest import extract_lines
    from tracejudge.core.records import Case

    (case,) = extract_lines(tmp_path, "anthropic-messages", [json.dumps(record, default=str)])
    assert isinstance(case, Case), case
    return case


def _calls(step: Any) -> list[tuple[Any, ...]]:
    return [(c.id, c.name, c.arguments, c.error) for c in step.tool_calls]


STREAMS = pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])


@STREAMS
def test_sdk_returns_the_scripted_blocks(recorded: dict[tuple[str, bool], dict[str, Any]], stream: bool) -> None:
    """The recordings hold the server blocks as the API sent them (the fake server, and its streamed form, are faithful)."""
    blocks = recorded[("search", stream)]["messages"][1]["content"]
    assert [b["type"] for b in blocks] == ["thinking", "text", "server_tool_use", "web_search_tool_result", "text", "text", "text"]
    assert blocks[2]["input"] == {"query": "Paris weather today"} and blocks[5]["citations"] == [CITED]
    mcp = recorded[("mcp", stream)]["messages"][1]["content"]
    assert [(b["type"], b.get("server_name"), b.get("is_error")) for b in mcp[1:5]] == [
        ("mcp_tool_use", "kb", None), ("mcp_tool_result", None, True), ("mcp_tool_use", "kb", None), ("mcp_tool_result", None, False)]


@STREAMS
def test_web_search_reply_is_the_turns_output(tmp_path: Path, recorded: dict[tuple[str, bool], dict[str, Any]], stream: bool) -> None:
    """The text after the search result is the first turn's answer: the step's output, cut pieces joined as cut;
    the words before the search and the thinking are its thought; the search is its call, with its results."""
    case = _case(tmp_path, recorded[("search", stream)])
    s0, s1, s2 = case.trace.steps
    assert (s0.thought, s0.output) == ("Live weather: search the web.\nI'll search for Paris's weather.", SEARCH_REPLY)
    assert _calls(s0) == [("srvtoolu_01", "web_search", {"query": "Paris weather today"}, None)]
    assert s0.tool_calls[0].result == [PARIS_PAGE]
    # text before a client tool_use stays a thought; the last reply is the output
    assert (s1.thought, s1.output, _calls(s1)) == ("Checking Tokyo.", None, [("toolu_02", "get_weather", {"city": "Tokyo"}, None)])
    assert s1.tool_calls[0].result == "rainy, 14 C"
    assert (s2.thought, s2.output, s2.tool_calls) == (None, "Tokyo is rainy at 14 C.", [])
    assert case.trace.output == "Tokyo is rainy at 14 C."
    assert case.input == "What's the weather in Paris right now?" and case.turns == ["And Tokyo?"]
    assert [(m.step, m.content) for m in case.trace.user_messages] == [(0, case.input), (1, "And Tokyo?")]


@STREAMS
def test_server_tool_errors_and_results(tmp_path: Path, recorded: dict[tuple[str, bool], dict[str, Any]], stream: bool) -> None:
    """Every server tool is a call with its input and result; a `*_tool_result_error` content fails it (its message,
    else its code); a script that ran and exited 1 is a result. The reply after them is the output."""
    case = _case(tmp_path, recorded[("server-tools", stream)])
    (step,) = case.trace.steps
    assert _calls(step) == [
        ("srvtoolu_11", "web_search", {"query": "Q1 report"}, "max_uses_exceeded"),
        ("srvtoolu_12", "web_fetch", {"url": "https://example.com/report"}, None),
        ("srvtoolu_13", "bash_code_execution", {"command": "python -c 'print(1/0)'"}, None),
        ("srvtoolu_14", "text_editor_code_execution", {"command": "view", "path": "/tmp/missing.py"}, "File not found: /tmp/missing.py"),
        ("srvtoolu_15", "code_execution", {"code": "print(2 + 2)"}, "unavailable"),
        ("srvtoolu_16", "tool_search_tool_regex", {"query": "weather"}, None),
    ]
    results = [c.result for c in step.tool_calls]
    assert results[1]["content"]["source"]["data"] == "Revenue rose 5% in Q1."
    assert (results[2]["return_code"], results[2]["stderr"]) == (1, "ZeroDivisionError: division by zero")
    assert results[5]["tool_references"] == [{"type": "tool_reference", "tool_name": "get_weather"}]
    assert (step.thought, step.output) == ("Let me look.", "Revenue rose 5% in Q1. Your script divides by zero.")
    assert case.trace.output == step.output
    assert [c.failed for c in case.trace.tool_calls()] == [True, False, False, True, True, False]


@STREAMS
def test_mcp_connector_calls(tmp_path: Path, recorded: dict[tuple[str, bool], dict[str, Any]], stream: bool) -> None:
    """`mcp_tool_use` / `mcp_tool_result`: calls of the step (`is_error: true` fails one with its text), and the
    reply after them its output."""
    case = _case(tmp_path, recorded[("mcp", stream)])
    (step,) = case.trace.steps
    assert _calls(step) == [("mcptoolu_01", "lookup", {"term": "Parys"}, "no entry for Parys"), ("mcptoolu_02", "lookup", {"term": "Paris"}, None)]
    assert [c.result for c in step.tool_calls] == ["no entry for Parys", {"population": 2102650}]
    assert (step.thought, step.output) == ("Let me check the knowledge base.", "Paris has 2,102,650 inhabitants.")
    assert case.trace.output == "Paris has 2,102,650 inhabitants."


@STREAMS
def test_server_tool_then_client_tool_is_a_thought(tmp_path: Path, recorded: dict[tuple[str, bool], dict[str, Any]], stream: bool) -> None:
    """A response that ran a server tool and then asks for a client tool waits for the application: its text is a
    thought, and it has no output; a later turn answered after a web fetch has its reply as output."""
    case = _case(tmp_path, recorded[("mixed", stream)])
    s0, s1, s2 = case.trace.steps
    assert (s0.thought, s0.output) == ("That is 69.8 F; I'll log it.", None)
    assert _calls(s0) == [("srvtoolu_21", "code_execution", {"code": "print(21 * 9 / 5 + 32)"}, None), ("toolu_22", "log_reading", {"value": 69.8}, None)]
    assert (s0.tool_calls[0].result["stdout"], s0.tool_calls[1].result) == ("69.8\n", "logged")
    assert (s1.thought, s1.output) == (None, "Logged: 21 C is 69.8 F.")
    assert (s2.thought, s2.output, _calls(s2)) == (None, MIXED_SOURCE, [("srvtoolu_23", "web_fetch", {"url": "https://units.example/f"}, None)])
    assert case.trace.output == MIXED_SOURCE
    assert [m.step for m in case.trace.user_messages] == [0, 2]


# ---------------------------------------------------------------------------------------- the trial's file
TRIAL = {"id": "a1", "system": [{"type": "text", "text": "Be helpful."}], "messages": [
    {"role": "user", "content": "Weather in Paris and Tokyo? Then search news."},
    {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "I should call both.", "signature": "s1"}, {"type": "redacted_thinking", "data": "abc"},
        {"type": "text", "text": "Checking."},
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
        {"type": "tool_use", "id": "toolu_2", "name": "get_weather", "input": {"city": "Tokyo"}}]},
    {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_2", "content": [{"type": "text", "text": "station offline"}], "is_error": True},
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": [
            {"type": "text", "text": "sunny"}, {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBOR"}}]}]},
    {"role": "assistant", "content": [
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "Paris news"}},
        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1",
         "content": [{"type": "web_search_result", "title": "News", "url": "https://x", "encrypted_content": "e"}]},
        {"type": "text", "text": "Paris is sunny; Tokyo unknown. News: News."}]},
    {"role": "user", "content": [{"type": "text", "text": "Thanks. "}, {"type": "text", "text": "And Lima?"}]},
    {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_3", "name": "get_weather", "input": {}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_3"}]},
    {"role": "assistant", "content": [{"type": "text", "text": "No data for Lima."}]}],
    "usage": {"input_tokens": 10, "output_tokens": 5}}


def test_trial_file_first_turn_has_its_answer(tmp_path: Path) -> None:
    """The trial's record: the web search step's text is the first turn's answer, not a thought."""
    case = _case(tmp_path, TRIAL)
    s0, s1, s2, s3 = case.trace.steps
    assert (s0.thought, s0.output) == ("I should call both.\nChecking.", None)
    assert _calls(s0) == [("toolu_1", "get_weather", {"city": "Paris"}, None), ("toolu_2", "get_weather", {"city": "Tokyo"}, "station offline")]
    assert (s1.thought, s1.output) == (None, "Paris is sunny; Tokyo unknown. News: News.")
    assert _calls(s1) == [("srvtoolu_1", "web_search", {"query": "Paris news"}, None)]
    assert s1.tool_calls[0].result == [{"type": "web_search_result", "title": "News", "url": "https://x", "encrypted_content": "e"}]
    assert (s2.thought, s2.output, _calls(s2)) == (None, None, [("toolu_3", "get_weather", {}, None)])
    assert (s3.thought, s3.output) == (None, "No data for Lima.")
    assert case.trace.output == "No data for Lima."
    assert case.turns == ["Thanks. \nAnd Lima?"] and [m.step for m in case.trace.user_messages] == [0, 2]


def test_server_reply_is_the_trace_output_when_last(tmp_path: Path) -> None:
    """A conversation that ends on a server tool's reply has that reply as its output; text between two server tools
    is a thought."""
    case = _case(tmp_path, {"messages": [
        {"role": "user", "content": "news?"},
        {"role": "assistant", "content": [
            _server("s1", "web_search", {"query": "news"}), _result("web_search_tool_result", "s1", [PARIS_PAGE]),
            _text("Need more."), _server("s2", "web_search", {"query": "more news"}),
            _result("web_search_tool_result", "s2", {"type": "web_search_tool_result_error", "error_code": "too_many_requests"}),
            _text("Here is what I found: "), _text("sunny.", CITED)]}]})
    (step,) = case.trace.steps
    assert (step.thought, step.output, case.trace.output) == ("Need more.", "Here is what I found: sunny.", "Here is what I found: sunny.")
    assert [c.error for c in step.tool_calls] == [None, "too_many_requests"]


# --------------------------------------------------------------------- the same run under the OTel instrumentations
def record_otel(kind: str, out: Path, name: str = "search") -> None:
    """Record conversation `name` under instrumentation `kind` (`openinference`, `traceloop`) into `out` (OTLP/JSON)."""
    import anthropic

    if str(FRAMEWORKS) not in sys.path:
        sys.path.insert(0, str(FRAMEWORKS))
    from common import otel_provider, write_otlp

    if kind == "openinference":
        from openinference.instrumentation.anthropic import AnthropicInstrumentor
    else:
        from opentelemetry.instrumentation.anthropic import AnthropicInstrumentor
    s = SCENARIOS[name]
    with scripted(s.replies) as fake:
        provider = otel_provider(fake, "anthropic-server-tools")
        AnthropicInstrumentor().instrument(tracer_provider=provider)
        converse(anthropic.Anthropic(base_url=fake.url, api_key="sk-ant-fake", max_retries=0), s, stream=False)
        write_otlp(provider, fake, out)
        provider.shutdown()


INSTRUMENTATIONS = {"openinference": "openinference.instrumentation.anthropic", "traceloop": "opentelemetry.instrumentation.anthropic"}
CUT_REPLY = "Based on the search, \nParis is sunny at 21 C.\n Expect clouds by evening."  # its pieces, one a line


@pytest.fixture(scope="module")
def otel_files(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """`(kind, scenario)` -> the OTLP/JSON file of that conversation recorded under that instrumentation (made once)."""
    made: dict[tuple[str, str], Path] = {}

    def get(kind: str, name: str) -> Path:
        pytest.importorskip("anthropic")
        pytest.importorskip(INSTRUMENTATIONS[kind])
        if (kind, name) not in made:
            path = tmp_path_factory.mktemp("otel") / f"{kind}-{name}.jsonl"
            done = _forkserver.run([sys.executable, __file__, "record-otel", kind, str(path), name], capture_output=True, text=True, timeout=300)
            assert done.returncode == 0, done.stderr[-3000:]
            made[(kind, name)] = path
        return made[(kind, name)]

    return get


def _otel_case(path: Path) -> Any:
    from tracejudge.core import registry
    from tracejudge.core.config import DatasetConfig
    from tracejudge.core.records import Case
    from tracejudge.stages.extract import extract_record

    fmt = registry.format_for("otel")
    ds = DatasetConfig(path=path, format="otel")
    (case,) = [extract_record(raw, fmt, fmt.prepare(ds)) for raw in fmt.read(ds)]
    assert isinstance(case, Case), case
    return case


def _reading(case: Any) -> list[tuple[Any, ...]]:
    """Per step: thought, output, and each call with its result."""
    return [(s.thought, s.output, [(*c, t.result) for c, t in zip(_calls(s), s.tool_calls)]) for s in case.trace.steps]


def _without_output_value(src: Path, out: Path) -> Path:
    """`src` with every span's `output.value` left out: the flattened messages alone (a span cut at the attribute limit)."""
    lines = []
    for line in src.read_text().splitlines():
        doc = json.loads(line)
        for rs in doc.get("resourceSpans", []):
            for ss in rs["scopeSpans"]:
                for sp in ss["spans"]:
                    sp["attributes"] = [a for a in sp["attributes"] if a["key"] != "output.value"]
        lines.append(json.dumps(doc))
    out.write_text("\n".join(lines) + "\n")
    return out


def test_otel_openinference_web_search_turn(otel_files: Any) -> None:
    """OpenInference: the search is the first step's call with the results of the same response's
    `web_search_tool_result`, the reply after it (cut around its citation) the step's output, the thinking and the
    words before the search its thought; the turn's final text is that reply."""
    case = _otel_case(otel_files("openinference", "search"))
    s0, s1, s2 = case.trace.steps
    assert _calls(s0) == [("srvtoolu_01", "web_search", {"query": "Paris weather today"}, None)]
    assert s0.tool_calls[0].result == [PARIS_PAGE]
    assert (s0.thought, s0.output) == ("Live weather: search the web.\nI'll search for Paris's weather.", SEARCH_REPLY)
    assert (s1.thought, s1.output, _calls(s1)) == ("Checking Tokyo.", None, [("toolu_02", "get_weather", {"city": "Tokyo"}, None)])
    assert s1.tool_calls[0].result == "rainy, 14 C"
    assert (s2.thought, s2.output, s2.tool_calls) == (None, "Tokyo is rainy at 14 C.", [])
    assert case.trace.output == "Tokyo is rainy at 14 C."
    assert case.input == "What's the weather in Paris right now?" and case.turns == ["And Tokyo?"]
    assert [t["final_text"] for t in case.metadata["otel"]["turns"]] == [SEARCH_REPLY, "Tokyo is rainy at 14 C."]


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_otel_openinference_reads_as_native(tmp_path: Path, otel_files: Any, recorded: dict[tuple[str, bool], dict[str, Any]], name: str) -> None:
    """Every conversation recorded by OpenInference reads as format `anthropic-messages` reads the same conversation:
    steps' thoughts and outputs, server calls (failed ones too, MCP connector's too) with their results, the output."""
    native = _case(tmp_path, recorded[(name, False)])
    case = _otel_case(otel_files("openinference", name))
    assert _reading(case) == _reading(native)
    assert case.trace.output == native.trace.output


def test_otel_openinference_flattened_messages_alone(tmp_path: Path, otel_files: Any) -> None:
    """Without `output.value` (the flattened messages alone) the server call still has its result (the result block's
    JSON text content) and the reply is still the output; the flattening keeps no citations, so its pieces are one a line."""
    case = _otel_case(_without_output_value(otel_files("openinference", "search"), tmp_path / "flat.jsonl"))
    s0 = case.trace.steps[0]
    assert _calls(s0) == [("srvtoolu_01", "web_search", {"query": "Paris weather today"}, None)]
    assert s0.tool_calls[0].result == [PARIS_PAGE]
    assert (s0.thought, s0.output) == ("Live weather: search the web.\nI'll search for Paris's weather.", CUT_REPLY)
    errors = _otel_case(_without_output_value(otel_files("openinference", "server-tools"), tmp_path / "flat2.jsonl"))
    assert [c.error for c in errors.trace.tool_calls()] == ["max_uses_exceeded", None, None, "File not found: /tmp/missing.py", "unavailable", None]


def test_otel_openllmetry_web_search_from_the_replay(otel_files: Any) -> None:
    """OpenLLMetry writes no part for the server blocks of a response (`gen_ai.output.messages`) and no citations; the
    next request's input replays that response with the blocks as sent: the search and its results are read from
    there, the reply after it is the output, its cut pieces one a line."""
    case = _otel_case(otel_files("traceloop", "search"))
    s0, s1, s2 = case.trace.steps
    assert _calls(s0) == [("srvtoolu_01", "web_search", {"query": "Paris weather today"}, None)]
    assert s0.tool_calls[0].result == [PARIS_PAGE]
    assert (s0.thought, s0.output) == ("Live weather: search the web.\nI'll search for Paris's weather.", CUT_REPLY)
    assert (s1.thought, _calls(s1), s1.tool_calls[0].result) == ("Checking Tokyo.", [("toolu_02", "get_weather", {"city": "Tokyo"}, None)], "rainy, 14 C")
    assert (s2.output, case.trace.output) == ("Tokyo is rainy at 14 C.", "Tokyo is rainy at 14 C.")


def test_otel_openllmetry_mixed_turns(otel_files: Any) -> None:
    """A server call beside a client call, replayed by the next request: both calls with their results, the words a
    thought; the last response (a web fetch no later request replays) keeps only its text: the limit of the recording."""
    case = _otel_case(otel_files("traceloop", "mixed"))
    s0, s1, s2 = case.trace.steps
    assert (s0.thought, s0.output) == ("That is 69.8 F; I'll log it.", None)
    assert _calls(s0) == [("srvtoolu_21", "code_execution", {"code": "print(21 * 9 / 5 + 32)"}, None), ("toolu_22", "log_reading", {"value": 69.8}, None)]
    assert (s0.tool_calls[0].result["stdout"], s0.tool_calls[1].result) == ("69.8\n", "logged")
    assert (s1.thought, s1.output) == (None, "Logged: 21 C is 69.8 F.")
    assert (s2.tool_calls, s2.output) == ([], "Per the page, \nF = C x 9/5 + 32\n.")


def test_otel_openllmetry_last_response_keeps_its_text_only(otel_files: Any) -> None:
    """A response no later request replays: OpenLLMetry recorded nothing of its server calls (nor anything that says
    one ran: no usage of them, a plain stop reason), so the step has no call and all its text is its output."""
    case = _otel_case(otel_files("traceloop", "server-tools"))
    (step,) = case.trace.steps
    assert (step.tool_calls, step.output) == ([], "Let me look.\nRevenue rose 5% in Q1. Your script divides by zero.")


if __name__ == "__main__":
    if sys.argv[1:2] == ["record-otel"]:
        record_otel(sys.argv[2], Path(sys.argv[3]), *sys.argv[4:5])
    else:
        sys.exit("usage: python tests/test_anthropic_server_tools.py record-otel openinference|traceloop OUT.jsonl [SCENARIO]")
