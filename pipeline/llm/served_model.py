"""The weights a self-hosted judge server serves, as a judge-cache key component (`served_model`).

A self-hosted server answers with whatever weights it has loaded, whatever `model` a request names:
llama.cpp's `llama-server` serves its one GGUF under any name, Ollama and LM Studio let a user pull or
swap other weights under the same tag, and vLLM (or TGI) can be restarted on another checkpoint with the
same served name. So for such a server the judge's cache key also holds what the server says it serves,
learnt once per run before the first cache read (`learn`):

| server | endpoint read | what identifies the weights |
| --- | --- | --- |
| llama.cpp `llama-server` | `GET {base}/models` (`owned_by: llamacpp`), `GET {root}/props` | the entry's `meta` (`n_params`, `size`, `n_vocab`, `n_ctx_train`, `n_embd`, `vocab_type`, `ftype`), `model_path`, the chat template |
| Ollama | `GET {root}/api/tags` | the tag's `digest` (its manifest), `size`, `details` |
| TGI | `GET {root}/info` | `model_id`, `model_sha`, `model_dtype` |
| LM Studio | `GET {root}/api/v0/models` | the entry's `publisher`, `arch`, `compatibility_type`, `quantization` |
| vLLM (SGLang alike) | `GET {base}/models` | the entry's `root` (the weights' path or repository), and its `parent`'s for a LoRA adapter |

`{base}` is `judge.base_url`, `{root}` the same without a trailing `/v1`. Runtime settings are left out
(a context size, `max_model_len`, default sampling, build numbers, `modified_at`): they change no verdict,
and a re-pull of identical weights keeps the cache warm. A reply's `model` and `system_fingerprint`
are not used: they come only with a completion, after the cache was read (and a warm run sends none), and
llama.cpp's fingerprint names its build, not its weights.

Which servers are asked (`self_hosted`): those whose `base_url` host is a loopback, private (RFC 1918,
unique-local IPv6, link-local, the 100.64.0.0/10 shared range of Tailscale-like networks) address,
`localhost`, a single-label name (a Docker Compose service, a machine named in `/etc/hosts`) or a name
under `.local`, `.lan`, `.internal` or `.home.arpa`. Any other host is a hosted API (OpenAI, Anthropic,
Azure, a gateway): nothing is asked and its key is what it always was, so its cache stays warm.

Nothing a server sends is trusted: each endpoint gets `PROBE_TIMEOUT_S` in all, at most `MAX_BYTES` of a
reply are read (a longer one counts as no answer), no redirect is followed (the judge's own key goes with
the probes, to the judge's own host only), only scalar fields of the expected types are kept, and what is
kept in clear — the server's kind and the weights' name, a basename of any path, redacted, at most
`MAX_NAME` characters — is all a cache index or a report ever shows. Paths and digests go into the
component's `sha256` only. A lone surrogate in a reply (a `\\ud800` escape, which `json` decodes and UTF-8 cannot
carry) reads as U+FFFD, as one in a trace does: it failed every request's cache key otherwise.

The same replies say how many requests llama.cpp computes at once (`slots_of`: `/props` `total_slots`); the judge
sends no more than that at a time (`stages.judge.calls.served`).
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import math
import re
from collections.abc import Iterable
from typing import Any, NamedTuple
from urllib.parse import urlsplit

import anyio
from tracejudge.llm.redact import redact
from tracejudge.llm.replies import read_capped

__all__ = ["MAX_BYTES", "MAX_NAME", "PROBE_TIMEOUT_S", "Learnt", "describe", "identity", "learn", "probe_urls", "self_hosted", "slots_of"]

PROBE_TIMEOUT_S = 2.0  # all endpoints together: a server on the same machine or network answers in milliseconds
MAX_BYTES = 1 << 20  # per endpoint: llama.cpp's /props with its chat template, or Ollama's list of hundreds of tags, fit
MAX_NAME = 80

_SHARED = ipaddress.ip_network("100.64.0.0/10")  # carrier-grade NAT: Tailscale and the like hand these to home GPU boxes
_LOCAL_SUFFIXES = (".localhost", ".local", ".lan", ".internal", ".home.arpa")
_HEX = re.compile(r"^(?:sha256:)?[0-9a-f]{12,128}$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]")
_SURROGATE = re.compile("[\ud800-\udfff]")  # (in a str a pair is one code point: any surrogate left is alone)
_LLAMA_META = ("vocab_type", "n_vocab", "n_ctx_train", "n_embd", "n_params", "size", "ftype")
_OLLAMA_DETAILS = ("format", "family", "parameter_size", "quantization_level", "parent_model")
_LMSTUDIO = ("publisher", "arch", "compatibility_type", "quantization", "type")
_TGI = ("model_id", "model_sha", "model_dtype", "model_pipeline_tag")


def self_hosted(base_url: str | None) -> bool:
    """Whether `base_url` names a server of the user's own (see the module doc), whose weights `learn` asks about.

    `None` (the provider's public endpoint) and a URL without a host are not. Decided from the URL alone: no name is
    resolved. Never raises."""
    if not base_url:
        return False
    try:
        host = urlsplit(base_url).hostname
    except ValueError:
        return False
    if not host:
        return False
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return host == "localhost" or "." not in host.rstrip(".") or host.rstrip(".").endswith(_LOCAL_SUFFIXES)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback or ip.is_private or ip.is_link_local or (ip.version == 4 and ip in _SHARED)


def probe_urls(base_url: str) -> dict[str, str]:
    """The identity endpoints of the server at `base_url`, by name: `models` (`{base}/models`), `props`, `tags`
    (Ollama), `lmstudio` (`/api/v0/models`) and `info` (TGI), the last four at the base without a trailing `/v1`."""
    base = base_url.rstrip("/")
    root = base[:-3] if base.endswith("/v1") else base
    return {"models": base + "/models", "props": root + "/props", "tags": root + "/api/tags",
            "lmstudio": root + "/api/v0/models", "info": root + "/info"}


class Learnt(NamedTuple):
    """What `learn` found: the `served_model` `component` (`None`: not identified), whether the server `answered`
    (`False`: no endpoint answered HTTP at all, or one of them did not answer in time: a `/props` that hangs may be the
    one that names the weights, so a `component` then may be made of part of what identifies them), whether one said
    the server is `loading` (503, as llama.cpp answers while it loads its model), and `slots`: how many requests the
    server computes at once when it says (`slots_of`), else `None`."""

    component: dict[str, Any] | None
    answered: bool
    loading: bool
    slots: int | None = None


def slots_of(bodies: dict[str, Any]) -> int | None:
    """How many requests the server computes side by side, from the decoded replies `bodies` (by `probe_urls` name):
    llama.cpp's `/props` `total_slots` (its `--parallel`; a request beyond them waits in the server's queue, where
    `judge.timeout_s` runs out while nothing is computed for it). `None` when no reply says (vLLM and TGI batch
    requests as they come; Ollama does not tell its `OLLAMA_NUM_PARALLEL`). Never raises."""
    props = bodies.get("props")
    slots = props.get("total_slots") if isinstance(props, dict) else None
    return slots if type(slots) is int and 1 <= slots <= 1 << 16 else None


async def learn(base_url: str, model: str, headers: dict[str, str], secrets: Iterable[str | None] = (),
                timeout_s: float = PROBE_TIMEOUT_S, max_bytes: int = MAX_BYTES) -> Learnt:
    """What the server at `base_url` serving `model` says of its weights (`identity`); the component is `None` when
    nothing identifies them (no such endpoint, no answer within `timeout_s` seconds in all, a reply over `max_bytes`
    bytes or not JSON); `Learnt.answered` is `False` when an endpoint did not answer in time. `headers` go
    with each GET (the judge's own, to its own host); `secrets` are masked in the names kept in clear. Never raises for
    anything the server does."""
    import aiohttp

    urls = probe_urls(base_url)
    bodies: dict[str, Any] = {}
    statuses: list[int] = []
    settled: set[str] = set()  # the endpoints that answered, or failed, in time

    async def get(session: aiohttp.ClientSession, name: str, url: str) -> None:
        try:
            async with session.get(url, headers=headers, allow_redirects=False) as resp:
                statuses.append(resp.status)
                if resp.status != 200:
                    settled.add(name)
                    return
                raw = await read_capped(resp, max_bytes)
        except TimeoutError:  # (before OSError, of which it is one: a reply still to come is not a refusal)
            return
        except (aiohttp.ClientError, OSError, ValueError):  # (`ReplyTooLarge` is a ValueError: a longer reply is no answer)
            settled.add(name)
            return
        settled.add(name)
        try:
            bodies[name] = _mended(json.loads(raw))
        except (ValueError, RecursionError):
            return

    # Each endpoint on its own connection, all at once: one that never answers costs the others nothing.
    timeout = aiohttp.ClientTimeout(total=timeout_s)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        with anyio.move_on_after(timeout_s + 0.5):
            async with anyio.create_task_group() as tg:
                for name, url in urls.items():
                    tg.start_soon(get, session, name, url)
    # A 404 from /info is no word on the weights when /props is still silent: the server is taken not to have answered.
    answered = bool(statuses) and settled >= urls.keys()
    return Learnt(identity(model, bodies, secrets), answered, 503 in statuses, slots_of(bodies))


def identity(model: str, bodies: dict[str, Any], secrets: Iterable[str | None] = ()) -> dict[str, Any] | None:
    """The `served_model` component from the decoded replies `bodies` (by `probe_urls` name; a missing one did not
    answer) of a server asked about `model`: `{"server", "name", "sha256"}` — the server's kind (`llama.cpp`, `ollama`,
    `tgi`, `lmstudio`, `vllm`, `sglang`, or `openai-compatible` for another server listing a `root`), the weights' name in clear (a basename,
    redacted with `secrets`, at most `MAX_NAME` characters) and the sha256 hex of the canonical JSON of every fact
    read (paths and digests in full; a lone surrogate as U+FFFD). `None` when no reply identifies the weights. Never raises."""
    try:
        bodies = _mended(bodies)
    except RecursionError:
        return None
    for read in (_llama_cpp, _ollama, _tgi, _lmstudio, _rooted):
        try:
            found = read(model, bodies)
        except (TypeError, ValueError, AttributeError, KeyError, IndexError):  # a shape no real server sends: no answer
            found = None
        if found is not None:
            server, name, facts = found
            text = json.dumps({"server": server, **facts}, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
            return {"server": server, "name": _clear(name, secrets), "sha256": hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()}
    return None


def describe(component: Any) -> str:
    """`component` (a `served_model`, or anything an index holds under that name) in a few words for a person:
    `llama.cpp qwen2.5-7b-q4_k_m.gguf (weights 1a2b3c4d5e6f)`, or `not known` when it is not one. Never raises."""
    if not isinstance(component, dict):
        return "not known"
    server, name, digest = (component.get(k) for k in ("server", "name", "sha256"))
    if not all(isinstance(v, str) for v in (server, name, digest)):
        return "not known"
    return f"{_clear(server, ())} {_clear(name, ())} (weights {_clear(digest, ())[:12]})"


# ------------------------------------------------------------------ each server's answer: (kind, name, facts) or None


def _mended(value: Any) -> Any:
    """`value` (decoded JSON) with every lone surrogate in its strings, keys included, replaced by U+FFFD."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {_mended(k): _mended(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_mended(v) for v in value]
    return value


def _entries(body: Any, key: str) -> list[dict[str, Any]]:
    items = body.get(key) if isinstance(body, dict) else None
    return [e for e in items if isinstance(e, dict)] if isinstance(items, list) else []


def _scalars(source: Any, keys: Iterable[str]) -> dict[str, Any]:
    """The fields `keys` of `source` that hold a string, a whole or finite number, or a bool (nothing nested)."""
    if not isinstance(source, dict):
        return {}
    out: dict[str, Any] = {}
    for k in keys:
        v = source.get(k)
        if isinstance(v, (str, bool, int)) or (isinstance(v, float) and math.isfinite(v)):
            out[k] = v
    return out


def _named(entries: list[dict[str, Any]], model: str, field: str = "id") -> dict[str, Any] | None:
    return next((e for e in entries if e.get(field) == model or (isinstance(e.get("aliases"), list) and model in e["aliases"])), None)


def _llama_cpp(model: str, bodies: dict[str, Any]) -> tuple[str, str, dict[str, Any]] | None:
    listed = [e for e in _entries(bodies.get("models"), "data") if e.get("owned_by") == "llamacpp"]
    # One model loaded: it answers every name. Several (router mode): the one asked for.
    entry = listed[0] if len(listed) == 1 else _named(listed, model)
    props = bodies.get("props") if isinstance(bodies.get("props"), dict) else {}
    path = props.get("model_path") if isinstance(props.get("model_path"), str) and props.get("model_path") else None
    meta = _scalars(entry.get("meta"), _LLAMA_META) if entry is not None else {}
    if not meta and path is None:
        return None
    facts: dict[str, Any] = {"meta": meta, "model_path": path}
    if entry is not None and isinstance(entry.get("id"), str):
        facts["id"] = entry["id"]
    template = props.get("chat_template")
    if isinstance(template, str):  # the template is the served model's too: another one words every prompt otherwise
        facts["chat_template_sha256"] = hashlib.sha256(template.encode("utf-8", "replace")).hexdigest()
    name = path or (entry.get("id") if entry is not None and isinstance(entry.get("id"), str) else model)
    return "llama.cpp", name, facts


def _ollama(model: str, bodies: dict[str, Any]) -> tuple[str, str, dict[str, Any]] | None:
    wanted = {model, model + ":latest"} | ({model[: -len(":latest")]} if model.endswith(":latest") else set())
    for e in _entries(bodies.get("tags"), "models"):
        digest = e.get("digest")
        # llama-server answers /api/tags too, with an empty digest: only a real manifest digest identifies weights.
        if (e.get("name") in wanted or e.get("model") in wanted) and isinstance(digest, str) and _HEX.match(digest):
            name = e["name"] if isinstance(e.get("name"), str) else str(e.get("model"))
            return "ollama", name, {"name": name, "digest": digest, **_scalars(e, ("size",)),
                                     "details": _scalars(e.get("details"), _OLLAMA_DETAILS)}
    return None


def _tgi(model: str, bodies: dict[str, Any]) -> tuple[str, str, dict[str, Any]] | None:
    info = bodies.get("info")
    facts = _scalars(info, _TGI)
    if not isinstance(facts.get("model_id"), str) or not facts["model_id"]:
        return None
    return "tgi", facts["model_id"], facts


def _lmstudio(model: str, bodies: dict[str, Any]) -> tuple[str, str, dict[str, Any]] | None:
    entry = _named(_entries(bodies.get("lmstudio"), "data"), model)
    if entry is None:
        return None
    facts = _scalars(entry, _LMSTUDIO)
    if not facts:
        return None
    return "lmstudio", model, {"id": model, **facts}


def _rooted(model: str, bodies: dict[str, Any]) -> tuple[str, str, dict[str, Any]] | None:
    entries = _entries(bodies.get("models"), "data")
    entry = _named(entries, model)
    if entry is None or not isinstance(entry.get("root"), str) or not entry["root"]:
        return None
    facts: dict[str, Any] = {"id": model, "root": entry["root"], **_scalars(entry, ("owned_by",))}
    parent = entry.get("parent")
    if isinstance(parent, str) and parent:  # a LoRA adapter: the base weights under it count as much
        base = _named(entries, parent)
        facts["parent"] = {"id": parent, "root": base.get("root") if base is not None and isinstance(base.get("root"), str) else None}
    owner = entry.get("owned_by")
    return (owner if owner in ("vllm", "sglang") else "openai-compatible"), entry["root"], facts


def _clear(text: str, secrets: Iterable[str | None]) -> str:
    """`text` as it may be shown: the last segment of a path (a home directory stays out of reports and indexes),
    no control or invisible characters, credentials masked, at most `MAX_NAME` characters."""
    text = str(text).rstrip("/\\")
    text = re.split(r"[/\\]", text)[-1] if text else text
    text = _CONTROL.sub("", text)
    return redact(text, secrets)[:MAX_NAME] or "?"
