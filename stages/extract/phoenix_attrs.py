"""What Phoenix changed in a span's attributes when it stored it, undone where it can be, for format `phoenix` (`to_span`).

Phoenix parses the JSON text of some attributes and lists them flattened (`metadata` → `metadata.langgraph_node`):
`json_texts` puts them back together. It adds to a span with OTel GenAI keys (`gen_ai.*`) the OpenInference keys they
translate to: `unsynthesized` takes them away. What it does not keep (the instrumentation scope, the resource, the OTel
span kind, the count of dropped attributes, an attribute with an empty value, nanoseconds) cannot be put back.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["json_texts", "unsynthesized"]

# JSON-text attributes Phoenix stores parsed (`JSON_STRING_ATTRIBUTES`) and lists flattened (`metadata.langgraph_node`); Langfuse's
# `langfuse.*.metadata.<key>` and the AI SDK's `ai.telemetry.metadata.<key>` are flat attributes of their own, left as they are.
_JSON_TEXT = re.compile(r"metadata|tool\.parameters|llm\.prompt_template\.variables|pydantic_ai\.tool\.deferral\.metadata|.+\.\d+\.document\.metadata")


def _json_base(key: str) -> tuple[str | None, str | None]:
    """`(attribute, path under it)` when `key` is a JSON-text attribute (`path` None) or a key Phoenix flattened out of one."""
    at = -1
    while True:
        at = key.find(".", at + 1)
        head = key if at < 0 else key[:at]
        if _JSON_TEXT.fullmatch(head):
            return head, (None if at < 0 else key[at + 1:])
        if at < 0:
            return None, None


def _lists(node: Any) -> Any:
    """`node` with each mapping keyed `0`…`n-1` of mappings made a list again (Phoenix flattens a list of objects by index)."""
    if not isinstance(node, dict):
        return node
    node = {k: _lists(v) for k, v in node.items()}
    if node and all(k.isdigit() for k in node) and sorted(map(int, node)) == list(range(len(node))) and all(isinstance(v, dict) for v in node.values()):
        return [node[str(i)] for i in range(len(node))]
    return node


def json_texts(attrs: dict[str, Any]) -> dict[str, Any]:
    """`attrs` with each JSON-text attribute Phoenix parsed and flattened (`metadata.langgraph_node`) JSON text again (a number
    or list it parsed too); keys that clash stay flat. What its flattening lost (a `null` or `{}` inside) stays lost."""
    out: dict[str, Any] = {}
    trees: dict[str, tuple[dict[str, Any], list[tuple[str, Any]], list[bool]]] = {}
    for key, value in attrs.items():
        base, rest = _json_base(key)
        if base is None:
            out[key] = value
        elif rest is None:
            out[key] = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        else:
            tree, flat, clash = trees.setdefault(base, ({}, [], [False]))
            flat.append((key, value))
            node, parts = tree, rest.split(".")
            for part in parts[:-1]:
                node = node.setdefault(part, {})
                if not isinstance(node, dict):
                    clash[0] = True
                    break
            else:
                clash[0] = clash[0] or parts[-1] in node
                node[parts[-1]] = value
    for base, (tree, flat, clash) in trees.items():
        if base in out or clash[0]:
            out.update(flat)
        else:
            out[base] = json.dumps(_lists(tree), ensure_ascii=False)
    return out


# What an OpenInference instrumentation writes itself: a span holding one of these that Phoenix did not make was written so.
# Not `session.id`: instrumentations of the GenAI conventions write it too (Claude Code's spans, beside their `gen_ai.*`
# keys), and every span of an OpenInference instrumentation has one of these besides.
_OI_OWN = ("openinference.span.kind", "input.", "output.", "llm.input_messages.", "llm.output_messages.", "llm.model_name", "llm.token_count.",
           "llm.invocation_parameters", "llm.tools.", "llm.provider", "llm.system", "llm.finish_reason", "tool.name", "tool.parameters",
           "tool.description", "tool.id", "tool_call.", "retrieval.documents.")


def _same(a: Any, b: Any) -> bool:
    def value(x: Any) -> Any:  # JSON text read, a tuple a list: as Phoenix stores them
        try:
            return json.loads(x) if isinstance(x, str) else list(x) if isinstance(x, tuple) else x
        except ValueError:
            return x
    return a == b or value(a) == value(b)


def unsynthesized(attrs: dict[str, Any]) -> dict[str, Any]:
    """`attrs` without the OpenInference attributes Phoenix made up from the span's OTel GenAI ones (`gen_ai.*`).

    Phoenix adds to a span with `gen_ai.*` keys the OpenInference keys they translate to (`openinference.span.kind`,
    `llm.input_messages.*`, `tool.name`, `session.id`, …), so an OpenLLMetry span read as an OpenInference one. They are
    made again by Phoenix's own translation (`phoenix.trace.gen_ai`, package `arize-phoenix`) and taken away when every
    OpenInference key of the span is one of them, unchanged; a span holding another (pydantic-ai under OpenInference
    writes both conventions) is left whole, and so is every span without that package.
    """
    if not any(k.startswith("gen_ai.") for k in attrs):
        return attrs
    try:
        from phoenix.trace.attributes import flatten, load_json_strings, unflatten
        from phoenix.trace.gen_ai.conversion import get_openinference_attributes
    except ImportError:
        return attrs
    try:
        made = get_openinference_attributes({k: v for k, v in attrs.items() if k.startswith("gen_ai.")})
        # as Phoenix stores and lists them: JSON text parsed, nested, flattened (and put back together by `json_texts`)
        made = json_texts(dict(flatten(unflatten(load_json_strings(made.items())), recurse_on_sequence=True)))
    except Exception:  # noqa: BLE001 (Phoenix's code on a span it took: whatever it raises, the span is read as listed)
        return attrs
    if not made or any(k.startswith(_OI_OWN) and not (k in made and _same(v, made[k])) for k, v in attrs.items()):
        return attrs
    return {k: v for k, v in attrs.items() if not (k in made and _same(v, made[k]))}
