"""The run's `summary.json` body and what earlier segments spent on the judge, from recorded state only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tracejudge.engine import manifest_history
from tracejudge.engine import store
from tracejudge.engine.checkpoint import RunJournal
from tracejudge.engine.journal_counts import worker_died
from tracejudge.engine.segment_end import elapsed_note


def _prior_judge(run_dir: Path, spent: dict[str, int]) -> dict[str, Any]:
    """What earlier segments spent on the judge: their summary block, corrected by the results.

    A segment killed with SIGKILL never wrote its summary, but its results carry
    the tokens each score cost, and the spend journal (`judge_spend.jsonl`,
    `tracejudge.llm.spend_journal`) every attempt sent and every answer paid
    for, including those whose case had no result line yet at the kill and
    the requests in flight at the kill (at their estimated prompt tokens);
    the larger is what was spent, so the budget and the summary hold across
    a kill. Its requests are every attempt sent, whatever the tokens say (a
    killed segment's failed attempts billed none); its answers every answer
    paid for, and a panel's figures per model are recounted from it too.
    """
    from tracejudge.llm.spend_journal import spend_totals
    from tracejudge.stages.judge.panel_spend import with_journal_models

    block = dict(_prior_block(run_dir, "judge") or {})

    def tokens(d: dict[str, Any]) -> int:
        return int(d.get("input_tokens") or 0) + int(d.get("output_tokens") or 0)

    if tokens(block) and "sync_equivalent_usd" not in block:
        # `tracejudge report` on a killed run rebuilds the spending from the spend journal, which holds no sync-equivalent
        # dollars: unknown, so the judge stage prices the tokens, as it does with no summary at all. Read as absent, they
        # were $0, and the resume's figure was only its own segment's.
        block["sync_equivalent_usd"] = None

    recovered = tokens(spent) > tokens(block)
    if recovered:
        block["input_tokens"], block["output_tokens"] = spent["input_tokens"], spent["output_tokens"]
        block["requests"] = max(int(block.get("requests", 0)), spent["requests"])
        block["answered"] = max(int(block.get("answered", 0)), spent.get("answered", 0))
        block["cost_usd"] = block["sync_equivalent_usd"] = None  # unknown here: the judge stage prices the tokens
    paid = spend_totals(run_dir)
    if paid is not None and paid["requests"] > int(block.get("requests") or 0):
        block["requests"] = paid["requests"]  # (a summary counts every attempt sent, as the journal does: never fewer)
    if paid is not None and tokens(paid) > tokens(block):
        block["input_tokens"], block["output_tokens"] = paid["input_tokens"], paid["output_tokens"]
        block["cost_usd"], block["sync_equivalent_usd"] = paid["cost_usd_exact"], None  # the journal has the dollars paid
    elif paid is not None and recovered and tokens(paid) == tokens(block) and paid["cost_usd_exact"] > 0:
        # The result lines hold the tokens the journal billed: its dollars are what they cost (at the batch price in batch
        # mode, which the judge stage, pricing the tokens, took synchronously: twice what was paid). A model without a
        # price journals $0: its dollars stay unknown.
        block["cost_usd"] = paid["cost_usd_exact"]
    elif paid is not None and tokens(paid) == tokens(block) and isinstance(cost := block.get("cost_usd"), (int, float)) \
            and round(paid["cost_usd_exact"], 6) == cost:
        # The summary's dollars are rounded to 6 places, the journal's are not: carried on rounded, each segment's
        # rounding added up (a run stopped twice ended a millionth below the same run unstopped).
        if block.get("sync_equivalent_usd") == cost:  # (paid at the sync price: no batch discount)
            block["sync_equivalent_usd"] = paid["cost_usd_exact"]
        block["cost_usd"] = paid["cost_usd_exact"]
    # The answers the journal marks (a killed segment's too, whether or not their cases got a line), and a panel's
    # spending per model, which no result line holds (`stages.judge.panel_spend`).
    return with_journal_models(block, run_dir)


def _with_killed_telemetry(block: dict[str, Any], run_dir: Path, segments: list[dict[str, Any]], current: dict[str, Any] | None) -> dict[str, Any]:
    """The judge `block` with each telemetry counter (`stage_summary.TELEMETRY`: cache hits, retries, what the cache saved)
    raised to the sum over the run's `segments`, when that is larger, and with `partial_counters` when some of them
    leave out results a killed segment wrote.

    The block adds this segment's (`current`'s) counters to the last summary written (`_prior_judge`); a segment killed
    with SIGKILL wrote none, so what it counted was missing (526 cache hits of 2,799 after two kills). Its record holds
    the counters as they stood at its last checkpoint. Those a result line also holds (`stage_summary.FROM_LINES`: cache
    hits) are counted from the lines it wrote instead (`_killed_lines`), so a killed and resumed run counts what an unkilled
    one does; the others stay short by what it did after that checkpoint, and `partial_counters` says for how many
    results. (Segments recorded before segments kept these have none: the block's figure stands.) `current` is None for
    a run no segment is writing (`tracejudge report` on a killed run: `segments_read.resumed_judge_block`).
    """
    from tracejudge.stages.judge.stage_summary import FROM_LINES, TELEMETRY

    killed = [i for i, seg in enumerate(segments) if seg.get("ended") in _UNSUMMED and seg is not current]
    lines = _killed_lines(run_dir, segments, killed) if killed else {}
    recorded: dict[str, float] = {}
    for i, seg in enumerate(segments):
        usage = dict((seg.get("usage") or {}).get("judge") or {})
        if lines is not None and i in lines:
            usage.update(zip(FROM_LINES, lines[i][0], strict=True))
        for k in TELEMETRY:
            if isinstance(v := usage.get(k), (int, float)) and not isinstance(v, bool):
                recorded[k] = recorded.get(k, 0) + v
    for k in TELEMETRY:
        got, have = recorded.get(k), block.get(k)
        if isinstance(got, (int, float)) and isinstance(have, (int, float)) and not isinstance(have, bool) and got > have:
            block[k] = round(got, 6) if isinstance(got, float) else got
    short = [(segments[i], None if lines is None else lines[i][1]) for i in killed]
    if short := [(seg, n) for seg, n in short if n != 0]:
        block["partial_counters"] = _partial(block, short, [k for k in TELEMETRY if k not in FROM_LINES])
    return dict(sorted(block.items()))


# How a segment ends when it writes no summary, so that its counters are only those its record kept.
_UNSUMMED = ("killed", "error")


def _partial(block: dict[str, Any], short: list[tuple[dict[str, Any], int | None]], counters: list[str]) -> dict[str, Any]:
    """The judge block's `partial_counters`: which `counters` leave out results, the killed segments that wrote them
    (`short`: each with how many judged results it wrote after its counters were last recorded, None when not known) and
    the sentence that says so."""
    judged = int(block.get("judged_results") or 0)
    known = all(n is not None for _, n in short)
    left = min(judged, sum(n or 0 for _, n in short))
    names = [f"{seg.get('segment')} ({'killed' if seg.get('ended') == 'killed' else 'stopped by a write error'})" for seg, _ in short]
    who = f"segment {names[0]}" if len(names) == 1 else f"segments {', '.join(names[:-1])} and {names[-1]}"
    its = "its last checkpoint" if len(names) == 1 else "their last checkpoints"
    cover = f"cover {judged - left:,} of the run's {judged:,} judged results" if known else "cover part of the run"
    note = (f"judge counters {cover}: {who} wrote {f'{left:,} ' if known else ''}judged results after {its}, and what the judge did "
            "after that is not in retries, rate_limited (429s), queued_s and slept_s (time queued), saved_tokens and saved_usd (what "
            "the cache saved) or its other request counters, which no result line holds; cache_hits is counted from the result "
            "lines, all of them")
    out: dict[str, Any] = {"counters": counters, "segments": [int(seg.get("segment") or 0) for seg, _ in short], "note": note}
    if known:
        out.update(judged_results=judged, results_counted=judged - left, results_left_out=left)
    return out


def _killed_lines(run_dir: Path, segments: list[dict[str, Any]], killed: list[int]) -> dict[int, tuple[tuple[int, ...], int]] | None:
    """`{index in segments: ((each FROM_LINES counter over its lines), the judged results among them written after its
    counters were last recorded)}` for the `killed` segments, from the lines of results.jsonl each wrote; None when the
    segments claim more lines than the file holds.

    Segments write their lines one after another, so the last `results` lines are the last segment's, the ones before
    them the one before's, and so on (lines from before the segments recorded are the file's first). A damaged line,
    which no segment counts, moves the lines of the segments before it by one. A line is after the counters when it
    starts past the size results.jsonl had when they were recorded (`stage_summary.COUNTED_AT`; all of a segment's lines
    when it recorded none).
    """
    from tracejudge.stages.judge.stage_summary import COUNTED_AT

    path = run_dir / store.RESULTS
    if not path.exists():  # (killed before its first result was written: `tracejudge report` reads such a run)
        return None if any(int(segments[i].get("results") or 0) for i in killed) else {i: ((0,), 0) for i in killed}
    total = sum(1 for _ in store.iter_result_lines(path))
    spans: dict[int, tuple[int, int, float]] = {}
    end = total
    for i in range(len(segments) - 1, -1, -1):
        start = end - int(segments[i].get("results") or 0)
        if start < 0:
            return None
        if i in killed:
            spans[i] = (start, end, float(((segments[i].get("usage") or {}).get("judge") or {}).get(COUNTED_AT) or 0))
        end = start
    counts = {i: [0, 0] for i in spans}
    last = max((b for _, b, _ in spans.values()), default=0)
    n = offset = 0
    with open(path, "rb") as fh:
        for raw in fh:
            at, offset = offset, offset + len(raw)
            if not (raw.endswith(b"\n") and raw.strip()):  # (not a result line: `store.iter_result_lines`)
                continue
            if n >= last:
                break
            for i, (a, b, counted_at) in spans.items():
                if a <= n < b:
                    hits, judged = _line_judge(raw)
                    counts[i][0] += hits
                    counts[i][1] += int(judged == 1 and at >= counted_at)
            n += 1
    return {i: ((hits,), after) for i, (hits, after) in counts.items()}


def _line_judge(raw: bytes) -> tuple[int, int]:
    """(the requests the cache answered, 1 when the judge judged it) of one result line; (0, 0) for a line that does not read.

    A score's `judge.cached_requests`, as the judge counts `cache_hits`: one multi-item request the cache answered whole
    (`details.batch` without its `cached` mark) once, on its first item; an item found in the cache on its own once per
    item. A result is judged as `journal_counts._judge_gate_counts` says.
    """
    import msgspec  # (a dependency; imported by the runs that had a segment killed only)

    try:
        body = msgspec.json.decode(raw)
    except msgspec.DecodeError:
        return 0, 0
    if not isinstance(body, dict):
        return 0, 0
    hits, judged = 0, body.get("status") in ("judge_error", "rate_limited", "skipped_budget")
    for score in (body.get("scores") or {}).values() if isinstance(body.get("scores"), dict) else ():
        info = score.get("judge") if isinstance(score, dict) else None
        if not isinstance(info, dict):
            continue
        judged = True
        details = score.get("details")
        batch = details.get("batch") if isinstance(details, dict) else None
        n = info.get("cached_requests")
        if isinstance(n, int) and (not isinstance(batch, dict) or batch.get("cached") or not batch.get("position")):
            hits += n
    return hits, int(judged)


def _with_in_flight(block: dict[str, Any], run_dir: Path) -> dict[str, Any]:
    """The judge `block` with `in_flight_at_stop` when the spend journal holds requests sent and never answered, in flight
    when a segment was killed: `{requests, input_tokens_estimated, cost_usd_estimated}`, the part of the block's requests,
    input tokens and dollars that is theirs (`_prior_judge` took them from the journal), tokens as the client estimated
    the prompts, dollars at the model's price (null for a judge without a price, whose dollars are unknown).

    Built at a segment's end, when its own attempts are all settled (`SpendJournal.close`): what the journal leaves
    unsettled is the earlier segments' and stays so, so a resume that adds nothing gives the same block."""
    from tracejudge.llm.spend_journal import spend_totals

    paid = spend_totals(run_dir)
    stopped = dict((paid or {}).get("in_flight_at_stop") or {})
    if not stopped.get("requests"):
        return block
    if block.get("priced") is False:
        stopped["cost_usd_estimated"] = None
    return dict(sorted({**block, "in_flight_at_stop": stopped}.items()))


def _prior_block(run_dir: Path, name: str) -> dict[str, Any] | None:
    try:
        block = json.loads(store.read_text(run_dir / store.SUMMARY)).get(name)
    except (OSError, ValueError, AttributeError):
        return None
    return block if isinstance(block, dict) else None



def _same_telemetry(used: dict[str, Any] | None, block: dict[str, Any]) -> None:
    """The top-level `usage.judge`'s telemetry counters (`stage_summary.TELEMETRY`) set to the judge block's, in place.

    `usage` sums the segments' own records, and a segment killed with SIGKILL recorded its counters at its last
    checkpoint only: `cache_hits` there was short of the judge block's, which counts them from the result lines the
    killed segment wrote (313 beside 328 for one figure, after two kills). The run's figure is the block's; each
    segment's own record stays in `segments`."""
    from tracejudge.stages.judge.stage_summary import TELEMETRY

    for k in TELEMETRY:
        if used is not None and k in used and isinstance(v := block.get(k), (int, float)) and not isinstance(v, bool):
            used[k] = v


def usage_judge_block(usage: dict[str, dict[str, float]]) -> dict[str, Any]:
    """The summary's `judge` block of a run whose judge stage made none (no judge configured): its counters at 0 plus
    what the segments' `usage.judge` sums hold. Takes `COUNTED_AT` out of `usage` (in place): a position in each
    segment's record, whose sum means nothing."""
    from tracejudge.stages.judge.stage_summary import COUNTED_AT

    judge: dict[str, Any] = {"requests": 0, "cache_hits": 0, "retries": 0, "rate_limited": 0, "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0}
    used = usage.get("judge") or {}
    used.pop(COUNTED_AT, None)
    for k, v in used.items():
        judge[k] = judge.get(k, 0) + v
    return judge


def _build_summary(
    journal: RunJournal, manifest: dict[str, Any], complete: bool, blocks: dict[str, dict[str, Any]] | None = None
) -> dict[str, Any]:
    # Built only from recorded state (no clock reading), so a resume that adds nothing
    # gives a byte-identical summary. A stage's own block (the judge's, which carries
    # its earlier segments' spending) replaces the one summed from segment usage.
    totals = journal.totals()
    judge = usage_judge_block(totals["usage"])
    if blocks and "judge" in blocks:  # the gate's counts, rebuilt from results.jsonl (true after a kill)
        block = _with_killed_telemetry(journal.fix_judge_block(blocks["judge"]), journal.run_dir, journal.segments, journal.segment)
        block = _with_in_flight(block, journal.run_dir)
        blocks = {**blocks, "judge": block}  # (its `partial_counters` note ends the terminal summary: `judge_lines`)
        _same_telemetry(totals["usage"].get("judge"), block)
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
        **({"elapsed_measured": note} if (note := elapsed_note(journal.segments)) else {}),
        **journal.summary_aggregate().summary(),
        **({"retries_spent": {"results": spent, "max_resume_retries": journal.max_retries}} if spent else {}),
        **({"worker_errors": died} if died else {}),
        "judge": judge,
        **(blocks or {}),
        "usage": totals["usage"],
        # The command that resumes a segment is the checkpoint's (for `tracejudge report`), not a figure of the run.
        "segments": [{k: v for k, v in seg.items() if k != "command"} for seg in journal.segments],
        **({"configs": mixed} if (mixed := manifest_history.configs_by_segment(manifest, journal.segments)) else {}),
    }
