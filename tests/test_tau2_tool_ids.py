"""τ²-bench tool results paired with their calls when the ids do not tell them apart.

τ²-bench's `ToolCall.id` is the provider's id, `""` when it gave none, and each
`ToolMessage.id` copies its call's; the orchestrator writes a message's results
right after it, in the order of its calls (`Environment.set_state` replays
them by position and only checks the ids are equal). Models served by other
stacks repeat ids (one id for every call of a response, or `0`, `1`, … again in
each response) or leave them empty, so the ids alone do not say which result is
whose: each call must still get the result written for it, not the last result
that carries its id. Built from every simulation of a real results file (τ²-bench's
GPT-4.1 retail run: multi-call messages and failed calls), its ids rewritten.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from helpers import DATA
from tracejudge.stages.extract.tau2_bench import adapt

SOURCE = DATA / "tau2_bench" / "model_training_results" / "gpt-4.1_retail_defautl_gpt-4.1_1trials.json"
pytestmark = pytest.mark.skipif(not SOURCE.exists(), reason="the tau2-bench developer files are not beside the repository")


@pytest.fixture(scope="module")
def results() -> dict[str, Any]:
    return json.loads(SOURCE.read_text(encoding="utf-8"))


def _calls(results: dict[str, Any], edit=None) -> list[list[tuple[Any, ...]]]:
    """Each simulation's calls as `(name, arguments, result, error)`, after `edit(messages)` rewrote its ids."""
    tasks = {t["id"]: t for t in results["tasks"]}
    out = []
    for i, sim in enumerate(results["simulations"]):
        sim = copy.deepcopy(sim)
        if edit is not None:
            edit(sim["messages"])
        case = adapt({"index": i, "simulation": sim, "task": tasks[sim["task_id"]], "domain": "retail"})
        out.append([(c.name, c.arguments, c.result, c.error) for c in case.trace.tool_calls()])
    return out


def _renamed(ids):
    """An edit giving the k-th call of each message (and its result, k messages after it) the id `ids(n, k)`:
    n counts the calling messages of the simulation."""
    def edit(messages: list[dict[str, Any]]) -> None:
        n = 0
        for at, msg in enumerate(messages):
            for k, tc in enumerate(msg.get("tool_calls") or []):
                result = messages[at + 1 + k]
                assert result["role"] == "tool" and result["id"] == tc["id"]  # as upstream writes them
                tc["id"] = result["id"] = ids(n, k)
            n += bool(msg.get("tool_calls"))
    return edit


def _dropped(messages: list[dict[str, Any]]) -> None:
    """An edit removing the `id` key of every call and result (a writer that keeps none)."""
    for msg in messages:
        if msg.get("role") == "tool":
            del msg["id"]
        for tc in msg.get("tool_calls") or []:
            del tc["id"]


EDITS = {
    "one id for every call": _renamed(lambda n, k: "call_0"),
    "ids restarting in each response": _renamed(lambda n, k: f"functions.call:{k}"),
    "one id per response": _renamed(lambda n, k: f"call_{n}"),
    "empty ids (upstream's default)": _renamed(lambda n, k: ""),
    "no id keys": _dropped,
}


@pytest.mark.parametrize("name", list(EDITS))
def test_each_call_keeps_its_own_result_whatever_its_id(results, name):
    plain = _calls(results)
    assert sum(map(len, plain)) == 299 and sum(c[3] is not None for s in plain for c in s) == 12  # the README's counts
    assert all(c[2] is not None for s in plain for c in s)  # every call of the file has its result
    assert _calls(results, EDITS[name]) == plain


def test_a_result_whose_id_names_no_call_is_left_unpaired():
    # A result for a call the file does not hold (a hand edit cut it) answers nothing, not the next call.
    sim = {"task_id": "t", "trial": 0, "messages": [
        {"role": "assistant", "content": None, "tool_calls": [{"id": "call_a", "name": "f", "arguments": {}}]},
        {"role": "tool", "id": "call_x", "content": "stale", "error": False},
        {"role": "tool", "id": "call_a", "content": "{\"ok\": 1}", "error": False},
    ]}
    case = adapt({"index": 0, "simulation": sim, "task": {"id": "t"}, "domain": None})
    assert [(c.id, c.result) for c in case.trace.tool_calls()] == [("call_a", {"ok": 1})]
