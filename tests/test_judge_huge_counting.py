"""A prompt far over the judge's window is not tokenized whole, and no text makes the token count raise.

Counting a 60 MB final output exactly took 46 s of tiktoken in the preparation trip every other judged case waits
for; all the count decides is that the prompt does not fit and how much to cut. `fit_count.count` counts such a prompt
with its cuttable sections clipped first, and the fitted request is what a full count would have allowed: under the
window, the section cut with a marker that counts the characters cut from the whole field. tiktoken's regex gives up
on a run of about a million whitespace characters followed by other text; such a text is counted in pieces.
A long run of spaces in an output is planned by Faithfulness at once too (its claims' line breaks).
"""

from __future__ import annotations

import re
import time

import pytest

import tracejudge.stages.judge.fit as fit
import tracejudge.stages.judge.fit_count as fit_count
from tracejudge.core.config import JudgeConfig
from tracejudge.core.records import Case
from tracejudge.llm.prefix_cache import PrefixCache
from tracejudge.llm.tokens import counter_for, encode
from tracejudge.stages.judge.client import request_tokens
from tracejudge.stages.judge.metrics import Faithfulness, TaskCompletion

STEPS = [{"tool_calls": [{"name": "read_ledger", "arguments": {"file": "ledger.csv"}, "result": "rows: 3"}]}, {"output": "summed"}]


def plan_of(output: str):
    case = Case.model_validate({"id": "c", "input": "Sum the ledger", "trace": {"steps": STEPS, "output": output}})
    return TaskCompletion().plan(case)


@pytest.fixture
def counted(monkeypatch):
    """The characters of every prompt `fit` counts (a spy around the real count)."""
    sizes: list[int] = []
    real = fit.request_tokens

    def spy(req, tok=None):
        sizes.append(sum(len(m["content"]) for m in req.messages))
        return real(req, tok)

    monkeypatch.setattr(fit, "request_tokens", spy)
    monkeypatch.setattr(fit_count, "request_tokens", spy)  # (the first count of a huge prompt: clipped, or its head)
    return sizes


@pytest.mark.parametrize("unit", ["a", "The ledger total is 42 because every row adds up; ", " "])
def test_a_field_far_over_the_window_is_cut_without_counting_it_whole(counted, unit):
    size = 6_000_000
    output = (unit * (size // len(unit) + 1))[:size]
    cfg = JudgeConfig(provider="openai", model="gpt-4o-mini", context_tokens=16_000)
    plan = plan_of(output)
    fitted = fit.fit_request(plan, plan.questions, cfg)
    limit = 16_000 - fitted.req.max_tokens
    assert fitted.fits and fitted.cut == ["Final output"] and not fitted.over
    assert request_tokens(fitted.req) == fitted.tokens <= limit
    text = fitted.req.messages[-1]["content"]
    # The marker counts what was cut from the whole field, and the trace's steps stay whole.
    cut = int(re.search(r"…\[(\d+) characters cut\]", text).group(1))
    assert cut == size - fitted.cap and "read_ledger" in text
    assert counted and max(counted) < size  # never the whole 6 million characters


def test_under_skip_a_prompt_far_over_the_window_says_its_count_is_a_lower_bound(counted):
    cfg = JudgeConfig(provider="openai", model="gpt-4o-mini", context_tokens=16_000, too_long="skip")
    plan = plan_of("a" * 6_000_000)
    fitted = fit.fit_request(plan, plan.questions, cfg)
    assert not fitted.fits and fitted.over and 16_000 < fitted.tokens < 6_000_000 // 8
    assert max(counted) < 6_000_000


def test_a_prompt_near_the_window_is_counted_exactly_as_before(counted):
    cfg = JudgeConfig(provider="openai", model="gpt-4o-mini", context_tokens=16_000, too_long="skip")
    plan = plan_of("The ledger total is 42 because every row adds up; " * 2_000)  # 100,000 characters: under the clip's reach
    fitted = fit.fit_request(plan, plan.questions, cfg)
    assert not fitted.fits and not fitted.over and fitted.tokens == request_tokens(fitted.req)


def test_a_million_spaces_before_text_are_counted_not_raised():
    text = "x" + " " * 1_200_000 + "y"
    enc = counter_for("gpt-4o-mini").encoding
    with pytest.raises(ValueError):  # what tiktoken alone does: the reason for `encode`
        enc.encode(text, disallowed_special=())
    n = counter_for("gpt-4o-mini").text(text)
    whole = enc.encode(" " * 1_200_000, disallowed_special=())  # the run alone, which tiktoken can count
    assert abs(n - (len(whole) + 2)) <= 6  # a piece's end splits at most a token or so
    assert encode(enc, "plain words") == enc.encode("plain words")
    # The simulator's server-side prefix cache tokenizes the same text too.
    assert PrefixCache().openai("gpt-4o-mini", {"messages": [{"role": "user", "content": text}]}) == 0


def test_a_case_whose_output_is_a_whitespace_run_then_text_is_judged_on_a_cut_prompt():
    cfg = JudgeConfig(provider="openai", model="gpt-4o-mini", context_tokens=16_000)
    plan = plan_of("report:" + " " * 3_000_000 + "total 42")
    fitted = fit.fit_request(plan, plan.questions, cfg)
    assert fitted.fits and fitted.cut == ["Final output"] and request_tokens(fitted.req) <= 16_000 - fitted.req.max_tokens


def test_a_group_of_items_is_over_the_window_as_its_count_says_and_a_huge_one_is_never_counted(monkeypatch):
    # `judge.items_per_request`: a group holding a 6 MB item was counted whole on the event loop before each item was
    # asked alone (a run of 300 cases with one such item took 2:53 instead of seconds).
    import anyio

    from tracejudge.stages.judge.client import JudgeRequest

    def req(text: str) -> JudgeRequest:
        return JudgeRequest(model="gpt-4o-mini", messages=[{"role": "system", "content": "Judge."}, {"role": "user", "content": text}],
                            schema={"type": "object"}, schema_name="verdict", max_tokens=100)

    for text in ("word " * 900, "word " * 1100, "a" * 7_000, "a" * 9_000, " " * 120_000, " " * 140_000):
        exact = request_tokens(req(text)) > 1_000
        assert anyio.run(fit.exceeds, req(text), 1_000, None) is exact
        assert anyio.run(fit.exceeds, req(text), 1_000, 1.5) is (request_tokens(req(text), 1.5) > 1_000)
    counted: list[int] = []
    monkeypatch.setattr(fit, "request_tokens", lambda r, tok=None: counted.append(1) or 0)
    assert anyio.run(fit.exceeds, req("a" * 6_000_000), 16_000, None) and not counted


def test_a_prompt_huge_in_its_steps_is_rendered_whole_once(monkeypatch):
    # Nothing but the steps is large: neither the clipped count nor the field cut can use another whole render (each
    # is seconds for 100,000 steps), only leaving steps out can make it fit.
    renders: list[int] = []
    real = fit.build_request

    def spy(plan, questions, cfg, omit):
        req = real(plan, questions, cfg, omit)
        renders.append(sum(len(m["content"]) for m in req.messages))
        return req

    monkeypatch.setattr(fit, "build_request", spy)
    steps = [{"thought": f"step {i} reads row {i}", "tool_calls": [{"name": "read_row", "arguments": {"row": i}, "result": f"value {i % 97}"}]}
             for i in range(20_000)]
    case = Case.model_validate({"id": "c", "input": "Sum the ledger", "trace": {"steps": [*steps, {"output": "summed"}], "output": "42"}})
    plan = TaskCompletion().plan(case)
    fitted = fit.fit_request(plan, plan.questions, JudgeConfig(provider="openai", model="gpt-4o-mini", context_tokens=8000))
    assert fitted.fits and fitted.omit and not fitted.cut
    assert max(renders) > 1_048_576 and sum(1 for n in renders if n > 1_048_576) == 1


def test_faithfulness_plans_an_output_holding_a_long_run_of_spaces_at_once():
    # Its claims' line breaks were found by a regex tried at every character of the run, each try scanning the rest of
    # it: 60,000 spaces took about 25 s, the 3,000,000 of a padded output hours, and the run stalled before its first result.
    output = "report:" + " " * 60_000 + "total 42.\n  Every row adds up."
    case = Case.model_validate({"id": "c", "input": "Sum the ledger",
                                "trace": {"steps": STEPS, "output": output, "retrieved": [{"content": "rows 10, 12, 20"}]}})
    began = time.perf_counter()
    plan = Faithfulness().plan(case)
    assert time.perf_counter() - began < 2
    text = plan.render(0)
    assert "Claim 1: report:" + " " * 60_000 + "total 42." in text and "Claim 2: Every row adds up." in text


def _passages_case(n: int, chars: int) -> Case:
    import random

    rng = random.Random(7)
    words = "the ledger total is forty two because every row adds up and the refund was issued on tuesday".split()
    text = " ".join(rng.choices(words, k=(n * chars) // 4))
    passages = [{"content": text[i * chars : (i + 1) * chars]} for i in range(n)]
    return Case.model_validate({"id": "c", "input": "Sum the ledger",
                                "trace": {"steps": STEPS, "output": "The total is 42. Every row adds up.", "retrieved": passages}})


def test_a_prompt_of_many_passages_each_under_the_clip_is_not_counted_whole(counted, monkeypatch):
    # 250 passages of 10,000 characters: none is over the clip, so the clipped count did not apply and the whole prompt
    # was tokenized just to learn it does not fit (30 MB of 5,000 passages: seconds of a preparation every case waits for).
    plan = Faithfulness().plan(_passages_case(250, 10_000))
    whole = sum(len(m["content"]) for m in fit.fit_request(plan, plan.questions, JudgeConfig(context_tokens=10**8)).req.messages)
    counted.clear()
    skipped = fit.fit_request(plan, plan.questions, JudgeConfig(provider="openai", model="gpt-4o-mini", context_tokens=32_000, too_long="skip"))
    assert not skipped.fits and skipped.over and max(counted) < whole // 4
    assert 32_000 - skipped.req.max_tokens <= skipped.tokens <= request_tokens(skipped.req)  # a lower bound of the count
    counted.clear()
    cfg = JudgeConfig(provider="openai", model="gpt-4o-mini", context_tokens=32_000)
    fitted = fit.fit_request(plan, plan.questions, cfg)
    assert fitted.fits and "Passage 250" in fitted.cut and max(counted) < whole // 4
    assert request_tokens(fitted.req) == fitted.tokens <= 32_000 - fitted.req.max_tokens
    # The cut is what counting the whole prompt finds, to the search's own tolerance.
    monkeypatch.setattr(fit_count, "HUGE_CHARS", 10**12)
    exact = fit.fit_request(plan, plan.questions, cfg)
    assert exact.cut == fitted.cut and abs(exact.cap - fitted.cap) <= exact.cap * 0.05


def test_a_prompt_still_huge_after_its_passages_are_cut_is_not_counted_whole(counted):
    # 2,000 passages each over the 2,000-character floor: cut to it, the prompt is still 4 MB, far over the window. It
    # was tokenized whole only to learn that; its head proves it over (`fit_count.fit_tokens`).
    passages = [{"content": f"passage {i} " + "word " * 520} for i in range(2_000)]
    case = Case.model_validate({"id": "f", "input": "q", "trace": {"steps": [{"output": "looked"}], "output": "The sky is blue.",
                                                                    "retrieved": passages}})
    plan = Faithfulness().plan(case)
    fitted = fit.fit_request(plan, plan.questions, JudgeConfig(provider="openai", model="gpt-4o-mini", context_tokens=16_000))
    assert not fitted.fits and fitted.over and fitted.tokens > 16_000
    assert counted and max(counted) <= fit_count.HUGE_CHARS
