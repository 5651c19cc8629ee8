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
from tracejudge.engine.journal_counts import add_line_spend, sum_usage, transient_failure
from tracejudge.engine.result_lines import iter_result_lines, line_key, superseded_lines
from tracejudge.engine.segment_end import elapsed_note, last_sign_of_life, read_failed_ends, settle_segments

__all__ = ["HEAD", "LineCounts", "resumed_judge_block", "run_figures", "settled_segments"]

# The figures a run's summary.json starts with, in its order (`run_summary._build_summary`).
HEAD = ("tracejudge_version", "config_hash", "complete", "elapsed_s_total", "elapsed_measured")


class LineCounts:
    """What a resume counts from every line of results.jsonl, superseded ones too (`RunJournal._account`), for `report`
    on a killed run: what the lines say the judge spent (`spent`, a journal's `judge_spent`) and each (case, trial)'s
    transient failures (`failures`). `add` each standing result as it is read, then `add_superseded` once."""

    def __init__(self) -> None:
        self.spent = {"input_tokens": 0, "output_tokens": 0, "requests": 0, "answered": 0}
        self.failures: dict[tuple[str, int], int] = {}

    def add(self, result: Any) -> None:
        """Count one result line (a `CaseResult`)."""
        add_line_spend(self.spent, result)
        if transient_failure(result):
            key = (result.case_id, result.trial)
            self.failures[key] = self.failures.get(key, 0) + 1

    def add_superseded(self, path: Path) -> None:
        """Count the lines of results file `path` a later line replaced (`result_lines.superseded_lines`); one that does
        not read is left out, as the resume leaves it."""
        from tracejudge.core.records import CaseResult

        gone = superseded_lines(path)
        for i, raw in enumerate(iter_result_lines(path) if gone else ()):
            if i in gone:
                try:
                    self.add(CaseResult.model_validate_json(raw))
                except ValueError:
                    continue

    def retries_spent(self, max_retries: int) -> dict[str, Any]:
        """The summary's `{"retries_spent": {"results", "max_resume_retries"}}` as the resume writes it: the (case, trial)s
        whose failures are final because `max_retries` retries of each are spent; `{}` when there are none."""
        n = sum(1 for v in self.failures.values() if v > max_retries)
        return {"retries_spent": {"results": n, "max_resume_retries": max_retries}} if n else {}


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
    read_failed_ends(run_dir, segments)
    settle_segments(segments, tail, rebuilt=not trusted, lines=lines if trusted else 0, last_write=last_sign_of_life(run_dir))
    return [{k: v for k, v in seg.items() if k != "command"} for seg in segments]


def resumed_judge_block(run_dir: Path, config: Any, spent: dict[str, int], counts: dict[str, Any], tally: Any,
                        segments: list[dict[str, Any]]) -> dict[str, Any]:
    """The summary's `judge` block a resume of `run_dir` (killed, its `segments` settled: `settled_segments`) would write
    if it judged nothing: the same code on the same files. `config` is the run's (with a `judge` section), `spent` what
    all its result lines say the judge spent (a journal's `judge_spent`: `journal_counts.add_line_spend`), `counts`
    the judge gate's counts over the standing results (`journal_counts.standing_judge_counts`), `tally` their samples
    and panel counts (a `judge_stats.JudgeTally`, or None when none holds any).

    So it has what a resumed run's block has: the counters the killed segments' records kept (retries, 429s, what the
    cache saved) with `partial_counters`, the dollars priced as the judge stage prices them (`sync_equivalent_usd`), the
    `mode` and request settings; and the resume, reading it back as its earlier segments' block, computes what it would
    without it. No judge is made and nothing is sent."""
    from types import SimpleNamespace

    from tracejudge.engine.journal_counts import judge_block_with
    from tracejudge.engine.run_summary import _prior_judge, _with_in_flight, _with_killed_telemetry
    from tracejudge.llm.prices import price_for
    from tracejudge.stages.judge.calibration import Calibration
    from tracejudge.stages.judge.calls.stats import JudgeStats
    from tracejudge.stages.judge.judge_stats import JudgeTally, standing_block
    from tracejudge.stages.judge.panel import panel_members
    from tracejudge.stages.judge.stage_summary import judge_summary, priced_prior

    cfg = config.judge
    price = price_for(cfg.model, cfg.prices)
    # Judges made and idle, as a resume's are before their first request: every counter at 0, each member's price.
    # (none has asked its server what it serves: the earlier segments' record of the weights stands)
    judges = [(m.name, SimpleNamespace(stats=JudgeStats(), price=price_for(m.cfg.model, m.cfg.prices), explain=False, cfg=m.cfg,
                                       recorded_served=lambda: None))
              for m in panel_members(config)]
    state = {"judges": judges, "batches": None, "results": 0, "errors": 0, "quota_stopped": 0}
    block = judge_summary(state, priced_prior(_prior_judge(run_dir, spent), cfg, price), cfg, price, Calibration(cfg.calibration), JudgeTally())
    block = judge_block_with(standing_block(block, tally) if tally is not None else block, counts)
    return _with_in_flight(_with_killed_telemetry(block, run_dir, segments, None), run_dir)


def run_figures(run_dir: Path, judge: dict[str, Any] | None, segments: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The run-level figures of `run_dir`'s summary.json that its segments give, as a resume would write them now:
    `tracejudge_version` and `config_hash` (the manifest's, when it reads and has them), `elapsed_s_total` (seconds,
    summed over the segments), `elapsed_measured` (only when a segment was killed), `judge` (the summary's `judge`
    block, or for a run without one the block a run without a judge writes), `usage` (`{stage: {counter: total}}`, its
    judge counters those of the `judge` block, as a run writes them), `segments` and `configs` (only when segments ran
    with different configs). `segments`: `settled_segments(run_dir)`, when the caller has them."""
    from tracejudge.engine.run_summary import _same_telemetry, usage_judge_block

    try:
        manifest = store.read_manifest(run_dir, strict=False) or {}
    except (OSError, ValueError):
        manifest = {}
    segments = settled_segments(run_dir) if segments is None else segments
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
