"""A turn's agents (`metadata.otel.turns[].agents`) of an OpenAI Agents SDK run: the agents that ran, whoever recorded it.

The recordings in `tests/data` that hold the same runs twice or more — the SDK's own export (format `openai-agents`)
beside openinference-instrumentation-openai-agents' spans, OpenLLMetry's or MLflow's `mlflow.openai.autolog()`
(formats `otel` and `mlflow`), each recorded at once against the loopback server by the recorders under
`tests/frameworks` — must list the agents the export lists. The export's `agent` spans are the agents; the other
readings listed what is no agent too: OpenInference's span of the SDK's trace (`Agent workflow`, or the name given to
`with trace("Refunds"):`), the nested run's span of an agent called `as_tool` (also `Agent workflow`), and MLflow's
span of `Runner.run` (`AgentRunner.run`) and of the SDK's `trace("x")`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from framework_truth import turn_agents

DATA = Path(__file__).parent / "data"
# a reading's file name beside the export's, by how the recorders name them: `export-X.jsonl` / `X.export.jsonl`
_PREFIXED = re.compile(r"(oi|tl|mlflow)-(.+?)(\.mlflow|\.otlp)?\.jsonl")
_SUFFIXED = re.compile(r"(.+)\.(oi)\.jsonl")


def _pairs() -> list[tuple[Path, str, Path]]:
    """Every `(reading, its format, the export of the same runs)` in `tests/data`."""
    out = []
    for path in sorted(DATA.rglob("*.jsonl")):
        if path.parent.name == "openinference-openai-agents":
            out.append((path, "otel", DATA / "frameworks" / "openai-agents-export" / path.name))
            continue
        if (m := _PREFIXED.fullmatch(path.name)) is not None:
            export = path.parent / f"export-{m.group(2)}.jsonl"
            fmt = "mlflow" if m.group(3) == ".mlflow" else "otel"
        elif (m := _SUFFIXED.fullmatch(path.name)) is not None:
            export, fmt = path.parent / f"{m.group(1)}.export.jsonl", "otel"
        else:
            continue
        if export.exists():
            out.append((path, fmt, export))
    return out


PAIRS = _pairs()


def test_the_recordings_of_the_same_runs_are_all_found() -> None:
    # (OpenInference 75, OpenLLMetry 12, MLflow 4 in either format: a pattern that stopped matching would test nothing)
    assert len(PAIRS) == 95
    assert {p.parent.name for p, _, _ in PAIRS} >= {"agents-approval", "agents-as-tool-faults", "agents-handoff-faults", "concurrent-runs",
                                                     "openinference-openai-agents", "subagents-streams"}


@pytest.mark.parametrize(("path", "fmt", "export"), PAIRS, ids=[str(p.relative_to(DATA)) for p, _, _ in PAIRS])
def test_a_turn_lists_the_agents_the_export_lists(path: Path, fmt: str, export: Path) -> None:
    """Each case lists the export's agents, turn by turn; a conversation of `Runner.run`s in one `trace()` that
    OpenInference reads as one turn (`frameworks/.../multiturn`: each run's request replays the one before, so no run
    is one of its own, `concurrent`) lists the agents of the export's turns (it listed `Conversation`, the trace's name)."""
    got, want = turn_agents(path, fmt), turn_agents(export, "openai-agents")
    assert len(got) == len(want)
    for turns, wanted in zip(got, want, strict=True):
        if len(turns) == len(wanted):
            assert turns == wanted
        else:
            assert sorted({a for t in turns for a in t}) == sorted({a for t in wanted for a in t})


def _first_run_only(path: Path, out: Path) -> Path:
    """`path` (`two_runs`: two `Runner.run`s in one `trace("Two tasks")`, under MLflow) with its second run's spans
    cut: the `AgentRunner.run` and `Agent workflow` spans under the trace's span that started last, and all under them."""
    record: dict[str, Any] = json.loads(path.read_text())
    if "resourceSpans" in record:  # OTLP JSON: the spans by scope
        lists = [scope["spans"] for rs in record["resourceSpans"] for scope in rs["scopeSpans"]]
        key, parent_key, start = "spanId", "parentSpanId", "startTimeUnixNano"
    else:  # `Trace.to_json()`
        lists, key, parent_key, start = [record["data"]["spans"]], "span_id", "parent_span_id", "start_time_unix_nano"
    spans = [s for spans in lists for s in spans]
    (root,) = [s for s in spans if s["name"] == "Two tasks"]
    second = sorted((s for s in spans if s.get(parent_key) == root[key]), key=lambda s: int(s[start]))[2:]
    assert sorted(s["name"] for s in second) == ["Agent workflow", "AgentRunner.run"]
    cut = {s[key] for s in second}
    while True:
        more = {s[key] for s in spans if s.get(parent_key) in cut} - cut
        if not more:
            break
        cut |= more
    for spans in lists:
        spans[:] = [s for s in spans if s[key] not in cut]
    out.write_text(json.dumps(record) + "\n")
    return out


@pytest.mark.parametrize(("fmt", "ext"), [("mlflow", "mlflow"), ("otel", "otlp")])
def test_one_run_in_a_trace_under_mlflow_lists_its_agent_only(tmp_path: Path, fmt: str, ext: str) -> None:
    """One `Runner.run` in the SDK's `trace("Two tasks")` under `mlflow.openai.autolog()`: MLflow writes the trace as an
    `AGENT` span named `Two tasks` around the run (it listed `Two tasks` beside `Weather`)."""
    path = _first_run_only(DATA / "mlflow-agents-sdk" / f"two_runs.{ext}.jsonl", tmp_path / f"one_run.{ext}.jsonl")
    (turns,) = turn_agents(path, fmt)
    assert turns == [["Weather"]]
