"""The YAML run config: load, override, validate, resolve paths.

`load_config(path, overrides)` returns a `RunConfig` or raises `ConfigError`
before any work starts. Every problem is reported with the file, the line
(when the key is in the file), the dotted key path and what was expected.
Unknown keys are refused. Relative paths in the file resolve against the
file's folder, so a config works from any current directory, and so do
relative paths given with `--set` for those keys (one rule: a path value means
the same in the file and on the command line). Without `run.dir` a run writes
to `runs/<config file stem>` beside the config, so two configs in one folder
never share a run directory.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from tracejudge.core import registry, suggest
from tracejudge.core.errors import ConfigError
from tracejudge.core.evalconfig import AggregateConfig, AssertionsConfig, assertion_problems
from tracejudge.core.judge_modes import BatchApiConfig, CalibrationConfig
from tracejudge.core.judge_quality import LabelsConfig, PairwiseConfig, PanelModel

if TYPE_CHECKING:  # PyYAML is imported by the functions that read YAML: the models alone (a worker process, a report) need it not
    import yaml

__all__ = [
    "BudgetConfig",
    "CacheConfig",
    "DatasetConfig",
    "JudgeConfig",
    "LimitsConfig",
    "PROVIDERS",
    "PriceConfig",
    "RunConfig",
    "RunSection",
    "TargetConfig",
    "SimulatorOptions",
    "apply_overrides",
    "config_hash",
    "judge_provider_problem",
    "load_config",
    "require_metrics",
]

# Keys holding filesystem paths: resolved against the config's folder.
_PATH_KEYS = {
    ("dataset", "path"),
    ("dataset", "tasks"),
    ("cache", "dir"),
    ("run", "dir"),
    ("target", "pythonpath"),
    ("target", "cwd"),
    ("target", "traces"),
    ("judge", "tokenizer"),
    ("assertions", "regression", "baseline"),
    ("judge", "labels", "path"),
}


def _baseline_exists(path: Path) -> bool:
    # A run directory, or the name of a sharded run's directories.
    from tracejudge.engine.shards import expand

    try:
        return bool(expand(path))
    except Exception:
        return False


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DatasetConfig(_Strict):
    """Where the cases come from.

    `format` names an input adapter (`native`, `tau-bench`, …); `tasks` is the
    companion tasks file that some formats need; `options` are passed to the
    adapter; `limit` keeps only the first N records (handy for smoke runs).
    `path` is required except for formats that read from a server
    (`phoenix`, `mlflow-server`: the server is named in `options`).
    """

    path: Path | None = None
    format: str = "native"
    tasks: Path | None = None
    options: dict[str, Any] = Field(default_factory=dict)
    limit: int | None = Field(default=None, ge=1)


class SimulatorOptions(_Strict):
    """How the judge simulator started by a `provider: simulator` run behaves (see `tracejudge simulate`)."""

    latency_ms: float = Field(default=0.0, ge=0)
    rpm: int | None = Field(default=None, ge=1)
    tpm: int | None = Field(default=None, ge=1)
    error_rate: float = Field(default=0.0, ge=0, le=1)
    seed: int = 0
    batch_completion_s: float = Field(default=1.0, ge=0)
    # Knobs that give the simulated judge known flaws (`tracejudge.simulator.server`, "Known flaws").
    noise: float | dict[str, float] = 0.0
    agreement: float = Field(default=1.0, ge=0, le=1)
    position_bias: float = Field(default=0.0, ge=0, le=1)
    json_object_only: bool = False
    tokenizer_factor: float = Field(default=1.0, ge=0.1, le=10)


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
    `ANTHROPIC_BASE_URL` when set, else the provider's public endpoint
    (`provider: openai` takes any OpenAI-compatible server). `model` may
    carry the provider in front, `openai:gpt-4o-mini` or
    `anthropic:claude-3-5-haiku-latest`, as other tools write it (the prefix in any case); an
    empty or blank name (`""`, `openai:`) is refused. A
    config file's judge section must name its provider one way or the other
    (`judge_provider_problem`, checked by `validate_config`); the `simulator` default here
    serves only code that builds a `JudgeConfig` itself. `max_tokens` caps each reply and is
    what admission and the budget reserve for output; `expected_output_tokens`
    (per question) is what `tracejudge estimate` assumes a reply costs.
    Retries: at most `max_attempts` attempts and `max_retry_wait_s` seconds of
    sleeping per request; a `retry-after` longer than `max_retry_after_s` (a
    daily quota) fails the request at once as `rate_limited`.
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
            data["base_url"] = os.environ[env[1]]
        return data

    @field_validator("model")
    @classmethod
    def _names_a_model(cls, model: str) -> str:
        # `model: ""` or `openai:` would go out as an empty model name, refused by the provider on every request.
        if not model.strip():
            raise ValueError("names no model: give the judge model's name, e.g. `gpt-4o-mini` or `openai:gpt-4o-mini`")
        return model


# The judge providers a config may name, in `provider:` or as a `provider:model` prefix.
PROVIDERS = ("simulator", "openai", "anthropic")


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
        return (f"model {model!r} names unknown provider {prefix!r}; known providers: {known} "
                "(write `provider: openai` and the model name alone for an OpenAI-compatible server)")
    return (f"no provider: say which judge answers, `provider: simulator` for the bundled simulator "
            f"(fake verdicts, for trials), `provider: openai` or `provider: anthropic`, or the model as "
            f"`openai:{model if isinstance(model, str) and model else 'gpt-4o-mini'}`; known providers: {known}")


# provider → (API key variable, base URL variable), the names the providers' own SDKs read.
_PROVIDER_ENV = {"openai": ("OPENAI_API_KEY", "OPENAI_BASE_URL"), "anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL")}


class LimitsConfig(_Strict):
    """Judge rate limits: requests/min, tokens/min (input + output), requests in flight.

    `window`: how the provider counts them — `bucket` (refilling
    continuously), `strict` (a 60-second window), or `auto` (a bucket until
    the provider's rate-limit headers show a window). `window_s`: the
    window's length in seconds (60); `rpm`/`tpm` count per window.
    """

    rpm: int = Field(default=3000, ge=1)
    tpm: int = Field(default=1_000_000, ge=1)
    max_in_flight: int = Field(default=64, ge=1)
    window: Literal["auto", "bucket", "strict"] = "auto"
    window_s: float = Field(default=60.0, gt=0)


class BudgetConfig(_Strict):
    """Hard caps on judge spending for one run (tokens, US dollars); `None` means no cap."""

    max_judge_tokens: int | None = Field(default=None, ge=0)
    max_cost_usd: float | None = Field(default=None, ge=0)


class CacheConfig(_Strict):
    """Where the content-addressed judge cache lives; `enabled: false` neither reads nor writes it.

    `explain: true` (or `tracejudge run --explain-cache`) records, for every
    miss, which key component differs from the nearest earlier entry for the
    same case and metric.
    """

    dir: Path = Path(".tracejudge/cache")
    enabled: bool = True
    explain: bool = False


WORKERS_DEPRECATED = (
    "run.workers is deprecated and has no effect: extract and deterministic scoring run in "
    "run.processes worker processes (run.executor), a live target's concurrency is target.concurrency, "
    "the judge's is judge.workers and limits.max_in_flight; remove run.workers from the config"
)


class RunSection(_Strict):
    """The run directory and the pipeline's own knobs.

    `queue_size` bounds every inter-stage stream (about that many cases in
    flight per hop), which CPU-bound hops fill in chunks of `chunk_size`;
    `workers` is deprecated: accepted from older configs, it has no effect and a run that sets it
    logs a warning saying what to set instead (`WORKERS_DEPRECATED`); `trials` runs each case N times;
    `flush_every` is how many results are fsynced together (half as many after 0.5 s, any after 2 s);
    `max_resume_retries` is how many times re-running the same command redoes a
    (case, trial) that ended in a transient failure (`judge_error`,
    `target_error`, `rate_limited`), counted from results.jsonl.
    `shard` ("I/N", 1-based) scores only the cases whose id hashes into
    shard I of N (`tracejudge.engine.shards`; `tracejudge run --shard I/N`).
    `executor` says where extract and deterministic scoring run
    (`tracejudge.engine.executors`): `inprocess` on the event loop, `processes`
    in a pool of `processes` worker processes (default: the machine's cores;
    `processes: 1` means in-process), `ray` on the Ray cluster at
    `ray_address` (none: a local one; `tracejudge.engine.executors.ray_executor`).
    `metric_timeout_s` bounds each deterministic metric call (None: unbounded); a call cut
    there scores `value: null` with a `metric_timeout:` reason and the run goes on.
    """

    dir: Path = Path("runs/default")
    workers: int = Field(default=1, ge=1, le=256)  # deprecated, inert: see WORKERS_DEPRECATED
    queue_size: int = Field(default=64, ge=1, le=100_000)
    chunk_size: int = Field(default=16, ge=1, le=1024)
    trials: int = Field(default=1, ge=1)
    flush_every: int = Field(default=256, ge=1)
    max_resume_retries: int = Field(default=2, ge=0)
    executor: Literal["inprocess", "processes", "ray"] = "processes"
    processes: int = Field(default_factory=lambda: os.cpu_count() or 1, ge=1, le=1024)
    ray_address: str | None = None
    shard: str | None = None
    metric_timeout_s: float | None = Field(default=60.0, gt=0)

    @field_validator("shard", mode="before")
    @classmethod
    def _shard_form(cls, value: Any) -> str | None:
        if value is None:
            return None
        from tracejudge.engine.shards import parse_shard

        i, n = parse_shard(str(value))  # ValueError → a config error naming run.shard
        return f"{i}/{n}"


class TargetConfig(_Strict):
    """The agent under test, run live by stage `target` (see `stages/target`).

    `kind` picks how it is called, once per turn of each (case, trial):

    - `python`: `callable` is `pkg.module:attr` (sync or async), imported
      with `pythonpath` (a folder) put first on `sys.path`;
    - `http`: a JSON POST to `url`; `headers` values may name environment
      variables as `${NAME}`, expanded when the run starts (secrets stay out
      of the config, the manifest and the logs);
    - `command`: `command` (an argv list, or a string split like a shell
      would) runs in `cwd` with the request JSON on stdin and a reply JSON on
      stdout; an exit status in `transient_exit_codes` is retried;
    - `replay`: no agent call: serve the traces recorded in a run
      directory's `traces.jsonl` (`traces`), for re-scoring.

    `trace_format` names the input format a reply's `trace` is in when the
    reply does not say (`native` = our `Trace`). `timeout_s` bounds a whole
    case (all turns, retries and back-off), in seconds. `retries` is how many
    times a transient failure restarts the conversation, waiting
    `backoff_s` doubling up to `max_backoff_s` (jittered). `concurrency` caps
    the cases in flight at the target, apart from the judge's limits.
    `max_response_bytes` caps the bytes read of one `http` reply (longer: the case fails).
    """

    kind: Literal["python", "http", "command", "replay"]
    callable: str | None = None
    pythonpath: Path | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    command: list[str] | None = None
    cwd: Path | None = None
    traces: Path | None = None
    trace_format: str = "native"
    timeout_s: float = Field(default=120.0, gt=0)
    retries: int = Field(default=2, ge=0, le=100)
    backoff_s: float = Field(default=0.5, ge=0)
    max_backoff_s: float = Field(default=30.0, ge=0)
    concurrency: int = Field(default=4, ge=1, le=4096)
    max_response_bytes: int = Field(default=8 << 20, ge=1024)
    transient_exit_codes: list[int] = Field(default_factory=lambda: [75])

    @model_validator(mode="before")
    @classmethod
    def _split_command(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("command"), str):
            import shlex

            data = {**data, "command": shlex.split(data["command"])}
        return data

    @model_validator(mode="after")
    def _needs(self) -> TargetConfig:
        required = {"python": "callable", "http": "url", "command": "command", "replay": "traces"}[self.kind]
        if not getattr(self, required):
            raise ValueError(f"a {self.kind} target needs `{required}`")
        if self.kind == "python" and (self.callable is None or ":" not in self.callable):
            raise ValueError(f"callable {self.callable!r}: expected `package.module:function`")
        if self.kind == "http" and not self.url.startswith(("http://", "https://")):  # type: ignore[union-attr]
            raise ValueError(f"url {self.url!r}: expected an http:// or https:// URL")
        if self.trace_format not in registry.formats():
            known = ", ".join(sorted(registry.formats()))
            raise ValueError(f"trace_format {self.trace_format!r}: unknown format; expected one of: {known}")
        return self


class RunConfig(_Strict):
    """A whole run, as written in YAML (see configs/demo.yaml).

    `metrics` are metric specs (`{type: ToolCalls, name: ..., ...}`); each is
    validated against its metric's parameter model when the config loads.
    """

    dataset: DatasetConfig
    metrics: list[dict[str, Any]] = Field(default_factory=list)
    judge: JudgeConfig | None = None
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    budget: BudgetConfig = Field(default_factory=BudgetConfig)
    cache: CacheConfig = Field(default_factory=CacheConfig)
    run: RunSection = Field(default_factory=RunSection)
    target: TargetConfig | None = None
    aggregate: AggregateConfig = Field(default_factory=AggregateConfig)
    assertions: AssertionsConfig = Field(default_factory=AssertionsConfig)

    @model_validator(mode="after")
    def _metric_names_unique(self) -> RunConfig:
        seen: set[str] = set()
        for spec in self.metrics:
            try:  # a metric may derive its default key from its parameters (PassAtK)
                name = registry.build_metric(spec).key
            except registry.SpecError:
                name = spec.get("name") or spec.get("type")
            if name in seen:
                raise ValueError(f"two metrics are named {name!r}; give one a distinct `name`")
            seen.add(str(name))
        return self


# --------------------------------------------------------------------------- loading


def _line_index(root: yaml.Node | None) -> dict[tuple[str, ...], int]:
    """Map every key path of a composed YAML document to its 1-based line."""
    import yaml

    index: dict[tuple[str, ...], int] = {}

    def walk(node: Any, path: tuple[str, ...], inside: frozenset[int]) -> None:
        if id(node) in inside:  # an alias to a node that contains it (`&a {y: *a}`): load_config refuses it
            return
        inside = inside | {id(node)}
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                sub = (*path, str(key.value))
                index[sub] = key.start_mark.line + 1
                walk(value, sub, inside)
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                sub = (*path, str(i))
                index[sub] = item.start_mark.line + 1
                walk(item, sub, inside)

    walk(root, (), frozenset())
    return index


def _locate(path: tuple[str, ...], lines: dict[tuple[str, ...], int]) -> int | None:
    for n in range(len(path), 0, -1):
        if path[:n] in lines:
            return lines[path[:n]]
    return None


def _fmt(source: str, loc: tuple[Any, ...], msg: str, lines: dict[tuple[str, ...], int], overridden: dict[tuple[str, ...], str]) -> str:
    # `overridden`: key path → the `--set KEY=VALUE` that gave it, so an error in a value from the
    # command line names that option, not a line of a file the user did not change.
    key = tuple(str(p) for p in loc)
    dotted = ".".join(key) or "(top level)"
    for o, item in overridden.items():
        if key[: len(o)] == o:
            return f"{item}: {dotted}: {msg}"
    line = _locate(key, lines)
    where = f"{source}:{line}" if line else source
    # An error on a whole section (a model validator) may come from a value set inside it on the command line.
    inside = [item for o, item in overridden.items() if key and o[: len(key)] == key]
    return f"{where}: {dotted}: {msg}" + (f" (with {', '.join(inside)})" if inside else "")


def _set_path(data: dict[str, Any], dotted: str, value: Any) -> tuple[str, ...]:
    parts = dotted.split(".")
    node: Any = data
    for i, part in enumerate(parts[:-1]):
        nxt = parts[i + 1]
        if isinstance(node, list):
            if not part.isdigit() or int(part) >= len(node):
                raise ConfigError(f"--set {dotted}: {'.'.join(parts[: i + 1])} is not an index of the list")
            node = node[int(part)]
            continue
        if not isinstance(node, dict):
            raise ConfigError(f"--set {dotted}: {'.'.join(parts[:i])} is not a mapping")
        if part not in node or node[part] is None:
            node[part] = [] if nxt.isdigit() else {}
        node = node[part]
    last = parts[-1]
    if isinstance(node, list):
        if not last.isdigit() or int(last) > len(node):
            raise ConfigError(f"--set {dotted}: {last!r} is not an index of the list")
        if int(last) == len(node):
            node.append(value)
        else:
            node[int(last)] = value
    elif isinstance(node, dict):
        node[last] = value
    else:
        raise ConfigError(f"--set {dotted}: {'.'.join(parts[:-1])} is not a mapping")
    return tuple(parts)


def apply_overrides(data: dict[str, Any], overrides: list[str], cwd: Path,
                    typed: dict[str, str] | None = None) -> dict[tuple[str, ...], str]:
    """Apply `--set dotted.key=value` overrides in place; values parse as YAML scalars.

    A relative value of a path key (`run.dir`, `dataset.path`, …) resolves
    against `cwd`: `load_config` passes the config's folder, as for the
    same value written in the file. Returns the key paths that were
    overridden, each with the option as typed (`--set key=value`, the value
    cut to 80 characters; or `typed[override]` for an override a command-line
    option stands for, e.g. `--shard 3/2`), for error messages. Raises `ConfigError` for an
    override without `=` or one that walks into a non-mapping.
    """
    import yaml

    touched: dict[tuple[str, ...], str] = {}
    for item in overrides:
        if "=" not in item:
            raise ConfigError(f"--set {item!r}: expected KEY.PATH=VALUE")
        dotted, raw = item.split("=", 1)
        dotted = dotted.strip()
        if not dotted:
            raise ConfigError(f"--set {item!r}: empty key path")
        try:
            value = yaml.safe_load(raw) if raw.strip() else ""
        except yaml.YAMLError as exc:
            raise ConfigError(f"--set {dotted}: value {raw!r} is not valid YAML: {exc}") from None
        key = _set_path(data, dotted, value)
        if key in _PATH_KEYS and isinstance(value, str) and value:
            _set_path(data, dotted, str((cwd / value).resolve()) if not Path(value).is_absolute() else value)
        touched[key] = (typed or {}).get(item) or f"--set {dotted}={raw if len(raw) <= 80 else raw[:77] + '...'}"
    return touched


def _resolve_paths(data: dict[str, Any], base: Path) -> None:
    for *sections, key in _PATH_KEYS:
        block: Any = data
        for section in sections:
            block = block.get(section) if isinstance(block, dict) else None
        if isinstance(block, dict) and isinstance(block.get(key), str) and block[key]:
            p = Path(block[key]).expanduser()
            block[key] = str(p if p.is_absolute() else (base / p).resolve())


def load_config(path: str | Path, overrides: list[str] | None = None, *, cwd: Path | None = None,
                typed: dict[str, str] | None = None) -> RunConfig:
    """Read, override, validate and resolve a YAML run config.

    Args:
        path: the YAML file.
        overrides: `["dotted.key=value", ...]` from `--set`.
        cwd: folder that relative override paths resolve against (default: process cwd).
        typed: the option as typed for an override that a command-line option
            stands for (`{"run.shard=3/2": "--shard 3/2"}`): errors name it, not `--set`.

    Raises:
        ConfigError: unreadable file, invalid YAML, unknown keys, wrong types,
            unknown format or metric type, missing dataset files. The message
            names file, line, key path and what was expected.
    """
    import yaml

    cfg_path = Path(path)
    source = str(path)
    try:
        text = cfg_path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{source}: config file not found") from None
    except OSError as exc:
        raise ConfigError(f"{source}: cannot read config: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{source}: not a UTF-8 text file (byte {exc.start}: {exc.reason}); "
                          "save the config as UTF-8 YAML") from None
    # Parsed once: the node graph gives the alias-bomb check and every key's line, then the data is built from it.
    loader = yaml.SafeLoader(text)
    try:
        root = loader.get_single_node()
        if (expanded := _expanded_size(root)) > MAX_EXPANDED_NODES:
            raise ConfigError(f"{source}: its YAML aliases expand to more than {MAX_EXPANDED_NODES:,} nodes "
                              f"({expanded:,}); a config is refused before it is built (an alias bomb would take minutes and gigabytes)")
        data = None if root is None else loader.construct_document(root)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{source}:{mark.line + 1}" if mark else source
        raise ConfigError(f"{where}: invalid YAML: {getattr(exc, 'problem', exc)}") from None
    finally:
        loader.dispose()
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{source}:1: (top level): expected a mapping of sections, got {type(data).__name__}")
    lines = _line_index(root)
    if (cycle := _cycle(data, ())) is not None:
        dotted = ".".join(cycle)
        where = f"{source}:{lines[cycle]}" if cycle in lines else source
        raise ConfigError(f"{where}: {dotted}: a YAML alias refers to a mapping or list that contains it; "
                          "a config must not recurse")
    base = cfg_path.resolve().parent
    _resolve_paths(data, base)
    touched = apply_overrides(data, overrides or [], cwd or base, typed)
    _default_run_dir(data, base / "runs" / cfg_path.stem)
    _search_config_folder(data, base)
    return validate_config(data, source=source, lines=lines, overridden=touched)


# Generous: a real config has hundreds of nodes; a nine-level "billion laughs" has 10**9 from a few lines.
MAX_EXPANDED_NODES = 1_000_000


def _expanded_size(root: yaml.Node | None) -> int:
    """How many YAML nodes the document has once every alias is expanded (a tree walk, keys included).

    Counted on the composed node graph, before any Python object is built:
    an alias is a second edge to the same node, so sizes are memoised by node
    identity and the count costs one visit per distinct node, however big the
    expansion. A node inside its own alias (`&a {y: *a}`) counts once here;
    `load_config` refuses it as recursive afterwards.
    """
    import yaml

    if root is None:
        return 0
    size: dict[int, int] = {}
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:  # iterative post-order: a deeply nested document must not hit the recursion limit
        node, children_done = stack.pop()
        if not children_done and id(node) in size:  # met again through an alias: already counted
            continue
        if isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        elif isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        else:
            size[id(node)] = 1
            continue
        if children_done:
            size[id(node)] = 1 + sum(size.get(id(c), 1) for c in children)  # .get: a node on its own path (a cycle)
            continue
        size[id(node)] = 1  # provisional, so a cycle back to this node ends the walk
        stack.append((node, True))
        stack.extend((c, False) for c in children if id(c) not in size)
    return size[id(root)]


def _cycle(node: Any, path: tuple[str, ...], inside: frozenset[int] = frozenset()) -> tuple[str, ...] | None:
    """The key path of the first value that contains itself (`&a {y: *a}`), or None: validation would recurse forever."""
    if not isinstance(node, (dict, list)):
        return None
    if id(node) in inside:
        return path
    inside = inside | {id(node)}
    items = node.items() if isinstance(node, dict) else enumerate(node)
    for key, value in items:
        if (found := _cycle(value, (*path, str(key)), inside)) is not None:
            return found
    return None


def _default_run_dir(data: dict[str, Any], default: Path) -> None:
    # `runs/<stem>` beside the config: a second config never lands in the first one's run directory.
    run = data.get("run")
    if run is None:
        data["run"] = run = {}
    if isinstance(run, dict) and run.get("dir") in (None, ""):
        run["dir"] = str(default)


def _search_config_folder(data: dict[str, Any], base: Path) -> None:
    """Let user code named by the config (`module:attr` adapters, metrics, targets) import from the config's folder.

    The folder is appended to `sys.path`, after installed packages, so it never
    shadows them; worker processes inherit `sys.path`, so they import the same
    modules. The current directory is searched too (see `registry.import_user_module`).
    """
    named = [((data.get("dataset") or {}) if isinstance(data.get("dataset"), dict) else {}).get("format")]
    named += [m.get("type") for m in data.get("metrics") or [] if isinstance(m, dict)]
    target = data.get("target")
    if isinstance(target, dict):
        named.append(target.get("callable"))
    if any(isinstance(n, str) and ":" in n for n in named):
        registry.add_search_dir(base)


def validate_config(
    data: dict[str, Any],
    *,
    source: str = "<config>",
    lines: dict[tuple[str, ...], int] | None = None,
    overridden: dict[tuple[str, ...], str] | None = None,
    check_files: bool = True,
) -> RunConfig:
    """Validate an already-parsed config mapping (paths already absolute).

    `lines` maps key paths to their line in `source`; `overridden` maps the
    key paths given with `--set` to the option as typed (`apply_overrides`),
    so a problem in such a value names the option instead of a line.
    Raises `ConfigError` listing every problem found.
    """
    lines = lines or {}
    overridden = overridden or {}
    errors = []
    if (why := judge_provider_problem(data.get("judge"))) is not None:
        # The provider is read from the model too: a model given with --set is where to look.
        at = ("judge", "model") if ("judge", "model") in overridden else ("judge", "provider")
        errors.append(_fmt(source, at, why, lines, overridden))
    try:
        config = RunConfig.model_validate(data)
    except ValidationError as exc:
        errors += [_fmt(source, err["loc"], _explain(err, RunConfig), lines, overridden) for err in exc.errors()]
    if errors:
        raise ConfigError("\n".join(errors))

    problems: list[str] = []
    built = []
    fmt = None
    try:
        fmt = registry.format_for(config.dataset.format)
    except KeyError:
        known = ", ".join(sorted(registry.formats()))
        hint = suggest.did_you_mean(config.dataset.format, registry.formats(), n=1, typo=True)
        problems.append(
            _fmt(source, ("dataset", "format"), f"unknown format {config.dataset.format!r}; {hint + ' ' if hint else ''}"
                 f"expected one of: {known}, or module.path:function", lines, overridden)
        )
    except registry.FormatError as exc:
        problems.append(_fmt(source, ("dataset", "format"), str(exc), lines, overridden))
    else:
        if fmt.needs_target and config.target is None:
            problems.append(_fmt(source, ("dataset", "format"), f"{fmt.name} lists tasks, not runs: it needs a target "
                                 "(a `target:` section running the agent on each task)", lines, overridden))
        if fmt.remote and config.dataset.path is not None:
            problems.append(_fmt(source, ("dataset", "path"), f"format {fmt.name} reads from the server named in dataset.options; "
                                 "dataset.path is not used: remove it", lines, overridden))
        elif not fmt.remote and config.dataset.path is None:
            problems.append(_fmt(source, ("dataset", "path"), f"required: the file (or folder) of {fmt.name} records to read", lines, overridden))
        if fmt.options is not None:
            try:
                fmt.options.model_validate(config.dataset.options)
            except ValidationError as exc:
                for err in exc.errors():
                    problems.append(_fmt(source, ("dataset", "options", *err["loc"]), f"{config.dataset.format}: {_explain(err, fmt.options)}", lines, overridden))
    for i, spec in enumerate(config.metrics):
        try:
            metric = registry.build_metric(spec)
        except registry.SpecError as exc:
            problems.append(_fmt(source, ("metrics", i, *exc.loc), exc.msg, lines, overridden))
            continue
        built.append(metric)
        # LLM-judge metrics carry a prompt version; without a `judge:` section they
        # would silently go to the simulator, whose verdicts mean nothing.
        if config.judge is None and getattr(type(metric), "prompt_version", None):
            problems.append(_fmt(source, ("metrics", i, "type"), f"{spec['type']} is an LLM-judge metric: add a `judge:` section "
                                 "(provider, model) to say which judge answers it", lines, overridden))
        # A metric computed over the whole run (PassAtK) checks itself against the rest of the config.
        for loc, msg in getattr(metric, "check_run", lambda c: [])(config):
            problems.append(_fmt(source, ("metrics", i, *loc), msg, lines, overridden))
    per_result = [m.key for m in built if not getattr(m, "over_trials", False)]
    over_trials = [m.key for m in built if getattr(m, "over_trials", False)]
    if len(built) == len(config.metrics):  # else the metric errors above already say what is wrong
        for loc, msg in assertion_problems(config.assertions, per_result, over_trials):
            problems.append(_fmt(source, ("assertions", *loc), msg, lines, overridden))
    if check_files:
        for key in ("path", "tasks"):
            p = getattr(config.dataset, key)
            if p is not None and not p.exists():
                problems.append(_fmt(source, ("dataset", key), f"file not found: {p}", lines, overridden))
            elif p is not None and (kind := _special_file(p)) is not None:
                # Found now, before the run directory: reading a FIFO blocks for ever, /dev/zero never ends a line.
                wanted = "a regular file or folder" if key == "path" and fmt is not None and fmt.reads_dirs else "a regular file"
                problems.append(_fmt(source, ("dataset", key), f"{p} is {kind}, not {wanted}", lines, overridden))
            elif p is not None and p.is_dir() and (key == "tasks" or (fmt is not None and not fmt.reads_dirs)):
                # Found now, not after the run directory was created: reading a folder as lines fails late.
                problems.append(_fmt(source, ("dataset", key), f"{p} is a directory; format {config.dataset.format!r} "
                                     "reads one file: name the file", lines, overridden))
        reg = config.assertions.regression
        if reg is not None and reg.baseline is not None and not _baseline_exists(Path(reg.baseline)):
            # Found now, not after a night of scoring that the gate would then fail anyway.
            problems.append(_fmt(source, ("assertions", "regression", "baseline"),
                                 f"baseline run not found: {reg.baseline} has no results.jsonl", lines, overridden))
    if problems:
        raise ConfigError("\n".join(problems))
    return config


def _special_file(path: Path) -> str | None:
    """What `path` is when it exists but is neither a regular file nor a folder (after symlinks), else None."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return None  # unreadable metadata: the reader reports it with the file's name
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    kinds = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
             (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))
    return next((name for test, name in kinds if test(mode)), "a special file")


def require_metrics(config: RunConfig, source: str = "<config>") -> None:
    """Raise `ConfigError` when `config` names no metric: a run would score nothing and fail its gate for no reason it states.

    Cases may add their own `metrics`; those add to the run's, so a run still
    needs at least one (e.g. `metrics: [{type: ToolCalls}]`).
    """
    if not config.metrics:
        raise ConfigError(f"{source}: metrics: no metric configured, so nothing would be scored; add a `metrics:` list, "
                          "e.g. `metrics: [{type: ToolCalls}]`")


def _explain(err: Any, model: type[BaseModel] | None = None) -> str:
    """One error of `model`'s validation in words; an unknown key names the nearest allowed one."""
    if err["type"] == "extra_forbidden":
        return "unknown key" + suggest.key_hint(model, tuple(err["loc"]))
    if err["type"] == "missing":
        return "required key is missing"
    got = err.get("input")
    shown = json.dumps(got, default=str)[:80] if not isinstance(got, dict) else "a mapping"
    msg = err["msg"].removeprefix("Value error, ")  # pydantic's prefix for a validator's own message says nothing to a user
    return f"{msg} (got {shown})"


def config_hash(config: RunConfig) -> str:
    """sha256 of the config's canonical JSON (sorted keys): what the manifest records."""
    payload = json.dumps(config.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(payload.encode()).hexdigest()
