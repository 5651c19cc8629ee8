"""Parent links that loop: a span naming itself, or spans naming each other, as parent."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # spans.py calls this module: the type only
    from tracejudge.stages.extract.otel.spans import Span

__all__ = ["break_cycles"]


def break_cycles(spans: list[Span]) -> None:
    """Make each span of one trace that closes a parent loop a root, in place.

    A span that names itself as parent is a root; in a longer loop the member
    that started first (ties: the lowest span id) becomes the root, so the
    result does not hang on the order spans arrived in (agentevals breaks
    them so). Left looping, every span of the loop had a model ancestor or no
    root, and its requests vanished from the case.
    """
    index = {s.span_id: s for s in spans}
    for span in spans:
        if span.parent_id == span.span_id:
            span.parent_id = None
    done: set[str] = set()
    for start in spans:
        path: list[Span] = []
        at: dict[str, int] = {}
        node: Span | None = start
        while node is not None and node.span_id not in done:
            if node.span_id in at:
                loop = path[at[node.span_id]:]
                min(loop, key=lambda s: (s.start, s.span_id)).parent_id = None
                break
            at[node.span_id] = len(path)
            path.append(node)
            node = index.get(node.parent_id or "")
        done.update(s.span_id for s in path)
