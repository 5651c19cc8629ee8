"""The two ends of `tracejudge estimate`'s range (`tracejudge.stages.judge.estimate`'s module doc says what each assumes).

Low: each reply as short as its verdict format allows (`least_reply`): the JSON object the request's schema
describes — every required key, each answer its shortest allowed value, each reason empty — written without
whitespace. A model writes at least that (and a reason of some words besides), so a run's real output is never
below it. A Rubric's `{score, reason}`, a grouped request's answers for every metric, a multi-item request's
verdict per item and Anthropic's shared `answers` list (one entry per question id the prompt lists) are all read
from the schema the run sends.

High: each request that may be sent at its bound (`add_bound`): its reply as long as `max_tokens` allows, no
provider prefix-cache discount; and, for the repairs and re-asks, either the rate the last run in the same run
directory measured (`last_run_rate`) or the worst case (every reply unusable). `cost_range` makes the two ends
of the totals.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tracejudge.llm.providers import JudgeRequest

__all__ = ["FIELDS", "MetricEstimate", "add_bound", "cost_range", "finished_keys", "last_run_rate", "least_reply", "least_reply_tokens",
           "spent_so_far"]


@dataclass
class MetricEstimate:
    """Expected judge work of one metric (or one group of metrics asked together): counts, tokens, US dollars.

    `requests` are the requests that will be sent, `cache_hits` the requests
    (or, grouped, the items) the cache already answers or an earlier request of
    the run answers (`repeats` of them: the same content address): hits are never in
    `requests`, grouped or not. `cached_input_tokens` /
    `cache_write_input_tokens` are the parts of `input_tokens` a provider's
    prompt cache would serve / store. `output_tokens` and `cost_usd` are the
    expected figures (`expected_output_tokens` per question); `low_*` the range's
    low end (each reply as short as its format allows; a multi-item request's
    schema as small as its items allow; with `judge.calibration`, the multi-item
    requests packed without the sampled items, which the batcher may ask alone:
    the same request as their calibration one, so `low_requests` may be below
    `requests`), `high_*` the first requests at their
    bound (each reply at `max_tokens`, no prefix-cache discount, repeats and
    each item of a multi-item request sent alone), `again_*` one more request
    like each of those carrying a whole reply (a repair's shape), `worst_*` as
    if every reply needed its repair and re-asks.
    """

    cases: int = 0
    requests: int = 0
    cache_hits: int = 0
    repeats: int = 0  # of the cache hits: requests (or items) an earlier one of the run asks the same
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    no_request: int = 0
    questions: int = 0  # questions asked by the requests charged (not the cache hits)
    cached_input_tokens: int = 0
    cache_write_input_tokens: int = 0
    low_requests: int = 0
    low_input_tokens: int = 0
    low_output_tokens: int = 0
    low_cost_usd: float = 0.0
    high_requests: int = 0
    high_input_tokens: int = 0
    high_output_tokens: int = 0
    high_cost_usd: float = 0.0
    again_input_tokens: int = 0
    again_cost_usd: float = 0.0
    worst_requests: int = 0  # if every reply needed its repair and re-asks
    worst_input_tokens: int = 0
    worst_output_tokens: int = 0
    worst_cost_usd: float = 0.0
    truncated: int = 0  # requests fitted to the judge's context (priced as fitted, as the run sends them)
    too_long: int = 0  # requests that cannot fit: the run sends nothing for them


FIELDS = ("cases", "requests", "cache_hits", "repeats", "input_tokens", "output_tokens", "cost_usd", "no_request", "questions",
          "cached_input_tokens", "cache_write_input_tokens", "low_requests", "low_input_tokens", "low_output_tokens", "low_cost_usd",
          "high_requests", "high_input_tokens", "high_output_tokens", "high_cost_usd", "again_input_tokens", "again_cost_usd",
          "worst_requests", "worst_input_tokens", "worst_output_tokens", "worst_cost_usd", "truncated", "too_long")


def last_run_rate(run_dir: Path) -> float | None:
    """Repair and re-ask requests per first request in the last run of `run_dir` (its `summary.json`), or None without one,
    or when that run got no reply at all (a server that was not there measured no rate: 0 re-asks would be a guess)."""
    from tracejudge.engine import store

    try:
        judge = json.loads(store.read_text(run_dir / store.SUMMARY)).get("judge") or {}
        extra = sum(int(judge.get(k) or 0) for k in ("repairs", "parts_reasked_alone", "items_reasked_alone"))
        first = int(judge.get("requests") or 0) - extra
        answered = judge.get("answered")
        if answered is not None and int(answered) <= 0:
            return None
    except (OSError, ValueError, TypeError, AttributeError):
        return None
    return extra / first if first > 0 else None


def finished_keys(run_dir: Path) -> Callable[[int], bool] | None:
    """Whether a (case, trial) key (`keyset.result_key`) has a final result in `run_dir`, which a resume of it skips;
    None when the directory holds no result. Read as the resume reads it, without writing: the keys of `results.idx`
    but for those `checkpoint.json` holds as provisional (a budget skip, a failure the resume retries), and the lines
    of `results.jsonl` past the checkpoint (a segment killed before its next one: a line that `store` marks provisional
    is not final). Without a checkpoint, every line. Costs a read of the index, not a parse of every result."""
    from tracejudge.core.regular_file import open_regular
    from tracejudge.engine import store
    from tracejudge.engine.keyset import KeySet, result_key

    try:
        cp = json.loads(store.read_text(run_dir / store.CHECKPOINT))
        start, provisional = int(cp["results_bytes"]), {int(k) for k in cp.get("provisional") or {}}
        with open_regular(run_dir / store.INDEX) as fh:  # (a FIFO in its place: no index, not a wait)
            data = fh.read()
        done = KeySet.from_index(data[: int(cp["results_lines"]) * 8])
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        start, provisional, done = 0, set(), KeySet()
    for line in store.iter_result_lines(run_dir / store.RESULTS, start):
        key = store.line_key(line)
        if key is None:
            continue
        k = result_key(*key)
        if any(mark in line for mark in store.PROVISIONAL_MARKS):
            provisional.add(k)
        else:
            done.add_hash(k)
            provisional.discard(k)
    if not len(done):
        return None
    return lambda k: done.contains_hash(k) and k not in provisional


def spent_so_far(run_dir: Path, price: Any) -> dict[str, Any] | None:
    """What the earlier segments of the run in `run_dir` spent on the judge, which its resume's budget starts from (the
    caps are for the whole run: `resources.local_resources`): `{"tokens", "cost_usd", "requests"}`, read as the resume
    reads it (`run_summary._prior_judge`: the summary's judge block, the checkpoint's count from the results, the spend
    journal, the largest), its dollars priced from the tokens at `price` when unknown there, as the judge stage prices
    them (still unknown, None, without a price). None when the directory records no judge spending. Writes nothing."""
    from tracejudge.engine import store
    from tracejudge.engine.run_summary import _prior_judge
    from tracejudge.llm.prices import cost_usd

    spent = {"input_tokens": 0, "output_tokens": 0, "requests": 0, "answered": 0}
    try:
        got = json.loads(store.read_text(run_dir / store.CHECKPOINT)).get("judge_spent") or {}
        spent.update({k: int(got.get(k) or 0) for k in spent})
    except (OSError, ValueError, TypeError, AttributeError):
        pass
    try:
        block = _prior_judge(run_dir, spent)
        tokens = int(block.get("input_tokens") or 0) + int(block.get("output_tokens") or 0)
        dollars = block.get("cost_usd")
        requests = int(block.get("requests") or 0)
    except (OSError, ValueError, TypeError, AttributeError):
        return None
    if not tokens and not requests:
        return None
    if dollars is None and price is not None:
        dollars = cost_usd(price, int(block.get("input_tokens") or 0), int(block.get("output_tokens") or 0))
    return {"tokens": tokens, "cost_usd": None if dollars is None else float(dollars), "requests": requests}


def cost_range(total: MetricEstimate, rate: float | None) -> dict[str, dict[str, Any]]:
    """`{"low": …, "high": …}` requests, tokens and dollars: none re-asked, each reply as short as its format allows; and
    each request at its bound, re-asked at `rate` (None: the worst case). See the module doc."""
    low = {"requests": total.low_requests, "input_tokens": total.low_input_tokens, "output_tokens": total.low_output_tokens,
           "cost_usd": round(total.low_cost_usd, 6)}
    if rate is None:
        high = {"requests": total.worst_requests, "input_tokens": total.worst_input_tokens, "output_tokens": total.worst_output_tokens,
                "cost_usd": round(total.worst_cost_usd, 6)}
    else:
        high = {"requests": math.ceil(total.high_requests * (1 + rate)),
                "input_tokens": total.high_input_tokens + math.ceil(total.again_input_tokens * rate),
                "output_tokens": math.ceil(total.high_output_tokens * (1 + rate)),
                "cost_usd": round(total.high_cost_usd + total.again_cost_usd * rate, 6)}
    return {"low": low, "high": high}


def add_bound(est: MetricEstimate, dollars: Callable[[int, int, int, int], float], note: int, tin: int, cap: int, write: int,
              repair: bool, plain: int) -> None:
    """Add to `est` the range's high end of one request that may be sent (`tin` prompt tokens, `cap` its max_tokens,
    `write` the prompt tokens a provider cache could write; `dollars(input, output, cached, written)` prices a usage,
    `note` is what a repair adds besides the reply): its reply at `cap`, no prefix-cache discount; one more like it
    carrying a whole reply (`again_*`); the worst case, its repair (`repair`) and `plain` re-asks each priced as it."""
    first = dollars(tin, cap, 0, write)
    again_in = tin + cap + note
    again = dollars(again_in, cap, 0, write)
    est.high_requests += 1
    est.high_input_tokens += tin
    est.high_output_tokens += cap
    est.high_cost_usd += first
    est.again_input_tokens += again_in
    est.again_cost_usd += again
    n = 1 + repair + plain
    est.worst_requests += n
    est.worst_input_tokens += tin * (1 + plain) + (again_in if repair else 0)
    est.worst_output_tokens += n * cap
    est.worst_cost_usd += first * (1 + plain) + (again if repair else 0)


_COMPACT = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)


def least_reply(schema: dict[str, Any], question_ids: list[str]) -> str:
    """The shortest JSON text that `schema` accepts, with an `answers` list (Anthropic's shared schema) holding one
    entry per id of `question_ids` (the ids the prompt lists)."""
    props = schema.get("properties") if isinstance(schema, dict) else None
    if isinstance(props, dict) and isinstance(props.get("answers"), dict) and props["answers"].get("type") == "array":
        item = _least(props["answers"].get("items") or {}, schema, 0)
        rows = [{**item, "id": q} if isinstance(item, dict) else item for q in question_ids]
        return _COMPACT.encode({"answers": rows})
    return _COMPACT.encode(_least(schema, schema, 0))


def least_reply_tokens(req: JudgeRequest, question_ids: list[str], count: Any) -> int:
    """Output tokens of the shortest reply to `req` (`least_reply` of its schema), counted by `count(text)`; 0 for a
    schema it cannot read (a bound all the same)."""
    try:
        return int(count(least_reply(req.schema, question_ids)))
    except (TypeError, ValueError, AttributeError, RecursionError):
        return 0


def _shortest(values: list[Any]) -> Any:
    return min(values, key=lambda v: len(_COMPACT.encode(v)))


def _least(schema: Any, root: dict[str, Any], depth: int) -> Any:
    if not isinstance(schema, dict) or depth > 32:
        return None
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        node: Any = root
        for part in ref[2:].split("/"):
            node = node.get(part.replace("~1", "/").replace("~0", "~")) if isinstance(node, dict) else None
        return _least(node, root, depth + 1)
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return _shortest(schema["enum"])
    options = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(options, list) and options:
        return _shortest([_least(o, root, depth + 1) for o in options])
    if isinstance(schema.get("allOf"), list) and schema["allOf"]:
        return _least(schema["allOf"][0], root, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        return _shortest([_least({**schema, "type": k}, root, depth + 1) for k in kind] or [None])
    if kind == "object" or (kind is None and "properties" in schema):
        props = schema.get("properties") or {}
        required = [k for k in schema.get("required") or [] if isinstance(k, str)]
        return {k: _least(props.get(k, {}), root, depth + 1) for k in required}
    if kind == "array":
        return [_least(schema.get("items") or {}, root, depth + 1) for _ in range(int(schema.get("minItems") or 0))]
    if kind == "string":
        return "x" * int(schema.get("minLength") or 0)
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", 0))
        low = low if isinstance(low, (int, float)) else 0
        return int(low) if kind == "integer" else low
    if kind == "boolean":
        return False
    return None
