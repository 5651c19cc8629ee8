"""Shapes pydantic-ai 2.78 records that the pinned 2.62 cannot make: capability data, and a response a capability rejected.

Recorded by the real pydantic-ai 2.78 against the project's scripted loopback server (each recorder says what it runs;
the folders' READMEs what the spans hold):

- `pydantic-ai-capability-data` (`tests/frameworks/record_pydantic_ai_capability_data.py`): two runs of one conversation,
  each calling `get_weather`, which enqueues a station report as a `DataCapabilityPart`. pydantic-ai sends it framed in its
  tag on the user channel: its request spans record `<station_report station="…">`, the report and `</station_report>` as
  the text parts of a `user` message, its agent span's `pydantic_ai.all_messages` the report alone as user text. Read as
  they were, each report was a user turn, and under OpenInference the run's question (its `input.value`, the run's last
  user text) and the case's input. Now the frame is a `system` message; the user's own prompts are the only turns.
- `pydantic-ai-attempts` (`tests/frameworks/record_pydantic_ai_attempts.py`): a capability's `after_model_request` raises
  `RetryModelRequest()` on the reply "It is probably warm." and pydantic-ai sends the request again, recording the attempt
  it threw away as a span inside the request's `chat` span (`model request attempt <model>`, status ERROR "Response
  rejected", its tokens, no messages). Read as the request's provider span, the answered request failed and its tokens
  were the rejected attempt's; under OpenInference the attempt's tokens were lost. Now the request stands answered and
  the run's tokens are what pydantic-ai counted (`result.usage()`).

When a pydantic-ai that has these (and, for `oi`, openinference-instrumentation-pydantic-ai) is installed, every recording
is also made again now into a temporary folder (one process each) and read the same way.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from framework_truth import only_case
from helpers import PYDANTIC_AI_NEEDS, installed, recorded, start_each, truth_of
from tracejudge.core.records import Case

DATA = Path(__file__).parent / "data"
FRAMEWORKS = Path(__file__).parent / "frameworks"
# folder: (its recorder, its recordings, the pydantic-ai name a release must have to make them)
FOLDERS = {"pydantic-ai-capability-data": ("record_pydantic_ai_capability_data.py", ("tool_data-v5", "tool_data-oi"), "messages.DataCapabilityPart"),
           "pydantic-ai-attempts": ("record_pydantic_ai_attempts.py", ("rejected-v5", "rejected-oi"), "RetryModelRequest")}
RECORDINGS = [(folder, name) for folder, (_, names, _) in FOLDERS.items() for name in names]


def _steps_as_responses(case: Case, want: dict[str, Any]) -> None:
    """One step per response of the truth, each with its calls and their results, none failed, and the run's answer."""
    assert case.trace is not None
    assert [m.content for m in case.trace.user_messages] == want["user_turns"]
    assert len(case.trace.steps) == len(want["responses"])
    for step, r in zip(case.trace.steps, want["responses"], strict=True):
        assert [(c.id, c.name, c.arguments, c.result) for c in step.tool_calls or []] == [
            (c["id"], c["name"], c["arguments"], c["returned"]["content"]) for c in r["calls"]]
        if not r["calls"]:
            assert step.output == r["text"]
        assert step.error is None
    assert case.trace.output == want["output"]


def check(folder: str, case: Case, want: dict[str, Any]) -> None:
    """`case` reads as `want` says the application ran (see the module doc for what each folder is about)."""
    _steps_as_responses(case, want)
    if folder == "pydantic-ai-capability-data":
        assert case.input == want["input"] and case.turns == want["user_turns"][1:] and len(want["capability_data"]) == 2
        assert [t["user_text"] for t in case.metadata["otel"]["turns"]] == want["user_turns"]
        assert not any(d in m.content for m in case.trace.user_messages for d in want["capability_data"])
        assert want["requests"] == len(case.trace.steps)
        return
    usage, counted = case.trace.usage, want["usage"]
    assert want["rejected"] == ["It is probably warm."] and want["requests"] == len(case.trace.steps) + 1
    assert not any(r in (s.output or "") for s in case.trace.steps for r in want["rejected"])
    assert usage is not None and (usage.input_tokens, usage.output_tokens, usage.requests) == (
        counted["input_tokens"], counted["output_tokens"], counted["requests"])


@pytest.mark.parametrize(("folder", "name"), RECORDINGS, ids=[f"{f}/{n}" for f, n in RECORDINGS])
def test_recording_reads_as_its_truth(folder: str, name: str) -> None:
    check(folder, only_case(DATA / folder / f"{name}.jsonl", "otel"), truth_of(DATA / folder, name))


@pytest.mark.parametrize("folder", FOLDERS)
def test_every_recording_has_its_truth(folder: str) -> None:
    path = DATA / folder
    assert {p.name.removesuffix(".truth.json") for p in path.glob("*.truth.json")} == set(FOLDERS[folder][1]) == {p.stem for p in path.glob("*.jsonl")}


def test_only_pydantic_ais_spans_hold_capability_data(tmp_path: Path) -> None:
    """The same frames in another instrumentation's spans are left as they are: user messages, as recorded."""
    lines = []
    for line in (DATA / "pydantic-ai-capability-data" / "tool_data-v5.jsonl").read_text().splitlines():
        doc = json.loads(line)
        for rs in doc["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                ss["scope"]["name"] = "my-app"
                for span in ss["spans"]:
                    span["attributes"] = [a for a in span["attributes"] if a["key"] not in ("model_request_parameters", "pydantic_ai.all_messages")]
        lines.append(json.dumps(doc))
    path = tmp_path / "tool_data-v5.edited.jsonl"
    path.write_text("\n".join(lines) + "\n")
    said = [m.content for m in only_case(path, "otel").trace.user_messages]
    assert said[0] == "Weather in Paris?" and said[1].startswith('<station_report station="LFPG">') and len(said) == 4


# --- re-recorded now by the installed libraries ------------------------------------------------------------------
def _has(dotted: str) -> bool:
    """Whether the installed pydantic-ai has `dotted` (`module.Name` under `pydantic_ai`)."""
    if not installed("pydantic_ai"):
        return False
    import importlib

    module, _, name = f"pydantic_ai.{dotted}".rpartition(".")
    return hasattr(importlib.import_module(module), name)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, dict[str, subprocess.Popen[str]]]]:
    """Every installed recording made again at once, each folder's into a temporary folder: folder -> (it, its processes)."""
    return {folder: start_each(tmp_path_factory.mktemp(folder), FRAMEWORKS / script, names, PYDANTIC_AI_NEEDS)
            for folder, (script, names, needs) in FOLDERS.items() if _has(needs)}


@pytest.mark.parametrize(("folder", "name"), RECORDINGS, ids=[f"{f}/{n}" for f, n in RECORDINGS])
def test_live_recording_reads_the_same(live: dict[str, tuple[Path, dict[str, subprocess.Popen[str]]]], folder: str, name: str) -> None:
    if folder not in live:
        pytest.skip(f"the installed pydantic-ai has no {FOLDERS[folder][2]} (2.78 has)")
    out = recorded(live[folder], name, PYDANTIC_AI_NEEDS[name.rsplit("-", 1)[1]])
    want = truth_of(out, name)
    assert want == truth_of(DATA / folder, name)  # pydantic-ai sent and got the same
    check(folder, only_case(out / f"{name}.jsonl", "otel"), want)
