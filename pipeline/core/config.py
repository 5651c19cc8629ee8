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

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, PrivateAttr, ValidationError, ValidationInfo, model_validator
from tracejudge.core import registry, suggest
from tracejudge.core.config_sections import (WORKERS_DEPRECATED, BudgetConfig, CacheConfig, DatasetConfig, LimitsConfig, RunSection,
                                             TargetConfig, _Strict)
from tracejudge.core.config_partial import extra_body_problems, gate_problems, panel_problems
from tracejudge.core.config_files import STDIN_DATASET, file_problems
from tracejudge.core.config_source import MAX_EXPANDED_NODES, _fmt, _locate, apply_overrides, read_config
from tracejudge.core.errors import ConfigError
from tracejudge.core.inert_text import visible
from tracejudge.core.evalconfig import AggregateConfig, AssertionsConfig, assertion_problems
from tracejudge.core.judge_config import (PROVIDERS, JudgeConfig, PriceConfig, SimulatorOptions, TokenizerFactor, judge_provider_problem,
                                          lone_member_note, noise_key_problems, unpriced_cost_cap)
from tracejudge.core.config_warnings import run_warnings
from tracejudge.core.record_fields import empty_list

__all__ = [
    "BudgetConfig",
    "CacheConfig",
    "DatasetConfig",
    "JudgeConfig",
    "LimitsConfig",
    "MAX_EXPANDED_NODES",
    "PROVIDERS",
    "PriceConfig",
    "RunConfig",
    "RunSection",
    "STDIN_DATASET",
    "TargetConfig",
    "SimulatorOptions",
    "TokenizerFactor",
    "WORKERS_DEPRECATED",
    "apply_overrides",
    "judge_provider_problem",
    "load_config",
    "require_metrics",
    "run_warnings",
]


class RunConfig(_Strict):
    """A whole run, as written in YAML (see configs/demo.yaml).

    `metrics` are metric specs (`{type: ToolCalls, name: ..., ...}`); each is
    validated against its metric's parameter model when the config loads.
    """

    dataset: DatasetConfig
    metrics: list[dict[str, Any]] = Field(default_factory=empty_list)
    judge: JudgeConfig | None = None
    # Warnings the config's validation placed at their file and line (`validate_config`), said as a run starts (`run_warnings`).
    _notes: list[str] = PrivateAttr(default_factory=list)
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    budget: BudgetConfig = Field(default_factory=BudgetConfig)
    cache: CacheConfig = Field(default_factory=CacheConfig)
    run: RunSection = Field(default_factory=RunSection)
    target: TargetConfig | None = None
    aggregate: AggregateConfig = Field(default_factory=AggregateConfig)
    assertions: AssertionsConfig = Field(default_factory=AssertionsConfig)

    @model_validator(mode="after")
    def _metric_names_unique(self, info: ValidationInfo) -> RunConfig:
        if (info.context or {}).get("metric_names") == "checked":  # `validate_config` names the metric's field and line
            return self
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


def load_config(path: str | Path, overrides: list[str] | None = None, *, cwd: Path | None = None,
                typed: dict[str, str] | None = None, scoring: bool = True, labels_file: bool = True) -> RunConfig:
    """Read, override, validate and resolve a YAML run config.

    Args:
        path: the YAML file.
        overrides: `["dotted.key=value", ...]` from `--set`.
        cwd: folder that relative override paths resolve against (default: process cwd).
        typed: the option as typed for an override that a command-line option
            stands for (`{"run.shard=3/2": "--shard 3/2"}`): errors name it, not `--set`.
        scoring: the config will score its cases (not only convert them, as
            `tracejudge extract` does): a format without traces needs a target.
        labels_file: `judge.labels.path` must name a file (not when labels are given another way).

    Raises:
        ConfigError: unreadable file, invalid YAML, unknown keys, wrong types,
            unknown format or metric type, missing dataset files. The message
            names file, line, key path and what was expected.
    """
    read = read_config(path, overrides, cwd=cwd, typed=typed)
    return validate_config(read.data, source=read.source, lines=read.lines, overridden=read.overridden, scoring=scoring,
                           labels_file=labels_file)



def validate_config(
    data: dict[str, Any],
    *,
    source: str = "<config>",
    lines: dict[tuple[str, ...], int] | None = None,
    overridden: dict[tuple[str, ...], str] | None = None,
    check_files: bool = True,
    scoring: bool = True,
    labels_file: bool = True,
) -> RunConfig:
    """Validate an already-parsed config mapping (paths already absolute).

    `lines` maps key paths to their line in `source`; `overridden` maps the
    key paths given with `--set` to the option as typed (`apply_overrides`),
    so a problem in such a value names the option instead of a line.
    `scoring=False` (converting only) lets a format without traces go without a target, and without the labels file
    it does not read; so does `labels_file=False` (labels given instead of `judge.labels`: `calibrate --labels`).
    Raises `ConfigError` listing every problem found.
    """
    lines = lines or {}
    overridden = overridden or {}
    judge = data.get("judge")
    given = judge.get("labels") if isinstance(judge, dict) else None
    labels = given.get("path") if isinstance(given, dict) and check_files and scoring and labels_file else None
    errors: list[tuple[tuple[Any, ...], str]] = []  # (key path, message)
    if (why := judge_provider_problem(data.get("judge"))) is not None:
        # The provider is read from the model too: a model given with --set is where to look.
        errors.append((("judge", "model") if ("judge", "model") in overridden else ("judge", "provider"), why))
    try:
        config = RunConfig.model_validate(data, context={"metric_names": "checked"})
    except ValidationError as exc:
        errors += [(tuple(err["loc"]), _explain(err, RunConfig))
                   for err in suggest.pair_missing(suggest.merge_union_errors(exc.errors()), RunConfig)]
    if errors:
        # The format and the metrics are free values to the schema: their own mistakes are listed beside its errors,
        # so one command names every mistake instead of one at a time; all of them in the order of the file's lines.
        taken = {tuple(map(str, loc[:2])) for loc, _ in errors}
        errors += [e for e in _unvalidated_problems(data, check_files, labels) if tuple(map(str, e[0][:2])) not in taken]
        # A member's and a gate's checks sit under a key path the schema may have refused beside them (another
        # member's key, another gate's rule): only the very same key path is said once.
        said = {tuple(map(str, loc)) for loc, _ in errors}
        errors += [e for e in [*panel_problems(data, errors), *gate_problems(data.get("assertions"), data.get("metrics"))]
                   if tuple(map(str, e[0])) not in said]
        errors.sort(key=lambda e: _locate(tuple(map(str, e[0])), lines) or float("inf"))
        raise ConfigError("\n".join(_fmt(source, loc, msg, lines, overridden) for loc, msg in errors))

    problems: list[str] = []
    built = []
    fmt = None
    if config.judge is not None and (why := unpriced_cost_cap(config.judge, config.budget.max_cost_usd)) is not None:
        problems.append(_fmt(source, ("budget", "max_cost_usd"), why, lines, overridden))
    if config.judge is not None:  # the keys as written: the config keeps them bare (`simulator:a` is `a`)
        written = data.get("judge")
        for key in ("simulator", "noise"):
            written = written.get(key) if isinstance(written, dict) else None
        problems += [_fmt(source, loc, msg, lines, overridden) for loc, msg in noise_key_problems(config.judge, written)]
        if config.judge.models:  # each member as the run builds it, placed at its line (the run found them one at a time, unplaced)
            from tracejudge.stages.judge.panel import member_problems

            problems += [_fmt(source, loc, msg, lines, overridden) for loc, msg in member_problems(config)]
            config._notes = [_fmt(source, *note, lines, overridden) for note in [lone_member_note(config.judge)] if note is not None]
    fmt, why = _format_of(config.dataset.format)
    if why is not None:
        problems.append(_fmt(source, ("dataset", "format"), why, lines, overridden))
    else:
        assert fmt is not None
        if fmt.needs_target and config.target is None and scoring:
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
                for err in suggest.pair_missing(suggest.merge_union_errors(exc.errors()), fmt.options):
                    problems.append(_fmt(source, ("dataset", "options", *err["loc"]), f"{config.dataset.format}: {_explain(err, fmt.options)}", lines, overridden))
    named: dict[str, int] = {}
    for i, spec in enumerate(config.metrics):
        try:
            metric = registry.build_metric(spec)
        except registry.SpecError as exc:
            problems += [_fmt(source, ("metrics", i, *loc), msg, lines, overridden) for loc, msg in exc.problems]
            continue
        if metric.key in named:  # results are keyed by name: the later metric would silently replace the earlier one
            by = "name" if spec.get("name") else "type"
            problems.append(_fmt(source, ("metrics", i, by), f"a second metric named {metric.key!r} (metrics.{named[metric.key]} has that name"
                                 f"{'; a name defaults to the type' if by == 'type' else ''}): give one a distinct `name`", lines, overridden))
        named.setdefault(metric.key, i)
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
    gates = (assertion_problems(config.assertions, per_result, over_trials) if len(built) == len(config.metrics)
             else [(loc[1:], msg) for loc, msg in gate_problems(data.get("assertions"), data.get("metrics"))])
    for loc, msg in gates:
        # (about the metrics' names too: `--set metrics.0.name=a.b` makes a gate on the old name one on no metric)
        problems.append(_fmt(source, ("assertions", *loc), msg, lines, overridden, about=_METRIC_NAMES))
    if check_files:
        reg = config.assertions.regression
        problems += [_fmt(source, loc, msg, lines, overridden) for loc, msg in
                     file_problems(config.dataset.model_dump(), fmt, reg.baseline if reg is not None else None, labels)]
    if problems:
        raise ConfigError("\n".join(problems))
    return config


def _format_of(name: str) -> tuple[Any, str | None]:
    """`(format, None)` for a known `dataset.format`, else `(None, why not)` naming the nearest known one."""
    try:
        return registry.format_for(name), None
    except KeyError:
        hint = suggest.did_you_mean(name, registry.formats(), n=1, typo=True)
        return None, (f"unknown format {name!r}; {hint + ' ' if hint else ''}expected one of: {', '.join(sorted(registry.formats()))}, "
                      "or module.path:function")
    except registry.FormatError as exc:
        return None, str(exc)


def _unvalidated_problems(data: dict[str, Any], check_files: bool = True, labels: Any = None) -> list[tuple[tuple[Any, ...], str]]:
    """`(key path, message)` of each mistake in the dataset's format, its options, its files (`check_files`), a
    regression baseline, the `labels` file and the metric specs of a config the schema refused.

    The schema takes a format name and each metric as free values, so validating it finds none of their mistakes, and
    the files are looked at only once it passed; a config with an unknown key, a misspelt metric type and a missing
    dataset file would otherwise name them one run at a time. Only `registry.SpecError` is a metric's mistake here:
    anything else is left to the full validation.
    """
    out: list[tuple[tuple[Any, ...], str]] = []
    dataset = data.get("dataset")
    name = dataset.get("format", "native") if isinstance(dataset, dict) else None
    fmt = None
    if isinstance(name, str):
        fmt, why = _format_of(name)
        if why is not None:
            out.append((("dataset", "format"), why))
        elif fmt is not None and fmt.options is not None and isinstance(options := dataset.get("options", {}), dict):
            try:
                fmt.options.model_validate(options)
            except ValidationError as exc:
                out += [(("dataset", "options", *err["loc"]), f"{name}: {_explain(err, fmt.options)}")
                        for err in suggest.pair_missing(suggest.merge_union_errors(exc.errors()), fmt.options)]
    if check_files and isinstance(dataset, dict):
        assertions = data.get("assertions")
        regression = assertions.get("regression") if isinstance(assertions, dict) else None
        out += file_problems(dataset, fmt, regression.get("baseline") if isinstance(regression, dict) else None, labels)
    out += extra_body_problems(data.get("judge"), _explain)
    metrics = data.get("metrics")
    for i, spec in enumerate(metrics if isinstance(metrics, list) else []):
        if isinstance(spec, dict):
            try:
                registry.build_metric(spec)
            except registry.SpecError as exc:
                out += [(("metrics", i, *loc), msg) for loc, msg in exc.problems]
    return out


# The keys a metric's name comes from (its `name`, else its `type`), or the metrics list or a metric set whole.
_METRIC_NAMES = (("metrics",), ("metrics", "*"), ("metrics", "*", "name"), ("metrics", "*", "type"))


def require_metrics(config: RunConfig, source: str = "<config>", overrides: list[str] | None = None) -> None:
    """Raise `ConfigError` when `config` names no metric: a run would score nothing and fail its gate for no reason it states.

    Cases may add their own `metrics`; those add to the run's, so a run still
    needs at least one (e.g. `metrics: [{type: ToolCalls}]`). `overrides` are the
    `--set` options the config was loaded with: when the last one setting `metrics`
    emptied it, the error names that option, not the file.
    """
    if not config.metrics:
        setting = [o for o in overrides or [] if o.split("=", 1)[0].strip() == "metrics"]
        from tracejudge.llm.redact_command import redact_option  # (the option as the run's recorded command shows it)

        shown = redact_option(setting[-1]) if setting else ""
        shown = visible(shown)  # (an invisible character pasted into it is shown escaped)
        where = f"--set {shown if len(shown) <= 90 else shown[:87] + '...'}" if setting else source
        add = "set it to a list of metrics" if setting else "add a `metrics:` list"
        raise ConfigError(f"{where}: metrics: no metric configured, so nothing would be scored; {add}, "
                          "e.g. `metrics: [{type: ToolCalls}]`")


# Keys whose value is a URL (`judge.base_url`, `target.url`, a store's `dataset.options.url` / `tracking_uri`).
_URL_KEYS = ("base_url", "url", "tracking_uri")


def _explain(err: Any, model: type[BaseModel] | None = None) -> str:
    """One error of `model`'s validation in words: what the key expected and what it was given.

    An unknown key names the nearest allowed one, and so does a value outside a fixed set
    (`provider: simulater`; `suggest.error_hint`). A URL key given a mapping, or a section given a URL,
    says so in those words, not pydantic's ("a valid dictionary or instance of JudgeConfig").
    """
    loc = tuple(err["loc"])
    if err["type"] == "extra_forbidden":
        return "unknown key" + suggest.error_hint(err, model)
    if err["type"] == "missing":
        return "required key is missing"
    if err["type"] == suggest.PAIRED:
        return err["msg"]  # already names both keys (`suggest.pair_missing`)
    got = err.get("input")
    msg = suggest.message(err)
    if isinstance(got, dict) and err["type"] in ("value_error", "assertion_error"):
        return msg  # a section's own check (`a http target needs url`): its input is the whole section, not the value at fault
    hint = suggest.error_hint(err, model)
    if err["type"] == "string_type" and loc and loc[-1] in _URL_KEYS:
        msg = "Input should be a URL, a string such as http://127.0.0.1:8000"
    elif err["type"] in suggest.MAPPING_TYPES:
        msg = "Input should be a mapping of the section's keys"
        urls = [k for k in suggest.model_keys(model, (*loc, "")) if k in _URL_KEYS] if isinstance(got, str) and "://" in got else []
        hint = f"; a URL goes in {'.'.join(map(str, (*loc, urls[0])))}" if urls else ""
    from tracejudge.llm.redact import redact  # (here: a valid config never compiles the redaction patterns)

    # A value given where a key's *name* goes (`api_key_env: sk-…`), a URL with its password: masked before it is shown.
    if loc and loc[-1] in _URL_KEYS and isinstance(got, str):
        from tracejudge.core.urls import shown_url

        got = shown_url(got)  # (README: a URL is shown without user, password or query)
    shown = redact(json.dumps(got, default=str))
    shown = f"a mapping: {shown}" if isinstance(got, dict) else shown
    return f"{redact(msg)} (got {shown[:80] + '…' if len(shown) > 80 else shown}){hint}"
