"""A request is made ready to send while it is made ready to ask (off the event loop): payload, JSON body, prompt count.

The judge admits a request at the rate limiter by its prompt count; these tests check that the count made in the
preparing trip is the one `request_tokens` gives (under `judge.tokenizer` too) and the body the one aiohttp's `json=`
sends, that a cache hit or a prompt that cannot fit gets none, that `Judge.call` sends what it is given (the server
answers it as it answers the request built on the spot) and admits it by the given count, and that the token
counter's remembered counts of repeated texts add up to the plain count.
"""

from __future__ import annotations

import json

import anyio
from tracejudge.core.config import JudgeConfig
from tracejudge.core.records import Case
from tracejudge.llm.budget import InProcessBudget
from tracejudge.llm.cache import DiskJudgeCache, JudgeCache, cache_key
from tracejudge.llm.judge_tokenizer import spec_of
from tracejudge.llm.providers import build_payload, endpoint, open_session
from tracejudge.llm.ratelimit import AdaptiveLimiter, Permit
from tracejudge.llm.tokens import counter_for
from tracejudge.stages.judge.calls.request import Wire
from tracejudge.stages.judge.client import Judge, build_request, key_components, request_tokens
from tracejudge.stages.judge.metrics import TaskCompletion


def _case(i: int, steps: int = 1) -> Case:
    return Case.model_validate({"id": f"c{i}", "input": f"Find item {i}", "trace": {
        "steps": [{"tool_calls": [{"id": f"t{i}-{s}", "name": "lookup", "arguments": {"q": f"{i} {s}"},
                                   "result": " ".join(f"word{k}-{i}-{s}" for k in range(40))}]} for s in range(steps)],
        "output": f"Item {i} is found."}})


class _Recording(AdaptiveLimiter):
    """The real limiter, noting the tokens each admission asked for."""

    def __init__(self) -> None:
        super().__init__(rpm=10_000, tpm=10_000_000, max_in_flight=8)
        self.asked: list[int] = []

    async def acquire(self, tokens: int) -> Permit:
        self.asked.append(tokens)
        return await super().acquire(tokens)


def _judge(cfg: JudgeConfig, limiter: AdaptiveLimiter, cache: JudgeCache | None, url: str = "http://127.0.0.1:9/v1/chat/completions") -> Judge:
    return Judge(cfg, session=None, url=url, api_key=None, limiter=limiter, budget=InProcessBudget(None, None), cache=cache,
                 price=None, cache_base_url="sim")


def test_prepared_requests_carry_their_count_and_hits_and_unfit_prompts_none(tmp_path):
    # A small context: every prompt is counted to fit it (case 2's does not); a large one: none is (a short prompt fits
    # by its bytes), so the count is made for the limiter alone.
    for n, (tokenizer, context) in enumerate(((None, 2_000), ({"factor": 1.5}, 2_000), (None, 128_000), ({"factor": 1.5}, 128_000))):
        cfg = JudgeConfig(provider="openai", model="gpt-4o-mini", max_tokens=100, context_tokens=context, too_long="skip",
                          **({"tokenizer": tokenizer} if tokenizer else {}))
        cache = DiskJudgeCache(tmp_path / f"cache-{n}")
        judge = _judge(cfg, _Recording(), cache)
        metric = TaskCompletion()
        plans = [metric.plan(_case(i, steps=30 if i == 2 else 1)) for i in range(3)]
        # Case 0's request is in the cache already.
        cached = build_request(plans[0], plans[0].questions, cfg)
        comps = key_components(cfg.provider, "sim", cached, plans[0].prompt_version, metric.rubric, 0)
        cache.put(cache_key(comps), {"answers": {"TC1": {"answer": "yes", "reason": "r"}}, "text": "{}", "usage": {}}, comps, "slot")
        ready = anyio.run(judge.prepare_many, [(p, p.questions, 0) for p in plans])
        hit, miss, unfit = ready
        assert not isinstance(hit, Exception) and hit.hit is not None and hit.wire is None
        assert not isinstance(miss, Exception) and miss.hit is None and miss.wire is not None
        assert miss.wire.tokens == request_tokens(miss.fitted.req, spec_of(cfg)) > 0
        assert miss.wire.payload == build_payload("openai", miss.fitted.req)
        assert miss.wire.body == json.dumps(miss.wire.payload).encode()
        assert not isinstance(unfit, Exception) and unfit.fitted.fits is (context > 2_000)
        assert (unfit.wire.tokens if unfit.wire else None) == (request_tokens(unfit.fitted.req, spec_of(cfg)) if unfit.fitted.fits else None)
        cache.close()


def test_call_sends_the_wire_form_it_is_given_and_admits_by_its_count(simulator):
    sim = simulator()
    cfg = JudgeConfig(provider="openai", model="gpt-4o-mini", max_tokens=100)
    plan = TaskCompletion().plan(_case(0))
    req = build_request(plan, plan.questions, cfg)
    counted = request_tokens(req)

    async def main() -> tuple[list[int], list[str]]:
        limiter = _Recording()
        judge = _judge(cfg, limiter, None, endpoint("openai", sim.url + "/v1"))
        async with open_session(4) as session:
            judge.session = session
            payload = build_payload("openai", req)
            given = Wire(payload, json.dumps(payload).encode(), counted + 500)
            texts = [(await judge.call(req, wire=given)).text, (await judge.call(req)).text]
        return limiter.asked, texts

    asked, texts = anyio.run(main)
    # The given count is taken as is (plus the reply's allowance); without one, the judge counts the prompt itself.
    assert asked == [counted + 500 + cfg.max_tokens, counted + cfg.max_tokens]
    assert texts[0] == texts[1] and texts[0]


def test_remembered_counts_add_up_to_the_plain_count():
    counter = counter_for("gpt-4o-mini")
    long_system = "Judge carefully. " * 1_000  # over what is remembered: counted every time
    for messages, extra in (
        ([{"role": "system", "content": "You are a judge."}, {"role": "user", "content": "trace one"}], '{"type":"object"}'),
        ([{"role": "system", "content": "You are a judge."}, {"role": "user", "content": "trace two, longer"}], '{"type":"object"}'),
        ([{"role": "system", "content": long_system}, {"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}], ""),
        ([{"role": "user", "content": [{"type": "text", "text": "structured"}]}], ""),
    ):
        plain = 3 + sum(3 + counter.text(m["content"] if isinstance(m["content"], str) else json.dumps(m["content"], sort_keys=True))
                        + counter.text(m["role"]) for m in messages) + (counter.text(extra) if extra else 0)
        for _ in range(2):  # the second time from what was remembered
            assert counter.messages(messages, extra) == plain


def test_asks_beyond_a_trips_cap_form_the_next_trip_and_each_gets_what_it_would_alone():
    cfg = JudgeConfig(provider="openai", model="gpt-4o-mini", max_tokens=100)
    prep = _judge(cfg, _Recording(), None)._preparer()
    sizes: list[int] = []
    run = prep._run

    def noted(trip):  # the real trip, its size noted
        sizes.append(len(trip.asks))
        return run(trip)

    prep._run = noted  # type: ignore[method-assign]
    metric = TaskCompletion()
    plans = [metric.plan(_case(i)) for i in range(3 * prep.MAX_TRIP + 5)]

    async def together() -> list:
        out: list = [None] * len(plans)

        async def one(i: int) -> None:
            out[i] = await prep.prepare(plans[i], plans[i].questions, 0)

        async with anyio.create_task_group() as tg:
            for i in range(len(plans)):
                tg.start_soon(one, i)
        return out

    out = anyio.run(together)
    assert sum(sizes) == len(plans) and max(sizes) <= prep.MAX_TRIP and len(sizes) >= 4
    for plan, got in zip(plans, out, strict=True):
        alone = anyio.run(prep.prepare, plan, plan.questions, 0)
        assert (got.key, got.wire) == (alone.key, alone.wire) and got.wire is not None
