"""Joining the Ray cluster of a run (`run.ray_address`), with Ray's token authentication, or starting a local one.

Ray protects a cluster with a token (since 2.52; by default for local
clusters since 2.59): with Ray 2.60 `ray start --head` turns token
authentication on by itself whenever `~/.ray/auth_token` is there, and every
local `ray.init()` writes that file if it is missing, so on a machine that
ever ran Ray locally the head asks for the token. A driver reads the token from, in this order, the environment
variable `RAY_AUTH_TOKEN`, the file named by `RAY_AUTH_TOKEN_PATH`, or
`~/.ray/auth_token` (`ray get-auth-token` on the head prints it); but Ray only
sends it when `RAY_AUTH_MODE=token` is set, and sets that itself only for a
cluster it finds on its own, never for an explicit address. So `attach` sets
`RAY_AUTH_MODE=token` for this process when a token is available and the
variable is unset (a cluster without authentication ignores the token); an
explicit `RAY_AUTH_MODE` is left alone. The token is never read, logged or
stored here: only where it would come from is named.

An attach that fails raises `Unreachable` (exit status 3) with one line: the
address and the likely cause (nothing listening, no token, a refused token,
or Ray's own first line). Ray's C++ client writes a warning to file
descriptor 2 on each of its 20 connection attempts (a second apart); while it
attaches, descriptor 2 goes to a temporary file, and what was written there
is passed on afterwards without those retry warnings, which the one line
explains.
"""

from __future__ import annotations

import os
import re
import socket
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import ray
from tracejudge.core.errors import Unreachable

__all__ = ["PROBE_TIMEOUT_S", "attach", "explain", "token_source"]

PROBE_TIMEOUT_S = 5.0
"""Seconds a TCP connect to the head's port may take before the address counts as not answering."""

_HINT = "`ray get-auth-token` on the head prints it"


def token_source() -> tuple[str | None, str | None]:
    """`(source, problem)`: where Ray will read this machine's token from, named, never the token itself.

    `source` is `"RAY_AUTH_TOKEN"`, `"RAY_AUTH_TOKEN_PATH (FILE)"` or the path
    of `~/.ray/auth_token`, or None when none has a token; `problem` says why
    a named source is unusable (`RAY_AUTH_TOKEN_PATH` naming a missing or
    empty file), else None.
    """
    if os.environ.get("RAY_AUTH_TOKEN", "").strip():
        return "RAY_AUTH_TOKEN", None
    named = os.environ.get("RAY_AUTH_TOKEN_PATH")
    if named:
        path = Path(named).expanduser()
        if _has_content(path):
            return f"RAY_AUTH_TOKEN_PATH ({path})", None
        return None, f"RAY_AUTH_TOKEN_PATH names {path}, which is missing, unreadable or empty"
    default = Path.home() / ".ray" / "auth_token"
    return (str(default), None) if _has_content(default) else (None, None)


def _has_content(path: Path) -> bool:
    try:
        return path.is_file() and path.stat().st_size > 0 and os.access(path, os.R_OK)
    except OSError:
        return False


def _probe(address: str) -> None:
    """Raise `Unreachable` when nothing accepts a TCP connection at `HOST:PORT` (seconds instead of Ray's 20 retries)."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or not host or "://" in address:
        return  # not HOST:PORT ("auto", a ray:// client address): Ray parses it (and says what is wrong)
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=PROBE_TIMEOUT_S):
            return
    except TimeoutError:
        cause = f"no answer within {PROBE_TIMEOUT_S:.0f} s (wrong host, or a firewall)"
    except socket.gaierror as exc:
        cause = f"the host name does not resolve ({exc.strerror or exc})"
    except OSError as exc:
        cause = f"nothing accepts connections there ({exc.strerror or exc})"
    raise Unreachable(f"cannot attach to the Ray cluster at {address} (run.ray_address): {cause}; "
                      f"start it with `ray start --head --port {port}` on that machine, or correct the address")


def _chain(exc: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    while exc is not None and exc not in out:
        out.append(exc)
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    return out


def explain(address: str, exc: BaseException) -> str:
    """One line for a failed `ray.init(address=address)`: the address and the likely cause (`exc` and its causes)."""
    chain = _chain(exc)
    text = "\n".join(f"{type(e).__name__}: {e}" for e in chain)
    where = f"cannot attach to the Ray cluster at {address} (run.ray_address)"
    source, problem = token_source()
    if any(mark in text for mark in ("InvalidAuthToken", "Unauthenticated", "AuthenticationError", "authentication token")):
        mode = os.environ.get("RAY_AUTH_MODE", "").lower()
        if mode == "disabled":
            return (f"{where}: the cluster requires its token and RAY_AUTH_MODE=disabled is set here; unset it and give the "
                    f"head's token in RAY_AUTH_TOKEN, a file named by RAY_AUTH_TOKEN_PATH, or ~/.ray/auth_token ({_HINT})")
        if source is not None:
            return f"{where}: the cluster refused the token from {source}; give the head's token instead ({_HINT})"
        return (f"{where}: the cluster requires a token (Ray's token authentication) and "
                f"{problem or 'none was found here'}; give the head's token in RAY_AUTH_TOKEN, a file named by "
                f"RAY_AUTH_TOKEN_PATH, or ~/.ray/auth_token ({_HINT})")
    leaf = chain[-1]
    lines = [line.strip() for line in str(leaf).strip().splitlines() if line.strip()] or [""]
    # Ray's "Failed to connect to GCS" embeds the last attempt's traceback: its final line is the cause.
    first = (lines[-1] if "Traceback (most recent call last)" in str(leaf) else lines[0])[:300]
    return (f"{where}: {type(leaf).__name__}: {first} (is the head up, and does it run the same Ray, {ray.__version__}, "
            f"and Python as here?)")


def attach(address: str | None) -> None:
    """`ray.init` for a run: join the cluster at `address` (token authentication as above), or start a local one (None).

    Raises `Unreachable` (one line, exit status 3) when the cluster at
    `address` cannot be joined; a local start's failures propagate as they are.
    """
    options = {"log_to_driver": False, "configure_logging": False}
    if address is None:
        ray.init(**options)
        return
    _probe(address)
    if "RAY_AUTH_MODE" not in os.environ and token_source()[0] is not None:
        os.environ["RAY_AUTH_MODE"] = "token"  # what Ray does for a cluster it finds; also read by Ray's C++ side
        _refresh_ray_config()
    with _held_stderr():
        try:
            ray.init(address=address, **options)
        except Exception as exc:  # Ray raises ConnectionError, RuntimeError, ValueError or its AuthenticationError
            failure = explain(address, exc)
        else:
            failure = None
    if failure is not None:
        raise Unreachable(failure) from None


# `[2026-12-01 16:02:56,721 W 30766 30780] gcs_client.cc:210: Failed to get cluster ID from GCS server: ...`
_RETRY_WARNING = re.compile(r"^\[[^\]]*\] gcs_client\.cc:\d+: Failed to get cluster ID")


@contextmanager
def _held_stderr() -> Iterator[None]:
    """Send file descriptor 2 to a temporary file for the block, then write what came, less Ray's retry warnings, to it."""
    try:
        fd = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # no real stderr (embedded, captured): nothing to hold
        yield
        return
    sys.stderr.flush()
    saved = os.dup(fd)
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), fd)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, fd)
            os.close(saved)
            held.seek(0)
            kept = [line for line in held.read().decode("utf-8", "replace").splitlines(keepends=True) if not _RETRY_WARNING.match(line)]
            if kept:
                sys.stderr.write("".join(kept))
                sys.stderr.flush()


def _refresh_ray_config() -> None:
    """Make Ray's cached config see the new `RAY_AUTH_MODE` (as Ray's own `_enable_token_auth` does)."""
    try:
        from ray._raylet import Config

        Config.initialize("")
    except (ImportError, AttributeError):  # another Ray: it reads the variable at `ray.init`
        pass
