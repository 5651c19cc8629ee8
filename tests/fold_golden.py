"""A τ-bench run whose summary, reports and folded aggregate are compared with a stored golden.

The golden (`tests/data/fold_golden.json`) was made from the code before the
fold, the bootstrap and the reports were rewritten for speed
(`python tests/fold_golden.py` writes it): the run must give the same figures,
the same report.md and junit.xml (up to the CI bounds, which are bootstrap
draws, and per-result durations, which are clock readings).
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "benchmarks")]

from helpers import DATA  # noqa: E402
from pipeline_throughput import CONFIG, base_cases  # noqa: E402

GOLDEN = HERE / "data" / "fold_golden.json"
TAU = DATA / "tau_bench"

# The six checks of `benchmarks/pipeline_throughput.py`, with breakdowns, small reservoirs (so replacements
# happen) and assertions (so the verdict is in the reports).
EXTRA = """\
aggregate: {group_by: [reward], seed: 3, reservoir_size: 150, group_reservoir_size: 40}
assertions:
  metrics:
    writes_exact: {min_mean: 0.45}
    "*": {max_error_share: 0.05}
"""


def write_cases(path: Path, copies: int = 2) -> None:
    """The 200 GPT-4o airline runs, `copies` times under new ids, with one malformed line in the middle."""
    lines = base_cases()
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(copies * len(lines)):
            if i == len(lines) // 2:
                fh.write('{"id": "broken", "trace": \n')
            line = lines[i % len(lines)]
            fh.write(f'{{"id":"tau-{i}"{line[line.index(","):]}\n')


def run_once(work: Path) -> Path:
    """Run the config above on the cases in `work`; returns the run directory."""
    import anyio
    from tracejudge.core.config import load_config
    from tracejudge.engine.runner import run

    cases = work / "cases.jsonl"
    if not cases.exists():
        write_cases(cases)
    run_dir = work / "run"
    cfg = work / "golden.yaml"
    cfg.write_text(CONFIG.format(cases=cases, run_dir=run_dir) + EXTRA)
    anyio.run(run, load_config(cfg, ["run.processes=1", "run.flush_every=64"]))
    return run_dir


def _without_ci(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: (None if k == "ci95" else _without_ci(v)) for k, v in x.items()}
    if isinstance(x, list):
        return [_without_ci(v) for v in x]
    return x


# Run-level figures that are clock readings or machine facts, not results.
_VOLATILE = ("elapsed_s_total", "segments", "usage", "configs", "tracejudge_version", "config_hash", "duration_s")


def normal_summary(run_dir: Path) -> dict[str, Any]:
    """summary.json without CI bounds and clock readings."""
    s = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    return _without_ci({k: v for k, v in s.items() if k not in _VOLATILE})


_CI_TEXT = re.compile(r"\[-?\d+(\.\d+)?(e-?\d+)?, -?\d+(\.\d+)?(e-?\d+)?\]")


def normal_markdown(run_dir: Path) -> str:
    """report.md with the CI bounds (`[low, high]`) blanked."""
    return _CI_TEXT.sub("[ci]", (run_dir / "report.md").read_text(encoding="utf-8"))


def normal_junit(run_dir: Path) -> str:
    """junit.xml with per-result durations blanked."""
    return re.sub(r' time="[0-9.]+"', ' time=""', (run_dir / "junit.xml").read_text(encoding="utf-8"))


def folded_state(run_dir: Path) -> dict[str, Any]:
    """The checkpoint's aggregate state without the summed durations (a clock reading)."""
    state = json.loads((run_dir / "checkpoint.json").read_text(encoding="utf-8"))["aggregator"]
    state.pop("duration_s")
    return state


def digest(run_dir: Path) -> dict[str, Any]:
    """What the golden keeps: the normalised summary and report.md, hashes of junit.xml and the folded state.

    The run's folder is written `WORK` (messages name the dataset file by its path).
    """
    work = str(run_dir.parent)
    return {
        "summary": json.loads(json.dumps(normal_summary(run_dir)).replace(work, "WORK")),
        "report_md": normal_markdown(run_dir).replace(work, "WORK"),
        "junit_sha256": hashlib.sha256(normal_junit(run_dir).replace(work, "WORK").encode()).hexdigest(),
        "state_sha256": hashlib.sha256(json.dumps(folded_state(run_dir), sort_keys=True).encode()).hexdigest(),
    }


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        d = digest(run_once(Path(tmp)))
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    GOLDEN.write_text(json.dumps(d, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {GOLDEN}")
