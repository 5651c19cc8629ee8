"""pydantic-ai's model request attempts it sent again (2.78 on): tokens spent on a request, not the request.

A capability may have a request sent again (`RetryModelRequest` raised in `after_model_request`, rejecting a
response the model gave, or in `on_model_request_error` after a failed one); the model never learns of the
earlier attempt. pydantic-ai records each attempt it threw away as a span of its own inside the request's `chat`
span, `model request attempt <model>`: status ERROR ("Response rejected", or the request's error),
`pydantic_ai.model_request.attempt` (0 the first), its token counts and no messages; the `chat` span itself
records the attempt that stood. Read as a request nested in the `chat` span (a wrapper over its provider's span:
`wrapped`), the attempt's error and tokens took the request's place: an answered request failed, and the tokens
it was billed for were those of the attempt thrown away; under OpenInference's span processor (which leaves it no
model request) its tokens were lost. `attempts` reads each such span as no request of its own: its tokens are
added to the request's (they were spent on it, as pydantic-ai's own usage counts them) and its error stays on it.
"""

from __future__ import annotations

from tracejudge.stages.extract.otel.conventions.pydantic_ai import ours
from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import View

__all__ = ["attempts"]

_ATTEMPT = "pydantic_ai.model_request.attempt"
_HOPS = 10_000  # a parent chain longer than this is a cycle in a hostile export (as `wrapped.HOPS`)


def attempts(spans: list[Span], views: dict[str, View]) -> None:
    """Read pydantic-ai's discarded request attempts as spent on their request (see the module doc). In place.

    `spans`: a group's spans. An attempt span (pydantic-ai's, with `pydantic_ai.model_request.attempt`) under a model
    request that is none is no request (no role); its input and output tokens are added to that
    request's when both are counted (a request that counted none stays unknown). An attempt with no request over it
    (the export lost it) stays the one trace of its request.
    """
    index = {s.span_id: s for s in spans}
    for s in spans:
        v = views[s.span_id]
        if _ATTEMPT not in s.attrs or not ours(s):  # (under OpenInference's processor it is no model request at all)
            continue
        request = _request_over(s, index, views)
        if request is None:
            continue
        if request.usage_in is not None and v.usage_in is not None:
            request.usage_in += v.usage_in
        if request.usage_out is not None and v.usage_out is not None:
            request.usage_out += v.usage_out
        v.role = None


def _request_over(span: Span, index: dict[str, Span], views: dict[str, View]) -> View | None:
    """The view of the nearest model request above `span` that is no attempt itself (`None`: none)."""
    parent = index.get(span.parent_id) if span.parent_id else None
    for _ in range(_HOPS):
        if parent is None or parent is span:
            return None
        if views[parent.span_id].role == "model" and _ATTEMPT not in parent.attrs:
            return views[parent.span_id]
        parent = index.get(parent.parent_id) if parent.parent_id else None
    return None
