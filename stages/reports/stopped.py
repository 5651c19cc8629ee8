"""The reports of a run segment an error or an abort ended (`finish_stopped`): never what an earlier segment said.

A segment that raised (a judge that cannot be reached: exit 3; a second Ctrl-C: exit 130) wrote only its summary,
so junit.xml, report.md and report.html kept the last segment's PASS. `stop_cause` says how it ended, as the command
line does; `finish_stopped` replaces the reports at once and then rewrites them from the results there. A segment
stopped without an exception (a first Ctrl-C or SIGTERM: the cases under way finish) is written as any other, with
`stopped_gracefully`'s `stopped` in its summary: the reports then name the command that resumes it, as the terminal does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tracejudge.core.config import RunConfig
from tracejudge.core.errors import TracejudgeError
from tracejudge.engine import store

__all__ = ["SAME_COMMAND", "STRAY_CANCEL", "finish_stopped", "stop_cause", "stopped_gracefully"]

# How tracejudge's own errors that stop a run (the judge's `stopping`, a live target that cannot be reached) say to
# resume it; `finish_stopped` and `tracejudge run --fresh` name the command instead.
SAME_COMMAND = "run the same command to resume"

# What a cancellation of the run that no stop asked for is (`stop_cause(stray_cancel=True)`), as the command line's
# internal error line says it (`entrypoints.commands.run`).
STRAY_CANCEL = ("the run was cancelled, and no stop was asked for (no Ctrl-C, no SIGTERM): user code (a metric, the agent) "
                "cancelled tasks it does not own, such as every task of `asyncio.all_tasks()`?")


def stop_cause(exc: BaseException, *, stray_cancel: bool = False, run_dir: Path | None = None) -> dict[str, Any]:
    """What ended a run segment that raised `exc`, as the command line reports it: `{"how", "exit_status", "reason"}`.

    An abort (a second Ctrl-C or SIGTERM cancels the run; a KeyboardInterrupt from user code) is 130; tracejudge's own
    errors (a judge or trace store that cannot be reached) carry their status (`TracejudgeError.exit_status`); anything
    else (a full disk, an internal error) is 3, as `entrypoints.cli` exits on it; a full disk says so, naming the file
    (`disk full: cannot write RUN/results.jsonl (no space left on the device)`; `run_dir` when the error names none). `stray_cancel`: the run's caller
    cancels it only after asking it to stop, and did not (`runner.run(cancel_after_stop=True)`, the command line): a
    cancellation is then user code's (`STRAY_CANCEL`), an internal error (3), not an abort.
    """
    import asyncio

    from tracejudge.core.errors import FULL_DISK, full_disk, leaves, text_of

    found = leaves(exc)

    def cancel(leaf: BaseException) -> bool:
        return isinstance(leaf, asyncio.CancelledError) or type(leaf).__name__ == "Cancelled"

    if any(isinstance(leaf, KeyboardInterrupt) or (cancel(leaf) and not stray_cancel) for leaf in found):
        return {"how": "aborted", "exit_status": 130, "reason": "the run was aborted (interrupted again while stopping, or cancelled) "
                "before it finished; the results already written are kept"}
    if stray_cancel and found and all(cancel(leaf) for leaf in found):
        return {"how": "error", "exit_status": 3, "reason": f"internal error: CancelledError: {STRAY_CANCEL}; the results already "
                f"written are kept; {SAME_COMMAND}"}
    found = [leaf for leaf in found if not cancel(leaf)]  # (beside another error, the stray cancellation is not the cause)
    if found and all(isinstance(leaf, TracejudgeError) for leaf in found):
        status = max(int(getattr(leaf, "exit_status", 2)) for leaf in found)
        reason = "; ".join(str(leaf) for leaf in found)
    elif (full := full_disk(exc)) is not None:
        # (as the command line says it, `disk full: cannot write …`, not as an internal error with Python's errno)
        status = 3
        where = full.filename if full.filename is not None else (f"a file in {run_dir}" if run_dir is not None else "a file of the run")
        reason = (f"disk full: cannot write {where} ({FULL_DISK[full.errno]}); the results already written are kept. "
                  f"Free space, then {SAME_COMMAND}")
    else:
        status = 3
        leaf = next((e for e in found if not isinstance(e, TracejudgeError)), found[0] if found else exc)
        text = text_of(leaf) if not isinstance(leaf, MemoryError) else "out of memory"
        what = "cannot write" if isinstance(leaf, OSError) and leaf.filename else "internal error"
        reason = f"{what}: {type(leaf).__name__}: {(text.splitlines() or [''])[0]}"
    return {"how": "error", "exit_status": status, "reason": reason[:2000]}


def finish_stopped(run_dir: Path, summary: dict[str, Any], config: RunConfig, exc: BaseException, *, segment: int | None = None,
                   results_intact: bool = True, resume: str | None = None, stray_cancel: bool = False) -> None:
    """Make the reports of a run segment that `exc` ended (an error, an abort) say so, never what an earlier segment said.

    Out of memory (`core.out_of_memory`), the failing frames' locals are freed before anything is written. Then, at once, `junit.xml` becomes one `run` test case in `<error>` naming the cause and `report.md` and
    `report.html` are removed: interrupted from here on (again, or killed), nothing left in the directory says PASS.
    Then, when the results file is intact, `finish_run` writes `summary.json` (with `stopped`: the cause, and the verdict
    INTERRUPTED) and the three reports from the results there. `resume`, the command line that resumes the run (the
    one `run` recorded), replaces a cause's "run the same command to resume": not true of a `--fresh` run, whose
    command would start over in yet another directory. `stray_cancel`: as `stop_cause` takes it. Never raises an `Exception` of its own: the run's
    error is what the command reports; what could not be written is logged.
    """
    from tracejudge.core.log import get_logger
    from tracejudge.stages.aggregate.gate_coverage import stopped_words
    from tracejudge.stages.reports.junit import stopped_junit

    from tracejudge.core.out_of_memory import free_frames, out_of_memory

    if out_of_memory(exc) is not None:
        # What ran out is held by the failing frames' locals until the run's error is reported: freed first, the reports
        # fit in what is left (written before, they ran out too and the crash path had to report their MemoryError).
        free_frames(exc)
    log = get_logger("tracejudge.reports")
    run_dir = Path(run_dir)
    cause = stop_cause(exc, stray_cancel=stray_cancel, run_dir=Path(run_dir))
    resume = _shown(resume) if resume else resume
    if resume and SAME_COMMAND in cause["reason"]:
        cause["reason"] = cause["reason"].replace(SAME_COMMAND, f"resume with: {resume}")
    elif resume and cause["how"] == "aborted":  # (a CI job's timeout: what it saves says how to go on, as the terminal did)
        cause["reason"] += f"; resume with: {resume}"
    summary["complete"] = False
    summary["stopped"] = {"segment": segment, **cause}
    try:
        for name in ("report.md", "report.html"):
            (run_dir / name).unlink(missing_ok=True)
        try:
            why = f"the run stopped before it finished ({stopped_words(cause)}): {cause['reason']}"
            store.atomic_write_text(run_dir / "junit.xml", stopped_junit("INTERRUPTED", why))
        except OSError:
            (run_dir / "junit.xml").unlink(missing_ok=True)  # (a full disk: better no junit.xml than last night's)
            raise
    except OSError as err:
        if not _same_trouble(exc, err):  # (a full disk that stopped the run stops this too: the command's own line says so)
            log.warning("the reports of the stopped run could not be replaced", run_dir=str(run_dir), error=str(err))
    if not results_intact:  # results.jsonl could not be written (a full disk): no summary may claim what it holds
        return
    try:
        from tracejudge.stages.reports.finish import finish_run

        finish_run(run_dir, summary, config, stand_ins=False)  # (a report it cannot write: the one above still says why)
    except Exception as err:  # noqa: BLE001  (the minimal junit.xml above stands)
        log.warning("the reports of the stopped run could not be written", run_dir=str(run_dir), error=f"{type(err).__name__}: {err}")


def stopped_gracefully(segment: int | None, resume: str, requested: bool = True, cut: int = 0) -> dict[str, Any]:
    """`summary.stopped` of a segment that ended before every case was written without raising: `requested` when a
    stop was asked for (a first Ctrl-C or SIGTERM: no new case was taken; those under way finished, or `cut` of them
    were cut when the stop's grace ran out, `judge.stop_grace_s`), else some cases' results were lost (a worker process
    that died). Its reason names `resume`, the command that resumes the run (the one `run` recorded): a `--fresh` run's
    own command would start over in yet another directory."""
    under_way = (f"{cut} case{'s' if cut > 1 else ''} under way did not finish within the stop's grace (judge.stop_grace_s) and "
                 f"{'were' if cut > 1 else 'was'} cut, not written: the resume judges {'them' if cut > 1 else 'it'} again") if cut else "those under way finished"
    why = (f"stopped on request (a Ctrl-C or SIGTERM: no new case was taken, {under_way})" if requested
           else "some cases' results were not written")
    return {"segment": segment, "how": "stopped", "exit_status": 130, "reason": f"{why}; resume with: {_shown(resume)}"}


def _shown(command: str) -> str:
    """A recorded command as the saved reports give it: a key or a URL's password typed on the command line masked."""
    from tracejudge.llm.redact import redact, redact_url_passwords

    return redact(redact_url_passwords(command))


def _same_trouble(exc: BaseException, err: OSError) -> bool:
    """Whether `err` (replacing the reports) is the trouble that stopped the run (`exc`): an OSError of the same errno."""
    from tracejudge.core.errors import leaves

    return err.errno is not None and any(isinstance(leaf, OSError) and leaf.errno == err.errno for leaf in leaves(exc))
