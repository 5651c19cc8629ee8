"""An inspect-ai sample's usage and metadata, as its case's `trace.usage` and `metadata` (format `inspect`, `inspect_samples`).

- `usage`: `model_usage` summed over the models (input tokens are inspect's full-rate, cache-read and cache-write tokens
  together, `cost_usd` the sum of `total_cost`, unknown when a model has none), `requests` the agent's steps, `latency_s`
  `total_time` (else `working_time`). A sample inspect ran again after an error (`retry_on_error`) keeps the attempt that
  ended it: its messages, events and `model_usage` are that attempt's (the log's `stats` count the failed attempts' tokens
  too, no sample does), so its usage is that attempt's, as its steps are.
- `metadata`: `task` and `model` (the log's), the sample metadata's scalar values under their own keys, and `inspect`:
  `{"sample_id", "epoch", "log"}` plus what the sample has of `scores` (each scorer's `value`), `limit`, `working_time`,
  `metadata` (its values that are not scalars, or whose key is taken), `unpaired_results` and `error_retries` (the error
  message of each attempt inspect retried, in order: the sample failed that many times before its last attempt);
  `run_error` is the sample's `error` message.
"""

from __future__ import annotations

import json
import math
from typing import Any

from tracejudge.stages.extract.common import fail, json_type
from tracejudge.stages.extract.inspect_logs import Sample, as_object

__all__ = ["metadata", "usage"]

_SCALARS = (str, int, float, bool, type(None))
_OWN_KEYS = frozenset({"task", "model", "inspect", "run_error", "expected_tool_calls", "tags"})


def usage(sample: dict[str, Any], requests: int, cid: str) -> dict[str, Any]:
    """The case's `trace.usage` (module docstring); raises `AdapterError` for a `model_usage` that is not one."""
    usage: dict[str, Any] = {"requests": requests}
    models = sample.get("model_usage")
    if isinstance(models, dict) and models:
        tokens, costs = [0, 0], []
        for model, spent in models.items():
            if not isinstance(spent, dict):
                fail(f"model_usage.{model}: expected a usage object, got {json_type(spent)}", field=f"model_usage.{model}", case_id=cid)
            for k, keys in enumerate((("input_tokens", "input_tokens_cache_read", "input_tokens_cache_write"), ("output_tokens",))):
                for key in keys:
                    n = spent.get(key)
                    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 0):
                        fail(f"model_usage.{model}.{key}: expected a token count, got {json.dumps(n)}", field=f"model_usage.{model}.{key}", case_id=cid)
                    tokens[k] += n or 0
            costs.append(spent.get("total_cost"))
        usage.update(input_tokens=tokens[0], output_tokens=tokens[1])
        if all(isinstance(c, (int, float)) and not isinstance(c, bool) and math.isfinite(c) and c >= 0 for c in costs):
            usage["cost_usd"] = sum(costs)
    for key in ("total_time", "working_time"):
        t = sample.get(key)
        if isinstance(t, (int, float)) and not isinstance(t, bool) and math.isfinite(t) and t >= 0:
            usage["latency_s"] = t
            break
    return usage


def metadata(sample: dict[str, Any], payload: Sample, unpaired: int) -> tuple[dict[str, Any], list[str]]:
    """`(the case's metadata, the sample metadata's tags)` (module docstring)."""
    meta: dict[str, Any] = {k: v for k, v in (("task", payload.log.task), ("model", payload.log.model)) if v is not None}
    own = as_object(sample.get("metadata"))
    inspect: dict[str, Any] = {"sample_id": sample["id"], "epoch": sample["epoch"], "log": payload.log.name}
    kept = {k: v for k, v in own.items() if k not in _OWN_KEYS and isinstance(v, _SCALARS)}
    rest = {k: v for k, v in own.items() if k not in kept and k != "expected_tool_calls" and not (k == "tags" and isinstance(v, list))}
    meta.update(kept)
    scores = sample.get("scores")
    if isinstance(scores, dict) and scores:
        inspect["scores"] = {k: _value(s.get("value") if isinstance(s, dict) else s) for k, s in scores.items()}
    for key, value in (("limit", sample.get("limit")), ("working_time", sample.get("working_time")), ("metadata", rest),
                       ("unpaired_results", unpaired), ("error_retries", _retried(sample))):
        if value not in (None, {}, 0, []):
            inspect[key] = value
    meta["inspect"] = inspect
    error = sample.get("error")
    if error:
        said = as_object(error).get("message", error)
        meta["run_error"] = said if isinstance(said, str) and said else json.dumps(error)
    tags = own.get("tags")
    return meta, [t for t in tags if isinstance(t, str)] if isinstance(tags, list) else []


def _retried(sample: dict[str, Any]) -> list[str]:
    """The error message of each attempt inspect retried (`error_retries`), in order."""
    retries = sample.get("error_retries")
    said = [as_object(r).get("message", r) for r in retries] if isinstance(retries, list) else []
    return [s if isinstance(s, str) and s else json.dumps(s) for s in said]


def _value(value: Any) -> Any:
    # A score inspect wrote as NaN or Infinity (its JSON allows them) stays readable, as text: a case refuses non-finite numbers.
    return str(value) if isinstance(value, float) and not math.isfinite(value) else value
