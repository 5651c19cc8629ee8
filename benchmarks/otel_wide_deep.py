"""Reading format `otel` on wide and deep traces: seconds of `tracejudge extract`, one process per export.

Two shapes, each at 1,000, 5,000 and 20,000:

- fan-out: one agent run whose model reply asks for N parallel tool calls, each answered by its own tool span, then
  a final reply (N + 3 spans, one case of N calls);
- depth: an agent span above a chain of N nested wrapper spans of no known convention, a model request at the bottom
  (N + 2 spans, one case of one step).

Reading either used to go through every span per span (pairing each tool span with every asked call; walking each
span's ancestors or the chain below it), so seconds grew with N squared. Usage:

    python benchmarks/otel_wide_deep.py [--sizes 1000,5000,20000] [--tracejudge PATH]

`--tracejudge`: the command to time (default: the one beside this Python). Prints a table: shape, N, seconds, and
what the case read (calls for fan-out, steps for depth) as a check that the run read the whole export.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

T0 = 1_796_660_926_000_000_000


def _attrs(values: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": k, "value": {"intValue": str(v)} if isinstance(v, int) else {"stringValue": v}} for k, v in values.items()]


def _span(trace: str, sid: int, parent: int | None, name: str, attrs: dict[str, Any], t: int, dur: int = 1000) -> dict[str, Any]:
    out = {"traceId": trace, "spanId": format(sid, "016x"), "name": name, "kind": 1, "startTimeUnixNano": str(T0 + t),
           "endTimeUnixNano": str(T0 + t + dur), "attributes": _attrs(attrs)}
    if parent is not None:
        out["parentSpanId"] = format(parent, "016x")
    return out


def _chat(trace: str, sid: int, parent: int, question: str, answer: str, calls: list[tuple[str, dict[str, Any]]], t: int) -> dict[str, Any]:
    parts = ([{"type": "text", "content": answer}] if answer else []) + [
        {"type": "tool_call", "id": cid, "name": "get_weather", "arguments": args} for cid, args in calls]
    return _span(trace, sid, parent, "chat gpt", {
        "gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": question}]}]),
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": parts, "finish_reason": "stop"}]),
        "gen_ai.usage.input_tokens": 10, "gen_ai.usage.output_tokens": 5}, t)


def _agent(trace: str, conversation: str) -> dict[str, Any]:
    return _span(trace, 1, None, "invoke_agent a", {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a",
                                                    "gen_ai.conversation.id": conversation}, 0, dur=10**12)


def _export(spans: list[dict[str, Any]]) -> str:
    return json.dumps({"resourceSpans": [{"resource": {"attributes": _attrs({"service.name": "bench"})},
                                          "scopeSpans": [{"scope": {"name": "bench"}, "spans": spans}]}]}) + "\n"


def fan_out(n: int) -> str:
    """One OTLP/JSON export line: a reply asking for `n` parallel `get_weather` calls, each with its tool span."""
    trace = format(77, "032x")
    calls = [(f"call_{i}", {"city": f"c{i}"}) for i in range(n)]
    spans = [_agent(trace, "fan"), _chat(trace, 2, 1, "many", "", calls, t=10)]
    spans += [_span(trace, 10 + i, 1, "execute_tool get_weather", {
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather", "gen_ai.tool.call.id": cid,
        "gen_ai.tool.call.arguments": json.dumps(args), "gen_ai.tool.call.result": json.dumps({"t": i})}, t=20 + i)
        for i, (cid, args) in enumerate(calls)]
    spans.append(_chat(trace, 5, 1, "many", "done", [], t=30 + n))
    return _export(spans)


def deep(n: int) -> str:
    """One OTLP/JSON export line: an agent span, a chain of `n` nested wrapper spans under it, a request at the bottom."""
    trace = format(78, "032x")
    spans = [_agent(trace, "deep")]
    spans += [_span(trace, 100 + i, 100 + i - 1 if i else 1, "wrapper", {"x": i}, t=i) for i in range(n)]
    spans.append(_chat(trace, 2, 100 + n - 1 if n else 1, "deep q", "deep a", [], t=n + 5))
    return _export(spans)


def _read(command: str, export: str, work: Path) -> tuple[float, dict[str, Any]]:
    """Seconds `command extract` took on `export` (a process of its own), and the one case it wrote."""
    (work / "t.jsonl").write_text(export)
    (work / "c.yaml").write_text("dataset: {path: t.jsonl, format: otel}\nmetrics: [{type: MaxToolCalls, max_calls: 10}]\n")
    started = time.perf_counter()
    proc = subprocess.run([command, "extract", "c.yaml", "-o", "out.jsonl", "--force"], cwd=work, capture_output=True, text=True)
    took = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"extract failed ({proc.returncode}): {proc.stderr}")
    return took, json.loads((work / "out.jsonl").read_text().splitlines()[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,5000,20000")
    parser.add_argument("--tracejudge", default=str(Path(sys.executable).with_name("tracejudge")))
    args = parser.parse_args()
    command = args.tracejudge if Path(args.tracejudge).exists() else (shutil.which("tracejudge") or "tracejudge")
    print(f"{'shape':8} {'N':>7} {'seconds':>8}  read")
    with tempfile.TemporaryDirectory() as tmp:
        for n in (int(s) for s in args.sizes.split(",")):
            took, case = _read(command, fan_out(n), Path(tmp))
            calls = sum(len(s.get("tool_calls") or []) for s in case["trace"]["steps"])
            print(f"{'fan-out':8} {n:>7} {took:>8.2f}  {calls} calls", flush=True)
            took, case = _read(command, deep(n), Path(tmp))
            print(f"{'depth':8} {n:>7} {took:>8.2f}  {len(case['trace']['steps'])} steps", flush=True)


if __name__ == "__main__":
    main()
