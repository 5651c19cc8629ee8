"""The simulator's batch endpoints: OpenAI files + Batch API, Anthropic Message Batches.

Routes (added to the simulator app by `add_batch_routes`):

- OpenAI: `POST /v1/files` (multipart, `purpose=batch`, a JSONL file of
  `{custom_id, method, url, body}` lines), `GET /v1/files/{id}/content`,
  `POST /v1/batches` (`input_file_id`, `endpoint`, `completion_window`,
  `metadata`), `GET /v1/batches/{id}`, `GET /v1/batches` (list, newest first);
- Anthropic: `POST /v1/messages/batches` (`requests: [{custom_id, params}]`),
  `GET /v1/messages/batches/{id}`, `GET /v1/messages/batches/{id}/results`.

Every request of a batch is answered when the batch is created (the same
deterministic verdicts as the synchronous endpoints; no rate limit applies)
and revealed `batch_completion_s` seconds later. Per-request faults: the
synchronous fault script and `error_rate` apply to batch requests too (a
`500`, `429`, `quota` or `timeout` fault becomes a per-request error), and
`batch_script` — one entry per batch created, in order — stages exact
scenarios: `{"errors": k, "expired": m, "status": "completed"}` gives the
first k requests (in file order) an error and the next m `batch_expired`,
and `"refusals": r` the next r a refusal (OpenAI's `message.refusal`,
Anthropic's `stop_reason: "refusal"`) that carries its usage, as a real one
does (counted in `SimStats` like any answer), and `"cut": c` the next c
answers a result line cut short in the output (answered and counted, as a
provider bills them, but not JSON), and `"nameless": n` the next n answers a
line without its `custom_id` (answered and counted too), and `"non_object": o` the
next o answers a line that is JSON but not an object (the line encoded once more,
as a JSON string: answered and counted too), and `"odd_answer": a` the next a answers a line naming its
request whose answer (OpenAI's `response.body`, Anthropic's `message`) is a JSON string, not an object
(answered and counted too), and `"shapeless": s` the next s answers one whose answer is an object of the wrong shape
(`content` / `choices` a string) that still reports its usage (answered and counted too); a batch with expired requests
ends `expired` (OpenAI) unless `status` says otherwise. Results come back in an order other than the file's
(`batch_shuffle`), so a client that joins by position fails.

`SimStats.batches_created` counts accepted batch submissions — the figure the
no-double-submission test reads.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from aiohttp.web_request import FileField
from tracejudge.simulator.tools import request_error

__all__ = ["SimBatch", "add_batch_routes"]

_ERROR_FAULTS = {"429", "quota", "500", "timeout"}
_ANSWERED = {"ok", "cut", "nameless", "non_object"}  # (outcomes answered and billed, however their line is written)
_ANSWER_FAULTS = {"ok", "truncated", "prose", "near_miss", "drop_item", "malformed_item"}


@dataclass
class SimBatch:
    """One submitted batch: its requests' outcomes, revealed at `ready_at` (monotonic seconds)."""

    id: str
    kind: str  # "openai" | "anthropic"
    created_at: float
    ready_at: float
    # (custom_id, "ok" | "cut" | "error" | "invalid" | "expired", payload or error message)
    outcomes: list[tuple[str, str, Any]] = field(default_factory=list)
    status_override: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    input_file_id: str | None = None
    output_file_id: str | None = None
    error_file_id: str | None = None
    downloads: int = 0


def _refused(payload: dict[str, Any], anthropic: bool) -> dict[str, Any]:
    # The answer as a refusal: no verdict, its usage kept (a provider bills a refusal).
    if anthropic:
        return {**payload, "content": [], "stop_reason": "refusal"}
    choice = {**payload["choices"][0], "message": {"role": "assistant", "content": None, "refusal": "I can't help with that."},
              "finish_reason": "stop"}
    return {**payload, "choices": [choice]}


def _written(line: dict[str, Any]) -> str:
    """One result line of a results file: its JSON, or, marked `cut`, the first half of it (the custom id kept); marked
    `nameless`, without its custom id; marked `non_object`, as a JSON string holding it (valid JSON, not an object)."""
    if line.pop("non_object", False):
        return json.dumps(json.dumps(line)) + "\n"
    if line.pop("nameless", False):
        del line["custom_id"]
    if not line.pop("cut", False):
        return json.dumps(line) + "\n"
    text = json.dumps(line)
    return text[: min(len(text) - 2, max(len(text) // 2, text.index('"custom_id"') + 100))] + "\n"


def add_batch_routes(app: web.Application, sim: Any, answer: Callable[..., tuple[dict[str, Any], int]],
                     count_prompt: Callable[[dict[str, Any]], int]) -> None:
    """Add the batch endpoints to `app`.

    `sim` is the simulator state (`config`, `stats`, `rng`, `serial`,
    `next_fault`), `answer(sim, body, anthropic, fault, prompt_tokens)` its
    reply function and `count_prompt(body)` its prompt token counter.
    """
    files: dict[str, bytes] = {}
    batches: dict[str, SimBatch] = {}

    def new_id(prefix: str) -> str:
        sim.serial += 1
        return prefix + hashlib.sha256(f"{sim.config.seed}:{prefix}:{sim.serial}".encode()).hexdigest()[:24]

    def run_requests(items: list[tuple[str, dict[str, Any]]], anthropic: bool) -> list[tuple[str, str, Any]]:
        script = sim.config.batch_script.pop(0) if sim.config.batch_script else {}
        n_err, n_exp, n_ref = int(script.get("errors", 0)), int(script.get("expired", 0)), int(script.get("refusals", 0))
        n_cut, n_nameless, n_odd = int(script.get("cut", 0)), int(script.get("nameless", 0)), int(script.get("non_object", 0))
        n_odd_answer, n_shapeless = int(script.get("odd_answer", 0)), int(script.get("shapeless", 0))
        out: list[tuple[str, str, Any]] = []
        for i, (cid, body) in enumerate(items):
            sim.note_fields(body, anthropic)
            if i < n_err:
                out.append((cid, "error", "simulated per-request server error"))
                continue
            if i < n_err + n_exp:
                out.append((cid, "expired", "This request could not be executed before the completion window expired."))
                continue
            if sim.config.batch_expire_rate and sim.rng.random() < sim.config.batch_expire_rate:
                out.append((cid, "expired", "This request could not be executed before the completion window expired."))
                continue
            fault = sim.next_fault()
            if fault in _ERROR_FAULTS:
                out.append((cid, "error", f"simulated per-request error ({fault})"))
                continue
            if not isinstance(body, dict) or not isinstance(body.get("messages"), list) or not body.get("model"):
                out.append((cid, "invalid", "`model` and `messages` are required"))
                continue
            refusal = request_error(body, anthropic)  # (an `n` or a tool choice the synchronous endpoint refuses)
            if refusal is not None:
                out.append((cid, "invalid", refusal.message))
                continue
            payload, _ = answer(sim, body, anthropic, fault if fault in _ANSWER_FAULTS else "ok", count_prompt(body))
            first = n_err + n_exp + n_ref  # (the answers whose line is marred come after the scripted failures)
            marred = (["cut"] * n_cut + ["nameless"] * n_nameless + ["non_object"] * n_odd + ["odd_answer"] * n_odd_answer
                      + ["shapeless"] * n_shapeless)
            kind = marred[i - first] if 0 <= i - first < len(marred) else "ok"
            if kind == "odd_answer":  # (a well-formed line whose answer is its JSON as a string)
                out.append((cid, "ok", json.dumps(payload)))
                continue
            if kind == "shapeless":  # (an answer object of the wrong shape that still reports its usage)
                out.append((cid, "ok", {**payload, "content" if anthropic else "choices": "not what the API sends"}))
                continue
            out.append((cid, kind, _refused(payload, anthropic) if i < first else payload))
        sim.stats.batch_requests += len(items)
        if sim.config.batch_shuffle:
            random.Random(f"{sim.config.seed}:{len(batches)}").shuffle(out)
        return out

    def submit(batch: SimBatch, script_status: str | None) -> None:
        sim.stats.batches_created += 1
        batches[batch.id] = batch
        batch.status_override = script_status

    def ready(batch: SimBatch) -> bool:
        return time.monotonic() >= batch.ready_at

    # ------------------------------------------------------------------ OpenAI

    def openai_status(b: SimBatch) -> str:
        if not ready(b):
            return "in_progress"
        if b.status_override:
            return b.status_override
        return "expired" if any(kind == "expired" for _, kind, _ in b.outcomes) else "completed"

    def openai_files(b: SimBatch) -> None:
        if b.output_file_id is not None or not ready(b):
            return
        good, bad = [], []
        for cid, kind, value in b.outcomes:
            line: dict[str, Any] = {"id": new_id("batch_req_"), "custom_id": cid}
            if kind in _ANSWERED:
                good.append({**line, "response": {"status_code": 200, "request_id": new_id("req_"), "body": value}, "error": None,
                             **({kind: True} if kind != "ok" else {})})
            elif kind == "expired":
                bad.append({**line, "response": None, "error": {"code": "batch_expired", "message": value}})
            else:
                status = 400 if kind == "invalid" else 500
                body = {"error": {"type": "invalid_request_error" if status == 400 else "server_error", "message": value}}
                bad.append({**line, "response": {"status_code": status, "request_id": new_id("req_"), "body": body}, "error": None})
        if good:
            b.output_file_id = new_id("file-")
            files[b.output_file_id] = "".join(_written(x) for x in good).encode()
        else:
            b.output_file_id = ""
        if bad:
            b.error_file_id = new_id("file-")
            files[b.error_file_id] = "".join(json.dumps(x) + "\n" for x in bad).encode()

    def openai_view(b: SimBatch) -> dict[str, Any]:
        openai_files(b)
        status = openai_status(b)
        done = sum(k == "ok" for _, k, _ in b.outcomes) if ready(b) else 0
        return {
            "id": b.id, "object": "batch", "endpoint": "/v1/chat/completions", "errors": None, "input_file_id": b.input_file_id,
            "completion_window": "24h", "status": status, "output_file_id": (b.output_file_id or None) if ready(b) else None,
            "error_file_id": b.error_file_id if ready(b) else None, "created_at": int(b.created_at),
            "request_counts": {"total": len(b.outcomes), "completed": done, "failed": (len(b.outcomes) - done) if ready(b) else 0},
            "metadata": b.metadata,
        }

    async def upload(request: web.Request) -> web.Response:
        form = await request.post()
        f = form.get("file")
        if form.get("purpose") != "batch" or not isinstance(f, FileField):
            return web.json_response({"error": {"type": "invalid_request_error", "message": "purpose=batch and a file are required"}}, status=400)
        data = f.file.read()
        fid = new_id("file-")
        files[fid] = data
        sim.stats.files_uploaded += 1
        return web.json_response({"id": fid, "object": "file", "bytes": len(data), "purpose": "batch", "filename": f.filename})

    async def content(request: web.Request) -> web.Response:
        fid = request.match_info["fid"]
        if fid not in files:
            return web.json_response({"error": {"type": "not_found", "message": f"no file {fid}"}}, status=404)
        sim.stats.batch_downloads += 1
        return web.Response(body=files[fid], content_type="application/jsonl")

    async def create(request: web.Request) -> web.Response:
        body = await request.json()
        fid = body.get("input_file_id")
        if fid not in files:
            return web.json_response({"error": {"type": "invalid_request_error", "message": f"no file {fid}"}}, status=400)
        items: list[tuple[str, dict[str, Any]]] = []
        seen: set[str] = set()
        for n, line in enumerate(files[fid].decode().splitlines(), 1):
            if not line.strip():
                continue
            rec = json.loads(line)
            cid = rec.get("custom_id")
            if not cid or cid in seen or rec.get("url") != "/v1/chat/completions":
                return web.json_response({"error": {"type": "invalid_request_error", "message": f"line {n}: missing/duplicate custom_id or bad url"}}, status=400)
            seen.add(cid)
            items.append((cid, rec.get("body")))
        script_status = sim.config.batch_script[0].get("status") if sim.config.batch_script else None
        now = time.monotonic()
        b = SimBatch(new_id("batch_"), "openai", time.time(), now + sim.config.batch_completion_s,
                     metadata=dict(body.get("metadata") or {}), input_file_id=fid)
        b.outcomes = run_requests(items, anthropic=False)
        submit(b, script_status)
        return web.json_response(openai_view(b))

    async def get_batch(request: web.Request) -> web.Response:
        b = batches.get(request.match_info["bid"])
        if b is None or b.kind != "openai":
            return web.json_response({"error": {"type": "not_found", "message": "no such batch"}}, status=404)
        sim.stats.batch_polls += 1
        return web.json_response(openai_view(b))

    async def list_batches(request: web.Request) -> web.Response:
        # Pages like OpenAI's: newest first, `limit` (default 20, at most 100) after the id `after`.
        data = [openai_view(b) for b in reversed(list(batches.values())) if b.kind == "openai"]
        after = request.query.get("after")
        if after:
            ids = [d["id"] for d in data]
            data = data[ids.index(after) + 1:] if after in ids else []
        limit = max(1, min(100, int(request.query.get("limit", "20"))))
        page = data[:limit]
        return web.json_response({"object": "list", "data": page, "has_more": len(data) > limit,
                                  "first_id": page[0]["id"] if page else None, "last_id": page[-1]["id"] if page else None})

    # ------------------------------------------------------------------ Anthropic

    def anthropic_view(request: web.Request, b: SimBatch) -> dict[str, Any]:
        counts = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        if ready(b):
            for _, kind, _ in b.outcomes:
                counts["succeeded" if kind in _ANSWERED else "expired" if kind == "expired" else "errored"] += 1
        else:
            counts["processing"] = len(b.outcomes)
        url = f"{request.scheme}://{request.host}/v1/messages/batches/{b.id}/results"
        return {"id": b.id, "type": "message_batch", "processing_status": "ended" if ready(b) else "in_progress",
                "request_counts": counts, "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(b.created_at)),
                "results_url": url if ready(b) else None}

    async def a_create(request: web.Request) -> web.Response:
        body = await request.json()
        reqs = body.get("requests")
        if not isinstance(reqs, list) or not reqs:
            return web.json_response({"type": "error", "error": {"type": "invalid_request_error", "message": "requests: a non-empty list"}}, status=400)
        ids = [r.get("custom_id") for r in reqs]
        if len(set(ids)) != len(ids) or not all(isinstance(i, str) and 0 < len(i) <= 64 for i in ids):
            return web.json_response({"type": "error", "error": {"type": "invalid_request_error", "message": "custom_id: unique, 1-64 characters"}}, status=400)
        b = SimBatch(new_id("msgbatch_"), "anthropic", time.time(), time.monotonic() + sim.config.batch_completion_s)
        b.outcomes = run_requests([(r["custom_id"], r.get("params")) for r in reqs], anthropic=True)
        submit(b, None)
        return web.json_response(anthropic_view(request, b))

    async def a_get(request: web.Request) -> web.Response:
        b = batches.get(request.match_info["bid"])
        if b is None or b.kind != "anthropic":
            return web.json_response({"type": "error", "error": {"type": "not_found_error", "message": "no such batch"}}, status=404)
        sim.stats.batch_polls += 1
        return web.json_response(anthropic_view(request, b))

    async def a_results(request: web.Request) -> web.Response:
        b = batches.get(request.match_info["bid"])
        if b is None or b.kind != "anthropic" or not ready(b):
            return web.json_response({"type": "error", "error": {"type": "not_found_error", "message": "no results yet"}}, status=404)
        sim.stats.batch_downloads += 1
        lines = []
        for cid, kind, value in b.outcomes:
            if kind in _ANSWERED:
                result: dict[str, Any] = {"type": "succeeded", "message": value}
            elif kind == "expired":
                result = {"type": "expired"}
            else:
                result = {"type": "errored", "error": {"type": "error", "error": {"type": "api_error", "message": value}}}
            lines.append(_written({"custom_id": cid, "result": result, **({kind: True} if kind != "ok" and kind in _ANSWERED else {})}))
        return web.Response(body="".join(lines).encode(), content_type="application/x-jsonl")

    app.router.add_post("/v1/files", upload)
    app.router.add_get("/v1/files/{fid}/content", content)
    app.router.add_post("/v1/batches", create)
    app.router.add_get("/v1/batches", list_batches)
    app.router.add_get("/v1/batches/{bid}", get_batch)
    app.router.add_post("/v1/messages/batches", a_create)
    app.router.add_get("/v1/messages/batches/{bid}", a_get)
    app.router.add_get("/v1/messages/batches/{bid}/results", a_results)
