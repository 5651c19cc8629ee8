"""The simulator as a self-hosted server: the endpoints that describe the weights it serves, and weights to swap.

With `SimConfig.served` (a `Weights`, or `Sim.serve` / `SimulatorThread.serve` between runs) the simulator
presents itself as `Weights.server` serving those weights, in that server's own shapes:

- `llama.cpp` (`llama-server`): `GET /v1/models` lists one model owned by `llamacpp` with its `meta`
  (`vocab_type`, `n_vocab`, `n_ctx_train`, `n_embd`, `n_params`, `size`), `GET /props` gives `model_path`,
  `model_alias`, `chat_template`, `build_info`, `total_slots` and `default_generation_settings`, and, as the
  real server does for Ollama clients, `GET /api/tags` lists the model with an empty `digest`;
- `ollama`: `GET /api/tags` lists the tag with its manifest `digest`, `size`, `modified_at` and `details`;
  `GET /v1/models` is plain (`owned_by: library`);
- `vllm`: `GET /v1/models` lists the served name with `owned_by: vllm`, `root` (the weights' path) and
  `max_model_len`;
- `lmstudio`: `GET /api/v0/models` lists the model with `publisher`, `arch`, `compatibility_type`,
  `quantization`, `state` and `max_context_length`;
- `tgi`: `GET /info` gives `model_id`, `model_sha`, `model_dtype` and the router's limits.

An endpoint the server does not have answers 404, as the real one does; with `loading` every one answers
503 `Loading model`, as llama-server does until its model is loaded; with `identity_delay_s` the endpoints of
`delayed` (`/props` and `/v1/models`) answer that many seconds late, when the server has them (a server whose metadata
endpoints hang while its completions are answered), the others still at once. The weights decide the
answers too: their `seed` and `yes_share` replace the simulator's, so other weights give other verdicts
(what a real swap does). Without `served` nothing here answers, and `GET /v1/models` is the plain list
`tracejudge.simulator.meta` gives.
"""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from aiohttp import web

if TYPE_CHECKING:
    from tracejudge.simulator.state import Sim

__all__ = ["Weights", "add_served_routes", "models_listing"]

_MODIFIED = "2024-01-01T00:00:00Z"


@dataclass
class Weights:
    """Weights the simulator says it serves, as `server` describes them. `path` is llama.cpp's `model_path`, vLLM's
    `root`, TGI's `model_id`; `name` the name it lists (llama.cpp's alias, the Ollama tag, vLLM's served name, LM
    Studio's id; `None`: the path, or its basename for LM Studio); `digest` Ollama's manifest digest and TGI's
    `model_sha` (`""`: a sha256 of the path and seed). `n_params` and `size` (bytes) as llama.cpp reports them.
    `seed` and `yes_share` are what the weights answer with (see `tracejudge.simulator.state.SimConfig`)."""

    server: Literal["llama.cpp", "ollama", "vllm", "lmstudio", "tgi"] = "llama.cpp"
    path: str = "/models/judge-7b-instruct-q4_k_m.gguf"
    name: str | None = None
    digest: str = ""
    n_params: int = 7_241_732_096
    size: int = 4_368_438_272
    quantization: str = "Q4_K_M"
    chat_template: str = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% endfor %}<|assistant|>"
    seed: int = 0
    yes_share: float = 0.75
    loading: bool = False  # every identity endpoint answers 503 `Loading model`, as llama-server does while it loads
    identity_delay_s: float = 0.0  # the endpoints of `delayed` answer this late
    delayed: tuple[str, ...] = ("/props", "/v1/models")

    @property
    def listed(self) -> str:
        """The name the server lists the weights under."""
        if self.name is not None:
            return self.name
        return self.path.rstrip("/").rsplit("/", 1)[-1] if self.server == "lmstudio" else self.path

    @property
    def sha(self) -> str:
        """`digest`, or one made from the path and the seed."""
        return self.digest or hashlib.sha256(f"{self.path}:{self.seed}".encode()).hexdigest()


def _loading() -> web.Response:
    return web.json_response({"error": {"code": 503, "message": "Loading model", "type": "unavailable_error"}}, status=503)


def models_listing(sim: Sim) -> web.Response | None:
    """`GET /v1/models` as the served weights' server answers it, or `None` (no `served` weights: the plain list)."""
    w = sim.served
    if w is None:
        return None
    if w.loading:
        return _loading()
    card: dict[str, Any] = {"id": w.listed, "object": "model", "created": 1_704_067_200}
    if w.server == "llama.cpp":
        card.update(owned_by="llamacpp", meta={"vocab_type": 2, "n_vocab": 152_064, "n_ctx_train": 32_768, "n_embd": 3_584,
                                               "n_params": w.n_params, "size": w.size})
    elif w.server == "vllm":
        card.update(owned_by="vllm", root=w.path, parent=None, max_model_len=32_768,
                    permission=[{"id": "modelperm-sim", "object": "model_permission", "allow_sampling": True}])
    elif w.server == "ollama":
        card.update(owned_by="library")
    elif w.server == "lmstudio":
        card.update(owned_by="organization_owner")
    else:
        card.update(owned_by=w.path)
    return web.json_response({"object": "list", "data": [card]})


def add_served_routes(app: web.Application, sim: Sim) -> None:
    """Add the identity endpoints (`GET /props`, `/api/tags`, `/api/v0/models`, `/info`) to `app`; each answers as
    the served weights' server does, or 404 when that server has no such endpoint."""

    def endpoint(*servers: str) -> Any:
        """An endpoint only `servers` have: 503 while the weights load, 404 (their "File Not Found") for any other
        server or no weights described; else the handler's answer for the weights served."""

        def wrap(answer: Any) -> Any:
            async def handle(request: web.Request) -> web.Response:
                w = sim.served
                if w is not None and w.loading:
                    return _loading()
                if w is None or w.server not in servers:
                    return web.json_response({"error": {"code": 404, "message": "File Not Found", "type": "not_found_error"}}, status=404)
                if request.path in w.delayed:
                    await asyncio.sleep(w.identity_delay_s)
                return answer(w)

            return handle

        return wrap

    @endpoint("llama.cpp")
    def props(w: Weights) -> web.Response:
        return web.json_response({
            "default_generation_settings": {"n_ctx": 8_192, "params": {"temperature": 0.8, "top_k": 40, "top_p": 0.95}},
            "total_slots": sim.config.slots or 4, "model_alias": w.listed, "model_path": w.path, "chat_template": w.chat_template,
            "modalities": {"vision": False, "audio": False}, "build_info": "b0000-simulator", "bos_token": "<s>", "eos_token": "</s>"})

    @endpoint("ollama", "llama.cpp")
    def tags(w: Weights) -> web.Response:
        if w.server == "llama.cpp":  # llama-server's answer to Ollama clients: no digest, no details
            entry: dict[str, Any] = {"name": w.listed, "model": w.listed, "modified_at": "", "size": "", "digest": "", "type": "model",
                                     "details": {"parent_model": "", "format": "gguf", "family": "", "parameter_size": "", "quantization_level": ""}}
        else:
            entry = {"name": w.listed, "model": w.listed, "modified_at": _MODIFIED, "size": w.size, "digest": w.sha,
                     "details": {"parent_model": "", "format": "gguf", "family": "llama", "families": ["llama"],
                                 "parameter_size": f"{w.n_params / 1e9:.1f}B", "quantization_level": w.quantization}}
        return web.json_response({"models": [entry]})

    @endpoint("lmstudio")
    def lmstudio(w: Weights) -> web.Response:
        return web.json_response({"object": "list", "data": [{
            "id": w.listed, "object": "model", "type": "llm", "publisher": "lmstudio-community", "arch": "qwen2",
            "compatibility_type": "gguf", "quantization": w.quantization, "state": "loaded", "max_context_length": 32_768}]})

    @endpoint("tgi")
    def info(w: Weights) -> web.Response:
        return web.json_response({
            "model_id": w.path, "model_sha": w.sha, "model_dtype": "torch.float16", "model_device_type": "cuda",
            "model_pipeline_tag": "text-generation", "max_concurrent_requests": 128, "max_best_of": 2, "max_stop_sequences": 4,
            "max_input_tokens": 4_095, "max_total_tokens": 4_096, "validation_workers": 2, "max_client_batch_size": 4,
            "router": "text-generation-router", "version": "3.0.0", "sha": None, "docker_label": None})

    app.router.add_get("/props", props)
    app.router.add_get("/api/tags", tags)
    app.router.add_get("/api/v0/models", lmstudio)
    app.router.add_get("/info", info)
