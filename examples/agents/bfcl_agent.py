"""A BFCL target: ask an OpenAI-compatible chat model each Berkeley Function Calling Leaderboard question,
with the question's functions offered as tools, and return the calls it makes (`examples/agents/bfcl.yaml`).

BFCL ships questions and accepted answers, no model output, so a BFCL run needs a target that answers; this one
answers with whatever model `BFCL_BASE_URL` serves (OpenAI, vLLM, llama.cpp's server, Ollama's `/v1`, ...):

- `BFCL_BASE_URL` (default `https://api.openai.com/v1`), `BFCL_MODEL` (default `gpt-4o-mini`), `BFCL_API_KEY`
  (default `OPENAI_API_KEY`; a local server may need none), `BFCL_TOOL_CHOICE` (default `auto`: the model may
  answer in text, which the irrelevance category expects);
- the function docs are made acceptable to the Chat Completions API as BFCL's own OpenAI handler makes them:
  a name's dots become underscores (mapped back in the calls returned), and BFCL's types `dict`, `float`,
  `tuple` and `any` become JSON Schema's `object`, `number`, `array` and no type at all;
- one request per question (single-turn categories: simple, multiple, parallel, parallel_multiple, irrelevance,
  their live_ forms). The calls are the answer: nothing is executed, so each call's result is empty. Multi-turn
  questions need the calls run against BFCL's simulated classes between turns, which this example does not do:
  it answers their first turn only, and says so in the trace.

`respond(request)` returns `{"output": text, "trace": native trace}`; an HTTP error raises, so the run's
`target.retries` retries it and a case that keeps failing is a `target_error` result, not a lost case.
"""

from __future__ import annotations

import json
import os
import urllib.request
from typing import Any

__all__ = ["respond", "tool_of"]

_TYPES = {"dict": "object", "float": "number", "tuple": "array"}


def _schema(node: Any) -> Any:
    """BFCL's parameter schema as JSON Schema: its Python-ish type names replaced, recursively."""
    if isinstance(node, list):
        return [_schema(x) for x in node]
    if not isinstance(node, dict):
        return node
    out = {k: _schema(v) for k, v in node.items()}
    kind = node.get("type")
    if kind == "any":
        del out["type"]  # any value: JSON Schema says so by stating no type
    elif isinstance(kind, str):
        out["type"] = _TYPES.get(kind, kind)
    return out


def tool_of(function: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(the name sent, the Chat Completions tool) for one BFCL function doc: `math.factorial` is sent as `math_factorial`."""
    sent = function["name"].replace(".", "_")
    return sent, {"type": "function", "function": {"name": sent, "description": function.get("description", ""),
                                                   "parameters": _schema(function.get("parameters") or {"type": "object", "properties": {}})}}


def _post(url: str, body: dict[str, Any], key: str | None, timeout: float) -> dict[str, Any]:
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers, method="POST")
    with urllib.request.urlopen(req, timeout=timeout) as reply:  # an HTTP error raises: the run retries the case
        return json.loads(reply.read())


def respond(request: Any) -> dict[str, Any]:
    """One BFCL question: the model's calls as a native trace, its text as the output."""
    req = request if isinstance(request, dict) else request.model_dump()
    context = (req.get("case") or {}).get("context") or {}
    functions = context.get("functions") or []
    functions = functions if isinstance(functions, list) else [functions]
    names, tools = {}, []
    for f in functions:
        sent, tool = tool_of(f)
        names[sent] = f["name"]
        tools.append(tool)
    base = os.environ.get("BFCL_BASE_URL", "https://api.openai.com/v1").rstrip("/")
    body: dict[str, Any] = {"model": os.environ.get("BFCL_MODEL", "gpt-4o-mini"), "temperature": 0,
                            "messages": [{"role": "user", "content": req.get("input") or ""}]}
    if tools:
        body["tools"] = tools
        body["tool_choice"] = os.environ.get("BFCL_TOOL_CHOICE", "auto")
    reply = _post(f"{base}/chat/completions", body, os.environ.get("BFCL_API_KEY", os.environ.get("OPENAI_API_KEY")), 60.0)
    message = (reply.get("choices") or [{}])[0].get("message") or {}
    calls = []
    for call in message.get("tool_calls") or []:
        fn = call.get("function") or {}
        try:
            arguments = json.loads(fn.get("arguments") or "{}")
        except ValueError:
            arguments = fn.get("arguments")  # kept as the model sent it: ToolCalls reports arguments that do not parse
        calls.append({"name": names.get(fn.get("name"), fn.get("name")), "arguments": arguments})
    text = message.get("content") or ""
    note = {"note": "multi-turn: only the first turn is answered (the calls are not executed)"} if context.get("involved_classes") else {}
    return {"output": text, "trace": {"steps": [{"tool_calls": calls, **({"text": text} if text else {})}], "output": text}, "metadata": note}
