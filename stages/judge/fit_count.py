"""Counting a judge prompt far over the context window no more than it takes to prove it over (`fit`'s first count).

Counting a huge prompt exactly costs what its size costs (tiktoken: 46 s for a 60 MB field of one letter repeated,
0.7 µs a character; 30 MB of 5,000 passages, seconds), and all the count decides is that the prompt does not fit and
how much to cut. `count` clips the prompt's huge sections first, and when its size is in many sections each under the
clip (passages, steps), counts its head only (`head_count`); `over_window` decides a prompt over a window the same way.
Prompts of fewer than `HUGE_CHARS` characters are always counted whole, as before.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from tracejudge.core.config import JudgeConfig
from tracejudge.llm.judge_tokenizer import Spec
from tracejudge.stages.judge.base import Plan, Question
from tracejudge.stages.judge.client import JudgeRequest, build_request, request_tokens
from tracejudge.stages.judge.field_cut import cutting
from tracejudge.stages.judge.step_estimate import MARKER_TOKENS
from tracejudge.stages.judge.token_floor import floor_tokens, over_by_bytes, within_by_bytes

__all__ = ["CLIP_PER_TOKEN", "HUGE_CHARS", "Count", "count", "fit_tokens", "head_count", "over_window"]

HUGE_CHARS = 1 << 20
"""A prompt over this many characters (and far over the window) is counted clipped, or by its head, first (`count`)."""
CLIP_PER_TOKEN = 16
"""Characters a token the first clip allows: twice English text's 4 even for a run of one letter (8)."""


@dataclass
class Count:
    """What `count` learnt of a prompt: `tokens` for the cut search (of `req`, which is the prompt with its cuttable
    sections clipped to `clip`, or an estimate of the whole when `estimated`), and `low`, tokens the whole prompt has at
    least (its count when counted whole)."""

    tokens: int
    clip: int | None
    req: JudgeRequest
    low: int
    estimated: bool = False

    @property
    def over(self) -> bool:
        """Whether the whole prompt was not counted (`low` is a lower bound, not its count)."""
        return self.clip is not None or self.estimated


def count(plan: Plan, questions: list[Question], cfg: JudgeConfig, omit: int, req: JudgeRequest, limit: int, tok: Spec,
           lengths: list[int], *, trace_too: bool) -> Count:
    """`req`'s prompt tokens, exactly — or, for a prompt far over the window, what cheaper counts prove of them.

    Counting a huge prompt exactly costs what its size costs (tiktoken: 46 s for a 60 MB field of one letter
    repeated, 0.7 µs a character), and all it decides is that the prompt does not fit and how much to cut. So a
    prompt of over `HUGE_CHARS` characters and `CLIP_PER_TOKEN` × `limit` is first counted with each cuttable
    section clipped to `clip` = `CLIP_PER_TOKEN` × `limit` characters (`req` of the result, the cut marker included):
    when that count is over `limit` by more than a marker, the whole prompt cannot fit either and every cut that
    fits cuts those sections below `clip`, so the cut is searched from the clipped request. Text of more characters a
    token than the clip assumes (a run of one character) clips at 8 times the characters, and so on.
    `lengths`: the cuttable sections' characters (`Cutting.lengths` of `req`'s render). When none is over the clip (5,000
    passages of 6,000 characters each, or a trace of 100,000 steps) only the prompt's head is counted, growing the same
    way (`head_count`), and the whole counted only when no head proves it over the window.
    """
    chars = sum(len(m["content"]) for m in req.messages)
    clip = CLIP_PER_TOKEN * limit
    huge = chars > max(HUGE_CHARS, clip)
    while huge and any(n > clip for n in lengths):
        with cutting(clip, trace_too):
            counted = build_request(plan, questions, cfg, omit)
        tokens = request_tokens(counted, tok)
        if tokens > limit + MARKER_TOKENS:
            # The whole holds the clipped text less its markers (a marker's tokens and a split token each) and the
            # characters clipped off, each token of which is at most the encoding's longest.
            off = [n - clip for n in lengths if n > clip]
            low = tokens - MARKER_TOKENS * len(off) + floor_tokens(sum(off), req.model, tok)
            return Count(tokens, clip, counted, max(low, limit))
        clip *= 8
    if huge:
        head = head_count(req, limit, tok)
        if head is not None:
            return head
    tokens = request_tokens(req, tok)
    return Count(tokens, None, req, tokens)


def head_count(req: JudgeRequest, limit: int, tok: Spec) -> Count | None:
    """`req` proven over `limit` by the tokens of its prompt's head (the last message's first characters: `CLIP_PER_TOKEN`
    × `limit` of them, then 8 times as many, and so on), or None when no head shorter than the whole is over.

    A head over `limit` by more than a marker's tokens proves the whole over too (what follows a head adds tokens, and
    cutting the text there splits one token at most). `tokens` is the head's count scaled to the whole's characters,
    for the cut search to start from (its rounds count what they cut); `low` is the head's count with the tokens the
    rest's characters hold at the least (`floor_tokens`).
    """
    *fixed, last = req.messages
    text = last["content"]
    head = CLIP_PER_TOKEN * limit
    while head < len(text):
        part = replace(req, messages=(*fixed, {**last, "content": text[:head]}))
        tokens = request_tokens(part, tok)
        if tokens > limit + MARKER_TOKENS:
            rest = len(text) - head
            low = tokens - MARKER_TOKENS + floor_tokens(rest, req.model, tok)
            return Count(tokens + math.ceil(tokens * rest / head), None, req, max(low, limit), estimated=True)
        head *= 8
    return None


def fit_tokens(req: JudgeRequest, limit: int, tok: Spec) -> tuple[int, bool]:
    """`(tokens, estimated)` of `req`'s prompt where they decide whether it fits in `limit`: counted whole, but for a
    prompt of over `HUGE_CHARS` characters whose head proves it over `limit` (`head_count`), then the head's count
    scaled to the whole (`estimated` True), over `limit` as the whole is.

    The cut search counts each cut it tries: with 5,000 passages each cut to the 2,000-character floor, the cut prompt
    was 10 MB, tokenized whole only to learn it still did not fit."""
    if sum(len(m["content"]) for m in req.messages) > HUGE_CHARS:
        head = head_count(req, limit, tok)
        if head is not None:
            return head.tokens, True
    return request_tokens(req, tok), False


def over_window(req: JudgeRequest, limit: int, tokenizer: Spec = None) -> bool:
    """Whether `req`'s prompt is over `limit` tokens as `request_tokens` counts it under `tokenizer`, decided without
    counting a prompt too short to be over (fewer bytes than `limit`) or too long to fit (more bytes than `limit` of the
    encoding's longest tokens, under a tiktoken count), nor a prompt of over `HUGE_CHARS` characters whose head is
    over (`head_count`). Blocking: `exceeds` runs it off the event loop; `tracejudge estimate` calls it as it is."""
    if within_by_bytes(req, limit, tokenizer):
        return False
    if over_by_bytes(req, limit, tokenizer):
        return True
    if sum(len(m["content"]) for m in req.messages) > HUGE_CHARS and head_count(req, limit, tokenizer) is not None:
        return True
    return request_tokens(req, tokenizer) > limit
