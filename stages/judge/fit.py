"""Fitting a judge prompt into the judge's context window (`judge.too_long`).

`fit_request(plan, questions, cfg)` builds the request and, when its prompt
would not fit (`context_tokens` − the request's own `max_tokens`, which for a
grouped request is `max_tokens` × its metrics; prompts counted with
`judge.tokenizer`), applies the policy:
`truncate` leaves out middle steps (the task, the first and last steps, the
user's turns and the output stay; only when every middle step is out and it
still does not fit are middle user turns left out, see `conversation`),
`skip` gives up. It is plain CPU work; the judge client runs it
in a worker thread, so the event loop keeps serving other cases while a
2-million-token trace is rendered and measured.

The truncation search is near-linear in the trace: the whole prompt is
counted once, each step's rendered text once (the steps are found in the
rendered prompt by their `Step N:` headers), and the number of steps to
omit is then found with prefix sums; only the chosen request (which fits,
so it is short) is counted again to confirm, and corrected in a few rounds
when token boundaries make the estimate slightly low. The earlier search
re-rendered and re-counted the whole prompt for every candidate, which grows
with the square of the trace (279 s for 2 million tokens).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import anyio

from tracejudge.core.config import JudgeConfig
from tracejudge.llm.judge_tokenizer import Spec, prompt_counter, spec_of
from tracejudge.stages.judge.base import Plan, Question
from tracejudge.stages.judge.client import JudgeRequest, build_request, request_tokens

__all__ = ["LONG_PROMPT_BYTES", "Fitted", "count_prompt", "fit_request", "prompt_bytes"]

LONG_PROMPT_BYTES = 64 << 10
"""`count_prompt` counts a prompt over this many bytes in a worker thread (a few ms of tokenizing and more)."""

_MARKER_TOKENS = 32  # the "[steps a–b omitted …]" line that replaces the omitted steps
_ROUNDS = 6


@dataclass
class Fitted:
    """The request to send (`omit` middle steps left out), its prompt `tokens` (0: short, not counted), and `fits`."""

    req: JudgeRequest
    omit: int
    tokens: int
    fits: bool


def prompt_bytes(req: JudgeRequest) -> int:
    """An upper bound of the prompt's tokens: a token is at least one byte (`repr` of the schema is never shorter than its JSON)."""
    return sum(len(m["content"].encode()) for m in req.messages) + len(repr(req.schema))


async def count_prompt(req: JudgeRequest, tokenizer: Spec = None) -> int:
    """`request_tokens(req, tokenizer)`, off the event loop when the prompt is long."""
    if prompt_bytes(req) > LONG_PROMPT_BYTES:
        return await anyio.to_thread.run_sync(request_tokens, req, tokenizer, abandon_on_cancel=True)
    return request_tokens(req, tokenizer)


def fit_request(plan: Plan, questions: list[Question], cfg: JudgeConfig) -> Fitted:
    """The request for `plan`, fitted to the context window under `cfg.too_long`.

    `fits` is False when it cannot fit (policy `skip`, or nothing left to
    leave out); `tokens` is then the full prompt's count, for the reason.
    """
    req = build_request(plan, questions, cfg, 0)
    # The output the request really asks for: a grouped request asks max_tokens for each of its metrics.
    limit = cfg.context_tokens - req.max_tokens
    tok = spec_of(cfg)
    factor = tok if isinstance(tok, float) else 1.0
    if prompt_bytes(req) * factor <= limit and not isinstance(tok, str):
        return Fitted(req, 0, 0, True)
    tokens = request_tokens(req, tok)
    if tokens <= limit:
        return Fitted(req, 0, tokens, True)
    most = max(0, plan.steps - 2)  # steps that may be left out; past them, middle user turns (`conversation`)
    if cfg.too_long != "truncate" or most + max(0, plan.turns - 2) == 0:
        return Fitted(req, 0, tokens, False)
    if most == 0:
        return _drop_turns(plan, questions, cfg, req, tokens, limit, tok)
    steps = list(itertools.accumulate(_step_tokens(req.messages[-1]["content"], plan.steps, req.model, plan.conversation, tok), initial=0))
    omit = 1
    for _ in range(_ROUNDS):
        omit = _smallest_omit(steps, plan.steps, tokens, limit, start=omit)
        if omit is None:
            break
        cut = build_request(plan, questions, cfg, omit)
        got = request_tokens(cut, tok)
        if got <= limit:
            return Fitted(cut, omit, got, True)
        # The estimate was low (token boundaries, a step text found in the wrong place): aim lower by the miss.
        limit_left = limit - (got - _estimate(steps, plan.steps, tokens, omit))
        nxt = _smallest_omit(steps, plan.steps, tokens, limit_left, start=omit + 1)
        omit = nxt if nxt is not None else omit + 1
        if omit > plan.steps - 2:
            break
    cut = build_request(plan, questions, cfg, most)  # every middle step left out; the user's turns all stay
    got = request_tokens(cut, tok)
    if got <= limit:
        return Fitted(cut, most, got, True)
    return _drop_turns(plan, questions, cfg, req, tokens, limit, tok)


def _drop_turns(plan: Plan, questions: list[Question], cfg: JudgeConfig, req: JudgeRequest, tokens: int, limit: int, tok: Spec = None) -> Fitted:
    """Every middle step out and still too long: the fewest middle user turns left out that fit (bisection), else no fit."""
    most = max(0, plan.steps - 2)
    lo, hi = 1, max(0, plan.turns - 2)
    best: Fitted | None = None
    while lo <= hi:  # more turns left out never makes the prompt longer
        mid = (lo + hi) // 2
        cut = build_request(plan, questions, cfg, most + mid)
        got = request_tokens(cut, tok)
        if got <= limit:
            best, hi = Fitted(cut, most + mid, got, True), mid - 1
        else:
            lo = mid + 1
    return best if best is not None else Fitted(req, 0, tokens, False)


def _step_tokens(text: str, n: int, model: str, turns: bool = False, tokenizer: Spec = None) -> list[int]:
    """Tokens of each rendered step 1..n-1 (the last step is never left out), found by its `Step i:` header.

    With `turns` (a conversation) a step ends where a `User k:` line follows it: the user's turns stay when
    steps are left out, so they are not counted as the step's. A step whose header cannot be found counts 0,
    which only makes the estimate low; the confirming count then corrects it.
    """
    out = [0] * n
    starts: list[int] = []
    pos = 0
    for i in range(1, n + 1):
        at = text.find(f"Step {i}:\n", pos)
        if at < 0:
            break
        starts.append(at)
        pos = at + 1
    for i, (a, b) in enumerate(itertools.pairwise(starts)):
        said = text.find("\nUser ", a, b) if turns else -1
        out[i] = prompt_counter(model, tokenizer).text(text[a : said + 1 if said >= 0 else b])
    return out


def _estimate(prefix: list[int], n: int, total: int, omit: int) -> int:
    # `prefix[k]` is the tokens of steps 1..k; as `render_steps`, steps head+1 .. head+omit are left out.
    head = (n - omit + 1) // 2
    return total - (prefix[head + omit] - prefix[head]) + _MARKER_TOKENS


def _smallest_omit(steps: list[int], n: int, total: int, limit: int, start: int) -> int | None:
    # One O(1) estimate per candidate: linear in the number of steps.
    for omit in range(max(1, start), n - 1):
        if _estimate(steps, n, total, omit) <= limit:
            return omit
    return None
