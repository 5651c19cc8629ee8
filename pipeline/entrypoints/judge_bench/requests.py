"""The requests a bench sends: a sample of the run's own judge requests, or synthetic ones of a given size."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from tracejudge.core import registry
from tracejudge.core.config import JudgeConfig, RunConfig
from tracejudge.core.errors import ConfigError
from tracejudge.core.records import Case
from tracejudge.llm.providers import JudgeRequest

__all__ = ["BenchRequest", "build_sample", "synthetic_requests"]


@dataclass(frozen=True)
class BenchRequest:
    """One request to send: what it asks, which metric built it, our tiktoken count of its prompt, how many questions it asks.

    `check` reads a reply's text as the run would and raises (`ParseError`, any exception) when the run could not take
    a verdict from it; None: any reply counts as usable.
    """

    request: JudgeRequest
    metric: str
    prompt_tokens: int
    questions: int = 1
    check: Callable[[str], Any] | None = field(default=None, compare=False)


def _holds_json(text: str) -> None:
    """Raise `ParseError` unless `text` holds a JSON object outside any reasoning block: the check of a multi-item or
    synthetic request, whose verdicts the run reads item by item (a reply with no object at all has none of them)."""
    from tracejudge.stages.judge.parse import ParseError, json_objects

    if next(iter(json_objects(text)), None) is None:  # (json_objects skips reasoning blocks itself)
        raise ParseError("no JSON object in the reply")


def build_sample(config: RunConfig, sample: int) -> list[BenchRequest]:
    """The judge requests of the config's judge metrics for `sample` cases spread evenly over the dataset.

    Built as the run builds them (one request per question group, or
    multi-item requests of `judge.items_per_request` items). Raises
    `ConfigError` when the config has no judge metric or the dataset no
    valid case.
    """
    from tracejudge.llm.judge_tokenizer import spec_of
    from tracejudge.stages.extract import extract_record
    from tracejudge.stages.judge.base import JudgeMetric
    from tracejudge.stages.judge.client import build_request, parse_answers, request_tokens
    from tracejudge.stages.judge.multi import Item, build_multi_request, item_id
    from tracejudge.stages.judge.requests import case_requests, trace_reused

    cfg = config.judge or JudgeConfig()
    metrics = [m for m in (registry.build_metric(s) for s in config.metrics) if isinstance(m, JudgeMetric)]
    if not metrics:
        raise ConfigError("bench: the config has no judge metric (add one, or use --synthetic)")
    fmt = registry.format_for(config.dataset.format)
    ctx = fmt.prepare(config.dataset)
    cases = [c for c in (extract_record(raw, fmt, ctx) for raw in fmt.read(config.dataset)) if isinstance(c, Case)]
    if not cases:
        raise ConfigError(f"bench: {config.dataset.path} holds no valid case")
    step = max(1, len(cases) // max(1, sample))
    chosen = cases[::step][:sample]
    out: list[BenchRequest] = []
    tok = spec_of(cfg)
    items: dict[str, list[Item]] = {}
    for case in chosen:
        asked, _ = case_requests(case, metrics, cfg, reused=trace_reused(config, 1))  # (as the run marks its traces: samples too)
        for a in asked:
            if cfg.items_per_request > 1 and a.batchable:
                items.setdefault(a.key, []).append(Item(a.plan, 0, f"{case.id}|{a.key}|0"))
                continue
            for group in a.questions:
                req = build_request(a.plan, group, cfg)
                # The run's own reading of the reply (`parse_answers`), so the bench counts what the run could not use.
                out.append(BenchRequest(req, a.key, request_tokens(req, tok), len(group), partial(parse_answers, a.plan, group)))
    for key, mine in items.items():
        for i in range(0, len(mine), cfg.items_per_request):
            group_items = mine[i:i + cfg.items_per_request]
            for it in group_items:
                it.id = item_id(it, cfg)
            req = build_multi_request(group_items, cfg)
            out.append(BenchRequest(req, key, request_tokens(req, tok), sum(len(it.questions) for it in group_items), _holds_json))
    if not out:
        raise ConfigError("bench: the sampled cases give the judge metrics nothing to ask")
    return out


def synthetic_requests(model: str, prompt_tokens: int, max_tokens: int, count: int = 16,
                       extra_body: dict[str, Any] | None = None) -> list[BenchRequest]:
    """`count` distinct requests of about `prompt_tokens` prompt tokens (tiktoken) asking for a one-field verdict, each
    carrying `extra_body` (`judge.extra_body`: a model thinking or not is another speed)."""
    from tracejudge.stages.judge.client import request_tokens

    schema = {"type": "object", "properties": {"answer": {"enum": ["yes", "no"]}, "reason": {"type": "string"}},
              "required": ["answer", "reason"], "additionalProperties": False}
    out = []
    for i in range(count):
        def make(words: int) -> JudgeRequest:
            text = f"Case {i}. Did the agent complete the task?" + " step" * words
            return JudgeRequest(model, ({"role": "system", "content": "You are a strict judge."}, {"role": "user", "content": text}),
                                schema, "verdict", max_tokens, extra_body=extra_body or None)
        words = max(0, prompt_tokens - request_tokens(make(0)))
        req = make(words)
        # One correction: a few words merge into fewer tokens.
        req = make(max(0, words + prompt_tokens - request_tokens(req)))
        out.append(BenchRequest(req, "synthetic", request_tokens(req), check=_holds_json))
    return out
