"""The one check of the config's http URLs (`judge.base_url`, a panel model's `base_url`, `target.url`, Phoenix's `url`).

Checked when the config loads, so `localhost:8000` (no scheme) or `http://:8000` (no host) is a
config error naming the key and its line, not a judge or target error on every case of the run.
Whatever a real server's URL may hold passes: a host name, an IPv4 address or an IPv6 one in
brackets, a port, a path (`/v1`, `/openai/deployments/x`), a query.

A URL is never expanded from the environment (only `target.headers` values are, when the run
starts), so `${VAR}` in one would be sent as written: to a host named `${vllm_host}`, or with an
unset variable's reference in its path. It is refused, naming the variable and whether it is set.
"""

from __future__ import annotations

import os
import re
from urllib.parse import urlsplit

__all__ = ["EXAMPLE", "http_url", "shown_url"]

EXAMPLE = "http://127.0.0.1:8000/v1"


def http_url(value: str | None, example: str = EXAMPLE) -> str | None:
    """`value` unchanged when it is an http:// or https:// URL with a host (None passes: the key is unset).

    Raises `ValueError` saying what is expected, with `example`; the config's error adds the key,
    its line and the value given.
    """
    if value is None:
        return None
    problem = _problem(value)
    if problem is not None:
        raise ValueError(f"Input should be an http:// or https:// URL{problem}, such as {example}")
    return value


def shown_url(value: str) -> str:
    """`value` as a message may show it: without a user or password before the host, a query or a fragment (where
    tokens hide), cut as text, so a value that is no valid URL (`http://[::1:8000/v1?k=1`) is shown as given otherwise
    (`http://user:pw@host/v1?tok=abc` → `http://host/v1`)."""
    text = re.split(r"[?#]", str(value), maxsplit=1)[0]
    return re.sub(r"^([A-Za-z][A-Za-z0-9+.-]*:)?//[^/@]*@", lambda m: f"{m.group(1) or ''}//", text)


def _problem(value: str) -> str | None:
    """What keeps `value` from being an http(s) URL with a host, as words to add to the message ("" for the scheme), or None."""
    if any(c.isspace() or not c.isprintable() for c in value):
        return " without spaces or control characters"
    if "${" in value:
        return _reference(value)
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 (parsing the port is the check: not a number, or out of range)
    except ValueError as exc:
        return f" ({str(exc)[:1].lower()}{str(exc)[1:]})"
    if parts.scheme.lower() not in ("http", "https"):
        return ""
    if not parts.hostname:
        return " with a host"
    return None


def _reference(value: str) -> str:
    """Why `value`, holding `${`, is refused: the variables it names, the unset ones said so, and what to write instead."""
    from tracejudge.llm.redact import ENV_VAR  # here: a config whose URLs pass never compiles the redaction patterns

    names = list(dict.fromkeys(ENV_VAR.findall(value)))
    if not names:
        return " without `${`: a URL is not expanded from the environment"
    unset = [n for n in names if n not in os.environ]
    said = "" if not unset else (f"environment variable {unset[0]} is not set, and " if len(unset) == 1
                                 else f"environment variables {', '.join(unset)} are not set, and ")
    # The shell expands `$VAR` in a `--set` value: the way to take a URL from the environment.
    return (f" without {', '.join(f'${{{n}}}' for n in names)} ({said}a URL is not expanded from the environment: "
            "write the URL out, or let the shell fill it in with --set)")
