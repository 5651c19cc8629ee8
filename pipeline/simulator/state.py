"""A simulator's settings (`SimConfig`), counters (`SimStats`) and live state (`Sim`), shared by its endpoints."""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass, field
from typing import Any, Literal

from tracejudge.llm.prefix_cache import PrefixCache
from tracejudge.simulator.flaws import Flaws
from tracejudge.simulator.limits import Limits
from tracejudge.simulator.served import Weights

__all__ = ["ANTHROPIC_FIELDS", "READ_ANTHROPIC", "READ_FIELDS", "Sim", "SimConfig", "SimStats"]

# The request fields the simulator reads, or that change nothing it emulates (the prompt-cache key, sampling), on
# `/v1/chat/completions`. Any other (`chat_template_kwargs`, `reasoning_effort`…) is ignored, as a server ignores a
# field it does not know (it emulates no thinking to turn off), and counted in `SimStats.unread_fields`: a test sees
# what a client sent.
READ_FIELDS = frozenset({"model", "messages", "system", "max_tokens", "max_completion_tokens", "temperature", "top_p", "top_k",
                         "response_format", "tools", "tool_choice", "n", "stream", "stream_options", "prompt_cache_key"})
# The same on `/v1/messages`: Anthropic's own fields it reads. An OpenAI field sent there (`response_format`, `n`,
# `prompt_cache_key`) is no field of Anthropic's: it is counted, as any other it does not read (`thinking`, `metadata`).
READ_ANTHROPIC = frozenset({"model", "messages", "system", "max_tokens", "temperature", "top_p", "top_k", "tools", "tool_choice", "stream"})
# Every top-level field of Anthropic's Messages API (its documented request body). The API refuses any other with a 400
# `invalid_request_error` naming it (`"<field>: Extra inputs are not permitted"`); `SimConfig.strict_fields` does too.
ANTHROPIC_FIELDS = READ_ANTHROPIC | frozenset({"metadata", "stop_sequences", "thinking", "service_tier", "container", "mcp_servers",
                                               "context_management", "output_config", "inference_geo"})
_VALUES_KEPT = 16  # distinct values counted per unread field (a client sending one per request is not kept whole)


@dataclass
class SimConfig:
    """Simulator settings. Times in seconds unless named `_ms`; `rpm`/`tpm` `None` = unlimited."""

    latency_ms: float = 0.0
    rpm: int | None = None
    tpm: int | None = None
    error_rate: float = 0.0
    seed: int = 0
    hang_s: float = 30.0
    fault_retry_after_s: float = 1.0
    quota_retry_after_s: float = 86_400.0
    yes_share: float = 0.75
    script: list[str] = field(default_factory=list)
    batch_completion_s: float = 1.0
    batch_expire_rate: float = 0.0
    batch_shuffle: bool = True
    batch_script: list[dict[str, Any]] = field(default_factory=list)
    window: Literal["bucket", "strict"] = "bucket"
    rate_headers: bool = True
    max_concurrency: int | None = None
    # Computes at most this many requests at once, as llama.cpp's `--parallel` slots (its `/props` `total_slots`):
    # the others wait in the server's queue, and their `latency_ms` starts when a slot frees.
    slots: int | None = None
    window_s: float = 60.0
    book: Literal["arrival", "reply"] = "arrival"
    limit_count: Literal["usage", "chars"] = "usage"
    refuse_marker: str | None = None
    prefix_cache: bool = True
    # Known flaws (`tracejudge.simulator.flaws`): systematic error against the truth, per-model noise, position bias.
    agreement: float = 1.0
    noise: float | dict[str, float] = 0.0
    position_bias: float = 0.0
    json_object_only: bool = False
    tokenizer_factor: float = 1.0
    context_tokens: int | None = None
    # The server's own output cap, under what a request's `max_tokens` asks (llama.cpp `--n-predict`): a longer reply is
    # cut there, `finish_reason: length` with that many completion tokens, whatever `max_tokens` the request asked.
    max_reply_tokens: int | None = None
    # Present itself as a self-hosted server serving these weights (`tracejudge.simulator.served`).
    served: Weights | None = None
    # Refuse a top-level field Anthropic's Messages API does not have, on `/v1/messages` (a batch's requests are only
    # counted), as the API does: 400 `invalid_request_error`, `"<field>: Extra inputs are not permitted"`. Off, such a field is
    # answered and counted in `unread_fields`, as an OpenAI-compatible server ignores a field it does not know.
    strict_fields: bool = False


@dataclass
class SimStats:
    """What the simulator saw. Tokens are prompt + completion of answered requests."""

    requests: int = 0
    answered: int = 0
    rate_limited: int = 0
    server_errors: int = 0
    timeouts: int = 0
    truncated: int = 0
    refused: int = 0
    cached_input_tokens: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    by_path: dict[str, int] = field(default_factory=dict)
    files_uploaded: int = 0
    batches_created: int = 0
    batch_requests: int = 0
    batch_polls: int = 0
    batch_downloads: int = 0
    first_request: float | None = None
    last_request: float | None = None
    # Requests that arrived in each whole second since the first (a bounded timeline for benchmarks).
    arrivals_per_s: dict[int, int] = field(default_factory=dict)
    # The most tokens the token limit counted at once (never above `tpm` when the limit holds).
    peak_window_tokens: float = 0.0
    # Each request field the simulator does not read (`READ_FIELDS`) → its value as canonical JSON → requests that sent
    # it, synchronous and batched alike (the first `_VALUES_KEPT` distinct values of a field).
    unread_fields: dict[str, dict[str, int]] = field(default_factory=dict)


class Sim:
    """One simulator's live state: its config, counters, fault script, rate limits, prompt cache and flaws."""

    def __init__(self, config: SimConfig) -> None:
        self.config = config
        self.stats = SimStats()
        self.rng = random.Random(config.seed)
        self.script = list(config.script)
        self.limits = Limits(config.rpm, config.tpm, config.window, config.window_s, config.book)
        self.serial = 0
        self.in_flight = 0
        self.queued_peak = 0  # the most requests waiting for a slot at once (`SimConfig.slots`)
        self._slot_gate: Any = None  # an asyncio.Semaphore of `slots`, made in the server's loop (`slot`)
        self.prefix_cache = PrefixCache(config.prefix_cache)
        self.flaws = Flaws(config.seed, config.agreement, config.noise, config.position_bias)
        self.served: Weights | None = None
        if config.served is not None:
            self.serve(config.served)

    def note_fields(self, body: Any, anthropic: bool = False) -> None:
        """Count the fields of request `body` (to `/v1/messages` when `anthropic`) the simulator does not read
        (`SimStats.unread_fields`)."""
        if not isinstance(body, dict):
            return
        read = READ_ANTHROPIC if anthropic else READ_FIELDS
        for key, value in body.items():
            if key in read:
                continue
            seen = self.stats.unread_fields.setdefault(str(key), {})
            text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
            if text in seen or len(seen) < _VALUES_KEPT:
                seen[text] = seen.get(text, 0) + 1

    def foreign_field(self, body: dict[str, Any], anthropic: bool) -> str | None:
        """The first top-level field of `body` that Anthropic's API refuses, when `strict_fields` is on and the request is
        Anthropic's; else None."""
        if not (anthropic and self.config.strict_fields):
            return None
        return next((str(k) for k in body if k not in ANTHROPIC_FIELDS), None)

    def serve(self, weights: Weights | None) -> None:
        """Serve `weights` from now on (`None`: none described): its identity endpoints describe them, and verdicts
        are made with their `seed` and `yes_share` (written into `config`), as other weights answer otherwise."""
        self.served = weights
        if weights is not None:
            self.config.seed, self.config.yes_share = weights.seed, weights.yes_share
            self.flaws = Flaws(weights.seed, self.config.agreement, self.config.noise, self.config.position_bias)

    def slot(self) -> Any:
        """The server's slots (`SimConfig.slots`) as an asyncio semaphore, made on first use in the running loop; None: unlimited."""
        if self.config.slots is None:
            return None
        if self._slot_gate is None:
            import asyncio

            self._slot_gate = asyncio.Semaphore(self.config.slots)
        return self._slot_gate

    # ----------------------------------------------------------------- faults

    def next_fault(self) -> str:
        """The fault for the next request: the script's next, else one drawn at `error_rate`, else `ok`."""
        if self.script:
            return self.script.pop(0)
        if self.config.error_rate and self.rng.random() < self.config.error_rate:
            return self.rng.choice(["500", "timeout", "truncated"])
        return "ok"

    # ----------------------------------------------------------------- limits

    def headers(self, anthropic: bool) -> dict[str, str]:
        """The rate-limit headers of a reply in the provider's form (none with `rate_headers=False`)."""
        return self.limits.headers(anthropic) if self.config.rate_headers else {}

    # ----------------------------------------------------------------- verdicts

    def instance(self, schema: dict[str, Any], digest: bytes, path: str = "", root: dict[str, Any] | None = None, depth: int = 0) -> Any:
        """A deterministic instance of a JSON schema (the subset judges and the SDKs' structured outputs use).

        Local references (`{"$ref": "#/$defs/Answer"}`, as pydantic writes a nested model) are read from `root`,
        the whole schema; `anyOf` / `oneOf` take their first member that is not null, `const` its value.
        """
        root = schema if root is None else root

        def h(tag: str) -> int:
            return int.from_bytes(hashlib.sha256(digest + (path + "/" + tag).encode()).digest()[:8], "big")

        def more(sub: Any, at: str) -> Any:
            return self.instance(sub if isinstance(sub, dict) else {}, digest, at, root, depth + 1)

        ref = schema.get("$ref")
        if isinstance(ref, str) and depth < 32:  # (a schema that refers to itself ends in a string, not a loop)
            return more(_pointer(root, ref), path)
        if "const" in schema:
            return schema["const"]
        options = schema.get("anyOf") or schema.get("oneOf") or schema.get("allOf")
        if isinstance(options, list) and options and depth < 32:
            return more(next((o for o in options if not (isinstance(o, dict) and o.get("type") == "null")), options[0]), path)
        if "enum" in schema:
            values = schema["enum"]
            if set(values) >= {"yes", "no"}:
                return "yes" if h("e") % 1000 < self.config.yes_share * 1000 else "no"
            return values[h("e") % len(values)]
        kind = schema.get("type")
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), "null")
        if kind == "object":
            props = schema.get("properties", {})
            # A required property the schema does not describe still has to be there: any value will do.
            extra = [k for k in schema.get("required") or [] if isinstance(k, str) and k not in props]
            return {k: more(props.get(k, {}), f"{path}/{k}") for k in [*props, *extra]}
        if kind == "array":
            n = schema.get("minItems", 1)
            return [more(schema.get("items", {}), f"{path}/{i}") for i in range(n)]
        if kind == "boolean":
            return h("b") % 1000 < self.config.yes_share * 1000
        if kind == "integer":
            lo, hi = int(schema.get("minimum", 0)), int(schema.get("maximum", 10))
            return lo + h("i") % (hi - lo + 1)
        if kind == "number":
            flo, fhi = float(schema.get("minimum", 0)), float(schema.get("maximum", 1))
            return round(flo + (h("n") % 1001) / 1000 * (fhi - flo), 3)
        if kind == "null":
            return None
        return f"simulated reason {h('s') % 997}"


def _pointer(root: dict[str, Any], ref: str) -> Any:
    """What the local JSON pointer `ref` (`#/$defs/Answer`) names in `root`, or `{}` (any value) when nothing."""
    if not ref.startswith("#"):
        return {}
    node: Any = root
    for part in filter(None, ref[1:].split("/")):
        part = part.replace("~1", "/").replace("~0", "~")
        node = node.get(part) if isinstance(node, dict) else None
        if node is None:
            return {}
    return node
