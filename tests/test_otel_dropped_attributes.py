"""Long tool loops whose spans passed the OTel SDK's limit of attributes per span, recorded in `tests/data/dropped-attributes/`.

Recorded by `tests/frameworks/record_dropped_attributes.py` (its docstring says what each scenario runs): two plain
OpenAI chat loops interleaved under openinference-instrumentation-openai, the SDK's default limit of 128 attributes
per span (`oi-cut-limit`: `OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT=24`). OpenInference writes one attribute per message field;
past the limit the Python SDK evicts the attributes set FIRST, so the later requests' spans lack `input.value`,
`session.id` and their first messages (the oldest one kept may have lost its role only), and say so in
`droppedAttributesCount`. Each `<scenario>.truth.json` is what the application sent and got, per conversation.

Before, nothing read `droppedAttributesCount`: each cut request was a conversation of its own (a one-request case
with no result for its call, the next request's tool message being in another case), the ones whose indices went
past `view.nested`'s sparseness had no input at all, a `using_session` conversation split the same way once its
session id was evicted, and the warnings blamed "a trimmed history". Now each file reads as its two conversations,
every turn, call, result, answer and token of the truth, and one warning per file says what was lost and how to keep
it; each case counts its lost attributes in `metadata.otel.dropped_attributes`.

When the instrumentation is installed, every scenario is also re-recorded now into a temporary folder and read the
same way.
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
from tracejudge.stages.extract.otel.jaeger import from_jaeger
from tracejudge.stages.extract.otel.spans import Collector
from tracejudge.stages.score import MaxToolCalls, TokenUsage
import _forkserver

DATA = Path(__file__).parent / "data" / "dropped-attributes"
RECORD = Path(__file__).parent / "frameworks" / "record_dropped_attributes.py"
NEEDS = ("openai", "openinference.instrumentation.openai", "opentelemetry.sdk")
SCENARIOS = ["oi-cut", "oi-cut-session", "oi-cut-reused-ids", "oi-cut-limit"]
LIVE = ("oi-cut-session", "oi-cut-reused-ids")  # re-recorded live (all are checked as checked in): the default limit, with a session and with reused ids


def truth(folder: Path, name: str) -> dict[str, Any]:
    return json.loads((folder / f"{name}.truth.json").read_text())


def read(path: Path) -> list[Case]:
    cases = extract_path(path, "otel")
    assert all(isinstance(c, Case) for c in cases), [c for c in cases if not isinstance(c, Case)]
    return cases


def check(cases: list[Case], want: dict[str, Any]) -> None:
    """`cases` are the truth's conversations, in order: every user turn, call with its result, answer and token."""
    convs = want["conversations"]
    assert len(cases) == len(convs), [(c.id, c.input) for c in cases]
    for case, conv in zip(cases, convs, strict=True):
        if conv["session"] is not None:
            assert case.id == conv["session"]  # the session id the later spans lost is their conversation's
        assert [case.input, *case.turns] == conv["user_turns"]
        assert [m.content for m in case.trace.user_messages] == conv["user_turns"]
        calls = [{"id": c.id, "name": c.name, "arguments": c.arguments, "result": c.result} for c in case.trace.tool_calls()]
        assert calls == conv["calls"]
        assert [t["final_text"] for t in case.metadata["otel"]["turns"]] == conv["answers"]
        assert case.trace.output == conv["answers"][-1]
        usage = case.trace.usage
        assert {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens, "requests": usage.requests} == conv["usage"]
        n, tokens = len(conv["calls"]), conv["usage"]["input_tokens"] + conv["usage"]["output_tokens"]
        assert MaxToolCalls(max_calls=n).evaluate(case).details["count"] == n
        assert MaxToolCalls(max_calls=n - 1).evaluate(case).passed is False
        assert TokenUsage(max_tokens=tokens).evaluate(case).passed is True
        assert TokenUsage(max_tokens=tokens - 1).evaluate(case).passed is False
    lost = [c.metadata["otel"].get("dropped_attributes") for c in cases]
    assert all(lost), lost  # every conversation had requests past the limit, and its case says how many
    assert sum(x["spans"] for x in lost) == want["lossy_spans"] > 0
    assert sum(x["attributes"] for x in lost) == want["dropped_attributes"]


@pytest.mark.parametrize("name", SCENARIOS)
def test_each_conversation_reads_whole_though_its_spans_lost_their_first_attributes(name: str) -> None:
    check(read(DATA / f"{name}.jsonl"), truth(DATA, name))


def test_the_recordings_did_lose_what_the_sdk_writes_first() -> None:
    """The recordings show the fault: spans at the limit without `input.value`, with a first message that lost its role,
    the later `using_session` spans without `session.id`; and the limit was the SDK's default except where set."""
    for name in SCENARIOS:
        want = truth(DATA, name)
        assert want["attribute_limit"] == (24 if name == "oi-cut-limit" else 128)
        docs = [json.loads(line) for line in (DATA / f"{name}.jsonl").read_text().splitlines()]
        spans = [s for d in docs for rs in d["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
        cut = [s for s in spans if s.get("droppedAttributesCount")]
        assert len(cut) == want["lossy_spans"] and all(len(s["attributes"]) == want["attribute_limit"] for s in cut)
        keys = [{a["key"] for a in s["attributes"]} for s in cut]
        assert not any("input.value" in k for k in keys)
        first = [min((k for k in ks if k.startswith("llm.input_messages.")), key=lambda k: int(k.split(".")[2])) for ks in keys]
        assert any(not f.endswith(".message.role") for f in first)  # a message cut in the middle
        if name == "oi-cut-session":
            assert not any("session.id" in k for k in keys[-4:])


@pytest.mark.parametrize("name", SCENARIOS)
def test_one_warning_per_file_says_what_was_lost_and_how_to_keep_it(name: str, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / f"{name}.jsonl"  # (a file of its own: the warning is said once per file in a process)
    shutil.copy(DATA / f"{name}.jsonl", path)
    want = truth(DATA, name)
    with caplog.at_level(logging.WARNING):
        read(path)
        read(path)
    said = [r.getMessage() for r in caplog.records if "limit on attributes per span" in r.getMessage()]
    assert len(said) == 1, said
    assert str(path) in said[0]
    assert f"{want['lossy_spans']} span(s) lost {want['dropped_attributes']} attribute(s)" in said[0]
    assert "`input.value`" in said[0] and "the first input messages of" in said[0]
    assert ("`session.id`" in said[0]) == (name == "oi-cut-session")
    assert "OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT=10000" in said[0] and "SpanLimits" in said[0]
    assert not any("trimmed history" in r.getMessage() or "kept as conversations of their own" in r.getMessage() for r in caplog.records)


def test_a_jaeger_export_gives_the_count_its_tag_carries() -> None:
    """Jaeger keeps `droppedAttributesCount` as the tag `otel.dropped_attributes_count`: it is the span's count, not an attribute."""
    doc = {"data": [{"traceID": "t1", "processes": {"p1": {"serviceName": "svc"}}, "spans": [
        {"traceID": "t1", "spanID": "s1", "operationName": "ChatCompletion", "processID": "p1", "startTime": 1, "duration": 2,
         "tags": [{"key": "otel.dropped_attributes_count", "type": "int64", "value": 48}, {"key": "llm.model_name", "type": "string", "value": "m"}]}]}]}
    collector = Collector()
    collector.add(from_jaeger(doc), "jaeger.json", 1)
    [span] = collector.spans["t1"]
    assert span.dropped_attributes == 48 and "otel.dropped_attributes_count" not in span.attrs


# --- re-recorded now by the installed libraries ------------------------------------------------------------------
@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, subprocess.Popen[str]]]:
    """Every scenario re-recorded at once into a temporary folder: (folder, scenario -> its process)."""
    out = tmp_path_factory.mktemp("dropped-attributes-live")
    env = {**os.environ, "RECORD_IN_PROCESS": "1"}  # the scenario runs in this process of its own (`common.record_each_in_subprocess`)
    if not all(installed(m) for m in NEEDS):
        return out, {}
    return out, {name: _forkserver.popen([sys.executable, str(RECORD), str(out), name], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
                 for name in LIVE}


@pytest.mark.parametrize("name", LIVE)
def test_live_recording_reads_whole(live: tuple[Path, dict[str, subprocess.Popen[str]]], name: str) -> None:
    out = recorded(live, name, NEEDS)
    want = truth(out, name)
    assert want["conversations"] == truth(DATA, name)["conversations"]  # the application did and got the same
    assert want["lossy_spans"] > 0  # and its spans still pass the limit
    check(read(out / f"{name}.jsonl"), want)
