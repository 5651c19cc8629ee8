"""`tracejudge simulate`: the judge simulator as a server of its own."""

from __future__ import annotations

import argparse
import hashlib
from typing import TYPE_CHECKING

from tracejudge.entrypoints.commands.exits import EXIT_BAD_INPUT, EXIT_OK

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["SERVERS", "command"]

SERVERS = ("llama.cpp", "ollama", "vllm", "lmstudio", "tgi")  # what `--serve-as` may present itself as


def command(args: argparse.Namespace, err: Console) -> int:
    """`tracejudge simulate`: serve the judge simulator on 127.0.0.1 until a signal; exit 2 for a bad option or a port that cannot be bound."""
    import anyio
    from tracejudge.entrypoints.serve import until_signal
    from tracejudge.simulator.server import SimConfig, start_simulator

    for flag in ("error_rate", "agreement", "noise", "position_bias"):
        if not 0 <= getattr(args, flag) <= 1:
            err.print(f"--{flag.replace('_', '-')} must be between 0 and 1")
            return EXIT_BAD_INPUT
    served = None
    if args.serve_as is not None:
        from tracejudge.simulator.served import Weights

        server, _, weights = args.serve_as.partition(":")
        if server not in SERVERS or not weights:
            err.print(f"error: --serve-as {args.serve_as!r}: SERVER:WEIGHTS, SERVER one of {', '.join(SERVERS)} "
                      "(llama.cpp:/models/judge-q4.gguf, ollama:llama3.1:8b)", highlight=False, markup=False)
            return EXIT_BAD_INPUT
        # The same weights answer alike every time; others (another path or tag) answer otherwise, as other weights would.
        seed = int(hashlib.sha256(weights.encode()).hexdigest()[:8], 16)
        # (An Ollama tag names its weights; the others name them by a path, which they list.)
        path, name = (f"/models/{weights}", weights) if server == "ollama" else (weights, None)
        served = Weights(server, path, name=name, seed=seed)  # type: ignore[arg-type]
    if args.slots is not None and args.slots < 1:
        err.print("error: --slots must be 1 or more", highlight=False)
        return EXIT_BAD_INPUT
    if args.max_reply_tokens is not None and args.max_reply_tokens < 1:
        err.print("error: --max-reply-tokens must be 1 or more", highlight=False)
        return EXIT_BAD_INPUT
    config = SimConfig(latency_ms=args.latency_ms, rpm=args.rpm, tpm=args.tpm, error_rate=args.error_rate, hang_s=args.hang_s, seed=args.seed,
                       batch_completion_s=args.batch_completion_s, window=args.window, rate_headers=not args.no_rate_headers,
                       max_concurrency=args.max_concurrency, agreement=args.agreement, noise=args.noise, position_bias=args.position_bias,
                       json_object_only=args.json_object_only, tokenizer_factor=args.tokenizer_factor, context_tokens=args.context_tokens,
                       max_reply_tokens=args.max_reply_tokens, strict_fields=args.strict_fields,
                       window_s=args.window_s, book=args.book, limit_count=args.limit_count, served=served, slots=args.slots)

    async def serve() -> None:
        try:
            runner, url = await start_simulator(config, args.port)
        except OSError as exc:  # in use, or not allowed (a port below 1024 without privileges)
            bind_error.append(f"error: --port {args.port}: cannot listen on 127.0.0.1:{args.port} ({exc.strerror or exc}); "
                              "pick another port, or 0 for a free one")
            return
        print(f"judge simulator listening on {url}  (OpenAI: {url}/v1/chat/completions, Anthropic: {url}/v1/messages)", flush=True)
        await until_signal(runner)

    bind_error: list[str] = []
    anyio.run(serve)
    if bind_error:
        err.print(bind_error[0], highlight=False, markup=False, soft_wrap=True)
        return EXIT_BAD_INPUT
    return EXIT_OK
