"""Fitting a judge prompt into the judge's context window (`judge.too_long`).

`fit_request(plan, questions, cfg)` builds the request and, when its prompt
would not fit (`context_tokens` − the request's own `max_tokens`, which for a
grouped request is `max_tokens` × its metrics; prompts counted with
`judge.tokenizer`), applies the policy:
`truncate` first cuts oversized sections other than the trace (the task, the
final output, passages: the longest first, to one common cap that fits, never
below `FIELD_CHARS`; `field_cut`), then leaves out middle steps (the task, the
first and last steps, the user's turns and the output stay; only when every
middle step is out and it still does not fit are the system prompts cut
further, `system_section`, and then middle user turns left
out, see `conversation`), and as the last resort cuts every section, the
trace's too, each with the visible `…[N characters cut]` marker; `skip`
gives up. Questions about calls or steps (`Question.step`) are asked only
about what the fitted prompt shows: the steps holding them stay whole and
steps are left out after them, or fewer of them are asked (`Fitted.asked`),
or, when none can be shown, the request does not fit. It is plain CPU work; the judge client runs it
in a worker thread, so the event loop keeps serving other cases while a
2-million-token trace is rendered and measured.

The truncation search is near-linear in the trace: the whole prompt is
counted once, each step's rendered text once (the steps are found in the
rendered prompt by their `Step N:` headers), and the number of steps to
omit is then found with prefix sums; only the chosen request (which fits,
so it is short) is counted again to confirm, and corrected in a few rounds
when token boundaries make the estimate slightly low. The earlier search
re-rendered and re-counted the whole prompt for every candidate, which grows
with the square of the trace (279 s for 2 million tokens). A prompt far over
the window (a 60 MB final output) is not counted whole either: its cuttable
sections are clipped first and the cut searched from there, and a prompt
large in many sections is proven over the window by its head (`fit_count`).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import anyio

from tracejudge.core.config import JudgeConfig
from tracejudge.llm.judge_tokenizer import Spec, spec_of
from tracejudge.stages.judge.base import Plan, Question
from tracejudge.stages.judge.trace_text import FIELD_CHARS, droppable, kept_head
from tracejudge.stages.judge.conversation import step_omit
from tracejudge.stages.judge.client import JudgeRequest, build_request, request_tokens
from tracejudge.stages.judge.field_cut import TRACE_SECTIONS, cutting, water_level
from tracejudge.stages.judge.fit_count import count as _count, fit_tokens, over_window
from tracejudge.stages.judge.step_estimate import MARKER_TOKENS as _MARKER_TOKENS
from tracejudge.stages.judge.step_estimate import estimate as _estimate, smallest_omit as _smallest_omit, step_tokens as _step_tokens
from tracejudge.stages.judge.token_floor import over_by_bytes, prompt_bytes, within_by_bytes

__all__ = ["LONG_PROMPT_BYTES", "Fitted", "count_prompt", "exceeds", "fit_request", "over_window", "prompt_bytes"]

LONG_PROMPT_BYTES = 64 << 10
"""`count_prompt` counts a prompt over this many bytes in a worker thread (a few ms of tokenizing and more)."""

_ROUNDS = 6
_LAST_FLOOR = 200  # characters a section keeps when everything else is out already


@dataclass
class Fitted:
    """The request to send (`omit` middle steps left out), its prompt `tokens` (0: short, not counted), and `fits`.

    `cap` is the characters every oversized section was cut to (None: none was), `cut` the titles of those sections.
    `keep`: the leading steps kept whole (those holding the items asked about); `asked`: the questions the request
    asks when fewer than given (the others ask about items the fitted prompt could not show), else None; `why`:
    what made a request that does not fit impossible, for the reason; `over`: `tokens` of a request that does not fit is
    a lower bound (a prompt far over the window is not counted whole: `fit_count.count`).
    """

    req: JudgeRequest
    omit: int
    tokens: int
    fits: bool
    cap: int | None = None
    cut: list[str] = field(default_factory=list)
    asked: list[Question] | None = None
    keep: int = 0
    why: str = ""
    over: bool = False

    @property
    def truncated(self) -> bool:
        """Whether anything of the case was left out or cut to fit."""
        return bool(self.omit or self.cut)


async def count_prompt(req: JudgeRequest, tokenizer: Spec = None) -> int:
    """`request_tokens(req, tokenizer)`, off the event loop when the prompt is long."""
    if prompt_bytes(req) > LONG_PROMPT_BYTES:
        return await anyio.to_thread.run_sync(request_tokens, req, tokenizer, abandon_on_cancel=True)
    return request_tokens(req, tokenizer)


async def exceeds(req: JudgeRequest, limit: int, tokenizer: Spec = None) -> bool:
    """`over_window(req, limit, tokenizer)`, decided by the bytes on the event loop and counted off it when long."""
    if within_by_bytes(req, limit, tokenizer):
        return False
    if over_by_bytes(req, limit, tokenizer):
        return True
    if prompt_bytes(req) > LONG_PROMPT_BYTES:
        return await anyio.to_thread.run_sync(over_window, req, limit, tokenizer, abandon_on_cancel=True)
    return request_tokens(req, tokenizer) > limit


def fit_request(plan: Plan, questions: list[Question], cfg: JudgeConfig) -> Fitted:
    """The request for `plan`, fitted to the context window under `cfg.too_long`.

    `fits` is False when it cannot fit (policy `skip`, or nothing left to
    leave out or cut); `tokens` is then the full prompt's count (or, `over`, a lower bound of it), for the reason.
    Under `truncate`: sections other than the trace over the window's share are
    cut first (never below `FIELD_CHARS`, the cut every step field gets), then
    middle steps and turns are left out; as the last resort, with every middle
    step and turn out, every section (the trace's included) is cut (`field_cut`).

    Questions about items (`Question.step`: calls, steps) are never asked about what the prompt does not show: the
    steps up to the last item asked about stay whole (steps are left out after them). When even that does not fit,
    the request asks about fewer items, the first ones whose steps fit (`Fitted.asked`), and when none fits
    it does not fit (`why` says so). A prompt that fits whole is built exactly as without items.
    """
    need = max((q.step for q in questions), default=0)
    if need != plan.keep:
        plan = plan.copy()
        plan.keep = need
    fitted = _fit(plan, questions, cfg)
    fitted.keep = need
    if fitted.fits or not need or cfg.too_long != "truncate":
        return fitted
    fewer = _ask_fewer(plan, questions, cfg)
    if fewer is not None:
        return fewer
    fitted.why = "no call or step asked about fits in the judge's context with its step shown"
    return fitted


def _ask_fewer(plan: Plan, questions: list[Question], cfg: JudgeConfig) -> Fitted | None:
    """The request keeping the most leading steps that fits, asking only the questions whose items it shows; None when none.

    A plan of several metrics (`Plan.parts`) keeps at least one question of each metric that asked any, so no metric
    is scored on nothing. Bisection: keeping fewer steps never makes the prompt longer.
    """
    best: Fitted | None = None
    lo, hi = 1, plan.keep - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        got = _shown(plan, questions, cfg, mid)
        if got is not None:
            best, lo = got, mid + 1
        else:
            hi = mid - 1
    return best


def _shown(plan: Plan, questions: list[Question], cfg: JudgeConfig, keep: int) -> Fitted | None:
    sub = plan.copy()
    sub.keep = keep
    fitted = _fit(sub, questions, cfg)
    if not fitted.fits:
        return None
    steps, _ = step_omit(plan.steps, fitted.omit, keep)
    head = kept_head(plan.steps, steps, keep)
    asked = [q for q in questions if not (steps and head < q.step <= head + steps)]
    for part in plan.parts or [plan]:
        mine = {part.full_id(q) for q in part.questions} if plan.parts else {q.id for q in questions}
        if any(q.step for q in questions if q.id in mine) and not any(q.step for q in asked if q.id in mine):
            return None
    with cutting(fitted.cap):  # the same sections cut as in the fitted request, with fewer questions after them
        req = build_request(sub, asked, cfg, fitted.omit)
    tokens = request_tokens(req, spec_of(cfg))
    if tokens > cfg.context_tokens - req.max_tokens:
        return None
    return Fitted(req, fitted.omit, tokens, True, fitted.cap, fitted.cut, asked if len(asked) < len(questions) else None, keep)


def _fit(plan: Plan, questions: list[Question], cfg: JudgeConfig) -> Fitted:
    # (measured while rendered, the request unchanged: no render of a huge prompt again only to learn its sections' lengths)
    with cutting(None) as measured:
        req = build_request(plan, questions, cfg, 0)
    # The output the request really asks for: a grouped request asks max_tokens for each of its metrics.
    limit = cfg.context_tokens - req.max_tokens
    tok = spec_of(cfg)
    if within_by_bytes(req, limit, tok):
        return Fitted(req, 0, 0, True)
    whole = _count(plan, questions, cfg, 0, req, limit, tok, measured.lengths, trace_too=False)
    if whole.tokens <= limit:
        return Fitted(req, 0, whole.tokens, True)
    if cfg.too_long != "truncate":
        return Fitted(req, 0, whole.low, False, over=whole.over)
    cap, cut, creq, ctokens, guessed = _cut_fields(plan, questions, cfg, 0, whole.req, whole.tokens, limit, tok, trace_too=False,
                                                   floor=FIELD_CHARS, clip=whole.clip, seen=measured.lengths, estimated=whole.estimated)
    if cap is None:  # (nothing to cut: the request is the whole, whose count may be an estimate)
        guessed = whole.estimated
    if ctokens <= limit:
        return Fitted(creq, 0, ctokens, True, cap, cut)
    if guessed and droppable(plan.steps, plan.keep) + _past_steps(plan):
        # Leaving steps out estimates from the prompt's own count; with none to leave out, the estimate (over the
        # window, as the prompt is) is all the rest needs: a 10 MB prompt is not tokenized only to be cut further.
        ctokens = request_tokens(creq, tok)
    with cutting(cap):
        fitted = _leave_out(plan, questions, cfg, creq, ctokens, limit, tok)
    if fitted is not None:
        # What the cap cut in the request sent, not in the whole one it was chosen on: leaving steps out can cut a
        # system prompt further (`system_section`) to below the cap, and its reason then said both cuts of it.
        with cutting(cap) as sent:
            build_request(plan, questions, cfg, fitted.omit)
        fitted.cap, fitted.cut = (cap, sent.cut) if sent.cut else (None, [])
        return fitted
    everything = droppable(plan.steps, plan.keep) + _past_steps(plan)
    with cutting(None, trace_too=True) as measured:
        bare = build_request(plan, questions, cfg, everything)
    last = _count(plan, questions, cfg, everything, bare, limit, tok, measured.lengths, trace_too=True)
    cap, cut, creq, ctokens, _ = _cut_fields(plan, questions, cfg, everything, last.req, last.tokens, limit, tok, trace_too=True,
                                             floor=_LAST_FLOOR, clip=last.clip, seen=measured.lengths, estimated=last.estimated)
    # Cutting the trace's own text could cut the calls or steps asked about: then the judge is not asked at all.
    if ctokens <= limit and not (plan.keep and TRACE_SECTIONS.intersection(cut)):
        return Fitted(creq, everything, ctokens, True, cap, cut)
    return Fitted(req, 0, whole.low, False, over=whole.over)


def _cut_fields(plan: Plan, questions: list[Question], cfg: JudgeConfig, omit: int, req: JudgeRequest, tokens: int, limit: int, tok: Spec,
                *, trace_too: bool, floor: int, clip: int | None = None, seen: list[int] | None = None,
                estimated: bool = False) -> tuple[int | None, list[str], JudgeRequest, int, bool]:
    """`(cap, sections cut, request, its tokens, whether they are an estimate)`: the longest sections cut to the largest
    common cap (≥ `floor`) that fits; a cut request still huge and over the window is not counted whole (`fit_tokens`).

    The characters to remove are estimated from the prompt's own characters per token, then corrected in a few
    rounds by the miss; when even `floor` is not enough, the sections are cut at `floor` (the caller goes on
    leaving steps out). `(None, [], req, tokens, False)` when no section can be cut. `req` and `tokens` may be the
    request with its sections clipped to `clip` characters (`fit_count.count`): the search then works on clipped lengths.
    `seen`: the sections' characters, measured as the uncut request was rendered (None: measured here). `estimated`:
    `tokens` is an estimate of the whole (`fit_count.head_count`), so after the first round each secant runs through the last two
    real counts instead.
    """
    if seen is None:
        with cutting(None, trace_too) as measured:
            build_request(plan, questions, cfg, omit)
        seen = measured.lengths
    lengths = seen if clip is None else [min(n, clip) for n in seen]
    if not any(n > floor for n in lengths):
        return None, [], req, tokens, False
    chars = sum(len(m["content"]) for m in req.messages)
    per_token = chars / max(1, tokens)  # first guess; then the ratio of what the cut really removed (a secant)
    target = limit - max(_MARKER_TOKENS, limit // 100)
    remove = int((tokens - target) * per_token)
    best: tuple[int | None, list[str], JudgeRequest, int, bool] | None = None
    last: tuple[int, int] | None = None  # (characters removed, tokens) of the last round, when `estimated`
    for _ in range(_ROUNDS):
        level = water_level(lengths, remove, floor)
        cap = floor if level is None else level
        with cutting(cap, trace_too) as done:
            cut = build_request(plan, questions, cfg, omit)
        got, guessed = fit_tokens(cut, limit, tok)
        if got <= limit and (best is None or best[3] > limit or got > best[3]):
            best = (cap, done.cut, cut, got, guessed)
        elif best is None:
            best = (cap, done.cut, cut, got, guessed)
        # At the floor with room to spare the first guess removed too much (a section's rendering longer than its own
        # characters, which the cap counts: `AllData`'s marks): the secant below raises the cap again.
        if (cap == floor and got > limit) or target * 0.95 <= got <= limit:
            break
        removed = sum(n - cap for n in lengths if n > cap)
        per_token = removed / max(1, tokens - got)
        if estimated:  # (from an estimated whole, a secant misses by the estimate's error each round: 200 characters kept, not 1,500)
            if last is not None and (removed - last[0]) * (last[1] - got) > 0:
                per_token = (removed - last[0]) / (last[1] - got)
            last = (removed, got)
        # (from what the floor really removed, which was less than asked: else each round creeps back by the miss alone)
        remove = max(0, (removed if level is None else remove) + int((got - target) * per_token))
    return best


def _leave_out(plan: Plan, questions: list[Question], cfg: JudgeConfig, req: JudgeRequest, tokens: int, limit: int, tok: Spec) -> Fitted | None:
    """The fewest middle steps (then middle user turns) left out that fit, or None when leaving all out does not fit."""
    most = droppable(plan.steps, plan.keep)  # steps that may be left out; past them, middle user turns (`conversation`)
    if most + _past_steps(plan) == 0:
        return None
    if most == 0:
        return _drop_turns(plan, questions, cfg, limit, tok)
    steps = list(itertools.accumulate(_step_tokens(req.messages[-1]["content"], plan.steps, req.model, plan.conversation, tok), initial=0))
    omit = 1
    for _ in range(_ROUNDS):
        omit = _smallest_omit(steps, plan.steps, tokens, limit, start=omit, keep=plan.keep)
        if omit is None:
            break
        cut = build_request(plan, questions, cfg, omit)
        got = request_tokens(cut, tok)
        if got <= limit:
            return Fitted(cut, omit, got, True)
        # The estimate was low (token boundaries, a step text found in the wrong place): aim lower by the miss.
        limit_left = limit - (got - _estimate(steps, plan.steps, tokens, omit, plan.keep))
        nxt = _smallest_omit(steps, plan.steps, tokens, limit_left, start=omit + 1, keep=plan.keep)
        omit = nxt if nxt is not None else omit + 1
        if omit > most:
            break
    cut = build_request(plan, questions, cfg, most)  # every middle step left out; the user's turns all stay
    got = request_tokens(cut, tok)
    if got <= limit:
        return Fitted(cut, most, got, True)
    return _drop_turns(plan, questions, cfg, limit, tok)


def _past_steps(plan: Plan) -> int:
    """What `render` may leave out or cut once every middle step is out: the system prompt's cut levels (`system_section`),
    then the middle user turns (all but the first and last)."""
    return plan.system + max(0, plan.turns - 2)


def _drop_turns(plan: Plan, questions: list[Question], cfg: JudgeConfig, limit: int, tok: Spec = None) -> Fitted | None:
    """Every middle step out and still too long: the system prompt cut further, then the fewest middle user turns left
    out, that fit (bisection: each level past the steps makes the prompt no longer), else None."""
    most = droppable(plan.steps, plan.keep)
    lo, hi = 1, _past_steps(plan)
    best: Fitted | None = None
    while lo <= hi:  # more turns left out never makes the prompt longer
        mid = (lo + hi) // 2
        cut = build_request(plan, questions, cfg, most + mid)
        got = request_tokens(cut, tok)
        if got <= limit:
            best, hi = Fitted(cut, most + mid, got, True), mid - 1
        else:
            lo = mid + 1
    return best
