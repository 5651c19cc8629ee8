"""What the formats that read from a trace server share (`phoenix`, `mlflow-server`).

- `safe_url`: a URL as it may appear in a message, a record's file name or a log line: no
  user, password, query or fragment (where tokens hide);
- `probe`: one short HTTP GET, so a server that is down fails the run at once, as
  `Unreachable` naming the URL, instead of after a client's minutes of retries, and never
  as a run of zero cases. It sends the credentials the client will send (`mlflow_headers`,
  the Phoenix client's own headers): a proxy in front of the store that wants a token on
  every path answers the probe as it answers the client;
- `last_run_start`: what `start: last_run` means for a nightly sweep resumed in one run
  directory: the start of the last segment that *finished* there, less `overlap_s`
  (spans are exported when they end, so a trace that began just before that segment may
  have arrived after it read). Finished cases read again are skipped by the resume, so the
  overlap costs a read, never a judge call. Under a cap, where the last capped read stopped
  if that is earlier (`sweep`);
- `mlflow_limits`: MLflow's client retries a failing request 7 times with a back-off (about
  four minutes); a reader or sink says so in seconds;
- `store_failure`: what an MLflow call that failed says, in one line naming the URL;
- `answer_line`: what a store's error answer said, as those lines quote it (its first line, cut short);
- `empty_window`: what a read that found no trace read, in words (a quiet night is no error);
- `store_identity`: which traces a store-backed run reads (server, project or experiment, filter): its dataset;
- `TimeOption`: a `start`/`end` option, given as text or as the datetime (or date) YAML makes of an unquoted
  `2026-12-01T00:00:00Z`.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlsplit, urlunsplit

from pydantic import BeforeValidator
from tracejudge.core.errors import ConfigError, Unreachable

__all__ = ["TimeOption", "answer_line", "bind_last_run", "empty_window", "last_run_start", "mlflow_headers", "mlflow_limits", "no_credentials", "parse_time", "probe", "safe_url",
           "store_failure", "store_identity"]


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
        hint = ""
        if exc.code in (401, 403):  # say whether a credential went: "none sent" is the fix, "one sent" a wrong one
            sent = any(k.lower() == "authorization" for k in (headers or {}))
            hint = " (a credential was sent and refused)" if sent else " (no credential was sent: set the client's token in the environment)"
        raise Unreachable(f"{safe_url(url)} answered HTTP {exc.code} to GET {path}{hint}") from None
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise Unreachable(f"{safe_url(url)} cannot be reached ({reason})") from None


def mlflow_headers(uri: str) -> dict[str, str]:
    """The `Authorization` header MLflow's client sends to `uri` (`{}` when none): Basic from `MLFLOW_TRACKING_USERNAME` /
    `MLFLOW_TRACKING_PASSWORD` (or MLflow's credentials file), else Bearer `MLFLOW_TRACKING_TOKEN`, as
    `mlflow.utils.rest_utils.http_request` builds it. Needs mlflow; the header is sent, never shown."""
    import base64

    from mlflow.utils.credentials import get_default_host_creds

    creds = get_default_host_creds(uri)
    if creds.username and creds.password and creds.auth not in ("kubernetes", "kubernetes-namespaced"):
        return {"Authorization": "Basic " + base64.standard_b64encode(f"{creds.username}:{creds.password}".encode()).decode()}
    return {"Authorization": f"Bearer {creds.token}"} if creds.token else {}


def parse_time(value: Any, where: str) -> datetime | None:
    """An ISO 8601 time (naive = UTC) as an aware datetime; None for None. Raises `ConfigError` naming `where`."""
    if value is None or isinstance(value, datetime):
        return value.astimezone(UTC) if isinstance(value, datetime) and value.tzinfo else (value.replace(tzinfo=UTC) if value else None)
    try:
        parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(f"{where}: {value!r} is not an ISO 8601 time (2026-12-01T00:00:00Z) or last_run") from None
    return parsed.astimezone(UTC) if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def time_text(value: Any) -> Any:
    """`value` as ISO 8601 text when it is a `datetime` or `date` (YAML's reading of an unquoted `2026-12-01T00:00:00Z` or
    `2026-12-01`), else unchanged: `parse_time` reads the text, a naive time as UTC."""
    if isinstance(value, datetime):
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, date):
        return value.isoformat()
    return value


TimeOption = Annotated[str | None, BeforeValidator(time_text)]


def last_run_start(run_dir: Path, overlap_s: float) -> datetime | None:
    """The start of the last finished segment of `run_dir` less `overlap_s`; None when none finished (read everything)."""
    from tracejudge.stages.extract.sweep import last_finished

    finished = last_finished(run_dir)
    return finished - timedelta(seconds=overlap_s) if finished is not None else None


def bind_last_run(dataset: Any, run_dir: Path) -> Any:
    """`dataset` with `options.start: last_run` replaced by the time it stands for (`sweep.window_start`), or removed on a
    first run; the reader's cap and its record of a capped read (`sweep.Sweep`) ride along in `options["_sweep"]`."""
    from tracejudge.stages.extract.sweep import CAPS, window_start

    options = dict(dataset.options)
    if options.get("start") != "last_run":
        return dataset
    capped = any(options.get(k) is not None for k in CAPS) or getattr(dataset, "limit", None) is not None
    since, seen = window_start(run_dir, float(options.get("overlap_s", 600)), capped)
    options["start"] = since.isoformat() if since is not None else None
    options["_sweep"] = {"run_dir": str(run_dir), "seen": seen or set(), "shard": _shard(run_dir)}
    return dataset.model_copy(update={"options": options})


def _shard(run_dir: Path) -> tuple[int, int] | None:
    """The run's `run.shard` as its manifest records it (`--shard` included), or None."""
    from tracejudge.engine import store
    from tracejudge.engine.shards import parse_shard

    spec = (((store.read_manifest(run_dir, strict=False) or {}).get("config") or {}).get("run") or {}).get("shard")
    try:
        return parse_shard(spec) if spec else None
    except ValueError:
        return None


def mlflow_limits() -> None:
    """Cap MLflow's client retries (`MLFLOW_HTTP_REQUEST_MAX_RETRIES` 2, `MLFLOW_HTTP_REQUEST_TIMEOUT` 30 s) unless the
    environment sets them: its defaults (7 retries, back-off factor 2, 120 s) took ~4 minutes to report a server's 500."""
    import logging
    import os

    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "2")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "30")
    # Its warning on an answer that is not JSON prints the body (a proxy's page) on stderr before our one-line error says so.
    logging.getLogger("mlflow.utils.rest_utils").setLevel(logging.ERROR)


def store_failure(exc: BaseException) -> tuple[str, str]:
    """`(kind, detail)` of an exception an MLflow call raised. `kind`: `unreachable` (a refused connection, a timeout: the
    server is down or too slow), `not_json` (an answer that is not JSON), `error` (MLflow, or a proxy, answered an error).
    `detail` is one short line, its URLs shown by `safe_url` (a token in a URL stays out of it)."""
    import re

    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    # MLflow 3.18 hands back an error answer its retries did not cure (`raise_on_status=False`) and raises "API request
    # to endpoint … failed with error code 500 != 200. Response body: '…'"; MLflow 3.17 raised `RetryError` instead.
    if answered := re.search(r"failed with error code (\d{3}) != \d{3}\. Response body: '(.*)", str(exc), re.DOTALL):
        body = answer_line(answered.group(2).rstrip("'"))
        text = f"HTTP {answered.group(1)}" + (f": {body}" if body else "")
    detail = re.sub(r"https?://[^\s'\")]+", lambda m: safe_url(m.group(0)), text)[:200]
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        name = type(exc).__name__
        if isinstance(exc, json.JSONDecodeError):
            return "not_json", detail
        if name in ("RetryError", "ResponseError"):  # retries used up on error answers (500, 503): the server answered
            codes = re.findall(r"too many (\d+) error responses", str(exc))
            return "error", f"HTTP {codes[0]}" if codes else detail
        if isinstance(exc, OSError) or name in ("ConnectionError", "Timeout", "ReadTimeout", "ConnectTimeout", "NewConnectionError"):
            return "unreachable", type(exc).__name__
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    return "error", detail


def answer_line(body: str) -> str:
    """The first non-blank line of a store's error answer `body`, stripped and cut to 120 characters ("" for none): a
    server's traceback or HTML page would otherwise fill the error line, report.md and junit.xml."""
    line = next((ln.strip() for ln in str(body).splitlines() if ln.strip()), "")
    return line[:120]


def empty_window(fmt_name: str, options: dict[str, Any]) -> str:
    """`no traces were in the window (…)` for a store read (`fmt_name`, its `dataset.options`) that yielded nothing."""
    url = options.get("url") or options.get("tracking_uri")
    parts = [safe_url(url)] if url else []
    parts += [f"{k} {options[k]}" for k in ("project", "experiment", "experiment_ids", "start", "end", "filter", "filter_string")
              if options.get(k) not in (None, "", [], {})]
    return f"format {fmt_name}: no traces were in the window ({', '.join(parts) or 'the whole store'})"


_IDENTITY = ("project", "experiment", "experiment_ids", "filter", "filter_string")


def store_identity(fmt_name: str, options: dict[str, Any]) -> str:
    """The traces a run of store format `fmt_name` with `dataset.options` `options` reads, as one line: the server
    (`safe_url`), the project or experiment and the filter — `http://127.0.0.1:6006, project agents, filter
    {"metadata.env": "prod"}`. Two runs of one identity read the same dataset, night after night (the window, `start`/
    `end`, and the caps are not part of it); a run's manifest fingerprints no file of it."""
    url = options.get("url") or options.get("tracking_uri")
    parts = [safe_url(str(url)).rstrip("/") if url else "(the server the environment names)"]
    shown = {"project": "default"} if fmt_name == "phoenix" else {}  # (Phoenix's default project, named or not)
    shown.update({k: options[k] for k in _IDENTITY if options.get(k) not in (None, "", [], {})})
    parts += [f"{k} {v if isinstance(v, str) else json.dumps(v, sort_keys=True)}" for k, v in shown.items()]
    return ", ".join(parts)
