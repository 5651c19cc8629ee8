"""Fingerprints of cases handed over from memory, so a resume does not keep results of cases since edited.

A dataset file is fingerprinted whole before a run reads it (`engine.dataset_fingerprint`); cases from
memory (the Python API's `MemorySource`) may be a generator that can be read only once, so each case is
fingerprinted as the run reads it: the SHA-256 of its canonical JSON (keys sorted; a `Case` dumped with
the fields it was given, so it and the mapping it was built from agree), its first 8 bytes kept.

`case_digests.txt` in the run directory holds one line per case read, `<key_hash(id) hex> <digest hex>`,
the last line of an id standing. A resume reads it; a case that has a finished result and whose
digest differs from the recorded one is refused with `ManifestMismatch`, as a changed dataset file is.
A list or tuple of cases is checked whole before the run starts, so every changed case is named and
nothing is written; a one-shot iterable is checked as it is read, and the run stops at the first changed
case (results already written for the cases before it were scored from those cases as given, and stand).
A case with no finished result, or none recorded (a run directory written before this file existed),
is taken as it is now. Items without an id, and repeats of an id, are not fingerprinted: their results
are filed under made-up ids (`<cases>:N`, `id@<cases>:N`).
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import msgspec
from pydantic import BaseModel
from tracejudge.core.records import Case
from tracejudge.engine.keyset import KeySet, key_hash, trial_key
from tracejudge.engine.manifest import refusal

__all__ = ["CASE_DIGESTS", "CaseDigests", "case_digest"]

CASE_DIGESTS = "case_digests.txt"
_FLUSH_EVERY = 256  # lines: a kill loses at most these, whose cases a resume then takes as they are


def case_digest(item: Any) -> tuple[str, int] | None:
    """`(case id, digest)` of an in-memory item, or None for an item with no id or no JSON form.

    The digest is the first 8 bytes (little-endian) of the SHA-256 of the item's canonical JSON.
    """
    if isinstance(item, Case):
        cid: Any = item.id
        data: Any = item.model_dump(mode="json", exclude_unset=True)
    elif isinstance(item, Mapping):
        cid, data = item.get("id"), dict(item)
    else:
        return None
    if not isinstance(cid, (str, int)) or isinstance(cid, bool):
        return None
    try:
        text = _ENCODER.encode(data)
    except (TypeError, ValueError, RecursionError):
        # A key that is not a string, an object with no JSON form, a lone surrogate, a cycle: no stable digest, so
        # the case is taken as it is (a digest of its repr would differ every run and refuse every resume).
        return None
    return str(cid), int.from_bytes(hashlib.sha256(text).digest()[:8], "little")


def _model_json(obj: Any) -> Any:
    # A model inside a mapping (`{"trace": Trace(...)}`) is encoded as the mapping it was built from.
    if isinstance(obj, BaseModel):
        return obj.model_dump(mode="json", exclude_unset=True)
    raise TypeError(f"{type(obj).__name__} has no JSON form")


# Keys sorted at every level; about 3 times as fast as `json.dumps(sort_keys=True)` on a 25 KB case.
_ENCODER = msgspec.json.Encoder(order="sorted", enc_hook=_model_json)


class CaseDigests:
    """The recorded digests of a run directory's in-memory cases, and the check of the cases read now.

    `is_done(key)` says whether a (case, trial) key has a final result (`RunJournal.is_done`); `force`
    takes changed cases as they are now (their results kept) instead of refusing.
    """

    def __init__(self, run_dir: Path, is_done: Callable[[int], bool], trials: int, force: bool = False) -> None:
        self.run_dir, self.is_done, self.trials, self.force = run_dir, is_done, trials, force
        self.path = run_dir / CASE_DIGESTS
        self.recorded = _read(self.path)
        self.changed: list[str] = []  # the changes `force` let through

    def _change(self, cid: str, h: int, digest: int) -> str | None:
        """The refusal line for a case whose recorded digest differs and that has a finished result, else None."""
        old = self.recorded.get(h)
        if old is None or old == digest or not any(self.is_done(trial_key(h, t)) for t in range(self.trials)):
            return None
        return f"case {cid!r}: changed since its result was written (its content differs from the case that was scored)"

    def scan(self, items: Iterable[Any]) -> None:
        """Check every item before the run (a list or tuple: read again later); raise `ManifestMismatch` naming each changed case."""
        if not self.recorded:
            return
        seen, changes = KeySet(), []
        for item in items:
            got = case_digest(item)
            if got is None or not seen.add_hash(h := key_hash(got[0])):
                continue
            line = self._change(got[0], h, got[1])
            if line is not None:
                changes.append(line)
        self._refuse(changes)

    def _refuse(self, changes: list[str]) -> None:
        if not changes:
            return
        if not self.force:
            raise refusal(self.run_dir, changes)
        self.changed += changes

    async def checked(self, records: AsyncIterator[Any]) -> AsyncIterator[Any]:
        """`records` (`RawRecord`s of in-memory items) passed on, each case checked and its digest recorded as it is read."""
        seen, pending = KeySet(), 0
        with open(self.path, "a", encoding="ascii") as out:
            async for raw in records:
                got = case_digest(raw.payload)
                if got is not None and seen.add_hash(h := key_hash(got[0])):
                    line = self._change(got[0], h, got[1])
                    if line is not None and line not in self.changed:
                        self._refuse([line])
                    if self.recorded.get(h) != got[1]:
                        out.write(f"{h:016x} {got[1]:016x}\n")
                        pending += 1
                        if pending >= _FLUSH_EVERY:
                            out.flush()
                            pending = 0
                yield raw


def _read(path: Path) -> dict[int, int]:
    """`key_hash(id)` → digest from `path` (the last line of an id stands); empty when there is no file.

    A line that does not parse (a write cut by a kill) is skipped: its case is taken as it is now.
    """
    out: dict[int, int] = {}
    try:
        fh = open(path, encoding="ascii", errors="replace")
    except FileNotFoundError:
        return out
    with fh:
        for line in fh:
            parts = line.split()
            if len(parts) == 2 and len(parts[0]) == 16 and len(parts[1]) == 16:
                try:
                    out[int(parts[0], 16)] = int(parts[1], 16)
                except ValueError:
                    continue
    return out
