"""Every reader that has the agent's instructions puts them in `trace.system_prompts`: distinct (agent, text), in order.

Real recordings where there are some (τ-bench's and τ²-bench's shared runs, inspect logs, OTel recordings, Agents SDK
exports, smolagents memories); hand-written records for the message-list formats and the native one.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import extract_lines
from helpers import GONE
from tracejudge.core import registry
from tracejudge.core.config import DatasetConfig
from tracejudge.core.records import Case
from tracejudge.stages.extract import extract_record
from tracejudge.stages.extract.fast_decode import decode

DATA = Path(__file__).parent / "data"


def _read(path: Path, fmt_name: str, **extra: Any) -> list[Any]:
    fmt = registry.format_for(fmt_name)
    ds = DatasetConfig(path=path, format=fmt_name, **extra)
    ctx = fmt.prepare(ds)
    return [extract_record(raw, fmt, ctx) for raw in fmt.read(ds)]


def _prompts(case: Any) -> list[tuple[str | None, str]]:
    assert isinstance(case, Case), case
    return [(p.agent, p.text) for p in case.trace.system_prompts]


def test_native_reads_and_writes_system_prompts(tmp_path: Path) -> None:
    given = {"id": "a", "trace": {"steps": [{"output": "hi"}], "system_prompts": [{"text": "Be brief."}, {"text": "Route.", "agent": "Triage"}]}}
    line = json.dumps(given).encode()
    for case in (decode(line), Case.model_validate_json(line)):
        assert _prompts(case) == [(None, "Be brief."), ("Triage", "Route.")]
    [case] = extract_lines(tmp_path, "native", [given])
    assert case.model_dump(mode="json", exclude_defaults=True)["trace"]["system_prompts"] == given["trace"]["system_prompts"]
    # a file written before the field existed reads as it did, and is written back without it
    [old] = extract_lines(tmp_path, "native", [{"id": "b", "trace": {"steps": [{"output": "hi"}]}}])
    assert old.trace.system_prompts == [] and "system_prompts" not in old.model_dump(exclude_defaults=True)["trace"]


def test_native_keeps_each_agent_and_text_once_and_drops_blank_ones(tmp_path: Path) -> None:
    # The judge was told "(2 versions, in the order given)" of one text, and a blank one opened an empty section.
    prompts = [{"text": "Policy.", "agent": "Triage"}, {"text": "Policy.", "agent": "Triage"}, {"text": " \n"},
               {"text": "Policy."}, {"text": "Route.", "agent": "Triage"}]
    line = json.dumps({"id": "a", "trace": {"steps": [{"output": "hi"}], "system_prompts": prompts}}).encode()
    assert decode(line) is None  # (pydantic's path keeps each once: the fast decoder leaves such a line to it)
    assert _prompts(Case.model_validate_json(line)) == [("Triage", "Policy."), (None, "Policy."), ("Triage", "Route.")]
    # null: none recorded, as an absent field (it was an invalid_input)
    [case] = extract_lines(tmp_path, "native", [{"id": "b", "trace": {"steps": [], "system_prompts": None}}])
    assert case.trace.system_prompts == []


def test_native_refuses_an_unknown_key_of_a_system_prompt(tmp_path: Path) -> None:
    [(cid, err)] = extract_lines(tmp_path, "native", [{"id": "a", "trace": {"system_prompts": [{"text": "x", "agnet": "A"}]}}])
    assert err.kind == "invalid_input" and err.line == 1 and err.field == "trace.system_prompts[0].agnet"
    [(_, err)] = extract_lines(tmp_path, "native", [{"id": "a", "trace": {"system_prompts": ["Be brief."]}}])
    assert err.field == "trace.system_prompts[0]"


def test_openai_messages_keeps_system_and_developer_messages_once(tmp_path: Path) -> None:
    messages = [{"role": "system", "content": "Be brief."}, {"role": "developer", "content": [{"type": "input_text", "text": "Cite."}]},
                {"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"},
                {"role": "system", "content": "Be brief."}, {"role": "system", "content": "  "}, {"role": "user", "content": "bye"},
                {"role": "assistant", "content": "bye"}]
    [case, bare] = extract_lines(tmp_path, "openai-messages", [{"id": "a", "messages": messages}, {"id": "b", "messages": messages[2:4]}])
    assert _prompts(case) == [(None, "Be brief."), (None, "Cite.")]
    assert bare.trace.system_prompts == []


@pytest.mark.parametrize(("content", "said"), [
    (123, "got a number"), ({}, "got an object"), (True, "got a boolean"), ([1, 2], "[0]: expected a text part"),
    ([{"type": "text", "text": 5}], "[0].text: expected the part's text, got a number"), (GONE, "the field is missing"),
])
def test_openai_messages_refuses_a_system_message_without_text(tmp_path: Path, content: object, said: str) -> None:
    # Each was dropped without a word: a judge shown the instructions saw none.
    system = {"role": "system"} if content is GONE else {"role": "system", "content": content}
    record = {"id": "a", "messages": [system, {"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}
    [(cid, err)] = extract_lines(tmp_path, "openai-messages", [record])
    assert (cid, err.kind, err.field) == ("a", "invalid_input", "messages[0].content") and said in err.message, err


def test_anthropic_messages_refuses_a_system_block_whose_text_is_no_text(tmp_path: Path) -> None:
    record = {"id": "a", "system": [{"type": "text", "text": 9}], "messages": [{"role": "user", "content": "hi"},
                                                                             {"role": "assistant", "content": "hello"}]}
    [(_, err)] = extract_lines(tmp_path, "anthropic-messages", [record])
    assert err.field == "system[0].text" and "must be a string, got a number" in err.message, err


def test_anthropic_messages_reads_system_text_and_blocks(tmp_path: Path) -> None:
    talk = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": [{"type": "text", "text": "hello"}]}]
    blocks = [{"type": "text", "text": "You sell flights."}, {"type": "text", "text": "Never refund.", "cache_control": {"type": "ephemeral"}}]
    got = extract_lines(tmp_path, "anthropic-messages", [{"id": "a", "system": "Be brief.", "messages": talk},
                                                         {"id": "b", "system": blocks, "messages": talk},
                                                         {"id": "c", "system": 7, "messages": talk}, {"id": "d", "messages": talk}])
    assert _prompts(got[0]) == [(None, "Be brief.")]
    assert _prompts(got[1]) == [(None, "You sell flights.\nNever refund.")]
    cid, err = got[2]
    assert (cid, err.field, err.line) == ("c", "system", 3) and "system must be a string or a list of text blocks" in err.message
    assert got[3].trace.system_prompts == []


def test_json_path_maps_a_system_prompt_path(tmp_path: Path) -> None:
    options = {"id": "id", "system_prompt": "messages[role=system].content", "output": "answer"}
    chat = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]
    got = extract_lines(tmp_path, "json-path", [{"id": "a", "messages": chat, "answer": "ok"},
                                                {"id": "b", "messages": [{"role": "system", "content": {"x": 1}}], "answer": "ok"}], options)
    assert _prompts(got[0]) == [(None, "Be brief.")]
    cid, err = got[1]
    assert (cid, err.line, err.field) == ("b", 2, "messages[role=system].content[0]") and "a system prompt is text, got an object" in err.message


def test_inspect_reads_the_system_messages_of_a_real_log() -> None:
    by_id = {c.id: c for c in _read(DATA / "inspect" / "weather-chat.eval", "inspect")}
    assert _prompts(by_id["chat"]) == [(None, "You are a weather assistant. Use the tools; never guess a temperature.")]


def test_tau_bench_policy_is_the_first_system_message(data_dir: Path) -> None:
    runs = data_dir / "tau_bench" / "historical_trajectories" / "gpt-4o-airline.json"
    raw = json.loads(runs.read_text())[0]
    [case] = _read(runs, "tau-bench", limit=1, tasks=data_dir / "tau_bench" / "tasks" / "tasks_airline_test.json")
    assert _prompts(case) == [(None, raw["traj"][0]["content"])]
    assert case.trace.system_prompts[0].text.startswith("# Airline Agent Policy")


def test_tau2_bench_policy_is_the_files_domain_policy(data_dir: Path) -> None:
    path = data_dir / "tau2_bench" / "model_training_results" / "gpt-4.1_airline_default_gpt-4.1_1trials.json"
    policy = json.loads(path.read_text())["info"]["environment_info"]["policy"]
    cases = _read(path, "tau2-bench", limit=3)
    assert [_prompts(c) for c in cases] == [[(None, policy)]] * 3


def test_otel_names_each_agents_instructions() -> None:
    # OpenInference's Agents SDK instrumentation: a triage agent hands off to a weather agent, each with its own instructions.
    [case] = _read(DATA / "agents-handoff-filters" / "oi-filtered.jsonl", "otel")
    assert _prompts(case) == [("Triage", "Route weather questions."), ("Weather", "Answer weather questions.")]


def test_otel_reads_gen_ai_system_instructions_from_the_anthropic_sdk_recording() -> None:
    cases = _read(DATA / "anthropic-instrumentations" / "anthropic-sdk" / "tools.jsonl", "otel")
    assert cases and all(len(c.trace.system_prompts) == 1 for c in cases)
    assert all(c.trace.system_prompts[0].text.strip() and c.trace.system_prompts[0].agent is None for c in cases)


def test_openai_agents_export_keeps_the_instructions_chat_requests_recorded() -> None:
    [case] = _read(DATA / "agents-handoff-faults" / "export-two_handoffs.jsonl", "openai-agents")
    assert _prompts(case) == [("Triage", "Route."), ("Weather", "Weather.")]
    # a Responses API export keeps no request input, so nothing is made up
    [bare] = _read(DATA / "openai-agents-stop" / "export-responses_normal.jsonl", "openai-agents")
    assert bare.trace.system_prompts == []


def test_mlflow_and_langfuse_traces_fill_it_as_otel_does() -> None:
    [case] = _read(DATA / "agents-handoff-faults" / "mlflow-two_handoffs.mlflow.jsonl", "mlflow")
    assert _prompts(case) == [("Triage", "Route."), ("Weather", "Weather.")]
    [case] = _read(DATA / "langfuse-api-observe" / "lf-manual.v2.json", "langfuse")
    assert _prompts(case) == [("support", "You help with orders.")]


def test_smolagents_memory_reads_the_requests_system_message() -> None:
    [case] = _read(DATA / "smolagents-answers" / "dict.memory.jsonl", "smolagents")
    [(agent, text)] = _prompts(case)
    assert agent is None and text.startswith("You are an expert assistant who can solve any task using code blobs.")


def test_extract_writes_the_field(tmp_path: Path) -> None:
    data = tmp_path / "chats.jsonl"
    data.write_text(json.dumps({"id": "a", "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"},
                                                        {"role": "assistant", "content": "hello"}]}) + "\n")
    config = tmp_path / "config.yaml"
    config.write_text(f"dataset: {{path: {data.name}, format: openai-messages}}\nmetrics: [{{type: Contains, value: hello}}]\n")
    out = tmp_path / "cases.jsonl"
    done = subprocess.run([sys.executable, "-m", "tracejudge", "extract", str(config), "-o", str(out)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert json.loads(out.read_text())["trace"]["system_prompts"] == [{"text": "Be brief."}]


def test_the_viewer_shows_each_prompt_folded_and_masked() -> None:
    from tracejudge.viewer.masking import shown_case
    from tracejudge.viewer.transcript import transcript_html

    key = "sk-proj-" + "a1B2c3D4" * 6
    case = Case.model_validate({"id": "a", "input": "hi", "trace": {"steps": [{"output": "yo"}], "system_prompts": [
        {"text": f"Call the API with {key}."}, {"text": "<b>Route</b>", "agent": "Triage"}]}})
    html = transcript_html(shown_case(case), "")
    assert key not in html and "Call the API with [REDACTED]." in html
    assert '<summary class="label">system prompt of agent Triage (12 characters)</summary>' in html and "&lt;b&gt;Route&lt;/b&gt;" in html
    assert html.index("system prompt") < html.index('class="msg user"')


def test_a_live_conversation_keeps_each_instruction_once_masked_in_traces_jsonl(tmp_path: Path) -> None:
    from live_support import live_config, read_jsonl, run_live

    key = "sk-proj-" + "a1B2c3D4" * 6
    (tmp_path / "told_agent.py").write_text(
        "def respond(request):\n"
        f"    told = [{{'text': 'Be brief.'}}, {{'text': 'Use {key}.', 'agent': 'Tools'}}][: 1 + request.turn]\n"
        "    return {'output': 'ok', 'trace': {'steps': [{'output': 'ok'}], 'output': 'ok', 'system_prompts': told}}\n")
    cases = [{"id": "a", "input": "hi", "turns": ["and again"], "expected_tool_calls": []}]
    config = live_config(tmp_path, cases, {"kind": "python", "callable": "told_agent:respond", "pythonpath": str(tmp_path)})
    assert run_live(config).summary["status"] == {"ok": 1}
    [line] = read_jsonl(tmp_path / "run" / "traces.jsonl")
    assert line["case"]["trace"]["system_prompts"] == [{"text": "Be brief."}, {"text": "Use [REDACTED].", "agent": "Tools"}]
