"""Read inspect-ai evaluation logs from disk, one raw record per sample (format `inspect`, `inspect_samples`).

inspect writes a log in one of two framings (inspect_ai `log/_recorders`):

- `.eval`: a zip archive: `header.json` (the `EvalLog` without its samples; `_journal/start.json` holds the
  `eval` spec of a log still being written), one member `samples/<id>_epoch_<n>.json` per sample and epoch,
  `summaries.json`, `reductions.json`; its members are read by `inspect_archive` (Zstandard-compressed: without
  `zstandard` before Python 3.14 each sample says what to install). A member written twice (a re-run sample) is
  read once, its last copy, as inspect does. An archive without its central directory (cut short while written,
  or copied in part) is read from the start: the samples before the cut score, the cut one and the file each
  report the cut. The log's task, model, epochs and tags come from `header.json`, else `_journal/start.json`.
- `.json`: one JSON document, the `EvalLog` with its `samples` list. Each sample is decoded on its own, where it
  starts, so a sample that is not JSON costs itself and the samples after it (where it ends cannot be told), not
  the samples before it.

`dataset.path` is a log file (read whatever its name) or a folder searched for `**/*.eval` and `**/*.json`,
and for `**/*.eval.gz` / `**/*.json.gz` (also `.bz2`, `.xz`, `.zst`: read to be named compressed), leaving out inspect's own listings (`logs.json`, `eval-set.json`, `listing.json`) and the files under a hidden
folder or a log's `*.shards` / `*.checkpoints` companion (the merged log holds the shards' samples): one warning
per folder says how many files were not read. A record's `file` is the log's path, `line` the line its sample
starts on (`.json`); for a `.eval` member it is `<log path>/<member>`, line 1. A compressed file (gzip and the
like, whatever its name) is one `invalid_input` saying so (`encoding.compressed`): decompress it first.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tracejudge.core.log import get_logger
from tracejudge.core.regular_file import open_regular
from tracejudge.stages.extract.inspect_archive import ZIP_SIGNATURE, Broken, Member, NotAZip, members
from tracejudge.stages.load import JSON_ERRORS, RawRecord, json_error, loads, utf8_text
from tracejudge.stages.load.encoding import compressed, strip_bom
from tracejudge.stages.load.framing import quiet, quieted

__all__ = ["LogInfo", "Sample", "as_object", "count", "log_files", "read"]

log = get_logger("tracejudge.extract.inspect")

_NOT_LOGS = frozenset({"logs.json", "eval-set.json", "listing.json"})  # inspect's eval-set and viewer listings
_COMPANIONS = (".shards", ".checkpoints")
_EPOCH = re.compile(r"_epoch_(\d+)\.json\Z")
_PACKED_LOG = re.compile(r"\.(eval|json)\.(gz|bz2|xz|zst)\Z")  # a log compressed after inspect wrote it: read, to say so


@dataclass(frozen=True, slots=True)
class LogInfo:
    """What every sample of one log shares: `task`, `model`, `epochs` (the run's count; None when the log says
    nothing), `tags` (the log's and its eval's), `name` (the log's file name), and `prefix`, what its case ids start
    with (option `id_prefix`: set here, where the options are known, so `peek_id` gives the id `adapt` gives)."""

    task: str | None
    model: str | None
    epochs: int | None
    tags: tuple[str, ...]
    name: str
    prefix: str | None = None


@dataclass(frozen=True, slots=True)
class Sample:
    """One sample as read: `data` (a `.eval` member's bytes, or the decoded object of a `.json` log) and its `log`."""

    data: Any
    log: LogInfo


def as_object(value: Any) -> dict[str, Any]:
    """`value` when it is a JSON object (a dict), else `{}`: a log's optional member read as what it should be."""
    return value if isinstance(value, dict) else {}


def log_files(path: Path) -> list[Path]:
    """`path` itself, or the log files of the folder `path` (module docstring), sorted; warns once per folder of the files left out."""
    if not path.is_dir():
        return [path]
    kept, skipped = [], []
    for p in sorted(path.rglob("*")):
        if p.is_dir() or not (p.is_file() or p.is_symlink()):  # (a link to a missing file is read: its error names it)
            continue
        parts = p.relative_to(path).parts[:-1]
        if (p.suffix in (".eval", ".json") or _PACKED_LOG.search(p.name)) and p.name not in _NOT_LOGS and not any(d.startswith(".") or d.endswith(_COMPANIONS) for d in parts):
            kept.append(p)
        else:
            skipped.append(p.relative_to(path).as_posix())
    if skipped and not quieted():  # (the progress bar's count lists the folder too: the run's own read says it)
        files = "1 file" if len(skipped) == 1 else f"{len(skipped)} files"
        log.warning(f"inspect: {files} under {path} not read (not an inspect log, or inspect's own listing or "
                    f"shard): {', '.join(skipped[:3])}{', …' if len(skipped) > 3 else ''}")
    return kept


def read(dataset: Any) -> Iterator[RawRecord]:
    """One `RawRecord` per sample of every log under `dataset.path` (its payload a `Sample`), or with `error` set for a
    sample or a file that cannot be read, naming it; at most `dataset.limit` records."""
    rule = (dataset.options or {}).get("id_prefix", "none")
    n = 0
    for path in log_files(Path(dataset.path)):
        last: tuple[LogInfo, LogInfo] | None = None  # (the file's `LogInfo`, and it prefixed: made once a file)
        for raw in _file_records(path):
            if rule != "none" and isinstance(raw.payload, Sample):
                if last is None or last[0] is not raw.payload.log:
                    last = (raw.payload.log, _prefixed(raw.payload.log, rule))
                raw.payload = Sample(raw.payload.data, last[1])
            yield raw
            n += 1
            if dataset.limit is not None and n >= dataset.limit:
                return


def _prefixed(log: LogInfo, rule: str) -> LogInfo:
    stem = log.name.rsplit(".", 1)[0]
    return replace(log, prefix=(log.task or stem) if rule == "task" else stem)  # (a log that lost its header names no task: its file does)


def count(dataset: Any) -> int:
    """How many records `read(dataset)` yields (a progress total): a `.eval` archive's samples are counted from its
    directory, without decompressing them."""
    n = 0
    with quiet():  # (the run's own read says what the folder holds that is not read)
        paths = log_files(Path(dataset.path))
    for path in paths:
        listed = _listed_samples(path) if _is_zip(path) else None
        n += listed if listed is not None else sum(1 for _ in _file_records(path))
    return n if dataset.limit is None else min(n, dataset.limit)


def _is_zip(path: Path) -> bool:
    if path.suffix == ".eval":
        return True
    try:
        with open_regular(path) as fh:
            return fh.read(4) == ZIP_SIGNATURE
    except OSError:
        return False


def _file_records(path: Path) -> Iterator[RawRecord]:
    try:
        if _is_zip(path):
            yield from _eval_log(path)
        else:
            yield from _json_log(path)
    except OSError as exc:
        yield RawRecord(str(path), 1, error=f"cannot read the log: {exc.strerror or exc}")


# ----------------------------------------------------------------------------------------------- .eval archives
def _listed_samples(path: Path) -> int | None:
    import zipfile

    try:
        with zipfile.ZipFile(path) as zf:
            return len(_sample_members(zf.namelist())) or 1
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        return None


def _sample_members(names: list[str]) -> list[str]:
    return [n for n in dict.fromkeys(names) if n.startswith("samples/") and n.endswith(".json")]


def _eval_log(path: Path) -> Iterator[RawRecord]:
    name = str(path)
    with open_regular(path) as fh:
        try:
            found, cut = members(fh)
        except NotAZip as exc:
            fh.seek(0)
            why = compressed(fh.read(8)) or f"it is no zip archive ({exc})"
            yield RawRecord(name, 1, error=f"not an inspect .eval log: {why}")
            return
        yield from _samples_of(found, name, cut)
    if cut is not None:
        yield RawRecord(name, 1, error=f"the .eval archive is cut short {cut} (no zip central directory: the log was still being "
                                       "written, or was copied in part); the samples before the cut were read")


def _samples_of(found: dict[str, Member], name: str, cut: str | None) -> Iterator[RawRecord]:
    samples = _sample_members(list(found))
    info = _eval_info(found, name, samples)
    if not samples and cut is None:
        yield RawRecord(name, 1, error="the log holds no samples (inspect ran with --no-log-samples, or none had finished)")
    for member in samples:
        where = f"{name}/{member}"
        try:
            yield RawRecord(where, 1, Sample(found[member].content(), info))
        except Broken as exc:
            yield RawRecord(where, 1, error=f"{member}: {exc}")


def _eval_info(found: dict[str, Member], name: str, samples: list[str]) -> LogInfo:
    """The log's `LogInfo` from `header.json` (else `_journal/start.json`); epochs, when neither says, from the member names."""
    spec: dict[str, Any] = {}
    top: dict[str, Any] = {}
    for member in ("header.json", "_journal/start.json"):
        if member in found:
            try:
                doc = loads(strip_bom(found[member].content()))
            except ValueError as exc:  # (`Broken` is one)
                log.warning(f"inspect: {name}/{member} cannot be read ({exc}); its samples are read without the task, model and tags")
                continue
            if isinstance(doc, dict) and isinstance(doc.get("eval"), dict):
                top, spec = doc, doc["eval"]
                break
    epochs = [int(m.group(1)) for s in samples if (m := _EPOCH.search(s))]
    return _info(top, spec, name, max(epochs, default=None))


def _info(top: dict[str, Any], spec: dict[str, Any], name: str, seen_epochs: int | None) -> LogInfo:
    epochs = as_object(spec.get("config")).get("epochs")
    if not isinstance(epochs, int) or isinstance(epochs, bool) or epochs < 1:
        epochs = seen_epochs
    tags = [t for src in (spec.get("tags"), top.get("tags")) if isinstance(src, list) for t in src if isinstance(t, str)]
    text = [v if isinstance(v, str) else None for v in (spec.get("task"), spec.get("model"))]
    return LogInfo(text[0], text[1], epochs, tuple(dict.fromkeys(tags)), Path(name).name)


# ----------------------------------------------------------------------------------------------- .json logs
_DECODER = json.JSONDecoder()
_WS = " \t\r\n"


def _json_log(path: Path) -> Iterator[RawRecord]:
    name = str(path)
    with open_regular(path) as fh:
        data = fh.read()
    try:
        text = utf8_text(strip_bom(data))
    except ValueError:
        yield RawRecord(name, 1, error=f"not an inspect log: {compressed(data[:8]) or 'the file is not UTF-8 JSON text'}")
        return
    lines = _Lines(text)
    top, entries, problem = _split(text, lines)
    if problem is None and not isinstance(top.get("eval"), dict) and "samples" not in top:
        keys = ", ".join(list(top)[:5]) or "none"
        problem = (1, f"not an inspect log: expected an EvalLog object with `eval` and `samples` at the top level (its keys: {keys})")
    elif problem is None and not entries:
        problem = (1, "the log holds no samples (inspect ran with --no-log-samples, or none had finished)")
    spec = as_object(top.get("eval"))
    seen = [s["epoch"] for _, s, _ in entries if isinstance(s, dict) and isinstance(s.get("epoch"), int) and not isinstance(s["epoch"], bool)]
    info = _info(top, spec, name, max(seen, default=None))
    for i, (line, sample, why) in enumerate(entries):
        yield RawRecord(name, line, error=f"samples[{i}]: {why}") if why else RawRecord(name, line, Sample(sample, info))
    if problem is not None:
        yield RawRecord(name, problem[0], error=problem[1])


class _Lines:
    """The line of an offset in `text`, counted on from the last one asked for (offsets come in order)."""

    def __init__(self, text: str) -> None:
        self.text, self.at, self.line = text, 0, 1

    def of(self, pos: int) -> int:
        if pos < self.at:
            self.at, self.line = 0, 1
        self.line += self.text.count("\n", self.at, pos)
        self.at = pos
        return self.line


def _skip_ws(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in _WS:
        pos += 1
    return pos


def _split(text: str, lines: _Lines) -> tuple[dict[str, Any], list[tuple[int, Any, str | None]], tuple[int, str] | None]:
    """`(the log's other members, its samples as (line, sample, None) or (line, None, why), a problem (line, why) or None)`.

    The top-level object is read member by member and `samples` element by element, so the samples read before a
    part that is not JSON are kept; the read stops there.
    """
    top: dict[str, Any] = {}
    entries: list[tuple[int, Any, str | None]] = []
    pos = _skip_ws(text, 0)
    if text[pos : pos + 1] != "{":
        return top, entries, (1, "not an inspect log: expected a JSON object (an EvalLog) at the top level")
    pos = _skip_ws(text, pos + 1)
    try:
        while text[pos : pos + 1] != "}":
            key, pos = _DECODER.raw_decode(text, pos)
            pos = _skip_ws(text, pos)
            if text[pos : pos + 1] != ":":
                raise json.JSONDecodeError("Expecting ':' delimiter", text, pos)
            pos = _skip_ws(text, pos + 1)
            if key == "samples" and text[pos : pos + 1] == "[":
                pos = _samples(text, pos + 1, lines, entries)
                if pos < 0:
                    return top, entries, None
                top[key] = True
            else:
                top[key], pos = _DECODER.raw_decode(text, pos)
            pos = _skip_ws(text, pos)
            if text[pos : pos + 1] == ",":
                pos = _skip_ws(text, pos + 1)
            elif text[pos : pos + 1] != "}":
                raise json.JSONDecodeError("Expecting ',' delimiter", text, pos)
    except JSON_ERRORS as exc:
        at = exc.lineno if isinstance(exc, json.JSONDecodeError) else 1
        return top, entries, (at, f"the log is not valid JSON outside its samples: {json_error(exc, 'file')}")
    if (after := _skip_ws(text, pos + 1)) < len(text):
        return top, entries, (lines.of(after), "the file goes on after the log's closing '}': not one inspect log")
    return top, entries, None


def _samples(text: str, pos: int, lines: _Lines, out: list[tuple[int, Any, str | None]]) -> int:
    """Read the `samples` list from `text[pos]` (after its `[`) into `out`: the offset after its `]`, or -1 where the read stops."""
    while True:
        pos = _skip_ws(text, pos)
        if pos >= len(text):
            out.append((lines.of(pos), None, "the file ends inside the samples list (it looks truncated)"))
            return -1
        if text[pos] == "]":
            return pos + 1
        start = pos
        try:
            sample, pos = _DECODER.raw_decode(text, pos)
        except JSON_ERRORS as exc:
            out.append((lines.of(start), None, f"{json_error(exc, 'file')}; where this sample ends cannot be told, so the samples "
                                               "after it are not read"))
            return -1
        out.append((lines.of(start), sample, None))
        pos = _skip_ws(text, pos)
        if text[pos : pos + 1] == ",":
            pos += 1
        elif text[pos : pos + 1] != "]":
            found = repr(text[pos]) if pos < len(text) else "the end of the file"
            out.append((lines.of(pos), None, f"expected ',' or ']' after a sample, found {found}; the samples after it are not read"))
            return -1
