"""Token counts that a model request did not record stay unknown (`None`): never 0, nor the other requests' sum.

A trace without token attributes (an instrumentation that drops them, a
provider that returns no usage) read as 0 tokens makes `TokenUsage` pass with
"0 tokens". Each test strips the counts from a real recording of
`tests/data/frameworks/` (`sequence`: 330 input and 63 output tokens over 3
requests, 100 and 20 of them in the first request).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tracejudge.core import registry
from tracejudge.core.config import DatasetConfig
from tracejudge.core.records import Case
from tracejudge.stages.extract import extract_record
from tracejudge.stages.score import TokenUsage

FRAMEWORKS = Path(__file__).parent / "data" / "frameworks"


def extract_one(path: Path, fmt: str) -> Case:
    """The one case format `fmt` makes of `path`."""
    f = registry.format_for(fmt)
    ds = DatasetConfig(path=path, format=fmt, options={})
    ctx = f.prepare(ds) if f.prepare else None
    got = [extract_record(raw, f, ctx) for raw in f.read(ds)]
    assert len(got) == 1 and isinstance(got[0], Case), got
    return got[0]


def otlp_without(src: Path, dest: Path, drop: Callable[[dict[str, Any]], bool]) -> Path:
    """`src` (OTLP/JSON lines) written to `dest` with every span attribute `drop` selects removed (spans in file order)."""
    out = []
    for line in src.read_text().splitlines():
        doc = json.loads(line)
        for rs in doc["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for span in ss["spans"]:
                    span["attributes"] = [a for a in span["attributes"] if not drop(a)]
        out.append(json.dumps(doc))
    dest.write_text("\n".join(out) + "\n")
    return dest


def test_openinference_trace_without_token_counts_has_unknown_usage(tmp_path: Path) -> None:
    path = otlp_without(FRAMEWORKS / "openinference-openai" / "sequence.jsonl", tmp_path / "notok.jsonl",
                        lambda a: a["key"].startswith("llm.token_count"))
    case = extract_one(path, "otel")
    usage = case.trace.usage
    assert (usage.input_tokens, usage.output_tokens, usage.requests) == (None, None, 3)
    assert case.metadata["otel"]["turns"][0]["usage"] == {"input_tokens": None, "output_tokens": None, "requests": 3, "requests_without_usage": 3}
    assert case.metadata["requests_without_usage"] == 3
    score = TokenUsage(max_tokens=10).evaluate(case)
    assert score.value is None


def test_traceloop_trace_without_usage_attributes_has_unknown_usage(tmp_path: Path) -> None:
    path = otlp_without(FRAMEWORKS / "traceloop-openai" / "sequence.jsonl", tmp_path / "notok.jsonl",
                        lambda a: a["key"].startswith("gen_ai.usage."))
    usage = extract_one(path, "otel").trace.usage
    assert (usage.input_tokens, usage.output_tokens, usage.requests) == (None, None, 3)


def test_counts_some_requests_did_not_record_are_unknown_not_the_others_sum(tmp_path: Path) -> None:
    first = {"done": False}

    def drop(a: dict[str, Any]) -> bool:  # every completion count, and the first request's prompt count (100)
        if a["key"] == "llm.token_count.prompt" and a["value"].get("intValue") == "100" and not first["done"]:
            first["done"] = True
            return True
        return a["key"] == "llm.token_count.completion"

    path = otlp_without(FRAMEWORKS / "openinference-openai" / "sequence.jsonl", tmp_path / "some.jsonl", drop)
    assert first["done"]
    case = extract_one(path, "otel")
    usage = case.trace.usage
    # 230 is the input of the two requests that recorded it: a part of the total, never the total
    assert (usage.input_tokens, usage.output_tokens, usage.requests) == (None, None, 3)
    assert case.metadata["requests_without_usage"] == 3
    assert TokenUsage(max_tokens=1000).evaluate(case).value is None


def test_agents_sdk_generations_without_output_counts_keep_output_unknown(tmp_path: Path) -> None:
    batch = json.loads((FRAMEWORKS / "openai-agents-export" / "sequence.batch.jsonl").read_text())
    for item in batch["data"]:
        usage = (item.get("span_data") or {}).get("usage")
        if isinstance(usage, dict):
            usage.pop("output_tokens", None)
    path = tmp_path / "noout.jsonl"
    path.write_text(json.dumps(batch) + "\n")
    usage = extract_one(path, "openai-agents").trace.usage
    assert (usage.input_tokens, usage.output_tokens, usage.requests) == (330, None, 3)
