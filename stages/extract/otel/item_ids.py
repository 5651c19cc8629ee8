"""A Responses API call recorded under its item id (`fc_…`), given the `call_id` its output answers when a replay says it.

OpenLLMetry's OpenAI instrumentation (opentelemetry-instrumentation-openai 0.62) writes a response's
`function_call` with its item id, never its `call_id`, while the `function_call_output` the application sends back
names the `call_id`: nothing ties a result to its call then but order (`call_results` pairs them so, and warns when
the order decides a result). A replayed call is written with its item id too, unless the application sent it back
without one (input built by hand: `{"type": "function_call", "call_id", "name", "arguments"}`): then the replay
carries the `call_id`, and the same call (same name and arguments, the first such call still unlinked, in the
conversation's order) is the one it replays. `link_item_ids` gives that call its `call_id` (as OpenInference
records it), so its result pairs by id, whatever order the application sent the results in. Before that, `stitch`
joins the traces of such a conversation (one per request) by the replay: ids of the two kinds never tell two
conversations apart (`ids_agree`).
"""

from __future__ import annotations

from typing import Any

from tracejudge.stages.extract.otel.conventions import group_views
from tracejudge.stages.extract.otel.spans import Group
from tracejudge.stages.extract.otel.view import unjson

__all__ = ["ids_agree", "link_item_ids"]

ITEM_PREFIX = "fc_"  # a Responses API function call item's id; its `call_id` is another (`call_…`)


def _calls(messages: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    return [p for m in messages or [] for p in m.get("parts") or [] if isinstance(p, dict) and p.get("type") == "tool_call"]


def link_item_ids(group: Group) -> None:
    """Give each model output call of `group` recorded under an item id the `call_id` a later request's replay of it names.

    In place, on the group's views; nothing when no call has an item id or no replay names another id. A call whose
    item id a tool message answers, or a replay whose id some output call already has, is left as it is.
    """
    views = group_views(group)
    requests = sorted((s for s in group.spans if views[s.span_id].role == "model"), key=lambda s: (s.start, s.span_id))
    outputs = [p for s in requests for p in _calls(views[s.span_id].outputs)]
    if not any(isinstance(p.get("id"), str) and p["id"].startswith(ITEM_PREFIX) for p in outputs):
        return
    answered = {str(p.get("id")) for s in requests for m in views[s.span_id].inputs or [] for p in m.get("parts") or []
                if isinstance(p, dict) and p.get("type") == "tool_call_response"}
    known = {str(p["id"]) for p in outputs if p.get("id") not in (None, "")}
    waiting: list[dict[str, Any]] = []  # output calls under an item id no tool message answers, not yet linked, in order
    for span in requests:
        view = views[span.span_id]
        for replay in _calls([m for m in view.inputs or [] if m.get("role") == "assistant"]):
            rid = replay.get("id")
            if not isinstance(rid, str) or not rid or rid.startswith(ITEM_PREFIX) or rid in known:
                continue
            args = unjson(replay.get("arguments"))
            call = next((p for p in waiting if p.get("name") == replay.get("name") and unjson(p.get("arguments")) == args), None)
            if call is not None:
                waiting.remove(call)
                call["id"] = rid
                known.add(rid)
        waiting += [p for p in _calls(view.outputs)
                    if isinstance(p.get("id"), str) and p["id"].startswith(ITEM_PREFIX) and p["id"] not in answered]


def ids_agree(seen: frozenset[str], replayed: frozenset[str]) -> bool:
    """Whether a request replaying the call ids `replayed` may go on from a conversation whose last request saw `seen`.

    The ids a request replays are its own conversation's, so ids that differ tell another conversation, unless either
    names none, or they are of different kinds: a Responses API function call has an item id (`fc_…`) and a `call_id`
    (what its output answers), and OpenLLMetry writes a response's calls with their item ids but a replayed call with
    its `call_id` when the application sent it back without its item id (input built by hand), and every output with
    its `call_id`. Only ids of a kind both sides name can disagree.
    """
    if not seen or not replayed or seen & replayed:
        return True
    return not (_id_kinds(seen) & _id_kinds(replayed))


def _id_kinds(ids: frozenset[str]) -> set[bool]:
    """The kinds of call ids among `ids`: a Responses API item id (`fc_…`, True) or any other (False)."""
    return {i.startswith(ITEM_PREFIX) for i in ids}
