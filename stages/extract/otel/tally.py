"""Token usage of a turn's (or a whole case's) model requests, which may not all have recorded it.

A request that recorded no token count (a stream read without
`stream_options.include_usage`, an instrumentation that writes none) spent
tokens all the same: a sum over the others is a part of the total, and a
budget metric passing on it would pass on a guess. So a count that any
request left out is unknown (`None`), and `unmetered` says how many requests
left out one or both counts; `None` too when no request recorded it (a count
of 0 would claim nothing was spent). A request that failed with no count (a
500 the application retried: the provider answered nothing) is not missing
one. No request at all spent 0.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Tally"]


class Tally:
    """Input and output tokens summed over model requests, with the requests that recorded no count."""

    __slots__ = ("tokens_in", "tokens_out", "no_in", "no_out", "unmetered")

    def __init__(self) -> None:
        self.tokens_in: int | None = None
        self.tokens_out: int | None = None
        self.no_in = self.no_out = self.unmetered = 0

    def add(self, tokens_in: int | None, tokens_out: int | None, failed: bool) -> None:
        """One request's counts (`None`: not recorded); `failed`: the request ended in an error."""
        if failed and tokens_in is None and tokens_out is None:
            return
        if tokens_in is None or tokens_out is None:
            self.unmetered += 1
        if tokens_in is None:
            self.no_in += 1
        else:
            self.tokens_in = (self.tokens_in or 0) + tokens_in
        if tokens_out is None:
            self.no_out += 1
        else:
            self.tokens_out = (self.tokens_out or 0) + tokens_out

    def merge(self, other: Tally) -> None:
        for side in ("tokens_in", "tokens_out"):
            if getattr(other, side) is not None:
                setattr(self, side, (getattr(self, side) or 0) + getattr(other, side))
        self.no_in += other.no_in
        self.no_out += other.no_out
        self.unmetered += other.unmetered

    def usage(self, requests: int) -> dict[str, Any]:
        """`{input_tokens, output_tokens, requests}`: a count some request left out is `None`, and no request spent 0."""
        tokens_in = None if self.no_in else self.tokens_in
        tokens_out = None if self.no_out else self.tokens_out
        if requests == 0:
            tokens_in, tokens_out = tokens_in or 0, tokens_out or 0
        return {"input_tokens": tokens_in, "output_tokens": tokens_out, "requests": requests}
