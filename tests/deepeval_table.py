"""Cases for `DeepEvalToolCorrectness` with the values deepeval's `ToolCorrectnessMetric` computes for them.

A row: `(id, metric parameters, expected tools, tools called, deepeval's score)`;
a tool is `(name, input_parameters or None, output or None)`. The scores were
computed by deepeval 4.3.1 offline (no `available_tools`, so no judge call);
`test_deepeval_parity.py` recomputes them with deepeval when it is installed.
"""

from __future__ import annotations

from typing import Any

IP = ["input_parameters"]
OUT = ["output"]
BOTH = ["input_parameters", "output"]


def offline_model() -> Any:
    """A deepeval model that fails the test if called: tool correctness without `available_tools` asks none. deepeval
    is imported here, so the table loads without it (set `DEEPEVAL_TELEMETRY_OPT_OUT` before calling)."""
    from deepeval.models import DeepEvalBaseLLM

    class NeverCalled(DeepEvalBaseLLM):
        def __init__(self) -> None:
            pass

        def load_model(self) -> None:
            return None

        def get_model_name(self) -> str:
            return "offline"

        def generate(self, *args: Any, **kwargs: Any) -> Any:
            raise AssertionError("tool correctness without available_tools calls no model")

        async def a_generate(self, *args: Any, **kwargs: Any) -> Any:
            raise AssertionError("tool correctness without available_tools calls no model")

    return NeverCalled()


def t(name: str, args: dict[str, Any] | None = None, output: Any = None) -> tuple[str, dict[str, Any] | None, Any]:
    return (name, args, output)


ROWS: list[tuple[str, dict[str, Any], list[Any], list[Any], float]] = [
    ("names-any-order", {}, [t("a"), t("b")], [t("b"), t("a")], 1.0),
    ("names-one-missing", {}, [t("a"), t("b"), t("c")], [t("a"), t("c")], 2 / 3),
    ("names-extra-calls-free", {}, [t("a")], [t("a"), t("b"), t("c")], 1.0),
    ("nothing-expected-nothing-called", {}, [], [], 1.0),
    ("nothing-expected-one-called", {}, [], [t("a")], 0.0),
    ("expected-none-called", {}, [t("a")], [], 0.0),
    ("duplicate-equal-calls-used-up-together", {}, [t("a"), t("a")], [t("a"), t("a")], 0.5),
    ("duplicate-calls-differing-args", {}, [t("f", {"q": 1}), t("f", {"q": 2})], [t("f", {"q": 1}), t("f", {"q": 2})], 1.0),
    ("duplicate-equal-calls-with-args", {"evaluation_params": IP}, [t("f", {"q": 1}), t("f", {"q": 1})], [t("f", {"q": 1}), t("f", {"q": 1})], 0.5),
    ("args-equal", {"evaluation_params": IP}, [t("f", {"a": 1, "b": 2})], [t("f", {"b": 2, "a": 1})], 1.0),
    ("args-half", {"evaluation_params": IP}, [t("f", {"a": 1, "b": 2})], [t("f", {"a": 1, "b": 3})], 0.5),
    ("args-extra-key", {"evaluation_params": IP}, [t("f", {"a": 1})], [t("f", {"a": 1, "c": 2})], 0.5),
    ("args-missing-key", {"evaluation_params": IP}, [t("f", {"a": 1, "b": 2, "c": 3})], [t("f", {"a": 1})], 1 / 3),
    # Six twelfths added one at a time fall short of 0.5 by a bit: deepeval fails that at its default threshold of 0.5.
    ("args-just-under-threshold", {"evaluation_params": IP}, [t("f", {f"k{i}": i for i in range(9)})],
     [t("f", {**{f"k{i}": i for i in range(6)}, "x0": 0, "x1": 1, "x2": 2})], 0.49999999999999994),
    ("args-just-under-own-threshold", {"evaluation_params": IP, "threshold": 0.8}, [t("f", {f"k{i}": i for i in range(8)})],
     [t("f", {**{f"k{i}": i for i in range(8)}, "x0": 0, "x1": 1})], 0.7999999999999999),
    ("args-nested-partial", {"evaluation_params": IP}, [t("f", {"a": {"x": 1, "y": 2}, "b": 1})], [t("f", {"a": {"x": 1, "y": 3}, "b": 1})], 0.75),
    ("args-nested-list-no-credit", {"evaluation_params": IP}, [t("f", {"a": [1, 2], "b": 1})], [t("f", {"a": [1, 3], "b": 1})], 0.5),
    ("args-python-equality", {"evaluation_params": IP}, [t("f", {"a": 1, "b": 2.0})], [t("f", {"a": True, "b": 2})], 1.0),
    ("args-best-call-wins", {"evaluation_params": IP}, [t("f", {"a": 1, "b": 2})], [t("f", {"a": 9, "b": 2}), t("f", {"a": 1, "b": 2})], 1.0),
    ("args-ignored-without-param", {}, [t("f", {"a": 1})], [t("f", {"a": 2})], 1.0),
    ("args-two-expected-partial", {"evaluation_params": IP}, [t("f", {"a": 1, "b": 2}), t("g", {"x": 1})], [t("g", {"x": 2}), t("f", {"a": 1, "b": 2})], 0.5),
    ("output-equal", {"evaluation_params": OUT}, [t("f", None, "sunny")], [t("f", None, "sunny")], 1.0),
    ("output-differs", {"evaluation_params": OUT}, [t("f", None, "sunny")], [t("f", None, "rain")], 0.0),
    ("args-and-output", {"evaluation_params": BOTH}, [t("f", {"a": 1, "b": 2}, "ok"), t("g", {"x": 1}, "ok")], [t("f", {"a": 1, "b": 5}, "ok"), t("g", {"x": 1}, "no")], 0.25),
    ("ordering-in-order", {"should_consider_ordering": True}, [t("a"), t("b"), t("c")], [t("a"), t("b"), t("c")], 1.0),
    ("ordering-rotated", {"should_consider_ordering": True}, [t("a"), t("b"), t("c")], [t("c"), t("a"), t("b")], 2 / 3),
    ("ordering-reversed", {"should_consider_ordering": True}, [t("a"), t("b"), t("c")], [t("c"), t("b"), t("a")], 1 / 3),
    ("ordering-extra-between", {"should_consider_ordering": True}, [t("a"), t("c")], [t("a"), t("b"), t("c")], 1.0),
    ("ordering-weighted-args", {"should_consider_ordering": True, "evaluation_params": IP}, [t("f", {"a": 1, "b": 2}), t("g", {"x": 1})], [t("f", {"a": 1, "b": 3}), t("g", {"x": 1})], 0.75),
    ("ordering-weighted-crossed", {"should_consider_ordering": True, "evaluation_params": IP}, [t("f", {"a": 1, "b": 2}), t("g", {"x": 1})], [t("g", {"x": 1}), t("f", {"a": 1, "b": 3})], 0.5),
    ("ordering-nothing-expected", {"should_consider_ordering": True}, [], [t("a")], 0.0),
    ("exact-equal", {"should_exact_match": True}, [t("a"), t("b")], [t("a"), t("b")], 1.0),
    ("exact-swapped", {"should_exact_match": True}, [t("a"), t("b")], [t("b"), t("a")], 0.0),
    ("exact-extra-call", {"should_exact_match": True}, [t("a")], [t("a"), t("a")], 0.0),
    ("exact-args-differ", {"should_exact_match": True, "evaluation_params": IP}, [t("f", {"a": 1})], [t("f", {"a": 2})], 0.0),
    ("exact-args-equal", {"should_exact_match": True, "evaluation_params": IP}, [t("f", {"a": 1})], [t("f", {"a": 1.0})], 1.0),
    ("exact-both-empty", {"should_exact_match": True}, [], [], 1.0),
    ("exact-wins-over-ordering", {"should_exact_match": True, "should_consider_ordering": True}, [t("a"), t("b")], [t("a"), t("c"), t("b")], 0.0),
    ("strict-below-threshold", {"strict_mode": True}, [t("a"), t("b")], [t("a")], 0.0),
    ("strict-full", {"strict_mode": True}, [t("a"), t("b")], [t("b"), t("a")], 1.0),
    # Strict mode makes the threshold 1 whatever `threshold` says (deepeval: `self.threshold = 1 if strict_mode else threshold`): 0 fails.
    ("strict-overrides-a-zero-threshold", {"strict_mode": True, "threshold": 0.0}, [t("a"), t("b")], [t("a")], 0.0),
    ("threshold-partial-pass", {"threshold": 0.6}, [t("a"), t("b"), t("c")], [t("a"), t("c")], 2 / 3),
    # deepeval's tests/test_metrics/test_tool_correctness_metric.py (mixed mapping keys, with JSON's string keys): a
    # mapping argument or output equal in another key order matches, one whose values all differ scores 0.
    ("mapping-argument-key-order", {"evaluation_params": BOTH}, [t("lookup", {"lookup": {"1": "one", "mode": "fast"}})],
     [t("lookup", {"lookup": {"mode": "fast", "1": "one"}})], 1.0),
    ("mapping-argument-values-differ", {"evaluation_params": BOTH}, [t("lookup", {"lookup": {"1": "one", "mode": "fast"}})],
     [t("lookup", {"lookup": {"mode": "slow", "1": "two"}})], 0.0),
    ("mapping-output-key-order", {"evaluation_params": BOTH}, [t("lookup", None, {"1": "one", "mode": "fast"})],
     [t("lookup", None, {"mode": "fast", "1": "one"})], 1.0),
    ("mapping-output-values-differ", {"evaluation_params": BOTH}, [t("lookup", None, {"1": "one", "mode": "fast"})],
     [t("lookup", None, {"mode": "slow", "1": "two"})], 0.0),
    # deepeval's tests/test_tool_correctness.py: nine cases scored with ToolCorrectnessMetric(threshold=0.5) on input
    # parameters and output (it also listed ToolCallParams.TOOL, which deepeval 4.3.1 no longer has: names always count).
    *[(f"tc-file-{rid}", {"threshold": 0.5, "evaluation_params": BOTH}, e, c, v) for rid, e, c, v in [
        ("exact-match", [t("tool1", {"a": 1, "b": 4, "c": 2}, "x")], [t("tool1", {"a": 1, "b": 2, "c": 2}, "x")], 2 / 3),
        ("tool-name-mismatch", [t("tool1", {"a": 1, "b": 2}, "x")], [t("tool2", {"a": 1, "b": 2}, "x")], 0.0),
        ("input-parameter-mismatch", [t("tool1", {"a": 1, "b": 2}, "x")], [t("tool1", {"a": 2, "b": 2}, "x")], 0.5),
        ("output-mismatch", [t("tool1", {"a": 1, "b": 2}, "x")], [t("tool1", {"a": 1, "b": 2}, "y")], 0.0),
        ("extra-tools-called", [t("tool1", {"a": 1, "b": 2}, "x")], [t("tool1", {"a": 1, "b": 2}, "x"), t("tool2", {"c": 3}, "y")], 1.0),
        ("missing-tools", [t("tool1", {"a": 1, "b": 2}, "x")], [], 0.0),
        ("correct-ordering", [t("tool1", {"a": 1, "b": 2}, "x"), t("tool2", {"c": 3}, "y")],
         [t("tool1", {"a": 1, "b": 2}, "x"), t("tool2", {"c": 3}, "y")], 1.0),
        ("out-of-order-tools", [t("tool1", {"a": 1, "b": 2}, "x"), t("tool2", {"c": 3}, "y")],
         [t("tool2", {"c": 3}, "y"), t("tool1", {"a": 1, "b": 2}, "x")], 1.0),
        ("missing-and-out-of-order", [t("tool1", {"a": 1, "b": 2}, "x"), t("tool2", {"c": 3}, "y")], [t("tool2", {"c": 3}, "y")], 0.5),
    ]],
]
