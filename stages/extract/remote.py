"""What the formats that read from a trace server share (`phoenix`, `mlflow-server`).

- `safe_url`: a URL as it may appear in a message, a record's file name or a log line: no
  user, password, query or fragment (where tokens hide);
- `probe`: one short HTTP GET, so a server that is down fails the run at once, as
  `Unreachable` naming the URL, instead of after a client's minutes of retries, and never
  as a run of zero cases;
- `last_run_start`: what `start: last_run` means for a nightly sweep resumed in one run
  directory: the start of the last segment that *finished* there, less `overlap_s`
  (spans are exported when they end, so a trace that began just before that segment may
  have arrived after it read). Finished cases read again are skipped by the resume, so the
  overlap costs a read, never a judge call.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from tracejudge.core.errors import ConfigError, Unreachable

__all__ = ["bind_last_run", "last_run_start", "no_credentials", "parse_time", "probe", "safe_url"]


def safe_url(url: str) -> str:
    """`url` without credentials, query or fragment (`http://u:tok@host/x?k=1` → `http://host/x`)."""
    try:
        parts = urlsplit(str(url))
    except ValueError:
        return "<unparsable URL>"
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def no_credentials(url: str | None) -> str | None:
    """`url` unchanged, or `ValueError` when it carries a user or password: the config, URL included, is written to manifest.json."""
    if url is not None and (urlsplit(str(url)).username or urlsplit(str(url)).password):
        raise ValueError("a URL with credentials would be written to manifest.json: give the token in the environment "
                         "(PHOENIX_API_KEY, MLFLOW_TRACKING_TOKEN) and the URL without it")
    return url


def probe(url: str, path: str, headers: dict[str, str] | None = None, timeout: float = 5.0) -> None:
    """GET `url` + `path`; raise `Unreachable` naming `safe_url(url)` unless it answers 2xx.

    `headers` (an API key) are sent, never shown. Non-HTTP URLs (`file:`, `sqlite:`) are not probed.
    """
    if not str(url).startswith(("http://", "https://")):
        return
    request = urllib.request.Request(str(url).rstrip("/") + path, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:  # noqa: S310 (the user's own server)
            resp.read(1 << 16)
    except urllib.error.HTTPError as exc:
        raise Unreachable(f"{safe_url(url)} answered HTTP {exc.code} to GET {path}") from None
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise Unreachable(f"{safe_url(url)} cannot be reached ({reason})") from None


def parse_time(value: Any, where: str) -> datetime | None:
    """An ISO 8601 time (naive = UTC) as an aware datetime; None for None. Raises `ConfigError` naming `where`."""
    if value is None or isinstance(value, datetime):
        return value.astimezone(UTC) if isinstance(value, datetime) and value.tzinfo else (value.replace(tzinfo=UTC) if value else None)
    try:
        parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(f"{where}: {value!r} is not an ISO 8601 time (2026-12-01T00:00:00Z) or last_run") from None
    return parsed.astimezone(UTC) if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def last_run_start(run_dir: Path, overlap_s: float) -> datetime | None:
    """The start of the last finished segment of `run_dir` less `overlap_s`; None when none finished (read everything)."""
    for name in ("checkpoint.json", "summary.json"):
        try:
            data = json.loads((Path(run_dir) / name).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        starts = [s["started_at"] for s in data.get("segments") or [] if isinstance(s, dict) and s.get("ended") == "finished" and s.get("started_at")]
        if starts:
            return parse_time(max(starts), f"{name}: segments") - timedelta(seconds=overlap_s)  # type: ignore[operator]
    return None


def bind_last_run(dataset: Any, run_dir: Path) -> Any:
    """`dataset` with `options.start: last_run` replaced by the time it stands for (`last_run_start`), or removed on a first run."""
    options = dict(dataset.options)
    if options.get("start") != "last_run":
        return dataset
    since = last_run_start(run_dir, float(options.get("overlap_s", 600)))
    options["start"] = since.isoformat() if since is not None else None
    return dataset.model_copy(update={"options": options})
