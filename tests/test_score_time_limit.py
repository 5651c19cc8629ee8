"""`score_case` bounds each metric call of a case by `run.metric_timeout_s`, with one alarm armed per case.

Real `SIGALRM`s on the main thread: calls that together run past the limit, each within it, are
all kept; a call that never returns is cut at the limit and the metrics after it are still bounded.
"""

from __future__ import annotations

import signal
import time

import pytest

from tracejudge.core.records import Case, Score
from tracejudge.stages.score import Metric, score_case, time_limit

LIMIT_S = 1.0


class Sleeps(Metric):
    """Sleeps `seconds` (wall clock, in short naps a signal interrupts), then scores 1.0."""

    seconds: float

    def evaluate(self, case: Case) -> Score:
        end = time.monotonic() + self.seconds
        while time.monotonic() < end:
            try:
                time.sleep(min(0.05, max(0.0, end - time.monotonic())))
            except Exception:  # a metric swallowing what it can must still be cut
                pass
        return Score(value=1.0, passed=True, reason="slept")


@pytest.fixture
def limit_1s():
    before = time_limit.seconds()
    time_limit.set_default(LIMIT_S)
    yield
    time_limit.set_default(before)


def test_each_call_gets_the_whole_limit_even_when_the_case_runs_longer(limit_1s):
    case = Case(id="c", trace={"steps": []})
    metrics = [Sleeps(name=f"m{i}", seconds=0.6 * LIMIT_S) for i in range(3)]
    scores = score_case(case, metrics)
    assert [s.value for s in scores.values()] == [1.0, 1.0, 1.0]


def test_calls_that_never_return_are_cut_and_the_next_ones_stay_bounded(limit_1s):
    case = Case(id="c", trace={"steps": []})
    metrics = [Sleeps(name="quick", seconds=0.0), Sleeps(name="hangs", seconds=3600), Sleeps(name="also", seconds=3600),
               Sleeps(name="after", seconds=0.0)]
    previous = signal.getsignal(signal.SIGALRM)
    scores = score_case(case, metrics)
    assert scores["quick"].value == 1.0 and scores["after"].value == 1.0
    for key in ("hangs", "also"):
        assert scores[key].value is None and scores[key].reason.startswith(f"metric_timeout: metric {key} did not return within 1 s")
    # Nothing is left armed, and the handler the process had is back.
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert signal.getsignal(signal.SIGALRM) == previous


def test_cases_scored_across_one_alarm_are_each_bounded_and_nothing_stays_armed_after(limit_1s):
    case = Case(id="c", trace={"steps": []})
    previous = signal.getsignal(signal.SIGALRM)
    with time_limit.across_cases():
        first = score_case(case, [Sleeps(name="quick", seconds=0.0), Sleeps(name="hangs", seconds=3600)])
        # Between cases the alarm stays armed, for the next case's calls.
        assert signal.getitimer(signal.ITIMER_REAL)[0] > 0
        # Calls that run past the limit together, each within it, since the alarm was armed.
        second = score_case(case, [Sleeps(name=f"m{i}", seconds=0.6 * LIMIT_S) for i in range(2)])
        time_limit.set_default(0.5)  # a limit set meanwhile bounds the next calls
        third = score_case(case, [Sleeps(name="slow", seconds=0.8), Sleeps(name="after", seconds=0.0)])
    assert first["quick"].value == 1.0 and first["hangs"].reason.startswith("metric_timeout: metric hangs did not return within 1 s")
    assert [s.value for s in second.values()] == [1.0, 1.0]
    assert third["slow"].reason.startswith("metric_timeout: metric slow did not return within 0.5 s") and third["after"].value == 1.0
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert signal.getsignal(signal.SIGALRM) == previous


_HANDLERS: list = []


class AlarmHandler(Metric):
    """Notes the `SIGALRM` handler in place while it is called (the watch its case is bounded by), then scores 1.0."""

    def evaluate(self, case: Case) -> Score:
        _HANDLERS.append(signal.getsignal(signal.SIGALRM))
        return Score(value=1.0, passed=True, reason="noted")


def test_the_cases_of_a_chunk_scored_in_process_share_one_alarm(limit_1s):
    import anyio

    from tracejudge.core.config import DatasetConfig
    from tracejudge.engine import runner
    from tracejudge.engine.executors.base import CpuJob
    from tracejudge.stages.load import RawRecord

    job = CpuJob(format_name="native", dataset=DatasetConfig(path=None), metric_specs=None, metrics=[AlarmHandler(name="alarm")],
                 merge=runner._merge_case_metrics, score=True, keep_case=False, render_keys=None)
    chunk = [RawRecord("cases.jsonl", i + 1, f'{{"id": "c{i}", "trace": {{"steps": []}}}}\n'.encode()) for i in range(3)]
    previous = signal.getsignal(signal.SIGALRM)
    _HANDLERS.clear()
    out = anyio.run(job.arun, chunk)
    assert [item.scores["alarm"].value for item in out] == [1.0, 1.0, 1.0]
    # One watch (armed once, as a worker's chunk is) bounded every case's calls: not one armed and disarmed per case.
    assert len({id(handler.__self__) for handler in _HANDLERS}) == 1
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert signal.getsignal(signal.SIGALRM) == previous
