"""`tracejudge estimate CONFIG --show-prompt CASE_ID`: the judge requests a run would send about one case, as sent.

A verdict is only as good as what the judge was shown. To see why a judge
said what it said (or before trusting it on a night's sweep), this builds the
requests for one case exactly as the run builds them — the same grouping
(`judge.group`), the same fitting to `judge.context_tokens` (middle steps
left out, fields cut), the same fence around the trace — and returns them
without sending anything. With `judge.items_per_request` > 1 the run gathers
several cases' items in one request; the request shown asks this case's
questions alone, as the run asks an item it could not group. With a panel (`judge.models`) each member's requests are
shown, built with its own settings (model, structured output, tokenizer), as the run sends one to each.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from tracejudge.core import registry
from tracejudge.core.config import JudgeConfig, RunConfig
from tracejudge.core.errors import TracejudgeError
from tracejudge.core.records import Case
from tracejudge.llm.judge_tokenizer import spec_of
from tracejudge.llm.wire.records import JudgeRequest
from tracejudge.stages.judge.client import request_tokens
from tracejudge.stages.judge.field_cut import cut_note
from tracejudge.stages.judge.requests import case_requests, fitted_requests, trace_reused

__all__ = ["Shown", "prompts_for"]


@dataclass
class Shown:
    """One request about the case: which metric(s) it answers for (`key`), the request, its prompt tokens.

    `req` is None when the prompt cannot fit the judge's context (`why` says so: the run sends nothing);
    `omitted` middle steps and `omitted_turns` middle user turns were left out and `cut` sections shortened to fit (empty:
    sent whole); `left_out` says what was left out or cut by level in the words of the score's reason
    (`conversation.omitted_note`: `8 middle steps left out, and the system prompt cut to 500 characters`);
    `cut_said` says what was cut as the reason says it (`field_cut.cut_note`: `Trace cut to 2,026 characters`).
    `asked` is how many questions it asks, `of` how many the metric had (fewer: items the fitted prompt could not show).
    A sent request's `why` says why it was asked alone (its group's request could not fit), else is empty.
    `judge` is the judge section it is sent with (a panel member's own); `member` names that member (empty without a panel).
    """

    key: str
    req: JudgeRequest | None
    tokens: int
    omitted: int = 0
    cut: tuple[str, ...] = ()
    asked: int = 0
    of: int = 0
    why: str = ""
    judge: JudgeConfig | None = None
    member: str = ""
    omitted_turns: int = 0
    left_out: str = ""
    cut_said: str = ""


def prompts_for(config: RunConfig, case_id: str, trial: int = 0) -> list[Shown]:
    """The requests the run would send about case `case_id` (trial `trial`), in the order it sends them.

    Reads the dataset until the case is found (first record with that id, as the run keeps the first of
    a duplicated id). A metric whose score needs no request for this case (no tool call to judge) comes first,
    with `req` None and `why` saying so.

    Raises `TracejudgeError` (exit status 2) naming the nearest ids when no case has that id, and when the
    config has no LLM-judge metric.
    """
    from tracejudge.core.suggest import did_you_mean
    from tracejudge.stages.extract import extract_record
    from tracejudge.stages.judge.estimate import judge_metrics

    metrics = judge_metrics(config)
    if not metrics:
        raise TracejudgeError("no LLM-judge metric in `metrics:` (`tracejudge list metrics` marks them): no request would be sent")
    cfg = config.judge or JudgeConfig()
    fmt = registry.format_for(config.dataset.format)
    ctx = fmt.prepare(config.dataset)
    seen: list[str] = []
    readable = 0
    for raw in fmt.read(config.dataset):
        case = extract_record(raw, fmt, ctx)
        if not isinstance(case, Case):
            continue
        readable += 1
        if case.id == case_id:
            return _per_member(config, case, metrics, trial)
        if len(seen) < 100_000:  # (enough to suggest from; the file is read to its end all the same)
            seen.append(case.id)
    # An id that is the start of others' (`0` for τ-bench's `0-0`, `0-1`: the task without its trial) names those first;
    # by edits alone `9-0` is as near as `0-0`.
    extended = [i for i in seen if len(i) > len(case_id) and i.startswith(case_id) and not i[len(case_id)].isalnum()][:3]
    hint = f"did you mean {', '.join(extended)}?" if extended else did_you_mean(case_id, seen, typo=True)
    raise TracejudgeError(f"--show-prompt: no case with id {case_id!r} in {config.dataset.path} ({readable:,} readable cases)"
                      f"{'; ' + hint if hint else ''}")


def _per_member(config: RunConfig, case: Case, metrics: list[Any], trial: int) -> list[Shown]:
    """Each judge's requests about `case`: the section's own, or every panel member's, built with its own settings (the
    section's model asks nothing in a panel: shown as it was, a panel of gpt-4o alone read as gpt-4o-mini's request).
    A metric decided without a request is said once, not once per member."""
    from tracejudge.stages.judge.panel import panel_members

    cfg = config.judge or JudgeConfig()
    # (marked for the prefix cache as the run marks it: a trace asked again by a trial, sample or member carries the hint)
    reused = trace_reused(config, len(cfg.models or [cfg.model]))
    if not cfg.models:
        return [replace(s, judge=cfg) for s in _shown(case, metrics, cfg, trial, reused)]
    out: list[Shown] = []
    for i, member in enumerate(panel_members(config)):
        for s in _shown(case, metrics, member.cfg, trial, reused):
            if i == 0 or s.req is not None or s.tokens:
                out.append(replace(s, judge=member.cfg, member=member.name if s.req is not None or s.tokens else ""))
    return out


def _shown(case: Case, metrics: list[Any], cfg: JudgeConfig, trial: int, reused: bool) -> list[Shown]:
    tokenizer = spec_of(cfg)
    asked, decided = case_requests(case, metrics, cfg, reused)
    out = [Shown(key, None, 0, why=f"no request: scored without the judge ({score.reason})") for key, score in decided.items()]
    for a in asked:
        for key, plan, qs, fitted in fitted_requests(a, cfg):
            if not fitted.fits:
                out.append(_unfit(key, fitted, len(qs)))
                continue
            n = len(fitted.asked) if fitted.asked is not None else len(qs)
            alone = f"asked alone: the grouped request of {a.key} cannot fit judge.context_tokens" if key != a.key else ""
            steps, turns, said = _left_out(plan, fitted)
            out.append(Shown(key, fitted.req, request_tokens(fitted.req, tokenizer), steps, tuple(fitted.cut), n, len(qs), why=alone,
                             omitted_turns=turns, left_out=said, cut_said=cut_note(fitted.cut, fitted.cap) if fitted.cut else ""))
    return out


def _left_out(plan: Any, fitted: Any) -> tuple[int, int, str]:
    """`(middle steps, middle user turns, what the reason says of them)` of a fitted request: its `omit` counts the
    system prompt's cut levels and the turns too, which the header once called steps (19 where the reason said 8)."""
    from tracejudge.stages.judge.conversation import omitted_note, step_omit
    from tracejudge.stages.judge.system_section import split

    if not fitted.omit:
        return 0, 0, ""
    omit, _ = split(plan.steps, fitted.omit, fitted.keep, plan.system)
    steps, turns = step_omit(plan.steps, omit, fitted.keep)
    said = omitted_note(plan.steps, fitted.omit, fitted.keep, plan.system, plan.system_lengths)
    return steps, turns, said.removesuffix(" to fit the judge's context (too_long: truncate)")


def _unfit(key: str, fitted: Any, questions: int) -> Shown:
    why = getattr(fitted, "why", "") or f"its prompt of {'more than ' if fitted.over else ''}{fitted.tokens:,} tokens cannot fit judge.context_tokens"
    return Shown(key, None, fitted.tokens, of=questions, why=why)
