"""README.md's shell blocks as a user meets them: what each runs, what it is shown to print, and how to compare.

A fenced block tagged `bash`, `sh`, `shell` or `console` is a shell block. An HTML comment on the
last non-blank line before its fence says how the README test treats it:

- `<!-- readme-test: skip (why) -->` — not run (a network install, another machine, a paid API, a
  browser, a command that serves until stopped); the test lists it with its reason.
- `<!-- readme-test: background (why) -->` — started and left running (a server the next blocks talk
  to), stopped at the end. Each `--port N` in it is replaced by a free port in every block and mapped
  back in printed output, so two runs of the test on one machine never collide.
- `<!-- readme-test: installed (why) -->` — run without its leading `python3 -m pip install … &&`
  (the test runs in the environment that install made).

A `text` block right after a shell block (only blank lines between) is what that block prints,
stdout and stderr together, as a terminal shows them. In a `console` block, lines starting with
`$ ` are the commands and the lines after them their output. In shown output, `<n>` stands for
one number (`1,234`, `0.52`, `-3`) and `…` for any text within a line; a line holding only `…`
stands for any number of lines (rows a busy machine adds, a value wrapped onto more lines). Runs of
spaces match runs of spaces (table padding follows the numbers); trailing whitespace is ignored.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path

SHELL_TAGS = {"bash", "sh", "shell", "console"}
KINDS = {"skip", "background", "installed"}
_FENCE = re.compile(r"^```(\w*)\s*$")
_MARKER = re.compile(r"^<!--\s*readme-test:\s*(\w[\w-]*)\s*(?:\((.*)\))?\s*-->\s*$")
_PIP = re.compile(r"^\s*python3 -m pip install [^&\n]*&&\s*", re.M)
PORT = re.compile(r"--port (\d+)\b")


@dataclass
class Block:
    """One shell block of README.md.

    `line` is the 1-based line of its opening fence, `section` the heading it sits under, `kind` its
    marker (`run` when unmarked), `reason` the marker's parenthesis, `script` what bash runs and
    `expected` the output README shows for it (None when it shows none); `end` is the 0-based line of its closing fence.
    """

    line: int
    section: str
    tag: str
    script: str
    kind: str = "run"
    reason: str = ""
    expected: list[str] | None = None
    end: int = 0
    where: str = field(init=False)

    def __post_init__(self) -> None:
        self.where = f"README.md:{self.line} ({self.section})"


def parse(text: str) -> list[Block]:
    """Every shell block of a README's `text`, in order.

    Raises ValueError naming the line for a marker of an unknown kind, a skip without a reason,
    an `installed` marker on a block with no `pip install … &&`, and an unclosed fence.
    """
    lines = text.splitlines()
    blocks: list[Block] = []
    section = "top"
    i = 0
    while i < len(lines):
        if lines[i].startswith("#"):
            section = lines[i].lstrip("#").strip()
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start, tag = i, m.group(1)
        end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("```")), None)
        if end is None:
            raise ValueError(f"README.md:{start + 1}: fence never closed")
        body = lines[start + 1:end]
        i = end + 1
        if tag == "text" and blocks and blocks[-1].expected is None and _only_blank(lines, blocks[-1].end, start):
            blocks[-1].expected = body
            continue
        if tag not in SHELL_TAGS:
            continue
        block = Block(start + 1, section, tag, "\n".join(body) + "\n", end=end)
        if tag == "console":
            block.script, block.expected = _console(body)
        marker = _previous_marker(lines, start)
        if marker:
            block.kind, block.reason = marker
            if block.kind not in KINDS:
                raise ValueError(f"{block.where}: unknown readme-test marker {block.kind!r} (known: {sorted(KINDS)})")
            if block.kind == "skip" and not block.reason:
                raise ValueError(f"{block.where}: a skipped block says why: <!-- readme-test: skip (why) -->")
            if block.kind == "installed":
                if not _PIP.search(block.script):
                    raise ValueError(f"{block.where}: marked `installed` but has no `python3 -m pip install … &&`")
                block.script = _PIP.sub("", block.script)
        blocks.append(block)
    return blocks


def _only_blank(lines: list[str], after: int, before: int) -> bool:
    return all(not line.strip() for line in lines[after + 1:before])


def _previous_marker(lines: list[str], fence: int) -> tuple[str, str] | None:
    j = fence - 1
    while j >= 0 and not lines[j].strip():
        j -= 1
    m = _MARKER.match(lines[j]) if j >= 0 else None
    return (m.group(1), (m.group(2) or "").strip()) if m else None


def _console(body: list[str]) -> tuple[str, list[str] | None]:
    commands = [line[2:] for line in body if line.startswith("$ ")]
    output = [line for line in body if not line.startswith("$ ")]
    return "\n".join(commands) + "\n", (output or None)


def _line_pattern(line: str) -> str:
    out = []
    for token in re.split(r"(<n>|…| +)", line.rstrip()):
        if token == "<n>":
            out.append(r"-?\d[\d,.]*")
        elif token == "…":
            out.append(r"[^\n]*?")
        elif token.startswith(" "):
            out.append(" +")
        elif token:
            out.append(re.escape(token))
    return "".join(out)


def mismatch(expected: list[str], printed: str) -> str | None:
    """None when `printed` is what `expected` shows, with its placeholders (module docstring) as wildcards;
    else a message naming the first shown line that nothing printed at that point matches, and what was printed."""
    shown = _trim(expected)
    lines = _trim(printed.splitlines())
    patterns = [None if line.strip() == "…" else re.compile(_line_pattern(line)) for line in shown]
    furthest = [0]

    @functools.cache
    def fits(e: int, a: int) -> bool:
        furthest[0] = max(furthest[0], e)
        if e == len(patterns):
            return a == len(lines)
        pattern = patterns[e]
        if pattern is None:  # any number of lines, none included
            return any(fits(e + 1, k) for k in range(a, len(lines) + 1))
        return a < len(lines) and pattern.fullmatch(lines[a]) is not None and fits(e + 1, a + 1)

    if fits(0, 0):
        return None
    e = furthest[0]
    where = f"shown line {e + 1}, {shown[e]!r}," if e < len(shown) else "the end of what README shows"
    return f"{where} matches nothing printed at that point (or more was printed). Printed:\n" + "\n".join(lines)


def _trim(lines: list[str]) -> list[str]:
    lines = [line.rstrip() for line in lines]
    while lines and not lines[-1]:
        lines.pop()
    while lines and not lines[0]:
        lines.pop(0)
    return lines


def copy_layout(repo: Path, data: Path, dest: Path) -> Path:
    """A clone-like copy of `repo` at `dest/NAME` (its tracked files and untracked Python sources; no runs, caches or venvs),
    with `data` reachable at `dest/shared/data`, as README expects (`../shared/data` from the root).

    Returns the copy's root. Without git (not a checkout), everything but ignored-looking folders is copied.
    """
    import shutil
    import subprocess

    root = dest / repo.name
    git = (repo / ".git").exists() and shutil.which("git")
    listed = subprocess.run(["git", "ls-files", "-z", "--cached"], cwd=repo, capture_output=True) if git else None
    # Untracked files come along only as Python sources (a module not yet committed): the configs and
    # runs that following README leaves in a working copy (`init`'s configs/chats.yaml) would make
    # the blocks that create them refuse to overwrite them.
    new = subprocess.run(["git", "ls-files", "-z", "--others", "--exclude-standard"], cwd=repo, capture_output=True) if git else None
    if listed is not None and listed.returncode == 0 and new is not None and new.returncode == 0:
        extra = [name for name in new.stdout.decode().split("\0") if name.endswith(".py")]
        for name in filter(None, listed.stdout.decode().split("\0") + extra):
            src = repo / name
            if src.is_file():
                (root / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, root / name)
    else:
        shutil.copytree(repo, root, ignore=shutil.ignore_patterns("runs", ".tracejudge", "__pycache__", "*.egg-info",
                                                                  ".git", ".venv", ".pytest_cache", "build", "dist"))
    (dest / "shared").mkdir()
    (dest / "shared" / "data").symlink_to(data, target_is_directory=True)
    return root
