"""A judge server that silently cut the prompt it was sent: its reported prompt tokens far below what was sent.

Ollama (its default `num_ctx`, 2,048 or 4,096 tokens), and some other servers run with a small context, do not refuse
a prompt longer than their context: they keep part of it, answer, and report the tokens they kept as
`usage.prompt_tokens`. The judge then gave a verdict on a trace it saw only in part, and nothing failed. The one sign
is the reply's own count, far below tracejudge's count of the prompt it sent.

Tokenizers differ (a model's count is often 0.8–1.3× tiktoken's, a `judge.tokenizer` factor shifts ours), so one
reply alone is taken as cut only when the server's count is under half of ours *and* more than `MIN_SHORT` tokens
short. Two signs are sharper:

- a ceiling: a server that cuts to its context reports the same count, its context size, for every prompt longer
  than it (Ollama's `num_ctx`: 2,048 for prompts of 2,207 to 5,027 tokens). The largest count a server has reported
  is taken as that ceiling when it is a context size a server is run with (`plausible_context`: a multiple of 256
  from 512 up, as 2,048, 4,096 or 6,144 are) and was reported for `CEILING_REPLIES` prompts we counted longer (by
  `CEILING_MARGIN`) whose lengths clearly differ (the longest `CEILING_SPREAD` times the shortest): one count for
  prompts of much the same length is what a tokenizer counting a few percent fewer tokens gives templated cases, and
  is no cut. Then every reply at that count is a cut, those before the sign was seen included;
- the server's own tokenizer: with `judge.tokenizer` a `tokenizer.json`, our count is the server's, so a count more
  than 5% and `EXACT_SHORT` tokens short is a cut.

A cached reply (nothing was sent) and one without usage (its input tokens are our own estimate) are never flagged.
Anthropic's count includes its cache reads and writes (`wire.read` adds them), so prompt caching does not read as a
cut.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tracejudge.llm.providers import Reply
    from tracejudge.stages.judge.client import Judge

__all__ = ["CEILING_MARGIN", "CEILING_REPLIES", "CEILING_SPREAD", "Ceiling", "EXACT_SHORT", "MIN_SHORT", "check_prompt_cut",
           "plausible_context", "prompt_was_cut"]

# How many tokens short the server's count must be, besides under half: tens of percent of a short prompt are
# ordinary tokenizer differences, a few hundred tokens of a long one are not.
MIN_SHORT = 500
CEILING_REPLIES = 3  # prompts of different lengths reported at the one largest count: a context the server cuts to
CEILING_MARGIN = 1.05  # ... each counted at least this much longer by us
# ... the longest this much longer than the shortest: a context cuts prompts of any length above it to one count, and
# templated cases of one length give one count on any server
CEILING_SPREAD = 1.2
CONTEXT_STEP = 256  # contexts servers are run with are multiples of this (512, 2,048, 4,096, 6,144, 131,072)
MIN_CONTEXT = 512
EXACT_SHORT = 64  # tokens short, with the server's own tokenizer, beyond chat-template differences


def plausible_context(tokens: int) -> bool:
    """Whether a prompt count could be the context size a server cuts to: a multiple of `CONTEXT_STEP` from
    `MIN_CONTEXT` up (Ollama's `num_ctx` defaults, 2,048 and 4,096, and the sizes users set, 8,192 or 6,144)."""
    return tokens >= MIN_CONTEXT and tokens % CONTEXT_STEP == 0


@dataclass
class Ceiling:
    """The largest prompt count a judge's server reported (`top`), how many replies reported it for prompts we counted
    longer (`over`; `counted` of them already counted as cut), and the shortest and longest of those prompts as we
    counted them (`shortest`, `longest`)."""

    top: int = 0
    over: int = 0
    counted: int = 0
    shortest: int = 0
    longest: int = 0

    def seen(self) -> bool:
        """Whether `top` reads as a context the server cuts to (see the module's docstring)."""
        return (self.over >= CEILING_REPLIES and plausible_context(self.top)
                and self.longest >= self.shortest * CEILING_SPREAD)

    def add(self, sent: int, reported: int, cut: bool) -> int:
        """Note a reply; the replies now known to be cut that were not counted before (this one included when `cut`)."""
        if reported > self.top:
            self.top, self.over, self.counted, self.shortest, self.longest = reported, 0, 0, 0, 0
        if reported == self.top and sent >= reported * CEILING_MARGIN:
            self.over += 1
            self.shortest = min(self.shortest, sent) if self.shortest else sent
            self.longest = max(self.longest, sent)
            if self.seen():
                new, self.counted = self.over - self.counted, self.over
                return new
            if cut:
                self.counted += 1
        return int(cut)


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
    if not reply.usage_known or reply.input_tokens <= 0 or sent_tokens <= 0:
        return False
    reported = reply.input_tokens
    cut = prompt_was_cut(sent_tokens, reported) or (
        isinstance(self.cfg.tokenizer, str) and reported < 0.95 * sent_tokens and sent_tokens - reported > EXACT_SHORT)
    new = self.prompt_ceiling.add(sent_tokens, reported, cut)
    if not new:
        return False
    self.stats.server_truncated_prompts += new
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
