"""A LangGraph node retried after its tool raised, read from real recordings in `tests/data/langgraph-retry/`.

Recorded by `tests/frameworks/record_langgraph_retry.py` (its docstring says what each scenario runs): the model asks
for one call, `get_weather {"city": "Tokyo"}` (`call_r1`); the `tools` node has a `RetryPolicy`, its tool raises
`TimeoutError` once, and LangGraph runs the node again, so the tool's span is written twice for that one call.

Before, the call read as two: with `ToolNode`, `call_r1` with the result plus a call nobody asked for (no id, no result,
the `TimeoutError`; under OpenInference with the bare text "Tokyo" as its arguments); with a custom node calling
`tool.invoke`, `call_r1` with the second attempt's result and the first one's error, plus a second call with the
result. Now the attempts are the one call: the last attempt's result and no error, under OpenInference, OpenLLMetry,
MLflow's OTLP export and the `mlflow` format alike, and `metadata.otel.retried` says how many attempts it took and
what the earlier ones raised. Two calls the model did ask for (two ids in one reply) stay two, and so does a failed
call the model asked for again in its next request.

Parallel calls (one reply asking `get_weather` for Paris, `call_p`, and Tokyo, `call_t`): LangGraph runs the whole node
again, so the call that returned runs again too. Before, under OpenInference (whose tool spans hold the bare text
"Tokyo") a failed attempt with no id stayed a call of its own and the re-run Paris call a second `call_p` or a call
with no id (4 calls; with a custom node `call_t` held the result and the error, `retried` was empty), and under
OpenLLMetry Paris read as two calls (3 calls). Now each part the model asked for is one call, the last run's, and
`retried` lists both: Tokyo with its earlier error, Paris with the runs it took and no errors.

A span missing (a trace cut by hand, an exporter that dropped it; the tests cut a copy of a recording): without the
span of the attempt that returned, the call used to read with both that result (the next request shows the model its
tool message) and the failed attempt's error, and no `retried`; now it has the result, no error, and `retried` lists
the failure. Without the failed attempt's span it is a plain call. Parallel calls are one call per part either way.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import extract_path
from tracejudge.core.records import Case

DATA = Path(__file__).parent / "data" / "langgraph-retry"
TOKYO = {"city": "Tokyo"}
TIMEOUT = "TimeoutError: weather service timed out"
ANSWER = "Tokyo is rainy, 14 C."
RETRIED = [
    ("oi-retry.jsonl", "otel"),
    ("tl-retry.jsonl", "otel"),
    ("oi-retry-tools.jsonl", "otel"),
    ("tl-retry-tools.jsonl", "otel"),
    ("ml-retry-tools.otlp.jsonl", "otel"),
    ("ml-retry-tools.mlflow.jsonl", "mlflow"),
]


def extract(path: Path, fmt_name: str = "otel") -> list[Case]:
    cases = extract_path(path, fmt_name)
    assert all(isinstance(c, Case) for c in cases), cases
    return cases


def calls(case: Case) -> list[tuple[str | None, str, Any, Any, str | None]]:
    return [(c.id, c.name, c.arguments, c.result, c.error) for c in case.trace.tool_calls()]


def truth(name: str) -> dict[str, Any]:
    stem = name.split(".", 1)[0]
    return json.loads((DATA / f"{stem}.truth.json").read_text())


@pytest.mark.parametrize(("name", "fmt"), RETRIED, ids=[n for n, _ in RETRIED])
def test_a_retried_node_is_one_call_with_the_last_attempts_result(name: str, fmt: str) -> None:
    t = truth(name)
    # the recording ran the tool twice for the one call the model asked for
    assert [r.get("raised") or r.get("result") for r in t["tool_runs"]] == [TIMEOUT, "rainy, 14 C"]
    assert [(c["id"], c["result"], c["status"]) for c in t["calls"]] == [("call_r1", "rainy, 14 C", "success")]
    (case,) = extract(DATA / name, fmt)
    assert calls(case) == [("call_r1", "get_weather", TOKYO, "rainy, 14 C", None)]
    assert [[c.id for c in s.tool_calls] for s in case.trace.steps] == [["call_r1"], []]
    assert case.trace.output == t["output"] == ANSWER
    assert case.metadata["otel"]["retried"] == [
        {"call": 0, "name": "get_weather", "id": "call_r1", "attempts": 2, "errors": [TIMEOUT]}
    ]
    assert "run_error" not in case.metadata


@pytest.mark.parametrize("kind", ["oi", "tl"])
def test_the_same_call_asked_twice_in_one_reply_stays_two_calls(kind: str) -> None:
    """One reply asks `get_weather {"city": "Tokyo"}` twice; the first run fails, the second returns: both are calls."""
    t = truth(f"{kind}-two-asks")
    assert [c["id"] for c in t["calls"]] == ["call_a", "call_b"]
    (case,) = extract(DATA / f"{kind}-two-asks.jsonl")
    assert calls(case) == [
        ("call_a", "get_weather", TOKYO, t["calls"][0]["result"], TIMEOUT),
        ("call_b", "get_weather", TOKYO, "rainy, 14 C", None),
    ]
    assert t["calls"][0]["result"] == "Error: weather service timed out"
    assert "retried" not in case.metadata["otel"]


@pytest.mark.parametrize("kind", ["oi", "tl"])
def test_a_failed_call_asked_again_in_the_next_request_is_a_new_call(kind: str) -> None:
    """`call_x1` fails and its error goes back to the model, which asks again (`call_x2`): two calls, in two steps."""
    t = truth(f"{kind}-re-asked")
    (case,) = extract(DATA / f"{kind}-re-asked.jsonl")
    assert calls(case) == [
        ("call_x1", "get_weather", TOKYO, t["calls"][0]["result"], TIMEOUT),
        ("call_x2", "get_weather", TOKYO, "rainy, 14 C", None),
    ]
    assert [[c.id for c in s.tool_calls] for s in case.trace.steps] == [["call_x1"], ["call_x2"], []]
    assert case.trace.output == ANSWER
    assert "retried" not in case.metadata["otel"]


PARALLEL_ANSWER = "Paris is sunny, 21 C; Tokyo is rainy, 14 C."
PARIS, TOKYO_RESULT = "sunny, 21 C", "rainy, 14 C"


def timed_out(city: str, n: int) -> str:
    return f"TimeoutError: {city} timed out (attempt {n})"


# scenario -> which cities' first run raised
PARALLEL = {"parallel": ["Tokyo"], "parallel-tools": ["Tokyo"], "parallel-both": ["Paris", "Tokyo"], "parallel-both-tools": ["Paris", "Tokyo"]}
PARALLEL_FILES = [f"{k}-{name}" for name in PARALLEL for k in ("oi", "tl")]


@pytest.mark.parametrize("stem", PARALLEL_FILES)
def test_a_retried_node_with_parallel_calls_is_one_call_per_part(stem: str) -> None:
    """The model asks for Paris and Tokyo in one reply; the node is run again after a call raised, every call in it
    with it: each part is one call with its last run's result, and `retried` counts every part's runs (the truth file
    says how many: a custom node stops at the call that raised, `ToolNode` runs its calls side by side)."""
    failed = PARALLEL[stem.split("-", 1)[1]]
    t = truth(stem)
    ran = {city: [r.get("raised") or r.get("result") for r in t["tool_runs"] if r["arguments"] == {"city": city}] for city in ("Paris", "Tokyo")}
    # the recording: a city that failed raised once then returned; the node ran every call again (Paris at least twice)
    assert ran["Tokyo"] == [timed_out("Tokyo", 1), TOKYO_RESULT]
    assert ran["Paris"][-1] == PARIS and len(ran["Paris"]) >= 2
    assert [x for x in ran["Paris"] if x != PARIS] == ([timed_out("Paris", 1)] if "Paris" in failed else [])
    assert [(c["id"], c["result"], c["status"]) for c in t["calls"]] == [("call_p", PARIS, "success"), ("call_t", TOKYO_RESULT, "success")]
    (case,) = extract(DATA / f"{stem}.jsonl")
    assert calls(case) == [
        ("call_p", "get_weather", {"city": "Paris"}, PARIS, None),
        ("call_t", "get_weather", TOKYO, TOKYO_RESULT, None),
    ]
    assert [[c.id for c in s.tool_calls] for s in case.trace.steps] == [["call_p", "call_t"], []]
    assert case.trace.output == t["output"] == PARALLEL_ANSWER
    assert case.metadata["otel"]["retried"] == [
        {"call": 0, "name": "get_weather", "id": "call_p", "attempts": len(ran["Paris"]),
         "errors": [timed_out("Paris", 1)] if "Paris" in failed else []},
        {"call": 1, "name": "get_weather", "id": "call_t", "attempts": 2, "errors": [timed_out("Tokyo", 1)]},
    ]
    assert "run_error" not in case.metadata


def test_recordings_hold_no_machine_paths() -> None:
    for path in DATA.iterdir():
        text = path.read_text()
        for marker in ("/tmp/", "/root/", "/work/", "/home/"):
            assert marker not in text, (path.name, marker)


# A span missing from the trace (cut by hand, or dropped by an exporter): the recordings above, copied without one
# tool span. The model's next request still shows it the tool message of the attempt that returned.

def _span_lists(doc: dict[str, Any], fmt: str) -> list[tuple[dict[str, Any], str]]:
    """Where `doc` (one line of a recording) keeps its spans: (holder, key) pairs."""
    if fmt == "mlflow":
        return [(doc["data"], "spans")]
    return [(ss, "spans") for rs in doc["resourceSpans"] for ss in rs["scopeSpans"]]


def _sid(span: dict[str, Any]) -> str:
    return span.get("spanId") or span["span_id"]


def _failed(span: dict[str, Any]) -> bool:
    return span.get("status", {}).get("code") in (2, "STATUS_CODE_ERROR")


def _city(span: dict[str, Any]) -> str:
    attrs = span["attributes"]
    if isinstance(attrs, list):  # OTLP/JSON
        attrs = {a["key"]: a["value"].get("stringValue") for a in attrs}
    said = attrs.get("input.value") or attrs.get("traceloop.entity.input") or ""
    return "Paris" if "Paris" in said else "Tokyo" if "Tokyo" in said else "?"


def without(tmp_path: Path, name: str, fmt: str, pick: Any) -> Path:
    """A copy of recording `name` (format `fmt`) without the tool spans `pick(tool spans by start)` returns."""
    docs = [json.loads(line) for line in (DATA / name).read_text().splitlines() if line.strip()]
    spans = [s for d in docs for holder, key in _span_lists(d, fmt) for s in holder[key]]
    tools = sorted((s for s in spans if s["name"].endswith("get_weather")),
                   key=lambda s: int(s.get("startTimeUnixNano") or s["start_time_unix_nano"]))
    gone = {_sid(s) for s in pick(tools)}
    assert gone
    for d in docs:
        for holder, key in _span_lists(d, fmt):
            holder[key] = [s for s in holder[key] if _sid(s) not in gone]
    out = tmp_path / name
    out.write_text("".join(json.dumps(d) + "\n" for d in docs))
    return out


@pytest.mark.parametrize(("name", "fmt"), RETRIED, ids=[n for n, _ in RETRIED])
def test_a_retried_call_whose_last_span_is_missing_has_the_result_the_model_saw(tmp_path: Path, name: str, fmt: str) -> None:
    """The span of the attempt that returned is missing: the failed attempt's node raised (nothing it made reached the
    model), yet the next request shows the model the tool message of `call_r1`: a later run answered it. Before, the
    call read with both that result and the failed attempt's error, and no `retried`."""
    path = without(tmp_path, name, fmt, lambda tools: [t for t in tools if not _failed(t)])
    (case,) = extract(path, fmt)
    assert calls(case) == [("call_r1", "get_weather", TOKYO, "rainy, 14 C", None)]
    assert [[c.id for c in s.tool_calls] for s in case.trace.steps] == [["call_r1"], []]
    assert case.trace.output == ANSWER
    assert case.metadata["otel"]["retried"] == [
        {"call": 0, "name": "get_weather", "id": "call_r1", "attempts": 2, "errors": [TIMEOUT]}
    ]
    assert "run_error" not in case.metadata


@pytest.mark.parametrize(("name", "fmt"), RETRIED, ids=[n for n, _ in RETRIED])
def test_a_retried_call_whose_failed_span_is_missing_is_a_plain_call(tmp_path: Path, name: str, fmt: str) -> None:
    """The failed attempt's span is missing: only the run that returned is left, one call, no error, nothing retried."""
    path = without(tmp_path, name, fmt, lambda tools: [t for t in tools if _failed(t)])
    (case,) = extract(path, fmt)
    assert calls(case) == [("call_r1", "get_weather", TOKYO, "rainy, 14 C", None)]
    assert case.trace.output == ANSWER
    assert "retried" not in case.metadata["otel"]


@pytest.mark.parametrize("stem", PARALLEL_FILES)
@pytest.mark.parametrize("lost", ["returned", "failed"])
def test_a_parallel_retry_missing_a_tokyo_span_is_still_one_call_per_part(tmp_path: Path, stem: str, lost: str) -> None:
    """Tokyo's span that returned (or the one that failed) is missing. Before, with the first, `call_t` read with both
    its result and its error (under the bare-text arguments of OpenInference with a custom node, Paris's error and
    result) and Paris's re-runs were calls of their own; with the second, Paris's re-run was a call of its own (nothing
    failed was left to show the node had been run again): 3 calls. Now each part is one call, as when nothing is missing."""
    failed = PARALLEL[stem.split("-", 1)[1]]
    t = truth(stem)
    paris = [r.get("raised") or r.get("result") for r in t["tool_runs"] if r["arguments"] == {"city": "Paris"}]
    if lost == "returned":
        path = without(tmp_path, f"{stem}.jsonl", "otel", lambda tools: [[s for s in tools if _city(s) == "Tokyo" and not _failed(s)][-1]])
        tokyo_retried = [{"call": 1, "name": "get_weather", "id": "call_t", "attempts": 2, "errors": [timed_out("Tokyo", 1)]}]
    else:
        path = without(tmp_path, f"{stem}.jsonl", "otel", lambda tools: [s for s in tools if _city(s) == "Tokyo" and _failed(s)])
        tokyo_retried = []
    (case,) = extract(path)
    assert calls(case) == [
        ("call_p", "get_weather", {"city": "Paris"}, PARIS, None),
        ("call_t", "get_weather", TOKYO, TOKYO_RESULT, None),
    ]
    assert case.trace.output == PARALLEL_ANSWER
    assert case.metadata["otel"]["retried"] == [
        {"call": 0, "name": "get_weather", "id": "call_p", "attempts": len(paris),
         "errors": [timed_out("Paris", 1)] if "Paris" in failed else []},
        *tokyo_retried,
    ]
