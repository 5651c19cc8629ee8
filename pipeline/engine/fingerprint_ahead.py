"""The dataset files' fingerprints for the manifest, hashed in a thread while the run sets up (`FingerprintAhead`).

Hashing the dataset is the largest serial step of a run's start (about 60 ms for 90 MB), and the steps before
the manifest is written (`tracejudge run`'s imports of the engine and reports, the event loop's start, the first
records' check, the run directory's lock) need none of it. So the hash starts first, in a thread (sha256 and file
reads release the GIL; the set-up's imports let go of it at every file they read): `tracejudge run` starts it as
soon as it has the config, a run called from Python as it begins. The switch interval is left as it is: lowered,
the hash kept pace beside pure-Python work, but on a loaded machine each hand-over could wait for the hashing
thread to be scheduled, and the main thread spent more CPU. The manifest waits for it where it always did: every run, fresh or resumed, compares and writes its
manifest at the same point, before its journal opens, anything is skipped or any worker is forked (so no thread
runs across a fork), and a run killed at any moment leaves what it left before.
"""

from __future__ import annotations

import threading
from typing import Any

from tracejudge.core.config import RunConfig
from tracejudge.engine.dataset_fingerprint import Stopped
from tracejudge.engine.manifest import dataset_files

__all__ = ["FingerprintAhead"]


class FingerprintAhead:
    """`manifest.dataset_files(config)`, computed in a thread started now.

    Call `close` when done (after `files`, or instead of it): it stops a hash whose result was not taken and waits
    for the thread.
    """

    def __init__(self, config: RunConfig) -> None:
        self._paths = _paths(config)
        self._stop = threading.Event()
        self._files: dict[str, Any] | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._hash, args=(config,), name="tracejudge-dataset-hash", daemon=True)
        self._thread.start()

    def _hash(self, config: RunConfig) -> None:
        try:
            self._files = dataset_files(config, self._stop)
        except Stopped:
            pass
        except BaseException as exc:  # raised where the result is taken, as a hash in that thread would have raised it
            self._error = exc

    def hashes(self, config: RunConfig) -> bool:
        """True when this hash is of `config`'s dataset files (the same paths as the config it was started with)."""
        return _paths(config) == self._paths

    def files(self) -> dict[str, Any]:
        """The fingerprints (waiting for them); raises what hashing raised (`OSError` for an unreadable file)."""
        self._thread.join()
        if self._error is not None:
            error, self._error = self._error, None
            raise error
        assert self._files is not None
        return self._files

    def close(self) -> None:
        """Stop the hash if it still runs (its result is no longer wanted) and wait for its thread to end."""
        self._stop.set()
        self._thread.join()


def _paths(config: RunConfig) -> tuple[Any, Any]:
    return config.dataset.path, config.dataset.tasks
