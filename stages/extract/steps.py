"""Build a `Trace` from a walk over messages: steps, calls, results, user turns.

The message-list adapters (`openai-messages`, `anthropic-messages`) differ
only in how they read one message; what they produce is the same: one step
per model response, its calls paired with their results (see `pairing`),
every user message in `trace.user_messages` (placed before the step that
answered it), the user's first text as the case `input` and the later ones
as `turns`.
"""

from __future__ import annotations

from typing import Any

from tracejudge.stages.extract.common import maybe_json, mcp_error, text_of
from tracejudge.stages.extract.pairing import Pending
from tracejudge.stages.extract.system_prompts import distinct_prompts

__all__ = ["TraceBuilder"]


class TraceBuilder:
    """Accumulates one conversation; `trace()` returns the native trace mapping.

    A step holds `texts` (what the model said), `thoughts` (reasoning) and
    `calls`. At the end a step with calls reports its text as `thought`
    (said while acting), a step without calls as `output`; the trace's
    `output` is the last such output. `error_prefixes` mark a result whose
    text starts with one of them as a failed call.
    """

    def __init__(self, error_prefixes: list[str] | tuple[str, ...] = ()) -> None:
        self.steps: list[dict[str, Any]] = []
        self.user_texts: list[str] = []
        self.users: list[dict[str, Any]] = []
        self.system: list[tuple[str | None, str | None]] = []  # (agent, text) of each system message read, in order
        self.pending = Pending()
        self.unpaired = 0
        self.responses = 0
        self._open = False
        self._prefixes = tuple(error_prefixes)

    # ------------------------------------------------------------------ steps
    def new_step(self) -> dict[str, Any]:
        """Start the step of a new model response."""
        step: dict[str, Any] = {"texts": [], "thoughts": [], "calls": []}
        self.steps.append(step)
        self.responses += 1
        self._open = True
        return step

    def open_step(self) -> dict[str, Any]:
        """The step of the response being read, or a new one after user/tool input."""
        return self.steps[-1] if self._open and self.steps else self.new_step()

    def current(self) -> dict[str, Any] | None:
        """The step of the response being read, or None when input came after it (or no step was made yet)."""
        return self.steps[-1] if self._open and self.steps else None

    def response_step(self) -> dict[str, Any]:
        """The step of a new assistant message: reuses an open step that holds only reasoning so far."""
        if self._open and self.steps and not self.steps[-1]["texts"] and not self.steps[-1]["calls"]:
            return self.steps[-1]
        return self.new_step()

    def close_step(self) -> None:
        """Input arrived (user text or a tool result): the next model item starts a new response."""
        self._open = False

    def user_text(self, content: Any) -> None:
        """Record a user message: its text (a new turn when it is not the first), or its content parts
        when they hold no text (an image alone) or an image beside the text (OpenAI's `image_url`/`input_image`
        parts: the photo a question is about stays with it); placed before the next step. Empty content is no turn."""
        self.close_step()
        text = text_of(content)
        if text is not None:
            self.user_texts.append(text)
        imaged = isinstance(content, list) and any(isinstance(p, dict) and p.get("type") in ("image_url", "input_image") for p in content)
        said = text if text is not None and not imaged else content
        if said not in (None, "", []):
            self.users.append({"step": len(self.steps), "content": said})

    # ------------------------------------------------------------------ calls
    def call(self, step: dict[str, Any], call_id: Any, name: str, arguments: Any, *, expects_result: bool = True) -> dict[str, Any]:
        """Add a call to `step`; arguments may be a mapping or a JSON string (decoded later)."""
        call: dict[str, Any] = {"id": None if call_id is None else str(call_id), "name": name, "arguments": arguments}
        step["calls"].append(call)
        if expects_result:
            self.pending.add(call)
        return call

    def result(self, call_id: Any, content: Any, error: Any = None) -> None:
        """Pair a tool result with its call; `error` is a flag (bool) or an error message."""
        self.close_step()
        call = self.pending.answer(None if call_id is None else str(call_id))
        if call is None:
            self.unpaired += 1
            return
        self.set_result(call, content, error)

    def set_result(self, call: dict[str, Any], content: Any, error: Any = None) -> None:
        """Store a result on `call`: JSON text is decoded, an error flag keeps the text as the message."""
        text = content if isinstance(content, str) else text_of(content)
        call["result"] = maybe_json(text if text is not None else content)
        message: str | None = None
        if isinstance(error, str) and error:
            message = error
        elif error:
            message = text if text else "error"
        elif (said := mcp_error(call["result"])) is not None:
            message = said  # an MCP CallToolResult with isError: a failed call, whatever the transport said
        elif isinstance(text, str) and self._prefixes and text.startswith(self._prefixes):
            message = text
        if message is not None:
            call["error"] = message

    # ------------------------------------------------------------------ output
    def trace(self) -> dict[str, Any]:
        """The native `trace` mapping (steps, user_messages, output, usage.requests, and system_prompts when any)."""
        steps = []
        final: str | None = None
        for step in self.steps:
            text = "\n".join(step["texts"]) if step["texts"] else None
            thought = "\n".join(step["thoughts"]) if step["thoughts"] else None
            if step["calls"]:
                joined = "\n".join(t for t in (thought, text) if t) or None
                steps.append({"thought": joined, "tool_calls": step["calls"]})
            else:
                steps.append({"thought": thought, "output": text})
                if text:
                    final = text
        trace: dict[str, Any] = {"steps": steps, "user_messages": self.users, "output": final, "usage": {"requests": self.responses}}
        if prompts := distinct_prompts(self.system):  # (only when some: a trace without any is written as before)
            trace["system_prompts"] = prompts
        return trace

    def case_defaults(self) -> dict[str, Any]:
        """`input` (first user text) and `turns` (later user texts) for a record that does not set them."""
        out: dict[str, Any] = {}
        if self.user_texts:
            out["input"] = self.user_texts[0]
            if len(self.user_texts) > 1:
                out["turns"] = self.user_texts[1:]
        return out
