"""The pytest plugin as users meet it: auto-loaded, its assertions passing and failing with readable messages."""

from __future__ import annotations

import json
import textwrap

import pytest
from _peer_plugins import peer_plugins_off

SETUP = '''
import pytest
import tracejudge as tj
from tracejudge import assert_called_tool, assert_score, assert_trajectory

CASE = tj.Case.model_validate({
    "id": "weather-1",
    "expected_tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}],
    "trace": {"steps": [
        {"tool_calls": [{"name": "search", "arguments": {"q": "weather in Paris"}}]},
        {"tool_calls": [{"name": "get_weather", "arguments": {"city": "paris", "unit": "C"}}]},
        {"tool_calls": [{"name": "summarize", "arguments": {}}]},
    ]},
})
'''


def _run(pytester: pytest.Pytester, body: str) -> pytest.RunResult:
    pytester.makepyfile(test_agent=SETUP + textwrap.dedent(body))
    # Hypothesis's plugin imports (and assertion-rewrites) most of hypothesis in every inner session: seconds each.
    # In a fresh process, with the peers' plugins off. In-process, pytester drops from sys.modules whatever an inner
    # session imported: the next session then failed on a second numpy (phoenix's plugin imports it) or on two
    # copies of one of our classes ("expected a Case …, got Case"), unless an earlier test of the same worker had
    # imported those modules first, which hid it in the whole suite.
    return pytester.runpytest_subprocess(*peer_plugins_off())


def _has_lines(result: pytest.RunResult, *lines: str) -> None:
    """`lines` appear in pytest's output consecutively, exactly as given."""
    out = result.outlines
    for start in range(len(out)):
        if out[start : start + len(lines)] == list(lines):
            return
    raise AssertionError("not found in the output:\n" + "\n".join(lines) + "\n--- output:\n" + "\n".join(out))


def test_assert_called_tool_passes_and_fails_with_the_closest_call(pytester):
    result = _run(
        pytester,
        """
        def test_pass():
            assert_called_tool(CASE, "get_weather", {"city": {"$regex": "(?i)^paris$"}})
            assert_called_tool(CASE.trace, "summarize")

        def test_fail():
            assert_called_tool(CASE, "get_weather", {"city": "Paris"})
        """,
    )
    result.assert_outcomes(passed=1, failed=1)
    _has_lines(
        result,
        'E       AssertionError: expected a call get_weather({"city":"Paris"}) (arguments=subset), but none matched',
        "E         calls made (3):",
        'E           #0 (step 0) search({"q":"weather in Paris"})',
        'E           #1 (step 1) get_weather({"city":"paris","unit":"C"})',
        "E           #2 (step 2) summarize({})",
        'E         ToolCalls: matched 0/1 expected and 0/1 actual calls (arguments=subset, any_order): precision=0.000, recall=0.000, F1=0.000; '
        'missing: [0] get_weather({"city":"Paris"}) (closest: call #1, step 1: city: expected "Paris", got "paris"); '
        'unexpected: #1 (step 1) get_weather({"city":"paris","unit":"C"}); '
        "in order, first divergence at the 1st call (trace call #1, step 1, tool 'get_weather'): "
        'expected [0] get_weather({"city":"Paris"}), got get_weather({"city":"paris","unit":"C"}) (city: expected "Paris", got "paris")',
    )
    # The assertion's own frames are hidden: the traceback ends in the user's test.
    assert "pipeline/assertions.py" not in result.stdout.str()


def test_assert_trajectory_passes_and_fails_at_the_diverging_call(pytester):
    result = _run(
        pytester,
        """
        def test_pass():
            assert_trajectory(CASE, ["search", "summarize"], order="in_order")
            assert_trajectory(CASE, ["summarize", "search"], order="any_order")
            assert_trajectory(CASE, ["search", "get_weather", "summarize"], order="exact")

        def test_fail_order():
            assert_trajectory(CASE, ["summarize", "search"], order="in_order")

        def test_fail_extra():
            assert_trajectory(CASE, ["search", "summarize", "translate"], order="in_order", allow_extra=False)
        """,
    )
    result.assert_outcomes(passed=1, failed=2)
    _has_lines(
        result,
        "E       AssertionError: trajectory does not match (order=in_order, extra calls allowed)",
        "E         expected: ['summarize', 'search']",
        "E         actual:   ['search', 'get_weather', 'summarize']",
        "E         TrajectoryMatch: LCS=1, precision=1/3=0.333, recall=1/2=0.500, F1=0.400; score=recall=0.500 "
        "(expected: ['summarize', 'search'], actual: ['search', 'get_weather', 'summarize']); "
        "first divergence at the 1st call (trace call #0, step 0) search({\"q\":\"weather in Paris\"}): expected 'summarize', got 'search'",
    )
    _has_lines(
        result,
        "E       AssertionError: trajectory does not match (order=in_order, no extra calls)",
        "E         expected: ['search', 'summarize', 'translate']",
        "E         actual:   ['search', 'get_weather', 'summarize']",
        "E         never called: 'translate'",
        "E         not expected: 'get_weather'",
    )


def test_assert_score_and_the_tracejudge_fixture(pytester):
    pytester.makefile(".yaml", judge="judge: {provider: simulator, model: tiny-judge}\nlimits: {rpm: 7}\n")
    pytester.makeini("[pytest]\ntracejudge_config = judge.yaml\n")
    result = _run(
        pytester,
        """
        from pathlib import Path

        @pytest.fixture
        def result(tracejudge):
            return tracejudge.evaluate_case(CASE, [tj.ToolCalls(arguments="exact"), tj.ToolCalls(name="loose", arguments="ignore", score="recall")])

        def test_fixture_settings(tracejudge, tmp_path):
            cache = Path(tracejudge.defaults["cache"]["dir"])
            assert cache.is_dir() and cache.parts[-3:] == (".pytest_cache", "d", "tracejudge")
            assert tracejudge.defaults["judge"] == {"provider": "simulator", "model": "tiny-judge"}
            report = tracejudge.evaluate([CASE], [tj.ToolCalls()], run_dir=tmp_path / "run")
            assert report.results[0].case_id == "weather-1"
            Path("seen-manifest.json").write_text((tmp_path / "run" / "manifest.json").read_text())

        def test_pass(result):
            assert_score(result, "loose", at_least=0.5)
            assert_score(result, "loose")
            assert_score(result, "ToolCalls", at_most=0.5)
            assert_score(CASE, tj.ToolCalls(arguments="ignore"), at_least=0.5)

        def test_fail_bound(result):
            assert_score(result, "ToolCalls", at_least=0.8)

        def test_fail_missing(result):
            assert_score(result, "task_completion", at_least=0.8)

        def test_fail_report():
            report = tj.evaluate([CASE], [tj.ToolCalls()])
            assert_score(report, "ToolCalls")
        """,
    )
    result.assert_outcomes(passed=2, failed=3)
    out = result.stdout.str()
    assert (
        "E       AssertionError: ToolCalls (case 'weather-1', trial 0) = 0.000, below at_least=0.8: "
        "matched 0/1 expected and 0/3 actual calls (arguments=exact, any_order): precision=0.000, recall=0.000, F1=0.000; "
        'missing: [0] get_weather({"city":"Paris"}) (closest: call #1, step 1: city: expected "Paris", got "paris"); '
    ) in out
    _has_lines(result, "E       AssertionError: case 'weather-1', trial 0 has no score 'task_completion'; it has ['ToolCalls', 'loose']")
    _has_lines(result, "E       AssertionError: mean ToolCalls over 1 results = 0.000 did not pass its threshold: 1 failing")
    assert "E           weather-1 (trial 0): matched 0/1 expected and 0/3 actual calls (arguments=subset, any_order)" in out
    config = json.loads((pytester.path / "seen-manifest.json").read_text())["config"]
    assert config["judge"]["model"] == "tiny-judge" and config["limits"]["rpm"] == 7
    assert config["cache"]["dir"].endswith("/.pytest_cache/d/tracejudge")


def test_the_plugin_is_auto_loaded_by_a_fresh_pytest_process(pytester):
    pytester.makepyfile(test_fixture="def test_it(tracejudge):\n    assert type(tracejudge).__name__ == 'Evaluator'\n")
    # The peers' plugins are switched off by name (deepeval's alone imports for tens of CPU-seconds); ours is
    # not named anywhere, so the `tracejudge` fixture can only come from its pytest11 entry point.
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *peer_plugins_off())
    result.assert_outcomes(passed=1)


def test_called_tool_on_a_case_result_says_what_to_pass(pytester):
    result = _run(
        pytester,
        """
        def test_wrong_kind():
            res = tj.evaluate([CASE], [tj.ToolCalls()]).results[0]
            assert_called_tool(res, "search")
        """,
    )
    result.assert_outcomes(failed=1)
    _has_lines(result, "E       TypeError: assert_called_tool looks at tool calls: pass the Case (or its Trace), not a CaseResult, which holds only scores")
