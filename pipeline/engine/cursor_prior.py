"""The ids a resume cursor skipped past, by hash: where each was first seen (`cursor.ids`), looked up on demand.

A resume that starts behind the cursor never reads those records again, yet a later duplicate of one of their ids must
still be found. `PriorIds` answers "where was this id first seen?" from the (hash, line) pairs the cursor wrote.
"""

from __future__ import annotations

from typing import Any

from tracejudge.core.lazy_numpy import numpy
from tracejudge.engine.keyset import KeySet

__all__ = ["PriorIds"]

_SMALL_PRIOR = 1 << 15  # fewer first-seen ids than this are looked up in a dict, without numpy
_SCANS = 64  # lookups answered by a scan of cursor.ids (~1 ms at a million ids) before it is sorted once (~0.2 s)


class PriorIds:
    """Lines of the ids first seen before the cursor, by `key_hash` (from `cursor.ids`).

    Every such id is finished, so an id whose hash is not in the journal's
    `done` set is answered without a look at `cursor.ids` (the unfinished
    cases a resume goes on with); the few others are looked up by a scan,
    and once there are many, by a sorted copy.
    """

    def __init__(self, data: bytes, done: KeySet) -> None:
        self._data = data
        self._done = done
        self._small: dict[int, int] | None = None
        self._pairs: Any = None
        self._sorted: Any = None
        self._scans = 0

    def __call__(self, h: int) -> int | None:
        """The line where the id of hash `h` was first seen before the cursor, or None."""
        if not self._done.contains_hash(h):
            return None
        n = len(self._data) // 16
        if n < _SMALL_PRIOR:
            if self._small is None:
                pairs = memoryview(self._data).cast("Q")  # little-endian machines only (see `prepare`)
                self._small = {pairs[2 * i]: pairs[2 * i + 1] for i in range(n)}
            return self._small.get(h)
        np = numpy()
        if self._pairs is None:
            self._pairs = np.frombuffer(self._data, dtype="<u8").reshape(-1, 2)
        key = np.uint64(h)
        if self._sorted is None and self._scans < _SCANS:
            self._scans += 1
            hit = np.flatnonzero(self._pairs[:, 0] == key)
            return int(self._pairs[hit[0], 1]) if len(hit) else None
        if self._sorted is None:
            order = np.argsort(self._pairs[:, 0])
            self._sorted = (self._pairs[order, 0], self._pairs[order, 1])
        hashes, lines = self._sorted
        i = int(np.searchsorted(hashes, key))
        return int(lines[i]) if i < len(hashes) and int(hashes[i]) == h else None
