"""One rate limiter and one token budget for every process of a sweep on a Ray cluster.

`JudgeGate` is an async Ray actor holding the in-process `AdaptiveLimiter`
(RPM, TPM, in-flight, adaptive) and `InProcessBudget` unchanged; `RayLimiter`
and `RayBudget` are the `Limiter` and `Budget` the judge client talks to, each
call a Ray actor task. So every judge of the sweep — the shards of a CI
matrix, several heads on one cluster — waits in one admission queue and
spends from one budget, and the provider sees one client.

The gate is a *detached* named actor (`gate_name`: the sweep's config hash
without `run.shard`, its limits, budget and `run.dir`), found or created
with `get_if_exists`, so shards that start and finish at different times
share it; it lives until the cluster stops or `ray.kill`. Its caps and the
earlier spending are those of the run that created it; a resumed sweep
finds the gate with its spending already counted.

Costs: `acquire` is awaited (an object ref); `settle` is sent without
waiting (Ray runs one caller's tasks on an actor in order); `reserve` returns
its answer synchronously, as the `Budget` protocol says, so it blocks the
calling loop for one round trip to the actor (well under a millisecond on
one node).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import ray
from tracejudge.core.config import RunConfig
from tracejudge.llm.budget import InProcessBudget, Reservation
from tracejudge.llm.providers import RateInfo
from tracejudge.llm.ratelimit import AdaptiveLimiter, Permit

__all__ = ["JudgeGate", "RayBudget", "RayLimiter", "gate_name", "shared_gate"]

NAMESPACE = "tracejudge"


@ray.remote(num_cpus=0, max_concurrency=10_000)
class JudgeGate:
    """The shared limiter and budget: an async actor wrapping `AdaptiveLimiter` and `InProcessBudget`."""

    def __init__(self, rpm: int, tpm: int, max_in_flight: int, max_tokens: int | None, max_usd: float | None,
                 spent_tokens: int = 0, spent_usd: float = 0.0) -> None:
        self.limiter = AdaptiveLimiter(rpm, tpm, max_in_flight)
        self.budget = InProcessBudget(max_tokens, max_usd, spent_tokens, spent_usd)

    async def acquire(self, tokens: int) -> Permit:
        """`AdaptiveLimiter.acquire`: wait for admission, charge it. `ValueError` for a request over the TPM limit."""
        return await self.limiter.acquire(tokens)

    async def settle(self, permit: Permit, outcome: str, used_tokens: int | None = None, rate: RateInfo | None = None) -> None:
        """`AdaptiveLimiter.settle`."""
        self.limiter.settle(permit, outcome, used_tokens, rate)

    async def reserve(self, tokens: int, usd: float) -> Reservation | None:
        """`InProcessBudget.reserve`."""
        return self.budget.reserve(tokens, usd)

    async def hold(self, tokens: int, usd: float) -> Reservation | None:
        """`InProcessBudget.hold`: waits in the actor while the sweep's requests in flight stand in the way."""
        return await self.budget.hold(tokens, usd)

    async def settle_budget(self, reservation: Reservation, tokens: int, usd: float) -> None:
        """`InProcessBudget.settle`."""
        self.budget.settle(reservation, tokens, usd)

    async def spent(self) -> dict[str, Any]:
        """`{tokens, usd, held_tokens, in_flight}`: what the sweep spent and holds now."""
        b = self.budget
        return {"tokens": b.spent_tokens, "usd": round(b.spent_usd, 6), "held_tokens": b.held_tokens, "in_flight": self.limiter.in_flight}


class RayLimiter:
    """`Limiter` backed by a `JudgeGate` actor."""

    def __init__(self, gate: Any) -> None:
        self.gate = gate

    async def acquire(self, tokens: int) -> Permit:
        ref = self.gate.acquire.remote(tokens)
        try:
            permit: Permit = await ref
        except BaseException:
            ray.cancel(ref)  # cancelled while queued: leave the queue (an async actor task can be cancelled)
            raise
        return permit

    def settle(self, permit: Permit, outcome: str, used_tokens: int | None = None, rate: RateInfo | None = None) -> None:
        self.gate.settle.remote(permit, outcome, used_tokens, rate)


class RayBudget:
    """`Budget` backed by a `JudgeGate` actor."""

    def __init__(self, gate: Any) -> None:
        self.gate = gate

    def reserve(self, tokens: int, usd: float) -> Reservation | None:
        got: Reservation | None = ray.get(self.gate.reserve.remote(tokens, usd))
        return got

    def settle(self, reservation: Reservation, tokens: int, usd: float) -> None:
        self.gate.settle_budget.remote(reservation, tokens, usd)

    async def hold(self, tokens: int, usd: float) -> Reservation | None:
        ref = self.gate.hold.remote(tokens, usd)
        try:
            got: Reservation | None = await ref
        except BaseException:
            ray.cancel(ref)  # cancelled while it waited: leave the actor's wait
            raise
        return got


def gate_name(config: RunConfig, run_dir: Path | None = None) -> str:
    """The gate of a sweep: the hash of `config` without `run.shard`, its limits and budget, and the
    name of `run_dir` (default `run.dir`) without `-shard-I-of-N`; so the shards of one sweep share
    a gate, and a sweep with another `run.dir` gets its own.

    The config is hashed with its credentials masked (as the manifest shows it): anyone who can list the cluster's
    actors sees the name, and a plain hash of a config holding a weak password lets that password be guessed."""
    from tracejudge.engine.manifest import hashed_config
    from tracejudge.engine.shards import sweep_name
    from tracejudge.llm.redact import redact_config, redact_url_passwords

    dumped = config.model_dump(mode="json")
    dumped["run"]["shard"] = None
    masked = redact_config(redact_url_passwords(dumped))
    key = {"config": hashed_config(masked), "limits": dumped["limits"], "budget": dumped["budget"],
           "sweep": sweep_name(run_dir if run_dir is not None else config.run.dir)}
    return "tracejudge-judge-gate-" + hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]


def shared_gate(config: RunConfig, spent_tokens: int = 0, spent_usd: float = 0.0, run_dir: Path | None = None) -> tuple[RayLimiter, RayBudget]:
    """The sweep's `(limiter, budget)` on the Ray cluster this process is connected to (`ray.init` first).

    Creates the gate (`gate_name(config, run_dir)`) from `config.limits` and
    `config.budget` (and the spending of earlier segments) when no process of
    the sweep has yet.
    """
    lim, bud = config.limits, config.budget
    gate = JudgeGate.options(name=gate_name(config, run_dir), namespace=NAMESPACE, lifetime="detached", get_if_exists=True).remote(  # type: ignore[attr-defined]
        lim.rpm, lim.tpm, lim.max_in_flight, bud.max_judge_tokens, bud.max_cost_usd, spent_tokens, spent_usd)
    return RayLimiter(gate), RayBudget(gate)
