"""Record inspect-ai logs of tool failures a sample went on from: a raise the solver caught, a retried sample, an approver.

    python tests/frameworks/record_inspect_failures.py OUTDIR      (OUTDIR: tests/data/inspect-failures)

runs four tasks with one `inspect_ai.eval(..., retry_on_error=1, fail_on_error=False)` on the offline `mockllm/model`
provider (no network; its replies scripted, as in `record_inspect.py`; each reply's usage is its own, 120 tokens more 1,000
per reply the sample already made, 20 of them output, so the usage of every reply can be told apart) with a real `@tool`
`get_weather` (`parallel=False`: its calls run one after the other) that logs every run (started, returned, raised):

- `caught-loop` (a solver of its own: `generate(tool_calls="none")`, then `execute_tools(...)` inside `try`/`except`; on an
  exception it tells the model so in a user message and goes on): sample `caught_loop` calls `get_weather` for Berlin
  (returns), Nowhere (raises `RuntimeError`) and Madrid (never runs) in one reply; the solver catches the error and the
  model answers;
- `caught-generate` (`use_tools` + a solver that runs `generate()` inside `try`/`except` and keeps the exception in the
  sample's store, not in its messages): sample `caught_generate` calls `get_weather(Atlantis)`, which raises; the sample ends
  without an error;
- `retried` (`use_tools` + `generate`, the eval's `retry_on_error=1`): sample `retried` calls `get_weather(Flaky)`, whose
  first run raises `ConnectionError`: inspect runs the sample again, and in that second attempt the call returns and the
  model answers; sample `retried_out` calls `get_weather(Broken)`, which raises in both attempts: the sample ends with the
  second attempt's error;
- `approval` (`use_tools` + `generate`, an approval policy with an approver of its own, `guard`): sample `approval_stop`
  calls `get_weather(Paris)` (approved, returns) and `get_weather(Secret)`, for which the approver decides `terminate`: the
  tool never runs and inspect stops the sample (an `operator` limit); sample `approval_reject` calls `get_weather(Oslo)`
  (approved) and `get_weather(Hidden)` (the approver decides `reject`: the model is told, the tool never runs), then
  answers.

inspect writes each log as `<timestamp>_<task>.eval`; it is copied to `OUTDIR/<task>.eval` and scrubbed of this machine's
paths (`inspect_common.scrub_file`). `OUTDIR/truth.json` holds, per task and sample, what the application
did and saw: its question; per attempt, the replies the model made (text, call ids, tokens); every call of the last
attempt with what the tool's own log says of it (`started`, the value it `returned`, the `repr` of what it `raised`) and
what the approver decided (`approval`: decision and explanation); what the solver caught (`caught`: the `repr` of the
exception it caught); the `repr` of what each earlier attempt raised (`retried_errors`); and from the log what inspect
itself kept: the completion it scored (`output`), the sample's error message and the limit that stopped it. The run takes
about 10 s.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from inspect_common import main, model_output, record_logs, weather_tool  # noqa: E402

WEATHER = {"Berlin": "windy, 12 C", "Madrid": "dry, 28 C", "Paris": "sunny, 21 C", "Oslo": "snow, -2 C", "Secret": "clear, 15 C",
           "Hidden": "grey, 10 C"}
QUESTIONS = {"caught_loop": "Weather in Berlin, Nowhere and Madrid?", "caught_generate": "Weather in Atlantis?", "retried": "Weather in Flaky?",
             "retried_out": "Weather in Broken?", "approval_stop": "Weather in Paris and Secret?", "approval_reject": "Weather in Oslo and Hidden?"}
# sample id -> the model's replies in order: ("text", text) | ("calls", [(call id, tool, arguments)], text)
SCRIPT: dict[str, list[tuple[Any, ...]]] = {
    "caught_loop": [("calls", [("c1", "get_weather", {"city": "Berlin"}), ("c2", "get_weather", {"city": "Nowhere"}),
                               ("c3", "get_weather", {"city": "Madrid"})], "All three, in order."),
                    ("text", "Berlin is windy, 12 C; the others could not be checked.")],
    "caught_generate": [("calls", [("g1", "get_weather", {"city": "Atlantis"})], "Checking Atlantis."), ("text", "never asked for")],
    "retried": [("calls", [("r1", "get_weather", {"city": "Flaky"})], "Checking Flaky."), ("text", "Flaky is fine, 20 C.")],
    "retried_out": [("calls", [("b1", "get_weather", {"city": "Broken"})], "Checking Broken."), ("text", "never asked for")],
    "approval_stop": [("calls", [("p1", "get_weather", {"city": "Paris"}), ("p2", "get_weather", {"city": "Secret"})], "Both."),
                      ("text", "never asked for")],
    "approval_reject": [("calls", [("o1", "get_weather", {"city": "Oslo"}), ("o2", "get_weather", {"city": "Hidden"})], "Both."),
                        ("text", "Oslo has snow, -2 C; Hidden could not be checked.")],
}
TASKS = {"caught-loop": ["caught_loop"], "caught-generate": ["caught_generate"], "retried": ["retried", "retried_out"],
         "approval": ["approval_stop", "approval_reject"]}
DECISIONS = {"Secret": ("terminate", "Secret cities are off limits."), "Hidden": ("reject", "Hidden cities are not to be looked up.")}
SERVED: dict[str, list[list[dict[str, Any]]]] = {sid: [] for sid in SCRIPT}  # per sample, per attempt, the replies made
RAN: dict[str, list[dict[str, Any]]] = {}  # city -> its runs in order: {"started", "returned", "raised"} (the tool's own log)
APPROVED: dict[str, dict[str, Any]] = {}  # city -> what the approver decided: {"decision", "explanation"}
CAUGHT: dict[str, str] = {}  # sample id -> the repr of the exception its solver caught


def scripted(messages: list[Any], tools: list[Any], tool_choice: Any, config: Any) -> Any:
    """mockllm's `custom_outputs`: this sample's next scripted reply (by how many it made so far), with its own usage."""
    from inspect_ai.model import ModelUsage

    question = next(m.text for m in messages if m.role == "user")
    sid = next(k for k, q in QUESTIONS.items() if q == question)
    made = sum(m.role == "assistant" for m in messages)
    if made == 0:  # (a new attempt: the first one, or inspect's retry of the sample)
        SERVED[sid].append([])
    turn = SCRIPT[sid][made]
    output = model_output(turn)
    tokens = 120 + 1000 * sum(len(a) for a in SERVED[sid])
    output.usage = ModelUsage(input_tokens=tokens - 20, output_tokens=20, total_tokens=tokens)
    SERVED[sid][-1].append({"text": turn[1] if turn[0] == "text" else turn[2], "calls": [c[0] for c in turn[1]] if turn[0] == "calls" else [],
                            "tokens": tokens})
    return output


def _weather(city: str) -> str:
    """The tool's own code: a known city's weather; Flaky fails its first run only, Broken every run, any other city raises."""
    run: dict[str, Any] = {"started": True, "returned": None, "raised": None}
    RAN.setdefault(city, []).append(run)
    exc: Exception | None = None
    if city == "Flaky":
        exc = ConnectionError("weather backend unreachable") if len(RAN[city]) == 1 else None
        value = "fine, 20 C"
    elif city == "Broken":
        exc = ConnectionError(f"weather backend unreachable (run {len(RAN[city])})")
    elif city not in WEATHER:
        exc = RuntimeError(f"weather backend crashed on {city}")
    else:
        value = WEATHER[city]
    if exc is not None:
        run["raised"] = repr(exc)
        raise exc
    run["returned"] = value
    return value


def tasks() -> list[Any]:
    from inspect_ai import Task
    from inspect_ai.approval import Approval, ApprovalPolicy, approver
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ChatMessageUser, execute_tools
    from inspect_ai.scorer import includes
    from inspect_ai.solver import generate, solver, use_tools

    def get_weather() -> Any:
        return weather_tool(_weather, parallel=False)

    @solver
    def tolerant_loop() -> Any:
        """The model's replies, each one's calls run by `execute_tools`; a tool's exception is told to the model, not raised."""

        async def solve(state: Any, generate: Any) -> Any:
            state.tools = [get_weather()]
            while True:
                state = await generate(state, tool_calls="none")
                if not state.output.message.tool_calls:
                    return state
                try:
                    result = await execute_tools(state.messages, state.tools)
                    state.messages.extend(result.messages)
                except Exception as exc:
                    CAUGHT[str(state.sample_id)] = repr(exc)
                    state.messages.append(ChatMessageUser(content=f"A tool failed ({exc}). Answer with what you have."))

        return solve

    @solver
    def tolerant_generate() -> Any:
        """`generate()`, its exception kept in the sample's store rather than failing the sample."""

        async def solve(state: Any, generate: Any) -> Any:
            try:
                state = await generate(state)
            except Exception as exc:
                CAUGHT[str(state.sample_id)] = repr(exc)
                state.store.set("tool_failure", repr(exc))
            return state

        return solve

    @approver
    def guard() -> Any:
        async def approve(message: str, call: Any, view: Any, history: list[Any]) -> Any:
            decision, explanation = DECISIONS.get(call.arguments.get("city"), ("approve", None))
            APPROVED[call.arguments.get("city")] = {"decision": decision, "explanation": explanation}
            return Approval(decision=decision, explanation=explanation)

        return approve

    def samples(task: str) -> list[Any]:
        return [Sample(id=sid, input=QUESTIONS[sid], target="sunny") for sid in TASKS[task]]

    return [
        Task(name="caught-loop", solver=tolerant_loop(), scorer=includes(), dataset=samples("caught-loop")),
        Task(name="caught-generate", solver=[use_tools(get_weather()), tolerant_generate()], scorer=includes(), dataset=samples("caught-generate")),
        Task(name="retried", solver=[use_tools(get_weather()), generate()], scorer=includes(), dataset=samples("retried")),
        Task(name="approval", solver=[use_tools(get_weather()), generate()], scorer=includes(), dataset=samples("approval"),
             approval=[ApprovalPolicy(guard(), "*")]),
    ]


def truth(logs: dict[str, Any]) -> dict[str, Any]:
    """Per task and sample: what the script served, what the tool's and the approver's logs say of each call of the last
    attempt, what the solver caught, what earlier attempts raised, and what inspect kept (module doc)."""
    out: dict[str, Any] = {}
    for task, ids in TASKS.items():
        out[task] = {}
        for sid in ids:
            sample = next(s for s in logs[task].samples if s.id == sid)
            attempts = SERVED[sid]
            last = attempts[-1]
            calls, earlier = [], []
            for turn in SCRIPT[sid]:
                for cid, name, args in turn[1] if turn[0] == "calls" else []:
                    runs = RAN.get(args["city"], [])
                    earlier += [r["raised"] for r in runs[: len(attempts) - 1]]  # (one run per attempt, the last attempt's last)
                    if cid in (c for r in last for c in r["calls"]):
                        ran = runs[len(attempts) - 1] if len(runs) >= len(attempts) else {"started": False, "returned": None, "raised": None}
                        calls.append({"id": cid, "name": name, "arguments": args, **ran, "approval": APPROVED.get(args["city"])})
            out[task][sid] = {"input": QUESTIONS[sid], "replies": [{k: r[k] for k in ("text", "calls")} for r in last], "calls": calls,
                              "attempts": [[r["tokens"] for r in a] for a in attempts], "retried_errors": [e for e in earlier if e],
                              "usage": {"requests": len(last), "input_tokens": sum(r["tokens"] - 20 for r in last), "output_tokens": 20 * len(last)},
                              "caught": CAUGHT.get(sid), "output": sample.output.completion if sample.error is None else None,
                              "error": sample.error.message if sample.error else None,
                              "limit": {"type": sample.limit.type, "reason": sample.limit.reason} if sample.limit else None}
    return out


def record(out: Path) -> dict[str, Any]:
    """Run the tasks and write `out/<task>.eval` and `out/truth.json`; returns the truth."""
    return record_logs(out, tasks, scripted, truth, fail_on_error=False, retry_on_error=1)


if __name__ == "__main__":
    sys.exit(main(record, __doc__, sys.argv[1:]))
