"""Format `otel`: a hostile export's parent links (a loop of parents, a span without a spanId) never hang a read.

Real recordings of several instrumentations, each changed so that two or three of its spans are each other's parents,
a span is its own parent, or a span has lost its spanId (the OTLP spec requires one). Each must read to its cases or
its `invalid_input`s: before, a loop of two model spans, or a span whose missing id made it every root's "parent",
spun the reader at full CPU forever, deaf to SIGTERM, holding up a whole dataset.

The reads run in a child process under a timeout, so a hang fails this test instead of the suite.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

DATA = Path(__file__).parent / "data"
RECORDINGS = [
    "openai-v2/v2-span-only.jsonl",
    "google-genai/oi-afc.jsonl",
    "mlflow-responses/prev.otlp.jsonl",
    "agents-approval/paused.oi.jsonl",
    "langgraph-handoff/lf-handoff.jsonl",
    "smolagents-answers/dict-after-tool.oi.jsonl",
    "agentevals/adk_py/v1_event_stable/S4a.json",
]

# Reads each file given as format `otel`, printing one line per file; an exception is a line too.
CHILD = """
import json, sys
from tracejudge.core import registry
from tracejudge.core.config import DatasetConfig
from tracejudge.stages.extract import extract_record
fmt = registry.format_for("otel")
for path in sys.argv[1:]:
    try:
        ds = DatasetConfig(path=path, format="otel")
        out = [extract_record(raw, fmt, fmt.prepare(ds)) for raw in fmt.read(ds)]
        print(json.dumps({"file": path, "read": len(out)}), flush=True)
    except Exception as exc:
        print(json.dumps({"file": path, "raised": f"{type(exc).__name__}: {exc}"}), flush=True)
"""


def _spans(doc: Any) -> list[dict[str, Any]]:
    if not isinstance(doc, dict):
        return []
    return [s for rs in doc.get("resourceSpans") or [] for ss in rs.get("scopeSpans") or [] for s in ss.get("spans") or []]


def _variants(path: Path, rng: random.Random) -> dict[str, list[Any]]:
    text = path.read_text()
    docs = [json.loads(line) for line in text.splitlines() if line.strip()] if path.suffix == ".jsonl" else [json.loads(text)]
    out: dict[str, list[Any]] = {}

    def changed(name: str, change: Any) -> None:
        copy = json.loads(json.dumps(docs))
        spans = [s for d in copy for s in _spans(d)]
        change(spans)
        out[name] = copy

    n = len([s for d in docs for s in _spans(d)])
    for k in range(6):
        i, j = rng.sample(range(n), 2)
        changed(f"pair{k}", lambda sp, i=i, j=j: (sp[i].__setitem__("parentSpanId", sp[j]["spanId"]),
                                                  sp[j].__setitem__("parentSpanId", sp[i]["spanId"])))
    if n >= 3:
        for k in range(2):
            a, b, c = rng.sample(range(n), 3)
            changed(f"three{k}", lambda sp, a=a, b=b, c=c: (sp[a].__setitem__("parentSpanId", sp[b]["spanId"]),
                                                            sp[b].__setitem__("parentSpanId", sp[c]["spanId"]),
                                                            sp[c].__setitem__("parentSpanId", sp[a]["spanId"])))
    i = rng.randrange(n)
    changed("self", lambda sp: sp[i].__setitem__("parentSpanId", sp[i]["spanId"]))
    changed("no_id", lambda sp: sp[i].pop("spanId"))
    changed("empty_id", lambda sp: sp[i].__setitem__("spanId", ""))
    changed("all_models_looped", _loop_all)
    return out


def _loop_all(spans: list[dict[str, Any]]) -> None:
    """Every span the parent of the next, the last of the first: no root anywhere."""
    for a, b in zip(spans, spans[1:] + spans[:1]):
        a["parentSpanId"] = b["spanId"]


def test_parent_loops_and_missing_ids_never_hang_a_read(tmp_path):
    rng = random.Random(20261207)
    files = []
    for rel in RECORDINGS:
        for name, docs in _variants(DATA / rel, rng).items():
            f = tmp_path / f"{rel.replace('/', '_')}.{name}.jsonl"
            f.write_text("".join(json.dumps(d) + "\n" for d in docs))
            files.append(str(f))
    try:
        proc = subprocess.run([sys.executable, "-c", CHILD, *files], capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired as hung:
        done = hung.stdout.decode() if isinstance(hung.stdout, bytes) else hung.stdout or ""
        pytest.fail(f"the read of {Path(files[len(done.splitlines())]).name} never ended")
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [line["file"] for line in lines] == files  # every file's read ended
    assert [line for line in lines if "raised" in line] == []
    # (each variant read to something: its cases, or its conversation's invalid_input naming the span)
    assert all(line["read"] >= 1 for line in lines)


def _extract_damaged(tmp_path, name, damage):
    """`tracejudge extract` (a process) of the openai-v2 recording with `damage` applied to its list of spans."""
    doc = [json.loads(line) for line in (DATA / "openai-v2/v2-span-only.jsonl").read_text().splitlines() if line.strip()]
    damage([s for d in doc for s in _spans(d)])
    f = tmp_path / name
    f.write_text("".join(json.dumps(d) + "\n" for d in doc))
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"dataset: {{path: {f}, format: otel}}\nmetrics: [{{type: MaxToolCalls, max_calls: 10}}]\n")
    return subprocess.run([sys.executable, "-m", "tracejudge", "extract", str(cfg), "-o", "-"], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)


def test_a_span_without_a_spanid_is_its_conversations_error_naming_the_field(tmp_path):
    proc = _extract_damaged(tmp_path, "no-span-id.jsonl", lambda spans: spans[0].pop("spanId"))
    assert proc.returncode == 1, proc.stderr
    assert "no-span-id.jsonl:1: spanId" in proc.stderr and "a span has no spanId" in proc.stderr


@pytest.mark.parametrize("field, value, shown", [("spanId", 12345, "number 12345"), ("spanId", True, "boolean true"),
                                                 ("parentSpanId", ["x"], 'array ["x"]'), ("traceId", {"hi": 1}, 'object {"hi": 1}')])
def test_an_id_that_is_no_text_is_its_conversations_error_naming_the_field(tmp_path, field, value, shown):
    # `str()` of a number or a list used to be the id: `123` and `"123"` one span, a list's repr a parent no span has.
    # `true` was said to be a missing spanId; the value is shown as the export spells it, not as Python's repr.
    proc = _extract_damaged(tmp_path, "typed-id.jsonl", lambda spans: spans[-1].__setitem__(field, value))
    assert proc.returncode == 1, proc.stderr
    assert "typed-id.jsonl:1: span" in proc.stderr and f"{field} must be text (OTLP/JSON writes ids as hex), got {shown}" in proc.stderr
    assert "has no spanId" not in proc.stderr
