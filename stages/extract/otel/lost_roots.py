"""The warning about traces that lost a span several of their spans hang from (`links.stand_in_parents`), by cause.

Most often the lost span is the trace's root and the exporter dropped its batch: the run's own input and output are
gone, its user text and answer are taken from its model requests. But one instrumentation loses a root by itself:
openinference-instrumentation-smolagents never ends (so never exports) the agent span of a run that raised
(`conventions.smolagents_raised`). Blaming a dropped batch there sends the user after their exporter; such traces are
named apart, with what happened to them. A trace with both, or with any other lost span, keeps the general warning.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tracejudge.core.log import get_logger

if TYPE_CHECKING:
    from tracejudge.stages.extract.otel.spans import Span

__all__ = ["warn_lost_roots"]

log = get_logger("tracejudge.extract.otel")


def warn_lost_roots(lost: list[tuple[str, list[Span], list[Span]]]) -> None:
    """Say once which traces lost a span (`(trace id, its stand-ins, its spans with them)` each), and why when known."""
    # (imported here: the conventions read spans, and this module is part of reading them)
    from tracejudge.stages.extract.otel.conventions.smolagents_raised import unended_run

    raised: list[str] = []
    rootless: list[str] = []
    for trace_id, stand_ins, spans in lost:
        index = {s.span_id: s for s in spans}
        (raised if all(unended_run(s, spans, index) for s in stand_ins) else rootless).append(trace_id)
    if rootless:
        # The lost span's own input and output (a graph's question and answer) are gone: said once, not guessed silently.
        log.warning(f"otel: {len(rootless)} trace(s) lost a span several of their spans hang from (not exported: a dropped batch, "
                    "most often the root): its children are read as one run under it, and that run's user text and answer are "
                    f"taken from its model requests, since its own input and output were lost: {_ids(rootless)}")
    if raised:
        log.warning(f"otel: {len(raised)} trace(s) hold a smolagents run that raised, whose agent span was never exported "
                    "(openinference-instrumentation-smolagents does not end the agent span of a run that raised; no batch was "
                    "dropped): each is read as that run from its steps, its user text the task its first model request was "
                    f"given, its error the failed step's exception, and no answer: {_ids(raised)}")


def _ids(traces: list[str]) -> str:
    return f"{', '.join(traces[:5])}{', …' if len(traces) > 5 else ''}"
