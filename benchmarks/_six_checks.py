"""The six deterministic checks of `pipeline_throughput.py`, as plain code a peer's evaluators can call.

The peers (pydantic-evals, multivon) run in their own processes and must not import tracejudge:
this module reads the same native JSONL records and computes what tracejudge's metrics compute,
written from their documented rules, not from tracejudge's code:

- `writes_exact` — tracejudge `ToolCalls(arguments: exact, exclude_tools: WRITE_EXCLUDE,
  include_failed: false)`: expected and actual calls as multisets, paired by a maximum matching
  (names equal, arguments equal), F1 of the pairing; expected `[]` → 1.0 iff no call counts.
- `TrajectoryMatch` — `order: in_order`: F1 of the LCS of the tool names (pydantic-evals' rule).
- `ToolCorrectness` — `allow_extra: true`: every expected name called at least as often.
- `MaxToolCalls` — at most 20 calls, failed ones included.
- `MaxModelRequests` — at most 30 requests: `usage.requests`, else one per step.
- `Contains` — the final output contains "reservation", case ignored.

Failed calls (non-null `error`) are left out except by `MaxToolCalls`. Missing or null
arguments are `{}`; a JSON-string payload is decoded.
"""

from __future__ import annotations

import json
import resource
import sys
from collections.abc import Callable, Iterator, Sequence
from fnmatch import fnmatchcase
from functools import lru_cache
from pathlib import Path
from typing import Any, NamedTuple

CHECKS = ("writes_exact", "TrajectoryMatch", "ToolCorrectness", "MaxToolCalls", "MaxModelRequests", "Contains")
WRITE_EXCLUDE = ("get_*", "search_*", "list_*", "calculate", "think", "transfer_*")
MAX_CALLS = 20
MAX_REQUESTS = 30
CONTAINS = "reservation"


class Call(NamedTuple):
    """One recorded tool call: name, arguments (a mapping, or the raw text when not a JSON object), failed."""

    name: str
    arguments: Any
    failed: bool


class Run(NamedTuple):
    """One case as the checks see it: id, calls in order, expected `(name, arguments or None)`, output, requests, steps."""

    id: str
    calls: list[Call]
    expected: list[tuple[str, Any]]
    output: str
    requests: int | None
    steps: int


def _arguments(value: Any) -> Any:
    if value is None or value == "":
        return {}
    if isinstance(value, str):
        try:
            decoded = json.loads(value)
        except ValueError:
            return value
        return decoded if isinstance(decoded, dict) else value
    return value


def read_runs(path: Path) -> Iterator[Run]:
    """Every line of a native JSONL file as a `Run`. Raises `ValueError` naming the line when one is not a case with a trace."""
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            try:
                case = json.loads(line)
                trace = case["trace"]
                steps = trace.get("steps") or []
                calls = [Call(c["name"], _arguments(c.get("arguments")), c.get("error") is not None)
                         for s in steps for c in s.get("tool_calls") or ()]
                expected = [(e["name"], None if e.get("arguments") is None else _arguments(e["arguments"]))
                            for e in case.get("expected_tool_calls") or ()]
                usage = trace.get("usage") or {}
                yield Run(case["id"], calls, expected, trace.get("output") or "", usage.get("requests"), len(steps))
            except (ValueError, KeyError, TypeError) as exc:
                raise ValueError(f"{path}:{lineno}: not a native case with a trace ({type(exc).__name__}: {exc})") from None


@lru_cache(maxsize=4096)
def is_write(name: str) -> bool:
    """Does a call of tool `name` count for `writes_exact` (no `WRITE_EXCLUDE` glob matches it)?"""
    return not any(fnmatchcase(name, g) for g in WRITE_EXCLUDE)


def pairs_count(expected: Sequence[Any], actual: Sequence[Any], compatible: Callable[[Any, Any], bool]) -> int:
    """Size of a maximum matching between `expected` and `actual` (Kuhn's augmenting paths)."""
    adj = [[j for j, a in enumerate(actual) if compatible(e, a)] for e in expected]
    owner = [-1] * len(actual)

    def augment(i: int, seen: list[bool]) -> bool:
        for j in adj[i]:
            if not seen[j]:
                seen[j] = True
                if owner[j] == -1 or augment(owner[j], seen):
                    owner[j] = i
                    return True
        return False

    return sum(1 for i in range(len(expected)) if adj[i] and augment(i, [False] * len(actual)))


def f1(k: int, n_expected: int, n_actual: int) -> float:
    """F1 of k pairs: precision k/n_actual (0 without calls), recall k/n_expected."""
    precision = k / n_actual if n_actual else 0.0
    recall = k / n_expected if n_expected else 0.0
    return 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)


def writes_exact(run: Run, same_arguments: Callable[[Any, Any], bool]) -> float:
    """The `writes_exact` value of one run; `same_arguments(expected, actual)` is the peer's argument equality."""
    expected = [(n, a) for n, a in run.expected if is_write(n)]
    actual = [c for c in run.calls if not c.failed and is_write(c.name)]
    if not expected:
        return 1.0 if not actual else 0.0

    def compatible(e: tuple[str, Any], c: Call) -> bool:
        return e[0] == c.name and (e[1] is None or (isinstance(c.arguments, dict) and same_arguments(e[1], c.arguments)))

    return f1(pairs_count(expected, actual, compatible), len(expected), len(actual))


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Longest common subsequence of two name lists (dynamic programming, one row at a time)."""
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b):
            cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
        prev = cur
    return prev[-1]


def trajectory_in_order(run: Run) -> float:
    """F1 of the LCS of successful calls' names against the expected names; both empty → 1.0."""
    actual = [c.name for c in run.calls if not c.failed]
    expected = [n for n, _ in run.expected]
    if not actual and not expected:
        return 1.0
    return f1(lcs_length(actual, expected), len(expected), len(actual))


def tools_called(run: Run) -> float:
    """1.0 when every expected name was called (successfully) at least as often as expected, extras allowed."""
    counts: dict[str, int] = {}
    for c in run.calls:
        if not c.failed:
            counts[c.name] = counts.get(c.name, 0) + 1
    for n, _ in run.expected:
        if counts.get(n, 0) <= 0:
            return 0.0
        counts[n] -= 1
    return 1.0


def within_calls(run: Run) -> float:
    """1.0 when the run made at most `MAX_CALLS` tool calls, failed ones included."""
    return 1.0 if len(run.calls) <= MAX_CALLS else 0.0


def within_requests(run: Run) -> float:
    """1.0 when `usage.requests` (else the step count) is at most `MAX_REQUESTS`."""
    return 1.0 if (run.steps if run.requests is None else run.requests) <= MAX_REQUESTS else 0.0


def emit(n: int, per_case: dict[str, dict[str, float]], scores_path: str | None) -> None:
    """Print the child's last line: `{"n", "means", "rss_kb"}` as JSON; with `scores_path`, write each case's six values there too.

    `per_case` maps case id → check → value (a bool counts 0/1). Means are over every case.
    """
    means = {k: sum(float(v[k]) for v in per_case.values()) / max(len(per_case), 1) for k in CHECKS}
    if scores_path:
        with open(scores_path, "w", encoding="utf-8") as fh:
            for cid, values in per_case.items():
                fh.write(json.dumps({"id": cid, **{k: float(values[k]) for k in CHECKS}}) + "\n")
    me = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"n": n, "means": means, "rss_kb": me.ru_maxrss, "workers_rss_kb": 0}))
    sys.stdout.flush()
