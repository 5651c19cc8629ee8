"""The run-level figures of a run that did not finish, read from its files as the resume will record them: for `report`.

A segment killed with SIGKILL writes no summary, so `tracejudge report` on such a run had no `segments`, `usage` or
`elapsed_s_total` to keep, and its summary.json went without the sections a finished run's has. The checkpoint keeps
the segments' records as of its last write; the results written after it are the killed segment's, and the files'
modification times say when it was last alive. `run_figures` settles them as the resume does
(`segment_end.settle_segments`), on a copy: reading writes nothing.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from tracejudge.engine import manifest_history, store
from tracejudge.engine.checkpoint_sanity import typed_segments
from tracejudge.engine.journal_counts import sum_usage
from tracejudge.engine.result_lines import iter_result_lines, line_key
from tracejudge.engine.segment_end import elapsed_note, last_sign_of_life, settle_segments

__all__ = ["HEAD", "run_figures", "settled_segments"]

# The figures a run's summary.json starts with, in its order (`run_summary._build_summary`).
HEAD = ("tracejudge_version", "config_hash", "complete", "elapsed_s_total", "elapsed_measured")


def settled_segments(run_dir: Path) -> list[dict[str, Any]]:
    """`run_dir`'s segment records (`checkpoint.json`'s) as the next resume settles them: a segment still `running` (no
    process holds the run) is `killed`, with the results written after the checkpoint and its time to its last write.
    Without a checkpoint, or with one that does not read or whose segments are mistyped, `[]`, as the resume then
    starts the history again. The records hold no `command` (the checkpoint's, for `report`'s resume line)."""
    try:
        cp = json.loads(store.read_text(run_dir / store.CHECKPOINT))
    except (OSError, ValueError):
        return []
    raw = cp.get("segments") if isinstance(cp, dict) else None
    if not isinstance(raw, list) or not all(isinstance(s, dict) for s in raw) or typed_segments(raw)[1] is not None:
        return []
    segments = copy.deepcopy(raw)
    results = run_dir / store.RESULTS
    claimed, crc, lines = (cp.get(k) for k in ("results_bytes", "results_crc32", "results_lines"))
    # The resume attributes the results after the checkpoint only when the file holds what the checkpoint claims.
    trusted = all(isinstance(x, int) and not isinstance(x, bool) for x in (claimed, crc, lines))
    try:
        trusted = trusted and results.stat().st_size >= claimed and store.file_crc32(results, claimed) == crc
        tail = sum(1 for line in iter_result_lines(results, claimed if trusted else 0) if line_key(line) is not None)
    except OSError:
        trusted, tail = False, 0
    settle_segments(segments, tail, rebuilt=not trusted, lines=lines if trusted else 0, last_write=last_sign_of_life(run_dir))
    return [{k: v for k, v in seg.items() if k != "command"} for seg in segments]


def run_figures(run_dir: Path, judge: dict[str, Any] | None) -> dict[str, Any]:
    """The run-level figures of `run_dir`'s summary.json that its segments give, as a resume would write them now:
    `tracejudge_version` and `config_hash` (the manifest's, when it reads and has them), `elapsed_s_total` (seconds,
    summed over the segments), `elapsed_measured` (only when a segment was killed), `judge` (the summary's `judge`
    block, or for a run without one the block a run without a judge writes), `usage` (`{stage: {counter: total}}`, its
    judge counters those of the `judge` block, as a run writes them), `segments` and `configs` (only when segments ran
    with different configs)."""
    from tracejudge.engine.run_summary import _same_telemetry, usage_judge_block

    try:
        manifest = store.read_manifest(run_dir, strict=False) or {}
    except (OSError, ValueError):
        manifest = {}
    segments = settled_segments(run_dir)
    usage = sum_usage(segments)
    default_judge = usage_judge_block(usage)
    if isinstance(judge, dict):
        _same_telemetry(usage.get("judge"), judge)
    out: dict[str, Any] = {k: manifest[k] for k in ("tracejudge_version", "config_hash") if isinstance(manifest.get(k), str)}
    out["elapsed_s_total"] = round(sum(float(s.get("elapsed_s") or 0.0) for s in segments), 3)
    if note := elapsed_note(segments):
        out["elapsed_measured"] = note
    out.update(judge=judge if isinstance(judge, dict) else default_judge, usage=usage, segments=segments)
    if mixed := manifest_history.configs_by_segment(manifest, segments):
        out["configs"] = mixed
    return out
