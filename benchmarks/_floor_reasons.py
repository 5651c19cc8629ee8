"""The floor with the guarantees and tracejudge's own result lines (`_floor_run.py --reasons`, implying `--guarantees`):
results.jsonl byte for byte as `tracejudge run` writes it for `pipeline_throughput.CONFIG`'s six checks, every field but
`duration_s` (wall seconds, measured per case here as there), by tracejudge's rules (stages/score/*.py, llm/redact.py,
engine/rendered.py) re-implemented minimally, without importing tracejudge:

1. Values, reasons and `details` as tracejudge gives them: `writes_exact` (ToolCalls exact: its maximum matching's
   pairs, arguments by its rules (a bool never a number; matchers `$any_of` `$regex` `$approx` `$absent` `$loose`),
   five missing calls at most with the closest call and its first argument difference, five unexpected ones, the first
   divergence in order); TrajectoryMatch (LCS figures, both name lists, the first divergence and its call);
   ToolCorrectness (missing and extra tools counted); the budgets; Contains (a failed one quotes the output, both ends
   of a long one); `null` without expected calls. A call shows
   as `name({sorted compact JSON})` cut at 120 characters, a value as compact JSON cut at 60 (two long ones around their
   first difference): msgspec's texts, or the stdlib's where one may hold a float msgspec writes otherwise (below 1e-4,
   from 1e16).
2. Redaction as tracejudge applies it, its whole rule (credential names in headers and JSON, Bearer/Basic tokens, `sk-`
   keys, URL passwords, AWS, Slack, GitHub, Google, Hugging Face, JWT, PEM): each call text and value shown is searched
   for a credential's hint and masked; a tool name holding one masks every reason and the details' keys; the tags and
   metadata in a line are masked as `redact_labels` masks them. Texts seen clean and the reasons' figures are kept in
   bounded sets, as tracejudge keeps them (calls recur from trial to trial).
3. The line as pydantic writes `CaseResult` (msgspec's bytes but `1e+16` for `1e16`, fixed in the metadata, the one place
   such a float can be); `invalid_input` lines for a case without a trace and a repeated id as tracejudge writes them,
   and of their shape (msgspec's message) for a line msgspec refuses.

Left out: pydantic's messages and the records' fallback (JSON-string or null arguments, blank tool names); `$regex` runs
on `re`, not the `regex` library, untimed; what `_floor_guarantees` leaves out (`--outputs`, `_floor_outputs.py`, adds
the files it lists). `--phases`: checks (values, details),
reasons (their texts, redaction included), redact (labels, tool names); render and junit_text carry the longer texts.
"""

from __future__ import annotations

import gc
import os
import time
from array import array
from typing import Any

from _collections import _count_elements  # (what `Counter` counts with, in C)

import msgspec

import _floor_guarantees as guar
import _floor_run as floor
from _floor_rules import _DIGITS, _clean_names, _enc, _masked, difference, labels, match_args, redact, render_call
from _six_checks import CHECKS, CONTAINS, MAX_CALLS, MAX_REQUESTS, is_write



# ---- the six checks: values and details (`checks`), then the reasons (`reasons`) ----
def _augment(adj: list[list[int]], owner: list[int], i: int, seen: list[bool]) -> bool:
    for j in adj[i]:  # a free call first, so uncontested calls pair in reading order (tracejudge's `max_matching_of`)
        if owner[j] == -1 and not seen[j]:
            seen[j], owner[j] = True, i
            return True
    for j in adj[i]:
        if not seen[j]:
            seen[j] = True
            if owner[j] == -1 or _augment(adj, owner, owner[j], seen):
                owner[j] = i
                return True
    return False


def lcs(a: list[str], b: list[str]) -> int:
    """The longest common subsequence's length: common ends trimmed, then bit-parallel (Hyyrö), a row at a time."""
    n, lo, hi = min(len(a), len(b)), 0, 0
    while lo < n and a[lo] == b[lo]:
        lo += 1
    while hi < n - lo and a[-1 - hi] == b[-1 - hi]:
        hi += 1
    a, b, masks = a[lo : len(a) - hi], b[lo : len(b) - hi], dict[str, int]()
    for j, y in enumerate(b):
        masks[y] = masks.get(y, 0) | 1 << j
    v = full = (1 << len(b)) - 1
    for x in a:
        u = v & masks.get(x, 0)
        v = ((v + u) | (v - u)) & full
    return lo + hi + len(b) - v.bit_count()


def checks(case: Any) -> tuple[list[Any], list[Any], tuple[Any, ...]]:
    """The six values (None: not computed), their details, and what the reasons read."""
    t, calls, steps = case.trace, [], []  # every call, and each one's step
    for s, step in enumerate(t.steps):
        if step.tool_calls:
            calls += step.tool_calls
            steps += [s] * len(step.tool_calls)
    ok = [i for i, c in enumerate(calls) if c.error is None]  # (indices) failed calls count only for MaxToolCalls
    given = case.expected_tool_calls
    w: Any = None  # (what the reasons of writes_exact, TrajectoryMatch, ToolCorrectness read: None, not computed)
    tj: Any = None
    tc: Any = None
    values: list[Any] = [None, None, None]
    det: list[Any] = [None, None, None]
    if given is not None:
        # writes_exact: expected write calls paired with the made ones, by a maximum matching of compatible calls.
        expected, actual = [i for i, e in enumerate(given) if is_write(e.name)], [j for j in ok if is_write(calls[j].name)]
        if not expected:
            values[0] = v = 0.0 if actual else 1.0
            det[0], w = {"pairs": [], "missing": [], "unexpected": actual, "precision": v, "recall": 1.0, "f1": v}, (actual, None)
        else:
            by_name: dict[str, list[int]] = {}  # (positions in `actual`, as the table's)
            for j, a in enumerate(actual):
                by_name.setdefault(calls[a].name, []).append(j)
            adj = [[j for j in by_name.get(e.name, ()) if e.arguments is None or (not calls[actual[j]].arguments_missing
                    and match_args(e.arguments, calls[actual[j]].arguments))] for e in map(given.__getitem__, expected)]
            if len(adj) == 1:  # (one expected call, most cases: it takes its first compatible call)
                pairs = [(0, adj[0][0])] if adj[0] else []
            else:
                owner = [-1] * len(actual)
                for i, row in enumerate(adj):
                    if row:
                        _augment(adj, owner, i, [False] * len(actual))
                pairs = sorted([(i, j) for j, i in enumerate(owner) if i != -1])
            k = len(pairs)
            r, p = k / len(expected), k / len(actual) if actual else 0.0
            values[0] = f = 0.0 if p + r == 0 else 2 * p * r / (p + r)
            pe, pa = {i for i, _ in pairs}, {j for _, j in pairs}
            missing = [i for i in range(len(expected)) if i not in pe] if k < len(expected) else []
            unexpected = [j for j in range(len(actual)) if j not in pa] if k < len(actual) else []
            det[0] = {"pairs": [[expected[i], actual[j]] for i, j in pairs], "missing": [expected[i] for i in missing],
                      "unexpected": [actual[j] for j in unexpected], "precision": p, "recall": r, "f1": f}
            w = (actual, expected, adj, pairs, missing, unexpected)
        # TrajectoryMatch in order: F1 of the LCS of the names.
        exp_names, names = [e.name for e in given], [calls[i].name for i in ok]
        if not names or not exp_names:
            values[1], tj = 0.0 if names or exp_names else 1.0, (exp_names, names, None)
        else:
            k = lcs(names, exp_names)
            p, r = k / len(names), k / len(exp_names)
            values[1] = f = 0.0 if p + r == 0 else 2 * p * r / (p + r)
            det[1], tj = {"k": k, "precision": p, "recall": r, "f1": f}, (exp_names, names, k)
        # ToolCorrectness, extra calls allowed: each expected name called at least as often.
        want: dict[str, int] = {}
        got: dict[str, int] = {}
        _count_elements(want, exp_names)
        _count_elements(got, names)
        lacking = {n: c - got.get(n, 0) for n, c in want.items() if c > got.get(n, 0)}
        extra = {n: c - want.get(n, 0) for n, c in got.items() if c > want.get(n, 0)}
        values[2], det[2], tc = 0.0 if lacking else 1.0, {"missing": lacking, "unexpected": extra}, (exp_names, lacking, extra)
    u = t.usage
    req = len(t.steps) if u is None or u.requests is None else u.requests
    values += [1.0 if len(calls) <= MAX_CALLS else 0.0, 1.0 if req <= MAX_REQUESTS else 0.0, 1.0 if CONTAINS in (t.output or "").lower() else 0.0]
    det += [{"count": len(calls), "budget": MAX_CALLS}, {"count": req, "budget": MAX_REQUESTS}, None]
    return values, det, (calls, steps, given, ok, w, tj, tc, u is None or u.requests is None, t.output or "")


_NO_EXPECTATION = "not computed: the case has no expected_tool_calls"
_HEADS: dict[tuple[Any, ...], str] = {}  # the reasons' figures' texts, by their figures (bounded: emptied when full)


def _head(key: tuple[Any, ...]) -> str:
    kind, k, a, b, *f = key
    text = (f"matched {k}/{a} expected and {k}/{b} actual calls (arguments=exact, any_order): "
            f"precision={f[0]:.3f}, recall={f[1]:.3f}, F1={f[2]:.3f}" if kind == "w" else
            f"LCS={k}, precision={k}/{a}={f[0]:.3f}, recall={k}/{b}={f[1]:.3f}, F1={f[2]:.3f}; score=f1={f[2]:.3f}" if kind == "t" else
            f"{k} {b}, budget={a}" + ("" if k <= a else f" (over by {k - a})"))
    if len(_HEADS) >= 4096:
        _HEADS.clear()
    _HEADS[key] = text
    return text


def _ordinal(n: int) -> str:  # `score.reasons.ordinal`: a call's place in an order (`#N` is the trace's own call number)
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def _describe(counts: dict[str, int]) -> str:
    return ", ".join([f"{n!r} (x{c})" for n, c in sorted(counts.items())])


def reasons(values: list[Any], det: list[Any], state: tuple[Any, ...]) -> list[str]:
    """The six reasons as tracejudge words them (each call rendered once a case, each argument difference once a pair)."""
    calls, steps, given, ok, w, tj, tc, counted, output = state
    shown: dict[int, str] = {}

    def r(call: Any) -> str:
        got = shown.get(id(call))
        if got is None:
            got = shown[id(call)] = render_call(call.name, call.arguments)
        return got

    out = [_NO_EXPECTATION] * 3
    if w is not None and w[1] is None:
        out[0] = ("no call expected and none made" if not w[0] else f"no call expected, but {len(w[0])} made: "
                  + "; ".join([f"#{i} (step {steps[i]}) {r(calls[i])}" for i in w[0][:5]]))
    elif w is not None:
        actual, expected, adj, pairs, missing, unexpected = w
        k, ne, na, d = len(pairs), len(expected), len(actual), det[0]
        key = ("w", k, ne, na, d["precision"], d["recall"], d["f1"])
        parts = [_HEADS.get(key) or _head(key)]
        if not (k == ne == na and all(i == j for i, j in pairs)):  # else every call paired in place: nothing to point at
            diffs: dict[tuple[int, int], str | None] = {}

            def diff(i: int, j: int) -> str | None:
                if (i, j) not in diffs:
                    diffs[(i, j)] = difference(given[expected[i]].arguments, calls[actual[j]].arguments)
                return diffs[(i, j)]

            if missing:
                items = []
                for i in missing[:5]:
                    idx, e = expected[i], given[expected[i]]
                    items.append(f"[{idx}] {r(e)}")
                    for j in unexpected:  # the closest: the first unexpected call of its tool that says how it differs
                        aidx, c = actual[j], calls[actual[j]]
                        if c.name == e.name and (why := "arguments not recorded" if c.arguments_missing and e.arguments is not None else diff(i, j)):
                            items[-1] += f" (closest: call #{aidx}, step {steps[aidx]}: {why})"
                            break
                parts.append("missing: " + "; ".join(items) + (f" … and {len(missing) - 5} more" if len(missing) > 5 else ""))
            if unexpected:
                parts.append("unexpected: " + "; ".join([f"#{actual[j]} (step {steps[actual[j]]}) {r(calls[actual[j]])}" for j in unexpected[:5]])
                             + (f" … and {len(unexpected) - 5} more" if len(unexpected) > 5 else ""))
            for pos, (ei, ai) in enumerate(zip(expected, actual)):
                e, a = given[ei], calls[ai]
                if pos not in adj[pos]:
                    why = f" ({'arguments not recorded' if a.arguments_missing else diff(pos, pos)})" if e.name == a.name else ""
                    parts.append(f"in order, first divergence at the {_ordinal(pos + 1)} call (trace call #{ai}, step {steps[ai]}, tool {a.name!r}): "
                                 f"expected [{ei}] {r(e)}, got {r(a)}{why}")
                    break
            else:
                if na < ne:
                    parts.append(f"in order, the calls end after {na} call{'' if na == 1 else 's'}; next expected [{expected[na]}] {r(given[expected[na]])}")
                elif na > ne:
                    parts.append(f"in order, an extra {_ordinal(ne + 1)} call (trace call #{actual[ne]}, step {steps[actual[ne]]}): {r(calls[actual[ne]])}")
        out[0] = "; ".join(parts)
    if tj is not None:
        exp_names, names, k = tj
        na, ne = len(names), len(exp_names)
        if k is None:
            out[1] = ("both actual and expected trajectories are empty" if not names and not exp_names else
                      f"{'actual' if not names else 'expected'} trajectory is empty (expected: {exp_names!r}, actual: {names!r})")
        else:
            key = ("t", k, na, ne, det[1]["precision"], det[1]["recall"], det[1]["f1"])
            out[1] = f"{_HEADS.get(key) or _head(key)} (expected: {exp_names!r}, actual: {names!r})"
            if k < na or k < ne:  # where the two lists first part
                pos = next((p for p, (e, a) in enumerate(zip(exp_names, names)) if e != a), min(na, ne))
                if pos < min(na, ne) or na > ne:
                    what = f"expected {exp_names[pos]!r}, got {names[pos]!r}" if pos < min(na, ne) else f"unexpected {names[pos]!r} after the expected sequence"
                    out[1] += f"; first divergence at the {_ordinal(pos + 1)} call (trace call #{ok[pos]}, step {steps[ok[pos]]}) {r(calls[ok[pos]])}: {what}"
                else:
                    out[1] += f"; first divergence at the {_ordinal(pos + 1)} call: expected {exp_names[pos]!r}, but the trajectory ended"
    if tc is not None:
        out[2] = (f"missing tools: {_describe(tc[1])}" if tc[1] else f"called the expected tools {sorted(tc[0])!r}"
                  + (f" (extra allowed: {_describe(tc[2])})" if tc[2] else ""))
    for key in (("b", len(calls), MAX_CALLS, "tool call(s)"), ("b", det[4]["count"], MAX_REQUESTS,  # type: ignore[assignment]
                "model request(s) (counted from the trace's steps)" if counted else "model request(s) (from usage.requests)")):
        out.append(_HEADS.get(key) or _head(key))
    out.append(f"output contains {CONTAINS!r}" if values[5] else f"output {_quoted(output)} does not contain {CONTAINS!r}")
    return out


def _quoted(out: str) -> str:
    """The output as a failed Contains quotes it (`score.quoted.quoted_output`): whole up to 100 characters, else its
    first and last 50 around `…` and its length; credentials masked, each end reading past its cut."""
    if len(out) <= 100:
        return repr(redact(out))
    head, tail = redact(out, 50)[:50], redact(out[-2098:])[-50:]
    return f"{head + '…' + tail!r} ({len(out)} characters, the middle left out)"


# ---- the lines, as pydantic writes `CaseResult` ----
def _pydantic_floats(v: Any) -> Any:
    """`v` with each float from 1e16 as pydantic writes it (`1e+16`; msgspec writes `1e16`)."""
    if type(v) is float and abs(v) >= 1e16:
        return msgspec.Raw(_enc(v).replace(b"e", b"e+"))
    if type(v) is dict:
        return {k: _pydantic_floats(x) for k, x in v.items()}
    return [_pydantic_floats(x) for x in v] if type(v) is list else v


def _meta(metadata: dict[str, Any]) -> Any:
    b = _enc(metadata)
    return msgspec.Raw(b) if b"0e" not in b.translate(_DIGITS) else _pydantic_floats(metadata)


def _invalid(cid: str, labels: tuple[Any, Any], message: str, file: str, line: int, field: str | None, took: float) -> bytes:
    return floor._encode({"case_id": cid, "trial": 0, "status": "invalid_input", "tags": labels[0], "metadata": _meta(labels[1]),
                          "scores": {}, "error": {"kind": "invalid_input", "message": message, "file": file, "line": line,
                                                  "field": field, "details": None}, "duration_s": took})


def repeated(cid: str, name: str, i: int, at: int, line: bytes) -> tuple[bytes, guar.Group]:
    """tracejudge's line for a repeated id (`admit.duplicate_error`: the record's tags and metadata, or its own fault
    when it has one) and its JUnit group."""
    got: tuple[Any, Any]
    msg, key, got = f"duplicate case id {redact(repr(cid))}: first at {name}:{at}, again at {name}:{i}", f"{cid}@{name}:{i}", ([], {})
    try:
        case = floor._decode(line)
        got = labels(case.tags, case.metadata)
    except msgspec.DecodeError as exc:
        msg += f"; this record is also invalid: {exc}"
    return (_invalid(key, got, msg, name, i, "id", 0.0) + b"\n",
            (guar._xml(key), (guar._xml(msg),) * len(CHECKS), array("I", range(len(CHECKS))).tobytes()))


def work(task: tuple[str, int, list[Any]], more: Any = None) -> tuple[bytes, bytes, int, list[float]]:
    """`_floor_guarantees.work` with tracejudge's lines: → (result lines, `_floor_guarantees._EXTRA`, the values (NaN:
    not computed), ids, JUnit texts, skipped cells; errors; CPU s of decode / checks / render / free). `more(rows,
    said, masked, lines, durations)` (`_floor_outputs`) gives bytes to append to the payload."""
    name, first, lines = task
    clock, started, n = time.thread_time, time.perf_counter(), len(CHECKS)
    t0 = clock()
    decoded: list[Any] = []  # a case, or (None, case id, message, field, (tags, metadata), line)
    for i, line in enumerate(lines, first):
        try:
            case = floor._decode(line)
        except msgspec.DecodeError as exc:  # (pydantic's message is tracejudge's: not here)
            decoded.append((None, guar.peek_id(line) or f"{name}:{i}", str(exc), None, ([], {}), i))
            continue
        decoded.append(case if case.trace is not None else (None, case.id, "case has no trace and no target is configured "
                                                            "to produce one", "trace", (case.tags, case.metadata), i))
    gc.freeze()  # the chunk's cases: alive till it is written, acyclic; no collection need walk them
    t1 = clock()
    rows = [c if type(c) is tuple else (c, *checks(c)) for c in decoded]
    t2 = clock()
    said: list[Any] = [None if row[0] is None else reasons(*row[1:]) for row in rows]
    t3 = clock()
    masked: list[Any] = []  # (tags, metadata, details) as the line holds them
    for row, rs in zip(rows, said):
        if row[0] is None:
            masked.append(labels(*row[4]))
            continue
        det = row[2]
        if not _clean_names(row[0], row[3][0]):  # a tool name holds a credential: every reason and details' key masked
            rs[:], det = [redact(x) for x in rs], [_masked(d, False) if d else d for d in det]
        masked.append((*labels(row[0].tags, row[0].metadata), det))
    t4 = clock()
    out, vals, errors, nan, durations = [], array("d"), 0, float("nan"), array("d")
    for row, rs, lab in zip(rows, said, masked):
        if row[0] is None:
            durations.append(took := round(time.perf_counter() - started, 6))
            out.append(_invalid(row[1], lab, row[2], name, row[5], row[3], took))
            errors += 1
            continue
        vals.extend([nan if v is None else v for v in row[1]])
        out.append(floor._encode({"case_id": row[0].id, "trial": 0, "status": "ok", "tags": lab[0], "metadata": _meta(lab[1]),
                                  "scores": {k: {"value": v, "passed": None if v is None else v >= 1.0, "reason": x, "details": d,
                                                 "judge": None} for k, v, x, d in zip(CHECKS, row[1], rs, lab[2])},
                                  "error": None, "duration_s": (took := round(time.perf_counter() - started, 6))}))
        durations.append(took)
    out.append(b"")
    blob, vals_b = b"\n".join(out), vals.tobytes()
    t5 = clock()
    get, head = guar._HEADS.get, guar._head  # JUnit: a text per check, a value's not computed a skipped cell
    texts = [("error: " + row[2],) * n if row[0] is None else [x if v is None else (get(v) or head(v)) + x for v, x in zip(row[1], rs)]
             for row, rs in zip(rows, said)]
    skipped = [p * n + j for p, row in enumerate(rows) for j in range(n) if row[0] is None or row[1][j] is None]
    parts = [guar._joined([row[1] if row[0] is None else row[0].id for row in rows]), *map(guar._joined, zip(*texts)),
             array("I", skipped).tobytes()]
    tail = b"" if more is None else more(rows, said, masked, out, durations)  # (timing itself: within junit_text here)
    t6 = clock()
    del decoded, rows, said, masked, texts  # (as the floor's: timed apart)
    extra = guar._EXTRA.pack(0.0, t6 - t5, t3 - t2, t4 - t3, len(vals_b), *map(len, parts))
    payload = b"".join([extra, vals_b, *parts, tail])
    return blob, payload, errors, [t1 - t0, t2 - t1, t5 - t4, clock() - t6]


def run(cases: str, out_dir: str, processes: int) -> tuple[dict[str, Any], dict[str, float]]:
    """`_floor_guarantees.run` with this module's lines (the file named by its absolute path, as tracejudge names it)."""
    summary, took = guar.run(cases, out_dir, processes, work=work, name=os.path.abspath(cases), repeated=repeated,
                             phases=("reasons", "redact"))
    del took["details"]  # (within checks here)
    return summary, took
