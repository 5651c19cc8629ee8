"""Shards: split one sweep over N independent runs (a CI matrix), then read them back as one.

`tracejudge run CONFIG --shard I/N` (config key `run.shard: "I/N"`, 1-based)
scores only the cases whose id hashes into shard I, into its own run
directory (`RUN_DIR-shard-I-of-N` by default). The hash is blake2b of the
case id's UTF-8 bytes, so the split is the same on every machine, process
and Python version (Python's `hash()` is salted per process). `run.shard`
is part of the config hash: resuming a directory with another shard is
refused like any other config change.

`tracejudge report DIR1 DIR2 …`, `tracejudge compare` and the regression
gate read several shard directories as one run: `expand` turns a name into
its shard directories and `merge_runs` writes their results into one merged
run directory, whose summary and verdict are those of the whole sweep.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tracejudge.core.errors import TracejudgeError
from tracejudge.engine import store
from tracejudge.engine.keyset import KeySet, result_key
from tracejudge.engine.shard_figures import merged_run_figures

__all__ = ["Shard", "expand", "is_merge", "is_shard", "merge_runs", "merged_name", "merged_sources", "parse_shard", "shard_index", "shard_run_dir", "sweep_name"]

_SPEC = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")
_SUFFIX = re.compile(r"^(?P<base>.+)-shard-(?P<i>\d+)-of-(?P<n>\d+)$")
MERGED_KEY = "merged_from"

Shard = tuple[int, int]  # (index I, count N), 1 <= I <= N


def parse_shard(text: str) -> Shard:
    """`"I/N"` → `(I, N)`. Raises `ValueError` unless 1 <= I <= N."""
    m = _SPEC.match(str(text))
    if m is None:
        raise ValueError(f"a shard is written I/N (e.g. 2/4), got {text!r}")
    i, n = int(m.group(1)), int(m.group(2))
    if not 1 <= i <= n:
        raise ValueError(f"shard {text!r}: I must be between 1 and N")
    return i, n


def shard_index(case_id: str, count: int) -> int:
    """The shard (1..count) of `case_id`: blake2b-64 of its UTF-8 bytes, modulo `count`, plus one."""
    digest = hashlib.blake2b(case_id.encode("utf-8", "backslashreplace"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % count + 1


def shard_run_dir(base: Path, shard: Shard) -> Path:
    """The default run directory of `shard`: `BASE-shard-I-of-N` next to `base`."""
    i, n = shard
    return Path(base).with_name(f"{Path(base).name}-shard-{i}-of-{n}")


def _shard_dirs_of(base: Path) -> list[Path]:
    found: dict[int, list[Path]] = {}
    if not base.parent.is_dir():
        return []
    for p in base.parent.iterdir():
        m = _SUFFIX.match(p.name)
        if m and m.group("base") == base.name and (p / store.RESULTS).exists():
            found.setdefault(int(m.group("n")), []).append(p)
    if len(found) > 1:
        raise TracejudgeError(f"{base}: shard directories of several splits ({', '.join(f'of {n}' for n in sorted(found))}); name them explicitly")
    return sorted(next(iter(found.values())), key=lambda p: int(_SUFFIX.match(p.name).group("i"))) if found else []  # type: ignore[union-attr]


def expand(paths: Path | Sequence[Path]) -> list[Path]:
    """The run directories `paths` stand for.

    A run directory (one holding `results.jsonl`, or only the `manifest.json` of a run killed before its first result) stands for itself, unless
    it is a merge of shards whose shards are all still there: it then stands
    for them as they are now (`merged_sources`), so a shard run or resumed
    since the merge is read, not the merge's stale copy. A path that is no
    run directory, but whose `-shard-I-of-N` siblings are, stands for those
    shard directories. Raises `TracejudgeError` naming a path that is neither.
    """
    out: list[Path] = []
    for p in [paths] if isinstance(paths, (str, Path)) else paths:
        p = Path(p)
        # (A run killed between writing its manifest and creating results.jsonl is a run with no result yet.)
        if (p / store.RESULTS).exists() or (p / store.MANIFEST).is_file():
            out.extend(merged_sources(p) or [p])
            continue
        shards = _shard_dirs_of(p)
        if not shards:
            if (hint := _config_hint(p)) is not None:
                raise TracejudgeError(f"{p}: {hint}")
            if not p.exists():
                raise TracejudgeError(f"{p}: no such run directory (nor {p.name}-shard-I-of-N directories beside it)")
            raise TracejudgeError(f"{p}: no {store.RESULTS} here and no {p.name}-shard-I-of-N directories beside it (is it a run directory?)")
        out.extend(shards)
    return out


def _config_hint(p: Path) -> str | None:
    """For a run config given where a run directory goes (`report configs/demo.yaml`): the run directory it names; for a
    file of a run directory (`report runs/demo/results.jsonl`, tab-completed one level too deep): that directory."""
    if p.is_file() and ((p.parent / store.RESULTS).exists() or (p.parent / store.MANIFEST).is_file()):
        return f"a file of the run directory {p.parent}, not a run directory: give {p.parent}"
    if not (p.suffix in (".yaml", ".yml") and p.is_file()):
        return None
    try:
        import yaml

        with p.open(encoding="utf-8") as fh:
            doc = yaml.safe_load(fh)
        run_dir = (doc.get("run") or {}).get("dir", "runs/default")  # (`RunSection.dir`'s default)
        if not isinstance(run_dir, str):
            raise TypeError(run_dir)
    except Exception:  # (a config that does not read: the plain question stays)
        return "a run config, not a run directory: give the directory its run.dir names"
    # Relative to the config's folder, as the run resolves it (`core.config`).
    where = (p.parent / Path(run_dir).expanduser()).resolve()
    return f"a run config, not a run directory: its run.dir is {where}" + ("" if where.exists() else " (not written yet: run it first)")


def is_merge(run_dir: Path) -> bool:
    """True when `run_dir` is a merge of shard directories (`merge_runs` wrote it: its manifest records `merged_from`)."""
    return MERGED_KEY in (store.read_manifest(Path(run_dir)) or {})


def merged_sources(run_dir: Path) -> list[Path] | None:
    """The shard directories a merged run stands for now, or None when `run_dir` is no merge or cannot be refreshed.

    Those are the directories it was merged from, plus the shards it was merged without (its
    `missing_shards`) that have a directory beside them since. A recorded directory is looked
    for as recorded (relative to where the merge was made) and then by its name beside the
    merged run. None (the merge stands for itself) when any recorded directory is gone: its
    results would be lost from a new merge.
    """
    run_dir = Path(run_dir)
    manifest = store.read_manifest(run_dir) or {}
    recorded = manifest.get(MERGED_KEY)
    if not isinstance(recorded, list) or not recorded or not all(isinstance(d, str) for d in recorded):
        return None
    found: list[Path] = []
    for d in map(Path, recorded):
        here = d if (d / store.RESULTS).exists() else run_dir.parent / d.name
        if not (here / store.RESULTS).exists():
            return None
        found.append(here)
    bases = {m.group("base") for d in found if (m := _SUFFIX.match(d.name))}
    missing = manifest.get("missing_shards")
    if len(bases) == 1 and isinstance(missing, list) and missing:
        base = found[0].with_name(bases.pop())
        for spec in missing:
            try:
                candidate = shard_run_dir(base, parse_shard(str(spec)))
            except ValueError:
                continue
            if (candidate / store.RESULTS).exists():
                found.append(candidate)
    return sorted(found, key=lambda d: int(m.group("i")) if (m := _SUFFIX.match(d.name)) else 0)  # as a merge by name orders them


def sweep_name(run_dir: Path) -> str:
    """The name a run directory has without its `-shard-I-of-N` suffix (the sweep it belongs to)."""
    m = _SUFFIX.match(Path(run_dir).name)
    return m.group("base") if m else Path(run_dir).name


def merged_name(dirs: Sequence[Path]) -> Path:
    """Where the merge of `dirs` goes by default: their common name without `-shard-I-of-N`.

    Raises `TracejudgeError` when the names do not follow that pattern.
    """
    bases = set()
    for d in dirs:
        m = _SUFFIX.match(Path(d).name)
        bases.add(Path(d).with_name(m.group("base")) if m else None)
    if len(bases) != 1 or None in bases:
        raise TracejudgeError("the directories are not named BASE-shard-I-of-N with one BASE: give --out for the merged run")
    return bases.pop()  # type: ignore[return-value]


def _describe(run_dir: Path) -> tuple[dict[str, Any], Shard | None]:
    manifest = store.read_manifest(run_dir) or {}
    spec = ((manifest.get("config") or {}).get("run") or {}).get("shard")
    return manifest, (parse_shard(spec) if spec else None)


def is_shard(run_dir: Path) -> bool:
    """True when `run_dir` holds one shard of a sharded run (its manifest records `run.shard`).

    A lone shard is never reported as a whole run: merged alone, its missing
    siblings make the run incomplete, so a CI gate cannot pass on part of a sweep.
    """
    return _describe(Path(run_dir))[1] is not None


def merge_runs(dirs: Sequence[Path], out: Path) -> Path:
    """Write the shard runs `dirs` into `out` as one run directory; returns `out`.

    `out` gets `results.jsonl` (every shard's current results), a manifest
    (the shards' config without `run.shard`, plus `merged_from`: the shard
    directories) and a `summary.json` of run-level figures added over the
    shards (judge spending, elapsed time); `tracejudge.stages.reports.rebuild`
    then computes the merged metrics, verdict and reports. The merged run is
    `complete` only when every shard finished and every shard 1..N is there.

    Raises `TracejudgeError` when the directories are runs of different
    configs or datasets, repeat a shard, mix splits, hold a result whose id
    hashes to another shard than its directory's, repeat a (case, trial), or
    when `out` holds a run that is not a merge (it is never overwritten).
    """
    if not dirs:
        raise TracejudgeError("no run directories to merge")
    described = [(d, *_describe(d)) for d in dirs]
    for _, m, _ in described:
        m.setdefault("config_hash_unsharded", m.get("config_hash"))
    hashes = {(m.get("config_hash_unsharded"), m.get("dataset_fingerprint")) for _, m, _ in described}
    if len(hashes) > 1:
        raise TracejudgeError("cannot merge: the directories are runs of different configs or datasets: "
                              + ", ".join(f"{d} ({str(m.get('config_hash_unsharded'))[:12]})" for d, m, _ in described))
    shards = [s for _, _, s in described]
    counts = {s[1] for s in shards if s is not None}
    if len(counts) > 1:
        raise TracejudgeError(f"cannot merge shards of different splits: {sorted(counts)}")
    seen: dict[Shard, Path] = {}
    for d, _, s in described:
        if s is not None and s in seen:
            raise TracejudgeError(f"shard {s[0]}/{s[1]} given twice: {seen[s]} and {d}")
        if s is not None:
            seen[s] = d
    out = Path(out)
    prior = store.read_manifest(out) if out.exists() else None
    if prior is not None and MERGED_KEY not in prior:
        raise TracejudgeError(f"{out}: holds a run of its own (its manifest.json), which is never overwritten: give --out "
                              "a new or empty directory to write the reports to")
    if prior is None and out.is_dir() and (found := sorted(p.name for p in out.iterdir())):
        shown = ", ".join(found[:3]) + (f" and {len(found) - 3} more" if len(found) > 3 else "")
        raise TracejudgeError(f"{out}: already holds files that report did not write ({shown}); they are never overwritten: "
                              "give --out a new or empty directory to write the reports to")
    if any(out.resolve() == Path(d).resolve() for d in dirs):
        raise TracejudgeError(f"{out}: is one of the shards; give another --out")
    out.mkdir(parents=True, exist_ok=True)

    first = described[0][1]
    config = json.loads(json.dumps(first.get("config") or {}))
    config.get("run", {}).pop("shard", None)
    missing = [f"{i}/{next(iter(counts))}" for i in range(1, next(iter(counts)) + 1) if (i, next(iter(counts))) not in seen] if counts else []
    manifest = {**{k: v for k, v in first.items() if k not in ("config", "shard", "command")}, "config": config,
                "config_hash": first.get("config_hash_unsharded"), MERGED_KEY: [str(d) for d in dirs], "missing_shards": missing}
    store.atomic_write_text(out / store.MANIFEST, json.dumps(manifest, indent=2) + "\n")
    tmp = out / f".{store.RESULTS}.tmp"
    counts: list[int] = []  # each shard's standing results, for the shards block's descriptions
    readable: list[int] = []  # and how many of them are results (not damaged lines), for the merged run's count
    try:
        with open(tmp, "wb") as fh:
            seen_keys = KeySet()
            for d, _, s in described:
                counts.append(0)
                readable.append(0)
                for lineno, line in store.iter_current_numbered(Path(d) / store.RESULTS):
                    readable[-1] += _check_line(Path(d), lineno, line, s, seen_keys, dirs)
                    fh.write(line if line.endswith(b"\n") else line + b"\n")
                    counts[-1] += 1
    except TracejudgeError:
        tmp.unlink(missing_ok=True)
        raise
    tmp.replace(out / store.RESULTS)
    figures = {"config_hash": manifest["config_hash"], **merged_run_figures(dirs, missing, readable)}
    figures["shards"].update(_shard_states(described, counts, missing))
    store.atomic_write_text(out / store.SUMMARY, json.dumps(figures, indent=2) + "\n")
    return out


def _shard_states(described: Sequence[tuple[Path, dict[str, Any], Shard | None]], counts: list[int],
                  missing: list[str]) -> dict[str, Any]:
    """What the merge's incomplete parts hold, for `summary.shards` (keys present only when not empty).

    `interrupted`: the merged shards that were killed or stopped, `[{"shard": "2/2", "dir", "results", "resume"}]`
    with the command that resumes each (`run_state.resume_command`: what its own `tracejudge run` recorded).
    `beside`: the `missing` shards whose directory lies beside the named ones all the same (not named, so not
    merged): `[{"shard", "dir", "state", "results", "resume"?}]`, so a report never says a directory that exists
    is missing. A shard still being written is neither: `report` says IN PROGRESS for it.
    """
    from tracejudge.engine.run_state import run_state

    out: dict[str, Any] = {}
    interrupted = []
    for (d, _, s), n in zip(described, counts):
        st = run_state(Path(d), results=n)
        if st.state == "interrupted":
            interrupted.append({"shard": f"{s[0]}/{s[1]}" if s else None, "dir": str(d), "results": n, "resume": st.resume})
    if interrupted:
        out["interrupted"] = interrupted
    bases = {(Path(d).parent, m.group("base")) for d, _, _ in described if (m := _SUFFIX.match(Path(d).name))}
    beside = []
    if missing and len(bases) == 1:
        parent, base = bases.pop()
        for spec in missing:
            there = shard_run_dir(parent / base, parse_shard(spec))
            if (there / store.RESULTS).exists():
                st = run_state(there)
                beside.append({"shard": spec, "dir": str(there), "state": st.state, "results": st.results,
                               **({"resume": st.resume} if st.resume else {}), **({"holder": st.holder} if st.holder else {})})
    if beside:
        out["beside"] = beside
    return out


def _check_line(run_dir: Path, lineno: int, line: bytes, shard: Shard | None, seen: KeySet, dirs: Sequence[Path]) -> bool:
    """Whether a standing line of a shard is a result (False: a damaged line); refuse (`TracejudgeError`) a result that
    its shard's hash does not assign to it, or a repeated (case, trial) in a merge of several directories. The one
    directory of `report RUN --out DIR` is no merge: a line repeated there (pasted twice) is a damaged line, copied as
    it is, and the copy's report leaves it out with a warning naming it, as `report RUN` does.

    The labels (manifest, directory name) are not trusted: every result is checked by the same
    hash that assigned it (`shard_index`), so a shard copied under another label, or results
    moved between shard directories, cannot merge into a run that looks complete. A damaged line (not JSON, no
    case_id, a score of NaN: `result_shape`) is merged as it is: the merged run's report names it and its gate fails
    on the result it lost, as the shard's own report does (refusing it made `report RUN --out DIR` exit 2 where
    `report RUN` says FAIL; leaving it out made the merge PASS).
    """
    import pydantic_core
    from tracejudge.engine.admit import safe_text
    from tracejudge.engine.result_shape import result_problem

    where = f"{run_dir / store.RESULTS}:{lineno}"
    key = store.line_key(line)
    if key is None:
        return False  # (no key: no shard or repeat to check, and no reader counts it as a result)
    case_id, trial = key
    if shard is not None:
        home = shard_index(safe_text(case_id), shard[1])
        if home != shard[0]:
            raise TracejudgeError(f"cannot merge: {where}: case {case_id!r} belongs to shard {home}/{shard[1]}, "
                                  f"but the directory says it is shard {shard[0]}/{shard[1]} (a relabelled or mixed-up shard)")
    if not seen.add_hash(result_key(case_id, trial)):
        if len(dirs) == 1:
            return False  # (`report RUN --out DIR`: the copy's report names the line, as `report RUN` does)
        first = _first_place(dirs, case_id, trial)
        raise TracejudgeError(f"cannot merge: {where}: case {case_id!r} trial {trial} is repeated"
                              + (f" (first at {first})" if first else "") + "; each (case, trial) must come from one shard, once")
    return result_problem(pydantic_core.from_json(line)) is None


def _first_place(dirs: Sequence[Path], case_id: str, trial: int) -> str | None:
    # Only on the error path: where the first copy of a repeated (case, trial) is.
    for d in dirs:
        for lineno, line in store.iter_current_numbered(Path(d) / store.RESULTS):
            if store.line_key(line) == (case_id, trial):
                return f"{Path(d) / store.RESULTS}:{lineno}"
    return None
