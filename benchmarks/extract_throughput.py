"""Extraction throughput and peak memory per input format, on the real data.

Each format runs in its own subprocess (so peak RSS is that format's alone)
and reads its dataset through the format's own reader and `extract_record`,
again and again, until at least `--records` records (default 50,000) have
been extracted. The datasets come from `../shared/data/` seen from the
repository root:

- `otel`: the OTLP/JSON traces of `otel_genai/` (the directory, truth files
  excluded; one record = one conversation);
- `openai-messages`: the τ²-bench simulations (agent side, Chat Completions
  shape) and the τ-bench trajectories (`traj` is already OpenAI chat format);
- `anthropic-messages`: the same τ-bench trajectories converted to
  `tool_use` / `tool_result` blocks;
- `multivon`: the τ-bench trajectories as multivon `EvalCase` lines;
- `json-path`: the τ²-bench simulations as they are, mapped by paths;
- `tau-bench`: the τ-bench trajectory file read by its own adapter, for reference.

Usage: `python benchmarks/extract_throughput.py [--records N] [--formats a,b]`.
Prints a table: records, seconds, records/s, peak RSS (MiB) and the RSS
before the loop (imports and data preparation included).
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _procs import guarded, timed  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
TAU2 = sorted((DATA / "tau2_bench").rglob("*_1trials.json"))
TAU = DATA / "tau_bench" / "historical_trajectories" / "gpt-4o-airline.json"
FORMATS = ["otel", "openai-messages", "anthropic-messages", "multivon", "json-path", "tau-bench"]


# ---------------------------------------------------------------------------- data preparation


def _tau2_openai(sim: dict[str, Any]) -> dict[str, Any]:
    msgs = []
    for m in sim["messages"]:
        if m["role"] == "assistant":
            msg: dict[str, Any] = {"role": "assistant", "content": m.get("content")}
            if m.get("tool_calls"):
                msg["tool_calls"] = [{"id": t["id"], "type": "function", "function": {"name": t["name"], "arguments": json.dumps(t["arguments"])}} for t in m["tool_calls"]]
            msgs.append(msg)
        elif m["role"] == "tool" and m.get("requestor", "assistant") == "assistant":
            msgs.append({"role": "tool", "tool_call_id": m["id"], "content": m["content"], "error": m.get("error", False)})
        elif m["role"] == "user" and m.get("content"):
            msgs.append({"role": "user", "content": m["content"]})
    return {"id": sim["id"], "messages": msgs}


def _tau_anthropic(run: dict[str, Any]) -> dict[str, Any]:
    msgs: list[dict[str, Any]] = []
    system = None
    for m in run["traj"]:
        if m["role"] == "system":
            system = m["content"]
        elif m["role"] == "assistant":
            blocks: list[dict[str, Any]] = [{"type": "text", "text": m["content"]}] if m.get("content") else []
            for t in m.get("tool_calls") or []:
                blocks.append({"type": "tool_use", "id": t["id"], "name": t["function"]["name"], "input": json.loads(t["function"]["arguments"])})
            msgs.append({"role": "assistant", "content": blocks})
        elif m["role"] == "tool":
            block = {"type": "tool_result", "tool_use_id": m["tool_call_id"], "content": m["content"], "is_error": str(m["content"]).startswith("Error:")}
            if msgs and msgs[-1]["role"] == "user" and isinstance(msgs[-1]["content"], list):
                msgs[-1]["content"].append(block)
            else:
                msgs.append({"role": "user", "content": [block]})
        else:
            msgs.append({"role": "user", "content": m["content"]})
    return {"id": f"{run['task_id']}-{run['trial']}", "system": system, "messages": msgs}


def _tau_multivon(run: dict[str, Any]) -> dict[str, Any]:
    results = {m["tool_call_id"]: m["content"] for m in run["traj"] if m["role"] == "tool"}
    steps = []
    for m in run["traj"]:
        if m["role"] != "assistant":
            continue
        calls = [{"name": t["function"]["name"], "arguments": json.loads(t["function"]["arguments"]), "result": results.get(t["id"])} for t in m.get("tool_calls") or []]
        text = m.get("content")
        # (multivon's AgentStep holds text or nothing: a null thought or output is a record its loader refuses)
        steps.append({"tool_calls": calls, **({} if text is None else {"thought" if calls else "output": text})})
    user = next((m["content"] for m in run["traj"] if m["role"] == "user"), None)
    return {"id": f"{run['task_id']}-{run['trial']}", "input": user, "agent_trace": steps,
            "expected_tool_calls": [a["name"] for a in run["info"]["task"]["actions"]]}


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    with open(path, "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")
    return path


def prepare(fmt: str, tmp: Path) -> dict[str, Any]:
    """The dataset section (path, format, options) of `fmt` on the real data, files written to `tmp`."""
    if fmt == "otel":
        return {"path": DATA / "otel_genai", "format": "otel", "options": {"exclude": ["*.truth.json"]}}
    if fmt == "tau-bench":
        return {"path": TAU, "format": "tau-bench"}
    sims = [s for f in TAU2 for s in json.loads(f.read_text())["simulations"]]
    runs = json.loads(TAU.read_text())
    if fmt == "openai-messages":
        rows = [_tau2_openai(s) for s in sims] + [{"id": f"{r['task_id']}-{r['trial']}", "messages": r["traj"]} for r in runs]
        return {"path": _write_jsonl(tmp / "openai.jsonl", rows), "format": fmt}
    if fmt == "anthropic-messages":
        return {"path": _write_jsonl(tmp / "anthropic.jsonl", [_tau_anthropic(r) for r in runs]), "format": fmt}
    if fmt == "multivon":
        return {"path": _write_jsonl(tmp / "multivon.jsonl", [_tau_multivon(r) for r in runs]), "format": fmt}
    if fmt == "json-path":
        options = {"id": "id", "input": "messages.1.content", "tool_calls": "messages.*.tool_calls", "output": "messages.-1.content", "tags": "tags"}
        return {"path": _write_jsonl(tmp / "tau2.jsonl", sims), "format": fmt, "options": options}
    raise SystemExit(f"unknown format {fmt}")


# ---------------------------------------------------------------------------- measuring (child)


def measure(fmt_name: str, min_records: int) -> dict[str, Any]:
    from tracejudge.core import registry
    from tracejudge.core.config import DatasetConfig
    from tracejudge.core.records import Case
    from tracejudge.stages.extract import extract_record

    with tempfile.TemporaryDirectory() as tmp:
        ds = DatasetConfig(**prepare(fmt_name, Path(tmp)))
        fmt = registry.format_for(ds.format)
        ctx = fmt.prepare(ds)
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        records = invalid = passes = 0
        t0 = time.perf_counter()
        while records < min_records:
            passes += 1
            for raw in fmt.read(ds):
                got = extract_record(raw, fmt, ctx)
                records += 1
                invalid += not isinstance(got, Case)
        elapsed = time.perf_counter() - t0
    return {"format": fmt_name, "records": records, "invalid": invalid, "passes": passes, "seconds": elapsed,
            "rate": records / elapsed, "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "rss_before_mib": rss_before}


# ---------------------------------------------------------------------------- driver (parent)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=50_000)
    ap.add_argument("--formats", default=",".join(FORMATS))
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(measure(args.child, args.records)))
        return
    rows: list[dict] = []

    def measure_all() -> None:
        failed = []
        for fmt in args.formats.split(","):
            done = timed([sys.executable, __file__, "--child", fmt, "--records", str(args.records)], cwd=ROOT)
            if done.returncode != 0:
                # One format failing does not stop the others; the run still ends in failure.
                print(f"{fmt}: failed\n{done.stderr}", file=sys.stderr)
                failed.append(fmt)
                continue
            rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
        if failed:
            raise RuntimeError(f"format(s) failed: {', '.join(failed)} (their errors are above)")

    def report() -> None:
        print("| format | records | passes over the data | invalid | seconds | records/s | peak RSS MiB | RSS before loop MiB |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for r in rows:
            print(f"| {r['format']} | {r['records']:,} | {r['passes']:,} | {r['invalid']} | {r['seconds']:.1f} | {r['rate']:,.0f} | {r['peak_rss_mib']:.0f} | {r['rss_before_mib']:.0f} |")

    guarded(measure_all, report)

if __name__ == "__main__":
    main()
