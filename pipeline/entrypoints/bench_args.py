"""The arguments of `tracejudge bench` (see `tracejudge.entrypoints.bench`).

Apart from the bench itself, so that building the CLI's parser (every command,
`--help` included) does not import the judge's client, prices and rate limiter.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["add_parser"]


def add_parser(sub: Any) -> None:
    """Register `bench` on the CLI's subparsers."""
    b = sub.add_parser("bench", help="measure the judge endpoint's throughput, latency and cost with the config's own prompts, before a sweep")
    b.add_argument("config", type=Path, nargs="?", help="run config (its judge section and dataset); optional with --synthetic")
    b.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY.PATH=VALUE", help="override a config key (repeatable)")
    b.add_argument("--provider", choices=("openai", "anthropic", "simulator"), help="judge provider (overrides judge.provider)")
    b.add_argument("--base-url", help="the endpoint's base URL, e.g. http://gpu-box:8000/v1 (overrides judge.base_url)")
    b.add_argument("--model", help="the judge model (overrides judge.model; with a panel, judge.models, the member to measure)")
    b.add_argument("--requests", type=int, default=200, help="send at most N requests in all (default 200)")
    b.add_argument("--duration", type=float, default=30.0, metavar="S", help="seconds of the measured phase (default 30)")
    # Default None, not 1.0: the bench must tell a cap the user asked for (refused for a model without a price) from its own default.
    b.add_argument("--max-cost-usd", type=float, default=None,
                   help="stop before spending more (default $1; needs a price for the model, see judge.prices)")
    b.add_argument("--sample", type=int, default=20, metavar="N", help="cases of the dataset the requests are built from (default 20)")
    b.add_argument("--synthetic", action="store_true", help="send synthetic requests (no dataset needed)")
    b.add_argument("--prompt-tokens", type=int, default=1000, metavar="T", help="prompt tokens of a synthetic request")
    b.add_argument("--max-tokens", type=int, default=None, metavar="M", help="max_tokens of a synthetic request (default: judge.max_tokens)")
    b.add_argument("--max-level", type=int, default=256, help="highest concurrency the ramp tries")
    b.add_argument("--json", type=Path, metavar="FILE", help="write the report as JSON")
    b.add_argument("--dry-run", action="store_true", help="print the plan and the most it can cost; send nothing")
