"""`tracejudge calibrate CONFIG --labels FILE`: how well does the config's judge agree with reference labels?

It runs the config through the normal pipeline (`tracejudge.engine.runner.run`:
the same judge requests, cache and budget as `tracejudge run`, so verdicts
already paid for cost nothing more), then pairs
each judge verdict with its label (`tracejudge.stages.judge.agreement`) and
prints, per metric: n, accuracy, Cohen's κ (quadratic-weighted κ and
Spearman's ρ for graded labels) over the labelled cases and their verdicts, with 95%
CIs (accuracy: Wilson score interval; κ and ρ: BCa bootstrap over cases, marked
`*` not informative on too few labelled cases, `label_stats.uninformative`),
the confusion matrix, κ by tag, and the
disagreeing cases. `--json OUT` writes the same figures
(`metrics.<metric>.{n, accuracy, kappa, kappa_ci, confusion, …}`) and every
labelled verdict beside its label (`cases`).

Labels come from `--labels FILE` (JSONL or CSV, `tracejudge.stages.judge.labels`),
`--labels-field METRIC=PATH` (a field of each result, e.g.
`TaskCompletion=metadata.reward`), or the config's `judge.labels`; the
command-line ones replace the config's. Labels from a field label every
case: the whole config is run, in its own run directory (a finished run is
reused). Labels from a file only: only the labelled cases are judged, in
`RUN_DIR-calibrate` (`--run-dir` to choose), and not those whose every label is out of its metric's range
(`calibrate_checks.judged_ids`). Exit status: 0, or 1 when an
assertion `min_kappa` fails or the judge fails a run's checks on it (its
errors past `judge.max_error_share`, results the judge budget skipped — over
the labelled cases' results; the error kinds and the first error are named),
2 for a bad config or labels, and when no label met a scored verdict (a
mistyped metric, case ids not in the run: nothing was measured, `--json`'s
`verdict` is `ERROR`), 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracejudge.core.errors import ConfigError, TracejudgeError

if TYPE_CHECKING:  # imported where used: the CLI's parser (`add_parser`) is built for every command
    from collections.abc import Callable

    from rich.console import Console
    from rich.table import Table
    from tracejudge.core.judge_quality import LabelsConfig

__all__ = ["add_parser", "command", "print_agreement"]


def add_parser(sub: Any) -> None:
    """Register `calibrate` on the CLI's subparsers."""
    c = sub.add_parser("calibrate", help="judge the labelled cases and report the judge's agreement with the labels (Cohen's kappa, confusion)",
                       epilog="examples:\n  tracejudge calibrate configs/demo.yaml --labels-field TaskCompletion=metadata.reward\n"
                              "  tracejudge calibrate my.yaml --labels labels.jsonl --json calibration.json",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    c.add_argument("config", type=Path, help="the run config (YAML) whose judge is measured")
    c.add_argument("--labels", type=Path, metavar="FILE", help='labels: JSONL lines {"case_id", "metric", "label"[, "trial"]}, or a CSV with those columns')
    c.add_argument("--labels-field", action="append", default=[], metavar="METRIC=FIELD",
                   help="take METRIC's labels from a field of each result, e.g. TaskCompletion=metadata.reward (repeatable)")
    c.add_argument("--threshold", type=float, default=None, help="a numeric label is a pass when >= this (default 0.5, or judge.labels.threshold)")
    c.add_argument("--json", type=Path, metavar="OUT", help="write the figures and each labelled verdict beside its label as JSON")
    c.add_argument("--run-dir", type=Path, help="run directory (default: the config's run.dir with --labels-field, where a finished run is "
                   "reused; RUN_DIR-calibrate with --labels alone, which judges only the labelled cases)")
    c.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY.PATH=VALUE", help="override a config key (repeatable)")


def _labels_config(args: argparse.Namespace, current: LabelsConfig | None) -> LabelsConfig:
    from tracejudge.core.judge_quality import LabelsConfig
    from tracejudge.stages.judge.labels import parse_field_spec

    fields = dict(parse_field_spec(s) for s in args.labels_field)
    if args.labels is None and not fields:
        if current is None:
            raise ConfigError("calibrate needs labels: --labels FILE, --labels-field METRIC=FIELD, or judge.labels in the config")
        got = current
    else:
        got = LabelsConfig(path=args.labels, fields=fields, **({"threshold": current.threshold, "resamples": current.resamples,
                                                                 "seed": current.seed} if current else {}))
    return got.model_copy(update={"threshold": args.threshold}) if args.threshold is not None else got


def _not_a_file(path: Path) -> str:
    """Why `path`, which is no regular file, cannot be the labels file: a folder, a pipe or device, or nothing."""
    if path.is_dir():
        return "is a folder; labels are one JSONL or CSV file: name the file"
    if path.exists():
        # A pipe (`<(grep …)`) or a device is there, not missing; the labels are read twice (cases, then verdicts).
        return "is not a regular file (a pipe or a device); the labels are read more than once: save them to a file and name it"
    return "no such file"


def command(args: argparse.Namespace, err: Console) -> int:
    """Run `tracejudge calibrate`; returns the exit status (see the module doc)."""
    import anyio
    from rich.markup import escape
    from tracejudge.core.config import load_config, require_metrics
    from tracejudge.engine import runner
    from tracejudge.entrypoints.cli import EXIT_ASSERTION, EXIT_BAD_INPUT, EXIT_OK
    from tracejudge.entrypoints.calibrate_checks import judge_errors, judged_ids, labelled_cases, labelled_checks, no_match, unjudged
    from tracejudge.stages.judge.agreement import metric_scales, need_stats, run_agreement
    from tracejudge.stages.judge.label_grades import metric_keys, yes_no_metrics

    try:
        need_stats()
        config = load_config(args.config, args.overrides, labels_file=args.labels is None and not args.labels_field)  # (else replaced)
        require_metrics(config, str(args.config), args.overrides)
        if config.judge is None:
            raise ConfigError(f"{args.config}: no `judge:` section, so there is no judge to calibrate")
        labels = _labels_config(args, config.judge.labels)
        if labels.path is not None and not Path(labels.path).is_file():
            # (A folder was "no such file"; and a path from the config is named as the config's key, not as --labels.)
            where = "--labels" if args.labels is not None else "judge.labels.path:"
            why = _not_a_file(Path(labels.path))
            raise ConfigError(f"{where} {labels.path}: {why}")
        config = config.model_copy(update={"judge": config.judge.model_copy(update={"labels": labels})})
        source, run_dir, ids = None, args.run_dir, None
        if not labels.fields:
            # Labels from a file name their cases: only those are judged, in a run directory of their own.
            ids, left_out = judged_ids(config, Path(labels.path))  # type: ignore[arg-type]
            if left_out:  # (on stderr, before the run's own lines: stdout's first line is the label counts)
                err.print(left_out, highlight=False, markup=False, soft_wrap=True)
            if not ids:  # (no case has a label its verdicts could meet: nothing is worth a request)
                return unjudged(args.json, config, labels, err)
            source, dataset_ids = labelled_cases(config, ids)
            labels._dataset_cases = frozenset(dataset_ids)  # (`label_checks.unknown_case` offers them for a slip: 7 for 007)
            run_dir = run_dir or Path(f"{config.run.dir}-calibrate")
        outcome = anyio.run(lambda: runner.run(config, run_dir=run_dir, source=source))
    except (TracejudgeError, BaseExceptionGroup) as exc:
        from tracejudge.core.errors import leaves

        found = leaves(exc)
        if not all(isinstance(leaf, TracejudgeError) for leaf in found):
            raise
        for leaf in found:
            err.print(f"[bold red]error:[/] {escape(str(leaf))}", highlight=False, markup=True, soft_wrap=True)
        return EXIT_BAD_INPUT
    from tracejudge.core.console import stdout_console

    block = outcome.summary.get("labels") or {}
    out = stdout_console()  # piped: COLUMNS or 100 wide, so no figure is cut
    if block.get("error"):
        err.print(f"error: {block['error']}", highlight=False, markup=False, soft_wrap=True)
        return EXIT_BAD_INPUT
    print_agreement(block, out, run_dir=outcome.run_dir)
    errors = judge_errors(outcome, ids)
    if errors["line"]:
        out.print(errors["line"], highlight=False, markup=False, soft_wrap=True)
    # The run's own checks on its judge, with its setting and default (`judge.max_error_share`, 0): a judge that failed
    # every request left "n/a" everywhere and exit 0, as if nothing had been measured wrong. With a labels file, over the
    # labelled cases only: `RUN_DIR-calibrate` keeps the cases of earlier labels files too (`labelled_checks`).
    checks = [c for c in outcome.verdict.checks if c.name.endswith("min_kappa")]
    checks[:0] = ([c for c in outcome.verdict.checks if c.name in _JUDGE_CHECKS] if ids is None
                  else labelled_checks(outcome, ids))
    failed = any(not c.ok for c in checks)
    # No label met a verdict: nothing was measured, which is no PASS — the labels name a metric or cases the run lacks.
    # Unless a judge check failed: a judge that failed every request left every label unmatched, and its failure (exit 1,
    # named) is the cause, not the labels.
    none_matched = None if block.get("matched") or failed else no_match(block)
    if args.json is not None:
        full = run_agreement(outcome.run_dir, labels, with_cases=True, disagreements=None, scales=metric_scales(config.metrics),
                             listed=None, yes_no=yes_no_metrics(config.metrics), config_metrics=metric_keys(config.metrics))
        full.update(judge_errors={"error_kinds": errors["kinds"], "first": errors["first"]},
                    verdict="ERROR" if none_matched else "FAIL" if failed else "PASS",
                    checks=[{"name": c.name, "ok": c.ok, "detail": c.detail} for c in checks],
                    **({"error": none_matched} if none_matched else {}))
        args.json.write_text(json.dumps({"run_dir": str(outcome.run_dir), **full}, indent=2, default=str) + "\n", encoding="utf-8")
        out.print(f"written: {args.json}", highlight=False)
    if outcome.interrupted:
        return 130
    if none_matched:
        err.print(f"error: {none_matched}", highlight=False, markup=False, soft_wrap=True)
        return EXIT_BAD_INPUT
    for c in checks:
        mark = "ok  " if c.ok else "FAIL"
        out.print(f"  {mark} {c.name}: {c.detail}", highlight=False, markup=False, soft_wrap=True)
    return EXIT_ASSERTION if failed else EXIT_OK


_JUDGE_CHECKS = ("judge max_error_share", "judge budget")  # (`tracejudge.stages.aggregate.gate_judge`)


def _f(x: float | None, ci: list[float] | None = None, sep: str = " ") -> str:
    if x is None:
        return "n/a"
    return f"{x:.3f}" + (f"{sep}[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "")


_TITLE = "agreement with the labels (95% CIs)"
# What each interval is (`tracejudge.stages.judge.label_stats`): said under the table, as the title would not fit 80 columns.
_CIS = ("n: verdicts, cases: labelled cases; 95% CIs: accuracy Wilson score interval,\n"
        "kappa and spearman BCa bootstrap over cases (a case's trials together)")


def _agreement_table(metrics: dict[str, dict[str, Any]], level: int, name: Callable[[str], str]) -> Table:
    """The agreement table, narrower at each `level` (`tracejudge.core.console.fitted`): 1 drops the padding (the box
    draws one space between columns), 2 puts each CI under its figure, 3 the kind of κ beside its figure (no column)."""
    from rich import box
    from rich.table import Table

    from tracejudge.core.console import cell
    from tracejudge.core.inert_text import visible

    table = Table(title=_TITLE, title_justify="left", box=box.SIMPLE_HEAD, show_edge=False,
                  **({"padding": (0, 0)} if level else {"pad_edge": False}))
    cols = ["metric", "n", "cases", "accuracy", "kappa", *(["kind"] if level < 3 else []), "spearman", "disagree"]
    for col in cols:
        table.add_column(col, justify="left" if col in ("metric", "kind") else "right", no_wrap=True)  # figures whole, never cut
    sep = "\n" if level >= 2 else " "
    for key, m in metrics.items():
        kind = str(m.get("kappa_kind") or m.get("kind") or "-")
        kappa = _f(m.get("kappa"), m.get("kappa_ci"), sep)
        if level >= 3 and kind != "-":
            head, _, rest = kappa.partition("\n")
            kappa = f"{head} {kind}" + (f"\n{rest}" if rest else "")
        row = [name(visible(key)), str(m.get("n", 0)), str(m.get("cases", m.get("n", 0))), _f(m.get("accuracy"), m.get("accuracy_ci"), sep),
               kappa + ("*" if m.get("kappa_ci_informative") is False else ""),
               *([kind] if level < 3 else []),
               (_f(m.get("spearman"), m.get("spearman_ci"), sep) + ("*" if m.get("spearman_ci_informative") is False else ""))
               if "spearman" in m else "-",
               str(m.get("disagreeing", 0))]
        table.add_row(*map(cell, row))
    return table


# The widths a metric's cell may be cut to (characters a line), and the lines it may take, when no layout fits it whole.
_NAME_MAX, _NAME_MIN, _NAME_LINES = 40, 8, 3


def _name_cell(name: str, width: int, cut: dict[str, str]) -> str:
    """`name` (already inert) as a table cell of lines of at most `width` characters: wrapped between words, or, when
    a word is longer than `width`, cut in pieces of `width`; past `_NAME_LINES` lines cut short, the last ending in `…`. A cut name is
    added to `cut` (`{full name: its cell on one line}`), for the lines after the table that give it whole."""
    from tracejudge.core.console import wrap_name

    lines = wrap_name(name, width).split("\n")
    if any(len(line) > width for line in lines):  # (a word too long: the name in pieces of `width`, not words and pieces)
        lines = [name[i:i + width] for i in range(0, len(name), width)]
    if len(lines) <= _NAME_LINES:
        return "\n".join(lines)
    lines = lines[:_NAME_LINES]
    lines[-1] = lines[-1][:width - 1] + "…"
    cut[name] = "".join(lines)
    return "\n".join(lines)


def _agreement_blocks(metrics: dict[str, dict[str, Any]]) -> list[str]:
    """The table's figures as a few lines per metric, for a console too narrow for any layout of the table."""
    from tracejudge.core.inert_text import visible

    lines = [_TITLE]
    for key, m in metrics.items():
        kind = m.get("kappa_kind") or m.get("kind")
        lines += [visible(key), f"  n (verdicts) {m.get('n', 0)}, cases {m.get('cases', m.get('n', 0))}, disagree {m.get('disagreeing', 0)}",
                  f"  accuracy {_f(m.get('accuracy'), m.get('accuracy_ci'))}",
                  f"  kappa {_f(m.get('kappa'), m.get('kappa_ci'))}" + ("*" if m.get("kappa_ci_informative") is False else "")
                  + (f" ({kind})" if kind else "")]
        if "spearman" in m:
            lines.append(f"  spearman {_f(m.get('spearman'), m.get('spearman_ci'))}" + ("*" if m.get("spearman_ci_informative") is False else ""))
    return lines


def _confusion(name: str, conf: dict[str, Any], width: int) -> list[str]:
    """A confusion matrix's lines, its columns as narrow as its cells allow when the usual 8 would not fit `width`; when
    no grid fits (a long scale on a narrow console), each label's row as the verdicts it got."""
    labels = [str(x) for x in conf["labels"]]
    cells = [*labels, *(str(v) for row in conf["matrix"] for v in row)]
    col = max(8, *(len(x) + 2 for x in labels))
    if col * (len(labels) + 1) > width:
        col = max(len(x) for x in cells) + 1
    head = f"{name}: confusion (rows: label, columns: verdict)"
    if col * (len(labels) + 1) > width:
        return [head] + [f"  label {lab}: " + (", ".join(f"verdict {v} ×{n}" for v, n in zip(labels, row, strict=True) if n) or "none")
                         for lab, row in zip(labels, conf["matrix"], strict=True)]
    return [head, " " * col + "".join(f"{x:>{col}}" for x in labels),
            *(f"{lab:>{col}}" + "".join(f"{v:>{col}}" for v in row) for lab, row in zip(labels, conf["matrix"], strict=True))]


def print_agreement(block: dict[str, Any], console: Console, *, run_dir: Path | None = None, listed: int = 10) -> None:
    """Print a `labels` block (`tracejudge.stages.judge.agreement.agreement_block`): a table per metric, its confusion matrix,
    κ by tag and the first `listed` disagreeing cases.

    The table keeps every figure whole and in its column (README: the tables are laid out for 80 columns): the first of
    `_agreement_table`'s layouts that fits the console, metric names wrapped between words if they must; a name with a
    word too long for that is broken inside it, and cut with `…` past three lines (`_name_cell`), its full name on a line
    after the table (`  shown… = full name`); else, on a console too narrow even then, a few lines per metric. Names and
    reasons are printed inert (`visible`).
    """
    from tracejudge.core.console import fits, fitted
    from tracejudge.core.inert_text import visible
    from tracejudge.stages.judge.label_checks import written
    from tracejudge.stages.reports.judge_lines import label_counts, label_problems

    def say(text: str) -> None:
        console.print(text, highlight=False, markup=False, emoji=False, soft_wrap=True)

    where = f" (run {run_dir})" if run_dir else ""
    say(label_counts(block) + where)
    for p in label_problems(block):
        say(f"  labels: {p}")  # (not all skip one: "counted once", "takes this one")
    metrics = block.get("metrics") or {}
    if not metrics:
        return
    table = fitted(console, lambda level, name: _agreement_table(metrics, level, name), 4)
    cut: dict[str, str] = {}
    if not fits(console, table):
        # A name with a word too long to wrap (a 60-character custom metric's): its cell is cut at a width that lets
        # the figures stay whole and in their columns, and the full name follows the table.
        for width in range(_NAME_MAX, _NAME_MIN - 1, -1):
            cut = {}
            table = _agreement_table(metrics, 3, lambda s, w=width: _name_cell(s, w, cut))  # type: ignore[misc]
            if fits(console, table):
                break
    if fits(console, table):
        console.print(table)
        for full, shown in cut.items():
            say(f"  {shown} = {full}")
    else:
        for line in _agreement_blocks(metrics):
            say(line)
    for line in _CIS.split("\n"):
        say(line)
    for key, m in metrics.items():
        name = visible(key)
        for line in kappa_lines(m):
            say(f"{name}: {line}")
        if m.get("note"):
            say(f"{name}: {m['note']}")
        if m.get("threshold") is not None:
            say(f"{name}: yes/no; a label from 0 to 1 is a pass when >= {m['threshold']:g} (--threshold, judge.labels.threshold)")
        if m.get("confusion"):
            for line in _confusion(name, m["confusion"], console.width):
                say(line)
        tags = m.get("by_tag") or {}
        if tags:
            say(f"{name} by tag: " + "; ".join(f"{visible(t)} n={v['n']}" + (f" ({v['cases']} cases)" if v.get("cases", v["n"]) != v["n"] else "")
                                               + f" acc={_f(v['accuracy'])} kappa={_f(v['kappa'])}"
                                               + (f" ({v['kappa_why']})" if v.get("kappa_why") else "")
                                               for t, v in list(tags.items())[:12]))
        for d in (m.get("disagreements") or [])[:listed]:
            label = written(d["label"], d.get("label_written") or "") + (f" ({d['label_as']})" if d.get("label_as") else "")  # (as the labels file has it)
            say(f"  disagrees: case {visible(str(d['case_id']))} trial {d['trial']}: label {label}, verdict {d['verdict']} "
                f"(value {d['value']:.3f}): {visible(d['reason'][:160])}")


def kappa_lines(m: dict[str, Any]) -> list[str]:
    """What a metric's κ figure is and how far its interval goes (`agreement.metric_agreement`): the reading of its labels
    when it could be ambiguous, the scale a weighted κ weighs grades on, the resamples dropped, why an interval is missing,
    and `*`: not informative (κ's and ρ's by one rule, said once)."""
    lines = []
    if m.get("reading_note"):
        lines.append(m["reading_note"])
    if m.get("kappa_labels") and m.get("kappa_kind") == "quadratic":
        lines.append(f"quadratic-weighted kappa over the grades {m['kappa_labels'][0]}..{m['kappa_labels'][-1]}"
                     + (f" ({m['kappa_labels_note']})" if m.get("kappa_labels_note") else " (the metric's scale)"))
    if m.get("kappa_ci_dropped"):
        lines.append(f"kappa CI: {m['kappa_ci_dropped']} of {m.get('kappa_ci_resamples')} resamples had kappa undefined "
                     "(one class only) and were dropped")
    for figure in ("kappa", "spearman"):
        if m.get(f"{figure}_ci_note"):
            lines.append(f"{figure} CI: none: {m[f'{figure}_ci_note']}")
    if m.get("kappa_ci_informative") is False:
        both = " and spearman CIs" if m.get("spearman_ci_informative") is False else " CI"
        lines.append(f"* kappa{both} not informative: {m.get('kappa_ci_why')}; min_kappa fails on it")
    elif m.get("spearman_ci_informative") is False:
        lines.append(f"* spearman CI not informative: {m.get('spearman_ci_why')}")
    return lines


def pairwise_command(args: argparse.Namespace, out: Console) -> int:
    """`tracejudge compare A --vs B --judge CONFIG`: 0, or 1 when the comparison FAILS (below `--min-win-rate` or, with it,
    over a win-rate CI that is not informative; or on the judge's checks, `pairwise_gate`); a bad config raises `ConfigError` (exit 2)."""
    from tracejudge.core.config import load_config
    from tracejudge.stages.comparison.pairwise import compare_pairwise, print_pairwise

    if args.vs is None and len(args.runs) != 2:
        raise TracejudgeError("compare --judge takes two runs (RUN_A RUN_B, or RUN_A --vs RUN_B)")
    run_a, run_b = (args.runs, args.vs) if args.vs is not None else ([args.runs[0]], [args.runs[1]])
    config = load_config(args.judge, [])
    res = compare_pairwise(run_a, run_b, config, min_win_rate=args.min_win_rate, seed=args.seed, top=args.top)
    if args.json:
        import sys

        sys.stdout.write(json.dumps(res.as_dict(), indent=2, default=str) + "\n")
    else:
        print_pairwise(res, out)
    return 0 if res.passed else 1
