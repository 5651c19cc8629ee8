"""Stage `load` from memory: cases handed over by Python code instead of a dataset file.

`MemorySource(items)` wraps an iterable or async iterable of `Case` objects
or case mappings (native record shape). The runner reads it in place of the
configured format's file reader; everything after load is the same pipeline.
Items are consumed one at a time as the pipeline pulls them, so a generator
of a million cases costs no more memory than a file of them.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterable, Iterable, Mapping
from typing import Any

from tracejudge.core.records import Case
from tracejudge.core.registry import Format
from tracejudge.stages.load import RawRecord

__all__ = ["MEMORY_FINGERPRINT", "MemorySource", "adapt_item"]

MEMORY_FINGERPRINT = "in-memory"
"""What a run's manifest records as the dataset fingerprint for in-memory cases.

A stream cannot be fingerprinted before it is consumed: each case is
fingerprinted as the run reads it instead (`tracejudge.engine.case_digests`),
and a resume refuses a case changed since its result was written.
"""


def adapt_item(item: Any, ctx: Any = None) -> Case:
    """One in-memory item to a `Case`: a `Case` is taken as is, a mapping is validated.

    Raises `AdapterError` for anything else and pydantic's `ValidationError`
    for a mapping that is not a valid case (the caller turns both into an
    `invalid_input` result naming the item's position and the field).
    """
    from tracejudge.stages.extract.errors import AdapterError

    if isinstance(item, Case):
        return item
    if isinstance(item, Mapping):
        return Case.model_validate(dict(item))
    raise AdapterError(f"expected a Case or a mapping, got {type(item).__name__}")


class MemorySource:
    """Cases from memory, as raw records for the runner's load stage.

    `label` stands in for a file name in errors: an invalid third item is
    reported at `<label>:3` (1-based position in the iterable). `fingerprinted`:
    each case is fingerprinted as it is read, so a resume can tell a case changed
    since its result was written (`tracejudge.engine.case_digests`); False for a
    run directory that is never resumed, which then costs no hashing.
    """

    def __init__(self, items: Iterable[Any] | AsyncIterable[Any], label: str = "<memory>", fingerprinted: bool = True) -> None:
        if not isinstance(items, (Iterable, AsyncIterable)) or isinstance(items, (str, bytes, Mapping, Case)):
            raise TypeError(f"cases must be an iterable or async iterable of Case objects or mappings, got {type(items).__name__}")
        self.items = items
        self.label = label
        self.format = Format("memory", read=self._refuse_sync_read, adapt=adapt_item)
        self.fingerprint = MEMORY_FINGERPRINT
        self.fingerprinted = fingerprinted

    def _refuse_sync_read(self, dataset: Any) -> Any:
        raise TypeError("an in-memory source is read with `records()`, not through a dataset file reader")

    async def records(self) -> AsyncGenerator[RawRecord, None]:
        """Each item wrapped as a `RawRecord(label, position, item)`."""
        position = 0
        if isinstance(self.items, AsyncIterable):
            async for item in self.items:
                position += 1
                yield RawRecord(self.label, position, item)
        else:
            for item in self.items:
                position += 1
                yield RawRecord(self.label, position, item)
