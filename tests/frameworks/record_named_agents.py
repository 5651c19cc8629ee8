"""Record the runs behind `tests/test_named_agents.py`, with the installed libraries.

    python tests/frameworks/record_named_agents.py [OUTDIR] [<scenario>-<instrumentation> ...]   (OUTDIR: tests/data/named-agents)

A named LangGraph supervisor (`create_react_agent(..., name="supervisor")`) whose tools run named parts, each traced by
OpenInference (`oi`), OpenLLMetry (`tl`), `mlflow.langchain.autolog()` (`mlflow`) and Langfuse's LangChain
`CallbackHandler` (`langfuse`), as `record_subagents_streams.supervisor` traces them, against the project's fake server
answering by the request's content (`ByContent`). Each recording runs in a process of its own and writes its exports and
`<s>.outcome.json`: what the run returned, each tool call as the application's tool body saw it (`calls`: name, arguments,
result or the error it raised), how many requests the server answered and their tokens, and the requests it failed. No network.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from aiohttp import web

FRAMEWORKS = Path(__file__).resolve().parent
OUT = FRAMEWORKS.parent / "data" / "named-agents"
sys.path.insert(0, str(FRAMEWORKS))

from common import MODEL, record_per_instrumentation, write_outcome  # noqa: E402
from record_otel_loop_faults import call, chat  # noqa: E402
from record_subagents_streams import WEATHER, ByContent, _tracing  # noqa: E402

INSTRUMENTATIONS = ("oi", "tl", "mlflow", "langfuse")
ASKED = {
    "chain": "Summarise the notes for me.",
    "team": "Get the weather in Paris and a greeting from the writer, then the weather in Tokyo.",
    "fails": "What is the weather in Atlantis?",
}
NOTES = "Paris: sunny, 21 C. Tokyo: rainy, 14 C. Zürich: bewölkt, 12 °C."


def _script(body: dict[str, Any]) -> dict[str, Any] | None:
    """The reply to one chat request, by who asks (its system prompt) and what it has been sent; `None`: answer 500."""
    msgs = body["messages"]
    system = next((m["content"] for m in msgs if m["role"] == "system"), "")
    user = next((m["content"] for m in msgs if m["role"] == "user"), "")
    tools = [m for m in msgs if m["role"] == "tool"]
    if system.startswith("Summarizer"):
        return chat("Three cities: sunny Paris, rainy Tokyo, cloudy Zürich.")
    if system.startswith("Writer"):
        return chat("Bonjour from the writer.")
    if system.startswith("Researcher"):
        city = next((c for c in (*WEATHER, "Atlantis") if c in user), "Paris")
        if city == "Atlantis":
            return None  # the provider fails the researcher's request: its run raises inside the supervisor's tool
        return chat(f"{city}: {WEATHER[city]}") if tools else chat(None, call(f"call_r_{city}", "get_weather", {"city": city}))
    if user == ASKED["chain"]:
        return chat("Done: three cities summarised.") if tools else chat(None, call("call_s1", "summarise", {"text": NOTES}))
    if user == ASKED["fails"]:
        return chat("The researcher could not answer.") if tools else chat(None, call("call_s1", "ask_researcher", {"question": "Weather in Atlantis?"}))
    rounds = {0: chat(None, call("call_s1", "ask_researcher", {"question": "Weather in Paris?"}), call("call_s2", "ask_writer", {"topic": "a greeting"})),
              2: chat(None, call("call_s3", "ask_researcher", {"question": "Weather in Tokyo?"})),  # (after the first round's two results)
              3: chat("Paris is sunny, the writer says bonjour, Tokyo is rainy.")}
    return rounds[len(tools)]


class Scripted(ByContent):
    """`ByContent` answering with `_script`, a `None` reply as the provider's 500 (counted in `failed`, no tokens)."""

    def __init__(self) -> None:
        super().__init__(_script)
        self.failed = 0

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        if _script(await request.json()) is None:
            self.failed += 1
            return web.json_response({"error": {"message": "The server had an error while processing your request.", "type": "server_error"}}, status=500)
        return await super()._chat(request)


def record(out: Path, scenario: str, instrumentation: str) -> dict[str, Any]:
    """Run `scenario` traced by `instrumentation`, writing `<scenario>-<instrumentation>` files in `out`; its outcome."""
    name = f"{scenario}-{instrumentation}"
    seen: list[dict[str, Any]] = []
    with Scripted() as fake, _tracing(instrumentation, fake, name, out) as callbacks:
        from langchain_core.output_parsers import StrOutputParser
        from langchain_core.prompts import ChatPromptTemplate
        from langchain_core.tools import tool
        from langchain_openai import ChatOpenAI
        from langgraph.prebuilt import ToolNode, create_react_agent

        model = ChatOpenAI(model=MODEL, base_url=fake.base_url, api_key="sk-fake", max_retries=0)

        def noted(name: str, arguments: dict[str, Any], run: Any) -> Any:
            """`run()`, with what the tool body saw appended to `seen`."""
            try:
                result = run()
            except Exception as exc:
                seen.append({"name": name, "arguments": arguments, "error": f"{type(exc).__name__}: {exc}"})
                raise
            seen.append({"name": name, "arguments": arguments, "result": result})
            return result

        @tool
        def get_weather(city: str) -> str:
            """Weather in a city."""
            return noted("get_weather", {"city": city}, lambda: WEATHER[city])

        researcher = create_react_agent(model, [get_weather], prompt="Researcher: use get_weather.", name="researcher")
        writer = create_react_agent(model, [], prompt="Writer: write what is asked.", name="writer")
        summarizer = (ChatPromptTemplate.from_messages([("system", "Summarizer: one sentence."), ("user", "{text}")]) | model
                      | StrOutputParser()).with_config(run_name="summarizer")

        def ask(agent: Any, text: str) -> str:
            return agent.invoke({"messages": [{"role": "user", "content": text}]})["messages"][-1].content

        @tool
        def summarise(text: str) -> str:
            """Summarise notes."""
            return noted("summarise", {"text": text}, lambda: summarizer.invoke({"text": text}))

        @tool
        def ask_researcher(question: str) -> str:
            """Ask the research agent a question."""
            return noted("ask_researcher", {"question": question}, lambda: ask(researcher, question))

        @tool
        def ask_writer(topic: str) -> str:
            """Ask the writer for a text."""
            return noted("ask_writer", {"topic": topic}, lambda: ask(writer, topic))

        tools: Any = {"chain": [summarise], "team": [ask_researcher, ask_writer],
                      # (the application sends a failed sub-agent's error to the model, as `handle_tool_errors=True` does)
                      "fails": ToolNode([ask_researcher], handle_tool_errors=True)}[scenario]
        boss = create_react_agent(model, tools, prompt="Supervisor: delegate.", name="supervisor")
        reply = boss.invoke({"messages": [{"role": "user", "content": ASKED[scenario]}]}, {"callbacks": callbacks})
        answer = reply["messages"][-1].content
        sent = [m.content for m in reply["messages"] if m.type == "tool"]  # what the supervisor's model was sent back
    return write_outcome(out, name, fake.outcome(answer) | {"calls": seen, "tool_messages": sent, "failed_requests": fake.failed})


if __name__ == "__main__":
    sys.exit(record_per_instrumentation(__file__, sys.argv[1:], OUT, record, ASKED, INSTRUMENTATIONS))
