"""What a judge prompt's bytes alone say of its token count, without tokenizing it.

A tiktoken token is at least one byte and at most the encoding's longest token (`longest_token_bytes`: 128 bytes for
cl100k_base), and a character is at least one byte. So a prompt of `b` bytes has at most `b` tokens and at least
`b / 128`; a `judge.tokenizer` factor scales both. A Hugging Face tokenizer (`judge.tokenizer` a path) gives no such
bound: its prompts are always counted.
"""

from __future__ import annotations

from tracejudge.llm.judge_tokenizer import Spec
from tracejudge.llm.tokens import counter_for, longest_token_bytes
from tracejudge.llm.wire.records import JudgeRequest

__all__ = ["floor_tokens", "over_by_bytes", "prompt_bytes", "within_by_bytes"]


def prompt_bytes(req: JudgeRequest) -> int:
    """An upper bound of the prompt's tokens: a token is at least one byte (`repr` of the schema is never shorter than its JSON)."""
    return sum(len(m["content"].encode()) for m in req.messages) + len(repr(req.schema))


def within_by_bytes(req: JudgeRequest, limit: int, tokenizer: Spec = None) -> bool:
    """Whether `req`'s prompt is surely within `limit` tokens without counting: a tiktoken token (scaled by a factor
    tokenizer) is at least one byte (`prompt_bytes`); never for a Hugging Face tokenizer (`tokenizer` a path)."""
    if isinstance(tokenizer, str):
        return False
    return prompt_bytes(req) * (tokenizer if isinstance(tokenizer, float) else 1.0) <= limit


def floor_tokens(chars: int, model: str, tokenizer: Spec = None) -> int:
    """Tokens a text of `chars` characters holds at the least under `model`'s encoding and `tokenizer` (each character is
    a byte or more, each token at most `longest_token_bytes`); 0 for a Hugging Face tokenizer, which gives no bound."""
    if isinstance(tokenizer, str) or chars <= 0:
        return 0
    factor = tokenizer if isinstance(tokenizer, float) else 1.0
    return int(chars * factor / longest_token_bytes(counter_for(model).encoding))


def over_by_bytes(req: JudgeRequest, limit: int, tokenizer: Spec = None) -> bool:
    """Whether `req`'s prompt is surely over `limit` tokens without counting: its messages' bytes are more than `limit`
    of the encoding's longest tokens (scaled by a factor tokenizer); never for a Hugging Face tokenizer."""
    if isinstance(tokenizer, str):
        return False
    factor = tokenizer if isinstance(tokenizer, float) else 1.0
    content = sum(len(m["content"].encode()) for m in req.messages)
    return content * factor / longest_token_bytes(counter_for(req.model).encoding) > limit
