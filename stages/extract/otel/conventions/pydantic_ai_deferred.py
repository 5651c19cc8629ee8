"""pydantic-ai runs that paused on deferred calls, the runs that resumed them, and calls it did not execute.

Read from pydantic-ai's own spans (its instrumentation scope, `pydantic_ai.ours`), instrumentation version 2 and
later with content recorded, with or without OpenInference's span processor (it writes its keys on the same spans).
`read_deferrals` reads a whole group, after `pydantic_ai.retry_feedback`; views are changed in place.

Shapes, and how they read:

- A paused run. An agent whose `output_type` admits `DeferredToolRequests` ends its run when a reply calls a tool
  declared `requires_approval=True` (or one that raised `ApprovalRequired` / `CallDeferred`, or an external tool):
  no tool span for a `requires_approval` call, no request after the reply, and the agent span's `final_result` is the
  `DeferredToolRequests` dump (`{"calls": [...], "approvals": [...], "metadata": {...}}`, each entry a tool call with
  its `tool_call_id`). That dump is no answer: the run has none (`held`: the turn's final text stays empty, its words
  intermediate), and the words beside the calls stay the step's thought. Unless a later run answered every call it
  held (resumed it), its error (`metadata.run_error`, the turn's error) says it paused and names the calls (`PAUSED`);
  a resumed one has no error, whether its resume went on with its turn or (given a prompt) began a new one. Calls that
  no later run answers stay in `metadata.otel.deferred`, not counted as calls (they did not run; pydantic-evals
  counts only tool spans too).
- A resumed run: `agent.run(message_history=..., deferred_tool_results=...)` with no prompt. Its agent span's
  `pydantic_ai.new_message_index` is set (above 0: the run was given a history). Where its new messages begin cannot
  be found from that number in `pydantic_ai.all_messages`: it counts pydantic-ai's `ModelMessage`s, which that
  attribute writes one per role, and merges the requests a pause left side by side in a later run's copy. So the
  run's first model request tells: what its input adds after the history's last reply holds tool returns (the
  deferred calls' results, beside returns of calls that ran before the pause) and no user text. It sent no prompt
  of its own, so it has no request (OpenInference's `input.value`, the history's last user text, is not asked again)
  and goes on with the turn before it (`View.resumed`). A resumed run given a prompt too
  (`agent.run("…", deferred_tool_results=...)`) is a new turn, as any run (the paused turn before it ends with no
  answer and no error); a run with no model request is not read.
- A deferred call that a later request's input (or a later run's `all_messages`) answers, by call id. Approved: the
  tool ran in the resumed run, in a span of that call id, which the call pairs with (nothing to do here). Denied (a
  `requires_approval` call that no tool span of its id ran): a call failed as not run (`DENIED`), its result what
  pydantic-ai sent the model in its place (`ToolDenied.message`, by default "The tool call was denied."). An
  external call (`external` kind, `CallDeferred`) answered: a call whose result is what the application supplied.
  Either way it is a call of the request that asked it, no longer deferred. A request's deferred tools are kept by
  name (`View.deferred_tools`): a name leaves them only when every call of it the request made was answered (one
  resume answers every pending call, as pydantic-ai requires).
- A call raising `ApprovalRequired` / `CallDeferred` has a tool span of its own marked deferred. Resumed approved, the
  tool runs again in a span of the same call id: that span is the call, the deferred one is left out. Denied, or
  answered from outside, with no such span: the deferred span is the call, failed as denied (`ApprovalRequired`:
  `DENIED_RAISED`, its result the denial sent) or with the supplied result (`CallDeferred`).
- A function call pydantic-ai skipped: with `end_strategy="early"`, a reply that gives the final result (an output
  tool call, or structured text output) and calls function tools ends the run there, and the history answers each
  function call with
  "Tool not executed - a final result was already processed." (pydantic-ai's note, `SKIPPED` its start). No request
  follows, so only the agent span's `all_messages` holds it. The call stays a call, failed as not run with that
  note in its error (`skipped`), and the note as its result, as it stands in the history.
- A run that ended before the function calls of its last model request ran: no tool span records them, no request
  followed, the run has no `final_result` and that request called no output tool. pydantic-ai checks a run's
  `tool_calls_limit` before it runs a reply's calls (`UsageLimitExceeded`, the agent span's error), and an application
  iterating `agent.iter()` may stop before the calls run (no error at all). They read as calls that ran and returned
  nothing; they stay calls (the model made them), failed as not run (`unrun`: the run's error named, or none
  recorded), and a run that recorded no error gets one saying it ended there (`STOPPED`), as it returned no answer.
  An application may as well leave `agent.iter()` one node later (at the `ModelRequestNode` that would send the calls'
  results), or `agent.run_stream_events()` once it saw the calls' results: the calls ran (their tool spans; a call
  still running when the consumer left is cancelled, its span says so), but no request follows, no answer, no error.
  The words beside the calls then read as the run's answer; such a run gets an error saying it ended after its calls
  (`STOPPED_AFTER`), so that its words stay the step's and the run answered nothing, as it did.
  (A tool that raised ends the run too, but the calls beside it have spans of their own, cancelled: they are read so.)
- A call of a tool the request did not offer (a name the model made up or misspelt, or one a toolset's `prepare` / filter
  left out of that step): pydantic-ai runs nothing (no tool span), and answers it, in the next request's input, with its
  retry prompt ("Unknown tool name: 'get_wether'. Available tools: …"). It reads as a call, failed as not run
  (`UNKNOWN`), its result that prompt: the request's `model_request_parameters` name every function and output tool it
  offered (a `builtin` part is the provider's, not pydantic-ai's to run).

Nothing is read when content is not recorded (no `all_messages`, no `final_result`, no messages): a paused run then
reads as a run that ended, and a resumed one as a run of its own.
"""

from __future__ import annotations

from typing import Any

from tracejudge.stages.extract.common import maybe_json
from tracejudge.stages.extract.otel.conventions.pydantic_ai import feedback, ours
from tracejudge.stages.extract.otel.messages import normalise
from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import View, present, unjson

__all__ = ["DENIED", "DENIED_RAISED", "PAUSED", "SKIPPED", "STOPPED", "STOPPED_AFTER", "UNKNOWN", "held", "read_deferrals", "skipped",
           "unrun"]

SKIPPED = "Tool not executed"  # how pydantic-ai's note on a function call it did not run starts (1.x and 2.x)
DENIED = ("not run: the application denied its approval (a `requires_approval` call pydantic-ai deferred; the run that "
          "resumed it with `deferred_tool_results` ran no tool span for it and sent the model the denial as its result)")
DENIED_RAISED = ("not run: the application denied its approval (the tool raised `ApprovalRequired`, so pydantic-ai deferred the "
                 "call; the run that resumed it with `deferred_tool_results` did not run the tool again and sent the model the "
                 "denial as its result)")
PAUSED = ("Run paused for {what} of the tool calls of its last model request ({names}): they did not run and the run returned "
          "no answer (pydantic-ai's `DeferredToolRequests` is its `final_result`); a run resumed with `deferred_tool_results` "
          "goes on with this turn")
STOPPED = ("Run ended before the tool calls of its last model request ran ({names}): no tool span records them, no model "
           "request followed, and pydantic-ai recorded no answer and no error, as for a run the application stopped (leaving "
           "`agent.iter()` before its end)")
STOPPED_AFTER = ("Run ended after the tool calls of its last model request ({names}), before a model request sent their "
                 "results: pydantic-ai recorded no answer and no error, as for a run the application stopped (leaving "
                 "`agent.iter()` or `agent.run_stream_events()` once the calls were made)")
UNKNOWN = ("not run: the request offered the model no tool of this name (pydantic-ai ran nothing and sent the model its "
           "retry prompt, the call's result, in its place)")
_INDEX_KEY = "pydantic_ai.new_message_index"
_APPROVAL = "ApprovalRequired"  # (a tool span's deferral: the exception the tool raised; `CallDeferred` asks for a result)


def skipped(note: str) -> str:
    """The error of a call pydantic-ai did not execute, naming its `note`."""
    return (f"not run: pydantic-ai did not execute it ({note!r}): the same reply gave the run's final result, which ended the "
            "run before this call ran (its `end_strategy`: with \"early\", no function call beside a final result runs)")


def unrun(error: str | None) -> str:
    """The error of a call its run ended before running, the run's `error` (`None`: it recorded none) named."""
    if error is None:
        return ("not run: the run ended before this call ran (no tool span records it, no model request followed, and the run "
                "recorded no answer and no error)")
    return f"not run: the run failed before this call ran ({error.splitlines()[0]}); no tool span records it"


def held(agent: Span) -> bool:
    """Whether pydantic-ai agent span `agent`'s run ended paused: its `final_result` is a `DeferredToolRequests` dump,
    no answer (whether or not a later run resumed it)."""
    return ours(agent) and _requests(unjson(agent.attrs.get("final_result"))) is not None


def read_deferrals(spans: list[Span], views: dict[str, View]) -> None:
    """Read pydantic-ai's paused and resumed runs and its calls not run in `spans` (module docstring)."""
    mine = sorted((s for s in spans if ours(s)), key=lambda s: (s.start, s.span_id))
    if not mine:
        return
    agents = [s for s in mine if views[s.span_id].role == "agent"]
    models = [s for s in mine if views[s.span_id].role == "model"]
    histories = {a.span_id: normalise(a.attrs.get("pydantic_ai.all_messages")) or [] for a in agents}
    returned = _returns([*(views[m.span_id].inputs or [] for m in models), *histories.values()])
    ran = _ran(mine, views)
    for m in models:
        _answered_calls(views[m.span_id], returned, ran)
        _unknown_calls(m, views[m.span_id], ran)
    _deferred_spans(mine, views, returned)
    requests = _run_requests(spans, agents, models)
    for a in agents:
        v = views[a.span_id]
        paused = _requests(unjson(a.attrs.get("final_result")))
        if paused is not None:
            v.answer = None  # (the dump of the calls held back, not an answer; an OpenInference `output.value` alike)
            if not all(i in returned for i in paused[2]):  # (every held call answered: a later run resumed it, no pause)
                v.error = v.error or PAUSED.format(what=paused[0], names=paused[1])
        if _resumed(a, (requests.get(a.span_id) or [None])[0], views):
            v.resumed, v.request = True, None
        if paused is None and a.span_id in requests:
            _ended_before_calls(a, requests[a.span_id][-1], mine, views)


def _returns(histories: list[list[dict[str, Any]]]) -> dict[str, Any]:
    """Call id → what the first tool return of that id in `histories` says (pydantic-ai writes `result`)."""
    out: dict[str, Any] = {}
    for messages in histories:
        for m in messages:
            for p in m.get("parts") or []:
                if isinstance(p, dict) and p.get("type") == "tool_call_response" and p.get("id") not in (None, ""):
                    out.setdefault(str(p["id"]), unjson(p.get("result", p.get("response"))))
    return out


def _ran(spans: list[Span], views: dict[str, View]) -> set[str]:
    """The call ids of the tool spans that ran a call (a deferral's span did not)."""
    return {v.call_id for s in spans if (v := views[s.span_id]).role == "tool" and v.call_id and not v.deferral}


def _answered_calls(v: View, returned: dict[str, Any], ran: set[str]) -> None:
    """Mark the calls of a request's output that pydantic-ai did not run, or ran only once resumed (module docstring)."""
    calls = [p for m in v.outputs or [] for p in m.get("parts") or []
             if isinstance(p, dict) and p.get("type") == "tool_call" and isinstance(p.get("name"), str) and p["name"] not in v.output_tools]
    for p in calls:
        said = returned.get(str(p.get("id")))
        if isinstance(said, str) and said.startswith(SKIPPED) and str(p.get("id")) not in ran:
            p.setdefault("not_run", skipped(said))
            p["framework_result"] = said
    for name, kind in list(v.deferred_tools.items()):
        mine = [p for p in calls if p["name"] == name]
        if not mine or any(p.get("id") in (None, "") or str(p["id"]) not in returned for p in mine):
            continue  # one still pending: the request's calls of this tool stay deferred
        for p in mine:
            if str(p["id"]) in ran or "framework_result" in p:
                continue  # approved and run (its span is the call), or skipped (above)
            if kind == "requires_approval":
                p.setdefault("not_run", DENIED)
            p["framework_result"] = returned[str(p["id"])]
        del v.deferred_tools[name]


def _unknown_calls(m: Span, v: View, ran: set[str]) -> None:
    """Mark the calls of request `m` of a tool it did not offer, that no tool span ran, as not run (module docstring).

    Before, such a call read as one that ran and returned its retry prompt (or nothing): a made-up tool seemed to work."""
    params = maybe_json(m.attrs.get("model_request_parameters"))
    if not isinstance(params, dict) or not isinstance(params.get("function_tools"), list):
        return  # (not recorded: what was offered is unknown)
    offered = {t.get("name") for key in ("function_tools", "output_tools") for t in params.get(key) or [] if isinstance(t, dict)}
    for p in (p for msg in v.outputs or [] for p in msg.get("parts") or [] if isinstance(p, dict) and p.get("type") == "tool_call"):
        if (isinstance(p.get("name"), str) and p["name"] not in offered and not p.get("builtin") and not p.get("server")
                and p.get("id") not in (None, "") and str(p["id"]) not in ran):
            p.setdefault("not_run", UNKNOWN)


def _deferred_spans(spans: list[Span], views: dict[str, View], returned: dict[str, Any]) -> None:
    """Tool spans of a call that raised `ApprovalRequired` / `CallDeferred`, once a later run resumed it (module docstring)."""
    tools = [s for s in spans if views[s.span_id].role == "tool"]
    for s in tools:
        v = views[s.span_id]
        if not v.deferral or not v.call_id:
            continue
        if any(views[t.span_id].call_id == v.call_id and not views[t.span_id].deferral and t.start >= s.start for t in tools):
            v.role = None  # approved: the later span of its id ran the call
        elif v.call_id in returned:
            v.result, v.error = returned[v.call_id], (DENIED_RAISED if v.deferral == _APPROVAL else None)
            v.deferral = None


def _requests(final: Any) -> tuple[str, str, list[str]] | None:
    """What a run's `final_result` held back when it is a `DeferredToolRequests` dump: (why, the tools' names, the call
    ids), else None."""
    if not isinstance(final, dict) or not isinstance(final.get("calls"), list) or not isinstance(final.get("approvals"), list):
        return None
    entries = [*final["approvals"], *final["calls"]]
    if not entries or not all(isinstance(e, dict) and "tool_call_id" in e for e in entries):
        return None
    names = ", ".join(dict.fromkeys(str(e.get("tool_name")) for e in entries))
    what = " and ".join(w for w, k in (("approval", "approvals"), ("external execution", "calls")) if final[k])
    return what, names, [str(e["tool_call_id"]) for e in entries]


def _resumed(agent: Span, first: Span | None, views: dict[str, View]) -> bool:
    """Whether the run went on from its history with the deferred calls' results and no prompt (module docstring)."""
    index = agent.attrs.get(_INDEX_KEY)
    if first is None or not isinstance(index, int) or isinstance(index, bool) or index <= 0:
        return False
    inputs = views[first.span_id].inputs or []
    last = max((at for at, m in enumerate(inputs) if m.get("role") == "assistant"), default=None)
    if last is None:
        return False
    added = inputs[last + 1:]  # what the run sent after the history's last reply: tool returns, a prompt
    parts = [p for m in added for p in m.get("parts") or [] if isinstance(p, dict)]
    said = [p for m in added if m.get("role") == "user" for p in m.get("parts") or []
            if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("content"), str) and p["content"].strip()
            and feedback(p["content"]) is None]
    return any(p.get("type") == "tool_call_response" for p in parts) and not said


def _run_requests(spans: list[Span], agents: list[Span], models: list[Span]) -> dict[str, list[Span]]:
    """Agent span id → the model requests of its run in start order (the nearest agent span above a request is its run's)."""
    index = {s.span_id: s for s in spans}
    runs = {a.span_id for a in agents}
    out: dict[str, list[Span]] = {}
    for m in models:  # (in start order)
        node, hops = m, 0
        while node.parent_id in index and node.span_id not in runs and hops < 10_000:
            node, hops = index[node.parent_id], hops + 1  # type: ignore[index]
        if node.span_id in runs:
            out.setdefault(node.span_id, []).append(m)
    return out


def _ended_before_calls(agent: Span, last: Span, spans: list[Span], views: dict[str, View]) -> None:
    """Fail the function calls of run `agent`'s `last` request that no tool span ran, when the run ended with no answer
    there (module docstring); a run that recorded no error gets `STOPPED` as its error."""
    av, mv = views[agent.span_id], views[last.span_id]
    if present(agent.attrs.get("final_result")) or present(av.answer):
        return
    parts = [p for m in mv.outputs or [] for p in m.get("parts") or [] if isinstance(p, dict) and p.get("type") == "tool_call"]
    if any(p.get("name") in mv.output_tools for p in parts):
        return  # (the run's answer, its `final_result` not recorded: `include_content=False`)
    tools = [views[s.span_id] for s in spans if views[s.span_id].role == "tool" and s.start >= last.start]
    ids = {t.call_id for t in tools if t.call_id}
    nameless = {t.tool_name for t in tools if not t.call_id}  # (a span that kept no call id ran a call of its tool)
    pending = [p for p in parts if isinstance(p.get("name"), str) and "not_run" not in p and p["name"] not in mv.deferred_tools
               and p["name"] not in nameless and (p.get("id") in (None, "") or str(p["id"]) not in ids)]
    if not pending:
        ran = [p["name"] for p in parts if isinstance(p.get("name"), str) and "not_run" not in p and p["name"] not in mv.deferred_tools]
        if ran and av.error is None:  # (every call ran, and no request sent their results: the application stopped there)
            av.error = STOPPED_AFTER.format(names=", ".join(dict.fromkeys(ran)))
        return
    if any(p.get("id") in (None, "") for p in pending):
        return  # (a call with no id cannot be told from the spans that ran)
    for p in pending:
        p["not_run"] = unrun(av.error)
    if av.error is None:
        av.error = STOPPED.format(names=", ".join(dict.fromkeys(p["name"] for p in pending)))
