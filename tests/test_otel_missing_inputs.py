"""Model requests recorded without their input messages (`tests/data/missing-inputs/`, see its README).

One chat loop whose user message holds a text part and a base64 image part: four calls after a preamble, one more
call, a JSON answer; three requests. `tl-image` was recorded by `tests/frameworks/record_missing_inputs.py` with
opentelemetry-instrumentation-openai (OpenLLMetry) 0.62.4: no request has any input message, and each is a trace
of its own. `v2-image` was recorded by the same loop with opentelemetry-instrumentation-openai-v2 2.4b0 (installed
with `pip install --no-deps` beside opentelemetry-util-genai; not among this project's packages, so the file is the
trial's recording as it was, run with `OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental
OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=span_only`): the user message is `{"role": "user", "parts": []}`.

Before, both read without a word: three cases with no input and every result null (the first one's output the
preamble), and one case with no input. What the instrumentation never wrote cannot be read, and nothing is made up
for it: the recorded calls, the answer and the tokens read as the application had them; the input and the results
stay unknown; the three requests stay three cases, since nothing recorded joins them (three traces, no parent, no
conversation key, no history). Now one warning per file says how many requests lost what, which instrumentation and
attributes, and what is unknown; each case counts its requests in `metadata.otel.missing_inputs`.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import extract_path, installed, recorded
from tracejudge.core.records import Case
import _forkserver

DATA = Path(__file__).parent / "data" / "missing-inputs"
RECORD = Path(__file__).parent / "frameworks" / "record_missing_inputs.py"
NEEDS = ("openai", "opentelemetry.instrumentation.openai", "opentelemetry.sdk")
WARNING = "model request(s)"


def truth(folder: Path, name: str) -> dict[str, Any]:
    return json.loads((folder / f"{name}.truth.json").read_text())["cases"][0]


def read(path: Path) -> list[Case]:
    cases = extract_path(path, "otel")
    assert all(isinstance(c, Case) for c in cases), [c for c in cases if not isinstance(c, Case)]
    return cases


def args_of(raw: str) -> Any:
    """A call's arguments as the application parsed them (`""` is `{}`); text that is not JSON stays text."""
    try:
        return json.loads(raw or "{}")
    except ValueError:
        return raw


def result_matches(got: Any, want: dict[str, Any]) -> bool:
    """Whether a call's result read is the text the application sent back (JSON text read as its value, as recorded)."""
    if want["result"] is None:  # a long result: kept in the truth as its length and ends
        return isinstance(got, str) and len(got) == want["result_chars"] and got.startswith(want["result_head"]) and got.endswith(want["result_tail"])
    return got == want["result"] or (not isinstance(got, str) and got == json.loads(want["result"]))


def usage_of(cases: list[Case]) -> dict[str, int]:
    return {k: sum(getattr(c.trace.usage, k) for c in cases) for k in ("input_tokens", "output_tokens", "requests")}


def check_recorded_facts(cases: list[Case], want: dict[str, Any]) -> None:
    """What the recording holds reads as the application had it: every call (id, name, arguments) in order, the answer, the tokens."""
    calls = [c for case in cases for c in case.trace.tool_calls()]
    assert [(c.id, c.name, c.arguments) for c in calls] == [(w["id"], w["name"], args_of(w["arguments"])) for w in want["calls"]]
    assert cases[-1].trace.output == want["output"]
    assert usage_of(cases) == want["usage"]


def test_openllmetry_reads_the_calls_answer_and_tokens_and_makes_up_no_input_or_result() -> None:
    want = truth(DATA, "tl-image")
    cases = read(DATA / "tl-image.jsonl")
    check_recorded_facts(cases, want)
    for case in cases:
        assert case.input is None and case.trace.user_messages == [] and case.turns == []
        assert all(c.result is None for c in case.trace.tool_calls())  # the results went back as input messages: not recorded
        assert case.metadata["otel"]["missing_inputs"] == {"requests": 1, "no_messages": 1, "empty_messages": 0}
    text = (DATA / "tl-image.jsonl").read_text()
    assert want["user_turns"][0]["text"] not in text and "größe" not in text  # the user's words and the results are nowhere in it


def test_openllmetry_requests_stay_apart_since_nothing_recorded_joins_them() -> None:
    """Three traces of one root span each, no parent, no conversation key, no input to replay: the grouping is unknown,
    so each request stays a case of its own (and says so), none joined by a guess."""
    docs = [json.loads(line) for line in (DATA / "tl-image.jsonl").read_text().splitlines()]
    spans = [s for d in docs for rs in d["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
    assert len({s["traceId"] for s in spans}) == 3 and not any(s.get("parentSpanId") for s in spans)
    assert not any(a["key"] in ("gen_ai.conversation.id", "session.id") for s in spans for a in s["attributes"])
    cases = read(DATA / "tl-image.jsonl")
    assert [c.metadata["otel"]["traces"] for c in cases] == [[s["traceId"]] for s in sorted(spans, key=lambda s: int(s["startTimeUnixNano"]))]


def test_openai_v2_reads_the_whole_loop_but_the_user_message_it_dropped() -> None:
    want = truth(DATA, "v2-image")
    [case] = read(DATA / "v2-image.jsonl")
    check_recorded_facts([case], want)
    calls = case.trace.tool_calls()
    assert all(result_matches(c.result, w) for c, w in zip(calls, want["calls"], strict=True)), [(c.id, str(c.result)[:60]) for c in calls]
    assert case.input is None and case.trace.user_messages == []  # its text part was dropped with the image: no input made up
    assert want["user_turns"][0]["text"] not in (DATA / "v2-image.jsonl").read_text()
    assert case.metadata["otel"]["missing_inputs"] == {"requests": 3, "no_messages": 0, "empty_messages": 3}


@pytest.mark.parametrize(("name", "said"), [
    ("tl-image", ["3 of 3 model request(s) were recorded without any input message", "no `gen_ai.input.messages`",
                  "`opentelemetry.instrumentation.openai.v1` (3)", "the user's input", "tool results", "conversation each belongs to"]),
    ("v2-image", ["3 of 3 model request(s) hold a user message whose content parts were all dropped", '`"parts": []` in `gen_ai.input.messages`',
                  "`opentelemetry.util.genai.handler` (3)"]),
])
def test_one_warning_per_file_says_how_many_requests_lost_what_and_what_it_means(name: str, said: list[str], tmp_path: Path,
                                                                                   caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / f"{name}.jsonl"  # (a file of its own: the warning is said once per file in a process)
    shutil.copy(DATA / f"{name}.jsonl", path)
    with caplog.at_level(logging.WARNING):
        read(path)
        read(path)
    got = [r.getMessage() for r in caplog.records if WARNING in r.getMessage()]
    assert len(got) == 1, got
    assert str(path) in got[0]
    for words in said + ["TRACELOOP_TRACE_CONTENT=false", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "metadata.otel.missing_inputs"]:
        assert words in got[0], (words, got[0])


def test_a_loop_recorded_with_its_inputs_says_nothing(caplog: pytest.LogCaptureFixture) -> None:
    path = Path(__file__).parent / "data" / "otel-loop-faults" / "tl-concurrent-empty.jsonl"
    with caplog.at_level(logging.WARNING):
        cases = read(path)
    assert cases and not any("missing_inputs" in c.metadata["otel"] for c in cases)
    assert not any(WARNING in r.getMessage() for r in caplog.records)


# --- re-recorded now by the installed library ------------------------------------------------------------------
@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, subprocess.Popen[str]]]:
    """`tl-image` re-recorded into a temporary folder: (folder, scenario -> its process)."""
    out = tmp_path_factory.mktemp("missing-inputs-live")
    if not all(installed(m) for m in NEEDS):
        return out, {}
    env = {**os.environ, "RECORD_IN_PROCESS": "1"}  # the scenario runs in this process of its own (`common.record_each_in_subprocess`)
    return out, {"tl-image": _forkserver.popen([sys.executable, str(RECORD), str(out), "tl-image"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                              text=True, env=env)}


def test_live_openllmetry_recording_still_drops_the_inputs_and_reads_the_same(live: tuple[Path, dict[str, subprocess.Popen[str]]]) -> None:
    out = recorded(live, "tl-image", NEEDS)
    want = truth(out, "tl-image")
    assert want == truth(DATA, "tl-image")  # the application did and got the same
    cases = read(out / "tl-image.jsonl")
    check_recorded_facts(cases, want)
    assert [c.metadata["otel"]["missing_inputs"]["no_messages"] for c in cases] == [1, 1, 1]
