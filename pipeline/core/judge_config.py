"""The `judge:` section of a run config: endpoint, request shape, retries, simulator knobs, prices.

Part of the run config (`tracejudge.core.config`, which re-exports every name here).
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit, urlunsplit
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from tracejudge.core.extra_body import validated
from tracejudge.core.judge_modes import BatchApiConfig, CalibrationConfig
from tracejudge.core.judge_quality import LabelsConfig, PairwiseConfig, PanelModel
from tracejudge.core.strict_numbers import NoBoolNumbers
from tracejudge.core.suggest import did_you_mean
from tracejudge.core.urls import http_url

__all__ = ["PROVIDERS", "JudgeConfig", "PriceConfig", "SimulatorOptions", "TokenizerFactor", "base_url_env", "env_base_url", "judge_provider_problem",
           "noise_key_problems", "noisy_simulator_samples", "unpriced_cost_cap"]


class _Strict(NoBoolNumbers):
    model_config = ConfigDict(extra="forbid")


class SimulatorOptions(_Strict):
    """How the judge simulator started by a `provider: simulator` run behaves (see `tracejudge simulate`)."""

    latency_ms: float = Field(default=0.0, ge=0)
    rpm: int | None = Field(default=None, ge=1)
    tpm: int | None = Field(default=None, ge=1)
    error_rate: float = Field(default=0.0, ge=0, le=1)
    # How long a request given the hang fault waits before its 504: past `judge.timeout_s` it is a client timeout.
    hang_s: float = Field(default=30.0, gt=0)
    seed: int = 0
    batch_completion_s: float = Field(default=1.0, ge=0)
    # Knobs that give the simulated judge known flaws (`tracejudge.simulator.server`, "Known flaws").
    noise: float | dict[str, float] = 0.0
    agreement: float = Field(default=1.0, ge=0, le=1)
    position_bias: float = Field(default=0.0, ge=0, le=1)
    json_object_only: bool = False
    tokenizer_factor: float = Field(default=1.0, ge=0.1, le=10)

    @field_validator("noise")
    @classmethod
    def _noise_by_bare_model(cls, noise: float | dict[str, float]) -> float | dict[str, float]:
        # `simulator:a` is how the config writes a panel member and how outputs name it; the requests carry `a`. Kept
        # bare, both spellings mean one model and give one cache name (`noise_key_problems` checks the keys name one).
        for key, q in noise.items() if isinstance(noise, dict) else [(None, noise)]:
            if not 0.0 <= q <= 1.0:  # (NaN fails too) a probability of flipping an answer
                raise ValueError("a probability from 0 to 1" if key is None else f"{key!r}: a probability from 0 to 1, got {q!r}")
        if not isinstance(noise, dict):
            return noise
        out: dict[str, float] = {}
        for key, q in noise.items():
            bare = _bare(key)
            if bare in out and out[bare] != q:
                raise ValueError(f"model {bare!r} is given two values ({out[bare]:g} and {q:g}), as {bare!r} and as 'simulator:{bare}': keep one")
            out[bare] = q
        return out


class TokenizerFactor(_Strict):
    """A safety factor on tiktoken's prompt count, for a server whose tokenizer counts more (`judge.tokenizer: {factor: 1.25}`)."""

    factor: float = Field(ge=1.0, le=10.0)


class PriceConfig(_Strict):
    """US dollars per million tokens: input, output, and cached input (defaults to input).

    `batch_discount` is the share of the synchronous price a provider batch
    API charges (default 0.5, both OpenAI's and Anthropic's).
    """

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cached_input: float | None = Field(default=None, ge=0)
    cache_write_input: float | None = Field(default=None, ge=0)
    batch_discount: float | None = Field(default=None, gt=0, le=1)


class JudgeConfig(_Strict):
    """The LLM judge endpoint and how requests to it are shaped, retried and timed out.

    The API key is read from the environment variable `api_key_env` at run
    time; its value is never logged, written or put in an error message.
    Without `api_key_env` the provider's usual variable is used
    (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`): it must be set for the provider's
    own endpoint, and is sent to a `base_url` of yours only when set;
    `api_key_env: null` never sends a key. `base_url` defaults to `OPENAI_BASE_URL` /
    `ANTHROPIC_BASE_URL` when set (each as its provider's SDK reads it: `env_base_url`), else the provider's public endpoint
    (`provider: openai` takes any OpenAI-compatible server); it must be an http(s) URL with a host
    (`tracejudge.core.urls`, checked on load). `model` may
    carry the provider in front, `openai:gpt-4o-mini` or
    `anthropic:claude-haiku-4-5`, as other tools write it (the prefix in any case); an
    empty or blank name (`""`, `openai:`) is refused. A
    config file's judge section must name its provider one way or the other
    (`judge_provider_problem`, checked by `validate_config`); the `simulator` default here
    serves only code that builds a `JudgeConfig` itself. `max_tokens` caps each reply and is
    what admission and the budget reserve for output; `expected_output_tokens`
    (per question) is what `tracejudge estimate` assumes a reply costs.
    Retries: at most `max_attempts` attempts of a request that failed on its own
    (a 429, a 500, a malformed reply, a dropped connection; a timeout is sent
    again once only), and a server that cannot serve (a 502, 503, 504 or 529, a
    connection refused) waited for at the judge's gate for at most
    `max_retry_wait_s` seconds, and a server that gives no reply at all (a
    frozen one) given up after as long (the run stopped, exit 3, when it never
    answered); a `retry-after` longer than `max_retry_after_s`
    (a daily quota) fails the request at once as `rate_limited`.
    `context_tokens` is the judge's context window; a prompt that would not
    fit is handled by `too_long`: `truncate` (cut oversized fields other than
    the trace, drop middle steps, keep the task, the first and last steps and
    the output; see `stages.judge.fit`) or `skip` (`value: null`,
    reason `too_long` with the token count). `max_error_share` is the share of
    judged results that may end `judge_error` before the run fails its gate.
    Batching (`tracejudge.stages.judge.multi`): `items_per_request` items of one metric
    share a request, gathered across cases for at most `item_wait_s` seconds
    and shuffled with `item_seed`; `calibration` also judges a sample alone.
    `mode: batch` sends requests through the provider's batch API (`batch`).
    `stop_grace_s`: on SIGINT/SIGTERM, judge requests in flight get this many
    seconds to finish; then they are cut and their cases left unwritten
    (provisional: the resume judges them).
    `group: case` (the default) asks every judge metric's questions about one
    case in one request (`tracejudge.stages.judge.grouped`); `none` sends one
    request per metric.
    `cache_hints` sends the providers' prompt-cache hints (Anthropic
    `cache_control` on the trace block, OpenAI `prompt_cache_key` per trace);
    turn it off for an OpenAI-compatible server that rejects unknown fields.
    Measuring the judge (`tracejudge.core.judge_quality`): `samples` asks each
    request N times, `models` makes a panel whose verdicts `aggregate` combines,
    `labels` compares verdicts with reference labels, `pairwise` sets the rubric
    of `tracejudge compare A --vs B --judge CONFIG`.
    `structured_output` says how the verdict schema is sent to an
    OpenAI-compatible server: `json_schema` (`response_format: {type:
    json_schema}`: OpenAI, vLLM, Ollama, LM Studio, llama.cpp's server),
    `json_object` (`response_format: {type: json_object, schema}`: llama-cpp-python's
    server) or `none` (the prompt alone says the format). `max_response_bytes`
    caps the bytes read of one reply (a longer one fails that request).
    `tokenizer` names the judge server's tokenizer for the context fit, admission
    and `estimate`: a Hugging Face `tokenizer.json` path (needs the `tokenizers`
    package, extra `local-judges`) or `{factor: F}`, tiktoken's count × F.
    `extra_body`: fields merged into every request body (`chat_template_kwargs: {enable_thinking: false}` turns a
    self-hosted model's thinking off); JSON values, no key tracejudge sets (`tracejudge.core.extra_body`).
    """

    provider: Literal["simulator", "openai", "anthropic"] = "simulator"
    model: str = "gpt-4o-mini"
    base_url: str | None = None
    api_key_env: str | None = None
    temperature: float = Field(default=0.0, ge=0, le=2)
    max_tokens: int = Field(default=512, ge=1)
    expected_output_tokens: int = Field(default=40, ge=1)
    timeout_s: float = Field(default=60.0, gt=0)
    max_attempts: int = Field(default=6, ge=1)
    max_retry_wait_s: float = Field(default=120.0, ge=0)
    max_retry_after_s: float = Field(default=120.0, ge=0)
    context_tokens: int = Field(default=128_000, ge=256)
    too_long: Literal["truncate", "skip"] = "truncate"
    one_question_per_request: bool = False
    max_error_share: float = Field(default=0.0, ge=0, le=1)
    workers: int | None = Field(default=None, ge=1, le=100_000)
    stop_grace_s: float = Field(default=10.0, ge=0)
    prices: dict[str, PriceConfig] = Field(default_factory=dict)
    simulator: SimulatorOptions = Field(default_factory=SimulatorOptions)
    cache_hints: bool = True
    group: Literal["case", "none"] = "case"
    items_per_request: int = Field(default=1, ge=1, le=100)
    item_wait_s: float = Field(default=0.5, ge=0)
    item_seed: int = 0
    calibration: CalibrationConfig | None = None
    mode: Literal["sync", "batch"] = "sync"
    batch: BatchApiConfig = Field(default_factory=BatchApiConfig)
    # Measuring the judge (`tracejudge.core.judge_quality`, README "Is the judge right?").
    samples: int = Field(default=1, ge=1, le=100)
    models: list[PanelModel] | None = Field(default=None, min_length=1)
    aggregate: Literal["majority", "mean", "all", "any"] = "majority"
    labels: LabelsConfig | None = None
    pairwise: PairwiseConfig = Field(default_factory=PairwiseConfig)
    structured_output: Literal["json_schema", "json_object", "none"] = "json_schema"
    max_response_bytes: int = Field(default=8 << 20, ge=1024)
    tokenizer: str | TokenizerFactor | None = None
    # (Keys of any type here, so that one that is no string is refused by `validated` naming it, not by pydantic as `1["[key]"]`.)
    extra_body: dict[Any, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _provider_defaults(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        model = data.get("model")
        if isinstance(model, str) and model.partition(":")[0].lower() in PROVIDERS:
            prefix, _, name = model.partition(":")
            prefix = prefix.lower()
            if data.get("provider") not in (None, prefix):
                raise ValueError(f"model {model!r} names provider {prefix!r} but provider is {data['provider']!r}")
            data["provider"], data["model"] = prefix, name
        env = _PROVIDER_ENV.get(data.get("provider"))  # type: ignore[arg-type]
        if env is not None and "api_key_env" not in data:  # an explicit null means "send no key"
            # The provider's own endpoint needs its key; a server of the user's (base_url) only when it is set.
            if data.get("base_url") is None or os.environ.get(env[0]):
                data["api_key_env"] = env[0]
        if env is not None and data.get("base_url") is None and os.environ.get(env[1]):
            try:  # named as the variable's: the config has no line for it
                data["base_url"] = env_base_url(data.get("provider"), http_url(os.environ[env[1]]))  # type: ignore[arg-type]
            except ValueError as exc:
                raise ValueError(f"base_url from {env[1]}={os.environ[env[1]]!r}: {exc}") from None
        return data

    @field_validator("base_url")
    @classmethod
    def _base_url(cls, url: str | None) -> str | None:
        return http_url(url)

    @model_validator(mode="after")
    def _extra_body(self) -> JudgeConfig:
        # After the fields: which keys tracejudge sets depends on the provider, the structured output and the cache hints.
        if self.extra_body:
            self.extra_body = validated(self.extra_body, self.provider, self.structured_output, self.cache_hints)
        return self

    @field_validator("model")
    @classmethod
    def _names_a_model(cls, model: str) -> str:
        # `model: ""` or `openai:` would go out as an empty model name, refused by the provider on every request.
        if not model.strip():
            raise ValueError("names no model: give the judge model's name, e.g. `gpt-4o-mini` or `openai:gpt-4o-mini`")
        return model


# The judge providers a config may name, in `provider:` or as a `provider:model` prefix.
PROVIDERS = ("simulator", "openai", "anthropic")


def _bare(name: str) -> str:
    """`name` without a `simulator:` prefix (any case), as `tracejudge.simulator.flaws.bare_model` reads a noise key."""
    prefix, colon, rest = name.partition(":")
    return rest if colon and prefix.lower() == "simulator" else name


def _judges(judge: JudgeConfig) -> list[tuple[str, str, str]]:
    """`(name as written, provider, model the requests carry)` of each judge of the run: the panel's members (as
    `tracejudge.stages.judge.panel.panel_members` resolves them), else the section's own model."""
    if not judge.models:
        return [(judge.model, judge.provider, judge.model)]
    out = []
    for m in judge.models:
        prefix = m.model.partition(":")[0].lower() if ":" in m.model else ""
        model = m.model.partition(":")[2] if prefix in PROVIDERS else m.model
        out.append((m.model, (m.provider or (prefix if prefix in PROVIDERS else judge.provider)).lower(), model))
    return out


def noise_key_problems(judge: JudgeConfig, written: Any = None) -> list[tuple[tuple[str, ...], str]]:
    """`(key path, message)` for each key of `judge.simulator.noise` (`written`: the mapping as the config wrote it) that
    names no model the simulator answers in this run: neither the judge model nor a simulator member of the panel.

    Such a key used to be ignored, so a typo or a provider-prefixed name (`openai:x`) left the judge noiseless
    without a word. `*` (every other model) is always allowed.
    """
    keys = list(written) if isinstance(written, dict) else list(judge.simulator.noise) if isinstance(judge.simulator.noise, dict) else []
    judges = _judges(judge)
    served = {model for _, provider, model in judges if provider == "simulator"} | {judge.model}
    shown = list(dict.fromkeys([f"simulator:{m}" for _, p, m in judges if p == "simulator" and judge.models] + [judge.model]))
    others = {w: p for w, p, _ in judges if p != "simulator"} | {f"{p}:{m}": p for _, p, m in judges if p != "simulator"}
    problems: list[tuple[tuple[str, ...], str]] = []
    for key in map(str, keys):
        if key == "*" or _bare(key) in served:
            continue
        if key in others:
            why = f"{key!r} is a panel member on provider {others[key]}, which the simulator does not answer, so its noise would never apply"
        else:
            why = f"{key!r} names no model of this run, so its noise would never apply"
        hint = did_you_mean(key, [*shown, *served], n=1, typo=True)
        bare = " (also bare, without `simulator:`)" if len(shown) > 1 else ""
        problems.append((("judge", "simulator", "noise", key), f"{why}; a key names one of {', '.join(map(repr, shown))}{bare}, "
                         f"or is '*' for every model{'; ' + hint if hint else ''}"))
    return problems


def noisy_simulator_samples(judge: JudgeConfig) -> bool:
    """Whether every judge of the run is the simulator with `noise` above 0 for its model: its repeated samples then
    differ at temperature 0 (the noise decides by the request's occurrence), unlike a deterministic server's."""
    noise = judge.simulator.noise

    def q(model: str) -> float:
        return float(noise.get(model, noise.get("*", 0.0))) if isinstance(noise, dict) else float(noise)

    return all(provider == "simulator" and q(model) > 0 for _, provider, model in _judges(judge))


def lone_member_note(judge: JudgeConfig) -> tuple[tuple[str, ...], str] | None:
    """`(key path, warning)` for a panel (`judge.models`) of one member, else None. Its verdicts are that model's, as
    `judge.model` would give them, but every figure a panel exists for compares members: Fleiss' κ and each member's
    leave-one-out agreement were left out without a word, so a panel of one read as a panel that measured nothing amiss.
    A warning, not an error: the run is sound, and a panel cut to one member for a night keeps its members' cache keys."""
    if not judge.models or len(judge.models) != 1:
        return None
    name = judge.models[0].model
    return (("judge", "models"), f"a panel of one member ({name}): Fleiss' kappa and each member's leave-one-out agreement compare "
            f"members, so with one the panel gives no agreement figure (judge.panel.metrics stays empty) and judge.aggregate "
            f"changes nothing; the verdicts are {name}'s alone. Add a second member to measure how judges agree, or judge with it "
            f"alone: judge.model: {name}")


def judge_provider_problem(judge: Any) -> str | None:
    """Why a config's raw `judge:` mapping does not say which provider answers, or None when it does.

    A judge section must name its provider, in `provider:` or as the model's
    prefix (`openai:gpt-4o-mini`, any case): a silent default to the bundled
    simulator would pass fake verdicts off as real ones.
    """
    if not isinstance(judge, dict) or judge.get("provider") is not None:
        return None
    model = judge.get("model")
    known = ", ".join(PROVIDERS)
    if isinstance(model, str) and ":" in model:
        prefix = model.partition(":")[0]
        if prefix.lower() in PROVIDERS:
            return None
        hint = did_you_mean(prefix, PROVIDERS, n=1, typo=True)
        return (f"model {model!r} names unknown provider {prefix!r}; {hint + ' ' if hint else ''}known providers: {known} "
                "(write `provider: openai` and the model name alone for an OpenAI-compatible server)")
    return (f"no provider: say which judge answers, `provider: simulator` for the bundled simulator "
            f"(fake verdicts, for trials), `provider: openai` or `provider: anthropic`, or the model as "
            f"`openai:{model if isinstance(model, str) and model else 'gpt-4o-mini'}`; known providers: {known}")


def unpriced_cost_cap(judge: JudgeConfig, max_cost_usd: float | None) -> str | None:
    """Why `budget.max_cost_usd` cannot be enforced for this judge, or None when it can.

    A model missing from the price table costs $0 by the run's count, so a
    dollar cap would let every request through while the run reports it kept
    to it; the config is refused instead, naming each unpriced model.
    """
    if max_cost_usd is None:
        return None
    from tracejudge.llm.prices import price_for  # here: only a config with a dollar cap needs the price table

    models = [] if judge.models else [(judge.model, judge.prices)]  # (a panel's members judge; the section's own model does not)
    for m in judge.models or []:
        name = m.model.partition(":")[2] if m.model.partition(":")[0].lower() in PROVIDERS else m.model
        models.append((name, judge.prices if m.prices is None else m.prices))
    missing = list(dict.fromkeys(name for name, prices in models if price_for(name, prices) is None))
    if not missing:
        return None
    names = ", ".join(repr(m) for m in missing)
    example = f"{{{missing[0]}: {{input: 0.15, output: 0.60}}}}"
    which = f"judge model {names} has no price" if len(missing) == 1 else f"judge models {names} have no price"
    return (f"${max_cost_usd:g} cannot be enforced: {which} in the price table, so its requests "
            f"would count $0 and every one would be sent; give its prices (US dollars per million tokens) under "
            f"judge.prices, e.g. `judge.prices: {example}`, or cap tokens with budget.max_judge_tokens instead")


# provider → (API key variable, base URL variable), the names the providers' own SDKs read.
_PROVIDER_ENV = {"openai": ("OPENAI_API_KEY", "OPENAI_BASE_URL"), "anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL")}


def base_url_env(provider: str) -> str | None:
    """The environment variable `base_url` defaults to for `provider` (None for the simulator)."""
    env = _PROVIDER_ENV.get(provider)
    return None if env is None else env[1]


def env_base_url(provider: str, url: str) -> str:
    """`judge.base_url` for the URL a provider's base-URL variable holds, read as that provider's SDK reads it.

    `judge.base_url` is the URL before `/chat/completions` or `/messages` (`https://api.anthropic.com/v1`).
    `OPENAI_BASE_URL` means the same (`https://api.openai.com/v1`); `ANTHROPIC_BASE_URL` does not: the
    Anthropic SDK sends to `{ANTHROPIC_BASE_URL}/v1/messages` (`https://api.anthropic.com`), so a value
    whose path does not already end in `/v1` gets it (one that does is taken as `judge.base_url` is).
    """
    if provider != "anthropic":
        return url
    parts = urlsplit(url)
    path = parts.path.rstrip("/")
    if path.endswith("/v1"):
        return url
    return urlunsplit((parts.scheme, parts.netloc, path + "/v1", parts.query, parts.fragment))
