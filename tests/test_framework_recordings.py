"""The committed framework recordings (tests/data/frameworks) are complete, and re-recording them live gives the same shape.

The live test re-runs `tests/frameworks/record.py` for every recording whose libraries are
installed (the `frameworks` extra), into tmp_path, for the `failing` and `parallel` tasks, and
compares with the committed files: the same truth, and the same structure (OTLP: the multiset of
span name, kind, scope and attribute keys; JSON exports: the set of key paths). A library upgrade
that changes what a framework records fails here, so the recordings and the readers built on them
get refreshed (`python tests/frameworks/record.py tests/data/frameworks`). Select with `-k recordings`.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent
DATA = ROOT / "data" / "frameworks"
sys.path.insert(0, str(ROOT / "frameworks"))
from tasks import TASKS  # noqa: E402

from live import LIVE_TASKS, NEEDS  # noqa: E402
# Values that depend on the machine or the checkout, not on the framework (MLflow stamps git state).
_VOLATILE = ("mlflow.source.",)


def _lines(path: Path) -> list[Any]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _span_shapes(docs: list[Any]) -> Counter[tuple[Any, ...]]:
    shapes: Counter[tuple[Any, ...]] = Counter()
    for doc in docs:
        for rs in doc["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for s in ss["spans"]:
                    keys = tuple(sorted(a["key"] for a in s.get("attributes", [])))
                    shapes[(ss.get("scope", {}).get("name"), s["name"], s.get("kind"), keys, tuple(sorted(e["name"] for e in s.get("events", []))))] += 1
    return shapes


def _key_paths(node: Any, prefix: str = "") -> set[str]:
    """Every key path in `node`, list positions collapsed to `[]`."""
    if isinstance(node, dict):
        out = {prefix}
        for k, v in node.items():
            if not any(k.startswith(p) for p in _VOLATILE):
                out |= _key_paths(v, f"{prefix}.{k}")
        return out
    if isinstance(node, list):
        return set().union({prefix}, *(_key_paths(v, prefix + "[]") for v in node))
    return {prefix}


def shape(path: Path) -> Any:
    """The structure a recording file is compared by."""
    docs = _lines(path)
    if docs and isinstance(docs[0], dict) and "resourceSpans" in docs[0]:
        return _span_shapes(docs)
    return sorted(set().union(*(_key_paths(d) for d in docs)))


def _recordings() -> list[str]:
    return sorted(p.name for p in DATA.iterdir() if p.is_dir())


def test_committed_recordings_are_complete() -> None:
    """Every recording has, for every task it ran, a non-empty data file and a truth naming that task's calls in the model's order."""
    assert set(_recordings()) == set(NEEDS)
    for name in _recordings():
        truths = sorted((DATA / name).glob("*.truth.json"))
        assert {t.name.split(".")[0] for t in truths} == set(TASKS), name
        for t in truths:
            task = TASKS[t.name.split(".")[0]]
            truth = json.loads(t.read_text())
            assert truth["input"] == task.turns[0] and truth["user_turns"] == list(task.turns)
            assert [c["name"] for c in truth["calls"]] == [n for replies in task.script for r in replies for n, _ in r.calls]
            assert truth["output"] == task.script[-1][-1].text
            data = [p for p in (DATA / name).glob(f"{task.name}.*") if not p.name.endswith(".truth.json")]
            assert data and all(p.stat().st_size > 0 for p in data), (name, task.name)


@pytest.mark.parametrize("name", sorted(NEEDS))
def test_live_recordings_keep_their_shape(name: str, live_recordings: tuple[Path, dict[str, str]]) -> None:
    """Re-recorded `failing` and `parallel` runs have the committed truth and structure."""
    for module in NEEDS[name]:
        pytest.importorskip(module)
    out, failures = live_recordings
    assert name not in failures, failures.get(name)
    for task in LIVE_TASKS:
        for fresh in sorted((out / name).glob(f"{task}.*")):
            committed = DATA / name / fresh.name
            if fresh.name.endswith(".truth.json"):
                assert json.loads(fresh.read_text()) == json.loads(committed.read_text()), fresh.name
            else:
                assert shape(fresh) == shape(committed), f"{name}/{fresh.name}: the framework now records a different shape"


def test_fake_server_streams_the_scripted_reply() -> None:
    """With `stream: true` the fake server sends the same parallel tool calls and usage as SSE chunks an OpenAI client reassembles."""
    openai = pytest.importorskip("openai")
    from fake_openai import FakeOpenAI

    with FakeOpenAI() as fake:
        client = openai.OpenAI(base_url=fake.base_url, api_key="sk-fake")
        messages = [{"role": "user", "content": TASKS["parallel"].turns[0]}]
        chunks = list(client.chat.completions.create(model="m", messages=messages, stream=True, stream_options={"include_usage": True}))
        whole = client.chat.completions.create(model="m", messages=messages)
    calls = [tc for c in chunks for ch in c.choices for tc in ch.delta.tool_calls or []]
    assert [(tc.index, tc.function.name, tc.function.arguments) for tc in calls] == [
        (i, tc.function.name, tc.function.arguments) for i, tc in enumerate(whole.choices[0].message.tool_calls or [])]
    assert [json.loads(tc.function.arguments)["city"] for tc in calls] == ["Paris", "Tokyo"]
    assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens == whole.usage.total_tokens == 120
