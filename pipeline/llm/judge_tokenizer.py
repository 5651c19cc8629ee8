"""Counting a judge prompt the way the judge's server will (`judge.tokenizer`).

tiktoken's count (`tracejudge.llm.tokens`) is exact for OpenAI's models only;
a self-hosted model's tokenizer counts the same prompt differently (1.07–1.27×
on SmolLM2's, measured), and a prompt that fits by tiktoken's count then
overflows the server's window. `judge.tokenizer` fixes the count used by the
context fit, the rate limiter's admission and `tracejudge estimate`:

- a path to a Hugging Face `tokenizer.json` (the server's own tokenizer), read
  with the `tokenizers` package (extra `local-judges`); the chat framing is
  counted as tiktoken's is (a few tokens per message);
- `{factor: F}`: tiktoken's count × F, rounded up.

`prompt_counter(model, spec)` gives the counter; `spec_of(cfg)` turns the
config's value into the hashable spec (`None`, a path string or a float).
"""

from __future__ import annotations

import functools
import importlib.util
import math
from pathlib import Path
from typing import Any, Protocol

from tracejudge.core.errors import ConfigError
from tracejudge.llm.tokens import TokenCounter, counter_for

__all__ = ["PromptCounter", "check_tokenizer", "prompt_counter", "spec_of"]

Spec = str | float | None


class PromptCounter(Protocol):
    """What the fit, admission and the estimate need of a tokenizer."""

    def text(self, text: str) -> int: ...

    def messages(self, messages: list[dict[str, Any]], extra: str = "") -> int: ...


class _Scaled:
    """tiktoken's count × `factor`, rounded up."""

    def __init__(self, base: TokenCounter, factor: float) -> None:
        self.base, self.factor = base, factor

    def text(self, text: str) -> int:
        return math.ceil(self.base.text(text) * self.factor)

    def messages(self, messages: list[dict[str, Any]], extra: str = "") -> int:
        return math.ceil(self.base.messages(messages, extra) * self.factor)


class _HuggingFace:
    """A `tokenizer.json` read by the `tokenizers` package; chat framing as `TokenCounter.messages` counts it."""

    def __init__(self, path: str) -> None:
        from tokenizers import Tokenizer

        self.tok = Tokenizer.from_file(path)

    def text(self, text: str) -> int:
        return len(self.tok.encode(text, add_special_tokens=False).ids)

    def messages(self, messages: list[dict[str, Any]], extra: str = "") -> int:
        total = 3
        for m in messages:
            content = m.get("content", "")
            total += 3 + self.text(content if isinstance(content, str) else str(content)) + self.text(str(m.get("role", "")))
        return total + (self.text(extra) if extra else 0)


def spec_of(cfg: Any) -> Spec:
    """`cfg.tokenizer` (a `JudgeConfig`'s) as a hashable spec: `None`, a path string, or a factor."""
    tok = getattr(cfg, "tokenizer", None)
    if tok is None or isinstance(tok, str):
        return tok
    return float(tok.factor)


def check_tokenizer(spec: Spec) -> None:
    """Raise `ConfigError` when `spec` names a tokenizer that cannot be used (no `tokenizers` package, no such file)."""
    if not isinstance(spec, str):
        return
    if importlib.util.find_spec("tokenizers") is None:
        raise ConfigError(f"judge.tokenizer: reading {spec} needs the `tokenizers` package "
                          "(pip install 'tracejudge[local-judges]'), or give {factor: 1.25} instead of a path")
    if not Path(spec).is_file():
        raise ConfigError(f"judge.tokenizer: {spec} is not a file (expected a Hugging Face tokenizer.json)")


@functools.lru_cache(maxsize=16)
def prompt_counter(model: str, spec: Spec = None) -> PromptCounter:
    """The counter for prompts to `model` under `spec` (see the module doc). Raises `ConfigError` for an unusable tokenizer file."""
    if spec is None:
        return counter_for(model)
    if isinstance(spec, float):
        return _Scaled(counter_for(model), spec)
    check_tokenizer(spec)
    try:
        return _HuggingFace(spec)
    except Exception as exc:  # the tokenizers library raises its own exception type for a bad file
        raise ConfigError(f"judge.tokenizer: {spec} could not be read as a tokenizer.json ({type(exc).__name__}: {str(exc)[:200]})") from None
