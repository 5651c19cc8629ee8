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

A `CodeAgent` runs the model's code in a worker thread (smolagents' `LocalPythonExecutor` under its default timeout), where
MLflow's context is lost: each tool the code calls, `final_answer` included, is a trace of its own, its one span's inputs
without `sanitize_inputs_outputs` (`{"kwargs": {…}}`, `{"args": […]}`, `{}` for a call with no argument: the code passed no
such flag) and its output the tool's value as it is; `strays` (format `otel`) and `mlflow_code_tools` (format `mlflow`) join such a trace to the run that
holds it in time (`code_run`, `tool_call`).

`adjust` reads those into the arguments, result and answer the model and the application saw. MLflow records none of a
smolagents 1.x run's model requests, so its tokens and request count are unknown, not 0 (`unrecorded_usage`).

A managed agent (`managed_agents=[researcher]`) is offered to the manager's model as a tool of the agent's name, and
smolagents runs it inside the manager's step; MLflow records no TOOL span for that call, only the managed agent's own
`<Agent>.run` span under the manager's, holding the agent's `name`, the `task` smolagents gave it (its prompt template
around the manager's task) and its answer. Read as an agent run, the call was nowhere and the tools the managed agent
ran read as the manager's own calls. `managed_calls` reads such a run — an agent run inside another (smolagents nests a
run only for a managed agent) — as the call that ran it, as the OpenInference reader does (`conventions.smolagents`):
tool name the agent's name, arguments the `task` the call gave (the run's `task` is smolagents' `managed_agent.task` prompt
template filled with the agent's `name` and it; the template is recorded on the run's span, `prompt_templates`, and the
text it put around the call's task is taken off, `_given_task`: else the `task` as recorded), its error the run's; the tools it ran are then calls inside
it. Its result is what the call returned to the manager: smolagents' report around the agent's answer (`MultiStepAgent.
__call__`: the agent's `managed_agent.report` prompt template, "Here is the final answer from your managed agent
'{{name}}':\n{{final_answer}}", filled in). MLflow records that text nowhere (no model request, no step), but it records
what it is made of on the run's span: the agent's `prompt_templates` (Python text), `name`, `provide_run_summary` and the
answer. So the report is filled in from them (`_report`) when the template fills only `name` and `final_answer` and no
run summary was added (its text is not recorded); otherwise the result is the agent's answer, as recorded.
Under a `CodeAgent` manager the managed agent runs in the code's worker thread, so its run is a trace of its own, as the
code's tool calls are; it joins the manager's trace as they do (`managed_run`). A managed `CodeAgent`'s own code's calls
are traces of their own too, under either manager: they join its run, not the manager's (`strays`, `mlflow_code_tools`).
"""

from __future__ import annotations

import re
from typing import Any

from tracejudge.stages.extract.common import python_literal
from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import MISSING, View, unjson

__all__ = ["adjust", "agent_run", "code_run", "managed_calls", "managed_run", "recorded_name", "tool_call", "unrecorded_usage"]

_CALL = ".__call__"
_FINAL = "FinalAnswerTool"


def _value(outputs: Any) -> Any:
    """The value of an `AgentText` (`{"_value": …}`, its `__dict__`), else `outputs` as it is."""
    return outputs["_value"] if isinstance(outputs, dict) and set(outputs) == {"_value"} else outputs


def adjust(span: Span, v: View, inputs: Any, outputs: Any, present: bool) -> None:
    """Read a smolagents tool or agent span as the call or answer it was (module docstring); other spans are left as they are.

    `present`: the span recorded an output (`outputs` holds it).
    """
    if v.role == "tool" and _tool_call(span, inputs):
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


_BOUND = {"sanitize_inputs_outputs", "args", "kwargs"}  # `Tool.__call__(self, *args, sanitize_inputs_outputs=False, **kwargs)`


def _tool_call(span: Span, inputs: object) -> bool:
    """Whether `span` (a TOOL) is smolagents' `Tool.__call__` as MLflow records it: named `<ToolClass>.__call__`, its inputs
    the method's bound arguments (a `ToolCallingAgent` passes `sanitize_inputs_outputs`, a `CodeAgent`'s code does not).

    A call the code made with no argument (`get_time()`) binds none: MLflow drops the empty `*args` and `**kwargs` and the
    flag left at its default, so its inputs are `{}`."""
    return span.name.endswith(_CALL) and span.name[: -len(_CALL)].isidentifier() and isinstance(inputs, dict) and set(inputs) <= _BOUND


def tool_call(span: Span) -> bool:
    """Whether `span` is a smolagents tool call MLflow recorded (`mlflow.spanType` TOOL, `Tool.__call__`'s shape)."""
    return unjson(span.attrs.get("mlflow.spanType")) == "TOOL" and _tool_call(span, unjson(span.attrs.get("mlflow.spanInputs")))


def agent_run(span: Span) -> bool:
    """Whether `span` is a smolagents agent's run MLflow recorded: an AGENT span `<Agent>.run` holding the agent's own
    attributes, as MLflow keeps them (a `MultiStepAgent`'s `max_steps` and `step_number`)."""
    return (unjson(span.attrs.get("mlflow.spanType")) == "AGENT" and span.name.endswith(".run") and "max_steps" in span.attrs
            and "step_number" in span.attrs)


def recorded_name(span: Span) -> str | None:
    """The `name` MLflow recorded of the agent object an AGENT span ran, or None.

    Autologs that wrap a framework's agent class record the instance's public attributes on its span (pydantic-ai's
    `Agent`, smolagents' agents), `name` among them when the application named the agent; the span itself is named
    after the method (`Agent.run`, `ToolCallingAgent.run`), which names no agent.
    """
    name = unjson(span.attrs.get("name"))
    return name if isinstance(name, str) and name.strip() else None


def managed_run(span: Span) -> bool:
    """Whether `span` can be a managed agent's run MLflow recorded (`agent_run`, the agent named: smolagents runs a managed
    agent only by its `name`)."""
    return agent_run(span) and recorded_name(span) is not None


def managed_calls(spans: list[Span], views: dict[str, View]) -> None:
    """Read each managed agent's run among `spans` as its manager's call that ran it, in `views` (module docstring). In place."""
    runs = {s.span_id: s for s in spans if agent_run(s)}
    index = {s.span_id: s for s in spans}
    for span in runs.values():
        v = views[span.span_id]
        if v.role != "agent" or not _inside(span, runs, index):
            continue
        name = recorded_name(span) or span.name[: -len(".run")]
        given = unjson(span.attrs.get("mlflow.spanInputs"))
        task = given.get("task") if isinstance(given, dict) else None
        views[span.span_id] = View(role="tool", tool_name=name, agent_name=name, error=v.error, conventions=v.conventions,
                                   args={"task": _given_task(span, recorded_name(span), task)} if isinstance(task, str) else MISSING,
                                   result=_report(span, recorded_name(span), v.answer) if v.answer is not None else MISSING)


_FILLED = re.compile(r"\{\{\s*(name|final_answer)\s*\}\}")
_TASK = re.compile(r"\{\{\s*(name|task)\s*\}\}")
_GIVEN, _NAME = re.compile(r"\{\{\s*task\s*\}\}"), re.compile(r"\{\{\s*name\s*\}\}")


def _template(span: Span, which: str, filled: re.Pattern[str]) -> str | None:
    """The agent's `managed_agent.<which>` prompt template as its run's span records it (`prompt_templates`, Python text),
    or None when not recorded or it holds other Jinja than the names `filled` matches (not filled in or read here)."""
    templates = python_literal(unjson(span.attrs.get("prompt_templates")))
    managed = templates.get("managed_agent") if isinstance(templates, dict) else None
    template = managed.get(which) if isinstance(managed, dict) else None
    if not isinstance(template, str) or any(mark in filled.sub("", template) for mark in ("{{", "{%", "{#")):
        return None
    return template


def _given_task(span: Span, name: str | None, task: str) -> str:
    """The task the manager's call gave a managed agent, out of the `task` its run was given: smolagents' `__call__` runs
    the agent on its `managed_agent.task` template filled with its `name` and that task (Jinja2). With the template
    recorded, holding `{{task}}` once, the text around it is taken off; else `task` as recorded."""
    template = _template(span, "task", _TASK)
    parts = _GIVEN.split(template) if template is not None else []
    if name is None or len(parts) != 2:
        return task
    head, tail = (_NAME.sub(lambda _: name, part) for part in parts)
    tail = tail[:-1] if tail.endswith("\n") else tail  # (Jinja drops one newline ending a template)
    if not (task.startswith(head) and task.endswith(tail)) or len(task) < len(head) + len(tail):
        return task
    return task[len(head): len(task) - len(tail)]


def _report(span: Span, name: str | None, answer: Any) -> Any:
    """What a managed agent's run returned to its manager (module docstring): its `managed_agent.report` template filled
    with `name` and `answer` as smolagents' `populate_template` (Jinja2) fills it, else `answer` as it is."""
    template = _template(span, "report", _FILLED)  # (None also for other Jinja than the two names: not filled in here)
    if name is None or template is None or not isinstance(answer, str) or unjson(span.attrs.get("provide_run_summary")) != "False":
        return answer
    filled = _FILLED.sub(lambda m: name if m.group(1) == "name" else answer, template)
    return filled[:-1] if template.endswith("\n") else filled  # (Jinja drops one newline ending a template)


def _inside(span: Span, runs: dict[str, Span], index: dict[str, Span]) -> bool:
    """Whether another agent run (one of `runs`) is among `span`'s ancestors (`index`: every span by id); the walk is
    bounded (a hostile trace may nest deep, or loop)."""
    node, hops = span, 0
    while node.parent_id in index and hops < 10_000:
        node, hops = index[node.parent_id], hops + 1
        if node.span_id in runs:
            return True
    return False


def code_run(span: Span) -> bool:
    """Whether `span` is a smolagents `CodeAgent` run MLflow recorded (`agent_run`), its attributes naming its `python_executor`."""
    return agent_run(span) and "python_executor" in span.attrs


def unrecorded_usage(built: dict[str, Any], spans: list[Span], views: dict[str, View]) -> None:
    """`built` (the case mapping of `spans`) with unknown tokens and request count when it is a smolagents run MLflow recorded
    with no model request (module docstring): the run asked the model, MLflow kept none of it. In place."""
    usage = built.get("trace", {}).get("usage")
    if not isinstance(usage, dict) or usage.get("requests") != 0 or any(v.role == "model" for v in views.values()):
        return
    if not any(tool_call(s) or agent_run(s) for s in spans):
        return
    usage["input_tokens"] = usage["output_tokens"] = usage["requests"] = None
    for turn in built.get("metadata", {}).get("otel", {}).get("turns") or []:
        if isinstance(turn.get("usage"), dict) and turn["usage"].get("requests") == 0:
            turn["usage"] = {"input_tokens": None, "output_tokens": None, "requests": None}
