"""Custom metrics: `@tracejudge.metric` in Python, by dotted path in a config, raising, async."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import anyio
import pytest
import tracejudge
from tracejudge import Case, Score, Trace
from tracejudge.core.errors import ConfigError
import _forkserver

TRACEJUDGE = Path(sys.executable).with_name("tracejudge")


def _case(cid: str, calls: list[tuple[str, str | None]], **extra: object) -> dict[str, object]:
    """A native case whose trace makes `calls` (name, error) in one step each."""
    steps = [{"tool_calls": [{"name": n, "arguments": {}, "error": e}]} for n, e in calls]
    return {"id": cid, "trace": {"steps": steps, "output": "done"}, **extra}


@tracejudge.metric
def no_failed_tools(case: Case, trace: Trace, *, allowed: int = 0) -> bool:
    """Passes when at most `allowed` tool calls failed."""
    return sum(c.failed for c in trace.tool_calls()) <= allowed


@tracejudge.metric(name="share_ok", threshold=0.5)
def ok_share(case: Case, trace: Trace) -> float:
    calls = trace.tool_calls()
    return sum(not c.failed for c in calls) / len(calls)


@tracejudge.metric
def explained(case: Case, trace: Trace, *, want: str) -> Score:
    hit = trace.output == want
    return Score(value=1.0 if hit else 0.25, reason=f"output {trace.output!r} vs {want!r}")


@tracejudge.metric
def anything(case: Case, trace: Trace, *, result: object = None) -> object:
    return result


def test_a_decorated_function_is_a_metric_class_with_a_params_model():
    two_failed = Case.model_validate(_case("c", [("a", "boom"), ("b", None), ("c", "bad")]))
    assert issubclass(no_failed_tools, tracejudge.Metric)
    assert no_failed_tools().key == "no_failed_tools" and no_failed_tools().cutoff == 1.0
    assert no_failed_tools().evaluate(two_failed) == Score(value=0.0, passed=False, reason="metric function no_failed_tools returned False")
    assert no_failed_tools(allowed=2, name="few").evaluate(two_failed).passed is True
    assert no_failed_tools(allowed=2, name="few").key == "few"
    with pytest.raises(ConfigError, match="allowed"):
        no_failed_tools(allowed="many")
    with pytest.raises(ConfigError, match="no_failed_tools: alowed: unknown parameter; did you mean allowed?"):
        no_failed_tools(alowed=1)

    share = ok_share()
    assert share.key == "share_ok" and share.cutoff == 0.5
    assert share.evaluate(two_failed) == Score(value=1 / 3, passed=False, reason="metric function ok_share returned 0.3333333333333333")
    assert ok_share(threshold=0.3).evaluate(two_failed).passed is True

    with pytest.raises(ConfigError, match="want: required parameter is missing"):
        explained()
    assert explained(want="done").evaluate(two_failed) == Score(value=1.0, passed=True, reason="output 'done' vs 'done'")
    assert explained(want="x").evaluate(two_failed).passed is False  # a Score without `passed` gets the threshold

    assert anything(result=None).evaluate(two_failed) == Score(value=None, reason="not computed: metric function anything returned None")
    assert anything(result=1.5).evaluate(two_failed).value is None
    assert "outside [0, 1]" in anything(result=1.5).evaluate(two_failed).reason
    assert "returned str" in anything(result="yes").evaluate(two_failed).reason
    assert anything(result=1).evaluate(two_failed).value == 1.0
    assert anything().evaluate(Case(id="no-trace")).reason == "not computed: the case has no trace"
    assert tracejudge.metric.__doc__ and no_failed_tools.__doc__ == "Passes when at most `allowed` tool calls failed."


def test_the_decorator_refuses_functions_that_cannot_be_metrics():
    with pytest.raises(TypeError, match=r"takes \(case, trace"):
        tracejudge.metric(lambda case: 1.0)
    with pytest.raises(TypeError, match="keyword-only"):

        @tracejudge.metric
        def positional_param(case: Case, trace: Trace, limit: int) -> bool:
            return True

    with pytest.raises(TypeError, match="'threshold' clashes"):

        @tracejudge.metric
        def clash(case: Case, trace: Trace, *, threshold: float = 0.1) -> bool:
            return True

    with pytest.raises(ValueError, match=r"threshold must be in \[0, 1\]"):
        tracejudge.metric(threshold=2.0)(lambda case, trace: 1.0)


@tracejudge.metric
def divides(case: Case, trace: Trace) -> float:
    return 1 / len(trace.tool_calls())


def test_a_raising_custom_metric_gets_null_and_the_exception_and_the_run_goes_on():
    cases = [_case("none", []), _case("one", [("a", None)]), _case("two", [("a", None), ("b", "x")])]
    report = tracejudge.evaluate(cases, [divides, no_failed_tools])
    assert [r.status.value for r in report.results] == ["ok", "ok", "ok"]
    raised = report.result("none").scores["divides"]
    assert raised.value is None and raised.passed is None
    assert raised.reason.startswith("metric raised ZeroDivisionError: division by zero (at ")
    source, first = inspect.getsourcelines(divides.fn)
    line = first + next(i for i, text in enumerate(source) if "1 / len" in text)
    assert raised.reason.endswith(f"test_custom_metrics.py:{line}, in divides)")
    assert raised.details == {"exception": "ZeroDivisionError"}
    assert report.result("none").scores["no_failed_tools"].value == 1.0
    assert report.result("one").scores["divides"].value == 1.0
    assert report.result("two").scores["divides"].value == 0.5
    figures = report.metrics["divides"]
    assert (figures.scored, figures.not_computed, figures.mean) == (2, 1, 0.75)
    assert [(f.case_id, f.metric) for f in report.failed()] == [("two", "divides"), ("two", "no_failed_tools")]


@tracejudge.metric
async def fans_out(case: Case, trace: Trace) -> float:
    async def lookup(name: str) -> None:
        raise KeyError(name)

    async with anyio.create_task_group() as tg:  # a metric that asks several things at once
        for call in trace.tool_calls():
            tg.start_soon(lookup, call.name)
    return 1.0


@tracejudge.metric
def groups(case: Case, trace: Trace) -> float:
    raise ExceptionGroup("checks", [ValueError("x"), OSError(2, "nofile")])  # built here, never raised alone


def test_a_custom_metric_raising_a_group_it_built_says_where_it_raised_it():
    raised = tracejudge.evaluate([_case("one", [("a", None)])], [groups]).result("one").scores["groups"]
    assert raised.reason.startswith("metric raised ValueError: x; FileNotFoundError: [Errno 2] nofile (at "), raised.reason
    source, first = inspect.getsourcelines(groups.fn)
    line = first + next(i for i, text in enumerate(source) if "raise ExceptionGroup" in text)
    assert raised.reason.endswith(f"test_custom_metrics.py:{line}, in groups)")
    assert raised.details == {"exception": "ValueError"}


def test_a_custom_metric_raising_inside_a_task_group_is_described_by_what_failed():
    # The group's own message ("unhandled errors in a TaskGroup (2 sub-exceptions)") said nothing of what went wrong,
    # and its place was anyio's, where the task group ends.
    report = tracejudge.evaluate([_case("two", [("a", None), ("b", "x")]), _case("none", [])], [fans_out])
    raised = report.result("two").scores["fans_out"]
    assert raised.value is None
    assert raised.reason.startswith("metric raised KeyError: 'a'; KeyError: 'b' (at "), raised.reason
    assert ", in lookup)" in raised.reason and "TaskGroup" not in raised.reason
    assert raised.details == {"exception": "KeyError"}
    assert report.result("none").scores["fans_out"].value == 1.0


@tracejudge.metric
async def slow_count(case: Case, trace: Trace, *, per_call: float = 0.25) -> float:
    await anyio.sleep(0.001)
    return min(1.0, per_call * len(trace.tool_calls()))


@tracejudge.metric
async def async_raises(case: Case, trace: Trace) -> float:
    await anyio.sleep(0)
    raise RuntimeError(f"no luck with {case.id}")


def test_async_metrics_are_awaited_in_the_score_stage():
    cases = [_case("one", [("a", None)]), _case("three", [("a", None), ("b", None), ("c", None)])]
    report = tracejudge.evaluate(cases, [slow_count(per_call=0.3, threshold=0.5), async_raises])
    assert report.result("one").scores["slow_count"] == Score(value=0.3, passed=False, reason="metric function slow_count returned 0.3")
    assert report.result("three").scores["slow_count"].value == 0.3 * 3  # as the function returned it (0.8999999999999999)
    assert report.result("three").scores["async_raises"].reason.startswith("metric raised RuntimeError: no luck with three (at ")
    # Outside an event loop the sync entry point runs the coroutine to completion.
    assert slow_count().evaluate(Case.model_validate(cases[0])).value == 0.25



_in_flight = {"now": 0, "peak": 0}


@tracejudge.metric
async def meets(case: Case, trace: Trace, *, company: int = 2) -> float:
    """1.0 once `company` calls of these metrics have been awaited at the same time; 0.0 if that took 5 s."""
    _in_flight["now"] += 1
    _in_flight["peak"] = max(_in_flight["peak"], _in_flight["now"])
    try:
        with anyio.move_on_after(5):
            while _in_flight["peak"] < company:
                await anyio.sleep(0.005)
            return 1.0
        return 0.0
    finally:
        _in_flight["now"] -= 1


@tracejudge.metric
async def meets_too(case: Case, trace: Trace, *, company: int = 2) -> float:
    return await meets.fn(case, trace, company=company)  # type: ignore[attr-defined]


def test_async_metrics_are_awaited_side_by_side_across_cases_and_within_a_case():
    # An async metric waits on I/O: awaited one at a time, every case would pay its round trip in turn.
    cases = [_case(f"c{i}", [("a", None)]) for i in range(6)]
    _in_flight.update(now=0, peak=0)
    report = tracejudge.evaluate(cases, [meets(company=6)])
    assert [report.result(f"c{i}").scores["meets"].value for i in range(6)] == [1.0] * 6
    # Two async metrics of one case, with a sync one between them: the scores keep the metrics' order.
    _in_flight.update(now=0, peak=0)
    report = tracejudge.evaluate(cases[:1], [meets(company=2), no_failed_tools, meets_too(company=2)])
    assert list(report.result("c0").scores) == ["meets", "no_failed_tools", "meets_too"]
    assert [s.value for s in report.result("c0").scores.values()] == [1.0, 1.0, 1.0]


PKG_METRICS = '''
from tracejudge import metric, Score


@metric
def no_failed_tools(case, trace, *, allowed: int = 0):
    failed = sum(c.failed for c in trace.tool_calls())
    return Score(value=1.0 if failed <= allowed else 0.0, reason=f"{failed} failed, {allowed} allowed")


@metric(threshold=0.5)
def explodes(case, trace):
    raise KeyError(case.id)


def plain_function(case, trace):
    return 1.0


NOT_A_METRIC = 3
'''


def _write_pkg(root: Path) -> None:
    pkg = root / "mypkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "metrics.py").write_text(PKG_METRICS)
    (pkg / "broken.py").write_text("raise ValueError('broken on purpose')\n")


def test_a_custom_metric_from_a_config_by_dotted_path_through_the_cli(tmp_path):
    _write_pkg(tmp_path)
    cases = [
        _case("clean", [("a", None)]),
        _case("one-failed", [("a", "timeout"), ("b", None)]),
        # This case tightens the run-level metric for itself, by the same dotted path.
        _case("strict", [("a", "timeout")], metrics=[{"type": "mypkg.metrics:no_failed_tools", "name": "few_failures", "allowed": 0}]),
    ]
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    (tmp_path / "run.yaml").write_text(
        textwrap.dedent(
            """\
            dataset: {path: cases.jsonl}
            metrics:
              - type: mypkg.metrics:no_failed_tools
                name: few_failures
                allowed: 1
              - {type: "mypkg.metrics:explodes"}
            run: {dir: out}
            """
        )
    )
    # No PYTHONPATH: the console script finds `mypkg` in the current directory, as `python -m` would.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = _forkserver.run([str(TRACEJUDGE), "run", "run.yaml", "--no-progress"], cwd=tmp_path, env=env, capture_output=True, text=True)
    # `explodes` raises on every case: the run goes on, and the gate fails on it (`assertions.max_metric_error_share`).
    assert proc.returncode == 1, proc.stderr
    assert "FAIL explodes max_metric_error_share: metric 'explodes' raised or timed out on 3 of 3 results" in proc.stdout
    results = {json.loads(line)["case_id"]: json.loads(line) for line in (tmp_path / "out" / "results.jsonl").read_text().splitlines()}
    assert results["clean"]["scores"]["few_failures"] == {"value": 1.0, "passed": True, "reason": "0 failed, 1 allowed", "details": None, "judge": None}
    assert results["one-failed"]["scores"]["few_failures"]["reason"] == "1 failed, 1 allowed"
    assert results["strict"]["scores"]["few_failures"] == {"value": 0.0, "passed": False, "reason": "1 failed, 0 allowed", "details": None, "judge": None}
    for r in results.values():
        assert r["status"] == "ok"
        assert r["scores"]["explodes"]["value"] is None
        assert r["scores"]["explodes"]["reason"].startswith(f"metric raised KeyError: '{r['case_id']}' (at ")
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["metrics"]["few_failures"]["mean"] == pytest.approx(2 / 3, abs=1e-6)
    assert summary["metrics"]["explodes"]["not_computed"] == summary["metrics"]["explodes"]["raised"] == 3


def test_report_rebuilds_a_custom_metrics_run_without_importing_its_module(tmp_path):
    # Reading a run directory never executes code: `tracejudge report` imported the custom metric's module the manifest
    # names (and failed as an internal error where it was not importable).
    _write_pkg(tmp_path)
    (tmp_path / "mypkg" / "metrics.py").write_text(PKG_METRICS + "\nimport pathlib\npathlib.Path('imported.marker').write_text('x')\n")
    (tmp_path / "cases.jsonl").write_text(json.dumps(_case("clean", [("a", None)])) + "\n")
    (tmp_path / "run.yaml").write_text("dataset: {path: cases.jsonl}\nmetrics:\n  - {type: mypkg.metrics:no_failed_tools, name: few}\n"
                                       "  - {type: mypkg.metrics:no_failed_tools}\n  - {type: ToolCalls}\nrun: {dir: out}\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = _forkserver.run([str(TRACEJUDGE), "run", "run.yaml", "--no-progress"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    before = json.loads((tmp_path / "out" / "summary.json").read_text())
    (tmp_path / "imported.marker").unlink()
    proc = _forkserver.run([str(TRACEJUDGE), "report", "out"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert not (tmp_path / "imported.marker").exists()  # the module was not imported
    after = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert list(after["metrics"]) == list(before["metrics"]) == ["few", "no_failed_tools", "ToolCalls"]
    assert {k: (m["mean"], m["pass_rate"]) for k, m in after["metrics"].items()} == {k: (m["mean"], m["pass_rate"]) for k, m in before["metrics"].items()}


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("nopkg.metrics:x", "custom metric 'nopkg.metrics:x': cannot import module 'nopkg.metrics': No module named 'nopkg' (searched PYTHONPATH, the config's folder and the current directory)"),
        ("mypkg.broken:x", "custom metric 'mypkg.broken:x': importing 'mypkg.broken' raised ValueError: broken on purpose"),
        ("mypkg.metrics:missing", "custom metric 'mypkg.metrics:missing': 'mypkg.metrics' has no attribute 'missing'"),
        ("mypkg.metrics:plain_function", "custom metric 'mypkg.metrics:plain_function' is a plain function, not a metric; decorate"),
        ("mypkg.metrics:NOT_A_METRIC", "custom metric 'mypkg.metrics:NOT_A_METRIC' is an instance of int, not a metric"),
        ("mypkg.metrics:", "custom metric 'mypkg.metrics:': expected `module:attribute`"),
    ],
)
def test_a_dotted_path_that_names_no_metric_is_a_config_error_naming_file_line_and_key(tmp_path, monkeypatch, kind, message):
    _write_pkg(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "cases.jsonl").write_text("")
    cfg = tmp_path / "run.yaml"
    cfg.write_text(f"dataset: {{path: cases.jsonl}}\nmetrics:\n  - {{type: ToolCalls}}\n  - type: '{kind}'\n")
    with pytest.raises(ConfigError) as err:
        tracejudge.load_config(cfg)
    assert str(err.value).startswith(f"{cfg}:4: metrics.1.type: {message}")


def test_a_custom_metric_parameter_is_validated_when_the_config_loads(tmp_path, monkeypatch):
    _write_pkg(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "cases.jsonl").write_text("")
    cfg = tmp_path / "run.yaml"
    cfg.write_text("dataset: {path: cases.jsonl}\nmetrics:\n  - type: mypkg.metrics:no_failed_tools\n    allowed: lots\n    typo: 1\n")
    with pytest.raises(ConfigError) as err:
        tracejudge.load_config(cfg)
    assert f"{cfg}:4: metrics.0.allowed: mypkg.metrics:no_failed_tools: Input should be a valid integer" in str(err.value)
    assert f"{cfg}:5: metrics.0.typo: mypkg.metrics:no_failed_tools: unknown parameter" in str(err.value)  # a line of its own


BAD_SCORES = '''
import tracejudge
from tracejudge import Score
from tracejudge.stages.score.base import Metric


@tracejudge.metric
def nan(case, trace):
    return Score(value=float("nan"), passed=False, reason="nan")


@tracejudge.metric
def big(case, trace):
    return Score(value=1.5, reason="big")


class Neg(Metric):
    def evaluate(self, case):
        return Score(value=-3.0, passed=True, reason="neg")
'''


@pytest.mark.parametrize("processes", [1, 2])
def test_a_score_valued_outside_0_1_or_nan_is_not_computed_and_run_and_report_agree(tmp_path: Path, processes: int) -> None:
    # A Score of NaN stopped the run in the fold (internal error, exit 3) after its results were written; the same command
    # then passed while `report` said INTERRUPTED. Scores of 1.5 and -3.0 were means of 1.5 and -3.0 (pass rate 100%).
    # Such a score is a bug in the metric: counted as raised (`metric failed: …`), it fails the gate by default.
    (tmp_path / "badscores.py").write_text(BAD_SCORES)
    (tmp_path / "c.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "input": "x", "trace": {"steps": [], "output": "o"}}) + "\n"
                                              for i in range(20)))
    (tmp_path / "c.yaml").write_text("dataset: {path: c.jsonl}\nmetrics: [{type: 'badscores:nan'}, {type: 'badscores:big'}, "
                                     f"{{type: 'badscores:Neg'}}, {{type: Contains, value: o}}]\nrun: {{dir: out, processes: {processes}}}\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    run = _forkserver.run([str(TRACEJUDGE), "run", "c.yaml", "--no-progress"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 1 and "verdict: FAIL" in run.stdout, run.stdout + run.stderr
    results = [json.loads(line) for line in (tmp_path / "out" / "results.jsonl").read_text().splitlines()]
    assert len(results) == 20
    for key, shown in (("nan", "nan"), ("big", "1.5"), ("Neg", "-3.0")):
        assert {r["scores"][key]["value"] for r in results} == {None}
        assert results[0]["scores"][key]["reason"] == f"metric failed: metric {key} returned a Score with value {shown}, outside [0, 1]"
        assert f"FAIL {key} max_metric_error_share" in run.stdout
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["complete"] and summary["metrics"]["Contains"]["mean"] == 1.0 and summary["metrics"]["big"]["scored"] == 0
    assert summary["metrics"]["big"]["raised"] == 20
    report = _forkserver.run([str(TRACEJUDGE), "report", "out"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert report.returncode == 1 and "verdict: FAIL" in report.stdout, report.stdout + report.stderr


@tracejudge.metric
def half_surrogate_reason(case: Case, trace: Trace) -> Score:
    return Score(value=1.0, reason="saw \ud800 alone")


@tracejudge.metric
def half_surrogate_raise(case: Case, trace: Trace) -> float:
    raise ValueError("bad \udfff text")


def _beside_tool_calls(tmp_path: Path, *metrics: object) -> tuple[object, dict]:
    """`tracejudge.evaluate` of one case with `ToolCalls` and `metrics`: the report and its result line, checked to be
    `ok`, its tags kept and `ToolCalls` computed (1.0)."""
    case = {"id": "c1", "tags": ["t"], "trace": {"steps": [{"tool_calls": [{"name": "a"}]}]}, "expected_tool_calls": [{"name": "a"}]}
    report = tracejudge.evaluate([case], [tracejudge.ToolCalls(), *metrics], run_dir=tmp_path / "run")
    line = json.loads((tmp_path / "run" / "results.jsonl").read_text())
    assert line["status"] == "ok" and line["tags"] == ["t"], line
    assert line["scores"]["ToolCalls"]["value"] == 1.0
    return report, line


def test_a_custom_metric_whose_text_holds_a_lone_surrogate_costs_only_that_text(tmp_path: Path) -> None:
    # The metric's own text, not the record, holds what UTF-8 cannot encode: the case keeps its status and its other
    # scores, and the half surrogate is written escaped, as JSON input spells it.
    report, line = _beside_tool_calls(tmp_path, half_surrogate_reason(), half_surrogate_raise())
    assert line["scores"]["half_surrogate_reason"]["reason"] == "saw \\ud800 alone"
    assert line["scores"]["half_surrogate_raise"]["reason"].startswith("metric raised ValueError: bad \\udfff text (at ")
    assert report.results[0].status == "ok"


@tracejudge.metric
def half_surrogate_details(case: Case, trace: Trace) -> Score:
    return Score(value=0.5, reason="details hold it", details={"why": ["fine", "saw \udc80"], "k\ud800": 1})


class HalfSurrogateClass(tracejudge.Metric):
    """A class-based metric whose reason quotes a half surrogate (not escaped by the `@metric` wrapper)."""

    def evaluate(self, case: Case) -> Score:
        return Score(value=1.0, reason="class saw \ud800")


def test_a_metric_whose_details_or_class_reason_hold_a_lone_surrogate_costs_only_that_text(tmp_path: Path) -> None:
    # As for a function metric's reason above: the text is written escaped, the case keeps its status and its scores
    # (before, the whole case became invalid_input blamed on its record, its other scores lost).
    report, line = _beside_tool_calls(tmp_path, half_surrogate_details(), HalfSurrogateClass())
    assert line["scores"]["half_surrogate_details"]["value"] == 0.5
    assert line["scores"]["half_surrogate_details"]["details"] == {"why": ["fine", "saw \\udc80"], "k\\ud800": 1}
    assert line["scores"]["HalfSurrogateClass"]["reason"] == "class saw \\ud800"
    assert report.results[0].status == "ok"
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["metrics"]["half_surrogate_details"]["mean"] == 0.5



_NESTED_METRICS = """
import tracejudge
from tracejudge import Score


def _nested(levels):
    top = inner = {}
    for _ in range(levels - 1):
        inner["n"] = {}
        inner = inner["n"]
    inner["s"] = "bottom"
    return top


@tracejudge.metric
def nested(case, trace, *, levels: int = 2):
    return Score(value=1.0, reason="nested", details=_nested(levels))
"""


@pytest.mark.parametrize("processes", [1, 2])
def test_a_metric_whose_details_nest_too_deeply_costs_only_that_score(tmp_path: Path, processes: int) -> None:
    # Before: the masking walk (in process) or the pickle back from a worker hit the recursion limit: an internal error
    # that stopped the run. The limit is what a result line may nest and still be read back (`load.depth.MAX_DEPTH`).
    from tracejudge.core.records import CaseResult
    from tracejudge.stages.load.depth import MAX_DEPTH

    deepest = MAX_DEPTH - 4  # with the line, `scores` and the score: a level within MAX_DEPTH, which the result model reads back
    (tmp_path / "nestedmetric.py").write_text(_NESTED_METRICS)
    case = {"id": "c1", "trace": {"steps": [{"tool_calls": [{"name": "a"}]}]}, "expected_tool_calls": [{"name": "a"}]}
    (tmp_path / "cases.jsonl").write_text(json.dumps(case) + "\n")
    (tmp_path / "c.yaml").write_text(
        "dataset: {path: cases.jsonl}\nmetrics:\n  - {type: ToolCalls}\n"
        f"  - {{type: 'nestedmetric:nested', name: fits, levels: {deepest}}}\n"
        f"  - {{type: 'nestedmetric:nested', name: one_more, levels: {deepest + 1}}}\n"
        "  - {type: 'nestedmetric:nested', name: far, levels: 5000}\n"
        f"run: {{dir: run, processes: {processes}}}\n")
    out = _forkserver.run([str(TRACEJUDGE), "run", "c.yaml", "--no-progress"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    # The two that nest too deeply are their metric's failure (`raised`), which fails the gate: the run itself goes on.
    assert out.returncode == 1 and "one_more max_metric_error_share" in out.stdout, out.stdout + out.stderr
    line = CaseResult.model_validate_json((tmp_path / "run" / "results.jsonl").read_text())  # read back as written
    assert line.status == "ok" and line.scores["ToolCalls"].value == 1.0
    assert line.scores["fits"].value == 1.0 and line.scores["fits"].details["n"]["n"]["n"] is not None
    for key in ("one_more", "far"):
        assert line.scores[key].value is None and f"nested more than {deepest} levels deep" in line.scores[key].reason
