"""The dataset files' fingerprints for the manifest, hashed in a thread while the run sets up (`FingerprintAhead`).

Hashing the dataset is the largest serial step of a run's start (about 80 ms for 90 MB), and the steps before
the manifest is written (`tracejudge run`'s imports of the config models, the engine and reports, the config's
validation, the event loop's start, the first records' check, the run directory's lock) need none of it. So the
hash starts first, in a thread (sha256 and file reads release the GIL; the set-up's imports let go of it at every
file they read): `tracejudge run` starts it as soon as it has read the config's text (`ahead_of_source`: before
pydantic and the config models are imported, about 0.1 s earlier than with the validated config), a run called
from Python as it begins. The run takes the hash only when it is of its own validated config's files
(`hashes`), else it stops it and hashes its own. The switch interval is left as it is: lowered, the hash kept
pace beside pure-Python work, but on a loaded machine each hand-over could wait for the hashing thread to be
scheduled, and the main thread spent more CPU. The manifest waits for it where it always did: every run, fresh
or resumed, compares and writes its manifest at the same point, before its journal opens, anything is skipped or
any worker is forked (so no thread runs across a fork), and a run killed at any moment leaves what it left before.

This module imports neither pydantic nor the config models, so that the command line can start the hash before them.
"""

from __future__ import annotations

import stat
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracejudge.engine.dataset_fingerprint import Stopped, files_of

if TYPE_CHECKING:
    from tracejudge.core.config import RunConfig

__all__ = ["FingerprintAhead", "ahead_of_source"]


class FingerprintAhead:
    """`dataset_fingerprint.files_of(path, tasks)` (the manifest's `dataset`), computed in a thread started now.

    `FingerprintAhead(config)` hashes a validated config's `dataset.path` and `dataset.tasks`;
    `FingerprintAhead(paths=(path, tasks))` the files given. Call `close` when done (after `files`, or
    instead of it): it stops a hash whose result was not taken and waits for the thread.
    """

    def __init__(self, config: RunConfig | None = None, *, paths: tuple[Path | None, Path | None] | None = None) -> None:
        if (config is None) == (paths is None):
            raise TypeError("FingerprintAhead takes a config or paths=(path, tasks), not both")
        self._paths = _paths(config) if config is not None else paths
        self._stop = threading.Event()
        self._files: dict[str, Any] | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._hash, name="tracejudge-dataset-hash", daemon=True)
        self._thread.start()

    def _hash(self) -> None:
        try:
            self._files = files_of(*self._paths, self._stop)  # type: ignore[misc]
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


def ahead_of_source(data: dict[str, Any]) -> FingerprintAhead | None:
    """The hash of the dataset files a config read but not yet validated names (`config_source.read_config`'s
    `data`, paths already absolute), started now; None when it names none, or names one that is not a regular file or
    folder (validation refuses it: a FIFO is never opened here) or cannot be looked at.

    The run takes it only if its validated config names the same files (`FingerprintAhead.hashes`).
    """
    dataset = data.get("dataset")
    if not isinstance(dataset, dict):
        return None
    paths: list[Path | None] = []
    for key in ("path", "tasks"):
        value = dataset.get(key)
        if value is None:
            paths.append(None)
            continue
        if not isinstance(value, str) or not value or "\x00" in value:
            return None
        path = Path(value)
        try:
            mode = path.stat().st_mode
        except (OSError, ValueError):
            return None
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            return None
        paths.append(path)
    if paths[0] is None:
        return None
    return FingerprintAhead(paths=(paths[0], paths[1]))


def _paths(config: RunConfig) -> tuple[Any, Any]:
    return config.dataset.path, config.dataset.tasks
