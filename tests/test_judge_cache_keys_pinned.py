"""Judge cache keys are pinned: a cache written by an earlier version still answers a re-run.

A cache key is the sha256 of the request's components, the rendered prompt
among them (`tracejudge.llm.cache`), so any change to how a case is rendered
— a faster renderer included — changes every key and turns a warm re-run
into a cold one. These keys were computed by the renderer the caches on disk
were written with, for cases that take every rendering path: plain text,
JSON given as objects and as strings (compacted, with repeated results and
lists of same-keyed objects), quotes, backslashes and padding, arguments that
are not JSON, errors and calls without a result, marker-like lines and
non-ASCII text. A deliberate prompt change bumps the metric's
`prompt_version` and updates these values with it.
"""

from __future__ import annotations

import pytest
from tracejudge.core.config import JudgeConfig
from tracejudge.core.records import Case
from tracejudge.llm.cache import cache_key
from tracejudge.stages.judge.client import key_components
from tracejudge.stages.judge.fit import fit_request
from tracejudge.stages.judge.metrics import Rubric, TaskCompletion, ToolArgumentAccuracy

CASES = {
    "plain": {"id": "a", "input": "Book a flight to Paris.", "trace": {"steps": [{"thought": "look it up", "tool_calls": [{"name": "search", "arguments": {"to": "Paris", "n": 2}, "result": "two flights found"}]}], "output": "Booked AF12."}},
    "structured": {"id": "b", "input": {"ask": "refund", "order": 7}, "trace": {"steps": [
        {"tool_calls": [{"name": "get", "arguments": {"ids": [1, 2], "opts": {"deep": True, "k": None}}, "result": "[{\"a\": 1, \"b\": \"x, y\"}, {\"a\": 2, \"b\": \"z\"}]"},
                        {"name": "get", "arguments": {"ids": [3]}, "result": {"path": "C:\\tmp\\b", "note": " padded ", "q": "say \"hi\""}}]},
        {"tool_calls": [{"name": "again", "arguments": {}, "result": "[{\"a\": 1, \"b\": \"x, y\"}, {\"a\": 2, \"b\": \"z\"}]"}], "output": "partial"},
        {"tool_calls": [{"name": "fail", "arguments": "not json {", "error": "timeout"}, {"name": "none", "arguments": {"x": 1.5}}]}], "output": "Refunded order 7."}},
    "markers": {"id": "c", "input": "x", "trace": {"steps": [{"thought": "== data begin\n====DATA fake END ====", "tool_calls": [{"name": "t", "arguments": {"s": "a\\b"}, "result": "ünïcödé – text; with: punctuation"}]}], "output": "done"}},
}
METRICS = {"Rubric": lambda: Rubric(criteria="The agent did what the user asked."), "TaskCompletion": TaskCompletion,
           "ToolArgumentAccuracy": ToolArgumentAccuracy}

PINNED = {
    "plain/Rubric": "3f1e2f5d396cf0e65018b1134c85f00854c486d34c3881d9feebd65d6429271e",
    "plain/TaskCompletion": "0e44e62809340a873e59ed2afb99e5c7f292ef70b95ff1da2c0e9cfff03bca0b",
    "plain/ToolArgumentAccuracy": "335864c94477ce4182467acdacd636ba257e725eff747e7f3c4bb2af8eda6853",
    "structured/Rubric": "f918ca2d1fa994f38335a5f567856536ddfa27a59548761d2b3d9bfe87a8d8fe",
    "structured/TaskCompletion": "00bfc649b7070e99f147a3049ae0d192e78dc63682efe2ee12be11b7eebd5550",
    "structured/ToolArgumentAccuracy": "557af0e87c146c87aa2f7be5f335f539deb079a3ec2cf89c8b4a94d1280be2f4",
    "markers/Rubric": "f0510f58e064975669cae6e38aa5f5e830888b757095281cb3023c6718082696",
    "markers/TaskCompletion": "14249538e1083ce61bbcf519a630e5b74102b63eda74439fba4d3fdfdf55daa8",
    "markers/ToolArgumentAccuracy": "7b4b5aa445ede4153367692655a15d79b132f64f5c662874c0eb9b28f286c276",
}


@pytest.mark.parametrize("name", sorted(PINNED))
def test_the_cache_key_of_each_rendering_is_what_earlier_versions_wrote(name: str) -> None:
    case_name, metric_name = name.split("/")
    metric = METRICS[metric_name]()
    plan = metric.plan(Case.model_validate(CASES[case_name]))
    cfg = JudgeConfig(provider="openai", model="gpt-4o-mini")
    fitted = fit_request(plan, plan.questions, cfg)
    assert fitted.fits
    assert cache_key(key_components(cfg.provider, "http://x/v1", fitted.req, plan.prompt_version, metric.rubric, 0)) == PINNED[name]
