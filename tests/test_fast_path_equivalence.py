"""The per-case path (decode, extract, the six deterministic checks, what workers send back) keeps every
result line and summary figure it gave before it was made faster.

The 200 real GPT-4o τ-bench airline runs are scored with the benchmark's six checks
(`benchmarks/pipeline_throughput.py`) plus the demo's breakdown by reward, twice: read as the
`tau-bench` format, and as native JSONL lines (what `tracejudge extract` writes) with malformed
lines mixed in, whose errors must keep their file, line and field. Each runs with `run.processes: 1`
(in-process) and `run.processes: 2` (every chunk in a worker). Results must equal the golden
`tests/data/fast_path_golden.json`, recorded from the code before the fast path, which holds no
data: per (case, trial, metric) a sha256 of the canonical JSON of what the result line holds for
it (per field too, so a mismatch names the field), and the summary's figures. Bootstrap interval
bounds are compared within `CI_TOLERANCE` (their resampling may change; their distribution may not).

Regenerate the golden (only when a change of results is intended, and say why in the commit):

    python tests/test_fast_path_equivalence.py --regenerate
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from helpers import DATA  # noqa: E402

TAU = DATA / "tau_bench"
GOLDEN = Path(__file__).resolve().parent / "data" / "fast_path_golden.json"
CI_TOLERANCE = 0.03  # absolute, on a bound of a 95% bootstrap interval of a mean in [0, 1]

METRICS = """\
metrics:
  - type: ToolCalls
    name: writes_exact
    arguments: exact
    exclude_tools: ["get_*", "search_*", "list_*", "calculate", "think", "transfer_*"]
    include_failed: false
  - {type: TrajectoryMatch, order: in_order}
  - {type: ToolCorrectness, allow_extra: true}
  - {type: MaxToolCalls, max_calls: 20}
  - {type: MaxModelRequests, max_requests: 30}
  - {type: Contains, value: reservation}
aggregate: {group_by: [reward], seed: 0}
"""

# Malformed native lines, each one `invalid_input` naming its line (and field where there is one),
# and lines that score but take other branches (a case's own metric spec, no expectation, no trace).
BAD_LINES: list[bytes] = [
    b'{"id": "bad-json", "trace": {"steps": [',
    b'{"id": "bad-unknown-field", "trace": {"steps": []}, "colour": "red"}',
    b'{"id": "bad-steps-type", "trace": {"steps": "none"}}',
    b'{"id": "bad-call-no-name", "trace": {"steps": [{"tool_calls": [{"arguments": {}}]}]}}',
    b'{"id": "bad-user-step", "trace": {"steps": [], "user_messages": [{"step": 3, "content": "hi"}]}}',
    b'[1, 2, 3]',
    b'{"id": "bad-utf8", "trace": {"output": "\xff\xfe"}}',
    b'{"id": 12345, "trace": {"steps": [{"tool_calls": [{"name": "book_reservation", "arguments": "{\\"a\\": 1}"}]}], '
    b'"output": "a reservation"}, "expected_tool_calls": [{"name": "book_reservation", "arguments": {"a": 1}}]}',
    b'{"id": "no-expectation", "trace": {"steps": [{"tool_calls": [{"name": "think", "arguments": "not json"}]}]}}',
    b'{"id": "own-metric", "trace": {"steps": [], "output": "x"}, "metrics": [{"type": "Contains", "value": "x"}, {"type": "NoSuch"}]}',
    b'{"id": "no-trace"}',
]


def _config(tmp: Path, name: str, dataset: str, processes: int) -> Path:
    path = tmp / f"{name}-p{processes}.yaml"
    path.write_text(f"{dataset}{METRICS}run: {{dir: {tmp / f'run-{name}-p{processes}'}, processes: {processes}}}\n")
    return path


def _native_dataset(tmp: Path) -> Path:
    """The 200 τ-bench runs as native lines (their own ids), malformed lines spread among them."""
    from tracejudge.stages.extract.tau_bench import adapt, load_tasks
    from tracejudge.stages.load import read_json_array

    tasks = load_tasks(TAU / "tasks" / "tasks_airline_test.json")
    lines = [adapt(r.payload, tasks).model_dump_json(exclude_defaults=True).encode() for r in
             read_json_array(TAU / "historical_trajectories" / "gpt-4o-airline.json")]
    for i, bad in enumerate(BAD_LINES):
        lines.insert(1 + i * 17, bad)
    path = tmp / "cases.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def _datasets(tmp: Path) -> dict[str, str]:
    return {
        "tau-bench": (f"dataset: {{path: {TAU / 'historical_trajectories' / 'gpt-4o-airline.json'}, format: tau-bench, "
                      f"tasks: {TAU / 'tasks' / 'tasks_airline_test.json'}}}\n"),
        "native": f"dataset: {{path: {_native_dataset(tmp)}, format: native}}\n",
    }


def _run(cfg_path: Path, tmp: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    from tracejudge.core.config import load_config
    from tracejudge.engine import runner

    cfg = load_config(cfg_path)
    out = anyio.run(runner.run, cfg)
    assert not out.interrupted
    text = (out.run_dir / "results.jsonl").read_text(encoding="utf-8").replace(str(tmp), "<tmp>")
    results = [json.loads(line) for line in text.splitlines()]
    for r in results:
        r.pop("duration_s")
    return results, out.summary


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()


def _sha(value: Any) -> str:
    return hashlib.sha256(_canonical(value)).hexdigest()


CASE_FIELDS = ("status", "tags", "metadata", "error")  # a result line's own fields; "-" stands for them as the metric


def digest(results: list[dict[str, Any]]) -> dict[str, str]:
    """`case|trial|metric` → `"SHA256 field:h,field:h"`: the sha256 of all it holds, then an 8-hex digest per
    field (only to name the one that changed)."""
    out: dict[str, str] = {}
    for r in results:
        parts = {"-": {k: r.get(k) for k in CASE_FIELDS}, **r["scores"]}
        for metric, fields in parts.items():
            key = f"{r['case_id']}|{r['trial']}|{metric}"
            assert key not in out, f"two result lines for {key}"
            out[key] = _sha(fields) + " " + ",".join(f"{f}:{_sha(v)[:8]}" for f, v in sorted(fields.items()))
    return out


SUMMARY_KEYS = ("results", "status", "trials", "metrics", "pass_at_k", "breakdowns", "aggregate", "verdict")


def figures(summary: dict[str, Any], tmp: Path) -> dict[str, Any]:
    """The summary's figures: everything but versions, hashes, timings and segments (the run's folder as `<tmp>`)."""
    return json.loads(_canonical({k: summary.get(k) for k in SUMMARY_KEYS}).decode().replace(str(tmp), "<tmp>"))


def compute(tmp: Path, processes: int) -> dict[str, Any]:
    """`{dataset: {"results": digest, "summary": figures}}` for one `run.processes`."""
    got: dict[str, Any] = {}
    for name, dataset in _datasets(tmp).items():
        results, summary = _run(_config(tmp, name, dataset, processes), tmp)
        order = _sha([f"{r['case_id']}|{r['trial']}" for r in results])  # the lines' order, which processes must keep too
        got[name] = {"results": digest(results), "summary": figures(summary, tmp), "order": order, "lines": results}
    return got


def _fields(entry: str) -> dict[str, str]:
    return dict(part.split(":", 1) for part in entry.split(" ", 1)[1].split(",") if part)


def _diff_results(where: str, want: dict[str, str], got: dict[str, str]) -> list[str]:
    problems = []
    for key in sorted(set(want) | set(got)):
        if key not in got or key not in want:
            problems.append(f"{where}: {key} {'missing' if key not in got else 'not in the golden'}")
        elif want[key].split(" ")[0] != got[key].split(" ")[0]:
            case, trial, metric = key.rsplit("|", 2)
            a, b = _fields(want[key]), _fields(got[key])
            fields = sorted(f for f in set(a) | set(b) if a.get(f) != b.get(f))
            problems.append(f"{where}: case {case!r} trial {trial} metric {metric!r}: field(s) {', '.join(fields) or '?'} changed")
    return problems


def _diff_figures(where: str, want: Any, got: Any) -> list[str]:
    if isinstance(want, dict) and isinstance(got, dict):
        return [p for k in sorted(set(want) | set(got)) for p in _diff_figures(f"{where}.{k}", want.get(k), got.get(k))]
    if where.endswith(".ci95") and isinstance(want, list) and isinstance(got, list) and len(want) == len(got) == 2:
        if all(isinstance(a, (int, float)) and isinstance(b, (int, float)) and abs(a - b) <= CI_TOLERANCE for a, b in zip(want, got)):
            return []
    return [] if want == got else [f"{where}: {want!r} in the golden, now {got!r}"]


@pytest.fixture(scope="module")
def golden() -> dict[str, Any]:
    """The golden per dataset; the native dataset's results are the τ-bench ones plus its own (`also`)."""
    stored = json.loads(GOLDEN.read_text())
    tau = stored["tau-bench"]["results"]
    return {"tau-bench": stored["tau-bench"], "native": {**stored["native"], "results": {**tau, **stored["native"]["also"]}}}


@pytest.mark.parametrize("processes", [1, 2])
def test_results_and_summary_match_the_golden(golden, processes, tmp_path, monkeypatch):
    from tracejudge.engine.executors import processes as processes_mod

    monkeypatch.setattr(processes_mod, "INLINE_RECORDS", 0)  # with 2 processes every chunk goes to a worker
    got = compute(tmp_path, processes)
    problems = []
    for name in golden:
        problems += _diff_results(f"{name} p{processes}", golden[name]["results"], got[name]["results"])
        problems += _diff_figures(f"{name} p{processes} summary", golden[name]["summary"], got[name]["summary"])
        if golden[name]["order"] != got[name]["order"]:
            problems.append(f"{name} p{processes}: results.jsonl holds its lines in another order")
    assert not problems, "\n".join(problems[:40]) + (f"\n… {len(problems) - 40} more" if len(problems) > 40 else "")
    # The malformed lines are there, each one invalid_input naming its file and line.
    errors = {r["case_id"]: r["error"] for r in got["native"]["lines"] if r["status"] == "invalid_input"}
    assert len(errors) == 8 and all(e["file"] == "<tmp>/cases.jsonl" and e["line"] for e in errors.values()), errors


def regenerate() -> None:
    """Write the golden from the code as it is (processes 1)."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        got = compute(Path(tmp), 1)
    tau, native = got["tau-bench"]["results"], got["native"]["results"]
    assert all(native[k] == v for k, v in tau.items()), "the native lines no longer score as the τ-bench runs they came from"
    also = {k: v for k, v in native.items() if k not in tau}
    out = {"tau-bench": {"results": tau, "summary": got["tau-bench"]["summary"], "order": got["tau-bench"]["order"]},
           "native": {"also": also, "summary": got["native"]["summary"], "order": got["native"]["order"]}}
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    # One result entry per line, so a regenerated golden's diff shows which keys changed.
    text = json.dumps(out, sort_keys=True, indent=0, separators=(",", ":"))
    GOLDEN.write_text(text + "\n")
    print(f"wrote {GOLDEN} ({GOLDEN.stat().st_size:,} bytes)")


if __name__ == "__main__":
    if sys.argv[1:] != ["--regenerate"]:
        sys.exit(__doc__)
    regenerate()
