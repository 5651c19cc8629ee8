"""Per-model judge prices: defaults from `prices.yaml`, overridden by the config.

Prices are US dollars per million tokens; a batch API bills
`batch_discount` of them (default 0.5). A model id matches a table entry
exactly, or as the entry followed by a dated snapshot or alias suffix only
(`-2024-07-18`, `-20250514`, `-latest`), so dated ids find their family while
a variant (`o3-pro`, `gpt-5-pro`, `gpt-4ox`) does not take a cheaper
family's price. An unknown model has no price: `price_for` returns `None`,
its requests count $0 against the budget, and the summary's dollars and each
score's `judge.cost_usd` are null (unknown) once it billed tokens; a config
putting a dollar cap (`budget.max_cost_usd`) on such a model is refused when
it loads.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from importlib import resources
from typing import Any

import yaml

__all__ = ["DEFAULT_BATCH_DISCOUNT", "Price", "cost_usd", "default_prices", "price_for"]

# OpenAI's Batch API and Anthropic's Message Batches both bill half the synchronous price.
DEFAULT_BATCH_DISCOUNT = 0.5


@dataclass(frozen=True)
class Price:
    """Dollars per million tokens: `input`, `output`, `cached_input` (read from the provider's prompt
    cache), `cache_write_input` (written to it: Anthropic bills 1.25 × input; `None` = the input rate);
    `batch_discount` is the share a batch API charges."""

    input: float
    output: float
    cached_input: float
    batch_discount: float = DEFAULT_BATCH_DISCOUNT
    cache_write_input: float | None = None

    def cost(self, input_tokens: int, output_tokens: int, cached_input_tokens: int = 0, cache_write_input_tokens: int = 0) -> float:
        """Dollars for one request's usage (cached and cache-written tokens are parts of `input_tokens`)."""
        fresh = max(0, input_tokens - cached_input_tokens - cache_write_input_tokens)
        write = self.input if self.cache_write_input is None else self.cache_write_input
        return (fresh * self.input + cached_input_tokens * self.cached_input + cache_write_input_tokens * write
                + output_tokens * self.output) / 1e6

    def batch_cost(self, input_tokens: int, output_tokens: int, cached_input_tokens: int = 0, cache_write_input_tokens: int = 0) -> float:
        """Dollars for the same usage sent through the provider's batch API (`cost` × `batch_discount`)."""
        return self.cost(input_tokens, output_tokens, cached_input_tokens, cache_write_input_tokens) * self.batch_discount


@functools.lru_cache(maxsize=1)
def default_prices() -> dict[str, Price]:
    """The shipped price table (`tracejudge/llm/prices.yaml`)."""
    raw = yaml.safe_load(resources.files("tracejudge.llm").joinpath("prices.yaml").read_text(encoding="utf-8"))
    return {k: _price(v) for k, v in raw.items()}


def _price(v: Any) -> Price:
    if hasattr(v, "model_dump"):
        v = v.model_dump()
    cached = v.get("cached_input")
    discount = v.get("batch_discount")
    write = v.get("cache_write_input")
    return Price(float(v["input"]), float(v["output"]), float(v["input"] if cached is None else cached),
                 DEFAULT_BATCH_DISCOUNT if discount is None else float(discount), None if write is None else float(write))


_SNAPSHOT = re.compile(r"-(?:\d{4}-\d{2}-\d{2}|\d{8}|latest)$")


def price_for(model: str, overrides: dict[str, Any] | None = None) -> Price | None:
    """The price of `model`: a config override (exact id, or the id of its family before a snapshot suffix) first, then the defaults; `None` if unknown."""
    table = {**default_prices(), **{k: _price(v) for k, v in (overrides or {}).items()}}
    if model in table:
        return table[model]
    # Only a snapshot suffix may follow the entry: a longer name is another model, often a dearer one.
    base = _SNAPSHOT.sub("", model)
    return table.get(base) if base != model else None


def cost_usd(price: Price | None, input_tokens: int, output_tokens: int) -> float:
    """Dollars for a usage; 0 when the model has no price."""
    return 0.0 if price is None else price.cost(input_tokens, output_tokens)
