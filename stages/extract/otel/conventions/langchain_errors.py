"""How an exception raised in a LangChain or LangGraph run reads, whichever instrumentation recorded it.

The four instrumentations of LangChain record the same exception with different facts (a model request the server
answered 500: `langchain_openai.chat_models.base.OpenAIAPIError`, message `Error code: 500 - …`):

- OpenInference: an `exception` event with the type's qualified name and the message; the status description is
  the exception's `repr()` followed by its traceback (`OpenAIAPIError('Error code: 500 - …')Traceback …`).
- OpenLLMetry: the same `exception` event, `error.type` with the class name alone, the message as status description
  (its `invoke_agent <graph>` span has no `error.type`: only the event names the type there).
- MLflow (`mlflow.langchain.autolog()`, its trace JSON and its OTLP alike): an `exception` event with the class name
  alone and the message, the message as status description.
- Langfuse's `CallbackHandler`: the message as status description (`statusMessage` in its API's JSON), no type.

The class name is the one name of the type that the first three all hold, so a LangChain span's error names the
type by it, `"OpenAIAPIError: Error code: 500 - …"`, under each of them (`exception_name`; `oi_langchain_span` and
`tl_langchain_span` tell the spans whose event holds the qualified name). Langfuse's reads as its
message alone: no type is made up for it (LangGraph's `GraphRecursionError` excepted, which its text alone names:
`langgraph_steps`).
"""

from __future__ import annotations

import re

from tracejudge.stages.extract.otel.conventions.scopeless import from_instrumentation
from tracejudge.stages.extract.otel.spans import Span

__all__ = ["OI_LANGCHAIN", "TL_LANGCHAIN", "exception_name", "oi_langchain_span", "tl_langchain_span"]

OI_LANGCHAIN = "openinference.instrumentation.langchain"
TL_LANGCHAIN = "opentelemetry.instrumentation.langchain"
# (the LangChain instrumentation's status description: `repr(error)` then the traceback, with nothing between them)
_REPR_TRACEBACK = re.compile(r"[A-Za-z_][\w.]*\(.*?\)Traceback \(most recent call last\):", re.DOTALL)


def exception_name(etype: str) -> str:
    """The class name of exception type `etype`, qualified or not (`"a.b.OpenAIAPIError"` -> `"OpenAIAPIError"`)."""
    return etype.rsplit(".", 1)[-1]


def oi_langchain_span(span: Span) -> bool:
    """Whether `span` is OpenInference's LangChain instrumentation's: by its scope, else (no scope kept) by the status
    description only it writes, the exception's `repr()` followed by its traceback."""
    return from_instrumentation(span, OI_LANGCHAIN, lambda s: bool(s.status_message and _REPR_TRACEBACK.match(s.status_message)))


def tl_langchain_span(span: Span) -> bool:
    """Whether `span` is OpenLLMetry's LangChain instrumentation's: by its scope, else (no scope kept) by the keys it writes
    on a LangChain or LangGraph run (`gen_ai.provider.name` `langgraph` / `langchain`, LangChain's `ls_integration`)."""
    return from_instrumentation(span, TL_LANGCHAIN, lambda s: s.attrs.get("gen_ai.provider.name") in ("langgraph", "langchain")
                                or "traceloop.association.properties.ls_integration" in s.attrs)
