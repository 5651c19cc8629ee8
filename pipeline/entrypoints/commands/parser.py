"""The `tracejudge` command line's grammar: subcommands, options, help texts and examples.

Building the parser imports no config model, engine or third-party library:
`tracejudge --help` stays instant (checked by tests/test_startup_imports.py).
"""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path
from typing import Any, NoReturn

from tracejudge.core.version import __version__
from tracejudge.entrypoints import bench_args, calibrate, export_cmd

__all__ = ["build_parser"]


def _seconds(text: str) -> float:
    """An interval in seconds, 0 or more: a negative or non-finite one was taken and meant nothing."""
    import math

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"expected 0 or more seconds, got {text!r}")
    return value

_EPILOG = """exit status:
  0    PASS: the run finished and every assertion held
  1    FAIL: an assertion (the CI gate) failed
  2    bad config or input; nothing was run
  3    a judge, trace store or http target that cannot be reached (one line naming the URL; so is a judge that
       accepts connections and replied to no request of the run, each cut at judge.timeout_s, for judge.max_retry_wait_s),
       an internal error, out of memory too (stderr names the file holding the traceback, RUN_DIR/crash.log),
       or a full disk (one line: what is full, what is kept, how to resume)
  75   report on a run another process is still writing: its figures so far (IN PROGRESS)
  130  interrupted (Ctrl-C or SIGTERM); the verdict line says how to resume
  141  stdout was closed early (e.g. piped into head); nothing is reported
"""


_CONFIG_HELP = "the run config (YAML); relative paths in it resolve from its folder"
_SET_HELP = ("override a config key, e.g. --set dataset.limit=20 (repeatable; the value is YAML; a key holding a dot goes in "
             "brackets: assertions.metrics[\"tool.acc\"].min_mean). A relative path value "
             "(run.dir, dataset.path, dataset.tasks, cache.dir, target.*) resolves from the config's folder, like the same value in the file")


_LOG_LEVELS = ("debug", "info", "warning", "error")


def _examples(*lines: str) -> dict[str, Any]:
    """The keyword arguments giving a subcommand's --help its examples."""
    return {"epilog": "examples:\n" + "\n".join(f"  {line}" for line in lines), "formatter_class": argparse.RawDescriptionHelpFormatter}


class _Parser(argparse.ArgumentParser):
    """An argument parser whose unknown option is refused by the subcommand it was given to, naming the nearest one
    (`tracejudge run x.yaml --sett a=1`: `tracejudge run: error: unrecognized arguments: --sett a=1; did you mean --set?`),
    with that subcommand's usage. argparse leaves extra arguments to the top-level parser, whose usage lists only the
    subcommands and which suggests nothing."""

    def parse_args(self, args: Any = None, namespace: Any = None) -> Any:
        got, extra = self.parse_known_args(args, namespace)
        if extra:
            sub = next((a for a in self._actions if isinstance(a, argparse._SubParsersAction)), None)
            parser = sub.choices.get(getattr(got, "command", None), self) if sub is not None else self
            known = [o for a in parser._actions for o in a.option_strings if o.startswith("--")]
            hints = [f"{option}: {hint}" for option in (w.split("=", 1)[0] for w in extra if w.startswith("--"))
                     if (hint := _suggest().did_you_mean(option, known, n=1, typo=True))]
            parser.error(f"unrecognized arguments: {' '.join(extra)}" + (f" ({'; '.join(hints)})" if hints else ""))
        return got

    def error(self, message: str) -> NoReturn:
        """A choice mistyped (`tracejudge list metric`, `tracejudge rn`) names the nearest one, as Python 3.11's argparse does not."""
        got = re.fullmatch(r"(argument [^:]+: invalid choice: '(.*)') \(choose from (.*)\)", message, re.DOTALL)
        if got is not None and (hint := _suggest().did_you_mean(got[2], re.findall(r"'([^']*)'", got[3]), n=1, typo=True)):
            message = f"{got[1]}; {hint} (choose from {got[3]})"
        super().error(message)


def _suggest():
    from tracejudge.core import suggest

    return suggest


def build_parser() -> argparse.ArgumentParser:
    """The `tracejudge` argument parser: every subcommand and option, with the help texts and examples `--help` prints."""
    p = _Parser(prog="tracejudge", description="Evaluate AI agents by what they did.", epilog=_EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"tracejudge {__version__}")
    p.add_argument("--log-level", default="warning", type=str.lower, choices=_LOG_LEVELS, help="structlog level (debug, info, warning, error)")
    sub = p.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run a config's pipeline; resumes the run directory if it holds results",
                         description="Run a config's pipeline; resumes the run directory if it holds results.",
                         **_examples("tracejudge run configs/demo.yaml", "tracejudge run configs/demo.yaml --set dataset.limit=20 --run-dir runs/try",
                                     "tracejudge run configs/demo.yaml --shard 2/4        # one CI job of four"))
    run.add_argument("config", type=Path, help=_CONFIG_HELP)
    run.add_argument("--run-dir", type=Path, help="run directory, relative to the current directory "
                     "(default: the config's run.dir, else runs/<config file stem> beside the config)")
    run.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY.PATH=VALUE", help=_SET_HELP)
    run.add_argument("--force", action="store_true", help="resume even if the config or dataset changed (results already there are kept, not re-scored: "
                     "a metric added scores only new cases; "
                     "the manifest's history and the summary record which segments used which config)")
    run.add_argument("--fresh", action="store_true", help="start over in a new run directory (RUN_DIR-2, -3, ...) if RUN_DIR already holds a run")
    run.add_argument("--rescore", type=Path, metavar="RUN_DIR", help="re-score the live traces recorded in RUN_DIR instead of calling the target")
    run.add_argument("--shard", metavar="I/N", help="score only shard I of N (1-based; by a stable hash of the case id) into "
                     "the config's run directory + -shard-I-of-N, or into --run-dir as given (one per shard)")
    run.add_argument("--no-progress", action="store_true", help="no progress bar (and no progress log lines)")
    run.add_argument("--explain-cache", action="store_true", help="record why each judge request missed the cache (score.judge.cache_miss)")
    run.add_argument("--progress-every", type=_seconds, default=10.0, metavar="SECONDS",
                     help="interval of progress log lines when not on a terminal (0: a line at every result; "
                          "the closing line is logged whatever the interval)")

    rep = sub.add_parser("report", help="rebuild summary.json, report.md, junit.xml and report.html from a run's results.jsonl "
                                        "(several shard directories: merged into one run)",
                         **_examples("tracejudge report runs/demo", "tracejudge report runs/demo --baseline runs/last-night",
                                     "tracejudge report runs/demo-shard-*             # merge shards into runs/demo"))
    rep.add_argument("run_dirs", type=Path, nargs="+", metavar="RUN_DIR",
                     help="a run directory; several (or the unsharded name of shard directories) are merged into --out")
    rep.add_argument("--out", type=Path, help="where the merged run goes (default: the shards' name without -shard-I-of-N)")
    rep.add_argument("--baseline", type=Path, help="baseline run directory to compare with (overrides the config's); a one-off verdict: "
                     "nothing is written into RUN_DIR (--out DIR writes its reports to a copy)")

    cmp = sub.add_parser("compare", help="compare two runs result by result (paired by case and trial)",
                         **_examples("tracejudge compare runs/last-night runs/demo", "tracejudge compare runs/prev runs/demo --metric writes_exact --json",
                                     "tracejudge compare runs/base-shard-* --vs runs/demo-shard-*"))
    cmp.add_argument("runs", type=Path, nargs="+", metavar="RUN",
                     help="RUN_A RUN_B: baseline and current run directory (deltas are B - A); with --vs, every RUN is a shard of the baseline")
    cmp.add_argument("--vs", type=Path, nargs="+", metavar="RUN_B", help="the current run's shard directories (the positional ones are the baseline's)")
    cmp.add_argument("--metric", dest="metrics", action="append", help="compare only this metric (repeatable)")
    cmp.add_argument("--top", type=int, default=10, help="cases listed per metric as most regressed / improved")
    cmp.add_argument("--seed", type=int, default=0, help="seed of the bootstrap and the randomization test")
    cmp.add_argument("--json", action="store_true", help="print the comparison as JSON")
    cmp.add_argument("--judge", type=Path, metavar="CONFIG", help="ask CONFIG's judge which run served the user better, per shared case, "
                     "in both orders (pairwise; README \"Is the judge right?\")")
    cmp.add_argument("--min-win-rate", type=float, metavar="X", help="with --judge: FAIL (exit 1) when B's win rate is below X, "
                     "or its 95%% CI is not informative (under 50 judged cases, or every pair one outcome)")

    ext = sub.add_parser("extract", help="write any input format as native cases (traces included)",
                         description="Write any input format as native cases. Invalid records are listed on stderr and left out; "
                                     "the exit status is then 1 (0 when every record is valid).",
                         **_examples("tracejudge extract configs/demo.yaml -o cases.jsonl", "tracejudge extract my.yaml -o - | head -1"))
    ext.add_argument("config", type=Path, help=_CONFIG_HELP)
    ext.add_argument("-o", "--output", type=Path, required=True, help="JSONL file to write ('-' for stdout); replaced only once "
                     "the extract has finished, so an interrupted or failed one leaves it as it was")
    ext.add_argument("--force", action="store_true", help="overwrite OUTPUT if it exists (never the config or a dataset file "
                     "it reads, nor a file in a run directory)")
    ext.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY.PATH=VALUE", help=_SET_HELP)

    est = sub.add_parser("estimate", help="print the expected judge requests, tokens and dollars per metric, before any call",
                         **_examples("tracejudge estimate configs/demo.yaml", "tracejudge estimate configs/demo.yaml --set judge.model=gpt-4o",
                                   "tracejudge estimate configs/demo.yaml --run-dir runs/try   # beside `run --run-dir runs/try`",
                                   "tracejudge estimate configs/demo.yaml --show-prompt 5-3"))
    est.add_argument("config", type=Path, help=_CONFIG_HELP + " (with LLM-judge metrics)")
    est.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY.PATH=VALUE", help=_SET_HELP)
    est.add_argument("--run-dir", type=Path, help="the run directory `tracejudge run --run-dir` was given, relative to the current directory "
                     "(default: the config's run.dir): the cases finished there are not priced, as the resume skips them, and the "
                     "budget line counts what the run spent there")
    est.add_argument("--show-prompt", metavar="CASE_ID", help="print the requests the judge would get about this case, exactly as the "
                     "run builds them (grouped, fitted to judge.context_tokens, trace fenced); nothing is sent")
    est.add_argument("--json", action="store_true", help="with --show-prompt: one JSON object a line per request, its `body` the JSON "
                     "the run POSTs, byte for byte")

    bench_args.add_parser(sub)
    calibrate.add_parser(sub)
    sub.choices["bench"].epilog = _examples("tracejudge bench configs/demo.yaml --requests 200 --max-cost-usd 1",
                                            "tracejudge bench --synthetic --provider openai --base-url http://gpu-box:8000/v1 --model my-judge")["epilog"]
    sub.choices["bench"].formatter_class = argparse.RawDescriptionHelpFormatter

    export_cmd.add_parser(sub)

    init = sub.add_parser("init", help="write a commented starter config for an input format (run dir, metrics, assertions)",
                          **_examples("tracejudge init                                   # native cases, to tracejudge.yaml",
                                      "tracejudge init --format otel --dataset traces/ -o otel.yaml && tracejudge run otel.yaml",
                                      "tracejudge init --format tau-bench --dataset gpt-4o-airline.json --tasks tasks_airline_test.json"))
    init.add_argument("--format", default=None, type=_init_format, choices=sorted(_starter().FORMATS), help="the input format (default: "
                      "the format the --dataset file's first records read as, else native; `tracejudge list formats` says what each reads)")
    init.add_argument("--dataset", type=_home_path, metavar="PATH", help="the data to score (default: a placeholder path to replace)")
    init.add_argument("--tasks", type=_home_path, metavar="PATH", help="tau-bench only: the tasks file the trajectories ran on "
                      "(default: tasks/tasks_<domain>_test.json beside the trajectories' folder, else each run's own task)")
    init.add_argument("-o", "--output", type=_home_path, default=Path("tracejudge.yaml"), help="where to write the config (default: tracejudge.yaml)")
    init.add_argument("--force", action="store_true", help="overwrite the output file if it exists")

    lst = sub.add_parser("list", help="list the metrics or the input formats, one line each",
                         **_examples("tracejudge list metrics", "tracejudge list formats"))
    lst.add_argument("what", choices=("metrics", "formats"), help="metrics (config `type:` values) or formats (`dataset.format:` values)")

    exp = sub.add_parser("explain", help="print a metric's documentation: what it counts, its options, the source of its definition",
                         **_examples("tracejudge explain ToolCalls", "tracejudge explain TaskCompletion"))
    exp.add_argument("metric", help="a metric type, as in `tracejudge list metrics`")

    sim = sub.add_parser("simulate", help="serve the judge simulator on 127.0.0.1 (OpenAI and Anthropic protocols; verdicts say nothing about quality)",
                         **_examples("tracejudge simulate --port 8787", "tracejudge simulate --rpm 500 --tpm 400000 --latency-ms 400 --window strict"))
    sim.add_argument("--port", type=int, default=8787, help="TCP port (0 picks a free one; the URL is printed)")
    sim.add_argument("--latency-ms", type=float, default=0.0, help="delay before each answer, milliseconds")
    sim.add_argument("--rpm", type=int, default=None, help="requests per minute before 429 (default: unlimited)")
    sim.add_argument("--tpm", type=int, default=None, help="tokens per minute before 429 (default: unlimited)")
    sim.add_argument("--error-rate", type=float, default=0.0, help="share of requests answered with a 500, a hang or truncated JSON")
    sim.add_argument("--hang-s", type=float, default=30.0, metavar="S", help="how long a hung request waits before its 504, seconds")
    sim.add_argument("--seed", type=int, default=0, help="seed of the verdicts and of the injected errors")
    sim.add_argument("--batch-completion-s", type=float, default=1.0, help="seconds until a submitted batch (files/batches, message batches) ends")
    sim.add_argument("--window", choices=("bucket", "strict"), default="bucket",
                     help="how --rpm/--tpm are counted: a continuously refilling bucket, or a strict 60-second sliding window")
    sim.add_argument("--window-s", type=float, default=60.0, metavar="S", help="length of the strict window, seconds (limits count per window)")
    sim.add_argument("--book", choices=("arrival", "reply"), default="arrival", help="a strict window books a request when it arrives, or when it is answered")
    sim.add_argument("--limit-count", choices=("usage", "chars"), default="usage",
                     help="the limits count tokens as usage reports them, or as a gateway does: ceil(characters/4) + 3 per message")
    sim.add_argument("--no-rate-headers", action="store_true", help="send no rate-limit headers (a vLLM-like server)")
    sim.add_argument("--max-concurrency", type=int, default=None, metavar="C", help="slow down past C requests in flight (a GPU server)")
    sim.add_argument("--agreement", type=float, default=1.0, metavar="P", help="each answer equals the simulator's truth with probability P")
    sim.add_argument("--noise", type=float, default=0.0, metavar="Q", help="each answer flipped with probability Q, afresh per repeat of a request")
    sim.add_argument("--position-bias", type=float, default=0.0, metavar="B", help="a pairwise request answers 'the first run' with probability B")
    sim.add_argument("--strict-fields", action="store_true",
                     help="refuse (400 invalid_request_error) a /v1/messages request field Anthropic's API does not have, as that API does")
    sim.add_argument("--json-object-only", action="store_true",
                     help="answer a json_schema response_format with HTTP 500, as llama-cpp-python's server does (json_object only)")
    sim.add_argument("--tokenizer-factor", type=float, default=1.0, metavar="F", help="count prompt tokens as tiktoken's × F (a local model's tokenizer)")
    sim.add_argument("--context-tokens", type=int, default=None, metavar="N", help="refuse (400) a request whose prompt plus max_tokens exceed N")
    sim.add_argument("--max-reply-tokens", type=int, default=None, metavar="N",
                     help="cut every reply at N tokens (finish_reason length) whatever max_tokens asks, as llama.cpp's --n-predict does")
    sim.add_argument("--serve-as", default=None, metavar="SERVER:WEIGHTS",
                     help="describe served weights as a self-hosted server does (llama.cpp, ollama, vllm, lmstudio or tgi, then a "
                          "model path or tag: llama.cpp:/models/q4.gguf); other WEIGHTS answer other verdicts (the judge cache keys by them)")
    sim.add_argument("--slots", type=int, default=None, metavar="S",
                     help="compute at most S requests at once and queue the rest, as llama.cpp's --parallel (its /props total_slots)")
    view = sub.add_parser("view", help="look at runs in a local, read-only web app on 127.0.0.1 (prints its URL)",
                          **_examples("tracejudge view                                   # every run under runs/",
                                      "tracejudge view runs/demo --baseline runs/last-night --port 8765"))
    view.add_argument("run_dirs", type=Path, nargs="*", metavar="RUN_DIR", help="run directories, or folders of them (default: every one under runs/)")
    view.add_argument("--port", type=int, default=8765, help="TCP port (0 picks a free one)")
    view.add_argument("--baseline", type=Path, metavar="RUN_DIR", help="run shown beside each case and diffed against")
    # Also after the command (`tracejudge run x.yaml --log-level debug`, as users type it); SUPPRESS keeps
    # a value given before the command when none follows it.
    for command in sub.choices.values():
        command.add_argument("--log-level", default=argparse.SUPPRESS, type=str.lower, choices=_LOG_LEVELS,
                             help="structlog level (debug, info, warning, error)")
    return p


def _init_format(value: str) -> str:
    """`init --format`: a format that holds no model output is refused with where to start instead (exit 2)."""
    starter = _starter()
    if value in starter.LIVE_ONLY_FORMATS:
        raise argparse.ArgumentTypeError(
            f"{value} carries no model output to score (only the questions and what is expected), so it needs a live "
            f"target that answers them: start from {starter.LIVE_EXAMPLES[value]} (a live target on format {value}) "
            f"and set dataset.path (README, \"Live targets\")")
    return value


def _home_path(value: str) -> Path:
    """An `init` path with a leading `~` (or `~user`) made the home folder, as the config reads its paths.

    The shell leaves `--dataset=~/x.jsonl` and a quoted `'~/x.jsonl'` as typed: taken literally, the first was "no such
    file", and a folder named `~` beside it was written as `~/x.jsonl`, which the config read as the home one.
    """
    return Path(os.path.expanduser(value))


def _starter():
    from tracejudge.entrypoints import starter

    return starter
