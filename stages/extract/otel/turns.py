"""Turns of one conversation: the rows `assemble` made per anchor, laid out as steps, user messages and the case.

A turn is one user exchange (see the package docstring). `Builder.add_anchor`
joins an anchor to the previous turn when it is the same exchange (same trace
and user text, or a request that replays the previous one: `stitch.continues`),
never a resumed LangGraph run, whose resume value is a user turn (`pauses`), nor
an anchor of another of the runs started side by side under one span (`concurrent`);
`Builder.case` lays a turn's requests out as steps (the requests of an agent
run inside a tool call after the request that made the call: `nesting`), picks
each turn's final text and writes the case mapping; usage is summed by `tally`.
An anchor that is an agent run started inside a tool call, which OpenLLMetry's
openai-agents instrumentation parents on the workflow instead of the call
(`conventions.openllmetry_agents`), is no turn: its rows join the turn of that
call, inside it.
"""

from __future__ import annotations

from typing import Any

from tracejudge.stages.extract.otel.conventions.pydantic_ai import REFUSED
from tracejudge.stages.extract.otel.conventions.pydantic_ai_deferred import held
from tracejudge.stages.extract.otel.messages import last_user_text, reasoning_text, said_text, trailing_user_texts, user_contents, user_texts
from tracejudge.stages.extract.otel.conventions.openllmetry_agents import Hosts, calls_of, mend_errors, warn_unrecorded
from tracejudge.stages.extract.otel.nesting import Within, adopt, in_call_order, nested_entry
from tracejudge.stages.extract.otel.pauses import add_question, question_text
from tracejudge.stages.extract.otel.spans import Group, Span
from tracejudge.stages.extract.otel.stitch import continues
from tracejudge.stages.extract.otel.tally import Tally
from tracejudge.stages.extract.otel.value_limit import cut_summary
from tracejudge.stages.extract.otel.view import MISSING, View

__all__ = ["Builder", "Row"]


class Row:
    """One model request of a turn (or `model=None`: calls made before any request)."""

    __slots__ = ("model", "text", "calls", "deferred", "delegated", "error", "within", "agent", "answered", "before", "replied", "one_step")

    def __init__(self, model: Span | None, text: str | None) -> None:
        self.model = model
        self.text = text
        self.delegated = False  # a request inside a tool's span (an agent called as a tool): its text is the tool's result
        self.calls: list[tuple[tuple[int, int, int], dict[str, Any]]] = []
        self.deferred: list[dict[str, Any]] = []
        self.error: str | None = None  # the framework refused the answer the request gave (pydantic-ai's output validation)
        self.within: Any = None  # the `calls.Tool` (or `nesting.Within`) whose execution made this request (an agent called as a tool)
        self.agent: str | None = None  # the name of that agent, when an agent span inside the call names it
        self.answered: str | None = None  # the answer its code gave (`assemble._code_answers`): its text is then thought
        # It ran a server tool and answered (`server_tools.server_reply`): `text` is the reply after it, the step's output
        # even beside its calls, and `before` what it said before, a thought.
        self.replied = False
        self.before: str | None = None
        # Calls of no request that ran one after the other are still one step (`nesting.in_call_order`): the agent's
        # steps run their calls in turn (a smolagents CodeAgent's code), not side by side.
        self.one_step = False


class Builder:
    """Accumulates turns, then lays out steps, user messages and the case mapping."""

    def __init__(self, views: dict[str, View]) -> None:
        self.views = views
        self.turns: list[dict[str, Any]] = []
        self.orphan_deferred: list[dict[str, Any]] = []
        self.retried: list[tuple[dict[str, Any], list[str | None]]] = []  # a retried call, and its earlier attempts' errors, None for one that returned (`retries`)
        self.hosts = Hosts(views)  # the calls an agent run OpenLLMetry's openai-agents left under the workflow may have run inside

    def add_anchor(self, a: Span, av: View, mem: list[Span], rows: list[Row], error: str | None = None,
                   paused: list[tuple[str | None, Any]] | None = None, reply: Any = MISSING, run: str | None = None) -> None:
        """Add one anchor's rows; an anchor of the same trace and run with the same user text joins the previous turn.

        `error` is the error the anchor's run ended in (`None`: it ended normally); the turn keeps its last anchor's.
        `paused`: the LangGraph interrupts the run stopped at; `reply`: the value it was resumed with (`MISSING`:
        not a resumed run), which is the turn's user text and starts a turn of its own (`pauses`). `run`: the span id
        heading the run the anchor is in when runs were started side by side under one span (`concurrent`), else
        `None`; an anchor never joins a turn of another run, even with the same question (two trials of one case).
        An anchor that ran inside a call of an earlier anchor (`Hosts.host`) joins that call's turn, inside the call
        (`nesting.adopt`): its error is that call's, its question and answer the call's arguments and result.
        """
        pairs = calls_of(mem, rows, self.views)  # OpenLLMetry's openai-agents tool spans and their calls: empty for any other
        mend_errors(pairs, self.views)  # (its failed tool's error is the SDK's error object as Python text)
        host = self.hosts.host(a)
        if host is not None:
            span, call, turn = host
            adopt(rows, Within(span, call), av.agent_name)
            self._fill(turn, mem, rows)
        else:
            turn = self._turn(a, av, mem, rows, error, paused, reply, run)
        self.hosts.add(pairs, turn)

    def _turn(self, a: Span, av: View, mem: list[Span], rows: list[Row], error: str | None,
              paused: list[tuple[str | None, Any]] | None, reply: Any, run: str | None) -> dict[str, Any]:
        """The turn anchor `a` starts or joins (`add_anchor`), with its rows added."""
        model_rows = [r for r in rows if r.model is not None]
        first_inputs = next((self.views[r.model.span_id].inputs for r in model_rows if self.views[r.model.span_id].inputs), None)  # type: ignore[union-attr]
        asked = next((last_user_text(self.views[r.model.span_id].inputs or []) for r in model_rows if last_user_text(self.views[r.model.span_id].inputs or [])), None)  # type: ignore[union-attr]
        user_text = reply if reply is not MISSING else _pick_request(av.request, asked)
        last = self.turns[-1] if self.turns else None
        if last is not None and reply is MISSING and last["_run"] == run and (
                av.resumed  # a run that sent no prompt of its own goes on with the one before (pydantic-ai's resumed run)
                or (last["_trace"] == a.trace_id or self._continues(last, model_rows)) and (user_text is None or user_text == last["user_text"])):
            turn = last
        else:
            turn = {"_trace": a.trace_id, "_run": run, "user_text": user_text, "_rows": [], "_final": None, "_agents": set(), "_usage": Tally(), "_history": None,
                    "_error": None, "_asked": [], "_held": False, "_before": [], "_said": user_text, "_after": []}
            self.turns.append(turn)
            if first_inputs is not None:
                turn["_history"] = user_texts(first_inputs)
                turn["_before"] = _said_before(first_inputs, user_text, self._users_sent(last))
                turn["_said"] = _own_said(first_inputs, user_text)
                turn["_after"] = _photos_after(first_inputs, user_text)
        turn["_error"] = error
        turn["_held"] = held(a)  # (pydantic-ai's run paused on deferred calls: no answer, even once a later run resumed them)
        turn["_asked"].extend(paused or [])
        if av.answer:
            turn["_final"] = av.answer
        self._fill(turn, mem, rows)
        return turn

    def _fill(self, turn: dict[str, Any], mem: list[Span], rows: list[Row]) -> None:
        """Add an anchor's `rows` to `turn`, with the agents among `mem` and the requests' usage."""
        turn["_rows"].extend(rows)
        model_rows = [r for r in rows if r.model is not None]
        for s in mem:
            v = self.views[s.span_id]
            # (a chain names an agent when it is a named LangGraph graph's or runnable's run: `conventions.graph_names`; a
            # tool when an agent ran as the call, a smolagents managed agent's run read as its manager's call: `conventions.smolagents`)
            if v.role in ("agent", "chain", "tool") and v.agent_name:
                turn["_agents"].add(v.agent_name)
        for r in model_rows:
            mv = self.views[r.model.span_id]  # type: ignore[union-attr]
            # (a request whose answer pydantic-ai refused did answer: not a failed one, `conventions.pydantic_ai.retry_feedback`)
            turn["_usage"].add(mv.usage_in, mv.usage_out, mv.error is not None and not mv.error.startswith(REFUSED))

    def _users_sent(self, turn: dict[str, Any] | None) -> list[Any] | None:
        """What the user messages the latest request of `turn` sent said (`messages.user_contents`; `None`: no turn, or
        none of its requests recorded inputs)."""
        done = [r for r in (turn or {}).get("_rows", []) if r.model is not None and self.views[r.model.span_id].inputs]
        if not done:
            return None
        latest = max(done, key=lambda r: (r.model.start, r.model.span_id))  # type: ignore[union-attr]
        return user_contents(self.views[latest.model.span_id].inputs or [])  # type: ignore[union-attr]

    def _continues(self, turn: dict[str, Any], rows: list[Row]) -> bool:
        """Whether an anchor of another trace goes on with `turn`: its first request replays the turn's last one.

        A model-only instrumentation inside a session (OpenInference's `using_session` around a plain
        loop) writes each request as a trace of its own; the request after a tool round is the same
        user exchange, not a new turn (see `stitch.continues`).
        """
        done = [r for r in turn["_rows"] if r.model is not None]
        if not done or not rows:
            return False
        previous = max(done, key=lambda r: (r.model.start, r.model.span_id))  # type: ignore[union-attr]
        return continues(self.views[previous.model.span_id], self.views[rows[0].model.span_id])  # type: ignore[union-attr]

    def case(self, group: Group, answer_tool_text: str | None, documents: list[dict[str, Any]], conventions: dict[str, dict[str, int]]) -> dict[str, Any]:
        """The native case mapping of everything added."""
        warn_unrecorded(group, self.views)
        steps: list[dict[str, Any]] = []
        user_messages: list[dict[str, Any]] = []
        meta_turns = []
        deferred_out: list[dict[str, Any]] = []
        calls_total = requests = 0
        usage = Tally()
        numbers: dict[int, int] = {}  # each call laid out, by `id`: its index in `trace.tool_calls()`
        nested: list[dict[str, Any]] = []
        for turn in self.turns:
            rows = in_call_order(sorted(turn["_rows"], key=lambda r: (r.model.start if r.model is not None else -1)))
            first_step, first_call = len(steps), calls_total
            if turn["user_text"] is not None or turn["_after"]:
                said = [*turn["_before"], turn["_said"]] if turn["user_text"] is not None else []
                user_messages.extend({"step": len(steps), "content": text} for text in [*said, *turn["_after"]])
            history = turn["_history"]
            for r in rows:
                if r.model is not None:
                    if not r.delegated:  # a delegate's user message is the calling agent's words, not the user's
                        history = self._new_user_turns(r.model, history, len(steps), user_messages)
                    deferred_out.extend({**d, "step": len(steps)} for d in r.deferred)
                    requests += 1
                if (entry := nested_entry(r, len(steps), numbers)) is not None:
                    nested.append(entry)
                calls = [c for _, c in sorted(r.calls, key=lambda e: e[0])]
                numbers.update((id(c), calls_total + k) for k, c in enumerate(calls))
                calls_total += len(calls)
                # A request's reasoning (a Responses API summary, `reasoning` content) is its step's thought, never its output.
                thought = reasoning_text(self.views[r.model.span_id].outputs or []) if r.model is not None else None
                if r.replied:  # (the server calls are its calls, the reply after them its output: as `anthropic-messages` reads it)
                    step = {"thought": "\n".join(t for t in (thought, r.before) if t) or None, "tool_calls": calls, "output": r.text}
                elif calls or r.deferred:  # (a call held back, pydantic-ai's deferred one, was made too: the words announced it)
                    step = {"thought": "\n".join(t for t in (thought, _said(r)) if t) or None, "tool_calls": calls}
                    if r.answered is not None:  # the answer given through an output tool beside the calls: the step's output
                        step["output"] = r.answered
                elif r.answered is not None:  # words and code that gave the answer: reasoning, and the answer its output
                    step = {"thought": "\n".join(t for t in (thought, _said(r)) if t) or None, "output": r.answered}
                else:
                    step = {"thought": thought, "output": r.text}
                failed = (self.views[r.model.span_id].error or r.error) if r.model is not None else None
                if failed is not None:  # the request failed as recorded (a retried 500): said, not an empty step
                    step["error"] = failed
                steps.append(step)
            # a delegate's words reach the user only through the calling agent: not the turn's own texts
            own = [r for r in rows if r.model is not None and not r.delegated] or [r for r in rows if r.model is not None]
            model_texts = [r.text for r in own]
            if turn["_asked"]:  # the run paused to ask the human: the question is what it ended on (`pauses`)
                final, inter = question_text(turn["_asked"]), [t for t in model_texts if t]
                add_question(steps, first_step, final)
            elif turn["_final"] is not None:
                final = turn["_final"]
                inter = [t for t in model_texts if t]
                if inter and inter[-1] == final:
                    inter = inter[:-1]
            elif _stopped(turn, own) or turn["_held"]:
                final, inter = None, [t for t in model_texts if t]  # the run raised (or paused) after its last reply: that text was never the answer
            else:
                final = model_texts[-1] if model_texts else None
                inter = [t for t in model_texts[:-1] if t]
            usage.merge(turn["_usage"])
            asked = sum(1 for r in rows if r.model is not None)
            meta_turns.append(
                {
                    "user_text": turn["user_text"],
                    "final_text": final,
                    "intermediate_texts": inter,
                    "agents": sorted(turn["_agents"]),
                    "steps": [first_step, len(steps)],
                    "calls": [first_call, calls_total],
                    "usage": turn["_usage"].usage(asked),
                }
            )
            if turn["_before"]:  # only then: other cases stay as they were
                meta_turns[-1]["user_texts"] = [*turn["_before"], turn["user_text"]]
            if turn["_usage"].unmetered:  # only then: other cases stay as they were
                meta_turns[-1]["usage"]["requests_without_usage"] = turn["_usage"].unmetered
            if turn["_error"] is not None:  # only a failed run's turn gets the key: other cases stay as they were
                meta_turns[-1]["error"] = turn["_error"]
        # (not for a turn that ended in an error: the run raised before any answer; an answer tool's text, an earlier run's
        # `final_answer` of the same conversation among them, is not its answer: `smolagents_raised`)
        if meta_turns and meta_turns[-1]["final_text"] is None and answer_tool_text is not None and meta_turns[-1].get("error") is None:
            meta_turns[-1]["final_text"] = answer_tool_text
        # Each user message is one text, as format `openai-messages` reads them: the first is the input, the rest turns.
        # (a message with images is its text here, as there: an image sent alone is in `trace.user_messages` alone)
        texts = [said_text(text) for t in meta_turns for text in t.get("user_texts", [t["user_text"]])]
        otel: dict[str, Any] = {
            "group_key": group.key_attr or "trace_id",
            "traces": group.traces,
            "turns": meta_turns,
            "deferred": deferred_out + self.orphan_deferred,
            "conventions": conventions,
        }
        duplicates = [s.span_id for s in group.spans if s.copies_differ]
        if duplicates:
            otel["duplicates"] = duplicates
        lost = [s.dropped_attributes for s in group.spans if s.dropped_attributes]
        if lost:  # spans past the attribute limit per span (`dropped`): only then, other cases stay as they were
            otel["dropped_attributes"] = {"spans": len(lost), "attributes": sum(lost)}
        if (cut := cut_summary(group.spans)) is not None:  # values cut at the length limit (`value_limit`): only then
            otel["cut_attributes"] = cut
        retried = sorted(({"call": numbers[id(c)], "name": c["name"], "id": c["id"], "attempts": len(errs) + 1,
                           "errors": [e for e in errs if e is not None]}
                          for c, errs in self.retried if id(c) in numbers), key=lambda r: r["call"])
        if retried:  # only then: other cases stay as they were
            otel["retried"] = retried
        metadata: dict[str, Any] = {"otel": otel}
        if meta_turns and meta_turns[-1].get("error") is not None:
            metadata["run_error"] = meta_turns[-1]["error"]  # the run ended in this error (the judge is told: `trace_text.run_error`)
        if nested:  # only then: other cases stay as they were
            metadata["nested_steps"] = nested
        if usage.unmetered:  # the token counts are unknown, not a sum of the requests that recorded them (`tally`)
            metadata["requests_without_usage"] = usage.unmetered
        return {
            "id": group.case_id,
            "input": texts[0] if texts else None,
            "turns": [t for t in texts[1:] if t is not None],
            "tags": ["otel"],
            "metadata": metadata,
            "trace": {
                "steps": steps,
                "user_messages": user_messages,
                "output": meta_turns[-1]["final_text"] if meta_turns else None,
                "usage": usage.usage(requests),
                "retrieved": documents,
            },
        }

    def _new_user_turns(self, model: Span, history: list[str] | None, step: int, out: list[dict[str, Any]]) -> list[str] | None:
        """User messages a request's history adds to the previous one's (the user spoke again mid-turn)."""
        inputs = self.views[model.span_id].inputs
        if not inputs:
            return history
        users = user_texts(inputs)
        if history is None:
            return users
        if len(users) > len(history) and users[: len(history)] == history:
            out.extend({"step": step, "content": text} for text in users[len(history) :])
            return users
        return history if len(users) < len(history) or users[: len(history)] != history else users


def _said_before(inputs: list[dict[str, Any]], user_text: str | None, sent: list[Any] | None) -> list[Any]:
    """The user messages the turn's first request added in a row before the one that is the turn's `user_text`.

    Only when that request's last user message is the turn's text: an anchor that recorded other words (a framework's
    task, a resume value) keeps its own text alone. `sent`: the user texts the previous turn's latest request sent;
    when they begin this request's, only the messages after them are new (an app that keeps only the user's turns
    sends the earlier questions in a row before the new one: said before, not again).
    """
    said, _ = _photos_last(trailing_user_texts(inputs))
    if user_text is None or not said or said_text(said[-1]) != user_text:
        return []
    users = user_contents(inputs)  # (an image sent alone is a user message too: `messages.user_content`)
    if sent is not None and users[: len(sent)] == sent:
        said = said[-max(1, len(users) - len(sent)):]
    return said[:-1]


def _own_said(inputs: list[dict[str, Any]], user_text: str | None) -> Any:
    """The turn's own user message as `messages.user_content` reads it (a photo beside its words kept with them), when the
    turn's first request ends on that message; else the turn's text (`user_text`)."""
    said, _ = _photos_last(trailing_user_texts(inputs))
    return said[-1] if user_text is not None and said and said_text(said[-1]) == user_text else user_text


def _photos_last(said: list[Any]) -> tuple[list[Any], list[Any]]:
    """`said` (`messages.trailing_user_texts`) split before the messages of images alone that end it."""
    k = len(said)
    while k and said_text(said[k - 1]) is None:
        k -= 1
    return said[:k], said[k:]


def _photos_after(inputs: list[dict[str, Any]], user_text: str | None) -> list[Any]:
    """The messages of images alone the turn's first request sent after the turn's text (a question, then the photo it
    is about), or every message it sent when all are images alone (a photo sent without words); else `[]`."""
    said, photos = _photos_last(trailing_user_texts(inputs))
    if user_text is None:
        return photos if not said else []
    return photos if said and said_text(said[-1]) == user_text else []


def _said(row: Row) -> str | None:
    """The request's own words: its text, unless that is only the answer it gave through a tool (`Row.answered`)."""
    return None if row.answered is not None and row.text == row.answered else row.text


def _stopped(turn: dict[str, Any], own: list[Row]) -> bool:
    """Whether the turn's run ended in an error after its last reply, so that reply's text is no final output.

    It did when the run ended in an error (its agent span failed: a raised exception, "Max turns exceeded",
    a cancelled run, a tripped guardrail). A run that raised returned nothing: a reply that announced calls
    that never got answered, and a reply the framework then refused (the Agents SDK's output guardrail
    tripping on it), reached no one as the answer. The text stays the step's (and an intermediate text).
    An agent span that recorded its answer is not asked (the caller got it). A run that ended normally keeps
    the reply's text. A tool span that recorded neither a result nor an error is no sign of an error:
    Langfuse records a tool that returned None so, and also one a `KeyboardInterrupt` stopped (which it does
    not record), and a normal run must keep its output.
    """
    return bool(own) and turn["_error"] is not None


def _pick_request(recorded: Any, asked: str | None) -> str | None:
    """The turn's user text: the anchor's recorded input, else what its first model request was asked.

    When the anchor recorded a function's arguments (several candidate
    strings), the candidate the model was asked wins: one equal to it, else
    the longest one it contains (a framework's wrapper such as smolagents'
    "New task:" around the task; the longest, because a short argument such as
    a city's name is contained in the question that names it too), else the
    model's own user message, else the first candidate.
    """
    if isinstance(recorded, str) and recorded:
        return recorded
    if isinstance(recorded, list) and recorded:
        if asked is not None:
            if asked in recorded:
                return asked
            inside = [text for text in recorded if len(text) > 3 and text in asked]
            return max(inside, key=len) if inside else asked
        return recorded[0]
    return asked
