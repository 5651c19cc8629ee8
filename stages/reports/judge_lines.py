"""The judge's lines in the terminal summary: spending, batching, batch mode, calibration, samples, panel, labels."""

from __future__ import annotations

import html
from typing import Any

from tracejudge.core.inert_text import visible
from tracejudge.stages.aggregate.gate_judge import budget_caps
from tracejudge.stages.reports.judge_spend import in_flight_line

__all__ = ["budget_line", "judge_lines", "label_counts", "label_lines", "label_markdown", "label_problems", "quality_lines", "spend_line"]


def _dollars(value: float | None) -> str:
    """`$0.0123`, or `cost unknown` for dollars the summary has as null (tokens of a model without a price)."""
    return "cost unknown" if value is None else f"${value:.4f}"


def _member_failures(v: dict[str, Any]) -> str:
    """`, 36 parse failures, 2 judge errors` for a panel member that had any (none: ""): the score names the whole panel."""
    parts = [f"{v[k]} {what}" for k, what in (("parse_failures", "parse failures"), ("judge_errors", "judge errors")) if v.get(k)]
    return (" (" + ", ".join(parts) + ")") if parts else ""


def _priced_as(j: dict[str, Any]) -> str:
    """Whose prices the simulator's dollars are at: the panel's members when `judge.models` judged (the section's own
    `model` then asked nothing, and a panel of `simulator:gpt-4o` alone was said to cost gpt-4o-mini's prices), else
    the judge's model."""
    members = list((j.get("panel") or {}).get("models") or {})
    if len(members) > 1:
        return f"the prices of {', '.join(members[:-1])} and {members[-1]}"
    return f"{members[0] if members else j.get('model')}'s prices"


def spend_line(summary: dict[str, Any]) -> str:
    """The line saying what the judge sent and spent.

    A model without a price costs an unknown amount, not $0: `judge.cost_usd` is null then (a summary written before
    that has `priced: false` and 0), and the line names the models to price. So does a reply without usage
    (`usage_unknown_replies`): the line says how many, and that their tokens are estimates. A run billed no token (the
    cache answered it whole, or its connections were refused) cost $0, priced or not.
    """
    j = summary.get("judge") or {}
    cost = j.get("cost_usd", 0.0)
    no_usage = j.get("usage_unknown_replies") or 0
    billed = j.get("input_tokens") or j.get("output_tokens")
    if (cost is None or not j.get("priced", True)) and billed:  # (no token billed, refused connections included: $0 whatever the price)
        why = [f"{no_usage} {'reply' if no_usage == 1 else 'replies'} of the judge reported no usage; their tokens are estimated"] if no_usage else []
        if not no_usage or not j.get("priced", True):
            members = (j.get("panel") or {}).get("models") or {}
            # A panel's members that have no price (older summaries say only whose dollars are unknown); else the judge's model.
            models = ([m for m, v in members.items() if v.get("priced", v.get("cost_usd") is not None) is False] if members else [j.get("model")])
            if models:
                why.append(f"no price for {', '.join(map(repr, models))}; give one under judge.prices")
        money = f"cost unknown ({'; '.join(why)})"
    else:
        money = _dollars(cost)
        if j.get("provider") == "simulator" and cost:  # (what the demo's figure means: the simulator is free)
            money += f" at {_priced_as(j)} (simulated: nothing was spent)"
    return (f"judge: {j.get('requests', 0)} requests, {j.get('cache_hits', 0)} cache hits, "
            f"{j.get('input_tokens', 0):,} input + {j.get('output_tokens', 0):,} output tokens, {money}")


def budget_line(summary: dict[str, Any]) -> str | None:
    """The sentence saying the judge budget ran out and what it left unjudged, or `None` when nothing was skipped for it."""
    j = summary.get("judge") or {}
    skipped = int((summary.get("status") or {}).get("skipped_budget", 0))
    if not skipped:
        return None
    caps = budget_caps(summary)
    requests = j.get("skipped_budget_requests")
    sent = f"; {requests} judge requests not sent in this segment" if requests else ""
    return (f"judge budget ran out{f' (caps: {caps})' if caps else ''}: {skipped} results (case, trial) were not judged for it{sent}; "
            "their judge metrics are null. Raise the budget and resume the run to judge them (the judge budget check gives the command).")


def judge_lines(summary: dict[str, Any]) -> list[str]:
    """Plain-text lines about the judge for the terminal (none when the run had no judge)."""
    j = summary.get("judge") or {}
    budget = budget_line(summary)
    if not j.get("requests") and not j.get("cache_hits") and not j.get("calibration"):
        # (a run whose every prompt was too long sent nothing, and is told why its judge scores are null)
        return ([budget] if budget else []) + _too_long_lines(j) + quality_lines(summary)
    lines = [spend_line(summary)]
    if j.get("spend_note"):
        lines.append(j["spend_note"])  # (rebuilt by `report` without summary.json: where its figures came from)
    if flying := in_flight_line(summary):
        lines.append(flying)  # (requests a kill cut off in flight: their tokens and dollars are estimates)
    if j.get("repairs"):
        lines.append(f"judge repairs: {j['repairs']} repair requests, {j.get('repair_input_tokens', 0):,} input + "
                     f"{j.get('repair_output_tokens', 0):,} output tokens, {_dollars(j.get('repair_cost_usd', 0.0))}; "
                     f"parse failures {j.get('parse_failures', 0)}; {j.get('parse_failure_rate', 0.0):.1%} of judged scores left without a verdict by a reply that could not be "
                     "read (parse_error, truncated; other judge errors are counted apart)")
    if budget:
        lines.append(budget)
    if j.get("truncated_prompts"):
        lines.append(f"judge prompts truncated: {j['truncated_prompts']} too long for the judge's context were sent with middle steps left out "
                     "or oversized fields cut (too_long: truncate); each score's reason says what")
    if j.get("server_truncated_prompts"):
        n = j["server_truncated_prompts"]
        lines.append(f"judge server cut prompts: {n} {'reply' if n == 1 else 'replies'} counted far fewer prompt tokens than were sent, or "
                     "one count, a context size, for prompts of clearly different lengths, so the judge saw part of the trace; raise the server's context (Ollama: num_ctx / OLLAMA_CONTEXT_LENGTH) or set judge.context_tokens to it")
    if j.get("server_cut_replies"):
        n = j["server_cut_replies"]
        lines.append(f"judge server cut replies: {n} {'reply' if n == 1 else 'replies'} stopped (finish_reason length) under the "
                     "max_tokens asked (by the server's count; under half of it for a reply without usage): a cap of the server's own, which raising judge.max_tokens does not lift "
                     "(llama.cpp llama-server --n-predict, or its context per slot)")
    lines += _too_long_lines(j)
    if (partial := j.get("partial_counters") or {}).get("note"):
        lines.append(partial["note"])  # (the run's log says it too; `report` and a later reader see it only here)
    if j.get("error_kinds"):
        from tracejudge.stages.judge.error_note import error_line, where_of  # (`first_error`: `error_note.with_first_error`)

        lines.append(error_line(j["error_kinds"], j.get("first_error"), where_of(j.get("first_error"))) or "")
    if line := _timeouts_line(j):
        lines.append(line)
    if answered := int(j.get("rate_limited") or 0):  # (each was retried: a result left without a verdict by one is counted below)
        lines.append(f"judge 429s: {answered} {'request was' if answered == 1 else 'requests were'} answered 429 (rate limited) and "
                     "retried after the server's wait; limits.rpm and limits.tpm at the provider's limits send within them")
    limited = (summary.get("status") or {}).get("rate_limited", 0)
    if limited:
        lines.append(f"judge quota: {limited} results ended rate_limited ({j.get('quota_stopped', 0)} without a request once the daily quota "
                     "was spent); resume the run (its config and run directory) once the quota resets to judge them")
    if j.get("cache_errors"):
        lines.append(f"judge cache: {j['cache_errors']} reads/writes failed; judged without the cache (answers kept, not cached)")
    if (j.get("items_per_request") or 1) > 1:
        lines.append(f"judge batching: {j.get('items_per_request')} items per request; {j.get('items_batched', 0)} items in "
                     f"{j.get('multi_requests', 0)} shared requests, {j.get('items_reasked_alone', 0)} re-asked alone")
    if j.get("grouped_requests") or j.get("parts_reasked_alone"):
        lines.append(f"judge grouping: {j.get('grouped_requests', 0)} cases had every metric asked in one request the judge answered "
                     f"(answers from the cache not counted); {j.get('parts_reasked_alone', 0)} metrics re-asked alone")
    if j.get("mode") == "batch":
        lines.append(f"judge batch API: {j.get('batches_submitted', 0)} batches submitted, {j.get('batches_reattached', 0)} re-attached, "
                     f"{j.get('batch_resubmits', 0)} requests resubmitted; " + (
                         # (a model without a price is unknown, never $0, even before it billed anything)
                         "cost unknown (no price)" if j.get("cost_usd", 0.0) is None or not j.get("priced", True) else
                         f"${j['cost_usd']:.4f} at the batch price ({_dollars(j.get('sync_equivalent_usd', 0.0))} synchronously)"))
        if j.get("batch_unread_billed") or j.get("batch_nameless_unbilled"):
            lines.append(_unread_line(j))
    for metric, c in (j.get("calibration") or {}).items():
        if c.get("items"):
            lines.append(f"calibration {metric}: {c['items']} items judged alone and shared (batched or grouped); questions agree "
                         f"{c['question_agreement']:.1%}, scores equal {c['value_agreement']:.1%}, mean |diff| {c['mean_abs_diff']:.3f}")
        elif c.get("not_compared"):
            lines.append(f"calibration {metric}: no item compared alone and shared ({c['not_compared']} sampled items had a failed side)")
        r = c.get("render") or {}
        if r.get("items"):
            lines.append(f"calibration {metric}: {r['items']} items judged with the compact and the full trace (trace_format: full), "
                         f"{r.get('identical_render', 0)} of them rendered identically (no request); questions agree {r['question_agreement']:.1%}, "
                         f"scores equal {r['value_agreement']:.1%}, mean |diff| {r['mean_abs_diff']:.3f}")
        elif r.get("not_compared"):
            lines.append(f"calibration {metric}: no item compared compact and full ({r['not_compared']} sampled items had a failed side)")
    lines += quality_lines(summary)
    return lines


def _too_long_lines(j: dict[str, Any]) -> list[str]:
    """The line saying how many prompts could not fit the judge's context (none when none)."""
    if not j.get("too_long"):
        return []
    return [f"judge prompts too long: {j['too_long']} could not fit the judge's context and were not sent; their scores are null"]


def _timeouts_line(j: dict[str, Any]) -> str | None:
    """The line about timed-out judge requests: the advice to raise `judge.timeout_s` only while a standing score is
    left without a verdict by a timeout (`error_kinds.timeout`); `timeouts` counts every request that timed out, in
    every segment, so one a retry or a resume answered since is history, not something to fix."""
    requests, standing = int(j.get("timeouts") or 0), int((j.get("error_kinds") or {}).get("timeout", 0))
    if standing:
        now = f" (now {j['timeout_s']:g} s)" if j.get("timeout_s") is not None else ""
        # (a segment killed before its summary leaves the standing scores without their requests' count)
        what = f"{requests} requests got no reply in time" if requests else f"{standing} scores were left without a verdict by a timeout"
        return f"judge timeouts: {what}; raise judge.timeout_s{now} for a slow server"
    if requests:
        return f"judge timeouts: {requests} requests got no reply in time, all retried since (no score is left without a verdict by one)"
    return None


def quality_lines(summary: dict[str, Any]) -> list[str]:
    """How far the verdicts can be trusted: flakiness over samples, a panel's agreement, agreement with labels."""
    j = summary.get("judge") or {}
    lines = []
    for metric, s in (j.get("samples") or {}).items():
        lines.append(f"judge samples {metric}: {s['flaky']} of {s['items']} items flaky ({s['flakiness']:.1%}: samples disagree), "
                     f"flip rate {s['flip_rate']:.1%} of answers ({j.get('samples_per_request', '?')} samples each)")
    panel = j.get("panel") or {}
    for metric, p in (panel.get("metrics") or {}).items():
        kappa = "n/a" if p.get("fleiss_kappa") is None else f"{p['fleiss_kappa']:.3f}"
        agree = ", ".join(f"{m} {a:.1%}" for m, a in (p.get("agreement_with_panel") or {}).items()) or "none (no question had a majority)"
        tied = int(p.get("tied") or 0)
        # (Each model's agreement is with the others' majority, leave-one-out: `judge_stats`; the others' ties are left out
        # of that model's figure, which a tie of the whole panel does not decide.)
        # A graded metric's question (a Rubric's grade) with no majority grade is not lost: `majority` scores every graded
        # question with the panel's lower median grade (`repeat.combine_panel`); a yes/no question's tie goes against it.
        graded = bool(p.get("categories")) and all(_number(c) for c in p["categories"])
        ties = "" if not tied else (
            f"; {tied} of {p['subjects']} questions without a majority grade (no grade from more than half the panel: "
            "with aggregate majority the score takes the panel's lower median grade)" if graded else
            f"; {tied} of {p['subjects']} questions tied (no answer from more than half the panel: with aggregate majority a tie "
            "goes against the score)")
        lines.append(f"judge panel {metric}: Fleiss' kappa {kappa} over {p['subjects']} questions; agreement with the other models' "
                     f"majority: {agree}{ties}")
    if panel.get("models"):
        lines.append("judge panel spending: " + "; ".join(f"{m} {v.get('requests', 0)} requests {_dollars(v.get('cost_usd', 0.0))}"
                                                          + _member_failures(v) for m, v in panel["models"].items()))
    return lines + label_lines(summary.get("labels") or {})


def _number(text: Any) -> bool:
    """Whether a panel's answer category (`judge_stats`: answers as text) is a grade."""
    try:
        float(text)
    except (TypeError, ValueError):
        return False
    return True


def label_counts(block: dict[str, Any]) -> str:
    """The label counts of a `labels` block (`agreement.agreement_block`), which add up to its labels."""
    return (f"labels: {block.get('total_labels', 0)}, matched to verdicts: {block.get('matched', 0)}, not judged: "
            f"{block.get('not_judged', 0)}, no such case/metric: {block.get('unmatched', 0)}, out of range: {block.get('out_of_range', 0)}"
            + (f", true/false mixed with grades: {block['mixed_kinds']}" if block.get("mixed_kinds") else "")
            + (f"; besides, not a label: {block['not_labels']}" if block.get("not_labels") else ""))


def label_problems(block: dict[str, Any], first: int | None = None) -> list[str]:
    """The first `first` label problems of `block` (all it lists when `None`), then how many more there are and where."""
    listed = list(block.get("problems") or [])
    shown = listed if first is None else listed[:first]
    more = int(block.get("problem_count", len(listed))) - len(shown)
    if more > 0:
        where = "in summary.json `labels.problems` and " if len(listed) > len(shown) else ""
        shown.append(f"… and {more} more label problem(s) ({where}listed whole by `tracejudge calibrate CONFIG --json OUT`)")
    return shown


def _metric_lines(block: dict[str, Any]) -> list[str]:
    """A line per labelled metric: its cases and verdicts, accuracy with its Wilson interval, and κ named for what it is
    (Cohen's, or quadratic-weighted for grades) with its BCa case-bootstrap interval, marked when that is not informative."""
    lines = []
    for metric, m in (block.get("metrics") or {}).items():
        if not m.get("n"):
            lines.append(f"{metric}: no labelled verdict")
            continue
        ci, aci = m.get("kappa_ci"), m.get("accuracy_ci")
        what = "quadratic-weighted kappa" if m.get("kappa_kind") == "quadratic" else "Cohen's kappa"
        kappa = "n/a" if m.get("kappa") is None else f"{m['kappa']:.3f}" + (f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "")
        if m.get("kappa_ci_informative") is False:
            kappa += f" (CI not informative: {m.get('kappa_ci_why')})"
        cases = m.get("cases", m["n"])
        lines.append(f"{metric}: {cases} labelled case{'s' if cases != 1 else ''}, {m['n']} verdict{'s' if m['n'] != 1 else ''}, "
                     f"accuracy {m['accuracy']:.1%}" + (f" [{aci[0]:.1%}, {aci[1]:.1%}]" if aci else "")
                     + f", {what} {kappa}, {m.get('disagreeing', 0)} disagree")
    return lines


def label_lines(block: dict[str, Any], first: int | None = 5) -> list[str]:
    """The run's agreement with its labels: the counts, each metric's figures, then the first `first` problems with the
    labels (a mistyped case id or metric, an unreadable line), which a run used to keep to summary.json."""
    if not block:
        return []
    if block.get("error"):
        return [f"judge labels: {block['error']}"]
    problems = int(block.get("problem_count") or 0)
    return ([f"judge {label_counts(block)}" + (f"; {problems} problem(s) with the labels, below" if problems else "")]
            + [f"judge labels {line}" for line in _metric_lines(block)] + [f"  labels: {p}" for p in label_problems(block, first)])


def label_markdown(block: dict[str, Any]) -> str:
    """report.md's section on the labels: what `label_lines` says, with every problem the summary lists; "" without labels."""
    if not block:
        return ""
    if block.get("error"):
        return f"\n## Judge labels\n\n**{_md(block['error'])}**\n"
    out = ["", "## Judge labels", "", _md(label_counts(block)) + ".", "", *(f"- {_md(line)}" for line in _metric_lines(block))]
    if block.get("metrics"):
        # (Not the footer's CI, which is the bootstrap of the metrics' means.)
        from tracejudge.stages.judge.label_stats import MIN_CASES, MIN_OTHER

        out += ["", "Label agreement CIs are 95%: accuracy's the Wilson score interval, kappa's (and spearman's) a BCa bootstrap "
                f"over the labelled cases (a case's trials together), not informative under {MIN_CASES} labelled cases or under "
                f"{MIN_OTHER} labelled other than the most common label."]
    if block.get("problem_count"):
        out += ["", f"Problems with the labels ({block['problem_count']}):", "", *(f"- {_md(p)}" for p in label_problems(block))]
    return "\n".join(out) + "\n"


def _md(text: str) -> str:
    # Case ids and metric names come from a hand-made file: escaped as report.md escapes the dataset's text.
    return visible(html.escape(text, quote=False))


def _unread_line(j: dict[str, Any]) -> str:
    """What the batch API billed whose result line could not be read or named no request: paid, though no verdict came of it."""
    named = j.get("batch_nameless_billed", 0)
    line = (f"judge batch API: {j.get('batch_unread_billed', 0)} answers billed whose result line could not be read"
            + (f" ({named} naming no request, each billed as a request of its batch left without a result)" if named else "")
            + ", counted at their estimated prompt, no output; their requests were resubmitted")
    if j.get("batch_nameless_unbilled"):
        line += (f"; {j['batch_nameless_unbilled']} more lines naming no request than requests without a result, "
                 "not counted (their cost is not known)")
    return line
