"""Provider batch APIs: submit a batch, poll it, read its results — OpenAI Batch API and Anthropic Message Batches.

OpenAI (`protocol="openai"`, also what the simulator speaks):
`POST {base}/files` (multipart, `purpose=batch`, one JSONL line
`{custom_id, method: POST, url: /v1/chat/completions, body}` per request),
`POST {base}/batches` (`input_file_id`, `endpoint`, `completion_window`,
`metadata`), `GET {base}/batches/{id}` until the status is terminal
(`completed`, `expired`, `failed`, `cancelled`), then
`GET {base}/files/{output_file_id}/content` and — always, even for a batch
that says `completed` — the `error_file_id`'s content.

Anthropic (`protocol="anthropic"`): `POST {base}/messages/batches`
(`requests: [{custom_id, params}]`), `GET {base}/messages/batches/{id}` until
`processing_status` is `ended`, then the JSONL at `results_url`.

Results are joined by `custom_id`, never by position. Each becomes a
`BatchResult` whose kind is `ok` (with the `Reply`, read by the same
`read_reply` as a synchronous answer), `error`, `expired` or `canceled`, or
`unread`: a line that is not JSON but names its `custom_id` in a file of
answered requests (OpenAI's output file, Anthropic's `succeeded` results),
which the provider billed though its usage cannot be read (so is an OpenAI
line naming its request whose `response` or `response.body` is not an object,
and an Anthropic `succeeded` result whose `message` is not). A line of such a
file naming no request (its `custom_id` missing or cut off, or JSON that is
not an object at all: `[1]`, `"x"`) was billed too:
`fetch_results` lists it apart (`nameless`), and the batch runner bills it
as the unread answer of a request of that batch left without a result.
Control calls (upload, create, poll, list, download) raise `ProviderError`
like the synchronous path; the caller retries them (with tenacity).
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from tracejudge.llm.providers import HttpReply, ProviderError, Reply, rate_info, read_reply

__all__ = ["BatchResult", "BatchState", "NoBatchApi", "batch_line", "fetch_results", "find_batch", "poll_batch", "submit_batch"]

OPENAI_TERMINAL = {"completed", "expired", "failed", "cancelled"}


class NoBatchApi(ProviderError):
    """Creating a batch got HTTP 404 or 405: the endpoint has no batch API (vLLM, Ollama, llama.cpp, most gateways).

    A `request` error, so it is never retried and stops the run (exit 2): every batch would be refused the same way,
    and each request's score would otherwise end `provider_error` one by one. Only the creating calls (the upload and
    the batch itself) raise it; a 404 while polling a known batch id is about that batch, not the API.
    """

    def __init__(self, base_url: str, cause: ProviderError) -> None:
        from tracejudge.llm.providers import public_url

        super().__init__("request", f"the judge endpoint {public_url(base_url)} has no batch API ({cause}); set judge.mode: sync to send "
                                    "each request on its own", cause.status)


@dataclass
class BatchState:
    """A batch as last polled: provider id, raw status, whether it is terminal, where its results are."""

    id: str
    status: str
    terminal: bool
    output_file_id: str | None = None
    error_file_id: str | None = None
    results_url: str | None = None
    raw: dict[str, Any] = field(default_factory=dict)


@dataclass
class BatchResult:
    """One request's outcome in a batch: `kind` is `ok`, `error`, `expired`, `canceled`, `refused` (the model refused
    to judge it: `reply` then carries the refusal's usage, which the provider bills, `message` names it) or `unread` (its
    answer could not be read: billed by the provider; `reply` holds the usage it reported, None when that is unknown too)."""

    custom_id: str
    kind: str
    reply: Reply | None = None
    message: str = ""
    billed: bool = False  # (`unread`: counted as billed already, once, though two requesters of its custom_id share it)


def batch_line(protocol: str, custom_id: str, payload: dict[str, Any]) -> bytes:
    """The request as it goes into the batch (a JSONL line for OpenAI, a JSON item for Anthropic); its length counts against the byte limit."""
    if protocol == "anthropic":
        return json.dumps({"custom_id": custom_id, "params": payload}, separators=(",", ":")).encode()
    return json.dumps({"custom_id": custom_id, "method": "POST", "url": "/v1/chat/completions", "body": payload}, separators=(",", ":")).encode() + b"\n"


async def _http(session: aiohttp.ClientSession, method: str, url: str, headers: dict[str, str], timeout_s: float,
                json_body: Any = None, data: Any = None, raw: bool = False) -> HttpReply:
    t0 = time.perf_counter()
    try:
        async with session.request(method, url, headers=headers, json=json_body, data=data, timeout=aiohttp.ClientTimeout(total=timeout_s)) as resp:
            content = await resp.read()
            hdrs = {k.lower(): v for k, v in resp.headers.items()}
            body: Any = content
            if not raw or resp.status >= 400:
                try:
                    body = json.loads(content)
                except ValueError:
                    body = content.decode("utf-8", "replace")
    except TimeoutError:
        raise ProviderError("timeout", f"{method} {url.rsplit('/', 2)[-2:]}: no reply within {timeout_s:g} s") from None
    except aiohttp.ClientError as exc:
        raise ProviderError("connection", f"{method}: connection failed: {type(exc).__name__}") from None
    http = HttpReply(resp.status, hdrs, body, time.perf_counter() - t0)
    if http.status >= 400:
        text = json.dumps(body)[:300] if isinstance(body, dict) else str(body)[:300]
        rate = rate_info(hdrs)
        kind = "rate_limited" if http.status == 429 else "server" if http.status >= 500 else "timeout" if http.status == 408 else "fatal"
        raise ProviderError(kind, f"{method} batch endpoint: HTTP {http.status} {text}", http.status, rate.retry_after_s, rate)
    return http


def _json_headers(headers: dict[str, str]) -> dict[str, str]:
    return {**headers, "content-type": "application/json"}


async def submit_batch(session: aiohttp.ClientSession, protocol: str, base_url: str, headers: dict[str, str],
                       lines: list[bytes], *, completion_window: str = "24h", metadata: dict[str, str] | None = None,
                       timeout_s: float = 300.0) -> str:
    """Create one batch of `lines` (from `batch_line`); returns the provider's batch id. Raises `ProviderError`
    (`NoBatchApi` for a 404 or 405 from the upload or the creation)."""
    try:
        return await _submit(session, protocol, base_url, headers, lines, completion_window, metadata, timeout_s)
    except ProviderError as exc:
        if exc.status in (404, 405):
            raise NoBatchApi(base_url, exc) from None
        raise


async def _submit(session: aiohttp.ClientSession, protocol: str, base_url: str, headers: dict[str, str], lines: list[bytes],
                  completion_window: str, metadata: dict[str, str] | None, timeout_s: float) -> str:
    base = base_url.rstrip("/")
    if protocol == "anthropic":
        body = b'{"requests":[' + b",".join(lines) + b"]}"
        http = await _http(session, "POST", f"{base}/messages/batches", _json_headers(headers), timeout_s, data=body)
        return str(http.body["id"])
    form = aiohttp.FormData()
    form.add_field("purpose", "batch")
    form.add_field("file", b"".join(lines), filename="requests.jsonl", content_type="application/jsonl")
    plain = {k: v for k, v in headers.items() if k != "content-type"}  # multipart sets its own
    up = await _http(session, "POST", f"{base}/files", plain, timeout_s, data=form)
    file_id = up.body["id"]
    payload = {"input_file_id": file_id, "endpoint": "/v1/chat/completions", "completion_window": completion_window, "metadata": metadata or {}}
    http = await _http(session, "POST", f"{base}/batches", _json_headers(headers), timeout_s, json_body=payload)
    return str(http.body["id"])


async def find_batch(session: aiohttp.ClientSession, protocol: str, base_url: str, headers: dict[str, str], key: str, value: str,
                     timeout_s: float = 60.0, max_pages: int = 10_000) -> str | None:
    """The id of a batch whose metadata has `key: value`, or `None`. Raises `ProviderError`.

    Pages through the whole list (`limit=100`, `after=<last id>` while
    `has_more`), newest first: on a busy account the batch may be far past
    the first page, and missing it would pay for the same requests twice.
    Anthropic message batches carry no metadata: always `None` there.
    """
    if protocol == "anthropic":
        return None
    after: str | None = None
    for _ in range(max_pages):
        query = "limit=100" + (f"&after={after}" if after else "")
        body = (await _http(session, "GET", f"{base_url.rstrip('/')}/batches?{query}", _json_headers(headers), timeout_s)).body
        page = [b for b in (body.get("data") or []) if isinstance(b, dict)] if isinstance(body, dict) else []
        for b in page:
            if (b.get("metadata") or {}).get(key) == value:
                return str(b["id"])
        if not page or not body.get("has_more"):
            return None
        after = str(body.get("last_id") or page[-1].get("id"))
    return None


async def poll_batch(session: aiohttp.ClientSession, protocol: str, base_url: str, headers: dict[str, str], batch_id: str,
                     timeout_s: float = 60.0) -> BatchState:
    """The batch's current state. Raises `ProviderError`."""
    base = base_url.rstrip("/")
    if protocol == "anthropic":
        body = (await _http(session, "GET", f"{base}/messages/batches/{batch_id}", _json_headers(headers), timeout_s)).body
        status = str(body.get("processing_status"))
        return BatchState(batch_id, status, status == "ended", results_url=body.get("results_url"), raw=body)
    body = (await _http(session, "GET", f"{base}/batches/{batch_id}", _json_headers(headers), timeout_s)).body
    status = str(body.get("status"))
    return BatchState(batch_id, status, status in OPENAI_TERMINAL, body.get("output_file_id"), body.get("error_file_id"), raw=body)


# A result line's own request id and, for Anthropic, that it succeeded: what a line cut short or corrupted after them still says.
_CUSTOM_ID = re.compile(r'^\s*\{.*?"custom_id"\s*:\s*("(?:[^"\\]|\\.)*")')
_SUCCEEDED = re.compile(r'"result"\s*:\s*\{\s*"type"\s*:\s*"succeeded"')


def _lines(content: Any) -> tuple[list[dict[str, Any]], list[str], int]:
    """The JSON objects of a results file that name their request, the `custom_id` each line that is not JSON still names
    (Anthropic: of those saying `succeeded`), and how many lines name no request but hold an answer as far as can be
    read (JSON without a string `custom_id`, or text whose `custom_id` is cut off; Anthropic: not an unsuccessful
    result). Such a line's request counts as missing and is resubmitted; the answer was billed all the same."""
    text = content.decode("utf-8", "replace") if isinstance(content, bytes) else str(content)
    out: list[dict[str, Any]] = []
    unread: list[str] = []
    nameless = 0
    for line in text.splitlines():
        if line.strip():
            try:
                rec = json.loads(line)
            except ValueError:
                found = _CUSTOM_ID.match(line)
                try:
                    cid = json.loads(found.group(1)) if found else None
                except ValueError:
                    cid = None
                if '"result"' not in line or _SUCCEEDED.search(line):
                    if isinstance(cid, str):
                        unread.append(cid)
                    else:
                        nameless += 1
                continue
            if isinstance(rec, dict) and isinstance(rec.get("custom_id"), str):
                out.append(rec)
            elif not isinstance(rec, dict) or not isinstance(rec.get("result"), dict) or rec["result"].get("type") == "succeeded":
                nameless += 1
    return out, unread, nameless


def _unread(cid: str, why: str = "not JSON") -> BatchResult:
    return BatchResult(cid, "unread", message=f"its answer's line in the results file could not be read ({why}): the provider billed it")


def _failed(cid: str, exc: ProviderError, answered: bool = True) -> BatchResult:
    """The outcome of an answer `read_reply` refused: a refusal (`refused`, its usage billed), an answer of the wrong shape
    that reported its usage (`unread` carrying that usage in `reply`: billed at it and resubmitted, as the synchronous
    path bills and retries it), else an `error`."""
    if exc.reply is not None:
        return BatchResult(cid, "refused", exc.reply, message=str(exc))
    if answered and exc.billed_reply is not None:
        return BatchResult(cid, "unread", exc.billed_reply, message=f"its answer could not be read ({exc}): the provider billed it")
    return BatchResult(cid, "error", message=str(exc))


def _openai_result(rec: dict[str, Any], answered: bool = True) -> BatchResult:
    """The outcome of an OpenAI results line naming its request (`answered`: a line of the output file, whose requests
    were run and billed, not of the error file). A line whose `response` or `status_code` is not what the Batch API
    writes (a list, a string) is one whose answer cannot be read: `unread` in the output file, as a line that is not
    JSON is, an `error` in the error file; never an exception, which stopped the whole batch's results."""
    cid = str(rec.get("custom_id"))
    err = rec.get("error")
    resp = rec.get("response") or {}
    if err:
        if not isinstance(err, dict):
            return BatchResult(cid, "error", message=json.dumps(err)[:300])
        code = str(err.get("code") or "")
        return BatchResult(cid, "expired" if code == "batch_expired" else "error", message=f"{code}: {err.get('message', '')}"[:300])
    try:
        status = int(resp.get("status_code") or 0)
    except (AttributeError, TypeError, ValueError):  # (a `response` that is a list or a string, a `status_code` of words)
        if answered:
            return _unread(cid, "its response is not the Batch API's")
        return BatchResult(cid, "error", message=f"its result line holds no readable response: {json.dumps(resp)[:200]}")
    if status != 200:
        return BatchResult(cid, "error", message=f"HTTP {status} {json.dumps(resp.get('body'))[:300]}")
    if answered and not isinstance(resp.get("body"), dict):  # (run and billed: an answer whose usage cannot be read)
        return _unread(cid, "its response body is not a JSON object")
    try:
        reply = read_reply("openai", HttpReply(200, {}, resp.get("body"), 0.0), 0.0)
    except ProviderError as exc:
        return _failed(cid, exc, answered)
    return BatchResult(cid, "ok", reply)


def _anthropic_result(rec: dict[str, Any]) -> BatchResult:
    cid = str(rec.get("custom_id"))
    result = rec.get("result") or {}
    if not isinstance(result, dict):  # (says neither that it succeeded, which Anthropic bills, nor why not: resubmitted)
        return BatchResult(cid, "error", message=f"its result line holds no result object: {json.dumps(result)[:200]}")
    kind = result.get("type")
    if kind == "succeeded":
        if not isinstance(result.get("message"), dict):  # (Anthropic billed it: an answer whose usage cannot be read)
            return _unread(cid, "its message is not a JSON object")
        try:
            return BatchResult(cid, "ok", read_reply("anthropic", HttpReply(200, {}, result.get("message"), 0.0), 0.0))
        except ProviderError as exc:
            return _failed(cid, exc)
    if kind in ("expired", "canceled"):
        return BatchResult(cid, str(kind), message=f"the request {kind}")
    return BatchResult(cid, "error", message=json.dumps(result.get("error"))[:300])


async def fetch_results(session: aiohttp.ClientSession, protocol: str, base_url: str, headers: dict[str, str], state: BatchState,
                        timeout_s: float = 300.0) -> tuple[dict[str, BatchResult], int]:
    """Results of a terminal batch by `custom_id` (output and error files both, for OpenAI), and how many billed answers'
    lines named no request (`_lines`; OpenAI: in the output file only). Raises `ProviderError`."""
    base = base_url.rstrip("/")
    out: dict[str, BatchResult] = {}
    if protocol == "anthropic":
        if not state.results_url:
            return out, 0
        http = await _http(session, "GET", state.results_url, _json_headers(headers), timeout_s, raw=True)
        records, unread, nameless = _lines(http.body)
        for rec in records:
            r = _anthropic_result(rec)
            out[r.custom_id] = r
        for cid in unread:
            out.setdefault(cid, _unread(cid))
        return out, nameless
    billed = 0
    for fid, answered in ((state.output_file_id, True), (state.error_file_id, False)):
        if fid:
            http = await _http(session, "GET", f"{base}/files/{fid}/content", _json_headers(headers), timeout_s, raw=True)
            records, unread, nameless = _lines(http.body)
            for rec in records:
                r = _openai_result(rec, answered)
                if r.custom_id not in out or out[r.custom_id].kind != "ok":
                    out[r.custom_id] = r
            # The output file holds the requests that were run, which OpenAI bills; the error file those that failed.
            for cid in unread if answered else []:
                out.setdefault(cid, _unread(cid))
            billed += nameless if answered else 0
    return out, billed
