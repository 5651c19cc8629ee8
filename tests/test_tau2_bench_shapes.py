"""A τ²-bench results file holding a part of the wrong JSON type: the simulation is one error naming the field, the others score.

Each file is the first simulations of a real results file (τ²-bench's GPT-4.1 airline run) with one part replaced.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest
from hand_edits import filed
from helpers import DATA

SOURCE = DATA / "tau2_bench" / "model_training_results" / "gpt-4.1_airline_default_gpt-4.1_1trials.json"
pytestmark = pytest.mark.skipif(not SOURCE.exists(), reason="the tau2-bench developer files are not beside the repository")


@pytest.fixture(scope="module")
def results() -> dict[str, Any]:
    data = json.loads(SOURCE.read_text(encoding="utf-8"))
    return {**data, "simulations": data["simulations"][:3]}


def _sim(d: dict[str, Any]) -> dict[str, Any]:
    return d["simulations"][1]  # task '6'


def _task(d: dict[str, Any]) -> dict[str, Any]:
    return next(t for t in d["tasks"] if str(t["id"]) == str(_sim(d)["task_id"]))


def _calling(d: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    return next((k, m) for k, m in enumerate(_sim(d)["messages"]) if m.get("tool_calls"))


def _set(get: Callable[[dict[str, Any]], dict[str, Any]], key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda d: get(d).__setitem__(key, value)


CALLS = lambda d: _calling(d)[1]  # noqa: E731
ACTION = lambda d: _task(d)["evaluation_criteria"]["actions"][0]  # noqa: E731
REWARD = lambda d: _sim(d)["reward_info"]  # noqa: E731
CASES = [  # (the edit, the field named (`{k}`: the message holding calls), what it says)
    (lambda d: _sim(d)["messages"].__setitem__(2, 5), "simulations[1].messages[2]", "expected a message object, got a number"),
    (_set(CALLS, "tool_calls", "garbage"), "simulations[1].messages[{k}].tool_calls", "expected a list of tool calls, got a string"),
    (_set(CALLS, "tool_calls", [5]), "simulations[1].messages[{k}].tool_calls[0]", "expected a tool call object, got a number"),
    (lambda d: CALLS(d)["tool_calls"][0].__setitem__("name", 5), "simulations[1].messages[{k}].tool_calls[0].name",
     "expected the tool's name, got a number"),
    (lambda d: _sim(d)["messages"][0].__setitem__("usage", "lots"), "simulations[1].messages[0].usage",
     "expected a usage object, got a string"),
    (lambda d: _sim(d)["messages"][0].__setitem__("usage", {"prompt_tokens": "12"}), "simulations[1].messages[0].usage.prompt_tokens",
     "expected a token count, got a string"),
    # Upstream's data model reads neither: a message of no role was skipped without a word, an object content accepted.
    (lambda d: _sim(d)["messages"][4].__setitem__("role", None), "simulations[1].messages[4].role",
     "expected 'system' or 'assistant' or 'user' or 'tool'; got null"),
    (lambda d: _sim(d)["messages"][4].pop("role"), "simulations[1].messages[4].role",
     "expected 'system' or 'assistant' or 'user' or 'tool'; the field is missing"),
    (lambda d: _sim(d)["messages"][4].__setitem__("role", "bot"), "simulations[1].messages[4].role",
     "expected 'system' or 'assistant' or 'user' or 'tool'; got a string 'bot'"),
    (lambda d: _sim(d)["messages"][4].__setitem__("content", {"text": "hi"}), "simulations[1].messages[4].content",
     "expected text or null, got an object"),
    (lambda d: _sim(d)["messages"][1].__setitem__("content", ["hi"]), "simulations[1].messages[1].content",
     "expected text or null, got an array"),
    (lambda d: _sim(d)["messages"][4].update(role="tool", tool_messages=[{"role": None}]),
     "simulations[1].messages[4].tool_messages[0].role", "expected 'tool'; got null"),
    # Upstream's `ToolMessage.id: str` and `ToolCall.id: str`, `ToolCall.arguments: dict` refuse these; read as they were,
    # a number id paired with no call and text arguments were compared as text.
    (lambda d: _sim(d)["messages"][_calling(d)[0] + 1].__setitem__("id", 7), "simulations[1].messages[{r}].id",
     "expected the id of the call it answers (text), got a number"),
    (lambda d: CALLS(d)["tool_calls"][0].__setitem__("id", None), "simulations[1].messages[{k}].tool_calls[0].id",
     "expected the call's id (text), got null"),
    (lambda d: CALLS(d)["tool_calls"][0].__setitem__("arguments", '{"a": 1}'), "simulations[1].messages[{k}].tool_calls[0].arguments",
     "expected an object of arguments; got a string"),
    (lambda d: CALLS(d)["tool_calls"][0].pop("arguments"), "simulations[1].messages[{k}].tool_calls[0].arguments",
     "expected an object of arguments; the field is missing"),
    (_set(_sim, "reward_info", [1]), "simulations[1].reward_info", "expected an object, got an array"),
    (_set(REWARD, "action_checks", "x"), "simulations[1].reward_info.action_checks", "expected a list, got a string"),
    (_set(REWARD, "action_checks", [3]), "simulations[1].reward_info.action_checks[0]", "expected an object, got a number"),
    (_set(_sim, "duration", "slow"), "simulations[1].duration", "expected a number, got a string"),
    # (its case id was Python's text of it, `{'a': 1}-0`; the error goes under the simulation's place, `F:line`)
    (_set(_sim, "task_id", {"a": 1}), "simulations[1].task_id", "expected a task id (text or a whole number), got an object"),
    (_set(_sim, "task_id", None), "simulations[1].task_id", "expected a task id (text or a whole number), got null"),
    (_set(_task, "evaluation_criteria", "x"), "tasks[id='6'].evaluation_criteria", "expected an object, got a string"),
    (lambda d: _task(d)["evaluation_criteria"].__setitem__("actions", "garbage"), "tasks[id='6'].evaluation_criteria.actions",
     "expected a list of actions, got a string"),
    (lambda d: _task(d)["evaluation_criteria"].__setitem__("actions", [7]), "tasks[id='6'].evaluation_criteria.actions[0]",
     "expected an action object, got a number"),
    (_set(ACTION, "arguments", [1]), "tasks[id='6'].evaluation_criteria.actions[0].arguments",
     "expected an object of arguments, got an array"),
    # Read as it was, "abc" became the expected keys `a`, `b` and `c`: a score against expectations nobody wrote.
    (_set(ACTION, "compare_args", "abc"), "tasks[id='6'].evaluation_criteria.actions[0].compare_args",
     "expected a list of argument names, got a string"),
]


@pytest.mark.parametrize("edit, field, why", CASES, ids=[c[1] for c in CASES])
def test_a_part_of_the_wrong_type_is_its_simulations_error_naming_the_field(tmp_path, results, edit, field, why):
    data = copy.deepcopy(results)
    edit(data)
    got = filed(tmp_path / "r.json", "tau2-bench", json.dumps(data, indent=2))
    field = field.format(k=_calling(results)[0], r=_calling(results)[0] + 1)
    place = "6-0" if not field.endswith("task_id") else next(cid for cid, _ in got if cid.startswith("F:"))
    assert [cid for cid, _ in got] == ["13-0", place, "16-0"]
    assert [(cid, error) for cid, error in got if error is not None] == [(place, f"{field}: {why}")]


def test_tool_results_grouped_in_one_multi_tool_message_pair_as_when_apart(tmp_path, results):
    # Upstream's data model holds a message's results in one `MultiToolMessage` (`role: tool`, `tool_messages`) too.
    from tracejudge.core.registry import format_for
    from tracejudge.stages.extract import extract_record

    def traces(data: dict[str, Any]) -> list[Any]:
        (tmp_path / "r.json").write_text(json.dumps(data), encoding="utf-8")
        fmt = format_for("tau2-bench")
        ds = type("D", (), {"path": tmp_path / "r.json", "tasks": None, "limit": None, "options": {}})()
        return [extract_record(raw, fmt, None).trace for raw in fmt.read(ds)]

    grouped = copy.deepcopy(results)
    for sim in grouped["simulations"]:
        messages: list[dict[str, Any]] = []
        for msg in sim["messages"]:
            if msg["role"] == "tool" and messages and messages[-1]["role"] == "tool":
                last = messages[-1]
                messages[-1] = {"role": "tool", "tool_messages": last.get("tool_messages", [last]) + [msg]}
            else:
                messages.append(msg)
        sim["messages"] = messages
    assert sum(len(s["messages"]) for s in grouped["simulations"]) < sum(len(s["messages"]) for s in results["simulations"])
    assert traces(grouped) == traces(results)


@pytest.mark.parametrize("layout", ["file", "dir"])
def test_a_bad_message_is_said_at_the_line_the_message_starts_on(tmp_path, results, layout):
    # The simulation's own first line was said: hundreds of lines above the message, in a file τ²-bench pretty-prints.
    from tracejudge.core.registry import format_for
    from tracejudge.stages.extract import extract_record

    data = copy.deepcopy(results)
    k = _calling(data)[0]
    sim = _sim(data)
    other = copy.deepcopy(sim) | {"trial": 1}
    other["messages"][2] = {"mark": "THERE", **other["messages"][2], "role": "bot"}
    sim["messages"][k] = {"mark": "HERE", **sim["messages"][k]}  # (extra keys are read past, as upstream's model does)
    sim["messages"][k]["tool_calls"][0]["name"] = None  # (the walk's own error, not the shapes')
    data["simulations"].append(other)
    if layout == "file":
        path = tmp_path / "r.json"
        path.write_text("\ufeff" + json.dumps(data, indent=2), encoding="utf-8")  # (a byte-order mark moves no line)
        sims_text = [path.read_text(encoding="utf-8-sig")] * 4
    else:
        (tmp_path / "simulations").mkdir()
        for i, s in enumerate(data["simulations"]):
            (tmp_path / "simulations" / f"{i}.json").write_text(json.dumps(s, indent=2), encoding="utf-8")
        path = tmp_path / "results.json"
        path.write_text(json.dumps({k: v for k, v in data.items() if k != "simulations"}, indent=2), encoding="utf-8")
        sims_text = [(tmp_path / "simulations" / f"{i}.json").read_text(encoding="utf-8") for i in range(4)]
    fmt = format_for("tau2-bench")
    ds = type("D", (), {"path": path, "tasks": None, "limit": None, "options": {}})()
    got = [extract_record(raw, fmt, None) for raw in fmt.read(ds)]
    errors = [(cid, e.field, e.line) for cid, e in (g for g in got if isinstance(g, tuple))]

    def line_of(text: str, mark: str, nth: int) -> int:  # the line of the `{` opening the marked message
        lines = text.splitlines()
        return [i for i, line in enumerate(lines, 1) if f'"mark": "{mark}"' in line][nth] - 1

    assert errors == [("6-0", f"simulations[1].messages[{k}].tool_calls[0].name", line_of(sims_text[1], "HERE", 0)),
                      ("6-1", "simulations[3].messages[2].role", line_of(sims_text[3], "THERE", 0))]


def test_tool_ids_and_arguments_are_refused_exactly_where_upstreams_models_refuse_them():
    # The field types of upstream's `ToolCall` and `ToolMessage` (sierra-research/tau2-bench
    # `src/tau2/data_model/message.py`), validated by pydantic as upstream validates a results file.
    from typing import Literal

    from pydantic import BaseModel, ValidationError
    from tracejudge.stages.extract.tau2_shapes import shape_problem

    class ToolCall(BaseModel):
        id: str = ""
        name: str
        arguments: dict

    class ToolMessage(BaseModel):
        id: str
        role: Literal["tool"]
        content: str | None = None

    def upstream(model: type[BaseModel], value: dict[str, Any]) -> bool:
        try:
            model.model_validate(value)
            return True
        except ValidationError:
            return False

    def ours(call: dict[str, Any], result: dict[str, Any]) -> bool:
        sim = {"messages": [{"role": "assistant", "tool_calls": [call]}, result]}
        return shape_problem(sim, {"id": "1"}, "simulations[0]") is None

    missing = object()
    call, result = {"id": "c1", "name": "f", "arguments": {}}, {"role": "tool", "id": "c1", "content": "ok"}
    for value in (missing, None, 5, 1.5, True, "", "c1", '{"a": 1}', [], [1], {}, {"a": 1}):
        for key in ("id", "arguments"):
            edited = {k: v for k, v in call.items() if k != key} | ({} if value is missing else {key: value})
            assert ours(edited, result) is upstream(ToolCall, edited), (key, value)
        edited = {k: v for k, v in result.items() if k != "id"} | ({} if value is missing else {"id": value})
        # (A result without an id is read as none, pairing by order: a deliberate difference, `test_tau2_tool_ids`.)
        assert ours(call, edited) is (value is missing or upstream(ToolMessage, edited)), ("result id", value)
