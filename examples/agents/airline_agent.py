"""A small, deterministic airline agent to run live under tracejudge (a `python` target).

It stands in for an LLM agent in a nightly regression sweep over the τ-bench
airline tasks, so the sweep itself can be shown and tested without a model:

- the environment is an in-memory fake airline database, fresh for every
  conversation (so every trial starts from the same state), with users,
  payment methods and reservations seeded from the τ-bench task definitions;
- every call goes through the τ-bench airline tool schemas
  (`tau_bench/tools/tools_airline.json`): arguments are checked against the
  tool's JSON schema and a bad call comes back as `"Error: ..."`, as τ-bench's
  own environment reports it;
- the agent's plan comes from a scripted user who states exactly what the
  task wants (the task's `actions`): the stand-in for what an LLM would work
  out from a conversation. The agent looks up the user and each reservation
  it touches, then makes the changes;
- it slips like a real agent does, deterministically: a pseudo-random stream
  seeded by (task, trial) makes it now and then pay with the wrong card, get
  a count wrong, stop early, or make a change nobody asked for, so trials of
  one task differ; and on some tasks (seeded by the task alone) it has a
  blind spot, the same wrong argument in every trial. So pass@1 and pass@3
  say different things, and neither is 1.

`respond(request)` is the target: it takes a `TargetRequest` (or its JSON
mapping) and returns `{"output": ..., "trace": ...}` with the native trace.
The τ-bench data folder defaults to `../shared/data/tau_bench` beside the
repository; set `TAU_BENCH_DATA` to point elsewhere.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import random
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

__all__ = ["FakeAirline", "respond"]

DATA = Path(os.environ.get("TAU_BENCH_DATA") or Path(__file__).resolve().parents[2].parent / "shared" / "data" / "tau_bench")

# How often the agent slips, per change it makes (and per task that needs none).
P_WRONG_ARGUMENT = 0.15
P_STOP_EARLY = 0.07
P_UNASKED_CHANGE = 0.15
P_BLIND_SPOT = 0.12  # per task: the first change always goes wrong the same way

READ_TOOLS = {"get_user_details", "get_reservation_details", "search_direct_flight", "search_onestop_flight", "list_all_airports", "calculate", "think"}


@lru_cache(maxsize=1)
def _schemas() -> dict[str, dict[str, Any]]:
    with open(DATA / "tools" / "tools_airline.json", encoding="utf-8") as fh:
        return {t["function"]["name"]: t["function"]["parameters"] for t in json.load(fh)}


@lru_cache(maxsize=1)
def _tasks() -> dict[int, dict[str, Any]]:
    with open(DATA / "tasks" / "tasks_airline_test.json", encoding="utf-8") as fh:
        return {t["task_index"]: t for t in json.load(fh)}


_TYPES = {"object": dict, "string": str, "array": list, "boolean": bool}


def schema_errors(value: Any, schema: dict[str, Any], where: str = "") -> list[str]:
    """The ways `value` breaks `schema` (the JSON-schema subset the τ-bench tools use)."""
    kind = schema.get("type")
    if kind == "integer":
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif kind == "number":
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    else:
        ok = kind is None or isinstance(value, _TYPES[kind])
    if not ok:
        return [f"{where or 'arguments'}: expected {kind}"]
    if "enum" in schema and value not in schema["enum"]:
        return [f"{where}: {value!r} is not one of {schema['enum']}"]
    errors: list[str] = []
    if kind == "object":
        for key in schema.get("required", []):
            if key not in value:
                errors.append(f"{where + '.' if where else ''}{key}: required")
        for key, sub in schema.get("properties", {}).items():
            if key in value:
                errors += schema_errors(value[key], sub, f"{where + '.' if where else ''}{key}")
    if kind == "array" and "items" in schema:
        for i, item in enumerate(value):
            errors += schema_errors(item, schema["items"], f"{where}[{i}]")
    return errors


class FakeAirline:
    """An in-memory airline database behind the τ-bench airline tools.

    Seeded from every task's actions: a user has the payment methods and the
    reservations its tasks name. `call(name, arguments)` returns
    `(result, error)`; writes change the state (a cancelled reservation
    cannot be changed again).
    """

    def __init__(self) -> None:
        self.users: dict[str, dict[str, Any]] = {}
        self.reservations: dict[str, dict[str, Any]] = {}
        for task in _tasks().values():
            user = self.users.setdefault(task["user_id"], {"user_id": task["user_id"], "payment_methods": {}, "reservations": []})
            for action in task["actions"]:
                kw = action["kwargs"]
                for pid in [kw.get("payment_id"), *[p.get("payment_id") for p in kw.get("payment_methods", [])]]:
                    if pid:
                        user["payment_methods"][pid] = {"id": pid, "source": pid.rsplit("_", 1)[0]}
                rid = kw.get("reservation_id")
                if rid and rid not in self.reservations:
                    self.reservations[rid] = {"reservation_id": rid, "user_id": task["user_id"], "status": "active", "cabin": "economy", "total_baggages": 0}
                    user["reservations"].append(rid)
        self._next = 0

    def call(self, name: str, arguments: dict[str, Any]) -> tuple[Any, str | None]:
        schema = _schemas().get(name)
        if schema is None:
            return None, f"Error: unknown tool {name}"
        problems = schema_errors(arguments, schema)
        if problems:
            return None, "Error: " + "; ".join(problems)
        handler = getattr(self, "_" + name, None)
        if handler is None:  # read-only tools with no state to consult
            return {"ok": True}, None
        try:
            return handler(**arguments), None
        except LookupError as exc:
            return None, f"Error: {exc.args[0]}"

    def _user(self, user_id: str) -> dict[str, Any]:
        if user_id not in self.users:
            raise LookupError("user not found")
        return self.users[user_id]

    def _reservation(self, reservation_id: str, active: bool = False) -> dict[str, Any]:
        res = self.reservations.get(reservation_id)
        if res is None:
            raise LookupError("reservation not found")
        if active and res["status"] != "active":
            raise LookupError("reservation is already cancelled")
        return res

    def _get_user_details(self, user_id: str) -> dict[str, Any]:
        return copy.deepcopy(self._user(user_id))

    def _get_reservation_details(self, reservation_id: str) -> dict[str, Any]:
        return copy.deepcopy(self._reservation(reservation_id))

    def _cancel_reservation(self, reservation_id: str) -> dict[str, Any]:
        res = self._reservation(reservation_id, active=True)
        res["status"] = "cancelled"
        return copy.deepcopy(res)

    def _pay(self, user_id: str, payment_id: str) -> None:
        if payment_id not in self._user(user_id)["payment_methods"]:
            raise LookupError("payment method not found")

    def _update_reservation_flights(self, reservation_id: str, cabin: str, flights: list[Any], payment_id: str) -> dict[str, Any]:
        res = self._reservation(reservation_id, active=True)
        self._pay(res["user_id"], payment_id)
        res.update(cabin=cabin, flights=flights)
        return copy.deepcopy(res)

    def _update_reservation_baggages(self, reservation_id: str, total_baggages: int, nonfree_baggages: int, payment_id: str) -> dict[str, Any]:
        res = self._reservation(reservation_id, active=True)
        self._pay(res["user_id"], payment_id)
        res.update(total_baggages=total_baggages, nonfree_baggages=nonfree_baggages)
        return copy.deepcopy(res)

    def _update_reservation_passengers(self, reservation_id: str, passengers: list[Any]) -> dict[str, Any]:
        res = self._reservation(reservation_id, active=True)
        res["passengers"] = passengers
        return copy.deepcopy(res)

    def _book_reservation(self, user_id: str, payment_methods: list[Any], **details: Any) -> dict[str, Any]:
        user = self._user(user_id)
        for pm in payment_methods:
            self._pay(user_id, pm["payment_id"])
        self._next += 1
        rid = f"NEW{self._next:03d}"
        self.reservations[rid] = {"reservation_id": rid, "user_id": user_id, "status": "active", **details}
        user["reservations"].append(rid)
        return copy.deepcopy(self.reservations[rid])

    def _send_certificate(self, user_id: str, amount: float) -> str:
        self._user(user_id)
        return f"Certificate of {amount} sent to {user_id}."


def _slip(action: dict[str, Any], db: FakeAirline, user_id: str, rng: random.Random) -> dict[str, Any] | None:
    """The action with one plausible mistake in its arguments, or `None` when none fits."""
    kw = copy.deepcopy(action["kwargs"])
    methods = sorted(db.users.get(user_id, {}).get("payment_methods", {}))
    if "payment_id" in kw and len(methods) > 1:
        kw["payment_id"] = rng.choice([m for m in methods if m != kw["payment_id"]])
    elif "total_baggages" in kw:
        kw["total_baggages"] += 1
    elif "payment_methods" in kw:
        kw["insurance"] = "yes" if kw.get("insurance") == "no" else "no"
    elif "amount" in kw:
        kw["amount"] += 50
    elif "cabin" in kw:
        kw["cabin"] = "business" if kw["cabin"] != "business" else "economy"
    else:
        return None
    return {"name": action["name"], "kwargs": kw}


def _seed(task_id: Any, trial: int) -> int:
    return int.from_bytes(hashlib.sha256(f"airline:{task_id}:{trial}".encode()).digest()[:8], "big")


def respond(request: Any) -> dict[str, Any]:
    """Answer one τ-bench airline task: look up, then make the changes the user asks for.

    `request` is a `TargetRequest` or its JSON mapping; the task is
    `request.case.metadata.task_id`. Returns the reply mapping with a native
    trace: one step per tool call, in order.
    """
    req = request if isinstance(request, dict) else request.model_dump(mode="json")
    meta = req["case"].get("metadata") or {}
    task = _tasks()[int(meta["task_id"])]
    found = re.search(r"user id is (\w+)", str(req.get("input") or ""))
    user_id = meta.get("user_id") or (found.group(1) if found else task["user_id"])
    rng = random.Random(_seed(task["task_index"], int(req["trial"])))
    blind = random.Random(_seed(task["task_index"], -1))
    blind_spot = blind.random() < P_BLIND_SPOT
    db = FakeAirline()
    steps: list[dict[str, Any]] = []
    looked_up: set[str] = set()

    def call(name: str, arguments: dict[str, Any], thought: str | None = None) -> None:
        arguments = copy.deepcopy(arguments)
        result, error = db.call(name, arguments)
        steps.append({"thought": thought, "tool_calls": [{"id": f"call_{len(steps)}", "name": name, "arguments": arguments, "result": result, "error": error}]})

    call("get_user_details", {"user_id": user_id}, "Identify the user first.")
    done = 0
    for action in task["actions"]:
        rid = action["kwargs"].get("reservation_id")
        if rid and rid not in looked_up:
            looked_up.add(rid)
            if action["name"] != "get_reservation_details":
                call("get_reservation_details", {"reservation_id": rid}, f"Check reservation {rid} before changing it.")
        if action["name"] not in READ_TOOLS:
            if blind_spot:
                blind_spot = False
                action = _slip(action, db, user_id, random.Random(_seed(task["task_index"], -2))) or action
            roll = rng.random()
            if roll < P_STOP_EARLY:
                break
            if roll < P_STOP_EARLY + P_WRONG_ARGUMENT:
                action = _slip(action, db, user_id, rng) or action
        call(action["name"], action["kwargs"])
        done += 1
    if not task["actions"] and rng.random() < P_UNASKED_CHANGE:
        call("send_certificate", {"user_id": user_id, "amount": 100}, "Offer a goodwill certificate.")
    output = f"All set: I went through {done} of the {len(task['actions'])} steps of your request." if task["actions"] else "I checked your account; no change is needed."
    return {"output": output, "trace": {"steps": steps, "output": output, "usage": {"requests": len(steps) + 1}}}
