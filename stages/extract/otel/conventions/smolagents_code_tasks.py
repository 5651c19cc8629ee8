"""The task a smolagents `CodeAgent` manager's code gave a managed agent, under OpenInference.

A `CodeAgent`'s model writes code (`w = researcher(task="Find the weather in Paris.")`) rather than a tool call, and
openinference-instrumentation-smolagents (0.1.43) records no span for that call: only the managed agent's run, whose
`task` is smolagents' `managed_agent.task` prompt template filled with the agent's name and the task the code passed.
The template itself is not recorded (MLflow records it on the run's span; OpenInference does not), so the task cannot be
cut out of it. The code the model wrote is recorded (the step's model request's reply): where each of its calls of the
agent passes the task as a string literal, and the run's task holds exactly one of those literals, that literal is the
task the call passed. Anything else — a task built at run time (a variable, an f-string), the agent's name used other
than as a call (`r = researcher`), code smolagents would not find between `<code>` and `</code>` or that does not
parse — leaves the task as recorded.

What the call returned to the code (smolagents' report around the answer) is recorded nowhere under OpenInference: the
code gets it as a value, the step records only what the code printed (`Execution logs:`, with no bounds between
prints), and the run's span holds neither the `managed_agent.report` template nor `provide_run_summary`.
"""

from __future__ import annotations

import ast
import re

__all__ = ["code_task"]

_BLOCK = re.compile(r"<code>(.*?)</code>", re.DOTALL)  # (smolagents' default `code_block_tags`, as `parse_code_blobs` reads them)


def code_task(run_task: str, name: str, replies: list[str]) -> str | None:
    """The task the code in `replies` (the texts of the model's replies in the step that ran the run) passed to managed
    agent `name`, given the `run_task` its run recorded; None when it cannot be told (module docstring)."""
    literals: set[str] = set()
    for reply in replies:
        for block in _BLOCK.findall(reply):
            try:
                tree = ast.parse(block.strip())
                nodes = list(ast.walk(tree))
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                return None
            calls = [n for n in nodes if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == name]
            if sum(isinstance(n, ast.Name) and n.id == name for n in nodes) != len(calls):
                return None  # (the agent passed around by name: a call of it may not read as one)
            for call in calls:
                given = next((k.value for k in call.keywords if k.arg == "task"), call.args[0] if call.args else None)
                if not (isinstance(given, ast.Constant) and isinstance(given.value, str)):
                    return None
                literals.add(given.value)
    fits = [text for text in literals if text and text in run_task]
    return fits[0] if len(fits) == 1 else None
