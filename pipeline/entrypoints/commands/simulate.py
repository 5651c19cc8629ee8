"""`tracejudge simulate`: the judge simulator as a server of its own."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from tracejudge.entrypoints.commands.exits import EXIT_BAD_INPUT, EXIT_OK

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["command"]


def command(args: argparse.Namespace, err: Console) -> int:
    """`tracejudge simulate`: serve the judge simulator on 127.0.0.1 until a signal; exit 2 for a bad option or a port that cannot be bound."""
    import anyio
    from tracejudge.entrypoints.serve import until_signal
    from tracejudge.simulator.server import SimConfig, start_simulator

    for flag in ("error_rate", "agreement", "noise", "position_bias"):
        if not 0 <= getattr(args, flag) <= 1:
            err.print(f"--{flag.replace('_', '-')} must be between 0 and 1")
            return EXIT_BAD_INPUT
    config = SimConfig(latency_ms=args.latency_ms, rpm=args.rpm, tpm=args.tpm, error_rate=args.error_rate, seed=args.seed,
                       batch_completion_s=args.batch_completion_s, window=args.window, rate_headers=not args.no_rate_headers,
                       max_concurrency=args.max_concurrency, agreement=args.agreement, noise=args.noise, position_bias=args.position_bias,
                       json_object_only=args.json_object_only, tokenizer_factor=args.tokenizer_factor, context_tokens=args.context_tokens,
                       window_s=args.window_s, book=args.book, limit_count=args.limit_count)

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
