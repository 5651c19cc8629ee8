"""The judge simulator: a loopback HTTP server that speaks the judges' protocols.

`tracejudge simulate` (and tests, the demo and benchmarks) run it on
127.0.0.1. It answers

- OpenAI `POST /v1/chat/completions` (`response_format: {type: json_schema}`
  gets a JSON document valid for the schema; otherwise a short text; `n`
  choices; a forced function, `tool_choice: {type: function}` or
  `"required"`, gets a tool call whose `arguments` are valid for its
  `parameters`), and
- Anthropic `POST /v1/messages` (a forced tool `tool_choice: {type: tool}`
  or `{type: any}` gets a `tool_use` block whose `input` is valid for the
  tool's schema; `tracejudge.simulator.tools`),
  either one as server-sent events when the request says `"stream": true`
  (`tracejudge.simulator.streaming`), and `GET /v1/models`,
  `GET /v1/models/{id}` and Anthropic's `POST /v1/messages/count_tokens`
  (`tracejudge.simulator.meta`),

with `usage` counted by tiktoken (`tracejudge.llm.tokens`, the same counter the
client uses, so estimates and usage agree on the simulator).

**Its verdicts say nothing about quality**: each is a deterministic function
of the request body and the seed (a hash picks enum values, booleans and
integers; "yes" comes up about 3 times in 4), so the same request always
gets the same answer and tests can assert exact values.

Rate limits (`rpm` requests and `tpm` tokens per minute; `tracejudge.simulator.limits`)
are token buckets that refill continuously, starting full, the model the
providers document; with `window="strict"` they are strict sliding windows
of `window_s` seconds (60) instead: what was booked in the window counts in
full until it leaves it, booked when the request arrives (`book="arrival"`)
or when its reply is made (`book="reply"`). Admission is decided when a
request arrives: one request and its prompt tokens plus `max_tokens` must be
available; the unused part of `max_tokens` is given back when the reply is
made, so a request costs prompt + completion tokens, and a refused one
nothing. `limit_count="chars"` counts those tokens as a gateway does,
ceil(characters / 4) + 3 per message, while `usage` still reports
tiktoken's count (the client cannot read the limit's count from `usage`).
A refused request gets 429 with the providers' headers: `retry-after`
(whole seconds, rounded up), `retry-after-ms`, `x-ratelimit-limit-*`,
`x-ratelimit-remaining-*`, `x-ratelimit-reset-*` (OpenAI's `1.5s`/`6m0s`
form) and `anthropic-ratelimit-{requests,tokens}-{limit,remaining,reset}`
(RFC 3339); `remaining` is the limit less what it counts, `reset` the time
until the limit is back to full (for a window: until its newest entry
leaves it). Successful replies carry the same headers. `rate_headers=False`
sends none of them (a vLLM- or llama.cpp-like server: `retry-after` on a 429
only). `GET /_sim/ledger` lists every admitted request's `[seconds, tokens]`
as the token limit counted it (with no limit set, as one would: each request
and what it cost), so any window can be recounted.

`max_concurrency` C makes the server slow down past C requests in flight,
as a GPU server does: a request arriving with n in flight takes
`latency_ms` × max(1, n / C), so throughput stops growing at C. `slots` S
makes it compute at most S requests at once, as llama.cpp's `--parallel`
does: the others wait in its queue before their `latency_ms` starts.

Faults: with probability `error_rate` a request gets one of a 500, a hang
longer than any sane client timeout (`hang_s`), or a truncated reply
(`finish_reason: length` / `stop_reason: max_tokens`, JSON cut in half, its
usage counting the half it sent: a cut by the server itself, far under
`max_tokens`).
`script` is a list of faults applied, one each, to the next requests, in
order — tests use it to stage exact scenarios: `429` (retry-after
`fault_retry_after_s`), `quota` (429 with a day-long retry-after), `500`,
`timeout`, `truncated`, `400` (a content filter's refusal that no retry fixes), `bad_request` (a 400 refusing the
request's `response_format`: a request error), `prose` (the JSON wrapped in prose and a code
fence), `near_miss` (`GRADE: yes`-style lines, not JSON), `ok`.

A request with the shared answers schema (named `answers`: a list of
`{id, answer, reason}`) gets one answer per question id the prompt lists
(lines `<capitals><n>: …` in its user messages, such as `TC1: …`), as a model reading the
questions would; each answer is a function of the seed, the tag of the
request's first fenced data block and the question id alone, so a metric's
question about a trace gets the same answer whether it was asked alone or
grouped with other metrics' questions. Faults `drop_item` and
`malformed_item` leave out or spoil the first answer.

Multi-item requests (`tracejudge.stages.judge.multi`; the verdict schema is named
`verdicts`) get one verdict per item id, each a function of the seed and the
id alone, so an item is judged the same in any request and any position;
faults `drop_item` and `malformed_item` leave out or spoil the first item's
verdict. The batch endpoints (OpenAI files + batches, Anthropic message
batches) live in `tracejudge.simulator.batches`.

Local-server knobs: `json_object_only` makes it answer as llama-cpp-python's
server does: a `response_format` of type `json_schema` gets HTTP 500 with that
server's own validation message (it accepts `text` or `json_object`, the
schema under `response_format.schema`); `{type: json_object, schema}` is
answered from the schema in every mode. `tokenizer_factor` F counts prompt
tokens as tiktoken's count × F (rounded up) in `usage` and in the limits, as a
model whose tokenizer counts more does. `context_tokens` N refuses, with a 400
naming the context length, a request whose prompt tokens plus `max_tokens`
exceed N (a local server's window). A reply longer than the request's
`max_tokens` is cut at it (`finish_reason: length` / `stop_reason:
max_tokens`, that many completion tokens), as the providers do; a request
that asks none is not cut. `max_reply_tokens` N cuts every reply at
N tokens (`finish_reason: length`, N completion tokens) whatever its
`max_tokens` asks, as a server's own output cap does (llama.cpp's
`--n-predict`). A request without `response_format` gets a
verdict for the question ids its prompt lists (as a model reading the prompt
would), or a short text when it lists none.

`refuse_marker` makes the server refuse, as a content filter does (400,
`content_filter`), every request whose prompt contains that string, so tests
can see one bad item of a multi-item request refused.

Prompt caching, as the providers report it: an OpenAI request whose prompt
(schema first, then the messages) shares a prefix of at least 1,024 tokens
with an earlier request of the same model gets that prefix, in 128-token
steps, as `usage.prompt_tokens_details.cached_tokens`; an Anthropic request
caches only up to a block marked `cache_control` (at least 1,024 tokens):
`cache_creation_input_tokens` the first time, `cache_read_input_tokens`
after (`prefix_cache=False` turns both off).

Known flaws — `agreement` with a truth, per-model `noise`, a pairwise
`position_bias` — are described in `tracejudge.simulator.flaws`.

`served` weights make it present itself as a self-hosted server (llama.cpp's
`llama-server`, Ollama, vLLM, LM Studio, TGI) serving them, its identity
endpoints in that server's shapes, and `SimulatorThread.serve` swaps them
between runs (`tracejudge.simulator.served`).

`GET /_sim/stats` returns the counters (requests, per status, 429s, tokens,
first and last request times, and the request fields it does not read, such as `chat_template_kwargs`, each
with the values sent: `state.READ_FIELDS`); `POST /_sim/script` replaces the script.
"""

from __future__ import annotations

import asyncio
import math
import socket
import threading
import time
from dataclasses import asdict
from typing import Any

from aiohttp import web
from tracejudge.llm.prefix_cache import prompt_text
from tracejudge.llm.tokens import counter_for
from tracejudge.simulator.batches import add_batch_routes
from tracejudge.simulator.limits import char_tokens
from tracejudge.simulator.state import Sim, SimConfig, SimStats
from tracejudge.simulator.verdicts import ANSWERS_SCHEMA_NAME, MULTI_SCHEMA_NAME, answer, schema_name
from tracejudge.simulator.meta import add_meta_routes, error_response, read_body
from tracejudge.simulator.served import Weights, add_served_routes
from tracejudge.simulator.meta import prompt_tokens as count_prompt
from tracejudge.simulator.streaming import stream_reply
from tracejudge.simulator.tools import choice_count, reply_text, request_error

# This module is the HTTP server; the settings and state live in `simulator.state`, the verdicts in `simulator.verdicts`
# (their names that were defined here, such as `answer` and `schema_name`, are still importable from here).
__all__ = ["SimConfig", "SimStats", "SimulatorThread", "Weights", "build_app", "free_port", "start_simulator"]

SIM_KEY: web.AppKey[Any] = web.AppKey("sim")
FAULTS = {"ok", "400", "bad_request", "429", "quota", "500", "timeout", "truncated", "prose", "near_miss", "drop_item", "malformed_item"}
# llama-cpp-python's server (FastAPI): the validation error of a `json_schema` response format, which it answers with HTTP 500.
LLAMA_CPP_PYTHON_JSON_SCHEMA = ("1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
                                "'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema', "
                                "'ctx': {'expected': \"'text' or 'json_object'\"}}")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def build_app(config: SimConfig) -> web.Application:
    """The aiohttp application of a simulator with `config` (state lives in the app)."""
    sim = Sim(config)
    app = web.Application(client_max_size=64 * 1024 * 1024)
    app[SIM_KEY] = sim

    async def handle(request: web.Request) -> web.Response:
        anthropic = request.path.endswith("/messages")
        st = sim.stats
        now = time.time()
        st.requests += 1
        st.by_path[request.path] = st.by_path.get(request.path, 0) + 1
        st.first_request = st.first_request or now
        st.last_request = now
        second = int(now - st.first_request)
        st.arrivals_per_s[second] = st.arrivals_per_s.get(second, 0) + 1
        body = await read_body(request, anthropic)
        if isinstance(body, web.Response):
            return body
        sim.note_fields(body, anthropic)
        if (field := sim.foreign_field(body, anthropic)) is not None:  # (Anthropic's 400 for a field it does not have)
            st.refused += 1
            return error_response(400, "invalid_request_error", f"{field}: Extra inputs are not permitted", {}, anthropic)
        refusal = request_error(body, anthropic)
        if refusal is not None:
            st.refused += 1
            return error_response(400, "invalid_request_error", refusal.message, {}, anthropic, refusal.param, refusal.code)
        max_tokens = int(body.get("max_tokens") or body.get("max_completion_tokens") or 1024)
        # `max_tokens` bounds each choice: admission holds room for all `n` of them, as OpenAI counts a request.
        reserve = choice_count(body, anthropic) * max_tokens
        messages, extra, prompt_tokens = count_prompt(body, config.tokenizer_factor)
        rf = body.get("response_format")
        if config.json_object_only and isinstance(rf, dict) and rf.get("type") not in (None, "text", "json_object"):
            st.server_errors += 1
            return web.json_response({"error": {"message": LLAMA_CPP_PYTHON_JSON_SCHEMA, "type": "internal_server_error", "param": None,
                                                 "code": None}}, status=500)
        if config.context_tokens is not None and prompt_tokens + max_tokens > config.context_tokens:
            st.refused += 1
            return error_response(400, "invalid_request_error", f"This model's maximum context length is {config.context_tokens} tokens. However, you "
                          f"requested {prompt_tokens + max_tokens} tokens ({prompt_tokens} in the messages, {max_tokens} in the completion). "
                          "Please reduce the length of the messages or completion.", {}, anthropic)

        if config.refuse_marker and any(config.refuse_marker in str(m.get("content")) for m in messages):
            st.refused += 1
            return error_response(400, "content_filter", "simulated content filter: the prompt was refused", {}, anthropic)
        fault = sim.next_fault()
        if fault == "400":
            st.refused += 1
            return error_response(400, "content_filter", "simulated refusal: the prompt was flagged", {}, anthropic)
        if fault == "bad_request":
            st.refused += 1
            return error_response(400, "invalid_request_error", "simulated refusal: response_format is not supported by this server", {}, anthropic)
        if fault in ("429", "quota"):
            st.rate_limited += 1
            wait = config.quota_retry_after_s if fault == "quota" else config.fault_retry_after_s
            headers = {**sim.headers(anthropic), "retry-after": str(math.ceil(wait)), "retry-after-ms": str(int(wait * 1000))}
            kind = "insufficient_quota" if fault == "quota" else "rate_limit_error"
            return error_response(429, kind, "simulated rate limit" if fault == "429" else "simulated daily quota exhausted", headers, anthropic)
        # The limits count the prompt as the server does: its tokenizer (`usage`), or a gateway's character count.
        limit_prompt = char_tokens(messages, extra) if config.limit_count == "chars" else prompt_tokens
        if sim.limits.tokens is not None and limit_prompt + reserve > sim.limits.tokens.capacity:
            return error_response(400, "invalid_request_error", f"request too large: {limit_prompt + reserve} tokens > tpm {config.tpm}", {}, anthropic)
        wait, entry = sim.limits.admit(limit_prompt + reserve)
        if wait > 0:
            st.rate_limited += 1
            headers = {**sim.headers(anthropic), "retry-after": str(math.ceil(wait)), "retry-after-ms": str(max(1, int(math.ceil(wait * 1000))))}
            return error_response(429, "rate_limit_error", f"rate limit reached; retry in {wait:.3f}s", headers, anthropic)

        gate = sim.slot()
        if gate is not None:  # no free slot: the request waits in the server's queue, computing nothing
            sim.queued_peak = max(sim.queued_peak, sim.in_flight + 1 - config.slots)  # type: ignore[operator]
        sim.in_flight += 1
        try:
            if gate is not None:
                await gate.acquire()
            try:
                if config.latency_ms:
                    # Past `max_concurrency` in flight the server shares its capacity, as a GPU server does.
                    crowd = sim.in_flight / config.max_concurrency if config.max_concurrency else 1.0
                    await asyncio.sleep(config.latency_ms / 1000 * max(1.0, crowd))
            finally:
                if gate is not None:
                    gate.release()
        finally:
            sim.in_flight -= 1
        if fault == "500":
            st.server_errors += 1
            sim.limits.settle(entry, 0)
            return error_response(500, "server_error", "simulated server error", sim.headers(anthropic), anthropic)
        if fault == "timeout":
            st.timeouts += 1
            sim.limits.settle(entry, 0)
            await asyncio.sleep(config.hang_s)
            return error_response(504, "timeout", "simulated timeout", {}, anthropic)

        payload, completion = answer(sim, body, anthropic, fault, prompt_tokens, (messages, extra))
        limit_completion = char_tokens([], reply=reply_text(payload)) if config.limit_count == "chars" else completion
        sim.limits.settle(entry, limit_prompt + limit_completion)
        st.peak_window_tokens = sim.limits.peak_tokens
        if body.get("stream") is True:
            return await stream_reply(request, body, payload, anthropic, sim.headers(anthropic))
        return web.json_response(payload, headers=sim.headers(anthropic))

    async def stats(request: web.Request) -> web.Response:
        return web.json_response(asdict(sim.stats))

    async def ledger(request: web.Request) -> web.Response:
        # Every admitted request's [seconds since the first, tokens as the limit counted them]: any window can be recounted.
        # `t0` is the first one's monotonic time (the host's clock: a client on the same host can line its own log up with it).
        entries = [e for e in sim.limits.ledger if e[0] is not None]
        t0 = min((e[0] for e in entries), default=0.0)
        return web.json_response({"window": config.window, "window_s": config.window_s, "book": config.book, "rpm": config.rpm,
                                  "tpm": config.tpm, "t0": t0, "entries": sorted([round(e[0] - t0, 6), e[1]] for e in entries)})

    async def set_script(request: web.Request) -> web.Response:
        script = await request.json()
        bad = [f for f in script if f not in FAULTS]
        if bad:
            return web.json_response({"error": f"unknown faults {bad}; expected {sorted(FAULTS)}"}, status=400)
        sim.script = list(script)
        return web.json_response({"script": sim.script})

    app.router.add_post("/v1/chat/completions", handle)
    app.router.add_post("/v1/messages", handle)
    add_meta_routes(app, sim, WARM_MODELS)
    add_served_routes(app, sim)
    add_batch_routes(app, sim, answer, lambda body: counter_for(str(body["model"])).messages(*prompt_text(body)))
    app.router.add_get("/_sim/stats", stats)
    app.router.add_post("/_sim/script", set_script)
    app.router.add_get("/_sim/ledger", ledger)
    return app


WARM_MODELS = ("gpt-4o-mini", "claude-haiku-4-5")
"""Models whose token counters a simulator loads before it serves (OpenAI's and Anthropic's usual judges)."""


async def start_simulator(config: SimConfig, port: int = 0) -> tuple[web.AppRunner, str]:
    """Start a simulator on 127.0.0.1 in the running event loop (token counters of `WARM_MODELS` loaded first).

    Returns `(runner, base_url)`; stop it with `await runner.cleanup()`.
    `port=0` picks a free port.
    """
    # Load the token counters before serving: loading one takes a good part of a second, which
    # would otherwise hold up the first requests, as no ready provider does.
    for model in WARM_MODELS:
        counter_for(model).text("ready")
    app = build_app(config)
    runner = web.AppRunner(app, access_log=None, handler_cancellation=True)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", port, backlog=1024)
    try:
        await site.start()
    except BaseException:  # the port is taken: release what setup() made
        await runner.cleanup()
        raise
    sockets = site._server.sockets  # type: ignore[union-attr]
    real_port = sockets[0].getsockname()[1]
    return runner, f"http://127.0.0.1:{real_port}"


class SimulatorThread:
    """A simulator running in its own thread and event loop (for tests and benchmarks).

    `url` is its base URL; `sim` is the live state (`sim.stats`,
    `sim.script`, `sim.config`), readable from the caller's thread.
    Use as a context manager or call `stop()`.
    """

    def __init__(self, config: SimConfig | None = None, port: int = 0) -> None:
        self.config = config or SimConfig()
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._main, args=(port,), daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("simulator did not start within 10 s")

    def _main(self, port: int) -> None:
        asyncio.set_event_loop(self._loop)
        self._runner, self.url = self._loop.run_until_complete(start_simulator(self.config, port))
        self.sim: Sim = self._runner.app[SIM_KEY]
        self._ready.set()
        self._loop.run_forever()
        self._loop.run_until_complete(self._runner.cleanup())
        self._loop.close()

    @property
    def stats(self) -> SimStats:
        """The live counters."""
        return self.sim.stats

    def serve(self, weights: Weights | None) -> None:
        """Serve `weights` from the next request on (`Sim.serve`): a weight swap behind the same URL and model name.
        Returns once the server's loop made the swap (raises `TimeoutError` after 10 s)."""
        swapped = threading.Event()

        def swap() -> None:
            self.sim.serve(weights)
            swapped.set()

        self._loop.call_soon_threadsafe(swap)
        if not swapped.wait(10):
            raise TimeoutError("the simulator did not swap its weights within 10 s")

    def set_script(self, faults: list[str]) -> None:
        """Apply `faults` to the next requests, in order."""
        # A list assignment is atomic under the GIL; the server reads it on its next request.
        self.sim.script = list(faults)

    def stop(self) -> None:
        """Stop the server and its thread."""
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)

    def __enter__(self) -> SimulatorThread:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
