"""Checks of a config the schema refused, each run on the parts it depends on alone.

The schema's own checks of a section (its `extra_body`, a panel's members, the gates' metric names) run only once
every field they read is valid, so a mistake elsewhere hid theirs until it was fixed, one run at a time. Each
function here returns `(key path, message)` pairs for `config.validate_config` to place at their file and line.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError
from tracejudge.core import registry
from tracejudge.core.evalconfig import AssertionsConfig, MetricAssertion, RegressionRule, assertion_problems
from tracejudge.core.judge_config import PROVIDERS, JudgeConfig

# The judge keys `judge.extra_body`'s check depends on (which keys tracejudge sets: the provider, the schema mode, the hints).
_EXTRA_BODY_KEYS = ("provider", "model", "structured_output", "cache_hints", "extra_body")

Problems = list[tuple[tuple[Any, ...], str]]


def extra_body_problems(judge: Any, explain: Any) -> Problems:
    """Each problem of `judge.extra_body` (a written judge section), checked on the keys it depends on alone;
    `explain(err, model)` words a pydantic error. With a provider the schema refuses (`simulater`), the keys refused
    whichever provider is meant (an empty key, `stream`, a value JSON cannot hold) are named; the rest of what a
    provider refuses waits for a valid provider."""
    if not isinstance(judge, dict) or not isinstance(judge.get("extra_body"), dict) or not judge["extra_body"]:
        return []
    written = {k: judge[k] for k in _EXTRA_BODY_KEYS if k in judge}
    found = _extra_body_errors(written, explain)
    if found is None:  # a field extra_body's check reads is refused: keep what every provider would refuse
        per_provider = [_extra_body_errors({**written, "provider": p}, explain) or [] for p in PROVIDERS]
        found = [e for e in per_provider[0] if all(e in other for other in per_provider[1:])]
    return found


def _extra_body_errors(judge: dict[str, Any], explain: Any) -> Problems | None:
    """extra_body's errors under `judge`, or None when a key other than extra_body was refused (its check did not run)."""
    try:
        JudgeConfig.model_validate(judge)
    except ValidationError as exc:
        errors = exc.errors()
        if any(err["loc"][:1] != ("extra_body",) for err in errors):
            return None
        return [(("judge", *err["loc"]), explain(err, JudgeConfig)) for err in errors]
    return []


def panel_problems(data: dict[str, Any], refused: Problems) -> Problems:
    """What a panel's members (`judge.models`) would refuse, for a config whose schema `refused` these key paths: the
    judge section and the limits are checked without the keys refused there, so a mistake elsewhere (`run.processes: x`)
    or beside the panel (`judge.modle`) does not hide the members'. Nothing when `judge.models` itself was refused."""
    judge, limits = data.get("judge"), data.get("limits", {})
    if not isinstance(judge, dict) or not judge.get("models"):
        return []
    bad_judge = {str(loc[1]) for loc, _ in refused if loc[:1] == ("judge",) and len(loc) > 1}
    if "models" in bad_judge or "provider" in bad_judge:  # (a member's provider defaults to the section's)
        return []
    if any(loc[:1] == ("limits",) for loc, _ in refused) or not isinstance(limits, dict):
        limits = {}
    from tracejudge.core.config import RunConfig
    from tracejudge.stages.judge.panel import member_problems

    try:
        partial = RunConfig.model_validate({"dataset": {}, "judge": {k: v for k, v in judge.items() if k not in bad_judge},
                                            "limits": limits})
    except ValidationError:
        return []
    return member_problems(partial)


def gate_problems(assertions: Any, metrics: Any) -> Problems:
    """Gates (`assertions.metrics`, `assertions.regression.metrics`) naming no metric of the run, from the written
    sections: a metric whose spec is refused still has the name it is written under (`name`, else `type`), and a gate
    whose own rule is refused is still checked for its name. Nothing when a refused spec's name cannot be known without
    building it (a metric naming itself from its parameters, such as PassAtK, with no `name`)."""
    if not isinstance(assertions, dict) or not isinstance(metrics, list):
        return []
    per_result: list[str] = []
    over_trials: list[str] = []
    for spec in metrics:
        if not isinstance(spec, dict):
            return []
        try:
            metric = registry.build_metric(spec)
        except registry.SpecError:
            cls = registry.metric_types().get(spec.get("type")) if isinstance(spec.get("type"), str) else None
            name = spec.get("name") or (spec.get("type") if cls is not None and not getattr(cls, "over_trials", False) else None)
            if not isinstance(name, str):
                return []
            per_result.append(name)
            continue
        (over_trials if getattr(metric, "over_trials", False) else per_result).append(metric.key)
    rules = assertions.get("metrics", {})
    regression = assertions.get("regression")
    kept = AssertionsConfig(metrics={str(k): _rule(v) for k, v in rules.items()} if isinstance(rules, dict) else {},
                            regression=_regression(regression))
    return [(("assertions", *loc), msg) for loc, msg in assertion_problems(kept, per_result, over_trials)]


def _rule(rule: Any) -> MetricAssertion:
    try:
        return MetricAssertion.model_validate(rule)
    except ValidationError:
        return MetricAssertion()  # (its own mistakes are the schema's errors)


def _regression(rule: Any) -> RegressionRule | None:
    if not isinstance(rule, dict) or not isinstance(rule.get("metrics"), list):
        return None
    try:
        return RegressionRule.model_validate(rule)
    except ValidationError:
        return RegressionRule.model_construct(metrics=[str(m) for m in rule["metrics"]])
