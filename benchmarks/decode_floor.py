"""CPU seconds to decode + validate N native case lines (default 10,000), against the floor of the step.

The lines are `pipeline_throughput.py`'s (the 200 real GPT-4o τ-bench airline runs repeated under new ids).
Each row decodes every line in this process, `rounds` times, the rows taking turns within each round (so a
burst of other load falls on every row alike); the figure is a row's best round in CPU seconds
(`time.process_time`, the collector set as in `per_case_steps.best`):

- untyped JSON: `msgspec.json.decode`, no types checked (for reference only: it validates nothing);
- floor: msgspec `Struct`s mirroring the records, unknown fields refused (`fast_decode`'s own structs),
  nothing built from them: the least a validated decode of these lines costs in Python today;
- fast path: `fast_decode.decode`, the floor plus the pydantic records assembled from the structs;
- decode + validate: `extract_record` on the read lines, what a run calls (`per_case_steps.py`'s row);
- pydantic: `Case.model_validate_json`, the path a line takes when the fast path hands it over;
- repeated-key check: `json.loads` with an `object_pairs_hook` comparing an object's keys with its distinct
  ones, the cheapest way in Python to find a key written twice (msgspec, like pydantic-core and `json.loads`,
  keeps the last and has no hook to see the pairs); then the fast path followed by it, what refusing such keys
  would cost a run.

The last column is each row over the floor.

    python benchmarks/decode_floor.py [--n 10000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import gc
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import pipeline_throughput as pt  # noqa: E402
from per_case_steps import each  # noqa: E402


def _repeated_keys(line: bytes) -> Any:
    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out = dict(items)
        if len(out) != len(items):
            raise ValueError("a key written twice")
        return out

    return json.loads(line, object_pairs_hook=pairs)


def rows(cases: Path, rounds: int, out: dict[str, float]) -> None:
    """Fill `out` with each row's least CPU seconds so far (see the module docstring), round after round."""
    import msgspec
    from tracejudge.core import registry
    from tracejudge.core.records import Case
    from tracejudge.stages.extract import extract_record, fast_decode
    from tracejudge.stages.load import read_jsonl

    fmt = registry.format_for("native")
    raws = list(read_jsonl(cases))
    lines = [r.payload for r in raws]
    if fast_decode.decode(lines[0]) is None:
        raise SystemExit("the fast path refuses these lines (is msgspec installed?): nothing to compare")
    steps: dict[str, Callable[[], None]] = {
        "untyped JSON (msgspec, no checks)": each(msgspec.json.decode, lines),
        "floor: msgspec Structs, strict": each(fast_decode._DECODER.decode, lines),
        "fast path: fast_decode.decode": each(fast_decode.decode, lines),
        "decode + validate (extract_record)": each(lambda r: extract_record(r, fmt, None), raws),
        "pydantic Case.model_validate_json": each(Case.model_validate_json, lines),
        "repeated-key check (json pairs hook)": each(_repeated_keys, lines),
        "fast path + repeated-key check": each(lambda line: (fast_decode.decode(line), _repeated_keys(line)), lines),
    }
    gc.set_threshold(50_000, 20, 20)
    for _ in range(rounds):
        for name, step in steps.items():
            gc.collect()
            gc.freeze()
            t0 = time.process_time()
            step()
            took = time.process_time() - t0
            gc.unfreeze()
            out[name] = min(out.get(name, took), took)


def table(out: dict[str, float], n: int, rounds: int) -> None:
    """Print the rows measured so far."""
    floor = out.get("floor: msgspec Structs, strict")
    print(f"\ndecode + validate at {n:,} cases (CPU seconds, best of {rounds})\n")
    print(f"| {'step':<36} | {'CPU s':>7} | {'µs/case':>8} | {'× floor':>7} |")
    print(f"|{'-' * 38}|{'-' * 9}|{'-' * 10}|{'-' * 9}|")
    for name, s in out.items():
        ratio = f"{s / floor:.2f}" if floor else "-"
        print(f"| {name:<36} | {s:>7.3f} | {s / n * 1e6:>8.1f} | {ratio:>7} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="tj-decode-"))
    out: dict[str, float] = {}
    try:
        cases = work / "cases.jsonl"
        pt.write_dataset(cases, args.n, pt.base_cases())
        rows(cases, args.rounds, out)
    except Exception as exc:
        table(out, args.n, args.rounds)
        print(f"\nfailed: {type(exc).__name__}: {exc}", file=sys.stderr)
        raise SystemExit(1) from None
    finally:
        shutil.rmtree(work, ignore_errors=True)
    table(out, args.n, args.rounds)


if __name__ == "__main__":
    main()
