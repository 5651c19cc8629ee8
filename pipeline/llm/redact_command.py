"""A `tracejudge` command line as a run records and shows it: its `--set` values masked as the run's config is.

The command that resumes a run is printed on the terminal (the verdict line, `Resume with:`, an error's hint), recorded
in `checkpoint.json` and `manifest.json` (`report`, the viewer and a merge read it from there) and saved in
`summary.json` and `junit.xml`. A `--set` may hold a credential (`judge.base_url=http://ann:pw@host/v1`, a key pasted
in `judge.api_key_env`, `metrics.0.expected_arguments={password: …}`), so the line is masked once, where it is built
(`redact_argv`), and every place gets the masked text: each `--set KEY.PATH=VALUE` by `redact_option`, the rule that
masks the same value in the recorded config (`redact_config`), every word also by `redact` (the shapes of a key, a
URL's password). A line that had a value masked cannot be run as it is: it ends with `MASKED_NOTE`, which says so.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable

from tracejudge.llm.redact import _HINT, MASK, redact, redact_config, redact_url_passwords

__all__ = ["MASKED_NOTE", "masked_line", "redact_argv", "redact_option", "without_note"]

# After a command line that had a value masked: running it as printed would give the config `[REDACTED]`.
MASKED_NOTE = "(a masked value: give it again)"


def _shapes(text: str) -> str:
    # (as the saved summary has always masked a command: the shapes of a key, a token, a URL's password; a word without a
    # credential's hint, most of a command, is left without compiling `redact`'s patterns)
    return text if _HINT.search(text) is None else redact(redact_url_passwords(text))


def redact_option(item: str) -> str:
    """`item`, a `--set` option's `KEY.PATH=VALUE` as typed, with its value masked as the run's recorded config masks the
    value at that key (`redact_config`: a credential's key such as `judge.api_key` or `…password` masks it whole, a key
    pasted in `api_key_env` is masked, a URL keeps all but its password) and every credential's shape masked
    (`redact`). The value's text as typed is kept when nothing in it is masked. An `item` without `=` is masked as text.
    Never raises."""
    key, eq, raw = item.partition("=")
    if not eq:
        return _shapes(item)
    value: object = raw
    if raw.strip() not in ("", "-"):
        try:
            import yaml  # (as `config_source.apply_overrides` reads the value)

            value = yaml.safe_load(raw)
        except Exception:  # noqa: BLE001  (not YAML: the config refuses it; its text is masked as text)
            value = raw
    last = key.strip().rsplit(".", 1)[-1]
    masked = redact_config(redact_url_passwords({last: value})).get(last)
    if masked is value or masked == value and type(masked) is type(value):  # (`is`: `.nan` is no equal of itself, nor a secret)
        text = raw
    else:  # (a string keeps what the config rule keeps of it, `http://ann:[REDACTED]@host`; a list or mapping is masked whole)
        text = masked if isinstance(masked, str) else MASK
    return f"{_shapes(key)}={_shapes(text)}"


def redact_argv(parts: Iterable[str]) -> str:
    """The command line of `parts` (`["tracejudge", "run", "c.yaml", "--set", "k=v", …]`) as a run records and prints it:
    shell-quoted, the option after each `--set` (or in `--set=…`) masked by `redact_option`, every word by `redact`, and
    `MASKED_NOTE` after it when anything was masked. Never raises."""
    words, masked, after_set = [], False, False
    for part in parts:
        if after_set:
            shown = redact_option(part)
        elif part.startswith("--set="):
            shown = "--set=" + redact_option(part[len("--set="):])
        else:
            shown = _shapes(part)
        after_set = part == "--set"
        masked = masked or shown != part
        words.append(shown)
    line = " ".join(shlex.quote(w) for w in words)
    return f"{line} {MASKED_NOTE}" if masked else line


def without_note(line: str) -> tuple[str, str]:
    """`(command, note)`: `line` without the `MASKED_NOTE` `redact_argv` may have put after it, and that note ("" when none)."""
    if line.endswith(" " + MASKED_NOTE):
        return line[: -len(MASKED_NOTE) - 1], " " + MASKED_NOTE
    return line, ""


def masked_line(line: str) -> str:
    """A recorded command `line` masked as `redact_argv` masks one it builds (a line a run recorded before that, in clear;
    one it built comes back as it is). A line `shlex` cannot split is masked as text (`redact`). Never raises."""
    command, note = without_note(line)
    if note:
        return line
    try:
        words = shlex.split(command)
    except ValueError:
        return _shapes(line)
    masked = redact_argv(words)
    # (a line this version built splits and joins back to itself; another one is kept as written unless it masks)
    return line if masked == " ".join(shlex.quote(w) for w in words) else masked
