"""The repair request: the request again, the unusable reply, and a note saying what was wrong — fitted to the
judge's context window.

A repair adds the model's reply to a prompt that was fitted without it, so a long reply (a model rambling, or
reasoning cut at `max_tokens`) can push it past `judge.context_tokens`: the server then refuses it, and a refusal
of the request itself stops the run. The reply is cut to what fits (its head, where an answer usually starts, with
a note saying how much was left out); when not even the note fits, no repair is sent and the case ends with the
first reply's error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tracejudge.llm.providers import JudgeRequest

if TYPE_CHECKING:
    from tracejudge.stages.judge.client import Judge

__all__ = ["REPAIR", "repair_request"]

REPAIR = ("Your previous reply could not be used ({problem}). Reply again with only the JSON object the schema describes "
          "— every question id, nothing else — and keep each reason under 20 words.")

_CUT = "\n[… {n:,} more characters of this reply left out to fit the context window]"


def _with(req: JudgeRequest, said: str, problem: str) -> JudgeRequest:
    return JudgeRequest(req.model, (*req.messages, {"role": "assistant", "content": said or "(empty)"},
                                    {"role": "user", "content": REPAIR.format(problem=problem)}),
                        req.schema, req.schema_name, req.max_tokens, req.temperature, req.cache_prefix, req.extra_body)


async def repair_request(judge: Judge, req: JudgeRequest, raw: str, problem: str) -> JudgeRequest | None:
    """The repair of `req` after the unusable reply `raw`, within `judge.cfg.context_tokens` less `max_tokens`
    (counted by `judge.tokenizer`); `None` when it cannot fit even with the reply left out."""
    from tracejudge.stages.judge.fit import count_prompt

    limit = judge.cfg.context_tokens - req.max_tokens
    whole = _with(req, raw, problem)
    tokens = await count_prompt(whole, judge.tokenizer)
    if tokens <= limit:
        return whole
    bare = await count_prompt(_with(req, _CUT.format(n=len(raw)), problem), judge.tokenizer)
    if bare > limit:
        return None
    keep = len(raw)
    for _ in range(6):  # each try keeps the share of the reply its last count says fits, less a margin
        keep = int(keep * (limit - bare) / max(1, tokens - bare) * 0.9)
        fitted = _with(req, raw[:keep] + _CUT.format(n=len(raw) - keep), problem)
        tokens = await count_prompt(fitted, judge.tokenizer)
        if tokens <= limit:
            return fitted
    return _with(req, _CUT.format(n=len(raw)), problem)
