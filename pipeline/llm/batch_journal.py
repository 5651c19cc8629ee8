"""`RUN_DIR/batches.jsonl`: the provider batches a run submitted, written before anything else happens.

One JSON object per line, appended and fsynced:

- `{"event": "intent", "chunk", "provider", "base_url", "custom_ids", "time"}` —
  written just before a batch is created; `chunk` (a hash of the custom
  ids) also goes in the batch's metadata, so a batch created by a run
  killed before it could log the id is found again by listing the
  provider's batches (OpenAI);
- `{"event": "submitted", "batch_id", "provider", "base_url", "custom_ids": [...], "time"}` —
  written as soon as the provider returned the batch id, before the batch
  is polled or anything else is recorded;
- `{"event": "ended", "batch_id", "time"}` — written when a segment ends
  cleanly after every requester of the batch had its result (a killed
  segment never writes it).

A resumed run re-attaches to every submitted batch without an `ended`
line: requests whose `custom_id` is in one wait for it (polling, then
downloading its results again, which is free) instead of being submitted
again. A torn last line (the process killed mid-write) is ignored.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

__all__ = ["BATCHES", "BatchJournal"]

BATCHES = "batches.jsonl"


class BatchJournal:
    """The batch log of one run directory (`None` directory: kept in memory only, nothing survives the process)."""

    def __init__(self, run_dir: Path | None) -> None:
        self.path = None if run_dir is None else Path(run_dir) / BATCHES
        self.submitted: dict[str, dict[str, Any]] = {}
        self.ended: set[str] = set()
        self.intents: dict[str, dict[str, Any]] = {}
        if self.path is not None and self.path.exists():
            for line in self.path.read_text(encoding="utf-8", errors="replace").splitlines():
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if not isinstance(rec, dict):
                    continue
                if rec.get("event") == "submitted" and isinstance(rec.get("custom_ids"), list):
                    self.submitted[str(rec["batch_id"])] = rec
                elif rec.get("event") == "intent" and isinstance(rec.get("custom_ids"), list):
                    self.intents[str(rec.get("chunk"))] = rec
                elif rec.get("event") == "ended":
                    self.ended.add(str(rec.get("batch_id")))

    def in_flight(self, provider: str, base_url: str) -> dict[str, list[str]]:
        """`{batch_id: custom_ids}` of batches submitted to this endpoint and not ended, oldest first."""
        return {bid: list(rec["custom_ids"]) for bid, rec in self.submitted.items()
                if bid not in self.ended and rec.get("provider") == provider and rec.get("base_url") == base_url}

    def orphan_intents(self, provider: str, base_url: str) -> dict[str, list[str]]:
        """`{chunk: custom_ids}` of batches about to be created whose creation was never logged."""
        logged = {rec.get("chunk") for rec in self.submitted.values()}
        return {chunk: list(rec["custom_ids"]) for chunk, rec in self.intents.items()
                if chunk not in logged and rec.get("provider") == provider and rec.get("base_url") == base_url}

    def record_intent(self, chunk: str, provider: str, base_url: str, custom_ids: list[str]) -> None:
        """Log a batch about to be created (fsynced before returning)."""
        rec = {"event": "intent", "chunk": chunk, "provider": provider, "base_url": base_url,
               "custom_ids": custom_ids, "time": round(time.time(), 3)}
        self._append(rec)
        self.intents[chunk] = rec

    def _append(self, rec: dict[str, Any]) -> None:
        if self.path is None:
            return
        new = not self.path.exists()
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (json.dumps(rec, separators=(",", ":")) + "\n").encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        if new:  # the file's directory entry must survive a crash too
            dfd = os.open(self.path.parent, os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)

    def record_submitted(self, batch_id: str, provider: str, base_url: str, custom_ids: list[str], chunk: str | None = None) -> None:
        """Log a batch the provider accepted (fsynced before returning)."""
        rec = {"event": "submitted", "batch_id": batch_id, "provider": provider, "base_url": base_url,
               "custom_ids": custom_ids, "chunk": chunk, "time": round(time.time(), 3)}
        self._append(rec)
        self.submitted[batch_id] = rec

    def record_ended(self, batch_id: str) -> None:
        """Log that a batch's results were all handed out; it will not be re-attached."""
        if batch_id in self.ended:
            return
        self._append({"event": "ended", "batch_id": batch_id, "time": round(time.time(), 3)})
        self.ended.add(batch_id)
