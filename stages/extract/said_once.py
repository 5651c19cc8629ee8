"""Warnings said once per file (or folder), however often a run reads it: what extract has said, in this process.

A run reads a dataset file more than once (the fingerprint, a resume's reread, `limit` probes), and every reader of a
trace format warns of what a file's recording lacks; each warning names the file, so saying it again tells nothing.
"""

from __future__ import annotations

__all__ = ["first_time"]

_SAID: set[tuple[str, str]] = set()  # (topic, key) already said: per process, like the logging it gates


def first_time(topic: str, key: str) -> bool:
    """True the first time `(topic, key)` is asked in this process (say the warning now), False every time after.

    `topic` names the warning (`"dropped_attributes"`), `key` what it is said once for (a file's path, a folder's).
    """
    if (topic, key) in _SAID:
        return False
    _SAID.add((topic, key))
    return True
