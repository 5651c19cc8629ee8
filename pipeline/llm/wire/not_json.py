"""A 2xx reply that is no JSON object, said by what it is (a stream, an HTML page, text, JSON cut short) as the
`ProviderError` whose kind decides between stopping the run, retrying, and closing the judge's gate."""

from __future__ import annotations

from tracejudge.llm.redact import redact
from tracejudge.llm.wire.payload import public_url
from tracejudge.llm.wire.records import HttpReply, ProviderError

__all__ = ["not_json_error"]


def not_json_error(http: HttpReply, answered: bool = True, secrets: tuple[str | None, ...] = ()) -> ProviderError:
    """The `ProviderError` for a 2xx `http` whose body is no JSON object, said by what it is ("not a JSON object" alone
    sends the user hunting), naming the URL and the content type. Returned, never raised.

    A stream → `request`. An HTML page, text of a content type that is not JSON, or text that does not even begin as
    JSON whatever its content type (`{` or `[` first) → `request` while nothing of the run was `answered` (the URL serves
    no judge API), else `server` with `not_json` set (the judge's gate counts it as a 502 page). JSON cut short or
    nested too deep under a JSON content type → `server`, a malformed reply retried. `secrets` are redacted from the
    quoted start of a body that is no JSON.
    """
    ctype = http.headers.get("content-type", "").split(";")[0].strip().lower() or "no content type"
    text = http.body.lstrip() if isinstance(http.body, str) else ""
    where = f" at {public_url(http.url)}" if http.url else ""
    # Text that does not even begin as JSON is a page or a proxy's garbling whatever its content type claims (a server
    # that labels every reply application/json); one that begins as JSON and breaks off (cut short, nested too deep)
    # is the provider's own malformed reply, which a retry can mend.
    garbled = isinstance(http.body, str) and not text.startswith(("{", "["))
    if ctype == "text/event-stream" or text.startswith(("data:", "event:")):
        # Not transient: the server streams every reply, so retrying (or asking per metric) only repeats it.
        err = ProviderError("request", f"HTTP {http.status}: the server{where} answered with a stream ({ctype}, server-sent events) "
                            "although tracejudge asks for none (its requests carry no \"stream\" key, whose default is false)", http.status)
    elif ctype in ("text/html", "application/xhtml+xml") or text[:200].lower().startswith(("<!doctype html", "<html")):
        said = f"HTTP {http.status}: got an HTML page ({ctype}), not a JSON reply: a proxy's error or login page answers{where}"
        err = (ProviderError("server", f"{said}; check judge.base_url and what stands before the server", http.status) if answered
               else ProviderError("request", f"{said}, and nothing of the run was answered in JSON there: {_NO_API}", http.status))
    else:
        said = f"HTTP {http.status}: reply is not a JSON object ({ctype}){where}"
        if garbled and "json" in ctype:
            said = f"HTTP {http.status}: reply is no JSON at all though its content type is {ctype}{where} (it begins {_begins(text, secrets)})"
        elif "json" in ctype and text and (why := _malformed(text)) is not None:
            said = f"HTTP {http.status}: reply is not a JSON object but {why} ({ctype}){where}"
        if answered or ("json" in ctype and not garbled):  # (a passing garbling; JSON cut short or nested too deep: malformed)
            err = ProviderError("server", said, http.status)
        else:
            err = ProviderError("request", f"{said}, and nothing of the run was answered in JSON there: {_NO_API}", http.status)
    err.not_json = "json" not in ctype or garbled  # (a page or text, where JSON was due: the server gate counts it as a 502 page)
    return err


def _malformed(text: str) -> str | None:
    """What is wrong with `text`, which begins as JSON: "JSON cut short" (it breaks off), "JSON nested too deep", or None
    (it is whole JSON, an array say, whose shape the caller names)."""
    import json

    try:
        json.loads(text)
    except RecursionError:
        return "JSON nested too deep"
    except ValueError:
        return "JSON cut short"
    return None


def _begins(text: str, secrets: tuple[str | None, ...]) -> str:
    # Enough of the body to tell a proxy's text from a model's, redacted before it is cut; control bytes shown escaped.
    return repr(redact(text, secrets)[:40]) if text else "empty"


# Why a URL that never answered in JSON stops the run rather than having every case retried to the same page.
_NO_API = ("the URL serves no judge API (a proxy's login page, a web server's page for a wrong path); stopped rather than "
           "retried on every case")
