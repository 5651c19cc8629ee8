"""Pairwise comparison of two runs by a judge: `tracejudge compare A --vs B --judge CONFIG`.

For every (case, trial) both runs have a trace for, the judge of CONFIG sees
the user's request and both runs' trajectories (each in its own fence) and
grades which run served the user better against `judge.pairwise.rubric`:
1 = the first shown, 2 = equally good, 3 = the second shown. Each pair is
asked **in both orders** (A first, then B first), so a judge that prefers
whatever it reads first cannot favour either run:

- each order's preference is decided from its verdicts first: with
  `judge.samples` (or a panel's `mean`) the sign of their mean preference,
  so 5 of 5 and 4 of 5 samples for the first shown are the same preference;
- both orders agree → that verdict (B wins, A wins, or a tie);
- they disagree (the verdict flips with the order) → a tie, counted in
  `position_bias_rate` = flipped pairs / judged pairs.

B's `win_rate` = (wins + ties / 2) / judged pairs, with a 95% BCa
bootstrap CI resampling cases, a case's trials together (seeded), marked not
informative (`win_rate_ci_informative: false`, `win_rate_ci_why`) over fewer
than `pairwise_rule.MIN_CASES` (50) judged cases or when every pair has one
outcome; the report then prints why instead of the interval (`win_rate_ci` keeps its bounds). The
definitions and their sources: `tracejudge.stages.comparison.pairwise_rule`.
`deciding` lists the pairs won or lost
in both orders, with the judge's reasons. With `min_win_rate` (the option
or `judge.pairwise.min_win_rate`) the comparison FAILS when the win rate itself
(not a bound of its CI) is below it, and when its CI is not informative,
whatever the win rate, as a run's `min_kappa` fails on a κ that is not
(3 cases all won by B are a win rate of 1.000 and no evidence): its line says
why and how many judged cases to add (`pairwise_rule.uninformative`). It FAILS
too on the judge's own checks as a run does (`pairwise_gate`): its judge
errors past `judge.max_error_share` (a judged result there is one pair in
one order), verdicts the judge budget skipped, and no pair judged at all.

The requests go through the judge stage itself (`tracejudge.stages.judge.stage`):
the same cache, budget, rate limits, samples and panels as a run.
Traces come from each run's `traces.jsonl` or the dataset its manifest names
(`tracejudge.viewer.traces.CaseSource`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import anyio
from tracejudge.core.config import RunConfig
from tracejudge.core.errors import TracejudgeError
from tracejudge.core.records import Case, CaseResult, Score
from tracejudge.core.work import Work
from tracejudge.engine import shards, store
from tracejudge.stages.comparison.pairwise_gate import judge_checks
from tracejudge.stages.comparison.pairwise_rule import B_SIDE, CI_METHOD, case_bootstrap, order_preference, pair_point, uninformative
from tracejudge.stages.judge.base import JudgeMetric, Plan, Question
from tracejudge.stages.judge.trace_text import fence
from tracejudge.stages.judge.metrics import _trace_sections
from tracejudge.stages.judge.system_section import levels, shown_lengths

__all__ = ["PairwiseComparison", "PairwiseResult", "compare_pairwise", "pairwise_metric"]


class PairwiseComparison(JudgeMetric):
    """Which of two runs on one request served the user better (see the module doc); not a metric a config names.

    The case carries both runs in `metadata.pairwise` (`{"first": case, "second": case}`);
    value = (3 − grade) / 2: 1 when the first run shown is better, 0.5 equal, 0 the second.
    """

    prompt_version: ClassVar[str] = "pairwise/1"
    sides: ClassVar[bool] = True  # its value is a side, not a score: a panel combines it without leaning (`repeat._sides`)
    task: ClassVar[str] = ("You compare two runs of an AI agent on the same user request, Run 1 and Run 2, "
                           "each between its own data markers.")
    criteria: str

    @property
    def rubric(self) -> Any:
        return {"pairwise": self.criteria}

    def instructions(self, kind: str = "scale", answer_format: str | None = None) -> str:
        fmt = (f"Criterion: {self.criteria}\n\nGrade 1 if Run 1 is better, 2 if they are equally good, 3 if Run 2 is better, with a reason "
               'of one or two sentences, as one JSON object: {"score": 1, "reason": "..."}. Reply with the JSON object only.')
        return super().instructions(kind, fmt)

    def verdict_schema(self, plan: Plan, question_ids: list[str]) -> dict[str, Any]:
        return {"type": "object", "properties": {"score": {"type": "integer", "minimum": 1, "maximum": 3}, "reason": {"type": "string"}},
                "required": ["score", "reason"], "additionalProperties": False}

    def plan(self, case: Case) -> Plan | Score:
        both = (case.metadata or {}).get("pairwise") or {}
        first, second = (Case.model_validate(both[k]) for k in ("first", "second"))
        full = self.trace_format == "full"
        # (`include_system_prompt`: each run's fence opens with its own prompts, so runs of differently instructed
        # agents are each judged by their own instructions; a run that recorded none shows none)
        system = max(levels(self, first), levels(self, second))

        def sections(run: Case, omit: int) -> list[tuple[str, str]]:  # (`omit` read alike for both: the same `system`)
            return _trace_sections(run, omit, full, 0, system, self.system_prompt_chars)

        def render(omit: int) -> str:
            return f"Run 1:\n{fence(sections(first, omit), runs=True)}\n\nRun 2:\n{fence(sections(second, omit), runs=True)}"

        steps = max(len(c.trace.steps) if c.trace else 0 for c in (first, second))
        return Plan(self, [Question("q1", "Which run served the user better?")], render, steps=steps, kind="scale", scale=(1, 3),
                    system=system, system_lengths=shown_lengths(self, first) + shown_lengths(self, second))

    def finalize(self, plan: Plan, answers: dict[str, dict[str, Any]]) -> Score:
        return self.scored(plan, (3 - answers["q1"]["score"]) / 2, answers)


@dataclass
class PairwiseResult:
    """Outcome of a pairwise comparison; rates are B's, in [0, 1]."""

    run_a: str
    run_b: str
    pairs: int = 0
    wins: int = 0
    ties: int = 0
    losses: int = 0
    flipped: int = 0
    not_judged: int = 0
    no_trace: int = 0
    win_rate: float | None = None
    win_rate_ci: list[float] | None = None
    win_rate_ci_method: str | None = None
    win_rate_ci_informative: bool | None = None  # False: too few judged cases, or every pair one outcome (`pairwise_rule.uninformative`)
    win_rate_ci_why: str | None = None  # why not informative, and what to add
    cases: int = 0  # judged cases: the cases with a pair judged in both orders (the CI's resampling unit)
    first_shown_win_rate: float | None = None
    min_win_rate: float | None = None
    deciding: list[dict[str, Any]] = field(default_factory=list)
    judge: dict[str, Any] = field(default_factory=dict)
    not_judged_verdicts: dict[str, int] = field(default_factory=dict)  # by status, over both orders of every pair
    first_error: dict[str, Any] | None = None  # the first verdict the judge failed: where, and its redacted message
    checks: list[dict[str, Any]] = field(default_factory=list)  # the judge's checks (`pairwise_gate`): name, ok, detail

    @property
    def position_bias_rate(self) -> float | None:
        return round(self.flipped / self.pairs, 6) if self.pairs else None

    @property
    def win_rate_reaches(self) -> bool:
        """Whether B's win rate itself is at least `min_win_rate` (True without one)."""
        return self.min_win_rate is None or (self.win_rate is not None and self.win_rate >= self.min_win_rate - 1e-12)

    @property
    def win_rate_ok(self) -> bool:
        """The `min_win_rate` gate: the win rate reaches it and its CI is informative (`pairwise_rule` module doc, "The gate")."""
        return self.min_win_rate is None or (self.win_rate_reaches and self.win_rate_ci_informative is not False)

    @property
    def passed(self) -> bool:
        return self.win_rate_ok and all(c["ok"] for c in self.checks)

    def as_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items()}
        out.update(position_bias_rate=self.position_bias_rate, win_rate_ok=self.win_rate_ok, verdict="PASS" if self.passed else "FAIL")
        return out


def _cases(dirs: list[Path]) -> dict[tuple[str, int], Case]:
    """Every (case, trial) of a run's results with its trace (from traces.jsonl, else the run's dataset)."""
    from tracejudge.viewer.traces import CaseSource

    keys = [(str(r["case_id"]), int(r.get("trial", 0))) for d in dirs for r in store.iter_results(d)]
    out: dict[tuple[str, int], Case] = {}
    for d in dirs:
        src = CaseSource(d, store.read_manifest(d, strict=False))
        by_id = {} if (d / "traces.jsonl").exists() else {c.id: c for c in src.iter_cases()}
        for cid, trial in keys:
            case = by_id.get(cid) if by_id else src.get(cid, trial)[0]
            if case is not None and case.trace is not None:
                out.setdefault((cid, trial), case)
    return out


async def _judge_all(config: RunConfig, metric: PairwiseComparison,
                     cases: list[Case]) -> tuple[dict[str, Score], dict[str, Any], dict[str, str]]:
    """Each synthetic case's score and status (by case id) from the judge stage, and the stage's summary block."""
    from tracejudge.stages.judge.stage import judge_stage

    stage = judge_stage(config, [metric], lambda ms, specs: ms)
    out: dict[str, Score] = {}
    statuses: dict[str, str] = {}
    limit = anyio.Semaphore(max(1, min(stage.workers, 256)))

    async def one(case: Case) -> None:
        async with limit:
            work = Work(case, 0, CaseResult(case_id=case.id), time.monotonic())
            await stage.process(work)
            out[case.id] = work.result.scores.get(metric.key) or Score(value=None, reason=work.result.error.message if work.result.error else "")
            statuses[case.id] = getattr(work.result.status, "value", str(work.result.status))

    try:
        async with anyio.create_task_group() as tg:
            for case in cases:
                tg.start_soon(one, case)
    finally:
        with anyio.CancelScope(shield=True):
            if stage.aclose is not None:
                await stage.aclose()
    return out, stage.summary() if stage.summary else {}, statuses


def pairwise_metric(config: RunConfig) -> PairwiseComparison:
    """The pairwise judge `config`'s `judge.pairwise` section asks for (its rubric, `include_system_prompt`); `config`
    has a judge."""
    assert config.judge is not None
    section = config.judge.pairwise
    return PairwiseComparison(criteria=section.rubric, include_system_prompt=section.include_system_prompt)


def compare_pairwise(run_a: Path | list[Path], run_b: Path | list[Path], config: RunConfig, *, min_win_rate: float | None = None,
                     seed: int = 0, top: int = 10) -> PairwiseResult:
    """Compare runs A and B pairwise with `config`'s judge (see the module doc). Raises `TracejudgeError` when the config has no
    judge or no (case, trial) has a trace in both runs."""
    if config.judge is None:
        raise TracejudgeError("--judge: the config has no `judge:` section")
    dirs_a, dirs_b = shards.expand(run_a), shards.expand(run_b)
    a, b = _cases(dirs_a), _cases(dirs_b)
    shared = sorted(set(a) & set(b))
    res = PairwiseResult(shards_name(dirs_a), shards_name(dirs_b),
                         no_trace=len(set(a) ^ set(b)),
                         min_win_rate=min_win_rate if min_win_rate is not None else config.judge.pairwise.min_win_rate)
    if not shared:
        raise TracejudgeError(f"no (case, trial) has a trace in both {res.run_a} and {res.run_b}: nothing to compare "
                              "(traces come from each run's traces.jsonl or the dataset its manifest names)")
    metric = pairwise_metric(config)
    synthetic: list[Case] = []
    for cid, trial in shared:
        ca, cb = a[(cid, trial)].model_dump(mode="json"), b[(cid, trial)].model_dump(mode="json")
        for order, (first, second) in (("ab", (ca, cb)), ("ba", (cb, ca))):
            synthetic.append(Case(id=f"{cid}|{trial}|{order}", input=a[(cid, trial)].input, metadata={"pairwise": {"first": first, "second": second}}))
    scores, res.judge, statuses = anyio.run(_judge_all, config, metric, synthetic)
    points: list[tuple[str, float]] = []  # (case, B's point) per pair judged in both orders
    first_wins = 0.0
    for cid, trial in shared:
        ab, ba = scores[f"{cid}|{trial}|ab"], scores[f"{cid}|{trial}|ba"]
        for order, key, score in (("A shown first", "ab", ab), ("B shown first", "ba", ba)):
            status = statuses.get(f"{cid}|{trial}|{key}", "ok")
            if score.value is None:
                what = status if status != "ok" else "no verdict"  # (a prompt too long for the judge, skipped: no error)
                res.not_judged_verdicts[what] = res.not_judged_verdicts.get(what, 0) + 1
            if status == "judge_error" and res.first_error is None:
                res.first_error = {"case_id": cid, "trial": trial, "order": order, "message": score.reason}
        if ab.value is None or ba.value is None:
            res.not_judged += 1
            continue
        res.pairs += 1
        point, flipped = pair_point(ab.value, ba.value)  # each order's preference, then the both-orders rule
        first_wins += B_SIDE[order_preference(ab.value)]  # type: ignore[index]  # the first shown's (A's) point, A-first order only
        res.flipped += int(flipped)
        points.append((cid, point))
        if point > 0.5:
            res.wins += 1
        elif point < 0.5:
            res.losses += 1
        else:
            res.ties += 1
        if point != 0.5 and len(res.deciding) < top:
            res.deciding.append({"case_id": cid, "trial": trial, "winner": "B" if point > 0.5 else "A",
                                 "reason_a_first": ab.reason[:300], "reason_b_first": ba.reason[:300]})
    if points:
        res.win_rate = round(sum(p for _, p in points) / len(points), 6)
        res.win_rate_ci = case_bootstrap(points, seed)
        res.win_rate_ci_method = CI_METHOD
        res.win_rate_ci_why = uninformative(points)
        res.win_rate_ci_informative = res.win_rate_ci_why is None
        res.cases = len({cid for cid, _ in points})
        res.first_shown_win_rate = round(first_wins / res.pairs, 6)
    res.checks = judge_checks(res, len(synthetic))
    return res


def shards_name(dirs: list[Path]) -> str:
    """A run's name for the report: its directory, or the first shard's with the count."""
    return str(dirs[0]) if len(dirs) == 1 else f"{dirs[0]} (+{len(dirs) - 1} shards)"


def print_pairwise(res: PairwiseResult, console: Any) -> None:
    """The comparison as a few lines: counts, B's win rate with its CI, the position-bias rate, the deciding pairs, the verdict.

    Run names, case ids and the judge's reasons are printed inert (`tracejudge.core.inert_text.visible`), never acted on.
    """
    from tracejudge.core.inert_text import visible
    from tracejudge.stages.aggregate.gate_figures import figure
    from tracejudge.stages.judge.error_note import error_line

    def say(text: str) -> None:
        console.print(text, highlight=False, markup=False, emoji=False, soft_wrap=True)

    why = ", ".join(f"{k} {n}" for k, n in sorted(res.not_judged_verdicts.items()))
    say(f"pairwise: A {visible(res.run_a)} vs B {visible(res.run_b)}; {res.pairs} pair{'s' if res.pairs != 1 else ''} judged in both orders"
        + (f", {res.not_judged} not judged (verdicts not given: {why})" if res.not_judged else "")
        + (f", {res.no_trace} without a trace in both runs" if res.no_trace else ""))
    first = res.first_error
    where = f"case {first['case_id']} trial {first['trial']}, {first['order']}" if first else ""
    if line := error_line(res.judge.get("error_kinds") or {}, first, where):
        say(line)
    if res.win_rate is not None:
        if res.win_rate_ci_informative is False:  # not "[1.000, 1.000]" over 3 cases all won: say why, and what to add
            say(f"B wins {res.wins}, ties {res.ties}, loses {res.losses}: win rate {res.win_rate:.3f} (ties count half); "
                f"95% CI not informative: {res.win_rate_ci_why}")
        else:
            ci = f" (95% CI [{res.win_rate_ci[0]:.3f}, {res.win_rate_ci[1]:.3f}])" if res.win_rate_ci else ""
            say(f"B wins {res.wins}, ties {res.ties}, loses {res.losses}: win rate {res.win_rate:.3f}{ci} (ties count half)")
        say(f"position bias: {res.flipped} of {res.pairs} verdicts flipped with the order ({res.position_bias_rate:.1%}), counted as ties; "
            f"asked A first only, A would win {res.first_shown_win_rate:.3f} of the points")
    for d in res.deciding:
        say(f"  {d['winner']} better on case {visible(str(d['case_id']))} trial {d['trial']}: {visible(d['reason_a_first'][:160])}")
    if res.judge:
        from tracejudge.stages.reports.judge_lines import spend_line

        say(spend_line({"judge": res.judge}))  # the run's judge line: "cost unknown" for a model without a price, never $0
    for check in res.checks:
        say(f"{'ok  ' if check['ok'] else 'FAIL'} {check['name']}: {check['detail']}")
    if res.min_win_rate is not None:
        # As many places as show how it compares with the threshold: not "0.500, required >= 0.5" on a FAIL line.
        got = "none" if res.win_rate is None else figure(res.win_rate, res.min_win_rate, res.win_rate_reaches, places=3)
        if res.win_rate is not None and res.win_rate_ci_informative is False:
            # As `min_kappa` on a κ that is not informative: no pass on 3 cases all won, whatever the rate; why, and what to add.
            over = f"over {res.cases} judged case{'s' if res.cases != 1 else ''}"
            say(f"FAIL min_win_rate: B's win rate {got} {over}: not informative, {res.win_rate_ci_why}, required >= {res.min_win_rate}")
        else:
            say(f"{'ok  ' if res.win_rate_ok else 'FAIL'} min_win_rate: B's win rate {got}, required >= {res.min_win_rate}")
    if res.min_win_rate is not None or res.checks:
        say(f"verdict: {'PASS' if res.passed else 'FAIL'}")
