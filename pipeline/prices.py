"""Per-model judge prices: defaults from `prices.yaml`, overridden by the config.

Prices are US dollars per million tokens. A model id matches the longest
table entry it starts with, so dated ids (`gpt-4o-mini-2024-07-18`) find
their family. An unknown model has no price: `price_for` returns `None`
and costs are reported as 0 with `priced: false`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources
from typing import Any

import yaml

__all__ = ["Price", "cost_usd", "default_prices", "price_for"]


@dataclass(frozen=True)
class Price:
    """Dollars per million tokens: `input`, `output`, `cached_input`."""

    input: float
    output: float
    cached_input: float

    def cost(self, input_tokens: int, output_tokens: int, cached_input_tokens: int = 0) -> float:
        """Dollars for one request's usage (`cached_input_tokens` is the cached part of `input_tokens`)."""
        fresh = max(0, input_tokens - cached_input_tokens)
        return (fresh * self.input + cached_input_tokens * self.cached_input + output_tokens * self.output) / 1e6


@functools.lru_cache(maxsize=1)
def default_prices() -> dict[str, Price]:
    """The shipped price table (`pipeline/prices.yaml`)."""
    raw = yaml.safe_load(resources.files("pipeline").joinpath("prices.yaml").read_text(encoding="utf-8"))
    return {k: _price(v) for k, v in raw.items()}


def _price(v: Any) -> Price:
    if hasattr(v, "model_dump"):
        v = v.model_dump()
    cached = v.get("cached_input")
    return Price(float(v["input"]), float(v["output"]), float(v["input"] if cached is None else cached))


def price_for(model: str, overrides: dict[str, Any] | None = None) -> Price | None:
    """The price of `model`: a config override (exact id or prefix) first, then the defaults; `None` if unknown."""
    table = {**default_prices(), **{k: _price(v) for k, v in (overrides or {}).items()}}
    if model in table:
        return table[model]
    best = max((k for k in table if model.startswith(k)), key=len, default=None)
    return table[best] if best else None


def cost_usd(price: Price | None, input_tokens: int, output_tokens: int) -> float:
    """Dollars for a usage; 0 when the model has no price."""
    return 0.0 if price is None else price.cost(input_tokens, output_tokens)
