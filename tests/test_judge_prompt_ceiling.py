"""A judge server cutting prompts to its context (Ollama's `num_ctx`) is found by the count it reports for every long
prompt, not only when it kept under half: 5 of 6 cut prompts went uncounted (2,207 to 5,027 tokens reported as 2,048)."""

from __future__ import annotations

import random
from types import SimpleNamespace

from tracejudge.stages.judge.calls.prompt_cut import Ceiling, check_prompt_cut


def _judge(tokenizer=None) -> SimpleNamespace:
    return SimpleNamespace(cfg=SimpleNamespace(tokenizer=tokenizer, context_tokens=128_000, model="m"), url=None,
                           stats=SimpleNamespace(server_truncated_prompts=0), prompt_cut_told=False, prompt_ceiling=Ceiling())


def _replies(judge: SimpleNamespace, pairs: list[tuple[int, int]]) -> list[bool]:
    return [check_prompt_cut(judge, SimpleNamespace(usage_known=True, input_tokens=reported), sent) for sent, reported in pairs]


def test_a_context_the_server_cuts_to_is_found_by_its_ceiling_and_every_cut_reply_counted() -> None:
    judge = _judge()
    seen = _replies(judge, [(2815, 2048), (2408, 2048), (1700, 1640), (5027, 2048), (2207, 2048), (2453, 2048), (1900, 1850)])
    assert judge.stats.server_truncated_prompts == 5 and judge.prompt_cut_told  # (2815 and 2408 counted once the sign was seen)
    assert seen == [False, False, False, True, True, True, False]


def test_ordinary_tokenizer_differences_are_no_ceiling() -> None:
    judge = _judge()
    rng = random.Random(7)
    pairs = [(sent, int(sent * rng.uniform(0.72, 0.95))) for sent in (rng.randint(1500, 6000) for _ in range(3000))]
    assert not any(_replies(judge, pairs)) and judge.stats.server_truncated_prompts == 0


def test_with_the_servers_own_tokenizer_a_few_percent_short_is_a_cut() -> None:
    exact = _judge("tokenizer.json")
    assert _replies(exact, [(2207, 2048), (1000, 990), (3000, 2950)]) == [True, False, False]
    assert _replies(_judge(), [(2207, 2048)]) == [False]  # without it, tiktoken's count may well be 8% over the server's
