"""Whether a resume command read back from a run directory is one `tracejudge run` writes (`is_run_line`, `checked_resume`).

A run records the command that resumes it (`checkpoint.json`'s segments, `manifest.json`, a merge's `summary.json`), and
`report` and the viewer show it to be copied into a shell. A run directory is input like any other (an unpacked
artifact, a folder shared by someone else): one holding `tracejudge run c.yaml; rm -rf ~` had that shown as the command
to run. What is shown is now only what the tool writes — `tracejudge [--log-level L] run CONFIG` and the options
`commands.run.resume_command` keeps, every word shell-quoted, optionally after `cd DIR &&` — or a sentence saying the
recorded text is not shown. Each word of such a line reaches `tracejudge` as one argument: nothing in it is run by the
shell (`;`, `$(…)`, a backquote are quoted text).
"""

from __future__ import annotations

import shlex

__all__ = ["FLAGS", "NOT_SHOWN", "PLACEHOLDER", "PLACEHOLDER_NOT_SHOWN", "VALUED", "checked_resume", "is_run_line"]

LOG_LEVELS = ("debug", "info", "warning", "error")  # (`commands.parser._LOG_LEVELS`)
# The options `commands.run.resume_command` writes after the config: with a value, and alone. A test builds a command
# with each and checks it is accepted, so one added there and not here is seen.
VALUED = ("--run-dir", "--set", "--shard", "--rescore", "--progress-every")
FLAGS = ("--explain-cache", "--no-progress")
# What a resume command that is not one the tool writes is shown as (its text is not).
NOT_SHOWN = "(not shown: the command this run directory records is not one tracejudge writes)"
# The end of the command `run_state.resume_command` writes for a run that recorded none (a config to fill in), and for
# one whose recorded command is not shown.
PLACEHOLDER = " (CONFIG: the config the run was started with)"
PLACEHOLDER_NOT_SHOWN = " (CONFIG: the config the run was started with; the command the run directory records is not one tracejudge writes, so it is not shown)"


def _quoted(words: list[str]) -> str:
    return " ".join(shlex.quote(w) for w in words)


def _run_words(words: list[str]) -> bool:
    """Whether `words` are `tracejudge [--log-level L] run CONFIG [OPTION …]` with only the options a resume keeps."""
    if words[:1] != ["tracejudge"]:
        return False
    rest = words[1:]
    if rest[:1] == ["--log-level"]:
        if len(rest) < 2 or rest[1] not in LOG_LEVELS:
            return False
        rest = rest[2:]
    if rest[:1] != ["run"] or len(rest) < 2 or (rest[1].startswith("-") and rest[1] != "-"):
        return False
    i = 2
    while i < len(rest):
        if rest[i] in FLAGS:
            i += 1
        elif rest[i] in VALUED and i + 1 < len(rest):
            i += 2
        else:
            return False
    return True


def is_run_line(line: str) -> bool:
    """Whether `line` is a `tracejudge run` command as the tool writes one (`commands.run.resume_command`): its words
    shell-quoted and joined by one space, only the options a resume keeps, optionally ending with the note a masked
    value adds (`redact_command.MASKED_NOTE`). Never raises."""
    return _checked(line, cd=False)


def checked_resume(text: str) -> str:
    """`text`, a resume command as `run_state.resume_command` gives one (`LINE`, `cd DIR && LINE`, or the shape with
    CONFIG to fill in), when its line is one the tool writes (`is_run_line`) and `DIR` is shell-quoted; else `NOT_SHOWN`.
    For a command stored whole, as a merge's `summary.json` keeps its shards'. Never raises."""
    line = next((text[: -len(end)] for end in (PLACEHOLDER, PLACEHOLDER_NOT_SHOWN) if text.endswith(end)), text)
    return text if _checked(line, cd=True) else NOT_SHOWN


def _checked(line: str, *, cd: bool) -> bool:
    from tracejudge.llm.redact_command import without_note  # (as `run_state` imports it: when a command is read)

    command, _ = without_note(line)
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    prefix = ""
    if cd and words[:1] == ["cd"]:  # (`cd DIR && `: a quoted `'&&'` is a word, which the quoted words then differ from)
        if len(words) < 3 or words[2] != "&&":
            return False
        prefix, words = f"cd {shlex.quote(words[1])} && ", words[3:]
    return prefix + _quoted(words) == command and _run_words(words)
