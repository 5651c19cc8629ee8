"""A span delivered twice is read once, in every span-based format.

OTLP exporters and the Agents SDK's `BackendSpanExporter` retry, and exports
get concatenated or copied: the same span (same trace id and span id) then
arrives twice. Each test doubles a real recording of `tests/data/frameworks/`
the way that happens and expects the recording's own calls and usage
(`sequence`: `get_weather`, then `convert_temperature`; 330 input and 63
output tokens over 3 requests).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
from tracejudge.core import registry
from tracejudge.core.config import DatasetConfig, validate_config
from tracejudge.core.records import Case
from tracejudge.engine.runner import run
from tracejudge.stages.extract import extract_record

FRAMEWORKS = Path(__file__).parent / "data" / "frameworks"
CALLS = ["call_sequ_000", "call_sequ_010"]


def extract(path: Path, fmt: str, **options: Any) -> list[Any]:
    """Every case (or `(id, ErrorInfo)`) format `fmt` makes of `path`."""
    f = registry.format_for(fmt)
    ds = DatasetConfig(path=path, format=fmt, options=options)
    ctx = f.prepare(ds) if f.prepare else None
    return [extract_record(raw, f, ctx) for raw in f.read(ds)]


def only(cases: list[Any]) -> Case:
    assert len(cases) == 1 and isinstance(cases[0], Case), cases
    return cases[0]


def assert_sequence(case: Case) -> None:
    """The `sequence` recording read once: its two calls and its usage."""
    assert [c.name for c in case.trace.tool_calls()] == ["get_weather", "convert_temperature"]
    usage = case.trace.usage
    assert (usage.input_tokens, usage.output_tokens, usage.requests) == (330, 63, 3)


def read_twice(tmp_path: Path, src: Path, fmt: str) -> Case:
    """The one case of `src` written twice over (an exporter's retry), read as `fmt`; its calls and usage are the recording's."""
    path = tmp_path / f"twice{src.suffix}"
    path.write_text(src.read_text() * 2)
    case = only(extract(path, fmt))
    assert_sequence(case)
    assert [c.id for c in case.trace.tool_calls()] == CALLS
    return case


def lines(path: Path) -> list[str]:
    return [line for line in path.read_text().splitlines() if line.strip()]


def test_otlp_export_read_twice_counts_each_span_once(tmp_path: Path) -> None:
    case = read_twice(tmp_path, FRAMEWORKS / "openinference-openai-agents" / "sequence.jsonl", "otel")
    assert "duplicates" not in case.metadata["otel"]  # identical copies are dropped without a word


def test_otlp_same_span_ids_in_another_trace_are_other_spans(tmp_path: Path) -> None:
    src = FRAMEWORKS / "openinference-openai-agents" / "sequence.jsonl"
    text = src.read_text()
    trace_id = json.loads(lines(src)[0])["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"]
    other = text.replace(trace_id, "f" * len(trace_id))
    path = tmp_path / "two.jsonl"
    path.write_text(text + text + other)
    cases = extract(path, "otel", group_by="trace")
    assert len(cases) == 2
    for case in cases:
        assert isinstance(case, Case), case
        assert_sequence(case)


def test_otel_folder_with_a_copied_file_reads_the_spans_once(tmp_path: Path) -> None:
    src = FRAMEWORKS / "openinference-openai" / "sequence.jsonl"
    (tmp_path / "a.jsonl").write_text(src.read_text())
    (tmp_path / "b.jsonl").write_text(src.read_text())
    case = only(extract(tmp_path, "otel", error_prefixes=["Error:"]))
    assert_sequence(case)


def _with_span(line: str, edit: Any) -> str:
    """The export line with `edit(span)` applied to every span that records a prompt token count of 100."""
    doc = json.loads(line)
    for rs in doc["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for span in ss["spans"]:
                if any(a["key"] == "llm.token_count.prompt" and a["value"].get("intValue") == "100" for a in span["attributes"]):
                    edit(span)
    return json.dumps(doc)


def test_otlp_copies_that_differ_keep_the_last_ended_one_and_say_so(tmp_path: Path) -> None:
    src = lines(FRAMEWORKS / "openinference-openai" / "sequence.jsonl")
    target = next(i for i, line in enumerate(src) if '"llm.token_count.prompt", "value": {"intValue": "100"}' in line)
    span_id = json.loads(src[target])["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["spanId"]

    def recount(span: dict[str, Any]) -> None:  # the copy sent again says 999 prompt tokens
        for a in span["attributes"]:
            if a["key"] == "llm.token_count.prompt":
                a["value"] = {"intValue": "999"}

    def unended(span: dict[str, Any]) -> None:  # a copy sent before the span ended: never the one read
        span.pop("endTimeUnixNano")
        span["attributes"] = [a for a in span["attributes"] if not a["key"].startswith("llm.token_count")]

    path = tmp_path / "retried.jsonl"
    path.write_text("\n".join([*src, _with_span(src[target], recount), _with_span(src[target], unended)]) + "\n")
    case = only(extract(path, "otel", error_prefixes=["Error:"]))
    assert case.trace.usage.input_tokens == 330 - 100 + 999
    assert case.trace.usage.requests == 3
    assert len(case.trace.tool_calls()) == 2
    assert case.metadata["otel"]["duplicates"] == [span_id]


def test_agents_sdk_batch_posted_twice_counts_each_span_once(tmp_path: Path) -> None:
    case = read_twice(tmp_path, FRAMEWORKS / "openai-agents-export" / "sequence.batch.jsonl", "openai-agents")
    assert "duplicates" not in case.metadata["openai_agents"]


def test_agents_sdk_span_resent_with_other_usage_keeps_the_later_copy(tmp_path: Path) -> None:
    batch = json.loads(lines(FRAMEWORKS / "openai-agents-export" / "sequence.batch.jsonl")[0])
    first = next(item for item in batch["data"] if item.get("span_data", {}).get("type") == "generation")
    resent = json.loads(json.dumps(first))
    resent["span_data"]["usage"]["input_tokens"] = 999
    path = tmp_path / "resent.jsonl"
    path.write_text(json.dumps(batch) + "\n" + json.dumps({"data": [resent]}) + "\n")
    case = only(extract(path, "openai-agents"))
    assert case.trace.usage.input_tokens == 330 - first["span_data"]["usage"]["input_tokens"] + 999
    assert case.trace.usage.requests == 3
    assert case.metadata["openai_agents"]["duplicates"] == [first["id"]]


def test_agents_sdk_trace_line_sent_twice_is_read_once(tmp_path: Path) -> None:
    case = read_twice(tmp_path, FRAMEWORKS / "openai-agents-export" / "sequence.jsonl", "openai-agents")
    assert "duplicates" not in case.metadata["openai_agents"]


def test_agents_sdk_trace_line_resent_scores_once_and_another_trace_under_its_id_is_a_duplicate(tmp_path: Path) -> None:
    # Through a whole run: the exporter's retry was a second case under the trace's id, `invalid_input` as a duplicate id.
    line = lines(FRAMEWORKS / "openai-agents-export" / "sequence.jsonl")[0]
    other = json.loads(line)
    other["trace"]["workflow_name"] = "another workflow"
    path = tmp_path / "traces.jsonl"
    path.write_text(f"{line}\n{line}\n{json.dumps(other)}\n")
    config = validate_config({"dataset": {"path": str(path), "format": "openai-agents"}, "metrics": [{"type": "MaxToolCalls", "max_calls": 5}],
                              "run": {"dir": str(tmp_path / "run")}})
    outcome = anyio.run(run, config)
    results = [json.loads(x) for x in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    tid = other["trace"]["id"]
    assert [(r["case_id"], r["status"]) for r in results] == [(tid, "ok"), (f"{tid}@{path}:3", "invalid_input")], results
    assert f"duplicate case id '{tid}'" in results[1]["error"]["message"]
    assert outcome.summary["status"] == {"ok": 1, "invalid_input": 1}


def test_langfuse_observations_listed_twice_count_once(tmp_path: Path) -> None:
    page = json.loads((FRAMEWORKS / "langfuse-api" / "sequence.v2.json").read_text())
    page["data"] = page["data"] * 2
    trace = json.loads((FRAMEWORKS / "langfuse-api" / "sequence.json").read_text())
    trace["observations"] = trace["observations"] * 2
    path = tmp_path / "dup.jsonl"
    path.write_text(json.dumps(page) + "\n" + json.dumps(trace) + "\n")
    # (one trace in its two API shapes: read each alone; in one conversation the second copy of a trace id is refused)
    cases = extract(path, "langfuse", group_by="trace")
    assert len(cases) == 2
    for case in cases:
        assert isinstance(case, Case), case
        assert_sequence(case)
        assert [c.id for c in case.trace.tool_calls()] == CALLS
        assert "duplicates" not in case.metadata["langfuse"]


def test_mlflow_spans_listed_twice_count_once(tmp_path: Path) -> None:
    trace = json.loads((FRAMEWORKS / "mlflow" / "sequence.mlflow.jsonl").read_text())
    trace["data"]["spans"] = trace["data"]["spans"] * 2
    path = tmp_path / "dup.jsonl"
    path.write_text(json.dumps(trace) + "\n")
    case = only(extract(path, "mlflow"))
    assert_sequence(case)
    assert "duplicates" not in case.metadata["mlflow"]
