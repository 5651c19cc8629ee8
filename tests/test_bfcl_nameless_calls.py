"""A model reply holding a call with an empty, null or missing function name gets upstream BFCL's verdict.

Upstream reads the reply with the OpenAI SDK (a missing name is None there) and keeps `{name: arguments}` per call
(`_parse_query_response_FC` of model_handler/api_inference/openai_completion.py): `{"": {...}}` or `{None: {...}}`
is a call to its relevance check (`upstream_has_call`), so live_relevance passes and irrelevance fails, and its AST
checker, which looks each expected function up by name, finds no match for it. The example target refused such a
reply (a trace cannot hold a call without a name), so every such case ended as a target_error. The run asks a chat
server on 127.0.0.1 real BFCL questions; the AST ones get, beside each nameless reply, a control answering right.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from test_bfcl_example import run_example
from test_bfcl_relevance import chat_server, upstream_has_call

_GONE = object()


def _call(name: Any, arguments: dict[str, Any]) -> dict[str, Any]:
    function = {"arguments": json.dumps(arguments)} | ({} if name is _GONE else {"name": name})
    return {"id": "call_1", "type": "function", "function": function}


def _right(truth: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """An accepted answer's calls (name as sent, arguments): each parameter's first accepted value, "" (omit) skipped."""
    calls = []
    for call in truth:
        (name, params), = call.items()
        calls.append((name.replace(".", "_"), {k: v[0] for k, v in params.items() if v and v[0] != ""}))
    return calls


# question id: (how the reply names its calls, upstream's verdict). A name of None is the reply's `null`.
REPLIES: dict[str, tuple[str, bool]] = {
    "live_relevance_0-0-0": ("empty", True), "live_relevance_1-1-0": ("missing", True), "live_relevance_2-2-0": ("null", True),
    "irrelevance_0": ("empty", False), "irrelevance_1": ("missing", False),
    "simple_python_0": ("empty", False), "simple_python_1": ("right", True),
    "multiple_0": ("missing", False), "multiple_1": ("right", True),
    "parallel_0": ("one more, empty", False), "parallel_1": ("right", True),
}
_NAMES = {"empty": "", "missing": _GONE, "null": None}


def _message(how: str, first: str, truth: list[dict[str, Any]] | None) -> dict[str, Any]:
    right = _right(truth) if truth else [(first, {"q": "x"})]
    if how == "right":
        calls = [_call(n, a) for n, a in right]
    elif how == "one more, empty":
        calls = [_call(n, a) for n, a in right] + [_call("", right[0][1])]
    else:  # the right arguments under no name
        calls = [_call(_NAMES[how], a) for _, a in right]
    return {"role": "assistant", "content": None, "tool_calls": calls}


def test_a_nameless_call_gets_upstreams_verdict(tmp_path: Path, data_dir: Path) -> None:
    bfcl = data_dir / "bfcl"
    questions, answers = [], []
    for category in ("live_relevance", "irrelevance", "simple_python", "multiple", "parallel"):
        for line in (bfcl / f"BFCL_v4_{category}.json").read_text().splitlines():
            if json.loads(line)["id"] in REPLIES:
                questions.append(line)
        answer_file = bfcl / "possible_answer" / f"BFCL_v4_{category}.json"
        if answer_file.exists():
            answers += [a for a in answer_file.read_text().splitlines() if json.loads(a)["id"] in REPLIES]
    assert len(questions) == len(REPLIES) and len(answers) == 6
    data = tmp_path / "BFCL_v4_nameless.json"
    data.write_text("\n".join(questions) + "\n")
    (tmp_path / "possible_answer").mkdir()
    (tmp_path / "possible_answer" / data.name).write_text("\n".join(answers) + "\n")
    truth = {a["id"]: a["ground_truth"] for a in map(json.loads, answers)}
    message_of = {}
    for q in map(json.loads, questions):
        how, _ = REPLIES[q["id"]]
        message_of[q["question"][0][-1]["content"]] = (q["id"], _message(how, q["function"][0]["name"].replace(".", "_"),
                                                                         truth.get(q["id"])))
    assert len(message_of) == len(REPLIES)  # (each question told apart by what it asks)

    with chat_server(lambda asked: message_of[asked][1]) as url:
        listed, traces = run_example(tmp_path, url, f"dataset.path={data}")  # (every result ok: no target_error)

    results = {r["case_id"]: r for r in listed}
    ours = {qid: results[qid]["scores"]["bfcl_relevance" if qid.startswith("live_relevance") else "ast_match"]["passed"]
            for qid in REPLIES}
    assert ours == {qid: want for qid, (_, want) in REPLIES.items()}
    # upstream's relevance rule, transcribed: each nameless reply holds a call
    for qid, message in message_of.values():
        if qid.startswith(("live_relevance", "irrelevance")):
            assert upstream_has_call(message), qid
    names = [c["name"] for s in traces["multiple_0"]["steps"] for c in s["tool_calls"]]
    assert names == ["(no function name)"]
