"""The OpenAI Responses API's hosted tools (web search, file search, code interpreter, remote MCP), read as calls.

Recorded by the real Agents SDK (Responses API model) with OpenInference's `OpenAIAgentsInstrumentor` and the SDK's
own export at once, against the project's loopback server, whose replies hold the hosted tools' items as the API
returns them (`tests/frameworks/record_agents_hosted.py`; `<s>.truth.json` holds the run's final output, the function
tools that ran and the replies). A hosted call has no function span and no later request answers it: OpenInference
flattened a `web_search_call` into a call named `web_search_call` with no result, and the cancelled-run reading took
that call for one the run never ran (no output, `run_error` "a cancelled run"); a `code_interpreter_call` was left
out. They are now calls of their step named by their tool, with the results their item holds, and the text after
them the step's (and run's) output. Format `openai-messages` reads the same items alike.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import extract_path
from tracejudge.core.records import Case

DATA = Path(__file__).parent / "data" / "agents-hosted-tools"

# scenario -> each step's calls as (id, name, arguments, result, error), in order
EXPECTED: dict[str, list[list[tuple[Any, ...]]]] = {
    "web_search": [[("ws_1", "web_search", {"type": "search", "query": "weather Paris today"}, None, None)]],
    "web_search_failed": [[("ws_1", "web_search", {"type": "search", "query": "weather Paris today"}, None, "status: failed")]],
    "file_search": [[("fs_1", "file_search", {"queries": ["refund policy"]},
                      [{"file_id": "file_1", "filename": "policy.md", "score": 0.92, "text": "Refunds are paid within 5 days.", "attributes": {}}], None)]],
    "code_interpreter": [[("ci_1", "code_interpreter", {"code": "print(6*7)", "container_id": "cntr_1"}, [{"type": "logs", "logs": "42"}], None)]],
    "mcp": [[("mcp_1", "search_docs", {"query": "refunds"}, "Refunds are paid within 5 days.", None)]],
    "mixed": [[("ws_1", "web_search", {"type": "search", "query": "Tokyo weather"}, None, None),
               ("call_w1", "get_weather", {"city": "Paris"}, "sunny, 21 C", None)], []],
    "then_tool": [[("ws_1", "web_search", {"type": "search", "query": "Paris weather"}, None, None),
                   ("call_w2", "get_weather", {"city": "Tokyo"}, "rainy, 14 C", None)],
                  [("ws_3", "web_search", {"type": "search", "query": "Tokyo forecast"}, None, None)]],
}


def truth(scenario: str) -> dict[str, Any]:
    return json.loads((DATA / f"{scenario}.truth.json").read_text())


def calls(case: Case) -> list[list[tuple[Any, ...]]]:
    return [[(c.id, c.name, c.arguments, c.result, c.error) for c in s.tool_calls] for s in case.trace.steps]


@pytest.mark.parametrize("scenario", sorted(EXPECTED))
def test_openinference_reads_hosted_calls_as_calls_of_their_step(scenario: str) -> None:
    (case,) = extract_path(DATA / f"oi-{scenario}.jsonl", "otel")
    assert isinstance(case, Case), case
    assert calls(case) == EXPECTED[scenario]
    assert case.trace.output == truth(scenario)["final_output"]
    assert "run_error" not in case.metadata  # the run finished: no call was left unrun


@pytest.mark.parametrize("scenario", ["web_search", "file_search", "code_interpreter", "mcp"])
def test_the_reply_after_hosted_calls_is_the_steps_output_not_a_thought(scenario: str) -> None:
    (case,) = extract_path(DATA / f"oi-{scenario}.jsonl", "otel")
    (step,) = case.trace.steps
    assert (step.thought, step.output) == (None, truth(scenario)["final_output"])


def test_a_preamble_beside_a_function_call_stays_a_thought() -> None:
    (case,) = extract_path(DATA / "oi-then_tool.jsonl", "otel")
    first, last = case.trace.steps
    assert (first.thought, first.output) == ("Searching done; checking Tokyo.", None)  # it waited for get_weather
    assert (last.thought, last.output) == (None, "Paris is sunny; Tokyo is rainy.")


@pytest.mark.parametrize("scenario", sorted(EXPECTED))
def test_the_export_says_nothing_of_a_cancel(scenario: str) -> None:
    # The SDK's export keeps no text of a Responses API request (documented and warned): no hosted call to read, and
    # no call taken for one that never ran.
    (case,) = extract_path(DATA / f"export-{scenario}.jsonl", "openai-agents")
    assert isinstance(case, Case), case
    assert "run_error" not in case.metadata
    ran = [(c.name, c.result) for s in case.trace.steps for c in s.tool_calls]
    assert ran == [(t["name"], t["result"]) for t in truth(scenario)["tools_ran"]]


def test_openai_messages_reads_the_same_items_alike(tmp_path: Path) -> None:
    # The `then_tool` conversation as Responses API items (the replies, with the inputs between them).
    replies = truth("then_tool")["replies"]
    items = [{"role": "user", "content": "Paris and Tokyo weather?"}, *replies[0],
             {"type": "function_call_output", "call_id": "call_w2", "output": "rainy, 14 C"}, *replies[1]]
    path = tmp_path / "items.jsonl"
    path.write_text(json.dumps({"id": "t", "items": items}) + "\n")
    (case,) = extract_path(path, "openai-messages")
    (oi,) = extract_path(DATA / "oi-then_tool.jsonl", "otel")
    assert calls(case) == calls(oi) == EXPECTED["then_tool"]
    assert [(s.thought, s.output) for s in case.trace.steps] == [(s.thought, s.output) for s in oi.trace.steps]
    assert case.trace.output == oi.trace.output


def test_openai_messages_hosted_items_of_every_kind(tmp_path: Path) -> None:
    image = {"type": "image_generation_call", "id": "ig_1", "status": "completed", "result": "iVBORw0KGgo" * 100}
    search = {"type": "web_search_call", "id": "ws_9", "status": "completed",
              "action": {"type": "search", "query": "q", "sources": [{"type": "url", "url": "https://a.example"}]}}
    failed = {"type": "mcp_call", "id": "m_1", "server_label": "s", "name": "lookup", "arguments": "{\"q\": 1}", "output": None,
              "error": "server unreachable", "status": "failed"}
    said = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done."}]}
    path = tmp_path / "items.jsonl"
    path.write_text(json.dumps({"id": "k", "items": [{"role": "user", "content": "Go."}, search, image, failed, said]}) + "\n")
    (case,) = extract_path(path, "openai-messages")
    assert calls(case) == [[("ws_9", "web_search", {"type": "search", "query": "q"}, [{"type": "url", "url": "https://a.example"}], None),
                            ("ig_1", "image_generation", {}, "<image: 1100 characters of base64>", None),
                            ("m_1", "lookup", {"q": 1}, None, "server unreachable")]]
    assert (case.trace.steps[0].output, case.trace.output, case.trace.usage.requests) == ("Done.", "Done.", 1)


def test_mlflow_replays_hosted_items_of_a_request_input_as_the_response_gave_them() -> None:
    from tracejudge.stages.extract.otel.conventions.mlflow import responses_request

    item = {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search", "query": "q"}}
    got = responses_request({"input": [{"role": "user", "content": "Hi"}, item]})
    assert got is not None and got[-1]["role"] == "assistant"
    assert [(p["type"], p["id"], p.get("name")) for p in got[-1]["parts"]] == [("tool_call", "ws_1", "web_search"), ("tool_call_response", "ws_1", None)]


LOOP = Path(__file__).parent / "data" / "responses-hosted-loop"  # tests/frameworks/record_responses_hosted_loop.py
LOOP_CALLS = [[("ws_1", "web_search", {"type": "search", "query": "Tokyo weather"}, [{"type": "url", "url": "https://w.example/tokyo"}], None),
               ("call_p", "get_weather", {"city": "Paris"}, "sunny, 21 C", None)],
              [("ci_1", "code_interpreter", {"code": "print(21-14)", "container_id": "cntr_1"}, [{"type": "logs", "logs": "7"}], None),
               ("ws_2", "web_search", {"type": "search", "query": "Paris forecast"}, None, "status: failed")]]


@pytest.mark.parametrize(("name", "fmt"), [("oi-loop.jsonl", "otel"), ("ml-agent.otlp.jsonl", "otel"), ("ml-bare.otlp.jsonl", "otel"),
                                           ("ml-agent.mlflow.jsonl", "mlflow")])
def test_a_loop_sending_hosted_calls_back_in_its_history_is_one_conversation(name: str, fmt: str) -> None:
    # Each request replays the earlier responses' items, hosted calls included. OpenInference flattens a replayed
    # `web_search_call` into a call of that name without arguments: it no longer matched the response it repeats, and
    # the loop split in two (with a false warning that attributes were dropped).
    got = extract_path(LOOP / name, fmt)
    assert len(got) == 1 and isinstance(got[0], Case), got
    (case,) = got
    answer = json.loads((LOOP / f"{name.split('.')[0]}.truth.json").read_text())["output"]
    assert calls(case) == LOOP_CALLS
    assert [(s.thought, s.output) for s in case.trace.steps] == [("Looked up Tokyo; now Paris.", None), (None, answer)]
    assert case.trace.output == answer


@pytest.mark.parametrize("cut", ["removed", "cut at 1024 characters"])
def test_hosted_calls_read_from_the_flattened_messages_when_output_value_is_lost(tmp_path: Path, cut: str) -> None:
    # `output.value` past an attribute length limit (`OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT`), or not recorded: the flattened
    # call named by its item type is still a hosted call, and the run still finished.
    lines = []
    for line in (DATA / "oi-then_tool.jsonl").read_text().splitlines():
        doc = json.loads(line)
        for rs in doc["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for span in ss["spans"]:
                    kept = []
                    for attr in span.get("attributes", []):
                        if attr["key"] == "output.value" and cut == "removed":
                            continue
                        text = attr["value"].get("stringValue")
                        if cut != "removed" and isinstance(text, str) and len(text) > 1024:
                            attr = {"key": attr["key"], "value": {"stringValue": text[:1024]}}
                        kept.append(attr)
                    span["attributes"] = kept
        lines.append(json.dumps(doc))
    path = tmp_path / "cut.jsonl"
    path.write_text("\n".join(lines) + "\n")
    (case,) = extract_path(path, "otel")
    assert [[(c.id, c.name, c.error) for c in s.tool_calls] for s in case.trace.steps] == [
        [("ws_1", "web_search", None), ("call_w2", "get_weather", None)], [("ws_3", "web_search", None)]]
    assert case.trace.steps[1].tool_calls[0].arguments == {"type": "search", "query": "Tokyo forecast"}
    assert case.trace.output == truth("then_tool")["final_output"] and "run_error" not in case.metadata
