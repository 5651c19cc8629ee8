"""`tracejudge calibrate CONFIG --labels FILE`: how well does the config's judge agree with reference labels?

It runs the config through the normal pipeline (`tracejudge.engine.runner.run`:
the same judge requests, cache and budget as `tracejudge run`, so verdicts
already paid for cost nothing more), then pairs
each judge verdict with its label (`tracejudge.stages.judge.agreement`) and
prints, per metric: n, accuracy, Cohen's κ (quadratic-weighted κ and
Spearman's ρ for graded labels) with 95% bootstrap CIs, the confusion matrix,
κ by tag, and the disagreeing cases. `--json OUT` writes the same figures
(`metrics.<metric>.{n, accuracy, kappa, kappa_ci, confusion, …}`) and every
labelled verdict beside its label (`cases`).

Labels come from `--labels FILE` (JSONL or CSV, `tracejudge.stages.judge.labels`),
`--labels-field METRIC=PATH` (a field of each result, e.g.
`TaskCompletion=metadata.reward`), or the config's `judge.labels`; the
command-line ones replace the config's. Labels from a field label every
case: the whole config is run, in its own run directory (a finished run is
reused). Labels from a file only: only the labelled cases are judged, in
`RUN_DIR-calibrate` (`--run-dir` to choose). Exit status: 0, or 1 when an
assertion `min_kappa` fails, 2 for a bad config or labels, 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracejudge.core.errors import ConfigError, TracejudgeError

if TYPE_CHECKING:  # imported where used: the CLI's parser (`add_parser`) is built for every command
    from rich.console import Console
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


def command(args: argparse.Namespace, err: Console) -> int:
    """Run `tracejudge calibrate`; returns the exit status (see the module doc)."""
    import anyio
    from rich.markup import escape
    from tracejudge.core.config import load_config, require_metrics
    from tracejudge.engine import runner
    from tracejudge.entrypoints.cli import EXIT_ASSERTION, EXIT_BAD_INPUT, EXIT_OK
    from tracejudge.stages.judge.agreement import metric_scales, need_stats, run_agreement

    try:
        need_stats()
        config = load_config(args.config, args.overrides)
        require_metrics(config, str(args.config), args.overrides)
        if config.judge is None:
            raise ConfigError(f"{args.config}: no `judge:` section, so there is no judge to calibrate")
        labels = _labels_config(args, config.judge.labels)
        if labels.path is not None and not Path(labels.path).is_file():
            raise ConfigError(f"--labels {labels.path}: no such file")
        config = config.model_copy(update={"judge": config.judge.model_copy(update={"labels": labels})})
        source, run_dir = None, args.run_dir
        if not labels.fields:
            # Labels from a file name their cases: only those are judged, in a run directory of their own.
            from tracejudge.stages.judge.labels import load_label_file

            source = labelled_cases(config, {lab.case_id for lab in load_label_file(Path(labels.path)).labels})  # type: ignore[arg-type]
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
    if args.json is not None:
        full = run_agreement(outcome.run_dir, labels, with_cases=True, disagreements=None, scales=metric_scales(config.metrics),
                             listed=None)
        args.json.write_text(json.dumps({"run_dir": str(outcome.run_dir), **full}, indent=2, default=str) + "\n", encoding="utf-8")
        out.print(f"written: {args.json}", highlight=False)
    if outcome.interrupted:
        return 130
    kappa = [c for c in outcome.verdict.checks if c.name.endswith("min_kappa")]
    for c in kappa:
        mark = "ok  " if c.ok else "FAIL"
        out.print(f"  {mark} {c.name}: {c.detail}", highlight=False, markup=False, soft_wrap=True)
    return EXIT_ASSERTION if any(not c.ok for c in kappa) else EXIT_OK


def labelled_cases(config: Any, ids: set[str]) -> Any:
    """The cases of `config`'s dataset whose id is in `ids`, as an in-memory source for the runner (read with the
    config's format; records that cannot be read are left out: the full run reports them)."""
    from tracejudge.core import registry
    from tracejudge.core.records import Case
    from tracejudge.stages.extract import extract_record
    from tracejudge.stages.load.memory import MemorySource

    fmt = registry.format_for(config.dataset.format)
    ctx = fmt.prepare(config.dataset)
    kept = [got for raw in fmt.read(config.dataset) if isinstance(got := extract_record(raw, fmt, ctx), Case) and got.id in ids]
    return MemorySource(kept, label=str(config.dataset.path))


def _f(x: float | None, ci: list[float] | None = None) -> str:
    if x is None:
        return "n/a"
    return f"{x:.3f}" + (f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "")


def print_agreement(block: dict[str, Any], console: Console, *, run_dir: Path | None = None, listed: int = 10) -> None:
    """Print a `labels` block (`tracejudge.stages.judge.agreement.agreement_block`): a table per metric, its confusion matrix,
    κ by tag and the first `listed` disagreeing cases."""
    from rich import box
    from rich.markup import escape
    from rich.table import Table

    from tracejudge.stages.reports.judge_lines import label_counts, label_problems

    where = f" (run {run_dir})" if run_dir else ""
    console.print(label_counts(block) + where, highlight=False, markup=False, soft_wrap=True)
    for p in label_problems(block):
        console.print(f"  labels: {p}", highlight=False, markup=False, soft_wrap=True)  # (not all skip one: "counted once", "takes this one")
    table = Table(title="agreement with the labels (95% bootstrap CI)", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    for col in ("metric", "n", "accuracy", "kappa", "kind", "spearman", "disagree"):
        table.add_column(col, justify="left" if col in ("metric", "kind") else "right", no_wrap=col != "metric", overflow="fold",
                         min_width=14 if col == "metric" else None)
    for name, m in (block.get("metrics") or {}).items():
        table.add_row(escape(name), str(m.get("n", 0)), _f(m.get("accuracy"), m.get("accuracy_ci")), _f(m.get("kappa"), m.get("kappa_ci")),
                      str(m.get("kappa_kind") or m.get("kind") or "-"), _f(m.get("spearman"), m.get("spearman_ci")) if "spearman" in m else "-",
                      str(m.get("disagreeing", 0)))
    console.print(table)
    for name, m in (block.get("metrics") or {}).items():
        if m.get("note"):
            console.print(f"{name}: {m['note']}", highlight=False, markup=False)
        conf = m.get("confusion")
        if conf:
            labels = [str(x) for x in conf["labels"]]
            width = max(8, *(len(x) + 2 for x in labels))
            console.print(f"{name}: confusion (rows: label, columns: verdict)", highlight=False, markup=False)
            console.print(" " * width + "".join(f"{x:>{width}}" for x in labels), highlight=False, markup=False)
            for lab, row in zip(labels, conf["matrix"], strict=True):
                console.print(f"{lab:>{width}}" + "".join(f"{v:>{width}}" for v in row), highlight=False, markup=False)
        tags = m.get("by_tag") or {}
        if tags:
            console.print(f"{name} by tag: " + "; ".join(f"{t} n={v['n']} acc={_f(v['accuracy'])} kappa={_f(v['kappa'])}"
                                                        for t, v in list(tags.items())[:12]), highlight=False, markup=False, soft_wrap=True)
        for d in (m.get("disagreements") or [])[:listed]:
            console.print(f"  disagrees: case {d['case_id']} trial {d['trial']}: label {d['label']}, verdict {d['verdict']} "
                          f"(value {d['value']:.3f}): {d['reason'][:160]}", highlight=False, markup=False, soft_wrap=True)


def pairwise_command(args: argparse.Namespace, out: Console) -> int:
    """`tracejudge compare A --vs B --judge CONFIG`: 0, or 1 below `--min-win-rate`; a bad config raises `ConfigError` (exit 2)."""
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
