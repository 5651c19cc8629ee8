"""Tool spans whose call ids name several calls, recorded by the frameworks' real instrumentations in `tests/data/tool-span-ids/`.

Recorded by `tests/frameworks/record_tool_span_ids.py` (its docstring says what each scenario runs); each
`<scenario>.truth.json` is what the application itself sent and got: every call the model asked for, the result the
framework answered it with, and what the tool itself raised. The server numbers calls per response (`call_0` is the
first call of EVERY response, as llama.cpp and several local servers do), and the framework runs the tools and records
a span for each (LangGraph's ToolNode under OpenInference and OpenLLMetry, smolagents under OpenInference, LangChain
callbacks under MLflow and Langfuse). Each model tool-call part pairs with its own round's tool span.

Before, round 1's call took a later round's span (its result, even its tool's name), the span of round 1 was left
over as a phantom call of its own, a failed call's error was copied onto successful ones, and smolagents' failed call
got the `final_answer`'s text as its result. MaxToolCalls then counted the phantoms.

When the frameworks are installed, every scenario is also re-recorded now into a temporary folder (all at once, one
process each) and read the same way: the frameworks must still do and answer what the checked-in truth says, and a
library upgrade whose recording no longer reads as what the application did fails here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import extract_path, installed, recorded
from tracejudge.core.records import Case
from tracejudge.stages.score import MaxToolCalls
import _forkserver

DATA = Path(__file__).parent / "data" / "tool-span-ids"
RECORD = Path(__file__).parent / "frameworks" / "record_tool_span_ids.py"

_LG = ("langgraph.prebuilt", "langchain_openai")
NEEDS = {  # scenario -> the modules its recording imports
    "oi-lg-rounds": (*_LG, "openinference.instrumentation.langchain"),
    "tl-lg-rounds": (*_LG, "opentelemetry.instrumentation.langchain"),
    "oi-lg-thread": (*_LG, "openinference.instrumentation.langchain"),
    "tl-lg-thread": (*_LG, "opentelemetry.instrumentation.langchain"),
    "oi-smol": ("smolagents", "openinference.instrumentation.smolagents"),
    "oi-smol-equal": ("smolagents", "openinference.instrumentation.smolagents"),
    "mlflow-lg": (*_LG, "mlflow"),
    "langfuse-lg": (*_LG, "langfuse"),
}
# (recording file, format, scenario)
RECORDINGS = [
    ("oi-lg-rounds.jsonl", "otel", "oi-lg-rounds"),
    ("tl-lg-rounds.jsonl", "otel", "tl-lg-rounds"),
    ("oi-lg-thread.jsonl", "otel", "oi-lg-thread"),
    ("tl-lg-thread.jsonl", "otel", "tl-lg-thread"),
    ("oi-smol.jsonl", "otel", "oi-smol"),
    ("oi-smol-equal.jsonl", "otel", "oi-smol-equal"),
    ("mlflow-lg.mlflow.jsonl", "mlflow", "mlflow-lg"),
    ("mlflow-lg.otlp.jsonl", "otel", "mlflow-lg"),
    ("langfuse-lg.jsonl", "otel", "langfuse-lg"),
]
IDS = [f for f, _, _ in RECORDINGS]
# Re-recorded live (the checked-in recordings are checked whole above): one of each instrumentation's shapes, as each
# recording's processes import a framework and its instrumentation (seconds of CPU each on a two-core machine).
LIVE = ("oi-lg-rounds", "tl-lg-thread", "oi-smol-equal")
LIVE_RECORDINGS = [r for r in RECORDINGS if r[2] in LIVE]


def truth(folder: Path, name: str) -> dict[str, Any]:
    return json.loads((folder / f"{name}.truth.json").read_text())


def one_case(path: Path, fmt_name: str) -> Case:
    cases = extract_path(path, fmt_name)
    assert len(cases) == 1 and isinstance(cases[0], Case), cases
    return cases[0]


def calls(case: Case) -> list[dict[str, Any]]:
    """What tracejudge read: each call's id, name, arguments, result and whether it failed, in the trace's order."""
    return [{"id": c.id, "name": c.name, "arguments": c.arguments, "result": c.result, "failed": c.error is not None} for c in case.trace.tool_calls()]


def sent(want: dict[str, Any]) -> list[dict[str, Any]]:
    """The same of the truth: what the model asked for, what the framework answered, and whether the tool raised."""
    return [{"id": c["id"], "name": c["name"], "arguments": c["arguments"], "result": c["result"], "failed": c["error"] is not None} for c in want["calls"]]


def check(case: Case, want: dict[str, Any]) -> None:
    """`case` holds exactly the calls of `want`, each with its own round's result and error, the turns and the answer."""
    assert len({c["id"] for c in want["calls"]}) < len(want["calls"])  # the recording does reuse ids
    got = calls(case)
    assert len(got) == len(want["calls"]), got  # no phantom call, none lost
    assert got == sent(want)
    for c, w in zip(case.trace.tool_calls(), want["calls"], strict=True):
        if w["error"] is not None:
            assert w["error"] in c.error, (c.error, w["error"])  # the error the tool itself raised
        if "status" in w:  # LangChain: the ToolMessage's status agrees with the tool having raised
            assert (w["status"] == "error") == (w["error"] is not None)
    assert [m.content for m in case.trace.user_messages] == want["user_turns"]
    assert case.trace.output == want["output"]


def check_budget(case: Case, want: dict[str, Any]) -> None:
    """MaxToolCalls counts the calls the application made: every one, and without the failed ones when asked."""
    n, failed = len(want["calls"]), sum(c["error"] is not None for c in want["calls"])
    at = MaxToolCalls(max_calls=n).evaluate(case)
    assert at.passed is True and at.details["count"] == n, at.reason
    assert MaxToolCalls(max_calls=n - 1).evaluate(case).passed is False
    assert MaxToolCalls(max_calls=n - failed, include_failed=False).evaluate(case).passed is True
    assert MaxToolCalls(max_calls=n - failed - 1, include_failed=False).evaluate(case).passed is False


@pytest.mark.parametrize(("file", "fmt_name", "name"), RECORDINGS, ids=IDS)
def test_each_call_pairs_with_its_own_rounds_tool_span(file: str, fmt_name: str, name: str) -> None:
    check(one_case(DATA / file, fmt_name), truth(DATA, name))


@pytest.mark.parametrize(("file", "fmt_name", "name"), RECORDINGS, ids=IDS)
def test_max_tool_calls_counts_the_calls_the_application_made(file: str, fmt_name: str, name: str) -> None:
    check_budget(one_case(DATA / file, fmt_name), truth(DATA, name))


def test_every_scenario_is_recorded_and_checked() -> None:
    assert {n for _, _, n in RECORDINGS} == set(NEEDS) == {p.name.removesuffix(".truth.json") for p in DATA.glob("*.truth.json")}


# --- re-recorded now by the installed libraries ------------------------------------------------------------------
@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, subprocess.Popen[str]]]:
    """Every installed scenario of `LIVE` re-recorded at once into a temporary folder: (folder, scenario -> its process)."""
    out = tmp_path_factory.mktemp("tool-span-ids-live")
    env = {**os.environ, "RECORD_IN_PROCESS": "1"}  # the scenario runs in this process of its own (`common.record_each_in_subprocess`)
    return out, {name: _forkserver.popen([sys.executable, str(RECORD), str(out), name], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
                 for name, mods in NEEDS.items() if name in LIVE and all(installed(m) for m in mods)}


@pytest.mark.parametrize(("file", "fmt_name", "name"), LIVE_RECORDINGS, ids=[f for f, _, _ in LIVE_RECORDINGS])
def test_live_recording_pairs_each_call_with_its_own_rounds_tool_span(live: tuple[Path, dict[str, subprocess.Popen[str]]],
                                                                      file: str, fmt_name: str, name: str) -> None:
    out = recorded(live, name, NEEDS[name])
    want = truth(out, name)
    assert want == truth(DATA, name)  # the frameworks did and answered the same
    case = one_case(out / file, fmt_name)
    check(case, want)
    check_budget(case, want)


def test_a_tool_span_missing_leaves_the_other_rounds_calls_their_own(tmp_path: Path) -> None:
    """smolagents' tool spans carry no call id: with round 1's Paris span gone (a sampler, a lost export), every later
    round's span used to shift one call back (Paris got Tokyo's result, Tokyo Zürich's failure, Zürich read as a success).
    Paris now has only its round's tool message (smolagents joins a parallel round's observations into one), the rest
    their own spans."""
    lines = []
    for line in (DATA / "oi-smol.jsonl").read_text().splitlines():
        doc = json.loads(line)
        for rs in doc["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                ss["spans"] = [s for s in ss["spans"] if not any(a["key"] == "input.value" and '"Paris"' in a["value"].get("stringValue", "")
                                                                 and s["name"] != "OpenAIModel.generate" for a in s["attributes"])
                               or not any(a["key"] == "openinference.span.kind" and a["value"].get("stringValue") == "TOOL" for a in s["attributes"])]
        lines.append(json.dumps(doc))
    path = tmp_path / "oi-smol.jsonl"
    path.write_text("\n".join(lines) + "\n")
    want = sent(truth(DATA, "oi-smol"))
    got = calls(one_case(path, "otel"))
    assert len(got) == len(want)
    assert got[1:] == want[1:]
    assert got[0]["name"] == "get_weather" and got[0]["arguments"] == {"city": "Paris"} and not got[0]["failed"]
    assert got[0]["result"] in (None, "Observation:\nsunny, 21 C\nrainy, 14 C")
