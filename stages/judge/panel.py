"""The judges of a run: the `judge:` section's own model, or each model of a panel (`judge.models`).

A panel member (`tracejudge.core.judge_quality.PanelModel`) is the `judge:`
section with the member's `model` (which may carry its provider,
`anthropic:claude-haiku-4-5`), `provider`, `base_url`,
`api_key_env`, `prices` and `structured_output` put over it, and its `extra_body` over the section's key by key; a
member on another provider than the section's does not inherit the section's base URL, key variable or extra_body. A key the member writes as null is not
left out: `api_key_env: null` sends no key and demands no variable, and `base_url: null` is the provider's own
endpoint (as in the section), not the section's base URL; null `prices` or `structured_output` are the section's. Its
`limits` (rpm, tpm, max_in_flight, window) are put over the run's `limits:`
and enforced by a limiter of its own. How the members' verdicts are combined:
`tracejudge.stages.judge.repeat`. Also here: each judge's name in cache keys
(`simulator_cache_name`) and its identity on each score (`stamp`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError
from tracejudge.core import suggest
from tracejudge.core.config import PROVIDERS, JudgeConfig, LimitsConfig, RunConfig
from tracejudge.core.errors import ConfigError
from tracejudge.core.extra_body import merged
from tracejudge.core.records import Score

if TYPE_CHECKING:
    from tracejudge.stages.judge.base import JudgeMetric

__all__ = ["Member", "extra_body_digest", "make_judges", "member_key", "member_problems", "panel_members", "served_label", "simulator_cache_name", "stamp"]


@dataclass
class Member:
    """One judge of the run: `name` (`provider:model`), its `cfg`, and its own `limits` (`None`: the run's shared limiter)."""

    name: str
    cfg: JudgeConfig
    limits: LimitsConfig | None = None


# Member keys whose explicit null means something of its own, not "the section's": `api_key_env: null` sends no key and
# demands no variable (as in the section), so the section's key never reaches a member's server that should get none.
# (`base_url: null` is handled apart: the provider's own endpoint. `prices`, `structured_output`, `limits` and `provider`
# null are the same as left out: the section's, the run's, or the model's prefix.)
_NULL_MEANS = ("api_key_env",)


def panel_members(config: RunConfig) -> list[Member]:
    """The run's judges, in panel order (one, named by its model, without `judge.models`). Raises `ConfigError` naming the member."""
    cfg = config.judge or JudgeConfig()
    if not cfg.models:
        return [Member(cfg.model, cfg)]
    members, problems = _members(config, cfg)
    if problems:
        loc, message = problems[0]
        # Dotted as every config error names a list item (`judge.models.0.limits.rmp`, `metrics.1.type`); a check of the
        # whole member has no key of its own: `judge.models.0: …`.
        where = ".".join(map(str, loc))
        raise ConfigError(f"{where}: {message}")
    return members


def member_problems(config: RunConfig) -> list[tuple[tuple[Any, ...], str]]:
    """What `panel_members` would refuse, as `(key path, message)` pairs (`("judge", "models", 0, "limits", "rmp")`), every
    member's, for the config's validation to place at their file and line; `[]` without a panel."""
    cfg = config.judge
    if cfg is None or not cfg.models:
        return []
    return _members(config, cfg)[1]


def _said(loc: tuple[Any, ...], err: Any, section: type[JudgeConfig] | type[LimitsConfig]) -> tuple[tuple[Any, ...], str]:
    said = "unknown key" if err["type"] == "extra_forbidden" else suggest.message(err)  # (as the config says it)
    return loc, f"{said}{suggest.error_hint(err, section)}"


def _members(config: RunConfig, cfg: JudgeConfig) -> tuple[list[Member], list[tuple[tuple[Any, ...], str]]]:
    """The panel's members as built, and the problems of those that do not build (`member_problems`)."""
    if cfg.mode == "batch":
        return [], [(("judge", "models"), "a panel is judged synchronously; remove judge.mode: batch or the panel")]
    base = cfg.model_dump(exclude={"models", "model", "provider"}, exclude_unset=False)
    members: list[Member] = []
    problems: list[tuple[tuple[Any, ...], str]] = []
    for i, m in enumerate(cfg.models or []):
        data: dict[str, Any] = {**base, "model": m.model}
        prefix = m.model.partition(":")[0].lower() if ":" in m.model else ""
        provider = (m.provider or (prefix if prefix in PROVIDERS else cfg.provider)).lower()
        if prefix not in PROVIDERS:
            data["provider"] = provider
        elif m.provider is not None:
            data["provider"] = m.provider
        given = m.model_fields_set  # (a key written as null is in it; one left out is not)
        if provider != cfg.provider or ("base_url" in given and m.base_url is None):
            # Another provider, or `base_url: null` (the provider's own endpoint): the section's endpoint and key are not this member's.
            data.pop("base_url", None)
            data.pop("api_key_env", None)
        for k in ("base_url", "api_key_env", "prices", "structured_output"):
            if getattr(m, k) is not None or (k in _NULL_MEANS and k in given):
                data[k] = getattr(m, k)
        # The section's fields are for the section's server: a member on another provider starts from none of them.
        data["extra_body"] = merged(cfg.extra_body if provider == cfg.provider else {}, m.extra_body)
        # Both checks run, and every error of each is said: one member's unknown limit hid its extra_body's key.
        found: list[tuple[tuple[Any, ...], str]] = []
        member_cfg = limits = None
        try:
            member_cfg = JudgeConfig.model_validate(data)
        except ValidationError as exc:
            found += [_said(("judge", "models", i, *err["loc"]), err, JudgeConfig) for err in exc.errors()]
        try:
            limits = LimitsConfig.model_validate({**config.limits.model_dump(), **m.limits}) if m.limits else None
        except ValidationError as exc:
            found += [_said(("judge", "models", i, "limits", *err["loc"]), err, LimitsConfig) for err in exc.errors()]
        if found or member_cfg is None:
            problems += found
            continue
        members.append(Member(f"{member_cfg.provider}:{member_cfg.model}", member_cfg, limits))
    names = [m.name for m in members]
    if len(set(names)) != len(names):
        problems.append((("judge", "models"), f"names a model twice ({', '.join(names)}): each panel member must be a different judge"))
    return members, problems


def member_key(member: Member) -> str | None:
    """The member's API key from the variable it names; raises `ConfigError` naming the variable (never its value) when unset."""
    cfg = member.cfg
    if cfg.provider == "simulator" or not cfg.api_key_env:
        return None
    value = os.environ.get(cfg.api_key_env)
    if not value:
        raise ConfigError(f"judge.models: {member.name}: {unset_key(cfg.api_key_env)}")
    return value


def unset_key(name: str) -> str:
    """Why a judge's `api_key_env` gives no key, naming the variable (`redact.variable_name`: a key pasted there in
    place of its variable's name is masked, and the mix-up said)."""
    from tracejudge.llm.redact import MASK, variable_name

    shown = variable_name(name)
    if shown != MASK:
        return f"the environment variable {shown} is not set"
    return (f"the environment variable {MASK} is not set (api_key_env names the environment variable that holds the key, "
            "not the key itself; the value given is not shown)")


def make_judges(config: RunConfig, members: list[Member], key: str | None, shared: Any, *, session: Any, sim_base: str, run_dir: Any,
                spend: Any) -> tuple[list[tuple[str, Any]], Any]:
    """One `Judge` per member, sharing `session`, `shared.budget`, `shared.cache` and the spend journal; each member with
    `limits` gets a limiter of its own, the others `shared.limiter`. `key` is the section's API key (a lone judge's);
    `sim_base` the simulator's URL when a member is the simulator. Returns `([(name, judge)], batch runner or None)`."""
    from tracejudge.llm.batch_journal import BatchJournal
    from tracejudge.llm.prices import price_for
    from tracejudge.llm.providers import DEFAULT_BASE_URLS, auth_headers, endpoint, protocol_of
    from tracejudge.llm.ratelimit import AdaptiveLimiter
    from tracejudge.stages.judge.client import Judge

    section = config.judge or JudgeConfig()
    judges: list[tuple[str, Any]] = []
    batch_runner = None
    for i, member in enumerate(members):
        mcfg = member.cfg
        if mcfg.provider == "simulator":
            base, cache_base = sim_base, simulator_cache_name(section.simulator)
        else:
            base = mcfg.base_url or DEFAULT_BASE_URLS[mcfg.provider]
            cache_base = base.rstrip("/")
        mkey = key if i == 0 and not section.models else member_key(member)
        limits = member.limits
        limiter = shared.limiter if limits is None else AdaptiveLimiter(limits.rpm, limits.tpm, limits.max_in_flight, limits.window, limits.window_s)
        if mcfg.mode == "batch":
            from tracejudge.stages.judge.batch_runner import BatchRunner  # (aiohttp: imported when used)

            protocol, _ = protocol_of(mcfg)
            batch_runner = BatchRunner(mcfg, session=session, protocol=protocol, base_url=base, headers=auth_headers(protocol, mkey),
                                       journal=BatchJournal(run_dir), journal_base=cache_base)
        # A simulator not started yet (it starts with the first request sent) has no URL yet: the stage sets it then.
        url = endpoint(mcfg.provider, base) if base or mcfg.provider != "simulator" else ""
        judge = Judge(mcfg, session=session, url=url, api_key=mkey, limiter=limiter, budget=shared.budget,
                      cache=shared.cache, price=price_for(mcfg.model, mcfg.prices), cache_base_url=cache_base, explain=config.cache.explain,
                      batches=batch_runner)
        # A panel member's attempts are journaled under its name: a resume recounts each model's spending from them.
        judge.spend = spend.for_model(member.name) if section.models and spend is not None else spend
        judges.append((member.name, judge))
    return judges, batch_runner


def simulator_cache_name(options: Any) -> str:
    """The simulator's name in cache keys: `simulator`, plus its seed when not 0 and its known flaws when it has any
    (`tracejudge.simulator.flaws`), so a run with another seed or other flaws is not served the verdicts of another
    (every verdict is a hash of the seed). With seed 0 and no flaws the name is plain `simulator`, as before seeds counted.
    A noise above 0 also names the rule it follows (`noise_rule=2`: it flips pairwise grades too, which the first rule
    did not), so a pairwise verdict cached under the first is not served as one of the second."""
    flaws: dict[str, Any] = {k: getattr(options, k) for k in ("agreement", "noise", "position_bias")}
    seed = int(getattr(options, "seed", 0) or 0)
    if flaws == {"agreement": 1.0, "noise": 0.0, "position_bias": 0.0}:
        return "simulator" if seed == 0 else f"simulator?seed={seed}"
    if flaws["noise"]:
        flaws["noise_rule"] = 2
    return "simulator?" + ",".join(f"{k}={v}" for k, v in sorted(flaws.items())) + (f",seed={seed}" if seed else "")


def stamp(score: Score, metric: JudgeMetric, cfg: Any, extra_body: str | None = None, served: str | None = None) -> Score:
    """`score` with its judge's identity recorded in `score.judge`: the metric's prompt version, the structured-output mode
    (`judge.structured_output`, `json_schema` where the config has no such key), `extra_body`, the digest of the
    request fields sent (`extra_body_digest`; None: none were), and `served`, the weights a self-hosted server serves
    (`served_label`; None: not known). A score no request was made for is left as it is."""
    if score.judge is not None:
        score.judge.prompt_version = metric.prompt_version
        score.judge.structured_output = str(getattr(cfg, "structured_output", None) or "json_schema")
        if extra_body is not None:
            score.judge.extra_body = extra_body
        if served is not None:
            score.judge.served_model = served
    return score


def served_label(judges: list[tuple[str, Any]]) -> str | None:
    """The weights the judges' self-hosted servers serve, as a score records them (`JudgeInfo.served_model`): one judge's
    `llama.cpp b.gguf (weights 6af963fdc1d3)`, a panel's `name: …` for each member whose weights are known joined by
    `; `; None when none is known. `judges`: `(name, judge)` pairs (`Judge.recorded_served`)."""
    from tracejudge.llm.served_model import describe

    said = [(name, describe(c)) for name, j in judges if (c := j.recorded_served()) is not None]
    if not said:
        return None
    return said[0][1] if len(judges) == 1 else "; ".join(f"{name}: {d}" for name, d in said)


def extra_body_digest(cfg: Any, judges: list[tuple[str, Any]]) -> str | None:
    """`core.extra_body.digest` of the request fields the judges of `cfg` (a `JudgeConfig`) send, as summary.json shows
    them: the section's `extra_body`, or for a panel whose members send other fields, each member's by its name (its
    `extra_body_by_model`); None when no judge sends any. `judges`: `(name, judge)` pairs, each judge's `cfg` its own."""
    from tracejudge.core.extra_body import digest, recorded

    if cfg.models and any(j.cfg.extra_body != cfg.extra_body for _, j in judges):
        return digest({name: recorded(j.cfg.extra_body) for name, j in judges})
    return digest(recorded(cfg.extra_body)) if cfg.extra_body else None
