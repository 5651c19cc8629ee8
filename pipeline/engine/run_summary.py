"""The run's `summary.json` body and what earlier segments spent on the judge, from recorded state only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tracejudge.engine import manifest as manifest_mod
from tracejudge.engine.checkpoint import RunJournal
from tracejudge.engine.journal_counts import worker_died


def _prior_judge(run_dir: Path, spent: dict[str, int]) -> dict[str, Any]:
    """What earlier segments spent on the judge: their summary block, corrected by the results.

    A segment killed with SIGKILL never wrote its summary, but its results carry
    the tokens each score cost, and the spend journal (`judge_spend.jsonl`,
    `tracejudge.llm.spend_journal`) every answer paid for, including those
    whose case had no result line yet at the kill; the larger is what was
    spent, so the budget and the summary hold across a kill (only requests
    in flight at the kill are unseen).
    """
    from tracejudge.llm.spend_journal import spend_totals

    block = dict(_prior_block(run_dir, "judge") or {})

    def tokens(d: dict[str, Any]) -> int:
        return int(d.get("input_tokens") or 0) + int(d.get("output_tokens") or 0)

    if tokens(spent) > tokens(block):
        block["input_tokens"], block["output_tokens"] = spent["input_tokens"], spent["output_tokens"]
        block["requests"] = max(int(block.get("requests", 0)), spent["requests"])
        block["answered"] = max(int(block.get("answered", 0)), spent.get("answered", 0))
        block["cost_usd"] = block["sync_equivalent_usd"] = None  # unknown here: the judge stage prices the tokens
    paid = spend_totals(run_dir)
    if paid is not None and tokens(paid) > tokens(block):
        block["input_tokens"], block["output_tokens"] = paid["input_tokens"], paid["output_tokens"]
        block["requests"] = max(int(block.get("requests", 0)), paid["requests"])
        block["cost_usd"], block["sync_equivalent_usd"] = paid["cost_usd"], None  # the journal has the dollars paid
    return block


def _with_killed_telemetry(block: dict[str, Any], recorded: dict[str, float]) -> dict[str, Any]:
    """The judge `block` with each telemetry counter (`stage_summary.TELEMETRY`: cache hits, retries, what the cache saved)
    raised to the sum the segments recorded at their checkpoints, when that is larger.

    The block adds this segment's counters to the last summary written (`_prior_judge`); a segment killed with SIGKILL
    wrote none, so what it counted was missing (526 cache hits of 2,799 after two kills). Its record holds the counters as
    they stood at its last checkpoint: the sum over segments is then the larger. (Segments recorded before segments
    kept these have none: the block's figure stands.)
    """
    from tracejudge.stages.judge.stage_summary import TELEMETRY

    for k in TELEMETRY:
        got, have = recorded.get(k), block.get(k)
        if isinstance(got, (int, float)) and isinstance(have, (int, float)) and not isinstance(have, bool) and got > have:
            block[k] = round(got, 6) if isinstance(got, float) else got
    return block


def _prior_block(run_dir: Path, name: str) -> dict[str, Any] | None:
    try:
        block = json.loads((run_dir / "summary.json").read_text()).get(name)
    except (OSError, ValueError, AttributeError):
        return None
    return block if isinstance(block, dict) else None


def _build_summary(
    journal: RunJournal, manifest: dict[str, Any], complete: bool, blocks: dict[str, dict[str, Any]] | None = None
) -> dict[str, Any]:
    # Built only from recorded state (no clock reading), so a resume that adds nothing
    # gives a byte-identical summary. A stage's own block (the judge's, which carries
    # its earlier segments' spending) replaces the one summed from segment usage.
    totals = journal.totals()
    judge: dict[str, Any] = {"requests": 0, "cache_hits": 0, "retries": 0, "rate_limited": 0, "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0}
    for k, v in totals["usage"].get("judge", {}).items():
        judge[k] = judge.get(k, 0) + v
    if blocks and "judge" in blocks:  # the gate's counts, rebuilt from results.jsonl (true after a kill)
        blocks = {**blocks, "judge": _with_killed_telemetry(journal.fix_judge_block(blocks["judge"]), totals["usage"].get("judge", {}))}
    # Failures the same command no longer retries: said beside the status counts, so a FAIL is not read as retried away.
    spent, _ = journal.spent_retries()
    # Results never scored because the worker process scoring them died: counted among `invalid_input` by status, but
    # a failure of the run, not of a record; the gate fails on them (`gate.worker_error_check`).
    died = worker_died(journal.provisional.values())
    return {
        "tracejudge_version": manifest["tracejudge_version"],
        "config_hash": manifest["config_hash"],
        "complete": complete,
        "elapsed_s_total": totals["elapsed_s"],
        **journal.summary_aggregate().summary(),
        **({"retries_spent": {"results": spent, "max_resume_retries": journal.max_retries}} if spent else {}),
        **({"worker_errors": died} if died else {}),
        "judge": judge,
        **(blocks or {}),
        "usage": totals["usage"],
        # The command that resumes a segment is the checkpoint's (for `tracejudge report`), not a figure of the run.
        "segments": [{k: v for k, v in seg.items() if k != "command"} for seg in journal.segments],
        **({"configs": mixed} if (mixed := manifest_mod.configs_by_segment(manifest, journal.segments)) else {}),
    }
