"""`tracejudge estimate`: what a run's judge would cost, before any call."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from tracejudge.core.inert_text import CONTROL, DOUBLED, INVISIBLE, visible
from tracejudge.entrypoints.commands.exits import EXIT_BAD_INPUT, EXIT_OK

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["command"]


def command(args: argparse.Namespace, config, err: Console) -> int:
    """`tracejudge estimate`: the judge requests, tokens and dollars a run of the config would spend, per metric, before any call.

    Exit 2 when the config has no LLM-judge metric. `--run-dir` is the run directory as `tracejudge run --run-dir` takes it
    (relative to the current directory), in place of the config's `run.dir`.
    """
    from rich import box
    from rich.table import Table
    from tracejudge.core.console import cell, fitted, stdout_console
    from tracejudge.stages.judge.estimate import estimate, judge_metrics

    if not judge_metrics(config):
        err.print(f"error: {args.config}: no LLM-judge metric in `metrics:` (`tracejudge list metrics` marks them), "
                  "so a run sends nothing to a judge and costs nothing", highlight=False, markup=False, soft_wrap=True)
        return EXIT_BAD_INPUT
    if getattr(args, "run_dir", None) is not None:  # (as `run` takes it: the resume it prices runs there)
        config = config.model_copy(update={"run": config.run.model_copy(update={"dir": args.run_dir})})
    if args.show_prompt is not None:
        return _show_prompt(args, config)
    if args.json:
        err.print("error: --json goes with --show-prompt CASE_ID (the table has no JSON form)", highlight=False, markup=False, soft_wrap=True)
        return EXIT_BAD_INPUT
    got = estimate(config)
    rows = [*got["metrics"].items(), ("total", got["total"])]

    def build(level: int, name: Callable[[str], str]) -> Table:
        table = Table(title=f"judge estimate ({got['model']}; before any call)", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False,
                      collapse_padding=True)
        table.add_column("metric", no_wrap=True)  # names wrap between words (`fitted`), never mid-word: a cut one looked like its neighbour
        for col in ("cases", "requests", "cache\nhits", "input\ntokens", "cached\n(provider)", "output\ntokens\n(est.)", "dollars"):
            table.add_column(col, justify="right", no_wrap=True)
        for key, e in rows:
            dollars = f"${e.cost_usd:,.4f}" if got["priced"] else "no price"
            table.add_row(cell(name(key)), f"{e.cases:,}", f"{e.requests:,}", f"{e.cache_hits:,}", f"{e.input_tokens:,}", f"{e.cached_input_tokens:,}",
                          f"{e.output_tokens:,}", dollars)
        return table

    console = stdout_console()
    table = fitted(console, build, 1)
    console.print(table)
    if got["finished"]:  # (a resume skips them: only what it will do is priced)
        what = "cases" if got["trials"] == 1 else "(case, trial) pairs"
        said = (f"all {got['of']:,} {what} already finished in {got['run_dir']}: a resume sends nothing; priced as a fresh run "
                "(run --fresh)" if got["all_finished"] else
                f"{got['finished']:,} of {got['of']:,} {what} already finished in {got['run_dir']}: not priced")
        console.print(said, highlight=False, markup=False, soft_wrap=True)
    console.print(f"judge.group: {got['group']} (a row naming several metrics is one request per case asking them all); "
                  f"mode: {got['mode']}; items per request: {got['items_per_request']}", highlight=False)
    for line in _judges_lines(got):
        console.print(line, highlight=False, soft_wrap=True)
    if got["calibration"] is not None:
        console.print(_calibration_line(got["calibration"]), highlight=False, markup=False)
    lo, hi = got["range"]["low"], got["range"]["high"]
    money = f", ${lo['cost_usd']:,.4f}–${hi['cost_usd']:,.4f}" if got["priced"] else ""
    console.print(f"range: {lo['requests']:,}–{hi['requests']:,} requests, {lo['input_tokens']:,}–{hi['input_tokens']:,} input and "
                  f"{lo['output_tokens']:,}–{hi['output_tokens']:,} output tokens{money} ({_range_why(got)})", highlight=False)
    b, t = got["budget"], got["total"]
    if b["max_judge_tokens"] is not None or b["max_cost_usd"] is not None:
        console.print(_budget_line(got), highlight=False, markup=False)
    if t.truncated or t.too_long:
        console.print(f"too long for the judge's context (judge.too_long: {config.judge.too_long if config.judge else 'truncate'}): {t.truncated:,} requests "
                      f"priced as fitted (steps left out or fields cut, as the run sends them), {t.too_long:,} left out (the run sends nothing for them)",
                      highlight=False)
    if got["invalid_cases"]:
        console.print(f"{got['invalid_cases']} records are invalid and were left out (`tracejudge extract` lists them)", highlight=False)
    return EXIT_OK


def _budget_line(got: dict) -> str:
    """The caps against what the run will have spent when it ends: what its earlier segments spent in the run directory
    (the caps are for the whole run: a resume's budget starts from it) plus the range of what is left, each end."""
    b, (lo, hi) = got["budget"], (got["range"]["low"], got["range"]["high"])
    spent = b["spent"] or {"tokens": 0, "cost_usd": 0.0, "requests": 0}
    where = ("priced as a fresh run (run --fresh: a new directory, which starts from nothing)" if got["all_finished"] else
             f"the caps are for the whole run in {got['run_dir']}, its earlier segments' spending included")
    parts: list[str] = []
    crossed: dict[str, list[str]] = {"low": [], "high": []}

    def figure(name: str, cap: float | None, done: float, low: float, high: float, show: Callable[[float], str]) -> None:
        total = f"{show(done + low)}–{show(done + high)}"
        text = (f"{show(low)}–{show(high)} remaining = {total}" if got["all_finished"] else
                f"{show(done)} spent so far + {show(low)}–{show(high)} remaining = {total}")
        parts.append(f"{name}: {text} of {show(cap) if cap is not None else 'unlimited'}")
        key = "budget.max_judge_tokens" if name == "tokens" else "budget.max_cost_usd"
        if cap is not None and done + low > cap:
            crossed["low"].append(key)
        elif cap is not None and done + high > cap:
            crossed["high"].append(key)

    figure("tokens", b["max_judge_tokens"], spent["tokens"], lo["input_tokens"] + lo["output_tokens"], hi["input_tokens"] + hi["output_tokens"],
           lambda n: f"{n:,.0f}")
    if not got["priced"]:  # An unpriced model's dollars are unknown, not $0 (a dollar cap on one is refused when the config loads).
        parts.append(f"dollars: cost unknown (no price for {', '.join(map(repr, got['unpriced']))}; give one under judge.prices)")
    elif spent["cost_usd"] is None:
        parts.append(f"dollars: unknown spent so far (no price for what {got['run_dir']} holds) + ${lo['cost_usd']:,.4f}–${hi['cost_usd']:,.4f} remaining")
    else:
        figure("dollars", b["max_cost_usd"], spent["cost_usd"], lo["cost_usd"], hi["cost_usd"], lambda x: f"${x:,.4f}")
    said = f"budget ({where}): {'; '.join(parts)}"
    if crossed["low"] or crossed["high"]:
        ends = ([f"even the low end crosses {' and '.join(crossed['low'])}"] if crossed["low"] else []) + \
               ([f"the high end crosses {' and '.join(crossed['high'])}"] if crossed["high"] else [])
        return said + (f"; {', '.join(ends)}: the run {'will' if crossed['low'] else 'may'} stop short, the requests that would cross a cap "
                       "skipped (skipped_budget) until a resume with a larger budget")
    return said + "; within the caps at the high end"


def _calibration_line(c: dict) -> str:
    """What `judge.calibration` adds: the rows `… (calibration)`, in the table and in both ends of the range."""
    return (f"judge.calibration: fraction {c['fraction']:g} (seed {c['seed']}): {c['items']:,} sampled items (a metric on a case, per trial, "
            "sample and panel member; the same on every run) are also asked alone when their verdict comes from a shared request (a group, "
            "a multi-item request) and rendered in full (trace_format: full) unless that renders the same"
            + (f" ({c['identical_render']:,} do: no request)" if c["identical_render"] else "")
            + f": {c['requests']:,} requests" + (f" and {c['cache_hits']:,} cache hits" if c["cache_hits"] else "")
            + ", the rows 'METRIC (calibration)', counted in the total and the range")


def _range_why(got: dict) -> str:
    """What the range's two ends assume (`tracejudge.stages.judge.estimate`'s module doc)."""
    t = got["total"]
    stored = t.cache_hits - t.repeats
    low = ("low: no repair or re-ask, each reply as short as its verdict format allows, a cold judge cache"
           + (f" but for the {stored:,} answers it holds" if stored else "") + " and a cold provider prompt cache")
    if t.repeats:
        low += f", the {t.repeats:,} {'items' if got['items_per_request'] > 1 else 'requests'} asked again within the run answered by their first"
    if got["items_per_request"] > 1:
        low += f", items packed {got['items_per_request']} to a request"
    rate = got["reask_rate"]
    high = (f"high: at the re-ask/repair rate of the last run in {got['run_dir']} ({rate:.2f} extra requests per request)" if rate is not None
            else f"high: {_no_rate(got['run_dir'])}, so as if every reply needs a repair and every grouped request each metric alone")
    high += ", each reply as long as max_tokens allows, no prompt-cache discount"
    if t.repeats:
        high += ", the repeats sent again"
    if got["items_per_request"] > 1:
        high += ", each item as a request of its own"
    calib = got["calibration"]
    both = (f"; both ends count the {calib['requests']:,} requests judge.calibration adds (its sample is fixed) as they count the others"
            if calib and calib["requests"] else "")
    return f"{low}; {high}{both}"


def _no_rate(run_dir: str) -> str:
    """Why there is no re-ask/repair rate to price the high end at: no earlier run, or one that measured none (a run
    whose answers all came from the judge cache sent nothing; it said "no earlier run" beside "all N cases already
    finished")."""
    from pathlib import Path

    from tracejudge.engine import store

    if not (Path(run_dir) / store.SUMMARY).is_file():
        return f"no earlier run in {run_dir}"
    return f"the last run in {run_dir} measured no re-ask/repair rate (no request of it was answered: all from the cache, or none answered)"


def _judges_lines(got: dict) -> list[str]:
    """What the rows add up: each request asked `judge.samples` times, and a panel's members (`judge.models`) each with its
    own requests, tokens and dollars, a member without a price said to cost an unknown amount (never $0)."""
    lines = []
    if got["samples"] > 1:
        lines.append(f"judge.samples: {got['samples']}: every request is asked {got['samples']} times (each sample cached on its own), "
                     "and the rows count them all")
    if got["panel"]:
        lines.append(f"panel (judge.models): every member judges every case; the rows add up its {len(got['models'])} members:")
        for name, m in got["models"].items():
            t = m["total"]
            money = f"${t.cost_usd:,.4f}" if m["priced"] else f"cost unknown (no price for {name!r}; give one under judge.prices)"
            lines.append(f"  {name}: {t.requests:,} requests, {t.cache_hits:,} cache hits, {t.input_tokens:,} input + {t.output_tokens:,} "
                         f"output tokens (est.), {money}")
    return lines


def _show_prompt(args: argparse.Namespace, config) -> int:
    """Print each request about case `args.show_prompt`: a header, then every message under its role.

    Text is written as it is (no wrapping, tabs kept), but for the control characters a terminal would act on,
    shown as `\\xNN`. With `--json`, one JSON object a line per request, its `body` the JSON the run POSTs. A credential
    in `judge.extra_body` is masked in both (`core.extra_body.shown`).
    """
    import json

    from tracejudge.core.extra_body import shown as masked_extra
    from tracejudge.llm.providers import build_payload, protocol_of
    from tracejudge.stages.judge.show_prompt import prompts_for

    shown = prompts_for(config, args.show_prompt)
    out = sys.stdout
    if args.json:
        for s in shown:
            # (each request with the settings of the judge it goes to: a panel member's protocol and structured output)
            protocol, structured = protocol_of(s.judge) if s.judge is not None else ("openai", "json_schema")
            body = build_payload(protocol, s.req, structured) if s.req is not None else None
            if body is not None and s.req.extra_body:  # (as sent, but for a credential in it: masked, as the manifest masks it)
                body.update(masked_extra(s.req.extra_body))
            out.write(json.dumps({"case_id": args.show_prompt, "trial": 0, "metric": s.key, **({"member": s.member} if s.member else {}),
                                  "sent": s.req is not None,
                                  "prompt_tokens": s.tokens, "omitted_steps": s.omitted, "omitted_turns": s.omitted_turns,
                                  "left_out": s.left_out, "cut": list(s.cut), "cut_said": s.cut_said, "asked": s.asked,
                                  "questions": s.of, "why": s.why, "body": body}) + "\n")
        return EXIT_OK

    def say(text: str) -> None:
        out.write(visible(text) + "\n")

    for s in shown:
        if s.req is None and not s.tokens:
            say(f"=== {s.key} (case {args.show_prompt}): {s.why}")
    sent = [s for s in shown if s.req is not None or s.tokens]
    for i, s in enumerate(sent, 1):
        to = f" to panel member {s.member}" if s.member else ""
        head = f"=== request {i} of {len(sent)}{to}: {s.key} (case {args.show_prompt}, trial 0), {s.tokens:,} prompt tokens"
        if s.req is None:
            say(f"{head}: not sent: {s.why}")
            continue
        fitted = []
        if s.left_out:  # (the score's reason's words: steps, user turns, the system prompt's cut)
            fitted.append(s.left_out)
        if s.cut_said:  # (the reason's words: `Trace cut to 2,026 characters`, `40 sections (Passage 1, …) cut to …`)
            fitted.append(s.cut_said)
        if s.asked < s.of:
            fitted.append(f"asks {s.asked} of {s.of} questions (the others are about items the fitted prompt cannot show)")
        controls = any(CONTROL.search(m["content"]) for m in s.req.messages)
        invisible = any(INVISIBLE.search(m["content"]) for m in s.req.messages)
        doubled = any(DOUBLED.search(m["content"]) for m in s.req.messages)
        say(head + (f", fitted to judge.context_tokens: {'; '.join(fitted)}" if fitted else "") + (f" ({s.why})" if s.why else "")
            + ("; control characters shown as \\xNN" if controls else "")
            + ("; invisible characters (zero-width, bidirectional, tags) shown as \\u{NNNN}" if invisible else "")
            + ("; a backslash before xNN, u{…} or a control or invisible character shown doubled" if doubled else "")
            + (" (--json gives the request exactly)" if controls or invisible or doubled else ""))
        say(f"model {s.judge.model if s.judge is not None else 'gpt-4o-mini'}, max_tokens {s.req.max_tokens}, temperature {s.req.temperature}, verdict schema {s.req.schema_name!r}")
        if s.req.extra_body:
            say(f"extra_body {json.dumps(masked_extra(s.req.extra_body), ensure_ascii=False)}")
        for m in s.req.messages:
            say(f"--- {m['role']}")
            say(m["content"])
    return EXIT_OK
