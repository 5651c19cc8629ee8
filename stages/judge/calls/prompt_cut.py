"""A judge server that silently cut the prompt it was sent: its reported prompt tokens far below what was sent.

Ollama (its default `num_ctx`, 2,048 or 4,096 tokens), and some other servers run with a small context, do not refuse
a prompt longer than their context: they keep part of it, answer, and report the tokens they kept as
`usage.prompt_tokens`. The judge then gave a verdict on a trace it saw only in part, and nothing failed. The one sign
is the reply's own count, far below tracejudge's count of the prompt it sent.

Tokenizers differ (a model's count is often 0.8–1.3× tiktoken's, a `judge.tokenizer` factor shifts ours), so the rule
is wide: the server's count is under half of ours *and* more than `MIN_SHORT` tokens short. A short prompt (under
2 × `MIN_SHORT`) is therefore never flagged, and neither is a cached reply (nothing was sent) nor one without usage
(its input tokens are our own estimate). Anthropic's count includes its cache reads and writes (`wire.read` adds
them), so prompt caching does not read as a cut.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tracejudge.llm.providers import Reply
    from tracejudge.stages.judge.client import Judge

__all__ = ["MIN_SHORT", "check_prompt_cut", "prompt_was_cut"]

# How many tokens short the server's count must be, besides under half: tens of percent of a short prompt are
# ordinary tokenizer differences, a few hundred tokens of a long one are not.
MIN_SHORT = 500


def prompt_was_cut(sent_tokens: int, reported_tokens: int) -> bool:
    """Whether a server that reported `reported_tokens` for a prompt we counted as `sent_tokens` kept only part of it.

    False when the server reported nothing (0: a server that does not count) or when either figure is within the
    tolerance above.
    """
    if reported_tokens <= 0 or sent_tokens <= 0:
        return False
    return reported_tokens * 2 < sent_tokens and sent_tokens - reported_tokens > MIN_SHORT


def check_prompt_cut(self: Judge, reply: Reply, sent_tokens: int) -> bool:
    """Count `reply` in `stats.server_truncated_prompts` when its server cut the prompt (`prompt_was_cut`), and warn
    the first time for this judge, naming both figures and what to change. Returns whether it did.

    Only replies with usage the server reported are checked (`usage_known`): an estimate equals our own count.
    The verdict is kept: the server answered and billed it, and an error would fail runs on a server whose counts
    are merely odd; the warning and the summary's count make the cut visible instead.
    """
    if not reply.usage_known or not prompt_was_cut(sent_tokens, reply.input_tokens):
        return False
    self.stats.server_truncated_prompts += 1
    if not self.prompt_cut_told:
        self.prompt_cut_told = True
        from tracejudge.core.log import get_logger
        from tracejudge.llm.providers import public_url

        get_logger("tracejudge.judge").warning(
            f"the judge server counted {reply.input_tokens:,} prompt tokens for a prompt tracejudge counted as {sent_tokens:,}: it is "
            "cutting prompts to its context and judging part of the trace (no error is returned). Raise the server's context "
            "size (Ollama: num_ctx in the model's options or OLLAMA_CONTEXT_LENGTH; vLLM --max-model-len; llama.cpp --ctx-size), "
            f"or set judge.context_tokens (now {self.cfg.context_tokens:,}) to the server's context so tracejudge cuts the trace itself; "
            "summary.json's judge.server_truncated_prompts counts such replies",
            model=self.cfg.model, url=public_url(self.url) if self.url else None)
    return True
