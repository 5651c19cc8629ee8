"""The syncing thread of the floor with guarantees (`_floor_guarantees.py`): at each checkpoint the results fsynced,
then the checkpoint replaced (manifest.json before the first), while the main thread writes on."""

from __future__ import annotations

import json
import os
import queue
import threading
import time
from typing import Any


def _write_json(path: str, obj: Any, durable: bool) -> None:
    """`obj` as JSON to `path` through a temp file and os.replace (readers see the old or the new); fsynced if `durable`."""
    with open(f"{path}.tmp", "wb") as fh:
        fh.write(json.dumps(obj).encode())
        if durable:
            fh.flush()
            os.fsync(fh.fileno())
    os.replace(f"{path}.tmp", path)


class Syncer(threading.Thread):
    """At each `put`, the results fsynced, then the checkpoint replaced, by this thread (the main thread writes on
    meanwhile); manifest.json before the first (waiting for the fingerprint, a `_floor_guarantees.Fingerprint`). Started at
    the first `put`: after the fork. `outputs` (`_floor_outputs.Outputs`): results.idx before each checkpoint, the cursor's
    files after it, manifest.json's content."""

    def __init__(self, out_dir: str, fingerprint: Any, outputs: Any = None) -> None:
        super().__init__(name="floor-sync", daemon=True)
        self.out_dir, self.fingerprint, self.cpu, self.outputs = out_dir, fingerprint, 0.0, outputs
        self.error: BaseException | None = None
        self.queue: queue.SimpleQueue[tuple[int, dict[str, Any]] | None] = queue.SimpleQueue()

    def put(self, fd: int, state: dict[str, Any]) -> None:
        if self.ident is None:
            self.start()
        self.queue.put((fd, state))

    def run(self) -> None:
        try:
            manifest = False
            while (item := self.queue.get()) is not None:
                os.fsync(item[0])  # what the checkpoint claims is on disk before it says so
                more = self.outputs  # (`_floor_outputs`: the result index before the checkpoint, the cursor after it)
                if more is not None:
                    more.index(item[1])
                if not manifest:  # (a resume compares the dataset with it before it trusts any checkpoint)
                    dataset = {"dataset": {"path": self.fingerprint.result()}}
                    _write_json(os.path.join(self.out_dir, "manifest.json"), dataset if more is None else more.manifest(dataset), True)
                    manifest = True
                # Not fsynced: a checkpoint lost in a power cut leaves the one before, which claims less (as tracejudge's).
                _write_json(os.path.join(self.out_dir, "checkpoint.json"), item[1], False)
                if more is not None:
                    more.cursor(item[1], self.fingerprint.value)
        except BaseException as exc:  # raised by `close`
            self.error = exc
        self.cpu = time.thread_time()

    def close(self) -> None:
        """Wait for every checkpoint put (stop the thread); raise what it raised."""
        if self.is_alive():
            self.queue.put(None)
            self.join()
        if self.error is not None:
            raise self.error
