"""Data a pydantic-ai tool enqueued as a capability part is the framework's, never a user turn (pydantic-ai 2.78 on).

Recorded by the real pydantic-ai (2.78; the pinned 2.62 has no capability parts) against the project's scripted loopback
server (`tests/frameworks/record_pydantic_ai_capability_data.py` says what runs): two runs of one conversation, each calling
`get_weather`, which enqueues a station report as a `DataCapabilityPart`. pydantic-ai sends it framed in its tag on the
user channel: its request spans record `<station_report station="…">`, the report and `</station_report>` as the text parts
of a `user` message, its agent span's `pydantic_ai.all_messages` the report alone as user text. Read as they were, each
report was a user turn ("User 2"), and under OpenInference the run's question (its `input.value`, the run's last user
text) and so the case's input. Now the frame is a `system` message and the user's own two prompts are the only turns.

When a pydantic-ai with capability parts (and, for `oi`, openinference-instrumentation-pydantic-ai) is installed, the
recordings are also made again now into a temporary folder (one process each) and read the same way.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from framework_truth import only_case
from helpers import installed, recorded, start_recordings
from tracejudge.core.records import Case

DATA = Path(__file__).parent / "data" / "pydantic-ai-capability-data"
RECORD = Path(__file__).parent / "frameworks" / "record_pydantic_ai_capability_data.py"
NAMES = ("tool_data-v5", "tool_data-oi")
NEEDS = {"v5": ("pydantic_ai",), "oi": ("pydantic_ai", "openinference.instrumentation.pydantic_ai")}


def truth(folder: Path, name: str) -> dict[str, Any]:
    return json.loads((folder / f"{name}.truth.json").read_text())


def check(case: Case, want: dict[str, Any]) -> None:
    """`case` reads as `want` says the application ran: its own prompts the only turns, every call with its result."""
    assert case.trace is not None
    assert case.input == want["input"]
    assert [m.content for m in case.trace.user_messages] == want["user_turns"]
    assert case.turns == want["user_turns"][1:]
    assert [t["user_text"] for t in case.metadata["otel"]["turns"]] == want["user_turns"]
    assert not any(d in m.content for m in case.trace.user_messages for d in want["capability_data"])
    steps = case.trace.steps
    assert len(steps) == len(want["responses"]) == want["requests"]
    for step, r in zip(steps, want["responses"], strict=True):
        assert [(c.id, c.name, c.arguments, c.result) for c in step.tool_calls or []] == [
            (c["id"], c["name"], c["arguments"], c["returned"]["content"]) for c in r["calls"]]
        if not r["calls"]:
            assert step.output == r["text"]
        assert step.error is None
    assert case.trace.output == want["output"]


@pytest.mark.parametrize("name", NAMES)
def test_capability_data_is_no_user_turn(name: str) -> None:
    want = truth(DATA, name)
    assert len(want["capability_data"]) == 2  # (the recording holds what it is about)
    check(only_case(DATA / f"{name}.jsonl", "otel"), want)


def test_only_pydantic_ais_spans_are_read_so(tmp_path: Path) -> None:
    """The same frames in another instrumentation's spans are left as they are: user messages, as recorded."""
    lines = []
    for line in (DATA / "tool_data-v5.jsonl").read_text().splitlines():
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


def test_every_recording_has_its_truth() -> None:
    assert {p.name.removesuffix(".truth.json") for p in DATA.glob("*.truth.json")} == set(NAMES) == {p.stem for p in DATA.glob("*.jsonl")}


# --- re-recorded now by the installed libraries ------------------------------------------------------------------
def _has_capability_parts() -> bool:
    if not installed("pydantic_ai"):
        return False
    from pydantic_ai import messages

    return hasattr(messages, "DataCapabilityPart")


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, subprocess.Popen[str]]]:
    """Every installed recording made again at once into a temporary folder: (folder, recording -> its process)."""
    if not _has_capability_parts():
        pytest.skip("the installed pydantic-ai has no capability parts (2.78 has)")
    out = tmp_path_factory.mktemp("pydantic-ai-capability-live")
    procs: dict[str, subprocess.Popen[str]] = {}
    for name in NAMES:
        procs.update(start_recordings(out, RECORD, [name], NEEDS[name.split("-")[1]])[1])
    return out, procs


@pytest.mark.parametrize("name", NAMES)
def test_live_recording_reads_the_data_as_the_frameworks(live: tuple[Path, dict[str, subprocess.Popen[str]]], name: str) -> None:
    out = recorded(live, name, NEEDS[name.split("-")[1]])
    want = truth(out, name)
    assert want == truth(DATA, name)  # pydantic-ai sent and got the same
    check(only_case(out / f"{name}.jsonl", "otel"), want)
