"""The simulator's endpoints that make no completion, and what its endpoints share: error replies and prompt counts.

- `GET /v1/models` lists the models it answers for best (its warmed
  counters), and `GET /v1/models/{id}` looks one up, in the OpenAI shape, or
  in Anthropic's when the request carries `anthropic-version`; serving
  described weights (`SimConfig.served`), it lists them as their server does
  (`tracejudge.simulator.served`). The simulator
  answers any model name, so a lookup finds any id it is asked for.
- `POST /v1/messages/count_tokens` (Anthropic) answers `{"input_tokens": N}`,
  N counted as the simulator counts a request's prompt for its `usage`
  (tiktoken × `tokenizer_factor`), so it equals `usage.input_tokens` of the same
  request sent to `/v1/messages` (without a prompt cache hit). Anthropic limits
  token counting apart from messages, and it is free: it takes nothing from the
  simulator's rate limits, gets no scripted fault, is not in the ledger and not
  in `requests` (only in `by_path`).
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

from aiohttp import web
from tracejudge.llm.prefix_cache import prompt_text
from tracejudge.llm.tokens import counter_for
from tracejudge.simulator.served import models_listing
from tracejudge.simulator.state import Sim
from tracejudge.simulator.tools import request_error

__all__ = ["add_meta_routes", "error_response", "prompt_tokens", "read_body"]

_CREATED = "2024-01-01T00:00:00Z"  # (a fixed release date: the models list and lookups never change)


def error_response(status: int, kind: str, message: str, headers: dict[str, str], anthropic: bool,
                   param: str | None = None, code: str | None = "") -> web.Response:
    """The provider's error body: Anthropic's `{type: error, error: {type, message}}`, or OpenAI's
    `{error: {message, type, param, code}}` (`code` defaults to `kind`)."""
    if anthropic:
        payload: dict[str, Any] = {"type": "error", "error": {"type": kind, "message": message}}
    else:
        payload = {"error": {"message": message, "type": kind, "param": param, "code": kind if code == "" else code}}
    return web.json_response(payload, status=status, headers=headers)


async def read_body(request: web.Request, anthropic: bool) -> dict[str, Any] | web.Response:
    """A completion request's JSON body, or the 400 for one that is not JSON or lacks `model` or `messages`."""
    try:
        body = await request.json()
    except ValueError:
        return error_response(400, "invalid_request_error", "body is not JSON", {}, anthropic)
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list) or not body.get("model"):
        return error_response(400, "invalid_request_error", "`model` and `messages` are required", {}, anthropic)
    return body


def prompt_tokens(body: dict[str, Any], factor: float) -> tuple[list[dict[str, Any]], str, int]:
    """`(messages, schema text, prompt tokens)` of a request body: tiktoken's count of `prompt_text(body)` × `factor`, rounded up."""
    messages, extra = prompt_text(body)
    return messages, extra, math.ceil(counter_for(str(body["model"])).messages(messages, extra) * factor)


def _model(name: str, anthropic: bool) -> dict[str, Any]:
    if anthropic:
        return {"type": "model", "id": name, "display_name": name, "created_at": _CREATED, "lifecycle": "active"}
    return {"id": name, "object": "model", "created": 0, "owned_by": "tracejudge-simulator"}


def add_meta_routes(app: web.Application, sim: Sim, names: tuple[str, ...]) -> None:
    """Add the models list and lookup (`names` listed) and Anthropic's token count to `app`."""

    async def models(request: web.Request) -> web.Response:
        anthropic = "anthropic-version" in request.headers
        if not anthropic and sim.served is not None and request.path in sim.served.delayed:
            await asyncio.sleep(sim.served.identity_delay_s)
        served = None if anthropic else models_listing(sim)
        if served is not None:  # presenting itself as a self-hosted server: that server's list
            return served
        data = [_model(n, anthropic) for n in names]
        if anthropic:
            return web.json_response({"data": data, "has_more": False, "first_id": names[0] if names else None,
                                      "last_id": names[-1] if names else None})
        return web.json_response({"object": "list", "data": data})

    async def model(request: web.Request) -> web.Response:
        return web.json_response(_model(request.match_info["model"], "anthropic-version" in request.headers))

    async def count_tokens(request: web.Request) -> web.Response:
        sim.stats.by_path[request.path] = sim.stats.by_path.get(request.path, 0) + 1
        body = await read_body(request, True)
        if isinstance(body, web.Response):
            return body
        refusal = request_error(body, True)
        if refusal is not None:
            return error_response(400, "invalid_request_error", refusal.message, {}, True)
        return web.json_response({"input_tokens": prompt_tokens(body, sim.config.tokenizer_factor)[2]})

    app.router.add_get("/v1/models", models)
    app.router.add_get("/v1/models/{model:.+}", model)
    app.router.add_post("/v1/messages/count_tokens", count_tokens)
