"""Format `openai-agents`: traces the SDK exported without their content (`trace_include_sensitive_data=False`).

`RunConfig(trace_include_sensitive_data=False)` (or `OPENAI_AGENTS_TRACE_INCLUDE_SENSITIVE_DATA=false`) makes the SDK
leave content out of its spans: a `generation` span's `input` and `output` (the messages) and a `function` span's `input`
and `output` (the arguments and the result) are exported as `null`. Such a trace reads as a case with no input, no
output, no text and calls with unknown arguments and no result, which nothing else in it says. `Hidden` says so, as
format `otel` says it of requests recorded without their input (`otel.missing_inputs`): the first such trace of a file
is warned of at once (file, line, trace id, how many requests and calls, what is unknown, why, and how to keep it),
once per file however often a run reads it (`said_once`), and that read's count of such traces when it ends, when more
than one. Nothing is made up in their place.

A `response` span (a Responses API request) never holds its text in the export, whatever the setting (`openai_agents`
warns of that on its own): only its `function` spans tell the setting. A `function` span with its `input` and no
`output` is a call that did not finish or awaited approval (`conventions.agents_cancel`, `agents_approval`), not this.
"""

from __future__ import annotations

from typing import Any

from tracejudge.core.log import get_logger
from tracejudge.stages.extract.openai_agents_spans import trace_id
from tracejudge.stages.extract.said_once import first_time
from tracejudge.stages.load import RawRecord

__all__ = ["Hidden", "Textless"]

log = get_logger("tracejudge.extract.openai_agents")


class Hidden:
    """Counts, per file, the traces exported without their content (module docstring); warns of a file's first at once."""

    def __init__(self) -> None:
        self.files: dict[str, list[int]] = {}  # file -> [traces, first line, warned in this read]

    def see(self, record: RawRecord) -> None:
        payload = record.payload if isinstance(record.payload, dict) else {}
        spans = payload.get("spans") if isinstance(payload.get("spans"), list) else []
        data = [s.get("span_data") for s in spans if isinstance(s, dict) and isinstance(s.get("span_data"), dict)]
        asked = [d for d in data if d.get("type") == "generation"]
        calls = [d for d in data if d.get("type") == "function"]
        hidden_asked = [d for d in asked if d.get("input") is None and d.get("output") is None]
        hidden_calls = [d for d in calls if d.get("input") is None and d.get("output") is None]
        if not hidden_asked and not hidden_calls:
            return
        seen = self.files.setdefault(record.file, [0, record.line, 0])
        seen[0] += 1
        if seen[0] > 1 or not first_time("openai_agents_hidden", record.file):
            return
        seen[2] = 1  # (said in this read: its count is said when it ends)
        lost = [f"{len(found)} of {len(total)} {what}" for found, total, what in
                ((hidden_asked, asked, "model request(s) (`generation` spans)"), (hidden_calls, calls, "tool call(s) (`function` spans)")) if found]
        log.warning(f"openai-agents: {record.file}:{record.line}: trace {trace_id(payload)}: {' and '.join(lost)} were recorded "
                    "without their input and output (`span_data.input` / `span_data.output` null): the user's input (the case's "
                    "`input` is then null), the model's replies (the case's output, its steps' text, the calls' ids) and the "
                    "calls' arguments and results are unknown. The SDK did not write them: `RunConfig(trace_include_sensitive_data="
                    "False)` (or OPENAI_AGENTS_TRACE_INCLUDE_SENSITIVE_DATA=false) leaves content out of its spans. Nothing is "
                    "made up in their place (said once per file). Record with trace_include_sensitive_data=True (the default) "
                    "to evaluate them")

    def report(self) -> None:
        for file, (count, line, said) in self.files.items():
            if count > 1 and said:
                log.warning(f"openai-agents: {file}: {count} traces in all (the first at line {line}) were recorded without "
                            "their content (trace_include_sensitive_data=False): their input, output and calls' arguments and "
                            "results are unknown")
        self.files.clear()


class Textless:
    """Counts, per file, the traces whose Responses API requests (`response` spans) the export kept without text.

    The first such trace of a file is warned of at once (a file of 50,000 such traces says it once, not per
    case); `report` gives each file's count when more than one. A `response` span that does hold `input` or
    `output` (a later SDK, a custom processor) is not counted. Traces exported without any content are `Hidden`'s.
    """

    def __init__(self) -> None:
        self.files: dict[str, list[int]] = {}  # file -> [traces, first line]
        self.hidden = Hidden()

    def see(self, record: RawRecord) -> None:
        self.hidden.see(record)
        payload = record.payload if isinstance(record.payload, dict) else {}
        spans = payload.get("spans") if isinstance(payload.get("spans"), list) else []
        if not any(_textless(s) for s in spans):
            return
        seen = self.files.setdefault(record.file, [0, record.line])
        seen[0] += 1
        if seen[0] == 1:
            log.warning(f"openai-agents: {record.file}:{record.line}: trace {trace_id(payload)}: the Agents SDK's export records "
                        "Responses API model requests (`response` spans, the SDK's default model) without their text, only their "
                        "response id and usage, so the case's input and output are unknown (an output a run took from a tool "
                        "is kept); to keep the text, record with OpenInference's OpenAIAgentsInstrumentor (format otel) or "
                        "use a Chat Completions model (OpenAIChatCompletionsModel, set_default_openai_api('chat_completions'))")

    def report(self) -> None:
        self.hidden.report()
        for file, (count, line) in self.files.items():
            if count > 1:
                log.warning(f"openai-agents: {file}: {count} traces in all (the first at line {line}) have Responses API model "
                            "requests recorded without their text: their input and output are unknown")
        self.files.clear()


def _textless(span: Any) -> bool:
    data = span.get("span_data") if isinstance(span, dict) else None
    return isinstance(data, dict) and data.get("type") == "response" and data.get("input") is None and data.get("output") is None
