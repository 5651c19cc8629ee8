"""promptfoo's trajectory steps, read from tracejudge's normalized trace, and the JavaScript rules its assertions compare by.

Source: promptfoo `src/assertions/trajectoryUtils.ts` (`extractTrajectorySteps`,
`normalizeTrajectoryMatcher`, `matchesTrajectoryStep`, `formatTrajectoryStep`,
`formatTrajectoryArgs`), `src/assertions/traceUtils.ts` (`matchesPattern`) and
`src/assertions/trajectory.ts` (`groupToolStepsByTurn`, `turnMatchesGroup`,
`matchesExpectedArgsPartial`, Node's `util.isDeepStrictEqual`). The assertions
themselves are in `tracejudge.stages.score.promptfoo_trajectory`, whose docstring
says what maps to what.

promptfoo compares in JavaScript; what differs from Python's own rules is done
here the JavaScript way, so a verdict and a reason come out as promptfoo's:

- a glob (`*`, `?`; `promptfoo_glob`) matches case-insensitively as a JavaScript regular expression
  without the `u` flag does: letters fold by `toUpperCase`, never from non-ASCII to
  ASCII (`ſ` is not `s`), `?` is one UTF-16 unit, and neither wildcard crosses a line
  break (`\\n`, `\\r`, U+2028, U+2029);
- values are equal as `isDeepStrictEqual` says: `1 == 1.0`, but `true` is not `1`,
  `0` is not `-0`, and `NaN` equals `NaN`; mappings ignore key order;
- arguments are written as `JSON.stringify` writes them: `1.0` is `1`, `1e-7` is
  `1e-7`, keys that are array indices (`"0"`, `"42"`) first, in numeric order.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from tracejudge.core.records import Case
from tracejudge.stages.score.promptfoo_glob import matches_pattern

__all__ = [
    "MISSING",
    "STEP_TYPES",
    "StepMatcher",
    "TrajectoryStep",
    "format_args",
    "format_step",
    "js_equal",
    "js_number",
    "matches_partial",
    "matches_pattern",
    "tool_turns",
    "trajectory_steps",
]

STEP_TYPES = ("command", "message", "reasoning", "search", "span", "tool")
"""promptfoo's `TrajectoryStepType`s, the values a matcher's `type` may take."""


class _Missing:
    """JavaScript's `undefined` for a step's `args`: no arguments were captured (distinct from `null`)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()

# promptfoo's `DEFAULT_COMMAND_TOOL_NAMES`; a case's `metadata.commandToolNames` adds to them, as a trace's
# `metadata.commandToolNames` does there.
_COMMAND_TOOLS = frozenset({"exec_command", "local_shell", "shell"})
# JavaScript's `String.prototype.trim` and `\s`: Python's `str.strip()` also strips U+001C–U+001F and U+0085, and not U+FEFF.
_JS_SPACE = "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_JS_SPLIT = re.compile(f"[{_JS_SPACE}]+")


@dataclass(frozen=True, slots=True)
class TrajectoryStep:
    """One promptfoo trajectory step: `type` (one of `STEP_TYPES`), `name`, the `aliases` a pattern is tried on.

    `args` is the tool call's arguments as promptfoo would hold them (`MISSING` when none were
    captured); `turn` is the index of the trace step (model turn) it came from; `call` is the tool
    call's index among the trace's calls (`Trace.tool_calls()`), None for a step that is no call.
    """

    type: str
    name: str
    aliases: tuple[str, ...]
    turn: int
    call: int | None = None
    args: Any = MISSING


@dataclass(frozen=True, slots=True)
class StepMatcher:
    """promptfoo's `TrajectoryStepMatcher` once normalized: `pattern` or else `name` (a glob), and the allowed `types`.

    `types` None allows every type. `label` is how promptfoo's reasons name the matcher
    (`matcher.pattern || matcher.name || '*'`).
    """

    name: str | None = None
    pattern: str | None = None
    types: tuple[str, ...] | None = None

    @property
    def glob(self) -> str | None:
        """The glob tried on a step's aliases (`pattern || name`), None when there is none (every step matches)."""
        return self.pattern or self.name or None

    @property
    def label(self) -> str:
        """The matcher as promptfoo's reasons write it."""
        return self.pattern or self.name or "*"

    def matches(self, step: TrajectoryStep) -> bool:
        """promptfoo's `matchesTrajectoryStep(step, matcher)`: the type is allowed and some alias matches the glob."""
        if self.types is not None and step.type not in self.types:
            return False
        glob = self.glob
        if glob is None:
            return True
        return any(matches_pattern(alias, glob) for alias in step.aliases)


def trajectory_steps(case: Case) -> list[TrajectoryStep]:
    """The steps promptfoo's `extractTrajectorySteps` would list for `case`'s trace, in order (its trace must be set).

    For each trace step (one model request), in order: a `span` step named `chat` (the
    model request), a `reasoning` step when it has a `thought`, a `message` step named
    `agent response` when it has an `output`, then one step per tool call — `command` for
    a shell tool (`exec_command`, `local_shell`, `shell`, the names in
    `metadata.commandToolNames`, or `execute` given `cmd`/`command`/`commands`) whose
    arguments hold the command, else `tool`. When no step has an output, the trace's
    `output` is one `message` step at the end.
    """
    trace = case.trace
    assert trace is not None
    shells = _command_tools(case.metadata.get("commandToolNames"))
    out: list[TrajectoryStep] = []
    call_index = 0
    said = False
    for turn, step in enumerate(trace.steps):
        out.append(TrajectoryStep("span", "chat", ("chat",), turn))
        if step.thought:
            out.append(TrajectoryStep("reasoning", "reasoning", ("reasoning",), turn))
        if step.output:
            said = True
            out.append(TrajectoryStep("message", "agent response", ("agent response", "message"), turn))
        for call in step.tool_calls:
            out.append(_call_step(call, turn, call_index, shells))
            call_index += 1
    if not said and trace.output:
        out.append(TrajectoryStep("message", "agent response", ("agent response", "message"), len(trace.steps)))
    return out


def _command_tools(extra: Any) -> frozenset[str]:
    # promptfoo's `resolveCommandToolNames`: entries that are not non-blank strings are skipped, not refused.
    if not isinstance(extra, list):
        return _COMMAND_TOOLS
    names = {name.strip(_JS_SPACE).lower() for name in extra if isinstance(name, str) and name.strip(_JS_SPACE)}
    return _COMMAND_TOOLS | names


def _call_step(call: Any, turn: int, index: int, shells: frozenset[str]) -> TrajectoryStep:
    args = _args(call)
    name = call.name
    key = name.strip(_JS_SPACE).lower()
    shell = key in shells or (key == "execute" and isinstance(args, dict) and any(k in args for k in ("cmd", "command", "commands")))
    command = _command(args) if shell else None
    if command is not None:
        aliases = [command, name]
        executable = _JS_SPLIT.split(command.strip(_JS_SPACE))[0]
        if executable:
            aliases.append(executable)
        return TrajectoryStep("command", command, tuple(dict.fromkeys(aliases)), turn, index, args)
    return TrajectoryStep("tool", name, (name,), turn, index, args)


def _args(call: Any) -> Any:
    """The call's arguments as promptfoo's `normalizeStructuredAttribute` leaves them."""
    if call.arguments_missing:
        return MISSING
    raw = call.arguments
    if not call.arguments_invalid or not isinstance(raw, str):
        return raw
    # A payload that is no JSON object is kept raw by the trace; promptfoo parses what JSON it can (an array,
    # a number) and keeps other text, trimmed, as a string.
    text = raw.strip(_JS_SPACE)
    if not text:
        return MISSING
    try:
        return json.loads(text, parse_constant=_no_constant)
    except ValueError:
        return text


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")  # (`JSON.parse` refuses NaN and Infinity; Python's parser takes them)


def _command(args: Any) -> str | None:
    """The command a shell call's arguments hold (`cmd`, else `command`, else `commands` joined by `; `), or None."""
    if not isinstance(args, dict):
        return None
    if "cmd" in args:
        value, sep = args["cmd"], " "
    elif "command" in args:
        value, sep = args["command"], " "
    elif "commands" in args:
        value, sep = args["commands"], "; "
    else:
        return None
    if isinstance(value, str):
        return value.strip(_JS_SPACE) or None
    if isinstance(value, list):
        return sep.join(part for part in (_js_string(v).strip(_JS_SPACE) for v in value) if part) or None
    return None


def tool_turns(tool_steps: Sequence[TrajectoryStep]) -> list[list[TrajectoryStep]]:
    """The `tool` steps grouped by turn (the calls of one trace step), in order; a step without calls is no turn.

    promptfoo's `groupToolStepsByTurn` groups calls whose spans overlap in time under one
    parent span; here the calls one model response asked for are one turn, whether they ran
    concurrently or one after another.
    """
    turns: list[list[TrajectoryStep]] = []
    last = -1
    for step in tool_steps:
        if step.turn != last or not turns:
            turns.append([])
            last = step.turn
        turns[-1].append(step)
    return turns


def format_step(step: TrajectoryStep) -> str:
    """promptfoo's `formatTrajectoryStep`: `type:name` (`tool:search_orders`, `command:ls -la`)."""
    return f"{step.type}:{step.name}"


def format_args(args: Any) -> str:
    """promptfoo's `formatTrajectoryArgs`: `JSON.stringify(args)`, `(none)` when none were captured."""
    if args is MISSING:
        return "(none)"
    return _js_json(args)


# --- JavaScript's rules -------------------------------------------------------------------------------------------


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _js_double(x: int | float) -> float:
    """The number JavaScript holds for `x`: a double, as `JSON.parse` reads the integer's digits (past 2**53 rounded to
    the nearest double, so 9007199254740993 is 9007199254740992; past the largest double, an infinity)."""
    if type(x) is float:
        return x
    try:
        return float(x)
    except OverflowError:
        return math.inf if x > 0 else -math.inf


def js_equal(a: Any, b: Any) -> bool:
    """Node's `util.isDeepStrictEqual(a, b)` for JSON values (see the module docstring for where it differs from `==`)."""
    if _is_number(a) or _is_number(b):
        if not (_is_number(a) and _is_number(b)):
            return False
        a, b = _js_double(a), _js_double(b)
        if a != a or b != b:  # NaN
            return a != a and b != b
        if a == 0 and b == 0:
            return math.copysign(1.0, a) == math.copysign(1.0, b)
        return a == b
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
        return a is b
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    if isinstance(a, list) or isinstance(b, list):
        return isinstance(a, list) and isinstance(b, list) and len(a) == len(b) and all(map(js_equal, a, b))
    if isinstance(a, dict) or isinstance(b, dict):
        return (isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys()
                and all(js_equal(v, b[k]) for k, v in a.items()))
    return bool(a == b)


def matches_partial(actual: Any, expected: Any) -> bool:
    """promptfoo's `matchesExpectedArgsPartial`: every key of an expected mapping is in the actual one and matches,
    at every depth; lists match item by item and must be as long; anything else is `js_equal`."""
    if isinstance(expected, list):
        return isinstance(actual, list) and len(actual) == len(expected) and all(map(matches_partial, actual, expected))
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(k in actual and matches_partial(actual[k], v) for k, v in expected.items())
    return js_equal(actual, expected)


_INDEX = re.compile(r"0|[1-9][0-9]*")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _js_keys(mapping: dict[Any, Any]) -> Iterable[Any]:
    # A JavaScript object lists its array-index keys first, ascending, then the others as they were added.
    index = [k for k in mapping if isinstance(k, str) and _INDEX.fullmatch(k) and int(k) < 2**32 - 1]
    if not index:
        return mapping
    first = set(index)
    return [*sorted(index, key=int), *(k for k in mapping if k not in first)]


def _js_json(value: Any) -> str:
    """`JSON.stringify(value)` of a JSON value (Python's `json.dumps` writes `1.0`, `1e-07` and keeps key order)."""
    if value is None or value is True or value is False:
        return "null" if value is None else "true" if value else "false"
    if _is_number(value):
        value = _js_double(value)
        return js_number(value) if math.isfinite(value) else "null"
    if isinstance(value, str):
        text = json.dumps(value, ensure_ascii=False)
        return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text) if not text.isascii() else text
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_js_json(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{_js_json(str(k))}:{_js_json(value[k])}" for k in _js_keys(value)) + "}"
    return _js_json(str(value))


def js_number(x: int | float) -> str:
    """JavaScript's `Number.prototype.toString()` of a finite number (ECMA-262 `Number::toString`); an `int` as the double
    JavaScript would hold (`_js_double`: 10**21 is `1e+21`)."""
    if isinstance(x, int):
        if -(2**53) <= x <= 2**53:
            return str(x)
        x = _js_double(x)
    if x == 0:
        return "0"
    sign = "-" if x < 0 else ""
    m = re.fullmatch(r"(\d+)(?:\.(\d+))?(?:e([+-]\d+))?", repr(abs(x)))
    assert m is not None
    whole, frac, exp = m.group(1), m.group(2) or "", int(m.group(3) or 0)
    digits = whole + frac
    stripped = digits.lstrip("0")
    n = len(whole) + exp - (len(digits) - len(stripped))  # the value is 0.<digits> × 10^n
    digits = stripped.rstrip("0")
    k = len(digits)
    if k <= n <= 21:
        body = digits + "0" * (n - k)
    elif 0 < n <= 21:
        body = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        body = "0." + "0" * -n + digits
    else:
        e = n - 1
        body = digits[0] + ("." + digits[1:] if k > 1 else "") + ("e+" if e >= 0 else "e-") + str(abs(e))
    return sign + body


def _js_string(value: Any) -> str:
    """JavaScript's `String(value)` of a JSON value (a command given as a list of parts)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if _is_number(value):
        value = _js_double(value)
        if not math.isfinite(value):
            return "NaN" if value != value else "Infinity" if value > 0 else "-Infinity"
        return js_number(value)
    if isinstance(value, list):
        return ",".join("" if v is None else _js_string(v) for v in value)
    if isinstance(value, dict):
        return "[object Object]"
    return str(value)
