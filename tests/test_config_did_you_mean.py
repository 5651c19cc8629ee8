"""A mistyped config key, metric option, metric type or format suggests the nearest valid one, keeping its file:line.

Real CLI processes on real files, as a user runs them (the style of test_config_mistakes.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_config_mistakes import CASE, cli, config_error
from tracejudge.core.suggest import closest


def _config(tmp_path: Path, body: str) -> Path:
    (tmp_path / "cases.jsonl").write_text(json.dumps(CASE) + "\n")
    cfg = tmp_path / "eval.yaml"
    cfg.write_text(body)
    return cfg


def _reports(cfg: Path, cwd: Path, *expected: str) -> None:
    """`tracejudge run cfg` is a config error listing each of `expected` as one line."""
    lines = config_error(cli("run", str(cfg), cwd=cwd)).splitlines()[1:]
    missing = [e for e in expected if e not in lines]
    assert not missing, (missing, lines)


def test_mistyped_keys_at_every_level_name_the_nearest_key(tmp_path: Path) -> None:
    cfg = _config(tmp_path, (
        "datset: {path: cases.jsonl}\n"
        "metrics: [{type: ToolCalls}]\n"
        "judge: {provider: simulator, modle: x, simulatr: {latency_ms: 1}, prices: {x: {input: 1, outptu: 2}}}\n"
        "run: {dri: somewhere}\n"
        "Limits: {rpm: 10}\n"
        "assertions: {metrics: {ToolCalls: {min_pass_rat: 0.5}}}\n"
    ))
    # (a typo of a required key names both in one line: `dataset` and `prices.x.output` are required)
    _reports(cfg, tmp_path, f"{cfg}:1: datset: unknown key `datset`; did you mean dataset? (required key `dataset` is missing)",
             f"{cfg}:3: judge.modle: unknown key; did you mean model?",
             f"{cfg}:3: judge.simulatr: unknown key; did you mean simulator?",
             f"{cfg}:3: judge.prices.x.outptu: unknown key `outptu`; did you mean output? (required key `output` is missing)",
             f"{cfg}:4: run.dri: unknown key; did you mean dir?",
             f"{cfg}:5: Limits: unknown key; did you mean limits?",
             f"{cfg}:6: assertions.metrics.ToolCalls.min_pass_rat: unknown key; did you mean min_pass_rate?")
    assert not (tmp_path / "runs").exists()


def test_metric_options_dataset_options_and_formats_suggest_too(tmp_path: Path) -> None:
    cfg = _config(tmp_path, (
        "dataset:\n  path: cases.jsonl\n  format: json-path\n  options: {toolcalls: steps, call: {nmae: tool}}\n"
        "metrics:\n  - {type: ToolCalls, argumnets: exact}\n  - {type: TrajectoryMatch, oder: exact}\n"
    ))
    _reports(cfg, tmp_path, f"{cfg}:4: dataset.options.toolcalls: json-path: unknown key; did you mean tool_calls?",
             f"{cfg}:4: dataset.options.call.nmae: json-path: unknown key; did you mean name?",
             f"{cfg}:6: metrics.0.argumnets: ToolCalls: unknown parameter; did you mean arguments?",
             f"{cfg}:7: metrics.1.oder: TrajectoryMatch: unknown parameter; did you mean order?")
    cfg = _config(tmp_path, "dataset: {path: cases.jsonl, format: jsonpath}\nmetrics: [{type: toolcall}]\n")
    err = config_error(cli("run", str(cfg), cwd=tmp_path))
    assert f"{cfg}:1: dataset.format: unknown format 'jsonpath'; did you mean json-path? expected one of:" in err
    assert f"{cfg}:2: metrics.0.type: unknown metric type 'toolcall'; did you mean ToolCalls, tool-call-f1, MaxToolCalls?" in err


def test_no_suggestion_when_nothing_is_near(tmp_path: Path) -> None:
    cfg = _config(tmp_path, "dataset: {path: cases.jsonl}\nmetrics: [{type: ToolCalls}]\nrun: {xyzzy: 1}\n")
    assert f"{cfg}:3: run.xyzzy: unknown key" in config_error(cli("run", str(cfg), cwd=tmp_path)).splitlines()
    cfg = _config(tmp_path, "dataset: {path: cases.jsonl}\nmetrics: [{type: Zebra}]\n")
    err = config_error(cli("run", str(cfg), cwd=tmp_path))
    assert "unknown metric type 'Zebra'; expected one of: " in err and "did you mean" not in err


def test_a_case_with_a_mistyped_key_names_the_key_it_meant(tmp_path: Path) -> None:
    (tmp_path / "cases.jsonl").write_text(json.dumps({"id": "a", "expected_tool_call": [], "trace": {"steps": []}}) + "\n")
    (tmp_path / "eval.yaml").write_text("dataset: {path: cases.jsonl}\nmetrics: [{type: ToolCalls}]\n")
    proc = cli("extract", "eval.yaml", "-o", "out.jsonl", cwd=tmp_path)
    # (the field once: the place names it, `expected_tool_call (a): expected_tool_call: …` said it twice)
    assert "cases.jsonl:1: expected_tool_call (a): Extra inputs are not permitted; did you mean expected_tool_calls?" in " ".join(proc.stderr.split())


@pytest.mark.parametrize("typed,choices,expected", [
    ("modle", ["mode", "model", "models"], ["model", "mode", "models"]),  # a swap is one edit, and the same letters win a tie
    ("ToolCall", ["ToolCalls", "MaxToolCalls", "ToolCallAccuracy", "Latency"], ["ToolCalls", "MaxToolCalls", "ToolCallAccuracy"]),
    ("JUDGE", ["judge", "budget"], ["judge", "budget"]),  # case does not count
    ("xyzzy", ["dir", "trials"], []),
    ("bogus", [], []),  # a model without options (native's)
])
def test_closest_ranks_typing_mistakes_first(typed, choices, expected):
    assert closest(typed, choices) == expected


def test_keys_are_suggested_only_a_typing_slip_away():
    assert closest("nokey", ["workers", "trials"]) == ["workers"]  # difflib alone finds this one near
    assert closest("nokey", ["workers", "trials"], typo=True) == []
    assert closest("min_pass_rat", ["min_pass_rate", "min_mean"], typo=True) == ["min_pass_rate"]


def test_a_key_missing_its_unit_or_qualifier_names_the_full_key(tmp_path: Path) -> None:
    # `max_cost` and `latency` are no typing slip of `max_cost_usd` and `latency_ms`, but the same mistake.
    cfg = _config(tmp_path, (
        "dataset: {path: cases.jsonl}\n"
        "metrics: [{type: ToolCalls}]\n"
        "judge:\n  provider: simulator\n  model: x\n  simulator:\n    latency: 5\n"
        "budget: {max_cost: 3}\n"
    ))
    _reports(cfg, tmp_path, f"{cfg}:7: judge.simulator.latency: unknown key; did you mean latency_ms?",
             f"{cfg}:8: budget.max_cost: unknown key; did you mean max_cost_usd?")
    assert closest("cost", ["max_cost_usd"], typo=True) == []  # a word from the middle is not enough
    assert closest("ms", ["latency_ms"], typo=True) == []  # nor a word too short to say which key


def test_a_mistyped_value_of_a_fixed_set_names_the_nearest_value(tmp_path: Path) -> None:
    cfg = _config(tmp_path, (
        "dataset: {path: cases.jsonl}\n"
        "metrics: [{type: ToolCalls}]\n"
        "judge: {provider: simulater, model: x}\n"
        "limits: {window: strct}\n"
    ))
    _reports(cfg, tmp_path,
             f"{cfg}:3: judge.provider: Input should be 'simulator', 'openai' or 'anthropic' (got \"simulater\"); did you mean simulator?",
             f"{cfg}:4: limits.window: Input should be 'auto', 'bucket' or 'strict' (got \"strct\"); did you mean strict?")
    cfg = _config(tmp_path, "dataset: {path: cases.jsonl}\nmetrics:\n  - {type: ToolCalls, arguments: exakt}\n  - {type: TrajectoryMatch, order: inorder}\n")
    err = config_error(cli("run", str(cfg), cwd=tmp_path))
    assert "metrics.0.arguments: ToolCalls: Input should be 'subset', 'shallow', 'exact' or 'ignore'; did you mean exact?" in err
    assert "metrics.1.order: TrajectoryMatch: Input should be 'exact', 'in_order' or 'any_order'; did you mean in_order?" in err
    cfg = _config(tmp_path, "dataset: {path: cases.jsonl}\nmetrics: [{type: ToolCalls}]\njudge: {model: 'opnai:gpt-4o-mini'}\n")
    err = config_error(cli("run", str(cfg), cwd=tmp_path))
    assert "judge.provider: model 'opnai:gpt-4o-mini' names unknown provider 'opnai'; did you mean openai? known providers:" in err
    cfg = _config(tmp_path, "dataset: {path: cases.jsonl}\nmetrics: [{type: ToolCalls}]\nlimits: {window: hourly}\n")
    assert "did you mean" not in config_error(cli("run", str(cfg), cwd=tmp_path))  # nothing near: no guess


def test_a_panel_member_names_the_nearest_provider_and_limit(tmp_path: Path) -> None:
    # A panel member was validated when the run built it, by its own message: it named no suggestion, its limits' keys
    # without `limits.`, no file or line, and one member at a time. Each is now placed at its line with the config's errors.
    for member, expected in (("{model: gpt, provider: opnai}", "judge.models.0.provider: Input should be 'simulator', 'openai' or "
                                                                 "'anthropic'; did you mean openai?"),
                             ("{model: gpt, limits: {rmp: 5}}", "judge.models.0.limits.rmp: unknown key; did you mean rpm?"),
                             # A check of the whole member: it was `judge.models[0].: Value error, model …`.
                             ("{model: 'openai:a', provider: simulator}", "judge.models.0: model 'openai:a' names provider 'openai' but "
                                                                         "provider is 'simulator'")):
        cfg = _config(tmp_path, f"dataset: {{path: cases.jsonl}}\nmetrics: [{{type: TaskCompletion}}]\n"
                                f"judge: {{provider: simulator, model: x, models: [{member}, y]}}\n")
        assert f"{cfg}:3: {expected}" in config_error(cli("run", str(cfg), cwd=tmp_path)).splitlines()


def test_every_panel_members_mistake_is_said_at_its_line_at_once(tmp_path: Path) -> None:
    cfg = _config(tmp_path, "dataset: {path: cases.jsonl}\nmetrics: [{type: TaskCompletion}]\njudge:\n  provider: simulator\n"
                            "  model: x\n  models:\n    - {model: 'openai:a', provider: simulator}\n    - {model: b, limits: {rmp: 5}}\n"
                            "    - {model: c, limits: {window: strct}}\n")
    lines = [line for line in config_error(cli("run", str(cfg), cwd=tmp_path)).splitlines() if line != "config error"]
    assert lines == [f"{cfg}:7: judge.models.0: model 'openai:a' names provider 'openai' but provider is 'simulator'",
                     f"{cfg}:8: judge.models.1.limits.rmp: unknown key; did you mean rpm?",
                     f"{cfg}:9: judge.models.2.limits.window: Input should be 'auto', 'bucket' or 'strict'; did you mean strict?"], lines


def test_a_panel_built_without_the_configs_validation_still_names_the_member(tmp_path: Path) -> None:
    # (a RunConfig built in Python and handed to the judge stage: the run's own check, by the member's index)
    from tracejudge.core.config import RunConfig
    from tracejudge.core.errors import ConfigError
    from tracejudge.stages.judge.panel import panel_members

    cfg = RunConfig.model_validate({"dataset": {"path": str(tmp_path / "c.jsonl")}, "metrics": [{"type": "TaskCompletion"}],
                                    "judge": {"provider": "simulator", "model": "x", "models": [{"model": "y"}, {"model": "openai:a", "provider": "simulator"}]}})
    with pytest.raises(ConfigError) as err:
        panel_members(cfg)
    # (dotted, as the config's own validation names it: it was `judge.models[1]` here, `judge.models.1` there)
    assert str(err.value) == "judge.models.1: model 'openai:a' names provider 'openai' but provider is 'simulator'"


def test_a_value_outside_a_pattern_of_plain_words_names_the_words_and_the_nearest(tmp_path: Path) -> None:
    # `include: outptu` showed only pydantic's "String should match pattern '^(trace|output)$'".
    cfg = _config(tmp_path, "dataset: {path: cases.jsonl}\nmetrics:\n  - {type: Rubric, criteria: good, include: outptu}\n"
                            "judge: {provider: simulator, model: x}\n")
    _reports(cfg, tmp_path, f"{cfg}:3: metrics.0.include: Rubric: String should match pattern '^(trace|output)$' "
                            "(expected one of: trace, output); did you mean output?")
    cfg.write_text(cfg.read_text().replace("outptu", "everything"))  # nothing near: the words, no guess
    _reports(cfg, tmp_path, f"{cfg}:3: metrics.0.include: Rubric: String should match pattern '^(trace|output)$' "
                            "(expected one of: trace, output)")


def test_a_panel_member_s_mistyped_required_key_is_one_line(tmp_path: Path) -> None:
    # It was two lines: `model: required key is missing` and `modle: unknown key; did you mean model?`.
    cfg = _config(tmp_path, "dataset: {path: cases.jsonl}\nmetrics: [{type: TaskCompletion}]\n"
                            "judge:\n  provider: simulator\n  model: x\n  models: [{provider: simulator, modle: x}]\n")
    lines = config_error(cli("run", str(cfg), cwd=tmp_path)).splitlines()[1:]
    assert lines == [f"{cfg}:6: judge.models.0.modle: unknown key `modle`; did you mean model? (required key `model` is missing)"], lines


@pytest.mark.parametrize(("key", "expected"), [
    ("tool", "unknown key `tool`; the required key `name` is missing"),  # was `name: Field required (and 1 more problems)`
    ("nmae", "unknown key `nmae`; did you mean name? (required key `name` is missing)"),  # counted itself as one more
])
def test_a_case_s_unknown_key_where_a_required_one_is_missing_is_one_problem(tmp_path: Path, key: str, expected: str) -> None:
    case = {"id": "a", "trace": {"steps": [{"tool_calls": [{key: "lookup"}]}]}}
    (tmp_path / "cases.jsonl").write_text(json.dumps(case) + "\n")
    (tmp_path / "eval.yaml").write_text("dataset: {path: cases.jsonl}\nmetrics: [{type: ToolCalls}]\n")
    proc = cli("extract", "eval.yaml", "-o", "out.jsonl", cwd=tmp_path)
    assert proc.stderr.splitlines()[0].endswith(f":1: trace.steps[0].tool_calls[0].{key} (a): {expected}"), proc.stderr


@pytest.mark.parametrize("kind, meant", [("trajectory:tool-usd", "trajectory:tool-used"), ("Trajectory:tool-used", "trajectory:tool-used"),
                                         ("not-trajectory:goal-sucess", "not-trajectory:goal-success")])
def test_a_misspelt_promptfoo_type_is_named_not_imported_as_a_module(kind: str, meant: str) -> None:
    # Its colon reads as `module:attribute`: the error was "custom metric …: cannot import module 'trajectory'".
    from tracejudge.core.registry import SpecError, build_metric

    with pytest.raises(SpecError) as err:
        build_metric({"type": kind, "value": ["a"]})
    assert err.value.msg.startswith(f"unknown metric type {kind!r}; did you mean {meant}?"), err.value.msg
    with pytest.raises(SpecError, match="cannot import module 'mypkg.metrics'"):  # a custom metric's path is still one
        build_metric({"type": "mypkg.metrics:no_failed_tools"})


def test_other_tools_names_for_a_judge_key_name_ours(tmp_path: Path) -> None:
    # `max_retries` (the OpenAI SDK's, deepeval's) is no typing slip of `max_attempts`: it is named all the same, with
    # the off-by-one between the two; so are other peers' names for the reply cap, the timeout and the server address.
    cfg = _config(tmp_path, (
        "dataset: {path: cases.jsonl}\nmetrics: [{type: ToolCalls}]\n"
        "judge: {provider: simulator, max_retries: 2, max_completion_tokens: 100, request_timeout: 30, api_base: 'http://127.0.0.1:1/v1'}\n"
    ))
    _reports(cfg, tmp_path,
             f"{cfg}:3: judge.max_retries: unknown key; did you mean max_attempts? (max_retries counts the retries after the first try, "
             "max_attempts every try: max_retries N is max_attempts N+1)",
             f"{cfg}:3: judge.max_completion_tokens: unknown key; did you mean max_tokens?",
             f"{cfg}:3: judge.request_timeout: unknown key; did you mean timeout_s? (in seconds)",
             f"{cfg}:3: judge.api_base: unknown key; did you mean base_url?")
    # Only where the key it maps to is allowed: a metric's `max_retries` is an unknown parameter, nothing more.
    cfg = _config(tmp_path, "dataset: {path: cases.jsonl}\nmetrics: [{type: ToolCalls, max_retries: 2}]\n")
    _reports(cfg, tmp_path, f"{cfg}:2: metrics.0.max_retries: ToolCalls: unknown parameter")


def test_other_tools_names_for_a_metrics_parameter_name_ours(tmp_path: Path) -> None:
    # `{type: Contains, expected: …}` (the peers' `expected_output`) was "unknown parameter" with no hint: `value` is no
    # typing slip of it. Each name maps to the parameter the metric has (pydantic-evals' `Equals(value=…)` is `expected`).
    cfg = _config(tmp_path, (
        "dataset: {path: cases.jsonl}\nmetrics:\n"
        "  - {type: Contains, expected: reservation}\n"
        "  - {type: ExactMatch, value: done}\n"
        "  - {type: Contains, name: c2, value: x, ignore_case: true}\n"
        "  - {type: includes, case_sensitive: true}\n"
        "  - {type: TrajectoryMatch, expected_tools: [search]}\n"
        "  - {type: ToolCorrectness, expected_trajectory: [search]}\n"
    ))
    _reports(cfg, tmp_path,
             f"{cfg}:3: metrics.0.expected: Contains: unknown parameter; did you mean value?",
             f"{cfg}:4: metrics.1.value: ExactMatch: unknown parameter; did you mean expected?",
             f"{cfg}:5: metrics.2.ignore_case: Contains: unknown parameter; did you mean case_sensitive? "
             "(ignore_case: true is case_sensitive: false)",
             f"{cfg}:6: metrics.3.case_sensitive: includes: unknown parameter; did you mean ignore_case? "
             "(case_sensitive: false is ignore_case: true)",
             f"{cfg}:7: metrics.4.expected_tools: TrajectoryMatch: unknown parameter; did you mean expected_trajectory?",
             f"{cfg}:8: metrics.5.expected_trajectory: ToolCorrectness: unknown parameter; did you mean expected_tools?")
    # Only where the parameter it maps to is allowed: `ToolCalls` has no `value`, so `expected` is an unknown parameter, nothing more.
    cfg = _config(tmp_path, "dataset: {path: cases.jsonl}\nmetrics: [{type: ToolCalls, expected: 2}]\n")
    _reports(cfg, tmp_path, f"{cfg}:2: metrics.0.expected: ToolCalls: unknown parameter")


def test_another_tools_config_keys_say_where_their_part_goes(tmp_path: Path) -> None:
    # A promptfoo config or a pydantic-evals dataset file run as is got "unknown key" alone.
    migrating = '(see README, "Migrating from pydantic-evals / deepeval / multivon / τ²-bench / promptfoo / inspect-ai")'
    cfg = _config(tmp_path, "providers: [openai:gpt-4o-mini]\nprompts: ['{{question}}']\ntests: []\n")
    lines = config_error(cli("run", str(cfg), cwd=tmp_path)).splitlines()[1:]
    assert lines[0].startswith(f"{cfg}:1: providers: unknown key `providers`; the required key `dataset` is missing; promptfoo's `providers`: "
                               "the model that judges is `judge:`") and lines[0].endswith(migrating), lines
    assert lines[1].startswith(f"{cfg}:2: prompts: unknown key; promptfoo's `prompts`: tracejudge scores what an agent did"), lines
    assert lines[2] == f"{cfg}:3: tests: unknown key; promptfoo's `tests`: the cases are the `dataset:` file and the assertions are `metrics:` {migrating}"
    cfg = _config(tmp_path, "dataset: {path: cases.jsonl}\nmetrics: [{type: ToolCalls}]\nevaluators: [IsInstance]\n")
    _reports(cfg, tmp_path, f"{cfg}:3: evaluators: unknown key; pydantic-evals' `evaluators`: they are `metrics:` {migrating}")


def test_deepevals_tool_correctness_options_on_tool_correctness_name_the_metric_that_takes_them(tmp_path: Path) -> None:
    cfg = _config(tmp_path, "dataset: {path: cases.jsonl}\nmetrics:\n  - {type: ToolCorrectness, should_consider_ordering: true}\n"
                            "  - {type: ToolCorrectness, name: b, allow_extra: true, nonsense_option: 1}\n")
    _reports(cfg, tmp_path,
             f"{cfg}:3: metrics.0.should_consider_ordering: ToolCorrectness: unknown parameter; `type: DeepEvalToolCorrectness` takes "
             "should_consider_ordering (deepeval's ToolCorrectnessMetric, its options and its score)",
             f"{cfg}:4: metrics.1.nonsense_option: ToolCorrectness: unknown parameter")


@pytest.mark.parametrize(("peer", "says"), [
    ("ToolCorrectnessMetric", "deepeval's ToolCorrectnessMetric is `type: DeepEvalToolCorrectness`, with its options and its score "
                              "(`tracejudge explain DeepEvalToolCorrectness`)"),
    ("GEval", "deepeval's GEval is `type: Rubric`: its `criteria` as `criteria`, graded on `scale` (default [1, 5]) by the judge "
              "(`tracejudge explain Rubric`)"),
    ("LLMJudge", "pydantic-evals' LLMJudge is `type: Rubric`: its `rubric` as `criteria` (`scale: [0, 1]` for a pass or a fail) "
                 "(`tracejudge explain Rubric`)"),
    ("EqualsExpected", "pydantic-evals' EqualsExpected is `type: ExactMatch` (the output against the case's expected_output) "
                       "(`tracejudge explain ExactMatch`)"),
])
def test_the_peers_metric_class_names_name_the_metric_that_takes_their_place(peer: str, says: str) -> None:
    # `ToolCorrectnessMetric` was offered `ToolCorrectness` (pydantic-evals' numbers), `GEval` `equals`, `LLMJudge` `includes`.
    from tracejudge.core.registry import SpecError, build_metric

    with pytest.raises(SpecError) as refused:
        build_metric({"type": peer})
    assert refused.value.loc == ("type",) and refused.value.msg == f"unknown metric type {peer!r}; {says}", refused.value


def test_a_metric_key_a_slip_from_type_names_type_in_the_file_and_with_set(tmp_path: Path) -> None:
    # `type` is the spec's key, not one of the metric's parameters: `--set metrics.0.tpye=Regex` beside the file's `type`
    # said "unknown parameter" and nothing more, where any other mistyped key of the metric named the nearest.
    cfg = _config(tmp_path, "dataset: {path: cases.jsonl}\nmetrics:\n  - {type: ToolCalls}\n  - {type: TrajectoryMatch, tpye: x}\n")
    _reports(cfg, tmp_path, f"{cfg}:4: metrics.1.tpye: TrajectoryMatch: unknown parameter; did you mean type? "
                            "(this metric's type is TrajectoryMatch)")
    cfg.write_text("dataset: {path: cases.jsonl}\nmetrics:\n  - {type: ToolCalls}\n")
    said = config_error(cli("run", str(cfg), "--set", "metrics.0.tpye=Regex", cwd=tmp_path)).splitlines()[1:]
    assert said == ["--set metrics.0.tpye=Regex: metrics.0.tpye: ToolCalls: unknown parameter; did you mean type? "
                    "(this metric's type is ToolCalls)"], said
