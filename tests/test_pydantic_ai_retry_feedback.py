"""pydantic-ai's feedback on an answer it refused as TEXT is the framework speaking: no user turn, and the step's error.

Recorded by the real pydantic-ai (2.62; four also by 2.78, whose fences differ) against the project's scripted loopback server, by its own instrumentation
(data-format versions 2, 5 (the default) and 6) and with OpenInference's pydantic-ai span processor on top
(`tests/frameworks/record_pydantic_ai_retry.py` says what each scenario runs). Each `<recording>.truth.json` is what
the agent's `result.all_messages()` said: the user prompts, every response with the feedback pydantic-ai sent back
on it (a `retry-feedback` part), the tool retries, the outputs.

When pydantic-ai checks an answer given as text (`NativeOutput`, an `output_validator` raising `ModelRetry` on `str`
output, a reply with nothing to use) it sends the model its feedback as user-role text ("Your previous response failed
the application's validation (this is automated feedback, not a message from the user): …"). Before, that text was a
second user message ("User 2"), and the refused answer a plain step output with no error; under OpenInference the
case's input and the turn's user text were the feedback itself (the last user text of the run, its `input.value`) and
the real question was lost. Now the feedback is no user turn and no input, and the step that gave the refused answer
says it: `output rejected: <what pydantic-ai said>`, as a refused output-tool answer already did. A tool's retry
(`ModelRetry` in a tool: its call's error) reads as before.

When pydantic-ai (and, for `oi`, openinference-instrumentation-pydantic-ai) is installed, every recording is also
made again now into a temporary folder (one process each) and read the same way.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from framework_truth import only_case
from helpers import installed, recorded
from tracejudge.core.records import Case
from tracejudge.stages.judge.metrics import TaskCompletion
import _forkserver

DATA = Path(__file__).parent / "data" / "pydantic-ai-retry"
RECORD = Path(__file__).parent / "frameworks" / "record_pydantic_ai_retry.py"
SCENARIOS = ("native", "validator", "empty")
INSTRUMENTATIONS = ("v5", "v2", "v6", "oi")
NAMES = [f"{s}-{i}" for s in SCENARIOS for i in INSTRUMENTATIONS]
# Re-recorded live (every checked-in recording is checked whole above): pydantic-ai's default instrumentation and
# OpenInference's processor, each on the scenario that sends both kinds of feedback; a recording is a process of its own.
LIVE = ("native-v5", "validator-oi")
NEEDS = {"v5": ("pydantic_ai",), "v2": ("pydantic_ai",), "v6": ("pydantic_ai",), "oi": ("pydantic_ai", "openinference.instrumentation.pydantic_ai")}
FRAMING = "Your previous response failed the application's validation"
# what each scenario's refused step says (the truth's feedback, said as a refused output-tool answer is)
REFUSED = {
    "native": "output rejected: temp_c: Input should be a valid integer, unable to parse string as an integer",
    "validator": "output rejected: Give a temperature in C",
    "empty": "output rejected: Please return text.",
}


def truth(folder: Path, name: str) -> dict[str, Any]:
    return json.loads((folder / f"{name}.truth.json").read_text())


def said(fb: dict[str, Any]) -> str:
    """What a truth's feedback part says, as the step's error gives it: a message as it is, validation errors as `loc: msg`."""
    content = fb["content"]
    if isinstance(content, str):
        return "output rejected: " + content
    return "output rejected: " + "; ".join(".".join(map(str, e["loc"])) + ": " + e["msg"] if e["loc"] else e["msg"] for e in content)


def check(case: Case, want: dict[str, Any], scenario: str) -> None:
    """`case` reads as `want` says the application ran: the user's own words, one step per response, the refusals."""
    assert case.trace is not None
    # the real question is the input, every user turn is a prompt of the user's, and the feedback is none of them
    assert case.input == want["input"]
    assert [m.content for m in case.trace.user_messages] == want["user_turns"]
    assert case.turns == want["user_turns"][1:]
    assert [t["user_text"] for t in case.metadata["otel"]["turns"]] == want["user_turns"]
    assert not any(FRAMING in m.content for m in case.trace.user_messages)
    # one step per response: what it said, the tools it called, and the framework's refusal of its answer as its error
    steps = case.trace.steps
    assert len(steps) == len(want["responses"]) == case.trace.usage.requests
    refused = [r for r in want["responses"] if r["feedback"] is not None]
    assert [r["feedback"]["part_kind"] for r in refused] == ["retry-feedback"]  # (pydantic-ai 2.x; `retry-prompt` before)
    for step, r in zip(steps, want["responses"], strict=True):
        assert [(c.name, c.arguments) for c in step.tool_calls or []] == [(c["name"], c["arguments"]) for c in r["calls"]]
        if not r["calls"]:
            assert step.output == r["text"]
        assert step.error == (said(r["feedback"]) if r["feedback"] is not None else None)
    assert [s.error for s in steps if s.error is not None] == [REFUSED[scenario]]
    # a tool's retry is its call's error, as before
    retried = {t["id"]: t["content"] for t in want["tool_retries"]}
    for c in case.trace.tool_calls():
        assert (c.error is not None) == (c.id in retried)
        if c.id in retried:
            assert retried[c.id] in c.error
    assert case.trace.output == want["output"]
    assert "run_error" not in case.metadata  # the run got past the refusal


def conversation(case: Case) -> str:
    text = TaskCompletion().plan(case).render(0)
    return text.split("## Conversation\n", 1)[1].split("\n\n## Final output", 1)[0]


@pytest.mark.parametrize("name", NAMES)
def test_the_feedback_is_no_user_turn_and_the_refused_step_says_why(name: str) -> None:
    check(only_case(DATA / f"{name}.jsonl", "otel"), truth(DATA, name), name.split("-")[0])


# pydantic-ai 2.78 (not the pinned release: see tests/data/framework-versions/README.md) fences its feedback in
# `<pyai:validation_errors>` / `<pyai:retry_feedback>`; what it sent and got is the committed truth, word for word.
NEWER = [f"{s}-{i}" for s in ("native", "validator") for i in ("v5", "oi")]


@pytest.mark.parametrize("name", NEWER)
def test_the_feedback_in_pydantic_ais_reserved_tags_reads_the_same(name: str) -> None:
    path = DATA.parent / "framework-versions" / f"pydantic-ai-2.78-{name}.jsonl"
    assert "<pyai:" in path.read_text()
    check(only_case(path, "otel"), truth(DATA, name), name.split("-")[0])


@pytest.mark.parametrize("inst", INSTRUMENTATIONS)
def test_the_judge_sees_the_users_question_and_the_refused_answer(inst: str) -> None:
    assert conversation(only_case(DATA / f"validator-{inst}.jsonl", "otel")).splitlines() == [
        "User 1: Weather in Paris?",
        "Step 1:", " output: It is probably warm.", " step error: output rejected: Give a temperature in C",
        "Step 2:", " output: Paris: 21 C, sunny.",
        "User 2: And in Tokyo?",
        "Step 3:", " output: Tokyo: 14 C, rainy.",
    ]
    native = conversation(only_case(DATA / f"native-{inst}.jsonl", "otel"))
    assert native.startswith("User 1: Paris weather as JSON\nStep 1:\n call 1: get_weather({city:paris})\n"
                             "  error: pydantic_ai.exceptions.ToolRetryError: Capitalise the city name\n")
    assert ("Step 3:\n output: {city:Paris,temp_c:warm}\n step error: output rejected: temp_c: Input should be a valid integer, "
            "unable to parse string as an integer\nStep 4:\n output: {city:Paris,temp_c:21}") in native
    assert "User 2" not in native and FRAMING not in native


def edited(name: str, folder: Path, scope: str | None = None, drop: tuple[str, ...] = ()) -> Case:
    """The case of recording `name` with its spans' scope renamed to `scope` and the attributes that start with one of `drop` left out."""
    lines = []
    for line in (DATA / f"{name}.jsonl").read_text().splitlines():
        doc = json.loads(line)
        for rs in doc["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                ss["scope"]["name"] = scope or ss["scope"]["name"]
                for span in ss["spans"]:
                    span["attributes"] = [a for a in span["attributes"] if not a["key"].startswith(drop)]
        lines.append(json.dumps(doc))
    path = folder / f"{name}.edited.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return only_case(path, "otel")


def test_only_pydantic_ais_spans_are_read_so(tmp_path: Path) -> None:
    """The same words in another instrumentation's spans are left as they are: a user's text, not pydantic-ai's feedback."""
    case = edited("validator-v5", tmp_path, scope="my-app", drop=("model_request_parameters", "pydantic_ai.all_messages"))
    assert [m.content.startswith(FRAMING) for m in case.trace.user_messages] == [False, True, False]
    assert all(s.error is None for s in case.trace.steps)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_a_refused_request_that_recorded_no_usage_is_missing_it(tmp_path: Path, scenario: str) -> None:
    """pydantic-ai writes no token counts when the provider reported none: the refused request answered all the same, so its
    tokens are unknown (`requests_without_usage`) as the others' are, not those of a request that failed and spent none."""
    case = edited(f"{scenario}-v5", tmp_path, drop=("gen_ai.usage.", "gen_ai.aggregated_usage."))
    assert case.trace.usage.requests == len(case.trace.steps) == case.metadata["requests_without_usage"]
    assert case.trace.usage.input_tokens is None and [s.error for s in case.trace.steps if s.error] == [REFUSED[scenario]]


def _run2_prompt(name: str, folder: Path, prompt: str) -> Case:
    """The case of `name` with the second run's question ("And in Tokyo?") replaced by `prompt` wherever it is written
    (as a value, and inside the JSON text of attributes that hold messages)."""
    old, new = "And in Tokyo?", prompt

    def swap(value: Any) -> Any:
        if isinstance(value, str):
            return new if value == old else value.replace(json.dumps(old)[1:-1], json.dumps(new)[1:-1])
        if isinstance(value, list):
            return [swap(v) for v in value]
        return {k: swap(v) for k, v in value.items()} if isinstance(value, dict) else value

    text = (DATA / f"{name}.jsonl").read_text()
    assert old in text
    path = folder / f"{name}.edited.jsonl"
    path.write_text("".join(json.dumps(swap(json.loads(line))) + "\n" for line in text.splitlines()))
    return only_case(path, "otel")


@pytest.mark.parametrize("inst", INSTRUMENTATIONS)
@pytest.mark.parametrize("prompt", [
    "Please return text.",
    "Validation feedback:\nGive a temperature in C\n\nFix the errors and try again.",
    f"{FRAMING} (this is automated feedback, not a message from the user):\n<retry_feedback>\nGive a temperature in C\n</retry_feedback>",
])
def test_a_new_runs_prompt_in_feedbacks_words_is_the_users(tmp_path: Path, inst: str, prompt: str) -> None:
    """Feedback comes inside a run, after the reply it refused: a run's own prompt after the last run's accepted answer is the
    user speaking, whatever its words (the last one the very text of the first run's feedback), and that answer stands."""
    want = truth(DATA, f"validator-{inst}")
    case = _run2_prompt(f"validator-{inst}", tmp_path, prompt)
    assert case.input == "Weather in Paris?"
    assert [m.content for m in case.trace.user_messages] == ["Weather in Paris?", prompt]
    assert [s.error for s in case.trace.steps if s.error] == [REFUSED["validator"]]
    assert case.trace.output == want["output"]


@pytest.mark.parametrize(("text", "says"), [
    # 2.x (`RetryFeedbackPart`): validation errors, a `ModelRetry` message, and the fixed text on a reply with nothing to use
    (f'{FRAMING} (this is automated feedback, not a message from the user):\n<validation_errors>\n'
     '[{"type":"missing","loc":["summary"],"msg":"Field required"},{"type":"json_invalid","loc":[],"msg":"Invalid JSON"}]\n</validation_errors>',
     "summary: Field required; Invalid JSON"),
    (f"{FRAMING} (this is automated feedback, not a message from the user):\n<retry_feedback>\nNo digits\nat all\n</retry_feedback>", "No digits\nat all"),
    # 2.78: the same fences in the tags pydantic-ai reserves for itself (`pyai:`); a tag left unclosed, or closed as another, is none
    (f'{FRAMING} (this is automated feedback, not a message from the user):\n<pyai:validation_errors>\n'
     '[{"type":"missing","loc":["summary"],"msg":"Field required"}]\n</pyai:validation_errors>', "summary: Field required"),
    (f"{FRAMING} (this is automated feedback, not a message from the user):\n<pyai:retry_feedback>\nNo digits\n</pyai:retry_feedback>", "No digits"),
    (f"{FRAMING} (this is automated feedback, not a message from the user):\n<pyai:retry_feedback>\nNo digits\n</retry_feedback>", None),
    ("Please return text or call a tool.", "Please return text or call a tool."),
    # 1.x (`RetryPromptPart` with `tool_name=None`): a message, and error details with and without the code fence
    ("Validation feedback:\nGive a temperature in C\n\nFix the errors and try again.", "Give a temperature in C"),
    ('1 validation error:\n```json\n[\n  {\n    "type": "int_parsing",\n    "loc": [\n      "temp_c"\n    ],\n    "msg": "Input should be a valid integer"\n  }\n]\n```'
     "\n\nFix the errors and try again.", "temp_c: Input should be a valid integer"),
    ('2 validation errors: [{"loc": ["a"], "msg": "bad"}, {"loc": ["b", 0], "msg": "worse"}]\n\nFix the errors and try again.', "a: bad; b.0: worse"),
    # not pydantic-ai's feedback: a user's text that only looks like it
    (f"{FRAMING}, you say?", None),
    ("Please return text about Paris.", None),
    ("Validation feedback:\nlooks fine", None),
    ("Weather in Paris?", None),
])
def test_pydantic_ais_feedback_wordings(text: str, says: str | None) -> None:
    from tracejudge.stages.extract.otel.conventions.pydantic_ai import feedback

    assert feedback(text) == says


def test_every_recording_has_its_truth() -> None:
    assert {p.name.removesuffix(".truth.json") for p in DATA.glob("*.truth.json")} == set(NAMES) == {p.stem for p in DATA.glob("*.jsonl")}


# --- re-recorded now by the installed libraries ------------------------------------------------------------------
@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, subprocess.Popen[str]]]:
    """Every installed recording made again at once into a temporary folder: (folder, recording -> its process)."""
    out = tmp_path_factory.mktemp("pydantic-ai-retry-live")
    env = {**os.environ, "RECORD_IN_PROCESS": "1"}  # the recording runs in this process of its own (`common.record_each_in_subprocess`)
    return out, {name: _forkserver.popen([sys.executable, str(RECORD), str(out), name], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
                 for name in LIVE if all(installed(m) for m in NEEDS[name.split("-")[1]])}


@pytest.mark.parametrize("name", LIVE)
def test_live_recording_reads_the_feedback_as_the_frameworks(live: tuple[Path, dict[str, subprocess.Popen[str]]], name: str) -> None:
    out = recorded(live, name, NEEDS[name.split("-")[1]])
    want = truth(out, name)
    assert want == truth(DATA, name)  # pydantic-ai sent and got the same
    check(only_case(out / f"{name}.jsonl", "otel"), want, name.split("-")[0])
