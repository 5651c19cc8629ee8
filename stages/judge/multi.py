"""Multi-item judge requests: several items of one metric share one request.

An *item* is one metric's questions about one case (one trial), or with
`judge.group: case` a grouped plan: every metric's questions about one case
(`tracejudge.stages.judge.grouped`); items of one request then have the same metrics. A
multi-item request is laid out so that provider prompt caching applies:

- the system message is the fixed part — the system prompt all metrics
  share plus `MULTI_NOTE`, which says how to answer several items —
  byte-identical in every request;
- the user message starts with the metric's instructions (and a Rubric's
  criteria), the same in every request of that metric, then holds the items, each under `### Item <id>` with its
  fenced case text and its questions;
- the verdict schema (named `verdicts`) has one property per item id, whose
  value is the metric's own single-item verdict schema (as a `$ref` to a
  shared `$defs` entry, one per distinct shape, so the schema grows by a
  reference per item, not by a copy).

An item's id is derived from the content of its alone request (`i` + 12 hex
digits of a hash of it), so it never depends on the other items, the order
or the case id. Items are shuffled with a seed derived from
`judge.item_seed` and the sorted ids; the *composition* — request key, the
ids in order, the seed and the item's position — is stored in each score's
`details.batch`.

Cache: the whole reply is stored under the request's own key (which covers
the composition, since the items and their order are in its messages), and
each good item verdict also under an *item key* — the key of a one-item
request in the same format — with the composition it came from, so a
resumed run that groups items differently is still served from the cache.

Items whose verdict is missing or does not parse, or that the reply answers two ways (one
question both yes and no, or two grades, across its JSON objects), are re-asked alone (the
single-item path, with its own repair); the rest are kept. A reply that also gives a verdict
for an item id not asked (a key of its verdict object holding an answer or a grade; a key
holding none, such as a `summary`, is ignored) does not parse at all: every item of it is
re-asked alone, as the judge may be answering about another item. A request the
provider refuses (a 400 such as a content filter, or a 5xx that persists
through the retries; see `refusal`) is split: each half is judged as a group
of its own, recursively, so only the item that causes the refusal fails
(`details.batch.split_from` names the refused request). A request that fails
otherwise (budget, rate limit, timeout, outage) fails all its items the same way.
A group left with one item to ask is asked alone.
"""

from __future__ import annotations

import hashlib
import random
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
from tracejudge.core.config import JudgeConfig
from tracejudge.core.records import JudgeInfo, Score
from tracejudge.llm.cache import cache_key, canonical
from tracejudge.llm.context_refusal import over_context
from tracejudge.llm.providers import JudgeRequest, ProviderError
from tracejudge.stages.judge.base import Plan, Question, yes_no_schema
from tracejudge.stages.judge.calls.request import asked_ids
from tracejudge.stages.judge.calls.stats import share_usd
from tracejudge.stages.judge.client import build_request, key_components
from tracejudge.stages.judge.fence_labels import asking
from tracejudge.stages.judge.fit import exceeds
from tracejudge.stages.judge.grouped import add_info
from tracejudge.stages.judge.parse import ParseError, agreement, by_id, grade_agreement, json_objects, scale_from, yes_no_from
from tracejudge.stages.judge.trace_text import whole_text

if TYPE_CHECKING:
    from tracejudge.stages.judge.client import Judge, Outcome

__all__ = ["MULTI_NOTE", "MULTI_SCHEMA_NAME", "Item", "build_multi_request", "item_id", "judge_items", "parse_multi", "refusal", "shuffled"]

MULTI_SCHEMA_NAME = "verdicts"
MULTI_NOTE = """This request holds several items. Each starts with a line `### Item <id>` and has its own recorded data \
(between its own marker lines) and its own questions. Judge every item on its own, exactly as the evaluation at the start \
of the user message instructs, as if it were the only one: never compare items or let one influence another. Reply with \
one JSON object whose keys are the item ids and whose values are the item's verdict: for yes/no questions an object keyed by \
question id, {"<item id>": {"<question id>": {"answer": "yes", "reason": "..."}, ...}, ...}; for a grade the grade object \
the evaluation describes. This replaces the answer format given above. Reply with that JSON object only."""


@dataclass
class Item:
    """One metric's questions about one (case, trial), waiting to share a request.

    `slot` is `case|metric|trial` (the cache's explain index); `id` is set
    from the alone request's key by `item_id`.
    """

    plan: Plan
    trial: int
    slot: str
    id: str = ""
    questions: list[Question] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.questions:
            self.questions = list(self.plan.questions)


def item_id(item: Item, cfg: JudgeConfig) -> str:
    """`i` + 12 hex digits of a hash of what `item` asks alone: messages, schema, prompt version, rubric, trial.

    Content only — no case id, endpoint, model or position — so the same item
    has the same id in any run, request or order.
    """
    req = build_request(item.plan, item.questions, cfg)
    content = {"messages": list(req.messages), "schema": req.schema, "prompt_version": item.plan.prompt_version,
               "rubric": item.plan.metric.rubric, "trial": item.trial}
    return "i" + hashlib.sha256(canonical(content).encode()).hexdigest()[:12]


def shuffled(ids: list[str], seed: int) -> tuple[list[str], int]:
    """`ids` in a shuffled order and the request seed that made it (from `seed` and the sorted ids)."""
    ordered = sorted(set(ids))
    request_seed = int(hashlib.sha256(f"{seed}:{','.join(ordered)}".encode()).hexdigest()[:8], 16)
    random.Random(request_seed).shuffle(ordered)
    return ordered, request_seed


def _block(item: Item) -> str:
    if item.plan.parts:  # a grouped plan: each metric's instructions and questions under the item's data
        return f"### Item {item.id}\n{item.plan.render(0)}\n\n{item.plan.ask_text(item.questions)}"
    listing = "\n".join(f"{item.plan.full_id(q)}: {q.text}" for q in item.questions)
    body = f"{item.plan.render(0)}\n\nQuestions:\n{listing}" if item.plan.kind == "yes_no" else item.plan.render(0)
    return f"### Item {item.id}\n{body}"


def build_multi_request(items: list[Item], cfg: JudgeConfig) -> JudgeRequest:
    """One request for `items` (all of one metric and trial, ids set, in the order given)."""
    metric = items[0].plan.metric
    system = metric.system_prompt(items[0].plan.kind) + "\n\n" + MULTI_NOTE
    head = "" if items[0].plan.parts else metric.instructions(items[0].plan.kind) + "\n\n"
    with asking(i for it in items for i in asked_ids(it.plan, it.questions)):  # (every item's ids: one prompt asks them all)
        user = whole_text(head + "\n\n".join(_block(it) for it in items))  # (an item's question may quote a lone surrogate)
    # Items with the same verdict shape share one definition, so the schema grows by a reference per item.
    defs: dict[str, dict[str, Any]] = {}
    names: dict[str, str] = {}
    props: dict[str, Any] = {}
    for it in items:
        ids = [it.plan.full_id(q) for q in it.questions]
        sub = yes_no_schema(ids) if it.plan.kind == "yes_no" else metric.verdict_schema(it.plan, ids)
        shape = canonical(sub)
        if shape not in names:
            names[shape] = f"v{len(names) + 1}"
            defs[names[shape]] = sub
        props[it.id] = {"$ref": f"#/$defs/{names[shape]}"}
    schema = {"type": "object", "properties": props, "required": [it.id for it in items], "additionalProperties": False, "$defs": defs}
    return JudgeRequest(model=cfg.model, messages=({"role": "system", "content": system}, {"role": "user", "content": user}),
                        schema=schema, schema_name=MULTI_SCHEMA_NAME, max_tokens=cfg.max_tokens * sum(max(1, len(it.plan.parts)) for it in items),
                        temperature=cfg.temperature, extra_body=cfg.extra_body or None)


def parse_multi(items: list[Item], text: str) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """`(answers by item id, problem by item id)`: every item is in exactly one of the two."""
    # Every object in the reply that answers some item: the first is read (a decoy `{…}` in prose before it is skipped),
    # all of them are checked for an item answered two ways (question ids repeat across items, so per item).
    given = [o for o in json_objects(text) if any(it.id in o for it in items)]
    if not given:
        return {}, {it.id: "no JSON object with verdicts by item id found in the reply" for it in items}
    data = given[0]
    asked = {it.id for it in items}
    extra = [k for k, v in data.items() if k not in asked and _answers_something(v)]
    if extra:
        # A verdict for an item not asked: the judge may have answered about another item (or under the wrong id), so
        # none of its verdicts is trusted, as a single-item reply answering a question not asked (`parse` module doc).
        named = ", ".join(repr(k[:40]) for k in extra[:3]) + (f" and {len(extra) - 3} more" if len(extra) > 3 else "")
        why = (f"the reply gives a verdict for {named}, which {'was' if len(extra) == 1 else 'were'} not asked (asked: "
               f"{', '.join(sorted(asked))[:300]}): the judge may be answering about another item")
        return {}, {it.id: why for it in items}
    good: dict[str, dict[str, Any]] = {}
    bad: dict[str, str] = {}
    for it in items:
        if it.id not in data:
            bad[it.id] = "no verdict for this item"
            continue
        verdicts = [o[it.id] for o in given if isinstance(o.get(it.id), dict)]
        try:
            if it.plan.kind == "scale":
                grade_agreement(verdicts, *it.plan.scale)
                good[it.id] = {it.questions[0].id: scale_from(data[it.id], *it.plan.scale)}
            else:
                agreement(verdicts, [it.plan.full_id(q) for q in it.questions])
                got = yes_no_from(by_id(data[it.id]), [it.plan.full_id(q) for q in it.questions])  # (the older `answers` list too)
                good[it.id] = {q.id: got[it.plan.full_id(q)] for q in it.questions}
        except ParseError as exc:
            bad[it.id] = str(exc)
    return good, bad


def _answers_something(value: Any, depth: int = 0) -> bool:
    # Whether a reply's value holds a verdict: a yes/no word, an object with an `answer` or a `score`, or such objects
    # inside it (an item's verdict keyed by question id, an `answers` list). A note (`"summary": "…"`, a count) does not.
    if isinstance(value, str):
        return value.strip().lower().rstrip(".!") in ("yes", "no")
    if depth > 3:
        return False
    if isinstance(value, dict):
        return "answer" in value or "score" in value or any(_answers_something(v, depth + 1) for v in value.values())
    if isinstance(value, list):
        return any(_answers_something(v, depth + 1) for v in value)
    return False


def refusal(exc: ProviderError) -> bool:
    """Whether `exc` is a refusal one item can cause: a 400-class rejection (a content filter, a bad
    item), a 5xx that persisted through the retries, or a prompt longer than the server's context or a body larger than
    it accepts (a 413; half as many items may fit) — not a rate limit, timeout, outage or bad key."""
    return (exc.kind in ("fatal", "server") and exc.status not in (401, 403)) or (exc.kind == "request" and (exc.status == 413 or over_context(str(exc))))


def _item_share(model: str, usage: dict[str, int], cached_in: int, cost: float | None, n: int, pos: int, cached: bool, *,
                first: bool) -> JudgeInfo:
    """The `judge` block of the item at `pos` of a request of `n` items: its share of the request's tokens and dollars,
    the first item (`pos` 0) also the remainders and the request itself (`requests` 1, else 0), so that the results of
    one request add up to what it cost and to one request, as the summary counts it. An item asked twice in one request
    (two cases of identical content: `first` false for the second) shares the first one's answer and costs nothing more."""
    if not first:
        return JudgeInfo(model=model, cached=cached, cost_usd=0.0)

    def part(v: int) -> int:
        return v // n + (v % n if pos == 0 else 0)

    return JudgeInfo(model=model, cached=cached, input_tokens=part(usage["input_tokens"]), output_tokens=part(usage["output_tokens"]),
                     cached_input_tokens=part(cached_in), cost_usd=share_usd(cost, n), requests=int(pos == 0),
                     cached_requests=int(pos == 0 and cached))


def _finalize(item: Item, answers: dict[str, Any], info: JudgeInfo, composition: dict[str, Any]) -> Outcome:
    from tracejudge.stages.judge.client import Outcome, finish

    score = finish(item.plan, answers)
    score.details = {**(score.details or {}), "batch": composition}
    score.judge = info
    return Outcome(score)


async def judge_items(judge: Judge, items: list[Item]) -> list[Outcome]:
    """Judge `items` (one metric, one trial) in as few requests as their verdicts allow; one `Outcome` per item, in order."""
    from tracejudge.stages.judge.client import Outcome, _BudgetRefused

    cfg = judge.cfg
    await judge.learn_served()  # (its keys hold what a self-hosted server serves, as every key of the run)
    t0 = time.perf_counter()
    for it in items:
        if not it.id:
            it.id = item_id(it, cfg)
    metric = items[0].plan.metric
    out: dict[int, Outcome] = {}
    alone: dict[int, dict[str, Any]] = {}  # index → composition note for items asked alone
    shares: dict[int, JudgeInfo] = {}  # index → its share of a shared request that did not answer it (asked alone since)

    served = judge.served_model  # what the keys hold; to store a reply, the weights that answered it (`calls.served`)

    def item_comps(it: Item) -> dict[str, Any]:
        req = build_multi_request([it], cfg)
        return key_components(cfg.provider, judge.cache_base_url, req, it.plan.prompt_version, metric.rubric, it.trial, judge.structured,
                              served)

    todo: list[int] = []
    halves: list[list[int]] = []  # index lists re-asked as smaller groups after a refusal
    split_why = ""
    composition_base: dict[str, Any] = {}
    for i, it in enumerate(items):
        hit = judge.cache.get(cache_key(item_comps(it))) if judge.cache is not None else None
        if hit is not None:
            judge.stats.cache_hits += 1
            judge.stats.items_from_cache += 1
            info = JudgeInfo(model=cfg.model, cached=True, requests=1, cached_requests=1, latency_s=round(time.perf_counter() - t0, 4))
            out[i] = _finalize(it, hit["answers"], info, {**hit["composition"], "cached": True})
        else:
            todo.append(i)
    first_of: dict[str, int] = {}
    for i in todo:
        first_of.setdefault(items[i].id, i)
    unique = [items[i] for i in first_of.values()]
    if len(unique) == 1:
        for i in todo:
            alone[i] = {"alone": True, "why": "the only item of its group left to ask"}
    elif unique:
        order, seed = shuffled([it.id for it in unique], cfg.item_seed)
        by_id = {it.id: it for it in unique}
        group = [by_id[x] for x in order]
        req = build_multi_request(group, cfg)
        limit = cfg.context_tokens - req.max_tokens
        if await exceeds(req, limit, judge.tokenizer):  # (a huge item's group is not counted, nor on the event loop)
            for i in todo:
                alone[i] = {"alone": True, "why": "the items together do not fit the judge's context"}
        else:
            comps = key_components(cfg.provider, judge.cache_base_url, req, items[0].plan.prompt_version, metric.rubric, items[0].trial,
                                   judge.structured, served)
            key = cache_key(comps)
            composition_base = {"request": key[:16], "items": order, "seed": seed}
            cached = judge.cache.get(key) if judge.cache is not None else None
            usage = {"input_tokens": 0, "output_tokens": 0}
            failure: Outcome | None = None
            cached_in = 0
            cost: float | None = 0.0  # None: the model has no price and the reply billed tokens, or the reply had no usage
            billed: tuple[int, float | None] = (0, 0.0)  # a failed request's attempts that timed out: tokens, dollars
            unsent = False  # the failed request was never sent (the budget refused it, or the server's gate gave up on it)
            if cached is not None:
                judge.stats.cache_hits += 1
                text = cached["text"]
            else:
                try:
                    reply = await judge.call(req, key=key)
                    judge.stats.multi_requests += 1
                    judge.stats.items_batched += len(group)
                    usage = {"input_tokens": reply.input_tokens, "output_tokens": reply.output_tokens}
                    if not reply.usage_known:  # estimated tokens: what a hit of it saves is not known
                        usage["usage_unknown"] = 1
                    cached_in, cost = reply.cached_input_tokens, reply.cost_usd
                    text = reply.text
                except _BudgetRefused:
                    unsent = True
                    judge.stats.skipped_budget += 1
                    failure = Outcome(Score(value=None, passed=None, reason="skipped_budget: this request could cross the judge budget"),
                                      "skipped_budget", "a judge request could cross the token or dollar budget; resume with a larger budget to finish it",
                                      "skipped_budget")
                except ProviderError as exc:
                    if refusal(exc):
                        # One item may be what the provider refuses: split, so only that item fails.
                        judge.stats.requests_split += 1
                        split_why = f"the request of {len(group)} items was refused ({str(exc)[:300]}); its items were re-asked in halves"
                    else:
                        failure = judge.failure(exc)
                        unsent = exc.unsent
                        billed = (exc.billed_input_tokens, exc.billed_cost_usd)  # attempts that timed out, shared by its items
            if split_why:
                mid = (len(todo) + 1) // 2
                halves = [todo[:mid], todo[mid:]]
            elif failure is not None:
                for pos, i in enumerate(todo):
                    sent = int(not unsent)  # a request never sent is not one
                    n = len(todo)
                    # The one request is counted on the first item's result only, as its tokens' remainder is: results
                    # summed (a resume rebuilds the spend from them) count it once, as the summary does.
                    info = JudgeInfo(model=cfg.model, requests=sent if pos == 0 else 0,
                                     latency_s=round(time.perf_counter() - t0, 4) if sent else None,
                                     input_tokens=billed[0] // n + (billed[0] % n if pos == 0 else 0),
                                     cost_usd=share_usd(billed[1], n) if billed[0] else 0.0)
                    details = {**(failure.score.details or {}), "batch": composition_base}
                    out[i] = Outcome(failure.score.model_copy(update={"judge": info, "details": details}), failure.status, failure.message, failure.kind)
            else:
                good, bad = parse_multi(group, text)
                if judge.cache is not None and cached is None and good:
                    key, comps = await judge.keyed_as_answered(key, comps)
                    served = comps.get("served_model")  # (its items' entries too: the same weights answered them)
                    judge.cache.put(key, {"answers": good, "text": text, "usage": usage}, comps, f"{metric.key}|group")
                n = len(group)
                for pos, it in enumerate(group):
                    composition = {**composition_base, "position": pos, "size": n}
                    if it.id in good and judge.cache is not None and cached is None:
                        judge.cache.put(cache_key(item_comps(it)), {"answers": good[it.id], "composition": composition}, item_comps(it), it.slot)
                    for i in todo:
                        if items[i].id != it.id:
                            continue
                        info = _item_share(cfg.model, usage, cached_in, cost, n, pos, cached is not None, first=i == first_of[it.id])
                        info.latency_s = round(time.perf_counter() - t0, 4)
                        if it.id in bad:
                            judge.stats.items_reasked_alone += 1
                            alone[i] = {"alone": True, "why": f"re-asked alone: {bad[it.id]}", "first_request": composition}
                            shares[i] = info  # (added to the result of its request alone: the tokens were spent on it)
                            continue
                        out[i] = _finalize(items[i], good[it.id], info, composition)

    async def ask_alone(i: int) -> None:
        it = items[i]
        got = await judge.judge(it.plan, it.trial, it.slot, False)
        got.score.details = {**(got.score.details or {}), "batch": alone[i]}
        got.score.judge = add_info(got.score.judge, shares.get(i))
        out[i] = got

    async def ask_half(idx: list[int]) -> None:
        got = await judge_items(judge, [items[i] for i in idx])
        for i, o in zip(idx, got, strict=True):
            batch = (o.score.details or {}).get("batch") or {}
            # The innermost refused request an item came out of (set first, kept by the outer levels).
            batch.setdefault("split_from", {**composition_base, "why": split_why})
            o.score.details = {**(o.score.details or {}), "batch": batch}
            out[i] = o

    if alone or halves:
        async with anyio.create_task_group() as tg:
            for i in alone:
                tg.start_soon(ask_alone, i)
            for idx in halves:
                tg.start_soon(ask_half, idx)
    return [out[i] for i in range(len(items))]
