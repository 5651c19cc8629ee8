"""One provider-neutral judge request for a plan's questions, its prompt-token estimate, its cache-key components and its
form on the wire."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tracejudge.core.config import JudgeConfig
from tracejudge.llm.cache import canonical
from tracejudge.llm.judge_tokenizer import Spec, prompt_counter
from tracejudge.llm.providers import JudgeRequest, build_payload
from tracejudge.stages.judge.base import ANSWERS_SCHEMA, ANSWERS_SCHEMA_NAME, Plan, Question
from tracejudge.stages.judge.fence_labels import asking
from tracejudge.stages.judge.trace_text import whole_text

__all__ = ["Wire", "build_request", "key_components", "request_tokens", "wire_of"]


@dataclass(frozen=True)
class Wire:
    """A request ready to send: its `payload` in the provider's protocol, that payload's JSON `body` (the bytes sent, as
    aiohttp's `json=` encodes it) and its prompt `tokens` (what the rate limiter admits it by)."""

    payload: dict[str, Any]
    body: bytes
    tokens: int


def wire_of(req: JudgeRequest, protocol: str, structured: str, tokens: int) -> Wire:
    """`req` ready to send in `protocol` (`structured`: see `build_payload`), its prompt counted as `tokens`."""
    payload = build_payload(protocol, req, structured)
    return Wire(payload, json.dumps(payload).encode(), tokens)


def build_request(plan: Plan, questions: list[Question], cfg: JudgeConfig, omit: int = 0) -> JudgeRequest:
    """The request asking `questions` of `plan` (its case text with `omit` middle steps left out).

    Its schema names exactly the asked question ids (`TC1`…) as required properties.
    """
    metric = plan.metric
    # Only a plan asking about items passes `keep` (its `render` takes it); every other render is called as before. The
    # fence marks a trace line that starts with one of the ids this request asks (`asking`; a graded prompt lists none).
    with asking(asked_ids(plan, questions)):
        trace = plan.render(omit, plan.keep) if plan.keep else plan.render(omit)
    ask = plan.ask_text(questions)
    return JudgeRequest(
        model=cfg.model,
        messages=({"role": "system", "content": metric.system_prompt(plan.kind)}, {"role": "user", "content": whole_text(f"{trace}\n\n{ask}")}),
        # Anthropic keeps the shared list schema: its tools come first in its prompt, and one tool for every metric keeps a
        # case's trace in the prefix its metrics share (Anthropic does not decode under the schema, so nothing is lost).
        schema=ANSWERS_SCHEMA if cfg.provider == "anthropic" and plan.kind == "yes_no" else metric.verdict_schema(plan, [plan.full_id(q) for q in questions]),
        schema_name=ANSWERS_SCHEMA_NAME if plan.kind == "yes_no" else "verdict",
        max_tokens=cfg.max_tokens * max(1, len(plan.parts)),  # a grouped plan answers for each of its metrics
        temperature=cfg.temperature,
        cache_prefix=len(trace) if cfg.cache_hints and plan.extra.get("cache_hint", True) else 0,
        extra_body=cfg.extra_body or None,
    )


def asked_ids(plan: Plan, questions: list[Question]) -> list[str]:
    """The question ids a request asking `questions` of `plan` lists after the fence (`TC1`…; none for a graded prompt)."""
    if plan.kind != "yes_no":
        return []
    if plan.parts:  # (a grouped plan's ids are the prompt's already)
        return [q.id for q in questions]
    prefix = plan.prefix  # (`Plan.full_id`, its prefix found once)
    return [prefix + q.id.removeprefix("q") for q in questions]


def request_tokens(req: JudgeRequest, tokenizer: Spec = None) -> int:
    """Estimated prompt tokens of `req` (messages + schema), counted by tiktoken or the `judge.tokenizer` spec (`spec_of`)."""
    return prompt_counter(req.model, tokenizer).messages(list(req.messages), canonical(req.schema))


def key_components(provider: str, base_url: str, req: JudgeRequest, prompt_version: str, rubric: Any, trial: int,
                   structured: str = "json_schema", served_model: dict[str, Any] | None = None) -> dict[str, Any]:
    """Exactly the cache key components (see `tracejudge.llm.cache`); `structured` enters them only when not `json_schema`,
    `served_model` (what a self-hosted server said of its weights, `tracejudge.llm.served_model`) only when known, and
    `req.extra_body` (`judge.extra_body`) only when it holds a field, so the keys of earlier runs, and every hosted API's, stay valid."""
    return {
        "provider": provider,
        "base_url": base_url,
        "model": req.model,
        "messages": list(req.messages),
        "sampling": {"temperature": req.temperature, "max_tokens": req.max_tokens},
        "response_format": {"name": req.schema_name, "schema": req.schema, **({"mode": structured} if structured != "json_schema" else {})},
        "prompt_version": prompt_version,
        "rubric": rubric,
        "trial": trial,
        **({"served_model": served_model} if served_model is not None else {}),
        **({"extra_body": req.extra_body} if req.extra_body else {}),
    }
