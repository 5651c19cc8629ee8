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
- Java and JavaScript questions (`simple_java`, `simple_javascript`) are asked as BFCL asks them
  (`_func_doc_language_specific_pre_processing` in its `bfcl_eval/utils.py`): every parameter becomes a
  `string`, its description saying which Java / JavaScript type to write in it ("This is Java long type
  parameter in string representation."), and the function's that it is Java 8 / JavaScript syntax. BFCL's
  checker converts those strings by the declared type and refuses any other JSON value, so a model offered
  `long` or `HashMap` as a type would answer in a form it always fails;
- a question's first turn is sent whole when the case keeps it (`context.messages`: a system prompt, an earlier
  exchange), else its one user message;
- one request per question (single-turn categories: simple, multiple, parallel, parallel_multiple, irrelevance,
  their live_ forms, live_relevance). The calls are the answer: nothing is executed, so each call's result is
  empty. They are read as BFCL's OpenAI handler reads them: each call's arguments must be JSON text of an object,
  and when one is not (text that does not parse, `""`, `null`) the reply holds no call at all, the step's `error`
  quoting what was sent; BFCL fails such a reply in every category but irrelevance, where it passes. A call with
  no function name (missing, `null`, `""`) is a call there all the same, kept here as a call to `NAMELESS`: it
  passes live_relevance, fails irrelevance, and matches no expected call in the AST categories. Multi-turn
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

__all__ = ["NAMELESS", "decoded", "respond", "source_text_doc", "tool_of"]

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


def source_text_doc(function: dict[str, Any], lang: str) -> dict[str, Any]:
    """A Java / JavaScript function doc as BFCL offers it: each parameter a string of source text (`lang`: `java`, `javascript`).

    Mirrors `_func_doc_language_specific_pre_processing` (ShishirPatil/gorilla, `bfcl_eval/utils.py`), which BFCL
    runs on every question of these categories before any model handler converts the doc to tools.
    """
    doc = json.loads(json.dumps(function))  # (a copy: the case's own doc stays as read)
    name = "Java" if lang == "java" else "JavaScript"
    doc["description"] = doc.get("description", "") + (
        " Note that the provided function is in Java 8 SDK syntax." if lang == "java" else " Note that the provided function is in JavaScript syntax.")
    for prop in ((doc.get("parameters") or {}).get("properties") or {}).values():
        kind = prop.get("type")
        prop.setdefault("description", "")
        if kind == "any":
            prop["description"] += f" This parameter can be of any type of {name} object in string representation."
        else:
            prop["description"] += f" This is {name} {kind} type parameter in string representation."
        if kind in (("ArrayList", "Array") if lang == "java" else ("array",)) and isinstance(prop.get("items"), dict):
            prop["description"] += f" The list elements are of type {prop['items'].get('type')}; they are not in string representation."
            del prop["items"]
        if lang == "javascript" and kind == "dict" and "properties" in prop:
            prop["description"] += (" The dictionary entries have the following schema; they are not in string representation. "
                                    + json.dumps(prop["properties"]))
            del prop["properties"]
        prop["type"] = "string"
    return doc


def _language(req: dict[str, Any]) -> str | None:
    """`java`, `javascript` or None, from the case's BFCL category (its id where no category is kept), as BFCL's `is_java` / `is_js`."""
    case = req.get("case") or {}
    category = str((case.get("metadata") or {}).get("category") or case.get("id") or "")
    if "javascript" in category:
        return "javascript"
    return "java" if "java" in category else None


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
    lang = _language(req)
    for f in functions:
        sent, tool = tool_of(source_text_doc(f, lang) if lang else f)
        names[sent] = f["name"]
        tools.append(tool)
    base = os.environ.get("BFCL_BASE_URL", "https://api.openai.com/v1").rstrip("/")
    body: dict[str, Any] = {"model": os.environ.get("BFCL_MODEL", "gpt-4o-mini"), "temperature": 0,
                            # a question that opens with a system prompt or an earlier exchange is asked whole, as BFCL asks it
                            "messages": context.get("messages") or [{"role": "user", "content": req.get("input") or ""}]}
    if tools:
        body["tools"] = tools
        body["tool_choice"] = os.environ.get("BFCL_TOOL_CHOICE", "auto")
    reply = _post(f"{base}/chat/completions", body, os.environ.get("BFCL_API_KEY", os.environ.get("OPENAI_API_KEY")), 60.0)
    message = (reply.get("choices") or [{}])[0].get("message") or {}
    sent = [call.get("function") or {} for call in message.get("tool_calls") or []]
    calls = [{"name": _name(fn.get("name"), names), "arguments": decoded(fn.get("arguments"))} for fn in sent]
    step: dict[str, Any] = {"tool_calls": calls}
    bad = [f"{fn.get('name')}({fn.get('arguments')!r})" for fn, call in zip(sent, calls) if call["arguments"] is None]
    if bad:
        # BFCL decodes the reply's calls as a whole (its OpenAI handler's `decode_ast`): one that fails leaves the reply
        # without calls, which is what its irrelevance (pass) and relevance (fail) checks then read.
        step = {"tool_calls": [], "error": "tool calls not decoded (arguments not a JSON object): " + ", ".join(bad)}
    text = message.get("content") or ""
    if text:
        step["output"] = text
    note = {"note": "multi-turn: only the first turn is answered (the calls are not executed)"} if context.get("involved_classes") else {}
    return sound({"output": text, "trace": {"steps": [step], "output": text}, "metadata": note})


def sound(value: Any) -> Any:
    """`value` with each lone surrogate in its text (`"\\ud800"` in the reply's JSON, half a UTF-16 pair) replaced by U+FFFD.

    BFCL reads such a reply as any other (its `json.loads` takes the escape), so its call is a call and its text a
    reply; a trace is written as UTF-8, which cannot hold the half pair. No answer BFCL accepts holds either
    character, so a value holding one fails its check alike.
    """
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        return value
    if isinstance(value, dict):
        return {sound(k): sound(v) for k, v in value.items()}
    if isinstance(value, list):
        return [sound(v) for v in value]
    return value


NAMELESS = "(no function name)"
"""The name a call the model made without a usable function name is recorded under: no BFCL function is named so."""


def _name(sent: Any, names: dict[str, str]) -> str:
    """BFCL's name of the function a call names (`math_factorial` back to `math.factorial`), or `NAMELESS`.

    A call whose name is missing, `null`, blank, not text or holding NUL is still a call upstream (the OpenAI SDK
    reads a missing name as None, and BFCL's relevance check counts `{None: {...}}` or `{"": {...}}` as one), which
    matches no expected function: a trace cannot hold a call without a name, so it is kept under one no function has.
    """
    if not isinstance(sent, str) or not sent.strip() or "\x00" in sent:
        return NAMELESS
    return names.get(sent, sent)


def decoded(arguments: Any) -> dict[str, Any] | None:
    """A call's `function.arguments` as BFCL's OpenAI handler decodes it (`json.loads`): a JSON object, else None.

    Text that does not parse, blank text, JSON that is no object (`null`, `[1]`) and a value that is not text
    all fail there, and any one failing call makes the whole reply no call.
    """
    try:
        value = json.loads(arguments)
    except (TypeError, ValueError):
        return None
    return value if isinstance(value, dict) else None
