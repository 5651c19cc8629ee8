"""The judge simulator: a loopback HTTP server that speaks the judges' protocols.

`tracejudge simulate` (and tests, the demo and benchmarks) run it on
127.0.0.1. It answers

- OpenAI `POST /v1/chat/completions` (`response_format: {type: json_schema}`
  gets a JSON document valid for the schema; otherwise a short text), and
- Anthropic `POST /v1/messages` (a forced tool `tool_choice: {type: tool}`
  gets a `tool_use` block whose `input` is valid for the tool's schema),

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
as the token limit counted it, so any window can be recounted.

`max_concurrency` C makes the server slow down past C requests in flight,
as a GPU server does: a request arriving with n in flight takes
`latency_ms` × max(1, n / C), so throughput stops growing at C.

Faults: with probability `error_rate` a request gets one of a 500, a hang
longer than any sane client timeout (`hang_s`), or a truncated reply
(`finish_reason: length` / `stop_reason: max_tokens`, JSON cut in half).
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
exceed N (a local server's window). A request without `response_format` gets a
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

`GET /_sim/stats` returns the counters (requests, per status, 429s, tokens,
first and last request times); `POST /_sim/script` replaces the script.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import random
import re
import socket
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from aiohttp import web
from tracejudge.llm.prefix_cache import PrefixCache, prompt_text
from tracejudge.llm.tokens import counter_for
from tracejudge.simulator.batches import add_batch_routes
from tracejudge.simulator.flaws import Flaws, is_pairwise, preference
from tracejudge.simulator.limits import Limits, char_tokens

__all__ = ["SimConfig", "SimStats", "SimulatorThread", "build_app", "free_port", "start_simulator"]

SIM_KEY: web.AppKey[Any] = web.AppKey("sim")
FAULTS = {"ok", "400", "bad_request", "429", "quota", "500", "timeout", "truncated", "prose", "near_miss", "drop_item", "malformed_item"}
# The schema name of a multi-item request (`tracejudge.stages.judge.multi`): one verdict per item id.
MULTI_SCHEMA_NAME = "verdicts"
# The shared schema of yes/no requests (`tracejudge.stages.judge.base.ANSWERS_SCHEMA`): answers listed by question id.
ANSWERS_SCHEMA_NAME = "answers"
_QUESTION_ID = re.compile(r"(?m)^([A-Z]+\d+): ")
_DATA_TAG = re.compile(r"==== DATA (\w+) BEGIN ====")
_DATA_END = re.compile(r"==== DATA \w+ END ====")
_ID = re.compile(r"^[A-Z]+\d+$")
# llama-cpp-python's server (FastAPI): the validation error of a `json_schema` response format, which it answers with HTTP 500.
LLAMA_CPP_PYTHON_JSON_SCHEMA = ("1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
                                "'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema', "
                                "'ctx': {'expected': \"'text' or 'json_object'\"}}")


@dataclass
class SimConfig:
    """Simulator settings. Times in seconds unless named `_ms`; `rpm`/`tpm` `None` = unlimited."""

    latency_ms: float = 0.0
    rpm: int | None = None
    tpm: int | None = None
    error_rate: float = 0.0
    seed: int = 0
    hang_s: float = 30.0
    fault_retry_after_s: float = 1.0
    quota_retry_after_s: float = 86_400.0
    yes_share: float = 0.75
    script: list[str] = field(default_factory=list)
    batch_completion_s: float = 1.0
    batch_expire_rate: float = 0.0
    batch_shuffle: bool = True
    batch_script: list[dict[str, Any]] = field(default_factory=list)
    window: Literal["bucket", "strict"] = "bucket"
    rate_headers: bool = True
    max_concurrency: int | None = None
    window_s: float = 60.0
    book: Literal["arrival", "reply"] = "arrival"
    limit_count: Literal["usage", "chars"] = "usage"
    refuse_marker: str | None = None
    prefix_cache: bool = True
    # Known flaws (`tracejudge.simulator.flaws`): systematic error against the truth, per-model noise, position bias.
    agreement: float = 1.0
    noise: float | dict[str, float] = 0.0
    position_bias: float = 0.0
    json_object_only: bool = False
    tokenizer_factor: float = 1.0
    context_tokens: int | None = None


@dataclass
class SimStats:
    """What the simulator saw. Tokens are prompt + completion of answered requests."""

    requests: int = 0
    answered: int = 0
    rate_limited: int = 0
    server_errors: int = 0
    timeouts: int = 0
    truncated: int = 0
    refused: int = 0
    cached_input_tokens: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    by_path: dict[str, int] = field(default_factory=dict)
    files_uploaded: int = 0
    batches_created: int = 0
    batch_requests: int = 0
    batch_polls: int = 0
    batch_downloads: int = 0
    first_request: float | None = None
    last_request: float | None = None
    # Requests that arrived in each whole second since the first (a bounded timeline for benchmarks).
    arrivals_per_s: dict[int, int] = field(default_factory=dict)
    # The most tokens the token limit counted at once (never above `tpm` when the limit holds).
    peak_window_tokens: float = 0.0


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class _Sim:
    def __init__(self, config: SimConfig) -> None:
        self.config = config
        self.stats = SimStats()
        self.rng = random.Random(config.seed)
        self.script = list(config.script)
        self.limits = Limits(config.rpm, config.tpm, config.window, config.window_s, config.book)
        self.serial = 0
        self.in_flight = 0
        self.prefix_cache = PrefixCache(config.prefix_cache)
        self.flaws = Flaws(config.seed, config.agreement, config.noise, config.position_bias)

    # ----------------------------------------------------------------- faults

    def next_fault(self) -> str:
        if self.script:
            return self.script.pop(0)
        if self.config.error_rate and self.rng.random() < self.config.error_rate:
            return self.rng.choice(["500", "timeout", "truncated"])
        return "ok"

    # ----------------------------------------------------------------- limits

    def headers(self, anthropic: bool) -> dict[str, str]:
        return self.limits.headers(anthropic) if self.config.rate_headers else {}

    # ----------------------------------------------------------------- verdicts

    def instance(self, schema: dict[str, Any], digest: bytes, path: str = "") -> Any:
        """A deterministic instance of a JSON schema (the subset judges use)."""

        def h(tag: str) -> int:
            return int.from_bytes(hashlib.sha256(digest + (path + "/" + tag).encode()).digest()[:8], "big")

        if "enum" in schema:
            values = schema["enum"]
            if set(values) >= {"yes", "no"}:
                return "yes" if h("e") % 1000 < self.config.yes_share * 1000 else "no"
            return values[h("e") % len(values)]
        kind = schema.get("type")
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), "null")
        if kind == "object":
            props = schema.get("properties", {})
            return {k: self.instance(v, digest, f"{path}/{k}") for k, v in props.items()}
        if kind == "array":
            n = schema.get("minItems", 1)
            return [self.instance(schema.get("items", {}), digest, f"{path}/{i}") for i in range(n)]
        if kind == "boolean":
            return h("b") % 1000 < self.config.yes_share * 1000
        if kind == "integer":
            lo, hi = int(schema.get("minimum", 0)), int(schema.get("maximum", 10))
            return lo + h("i") % (hi - lo + 1)
        if kind == "number":
            flo, fhi = float(schema.get("minimum", 0)), float(schema.get("maximum", 1))
            return round(flo + (h("n") % 1001) / 1000 * (fhi - flo), 3)
        if kind == "null":
            return None
        return f"simulated reason {h('s') % 997}"


def _digest(body: dict[str, Any], seed: int) -> bytes:
    canon = json.dumps({k: body.get(k) for k in ("model", "messages", "system", "response_format", "tools")}, sort_keys=True)
    return hashlib.sha256(f"{seed}:{canon}".encode()).digest()


def _verdict(sim: _Sim, body: dict[str, Any], schema: dict[str, Any], name: str | None, fault: str) -> Any:
    """The verdict for `schema`; a multi-item request (schema named `verdicts`) gets one verdict per item id.

    Each item's verdict depends only on the seed and the item's id, so an
    item gets the same verdict in any request, in any position. Faults
    `drop_item` and `malformed_item` spoil the first item of the request.
    """
    if name == ANSWERS_SCHEMA_NAME:
        return _answers(sim, body, schema, fault)
    if name != MULTI_SCHEMA_NAME or not isinstance(schema.get("properties"), dict):
        return sim.instance(schema, _digest(body, sim.config.seed))
    out: dict[str, Any] = {}
    defs = schema.get("$defs") or {}
    for item_id, sub in schema["properties"].items():
        ref = sub.get("$ref", "") if isinstance(sub, dict) else ""
        if ref.startswith("#/$defs/"):
            sub = defs.get(ref[len("#/$defs/"):], {})
        out[item_id] = sim.instance(sub, hashlib.sha256(f"{sim.config.seed}:item:{item_id}".encode()).digest())
    first = next(iter(schema.get("required") or list(out)), None)
    if first is not None and first in out:
        if fault == "drop_item":
            del out[first]
        elif fault == "malformed_item":
            out[first] = "GRADE: yes"
    return out


def _asked(body: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(the user messages' texts, the question ids they list after the data)."""
    texts = [str(m.get("content")) for m in prompt_text(body)[0] if isinstance(m, dict) and m.get("role") == "user"]
    # Questions are listed after the data: a line of the data that looks like one is not asked.
    asked = [_DATA_END.split(t)[-1] for t in texts]
    return texts, list(dict.fromkeys(q for t in asked for q in _QUESTION_ID.findall(t)))


def schema_name(schema: dict[str, Any]) -> str | None:
    """The name a schema sent without one (`json_object`) would have: `verdicts` (items), `answers` (question ids), or None."""
    props = schema.get("properties")
    if not isinstance(props, dict) or not props:
        return None
    if "answers" in props or all(_ID.match(k) for k in props):
        return ANSWERS_SCHEMA_NAME
    if "$defs" in schema:
        return MULTI_SCHEMA_NAME
    return None


_ITEM = {"type": "object", "properties": {"answer": {"type": "string", "enum": ["yes", "no"]}, "reason": {"type": "string"}}}


def _answers(sim: _Sim, body: dict[str, Any], schema: dict[str, Any], fault: str) -> dict[str, Any]:
    """One answer per question id, each a function of the seed, the data tag and the id (see the module doc).

    The ids are the schema's own properties (a per-request schema keyed by question id), or, for the shared
    list schema (`{"answers": [{id, answer, reason}]}`), the ids the prompt lists.
    """
    texts, listed = _asked(body)
    tag = next((m.group(1) for t in texts for m in [_DATA_TAG.search(t)] if m), _digest(body, sim.config.seed).hex())
    props = schema.get("properties") or {}
    as_list = isinstance(props.get("answers"), dict) and props["answers"].get("type") == "array"
    ids = listed if as_list else list(props)
    out: dict[str, Any] = {}
    for qid in ids:
        item = (props["answers"].get("items") or {}) if as_list else props.get(qid) or _ITEM
        ref = item.get("$ref", "") if isinstance(item, dict) else ""
        if ref.startswith("#/$defs/"):
            item = (schema.get("$defs") or {}).get(ref[len("#/$defs/"):], _ITEM)
        got = sim.instance(item, hashlib.sha256(f"{sim.config.seed}:{tag}:{qid}".encode()).digest())
        if isinstance(got, dict) and "id" in got:
            got["id"] = qid
        out[qid] = got
    first = next(iter(out), None)
    if first is not None and fault == "drop_item":
        del out[first]
    elif first is not None and fault == "malformed_item":
        out[first] = {**out[first], "answer": "GRADE: yes"}
    return {"answers": list(out.values())} if as_list else out


def _with_flaws(sim: _Sim, body: dict[str, Any], schema: dict[str, Any], verdict: Any) -> Any:
    """`verdict` through the simulator's known flaws; a pairwise request's verdict made here (`tracejudge.simulator.flaws`)."""
    texts = [str(m.get("content")) for m in prompt_text(body)[0] if isinstance(m, dict) and m.get("role") == "user"]
    pairwise = is_pairwise(texts)
    if not (pairwise or sim.flaws.active):
        return verdict
    occurrence = sim.flaws.occurrence(_digest(body, sim.config.seed))
    if pairwise:
        return preference(sim.flaws, texts, occurrence)
    tag = next((m.group(1) for t in texts for m in [_DATA_TAG.search(t)] if m), "")
    model = str(body.get("model"))
    score = (schema.get("properties") or {}).get("score") or {}
    if score.get("type") == "integer":
        return sim.flaws.apply_graded(verdict, model, tag, occurrence, (int(score.get("minimum", 0)), int(score.get("maximum", 10))))
    return sim.flaws.apply(verdict, model, tag, occurrence)


def answer(sim: _Sim, body: dict[str, Any], anthropic: bool, fault: str, prompt_tokens: int) -> tuple[dict[str, Any], int]:
    """The success reply to a validated, admitted request: `(payload, completion_tokens)`.

    `fault` is one of `ok`, `truncated`, `prose`, `near_miss`, `drop_item`,
    `malformed_item` (the others are handled before an answer is made).
    Counts the answer in the stats. Used by the synchronous endpoints and by
    the batch endpoints alike.
    """
    st = sim.stats
    model = str(body["model"])
    max_tokens = int(body.get("max_tokens") or body.get("max_completion_tokens") or 1024)
    schema, tool_name, name = None, None, None
    rf = body.get("response_format") or {}
    if rf.get("type") == "json_schema":
        schema = rf.get("json_schema", {}).get("schema")
        name = rf.get("json_schema", {}).get("name")
    elif rf.get("type") == "json_object" and isinstance(rf.get("schema"), dict):
        schema = rf["schema"]
        name = schema_name(schema)
    elif not rf and not anthropic:
        _, listed = _asked(body)
        if listed:  # no schema: a model reading the prompt answers the question ids it lists
            schema, name = {"type": "object", "properties": {q: _ITEM for q in listed}}, ANSWERS_SCHEMA_NAME
    if anthropic and body.get("tools"):
        tool = body["tools"][0]
        schema, tool_name = tool.get("input_schema"), tool.get("name")
        name = tool_name
    verdict = _verdict(sim, body, schema, name, fault) if schema else "yes"
    if schema and name != MULTI_SCHEMA_NAME:
        verdict = _with_flaws(sim, body, schema, verdict)
    text = json.dumps(verdict) if schema else "yes"
    finish = "stop"
    if fault == "prose":
        text = f"Here is my assessment.\n```json\n{text}\n```\nLet me know if you need more."
    elif fault == "near_miss":
        if isinstance(verdict, dict) and isinstance(verdict.get("answers"), list):
            text = "\n".join(f"GRADE {a.get('id')}: {a.get('answer')}" for a in verdict["answers"] if isinstance(a, dict))
        else:
            text = "\n".join(f"GRADE {k}: {v}" for k, v in verdict.items()) if isinstance(verdict, dict) else "GRADE: CI"
    elif fault == "truncated":
        st.truncated += 1
        text = text[: max(1, len(text) // 2)]
        finish = "length"
    counter = counter_for(model)
    completion = max_tokens if finish == "length" else min(max_tokens, counter.text(text))
    # Only OpenAI caches prefixes unasked; Anthropic caches only what `cache_control` marks.
    cached, written = sim.prefix_cache.anthropic(model, body) if anthropic else (min(prompt_tokens, sim.prefix_cache.openai(model, body)), 0)
    cached, written = min(cached, prompt_tokens), min(written, prompt_tokens - min(cached, prompt_tokens))
    st.cached_input_tokens += cached
    st.answered += 1
    st.input_tokens += prompt_tokens
    st.output_tokens += completion
    sim.serial += 1
    rid = hashlib.sha256(f"{sim.config.seed}:{sim.serial}".encode()).hexdigest()[:24]
    if anthropic:
        as_tool = tool_name is not None and fault in ("ok", "truncated", "drop_item", "malformed_item") and finish == "stop"
        content = [{"type": "tool_use", "id": f"toolu_{rid}", "name": tool_name, "input": verdict}] if as_tool else [{"type": "text", "text": text}]
        payload: dict[str, Any] = {
            "id": f"msg_{rid}", "type": "message", "role": "assistant", "model": model, "content": content,
            "stop_reason": "max_tokens" if finish == "length" else ("tool_use" if as_tool else "end_turn"),
            "usage": {"input_tokens": prompt_tokens - cached - written, "output_tokens": completion,
                      "cache_read_input_tokens": cached, "cache_creation_input_tokens": written},
        }
    else:
        payload = {
            "id": f"chatcmpl-{rid}", "object": "chat.completion", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion, "total_tokens": prompt_tokens + completion,
                      "prompt_tokens_details": {"cached_tokens": cached}},
        }
    return payload, completion


def _reply_text(payload: dict[str, Any]) -> str:
    """The completion's text as a character-counting gateway sees it (a tool call's input as JSON)."""
    if "choices" in payload:
        return str(payload["choices"][0]["message"].get("content") or "")
    return "".join(b.get("text") or json.dumps(b.get("input")) for b in payload.get("content") or [])


def _error(status: int, kind: str, message: str, headers: dict[str, str], anthropic: bool) -> web.Response:
    if anthropic:
        payload = {"type": "error", "error": {"type": kind, "message": message}}
    else:
        payload = {"error": {"type": kind, "message": message, "code": kind}}
    return web.json_response(payload, status=status, headers=headers)


def build_app(config: SimConfig) -> web.Application:
    """The aiohttp application of a simulator with `config` (state lives in the app)."""
    sim = _Sim(config)
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
        try:
            body = await request.json()
        except ValueError:
            return _error(400, "invalid_request_error", "body is not JSON", {}, anthropic)
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list) or not body.get("model"):
            return _error(400, "invalid_request_error", "`model` and `messages` are required", {}, anthropic)
        model = str(body["model"])
        max_tokens = int(body.get("max_tokens") or body.get("max_completion_tokens") or 1024)
        messages, extra = prompt_text(body)
        prompt_tokens = math.ceil(counter_for(model).messages(messages, extra) * config.tokenizer_factor)
        rf = body.get("response_format")
        if config.json_object_only and isinstance(rf, dict) and rf.get("type") not in (None, "text", "json_object"):
            st.server_errors += 1
            return web.json_response({"error": {"message": LLAMA_CPP_PYTHON_JSON_SCHEMA, "type": "internal_server_error", "param": None,
                                                 "code": None}}, status=500)
        if config.context_tokens is not None and prompt_tokens + max_tokens > config.context_tokens:
            st.refused += 1
            return _error(400, "invalid_request_error", f"This model's maximum context length is {config.context_tokens} tokens. However, you "
                          f"requested {prompt_tokens + max_tokens} tokens ({prompt_tokens} in the messages, {max_tokens} in the completion). "
                          "Please reduce the length of the messages or completion.", {}, anthropic)

        if config.refuse_marker and any(config.refuse_marker in str(m.get("content")) for m in messages):
            st.refused += 1
            return _error(400, "content_filter", "simulated content filter: the prompt was refused", {}, anthropic)
        fault = sim.next_fault()
        if fault == "400":
            st.refused += 1
            return _error(400, "content_filter", "simulated refusal: the prompt was flagged", {}, anthropic)
        if fault == "bad_request":
            st.refused += 1
            return _error(400, "invalid_request_error", "simulated refusal: response_format is not supported by this server", {}, anthropic)
        if fault in ("429", "quota"):
            st.rate_limited += 1
            wait = config.quota_retry_after_s if fault == "quota" else config.fault_retry_after_s
            headers = {**sim.headers(anthropic), "retry-after": str(math.ceil(wait)), "retry-after-ms": str(int(wait * 1000))}
            kind = "insufficient_quota" if fault == "quota" else "rate_limit_error"
            return _error(429, kind, "simulated rate limit" if fault == "429" else "simulated daily quota exhausted", headers, anthropic)
        # The limits count the prompt as the server does: its tokenizer (`usage`), or a gateway's character count.
        limit_prompt = char_tokens(messages, extra) if config.limit_count == "chars" else prompt_tokens
        if sim.limits.tokens is not None and limit_prompt + max_tokens > sim.limits.tokens.capacity:
            return _error(400, "invalid_request_error", f"request too large: {limit_prompt + max_tokens} tokens > tpm {config.tpm}", {}, anthropic)
        wait, entry = sim.limits.admit(limit_prompt + max_tokens)
        if wait > 0:
            st.rate_limited += 1
            headers = {**sim.headers(anthropic), "retry-after": str(math.ceil(wait)), "retry-after-ms": str(max(1, int(math.ceil(wait * 1000))))}
            return _error(429, "rate_limit_error", f"rate limit reached; retry in {wait:.3f}s", headers, anthropic)

        sim.in_flight += 1
        try:
            if config.latency_ms:
                # Past `max_concurrency` in flight the server shares its capacity, as a GPU server does.
                crowd = sim.in_flight / config.max_concurrency if config.max_concurrency else 1.0
                await asyncio.sleep(config.latency_ms / 1000 * max(1.0, crowd))
        finally:
            sim.in_flight -= 1
        if fault == "500":
            st.server_errors += 1
            sim.limits.settle(entry, 0)
            return _error(500, "server_error", "simulated server error", sim.headers(anthropic), anthropic)
        if fault == "timeout":
            st.timeouts += 1
            sim.limits.settle(entry, 0)
            await asyncio.sleep(config.hang_s)
            return _error(504, "timeout", "simulated timeout", {}, anthropic)

        payload, completion = answer(sim, body, anthropic, fault, prompt_tokens)
        limit_completion = char_tokens([], reply=_reply_text(payload)) if config.limit_count == "chars" else completion
        sim.limits.settle(entry, limit_prompt + limit_completion)
        st.peak_window_tokens = sim.limits.peak_tokens
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
    add_batch_routes(app, sim, answer, lambda body: counter_for(str(body["model"])).messages(*prompt_text(body)))
    app.router.add_get("/_sim/stats", stats)
    app.router.add_post("/_sim/script", set_script)
    app.router.add_get("/_sim/ledger", ledger)
    return app


WARM_MODELS = ("gpt-4o-mini", "claude-3-5-haiku-latest")
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
        self.sim: _Sim = self._runner.app[SIM_KEY]
        self._ready.set()
        self._loop.run_forever()
        self._loop.run_until_complete(self._runner.cleanup())
        self._loop.close()

    @property
    def stats(self) -> SimStats:
        """The live counters."""
        return self.sim.stats

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
