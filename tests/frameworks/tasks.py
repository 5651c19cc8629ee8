"""The scripted tasks every framework recording runs: tools as plain functions, model script, ground truth.

A task is a list of user turns; for each turn, the model's replies in order (`Reply`: text, or
tool calls in one response). `reply_for(messages, tools)` is the fake model: it finds the task and
turn by the user text in the conversation (the last message containing a known user turn) and the
step by how many tool rounds follow it (see `_locate`). When the request
offers a `final_answer` tool (smolagents), the final text is sent as a call to it, as smolagents'
own models do.

`truth(task, **overrides)` is the ground-truth record written beside each recording:
`{"input", "user_turns", "calls": [{"name", "arguments", "result", "error"}], "output"}`;
`result` is the tool's return value as the model received it, `error` the failure text.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["TASKS", "TOOLS", "Task", "reply_for", "selected", "truth"]


def get_weather(city: str) -> str:
    """Current weather in a city.

    Args:
        city: The city name, e.g. "Paris".
    """
    return {"Paris": "sunny, 21 C", "Tokyo": "rainy, 14 C"}[city]


def convert_temperature(celsius: float, to: str) -> str:
    """Convert a Celsius temperature.

    Args:
        celsius: The temperature in degrees Celsius.
        to: The target unit, "F" or "K".
    """
    return f"{celsius * 9 / 5 + 32:.1f} F" if to == "F" else f"{celsius + 273.15:.2f} K"


def search_flights(origin: str, destination: str, date: str) -> str:
    """Search direct flights.

    Args:
        origin: IATA code of the departure airport.
        destination: IATA code of the arrival airport.
        date: Departure date, YYYY-MM-DD.
    """
    return json.dumps([{"flight_number": "HAT170", "origin": origin, "destination": destination, "date": date, "price": 320}])


def book_reservation(user_id: str, flight_number: str, cabin: str, passengers: list[dict], payment: dict) -> str:
    """Book a reservation.

    Args:
        user_id: The customer id.
        flight_number: The flight to book.
        cabin: "economy" or "business".
        passengers: Passengers, each with first_name, last_name and dob.
        payment: Payment method, with payment_id and amount.
    """
    return f"reservation R7F3K2 confirmed: {len(passengers)} passenger(s) on {flight_number} ({cabin}), paid {payment['amount']} with {payment['payment_id']}"


def cancel_order(order_id: str) -> str:
    """Cancel an order.

    Args:
        order_id: The order id, e.g. "#W123".
    """
    raise ValueError(f"order {order_id} not found")


TOOLS = {f.__name__: f for f in (get_weather, convert_temperature, search_flights, book_reservation, cancel_order)}


@dataclass(frozen=True)
class Reply:
    """One model response: `text`, or `calls` as (name, arguments) made in this one response."""

    text: str | None = None
    calls: tuple[tuple[str, dict[str, Any]], ...] = ()


@dataclass(frozen=True)
class Task:
    """A scripted task: `turns[i]` is a user message, `script[i]` the model's replies to it in order."""

    name: str
    turns: tuple[str, ...]
    script: tuple[tuple[Reply, ...], ...]
    tools: tuple[str, ...]
    extra: dict[str, Any] = field(default_factory=dict)


_BOOKING_ARGS = {
    "user_id": "mia_li_3668",
    "flight_number": "HAT170",
    "cabin": "economy",
    "passengers": [{"first_name": "Mia", "last_name": "Li", "dob": "1990-04-05"}, {"first_name": "Noah", "last_name": "Li", "dob": "2015-09-12"}],
    "payment": {"payment_id": "credit_card_4421", "amount": 640},
}

TASKS = {t.name: t for t in (
    Task("sequence", ("What is the weather in Paris, in Fahrenheit?",),
         ((Reply(calls=(("get_weather", {"city": "Paris"}),)), Reply(calls=(("convert_temperature", {"celsius": 21, "to": "F"}),)),
           Reply("It is sunny in Paris: 21 C, which is 69.8 F.")),),
         ("get_weather", "convert_temperature")),
    Task("booking", ("Book the cheapest JFK to SFO flight on 2024-05-20 in economy for me (user mia_li_3668) and my son Noah Li, born 2015-09-12; I am Mia Li, born 1990-04-05. Pay with credit_card_4421.",),
         ((Reply(calls=(("search_flights", {"origin": "JFK", "destination": "SFO", "date": "2024-05-20"}),)),
           Reply(calls=(("book_reservation", _BOOKING_ARGS),)),
           Reply("Booked: reservation R7F3K2 on HAT170 (economy) for Mia and Noah Li, 640 paid with credit_card_4421.")),),
         ("search_flights", "book_reservation")),
    Task("parallel", ("Compare the weather in Paris and Tokyo right now.",),
         ((Reply(calls=(("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Tokyo"}))),
           Reply("Paris is sunny at 21 C; Tokyo is rainy at 14 C.")),),
         ("get_weather",)),
    Task("failing", ("Please cancel my order #W999.",),
         ((Reply(calls=(("cancel_order", {"order_id": "#W999"}),)),
           Reply("I could not cancel order #W999: it was not found. Please check the order number.")),),
         ("cancel_order",)),
    Task("multiturn", ("Is it sunny in Paris at the moment?", "And what about Tokyo?"),
         ((Reply(calls=(("get_weather", {"city": "Paris"}),)), Reply("Yes, it is sunny in Paris (21 C).")),
          (Reply(calls=(("get_weather", {"city": "Tokyo"}),)), Reply("No, it is rainy in Tokyo (14 C)."))),
         ("get_weather",)),
)}


def selected() -> list[str]:
    """The tasks to record: `RECORD_TASKS` (comma-separated names, set by `record.py --task`), else all."""
    names = [n for n in os.environ.get("RECORD_TASKS", "").split(",") if n]
    unknown = set(names) - set(TASKS)
    if unknown:
        raise ValueError(f"RECORD_TASKS names unknown tasks {sorted(unknown)}; known: {sorted(TASKS)}")
    return names or list(TASKS)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content)
    return "" if content is None else str(content)


_ROUND_MARK = re.compile(r"(?m)^(?:Observation|Error):\n")  # smolagents: a tool round comes back as user text


def _locate(messages: list[dict[str, Any]]) -> tuple[Task, int, int]:
    """(task, user turn, step): the step counts the tool rounds after the turn's user text.

    A round is a run of `tool` messages, or (smolagents, which sends results as user text and
    merges adjacent user messages) one `Observation:`/`Error:` block.
    """
    for pos in range(len(messages) - 1, -1, -1):
        if messages[pos].get("role") not in ("user", "human"):
            continue
        text = _text(messages[pos].get("content"))
        for task in TASKS.values():
            for turn, user in enumerate(task.turns):
                if user in text:
                    rest = messages[pos + 1:]
                    roles = [m.get("role") for m in rest]
                    steps = sum(1 for i, r in enumerate(roles) if r == "tool" and (i == 0 or roles[i - 1] != "tool"))
                    tails = [text.split(user, 1)[1]] + [_text(m.get("content")) for m in rest if m.get("role") == "user"]
                    steps += sum(len(_ROUND_MARK.findall(t)) for t in tails)
                    return task, turn, steps
    raise LookupError("no known task text in the conversation's user messages")


def _call_id(task: Task, turn: int, step: int, i: int) -> str:
    return f"call_{task.name[:4]}_{turn}{step}{i}"


def reply_for(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> tuple[dict[str, Any], dict[str, int]]:
    """The scripted assistant message and usage for this conversation; LookupError when it matches no task or step."""
    task, turn, step = _locate(messages)
    script = task.script[turn]
    if step >= len(script):
        raise LookupError(f"task {task.name!r} turn {turn} has {len(script)} scripted replies; the conversation already holds {step}")
    reply = script[step]
    offered = {(t.get("function") or t).get("name") for t in tools or []}
    calls = list(reply.calls)
    if reply.text is not None and "final_answer" in offered:
        calls = [("final_answer", {"answer": reply.text})]
    usage = {"prompt_tokens": 100 + 10 * step + 50 * turn, "completion_tokens": 20 + step}
    usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    if not calls:
        return {"role": "assistant", "content": reply.text}, usage
    tool_calls = [{"id": _call_id(task, turn, step, i), "type": "function", "function": {"name": n, "arguments": json.dumps(a)}} for i, (n, a) in enumerate(calls)]
    return {"role": "assistant", "content": None, "tool_calls": tool_calls}, usage


def truth(task: Task, *, error_result: Any = None, error: Any = None, **fields: Any) -> dict[str, Any]:
    """The ground truth of `task` run to completion; `error_result`/`error` say how a raising tool was recorded.

    Each call's `result` is the tool's return value; a call that raised gets `result=error_result`
    and `error=error` (what this framework records for it). `fields` override top-level keys.
    """
    calls: list[dict[str, Any]] = []
    for replies in task.script:
        for reply in replies:
            for name, args in reply.calls:
                try:
                    result, err = TOOLS[name](**args), None
                except ValueError:
                    result, err = error_result, error
                calls.append({"name": name, "arguments": args, "result": result, "error": err})
    out = {"input": task.turns[0], "user_turns": list(task.turns), "calls": calls, "output": task.script[-1][-1].text}
    return out | fields
