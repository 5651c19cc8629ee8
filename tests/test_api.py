"""`tracejudge.evaluate` / `aevaluate` and `RunReport`: inputs, run directories, config sections, errors."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator

import anyio
import pytest
import tracejudge
from tracejudge import Case, ConfigError, ToolCalls, TrajectoryMatch
from tracejudge.core.registry import import_metric
from tracejudge.engine.store import ManifestMismatch
from tracejudge.entrypoints.api import metric_spec

TRACE = {"steps": [{"tool_calls": [{"name": "search", "arguments": {"q": "x"}}, {"name": "book", "arguments": {"id": 1}, "error": "sold out"}]}]}


def _case(cid: str, expected: list[dict[str, object]]) -> dict[str, object]:
    return {"id": cid, "expected_tool_calls": expected, "trace": TRACE, "tags": ["t"]}


GOOD = _case("good", [{"name": "search"}, {"name": "book", "arguments": {"id": 1}}])
BAD = _case("bad", [{"name": "search"}, {"name": "refund"}])


def test_cases_may_be_case_objects_mappings_or_a_lazy_generator():
    pulled: list[str] = []

    def gen() -> Iterator[object]:
        for item in (Case.model_validate(GOOD), BAD, {"id": "broken", "expected_tool_calls": "no"}, 42):
            pulled.append(str(item)[:10])
            yield item

    report = tracejudge.evaluate(gen(), [ToolCalls()])
    assert len(pulled) == 4
    assert [(r.case_id, r.status.value) for r in report.results] == [
        ("good", "ok"),
        ("bad", "ok"),
        ("broken", "invalid_input"),
        ("<cases>:4", "invalid_input"),
    ]
    broken = report.result("broken").error
    assert broken is not None and (broken.file, broken.line, broken.field) == ("<cases>", 3, "expected_tool_calls")
    odd = report.result("<cases>:4").error
    assert odd is not None and odd.message == "expected a Case or a mapping, got int"
    assert report.result("good").scores["ToolCalls"].value == 1.0
    assert report.result("bad").scores["ToolCalls"].value == 0.5
    assert report.result("good").tags == ["t"]


def test_a_run_leaves_the_callers_garbage_collector_settings_as_it_found_them():
    # The runner collects cyclic garbage less often while it runs; the calling program keeps its own settings.
    import gc

    before = gc.get_threshold()
    gc.set_threshold(1234, 5, 6)
    try:
        report = tracejudge.evaluate([GOOD, BAD], [ToolCalls()])
        assert gc.get_threshold() == (1234, 5, 6) and gc.get_freeze_count() == 0
    finally:
        gc.set_threshold(*before)
    assert [r.scores["ToolCalls"].value for r in report.results] == [1.0, 0.5]


def test_failed_lists_failing_case_metric_pairs_with_reasons():
    report = tracejudge.evaluate([GOOD, BAD, {"id": "x", "trace": "nope"}], [ToolCalls(), TrajectoryMatch(name="traj", include_failed=True)])
    failed = [(f.case_id, f.metric, f.value, f.status.value) for f in report.failed()]
    assert failed == [("bad", "ToolCalls", 0.5, "ok"), ("bad", "traj", 0.5, "ok"), ("x", None, None, "invalid_input")]
    first = report.failed()[0]
    assert first.reason.startswith("matched 1/2 expected and 1/2 actual calls") and "missing: [1] refund(…)" in first.reason
    assert report.failed()[2].reason.startswith("trace: Input should be a valid dictionary")
    core = {"results": 3, "scored": 2, "not_computed": 0, "excluded": {"invalid_input": 1}, "mean": 0.75, "passed": 1, "pass_rate": 0.5}
    got = report.metrics["ToolCalls"].model_dump()
    assert {k: got[k] for k in core} == core
    assert got["std"] == 0.353553 and got["error_share"] == 1 / 3  # the aggregate's further figures come along


def test_to_dataframe_long_and_wide():
    report = tracejudge.evaluate([GOOD, BAD], [ToolCalls(), TrajectoryMatch(name="traj", include_failed=True)])
    long = report.to_dataframe()
    assert list(long.columns) == ["case_id", "trial", "status", "metric", "value", "passed", "reason"]
    assert long[["case_id", "metric", "value", "passed"]].values.tolist() == [
        ["good", "ToolCalls", 1.0, True],
        ["good", "traj", 1.0, True],
        ["bad", "ToolCalls", 0.5, False],
        ["bad", "traj", 0.5, False],
    ]
    wide = report.to_dataframe(wide=True)
    assert list(wide.columns) == ["case_id", "trial", "status", "ToolCalls", "traj"]
    assert wide["ToolCalls"].tolist() == [1.0, 0.5]


def test_a_kept_run_directory_resumes_and_refuses_other_metrics(tmp_path):
    first = tracejudge.evaluate([GOOD, BAD], [ToolCalls()], run_dir=tmp_path / "run", trials=2)
    assert first.new_results == 4 and [(r.case_id, r.trial) for r in first.results] == [("good", 0), ("good", 1), ("bad", 0), ("bad", 1)]
    again = tracejudge.evaluate([GOOD, BAD, _case("new", [])], [ToolCalls()], run_dir=tmp_path / "run", trials=2)
    assert (again.new_results, again.skipped_finished) == (2, 4)
    assert len(again.results) == 6 and again.result("new", 1).scores["ToolCalls"].value == 0.0
    assert len((tmp_path / "run" / "results.jsonl").read_text().splitlines()) == 6
    with pytest.raises(ManifestMismatch, match="another config"):
        tracejudge.evaluate([GOOD], [TrajectoryMatch()], run_dir=tmp_path / "run", trials=2)


def test_config_sections_reach_the_run_config(tmp_path):
    tracejudge.evaluate(
        [GOOD],
        [ToolCalls(arguments="exact"), {"type": "TrajectoryMatch", "order": "exact"}],
        judge={"provider": "simulator", "model": "m-1"},
        limits=tracejudge.LimitsConfig(rpm=10, tpm=2000, max_in_flight=2),
        budget={"max_judge_tokens": 500},
        cache=tmp_path / "cache",
        run_dir=tmp_path / "run",
    )
    config = json.loads((tmp_path / "run" / "manifest.json").read_text())["config"]
    assert {k: config["judge"][k] for k in ("provider", "model", "base_url", "api_key_env")} == {
        "provider": "simulator", "model": "m-1", "base_url": None, "api_key_env": None,
    }
    assert config["limits"] == {"rpm": 10, "tpm": 2000, "max_in_flight": 2, "window": "auto", "window_s": 60.0}
    assert config["budget"] == {"max_judge_tokens": 500, "max_cost_usd": None}
    assert config["cache"]["dir"] == str(tmp_path / "cache")
    # The manifest stores each metric with its defaults filled in.
    assert [(m["type"], m.get("arguments", m.get("order"))) for m in config["metrics"]] == [("ToolCalls", "exact"), ("TrajectoryMatch", "exact")]
    assert config["dataset"]["path"] == "<memory>"


def test_bad_arguments_are_clear_errors():
    with pytest.raises(ConfigError, match=r"evaluate\(target=...\): .*a http target needs `url`"):
        tracejudge.evaluate([GOOD], [ToolCalls()], target={"kind": "http"})
    with pytest.raises(ConfigError, match=r"evaluate\(judge=...\): provider: Input should be 'simulator', 'openai' or 'anthropic'"):
        tracejudge.evaluate([GOOD], [ToolCalls()], judge={"provider": "nobody"})
    with pytest.raises(ConfigError, match=r"evaluate\(trials=...\): \(value\): Input should be greater than or equal to 1"):
        tracejudge.evaluate([GOOD], [ToolCalls()], trials=0)
    # (a section's own check reads as its other errors do, without pydantic's "Value error, ")
    with pytest.raises(ConfigError) as raised:
        tracejudge.evaluate([GOOD], [ToolCalls()], judge={"provider": "simulator", "model": ""})
    assert str(raised.value) == "evaluate(judge=...): model: names no model: give the judge model's name, e.g. `gpt-4o-mini` or `openai:gpt-4o-mini`"
    with pytest.raises(ConfigError, match=r"metrics\[1\]\.type: unknown metric type 'Nope'"):
        tracejudge.evaluate([GOOD], [ToolCalls(), {"type": "Nope"}])
    with pytest.raises(ConfigError, match="two metrics are named 'ToolCalls'"):
        tracejudge.evaluate([GOOD], [ToolCalls(), {"type": "ToolCalls", "arguments": "exact"}])
    with pytest.raises(TypeError, match=r"metrics\[0\]: expected a metric"):
        tracejudge.evaluate([GOOD], ["ToolCalls"])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="cases must be an iterable"):
        tracejudge.evaluate(GOOD, [ToolCalls()])  # type: ignore[arg-type]


@pytest.mark.parametrize(("build", "spec", "expected"), [
    (lambda: ToolCalls(argument="exact"), {"type": "ToolCalls", "argument": "exact"},
     "ToolCalls: argument: unknown parameter; did you mean arguments?"),
    (lambda: ToolCalls(arguments="exacct"), {"type": "ToolCalls", "arguments": "exacct"},
     "ToolCalls: arguments: Input should be 'subset', 'shallow', 'exact' or 'ignore'; did you mean exact?"),
    (lambda: tracejudge.Rubric(name="tone", criteria="polite", threshhold=0.5),
     {"type": "Rubric", "name": "tone", "criteria": "polite", "threshhold": 0.5},
     "Rubric: threshhold: unknown parameter; did you mean threshold?"),
    # A validator's own message, without pydantic's "Value error, " before it.
    (lambda: tracejudge.Regex(pattern="("), {"type": "Regex", "pattern": "("},
     "Regex: pattern: invalid regular expression: missing ) at position 1"),
])
def test_a_metric_built_in_python_with_a_mistake_says_it_as_a_config_does(build, spec, expected):
    """`tj.ToolCalls(argument=…)` raised pydantic's raw `Extra inputs are not permitted`, where the same spec in a config
    named the key it meant: both now give the same words, as a ConfigError that is a ValueError too."""
    with pytest.raises(ConfigError) as raised:
        build()
    assert str(raised.value) == expected
    assert isinstance(raised.value, ValueError)  # (what pydantic's ValidationError was: `except ValueError` still catches it)
    with pytest.raises(ConfigError) as from_spec:
        tracejudge.evaluate([GOOD], [spec])
    kind, key, message = expected.split(": ", 2)
    assert str(from_spec.value) == f"metrics[0].{key}: {kind}: {message}"


def test_a_metric_class_that_needs_parameters_says_which_and_to_pass_an_instance():
    with pytest.raises(ConfigError) as raised:
        tracejudge.evaluate([GOOD], [tracejudge.Regex])
    assert str(raised.value) == "metrics[0]: Regex cannot be built with its defaults: pattern: required parameter is missing; pass an instance"


def test_every_mistake_of_a_metric_built_in_python_is_a_line():
    with pytest.raises(ConfigError) as raised:
        calls_made(at_mots=2, threshold=True)
    assert str(raised.value).splitlines() == [
        "calls_made: threshold: Input should be a number, not a boolean",
        "calls_made: at_mots: unknown parameter; did you mean at_most?",
    ]


@tracejudge.metric
def calls_made(case: Case, trace: tracejudge.Trace, *, at_most: int = 1) -> bool:
    return len(trace.tool_calls()) <= at_most


def test_metric_specs_name_builtin_types_and_custom_paths():
    assert metric_spec(ToolCalls(arguments="exact", name="w")) == {"type": "ToolCalls", "name": "w", "arguments": "exact"}
    spec = metric_spec(calls_made(at_most=3))
    assert spec == {"type": f"{__name__}:calls_made", "at_most": 3}
    assert import_metric(spec["type"]) is calls_made  # the recorded type imports the same class back
    report = tracejudge.evaluate([GOOD], [calls_made])  # a class is built with its defaults
    assert report.result("good").scores["calls_made"].value == 0.0


@pytest.mark.anyio
async def test_aevaluate_takes_an_async_iterable_and_evaluate_works_inside_a_running_loop():
    async def stream() -> AsyncIterator[dict[str, object]]:
        for c in (GOOD, BAD):
            await anyio.sleep(0)
            yield c

    report = await tracejudge.aevaluate(stream(), [ToolCalls()])
    assert [r.scores["ToolCalls"].value for r in report.results] == [1.0, 0.5]
    # A notebook calls the sync API inside its loop: it runs on a worker thread.
    inside = tracejudge.evaluate([GOOD, BAD], [ToolCalls()])
    assert [r.scores["ToolCalls"].value for r in inside.results] == [1.0, 0.5]
    with pytest.raises(TypeError, match="use `await aevaluate"):
        tracejudge.evaluate(stream(), [ToolCalls()])


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def test_an_error_raised_by_the_callers_cases_reaches_the_caller_as_itself():
    # Not wrapped in the pipeline's task groups: `except ValueError` in the caller's code catches it.
    def cases() -> Iterator[dict]:
        yield {"id": "a", "trace": {"steps": []}}
        raise ValueError("the source went away") from KeyError("shard 3")

    with pytest.raises(ValueError, match="the source went away") as info:
        tracejudge.evaluate(cases(), [ToolCalls()])
    assert isinstance(info.value.__cause__, KeyError)

    async def acases() -> AsyncIterator[dict]:
        yield {"id": "a", "trace": {"steps": []}}
        raise ValueError("async source went away")

    with pytest.raises(ValueError, match="async source went away"):
        anyio.run(lambda: tracejudge.aevaluate(acases(), [ToolCalls()]))


def test_a_judge_metric_without_a_judge_is_refused_not_answered_by_the_simulator() -> None:
    # It was answered by the simulator ("simulated reason 39") under a real model's name and price, as the command never is.
    case = {"id": "a", "input": "q", "trace": {"steps": [], "output": "o"}}
    with pytest.raises(ConfigError, match=r"evaluate\(metrics=...\): TaskCompletion, tone: LLM-judge metric\(s\): pass judge="):
        tracejudge.evaluate([case], [{"type": "TaskCompletion"}, {"type": "ToolCalls"}, {"type": "Rubric", "name": "tone", "criteria": "polite"}])
    with pytest.raises(ConfigError, match="LLM-judge metric"):
        tracejudge.Evaluator().evaluate_case(case, [{"type": "TaskCompletion"}])
    got = tracejudge.evaluate([case], [{"type": "TaskCompletion"}], judge={"provider": "simulator"})  # said so: the simulator
    assert got.results[0].scores["TaskCompletion"].value is not None


def test_a_resume_refuses_cases_changed_since_their_results_were_written(tmp_path):
    # Same ids, corrected expectations: the stored 0.5 is not the corrected case's score.
    run = tmp_path / "run"
    fixed = _case("bad", [{"name": "search"}, {"name": "book"}])
    assert tracejudge.evaluate([GOOD, BAD], [ToolCalls()], run_dir=run).result("bad").scores["ToolCalls"].value == 0.5
    with pytest.raises(ManifestMismatch, match=r"case 'bad': changed since its result was written") as refused:
        tracejudge.evaluate([GOOD, fixed], [ToolCalls()], run_dir=run)
    assert "force=True" in str(refused.value) and "run_dir" in str(refused.value)
    assert len((run / "results.jsonl").read_text().splitlines()) == 2  # refused before anything was written

    # A generator is read once: the changed case is found as it is read.
    def gen() -> Iterator[object]:
        yield from (GOOD, fixed)

    with pytest.raises(ManifestMismatch, match=r"case 'bad': changed"):
        tracejudge.evaluate(gen(), [ToolCalls()], run_dir=run)

    # The same cases (a Case object as the mapping it was built from) and new ones still resume.
    again = tracejudge.evaluate([Case.model_validate(GOOD), BAD, _case("new", [])], [ToolCalls()], run_dir=run)
    assert (again.new_results, again.skipped_finished) == (1, 2)
    forced = tracejudge.evaluate([GOOD, fixed], [ToolCalls()], run_dir=run, force=True)
    assert forced.new_results == 0 and forced.result("bad").scores["ToolCalls"].value == 0.5  # kept, as --force keeps them
    assert tracejudge.evaluate([GOOD, fixed], [ToolCalls()], run_dir=tmp_path / "other").result("bad").scores["ToolCalls"].value == 1.0


def test_a_case_is_fingerprinted_as_the_mapping_it_was_built_from():
    from tracejudge import Trace
    from tracejudge.engine.case_digests import case_digest

    plain = case_digest({"id": "m", "trace": TRACE})
    assert plain is not None and case_digest({"trace": Trace.model_validate(TRACE), "id": "m"}) == plain
    assert case_digest(Case.model_validate({"id": "m", "trace": TRACE})) == plain
    assert case_digest({"id": "m", "trace": TRACE, "input": "other"}) != plain
    # No stable form (a repr would differ every run and refuse every resume): not fingerprinted, taken as it is.
    assert case_digest({"id": "m", "metadata": {"at": object()}}) is None


@tracejudge.metric
def never_returns(case: Case, trace: tracejudge.Trace) -> bool:
    import time

    time.sleep(60)
    return True


def test_metric_timeout_s_cuts_a_metric_that_never_returns():
    # `run.metric_timeout_s` from the Python API: the stuck metric costs its score, the case's other metric still scores.
    report = tracejudge.evaluate([GOOD], [ToolCalls(), never_returns()], metric_timeout_s=0.5)
    (result,) = report.results
    stuck = result.scores["never_returns"]
    assert stuck.value is None and stuck.reason.startswith("metric_timeout:") and "0.5" in stuck.reason
    assert result.scores["ToolCalls"].value is not None
    with pytest.raises(ConfigError, match=r"evaluate\(metric_timeout_s=...\): \(value\): Input should be greater than or equal to 0.001"):
        tracejudge.evaluate([GOOD], [ToolCalls()], metric_timeout_s=0)
    # A microsecond's timer fired again inside its own handler: the run crashed with a RecursionError.
    with pytest.raises(ConfigError, match=r"greater than or equal to 0.001"):
        tracejudge.evaluate([GOOD], [ToolCalls()], metric_timeout_s=1e-9)
    # Past what the alarm's timer can hold (it overflowed inside the run): refused up front, as is an infinity.
    with pytest.raises(ConfigError, match=r"evaluate\(metric_timeout_s=...\): \(value\): Input should be less than or equal to 1000000000"):
        tracejudge.evaluate([GOOD], [ToolCalls()], metric_timeout_s=1e12)
    with pytest.raises(ConfigError, match=r"evaluate\(metric_timeout_s=...\): \(value\): Input should be a finite number"):
        tracejudge.evaluate([GOOD], [ToolCalls()], metric_timeout_s=float("inf"))


def test_a_run_s_metric_time_limit_ends_with_the_run():
    # The limit was the process's from then on: a later `score_case` in the same process (a test, a notebook) was cut at
    # 0.5 s instead of the default 60 s.
    from tracejudge.stages.score import time_limit

    before = time_limit.seconds()
    tracejudge.evaluate([GOOD], [ToolCalls()], metric_timeout_s=0.5)
    assert time_limit.seconds() == before


def test_every_built_in_metric_type_is_a_public_class_and_its_instance_scores_as_its_spec_does() -> None:
    # `tracejudge.TaskCompletion` raised AttributeError: the LLM-judge metrics (and PassHatK, RecordedReward, TauOutputs)
    # could only be given as `{"type": …}` specs, while `tracejudge.ToolCalls` and `tracejudge.PassAtK` were classes.
    from tracejudge.core import registry

    for name, cls in registry.metric_types().items():
        if name.isidentifier() and name[0].isupper():
            assert getattr(tracejudge, name) is cls and name in tracejudge.__all__, name
    case = {"id": "a", "input": "q", "trace": {"steps": [], "output": "o"}}
    judge = {"provider": "simulator"}
    by_class = tracejudge.evaluate([case], [tracejudge.TaskCompletion(), tracejudge.Rubric(name="tone", criteria="polite")], judge=judge)
    by_spec = tracejudge.evaluate([case], [{"type": "TaskCompletion"}, {"type": "Rubric", "name": "tone", "criteria": "polite"}], judge=judge)
    for key in ("TaskCompletion", "tone"):
        assert by_class.results[0].scores[key].value == by_spec.results[0].scores[key].value is not None
