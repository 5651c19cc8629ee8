"""MLflow's smolagents autolog (`mlflow.smolagents.autolog()`): the shapes of its tool and agent spans.

MLflow wraps smolagents' `Tool.__call__` and `MultiStepAgent.run` (also each model's `__call__` and the agents'
`step`, which smolagents 1.x no longer calls: with smolagents 1.26 and MLflow 3.17 a run's trace holds the
agent's span and its tools' spans, no model request). A span records the method's bound arguments and the
value it returned, by their `__dict__`:

- a TOOL span is named `<ToolClass>.__call__` (`SimpleTool.__call__` for every `@tool` function: MLflow records the
  tool's own name nowhere, so the call is named after its class), its inputs are
  `{"sanitize_inputs_outputs": true, "kwargs": {<the call's arguments>}}` (positional ones under `args`), its
  output the text result as the `AgentText` smolagents wraps it in, `{"_value": <text>}`;
- `FinalAnswerTool.__call__` is smolagents' `final_answer`: the run's answer, not a tool call;
- the AGENT span's (`<Agent>.run`) output is the answer, an `AgentText` too (`{"_value": <text>}`).

`adjust` reads those into the arguments, result and answer the model and the application saw.
"""

from __future__ import annotations

from typing import Any

from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import View

__all__ = ["adjust"]

_CALL = ".__call__"
_FINAL = "FinalAnswerTool"


def _value(outputs: Any) -> Any:
    """The value of an `AgentText` (`{"_value": …}`, its `__dict__`), else `outputs` as it is."""
    return outputs["_value"] if isinstance(outputs, dict) and set(outputs) == {"_value"} else outputs


def adjust(span: Span, v: View, inputs: Any, outputs: Any, present: bool) -> None:
    """Read a smolagents tool or agent span as the call or answer it was (module docstring); other spans are left as they are.

    `present`: the span recorded an output (`outputs` holds it).
    """
    if v.role == "tool" and span.name.endswith(_CALL) and isinstance(inputs, dict) and "sanitize_inputs_outputs" in inputs:
        cls = span.name[: -len(_CALL)]
        kwargs, args = inputs.get("kwargs"), inputs.get("args")
        if isinstance(kwargs, dict) and kwargs:
            v.args = kwargs
        elif isinstance(args, list) and len(args) == 1 and isinstance(args[0], dict):
            v.args = args[0]  # (a ToolCallingAgent passes arguments given as one mapping as they are)
        elif isinstance(args, list) and args:
            v.args = {"args": args}
        else:
            v.args = {}
        v.args_wrapped = True
        if present:
            v.result = _value(outputs)
        if cls == _FINAL:
            v.tool_name, v.answer_tool = "final_answer", True
        else:
            v.tool_name = cls
    elif v.role == "agent" and present and isinstance(outputs, dict) and set(outputs) == {"_value"} and isinstance(outputs["_value"], str):
        v.answer = outputs["_value"] or None
