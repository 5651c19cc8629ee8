"""Compact sets and maps of string keys, for millions of ids at a few bytes each.

Resuming a run must answer "is (case, trial) finished?" and "where was this
id first seen?" for every case of the dataset. Python sets of tuples of
strings cost about 150–250 bytes a key; these tables keep one 64-bit hash
per key in an `array` (open addressing, linear probing, at most 4/5 full):
10–20 bytes a key for a set, 20–40 for a map, never the strings themselves.

Keys are hashed with BLAKE2b (8 bytes), so a hash is stable across processes
and can be written to disk (`results.idx`). Two distinct keys share a hash
with probability about n²/2⁶⁵ (≈ 1e-9 for 200,000 keys); such a collision
would make the second key look finished.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Callable, Iterable
from hashlib import blake2b

from tracejudge.core.lazy_numpy import numpy

__all__ = ["FirstSeen", "KeyMap", "KeySet", "key_hash", "result_key", "trial_key"]

_EMPTY = 0
_MAX_LOAD = 0.8
_MIN_CAPACITY = 1024
_BULK = 1 << 15  # keys from which `KeySet.from_index` builds with numpy


# BLAKE2b of 8 bytes fed nothing yet: each key is hashed on a copy of it, since building one from its keyword
# arguments cost more than hashing a short id (every rendered case hashes its id).
_BLAKE2B_8 = blake2b(digest_size=8)


def key_hash(key: str) -> int:
    """The stable 64-bit hash of `key` (never 0, which marks an empty slot)."""
    hasher = _BLAKE2B_8.copy()
    hasher.update(key.encode("utf-8", "surrogatepass"))
    return int.from_bytes(hasher.digest(), "little") or 1


_GOLDEN = 0x9E3779B97F4A7C15  # odd: trials 0..2^64-1 map to distinct offsets


def trial_key(id_hash: int, trial: int) -> int:
    """The key of trial `trial` of the case whose `key_hash(case_id)` is `id_hash`.

    Trial 0's key is the id's hash; trial t adds t·φ·2⁶⁴ (mod 2⁶⁴), so the
    keys of all trials of a case cost one BLAKE2b.
    """
    return ((id_hash + trial * _GOLDEN) & 0xFFFFFFFFFFFFFFFF) or 1


def result_key(case_id: str, trial: int) -> int:
    """The hash of a `(case_id, trial)` pair, as `results.idx` stores it."""
    return trial_key(key_hash(case_id), trial)


def _capacity_for(n: int) -> int:
    cap = _MIN_CAPACITY
    while n > cap * _MAX_LOAD:
        cap *= 2
    return cap


class KeySet:
    """A set of 64-bit key hashes (see `key_hash`) in one `array('Q')`.

    Memory: 8 bytes per slot, with between 1.25 and 2.5 slots per key.
    """

    def __init__(self, hashes: Iterable[int] = (), size_hint: int = 0) -> None:
        self._cap = _capacity_for(size_hint)
        self._slots = array("Q", bytes(8 * self._cap))
        self._n = 0
        for h in hashes:
            self.add_hash(h)

    @classmethod
    def from_index(cls, data: bytes, size_hint: int = 0) -> KeySet:
        """The set of the little-endian 8-byte hashes in `data` (`results.idx`'s layout), built at once.

        One key at a time, a million keys took seconds of a resume's start. Here (numpy, one sort) the
        distinct hashes are sorted by their home slot and each takes the first slot from its home on that
        the ones before it left free — the table linear probing gives when they are added in that order,
        so every lookup finds its key exactly as after `add_hash`. The few keys that would run past
        the table's end wrap around through `add_hash`. Transient memory: a few copies of `data`.
        """
        if len(data) < 8 * _BULK:  # a small index: not worth importing numpy for
            small = cls(size_hint=max(size_hint, len(data) // 8))
            keys = array("Q", data[: len(data) // 8 * 8])
            if sys.byteorder == "big":
                keys.byteswap()
            for h in keys:
                if h != _EMPTY:
                    small.add_hash(h)
            return small
        np = numpy()
        raw = np.frombuffer(data, dtype="<u8")
        self = cls(size_hint=max(size_hint, len(raw)))
        bits = self._cap.bit_length() - 1
        # Rotated right by the table's bits, a hash sorts by its home slot first: one sort orders
        # the keys by home, and equal neighbours are the repeated keys.
        up, down = np.uint64(64 - bits), np.uint64(bits)
        rot = np.sort((raw << up) | (raw >> down))
        if len(rot):
            rot = rot[np.concatenate(([True], rot[1:] != rot[:-1]))]
        keys = (rot << down) | (rot >> up)
        rot = rot[keys != _EMPTY]  # (`key_hash` never gives 0: no key is lost)
        keys = keys[keys != _EMPTY]
        if not len(keys):
            return self
        home = (rot >> up).astype(np.int64)
        rank = np.arange(len(keys), dtype=np.int64)
        slot = np.maximum.accumulate(home - rank) + rank  # the first slot at or after home the earlier keys left free
        inside = slot < self._cap
        table = np.zeros(self._cap, dtype=np.uint64)
        table[slot[inside]] = keys[inside]
        self._slots = array("Q", table.astype("=u8").tobytes())
        self._n = int(inside.sum())
        for h in keys[~inside].tolist():
            self.add_hash(h)
        return self

    def __len__(self) -> int:
        return self._n

    @property
    def nbytes(self) -> int:
        """Bytes held by the table."""
        return self._slots.itemsize * len(self._slots)

    def _find(self, h: int) -> int:
        slots, mask = self._slots, self._cap - 1
        i = h & mask
        while True:
            s = slots[i]
            if s == h or s == _EMPTY:
                return i
            i = (i + 1) & mask

    def contains_hash(self, h: int) -> bool:
        """True if hash `h` is in the set."""
        return self._slots[self._find(h)] == h

    def add_hash(self, h: int) -> bool:
        """Add hash `h`; returns False if it was already there."""
        i = self._find(h)
        if self._slots[i] == h:
            return False
        self._slots[i] = h
        self._n += 1
        if self._n > self._cap * _MAX_LOAD:
            self._grow()
        return True

    def _grow(self) -> None:
        old = self._slots
        self._cap *= 2
        self._slots = array("Q", bytes(8 * self._cap))
        mask = self._cap - 1
        slots = self._slots
        for h in old:
            if h != _EMPTY:
                i = h & mask
                while slots[i] != _EMPTY:
                    i = (i + 1) & mask
                slots[i] = h

    def __contains__(self, key: str) -> bool:
        return self.contains_hash(key_hash(key))

    def add(self, key: str) -> bool:
        """Add a string key; returns False if it was already there."""
        return self.add_hash(key_hash(key))


class KeyMap:
    """A map from string keys (by 64-bit hash) to signed 64-bit integers.

    Memory: 16 bytes per slot, with between 1.25 and 2.5 slots per key.
    """

    def __init__(self, size_hint: int = 0) -> None:
        self._set = KeySet(size_hint=size_hint)
        self._values = array("q", bytes(8 * self._set._cap))

    def __len__(self) -> int:
        return len(self._set)

    @property
    def nbytes(self) -> int:
        """Bytes held by the table."""
        return self._set.nbytes + self._values.itemsize * len(self._values)

    def get(self, key: str) -> int | None:
        """The value stored for `key`, or None."""
        h = key_hash(key)
        i = self._set._find(h)
        return self._values[i] if self._set._slots[i] == h else None

    def setdefault(self, key: str, value: int) -> int:
        """The value stored for `key`; stores `value` first if there is none."""
        return self.setdefault_hash(key_hash(key), value)

    def setdefault_hash(self, h: int, value: int) -> int:
        """`setdefault` by the key's `key_hash`."""
        s = self._set
        i = s._find(h)
        if s._slots[i] == h:
            return self._values[i]
        if (s._n + 1) > s._cap * _MAX_LOAD:
            self._grow()
            i = s._find(h)
        s._slots[i] = h
        s._n += 1
        self._values[i] = value
        return value

    def set_hash(self, h: int, value: int) -> None:
        """Map the key of `key_hash` `h` to `value`, replacing any value it had."""
        if self.setdefault_hash(h, value) != value:
            self._values[self._set._find(h)] = value

    def _grow(self) -> None:
        s = self._set
        old_slots, old_values = s._slots, self._values
        s._cap *= 2
        s._slots = array("Q", bytes(8 * s._cap))
        self._values = array("q", bytes(8 * s._cap))
        mask = s._cap - 1
        for h, v in zip(old_slots, old_values):
            if h != _EMPTY:
                i = h & mask
                while s._slots[i] != _EMPTY:
                    i = (i + 1) & mask
                s._slots[i] = h
                self._values[i] = v


class FirstSeen:
    """Where each id was first seen (file and line), in a `KeyMap`: duplicate-id detection at scale.

    `claim(id, file, line)` returns the `"file:line"` of the id's first
    occurrence: the given place if it is new. Lines must be below 2⁴⁰.
    `prior(id_hash) -> line | None`, when given, names the ids first seen in
    `prior_file` before this process read anything (the records a resume
    cursor skipped, `tracejudge.engine.cursor`): they count as seen there.
    """

    def __init__(self, size_hint: int = 0, prior: Callable[[int], int | None] | None = None, prior_file: str = "") -> None:
        self._map = KeyMap(size_hint=size_hint)
        self._files: list[str] = []
        self._file_no: dict[str, int] = {}
        self._prior = prior
        self._prior_no = self._place(prior_file, 0) if prior is not None else 0

    def __len__(self) -> int:
        return len(self._map)

    @property
    def nbytes(self) -> int:
        """Bytes held by the table."""
        return self._map.nbytes

    def _place(self, file: str, line: int) -> int:
        no = self._file_no.get(file)
        if no is None:
            no = self._file_no[file] = len(self._files)
            self._files.append(file)
        return (no << 40) | line

    def _first(self, id_hash: int, place: int) -> int:
        if self._prior is not None and (line := self._prior(id_hash)) is not None:
            return self._prior_no | line
        return self._map.setdefault_hash(id_hash, place)

    def claim(self, key: str, file: str, line: int) -> str:
        """Record `key` at `file:line` unless already seen; return where it was first seen."""
        return self.claim_hash(key_hash(key), file, line)

    def claim_hash(self, id_hash: int, file: str, line: int) -> str:
        """`claim` by the id's `key_hash`."""
        got = self._first(id_hash, self._place(file, line))
        return f"{self._files[got >> 40]}:{got & ((1 << 40) - 1)}"

    def claim_first(self, id_hash: int, file: str, line: int) -> bool:
        """Like `claim` by the id's `key_hash`; True if `file:line` is the first place it was seen."""
        place = self._place(file, line)
        return self._first(id_hash, place) == place

    def move(self, id_hash: int, file: str, line: int) -> None:
        """Say the id of `id_hash` was first seen at `file:line` after all (a claim made on a peeked id whose record
        turned out unreadable: `engine.flow`). An id the `prior` names stays where the prior says."""
        if self._prior is not None and self._prior(id_hash) is not None:
            return
        self._map.set_hash(id_hash, self._place(file, line))

    def where(self, id_hash: int) -> tuple[str, int] | None:
        """`(file, line)` where the id of `id_hash` was first seen, or None if it has not been claimed (nothing is recorded)."""
        if self._prior is not None and (line := self._prior(id_hash)) is not None:
            return self._files[self._prior_no >> 40], line
        i = self._map._set._find(id_hash)
        if self._map._set._slots[i] != id_hash:
            return None
        got = self._map._values[i]
        return self._files[got >> 40], got & ((1 << 40) - 1)
