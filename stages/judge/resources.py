"""What every judge request of a run shares, and the API key the judge sends (`tracejudge.stages.judge.stage` re-exports them)."""

from __future__ import annotations

import os
from urllib.parse import urlsplit
from dataclasses import dataclass
from typing import Any

from tracejudge.core.config import RunConfig
from tracejudge.core.errors import ConfigError
from tracejudge.llm.budget import InProcessBudget
from tracejudge.llm.cache import DiskJudgeCache
from tracejudge.llm.redact import variable_name
from tracejudge.llm.wire.payload import public_url
from tracejudge.llm.ratelimit import AdaptiveLimiter
from tracejudge.stages.judge.panel import member_key, panel_members, unset_key

__all__ = ["JudgeResources", "api_key", "local_resources", "prior_spent"]


def api_key(config: RunConfig) -> str | None:
    """The judge API key from the environment variable the config names.

    Raises `ConfigError` naming the variable (never its value) when it is
    named but unset, or when an OpenAI-style `base_url` also holds a user (`http://user:…@host`: both would be
    the Authorization header); with a panel (`judge.models`), when a member's is,
    or the panel cannot be built (`tracejudge.stages.judge.panel`), so the run
    stops before it starts. A panel sends each member's own key (`member_key`), never the section's, so there the
    section's variable is not demanded (None when unset): a panel of servers whose members say `api_key_env: null`
    needs no key.
    """
    judge = config.judge
    if judge is not None and judge.models:
        for member in panel_members(config):
            member_key(member)
    if judge is None or judge.provider == "simulator" or not judge.api_key_env:
        return None
    value = os.environ.get(judge.api_key_env)
    if not value and judge.models:
        return None
    if not value:
        raise ConfigError(f"judge.api_key_env: {unset_key(judge.api_key_env)}")
    if judge.provider == "openai" and judge.base_url and urlsplit(judge.base_url).username is not None:
        # The key goes as `Authorization: Bearer …`, the URL's user as `Authorization: Basic …`: one request cannot carry
        # both (aiohttp refuses it per request, which read as a failure of every case).
        raise ConfigError(f"judge.base_url: it holds a user name before its host ({public_url(judge.base_url)}) and "
                          f"judge.api_key_env ({variable_name(judge.api_key_env)}) gives a key; both would go in the one Authorization "
                          "header: take the credentials out of the URL, or set api_key_env: null")
    return value


@dataclass
class JudgeResources:
    """What every judge request of a run shares: the rate `limiter`, the token/cost `budget`, the verdict `cache` (None: off).

    In-process objects by default (`local_resources`); an executor that spreads
    the judge over machines passes shared ones with the same methods.
    """

    limiter: Any
    budget: Any
    cache: Any | None


def prior_spent(prior: dict[str, Any]) -> tuple[int, float]:
    """`(tokens, dollars)` the earlier segments of a run spent on the judge (their summary block `prior`), for the budget.

    Dollars not known (null: a model without a price) count as 0; a dollar cap is refused on such a model anyway.
    """
    return int(prior.get("input_tokens") or 0) + int(prior.get("output_tokens") or 0), float(prior.get("cost_usd") or 0.0)


def local_resources(config: RunConfig, prior: dict[str, Any]) -> JudgeResources:
    """This process's limiter (`limits`), budget (`budget`, less what `prior` segments spent) and disk cache (`cache`)."""
    cache = DiskJudgeCache(config.cache.dir) if config.cache.enabled else None
    budget = InProcessBudget(config.budget.max_judge_tokens, config.budget.max_cost_usd, *prior_spent(prior))
    return JudgeResources(AdaptiveLimiter(config.limits.rpm, config.limits.tpm, config.limits.max_in_flight, config.limits.window,
                                           config.limits.window_s), budget, cache)
