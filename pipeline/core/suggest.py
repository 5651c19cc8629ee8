""""Did you mean …?" for a mistyped name: the nearest valid names, and the keys a config model allows.

One place for the rule, so `explain`, unknown config keys, unknown metric
types, unknown metric options and values outside a fixed set (`provider:
simulater`) suggest alike (`error_hint`); and which of pydantic's errors a
user is shown (`pair_missing`, `merge_union_errors`).
"""

from __future__ import annotations

import ast
import re
import typing
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel

__all__ = ["MAPPING_TYPES", "PAIRED", "PEER_KEYS", "PEER_PARAMETERS", "PEER_SECTIONS", "closest", "did_you_mean", "error_hint", "key_hint", "merge_union_errors", "message", "missing_key_typo", "model_keys",
           "pair_missing", "unknown_key_message"]

# difflib's ratio: 2·matches / total length. 0.5 still finds `modle` → `model`,
# `ToolCall` → `ToolCalls`, `dri` → `dir`, and rarely offers an unrelated word.
CUTOFF = 0.5


def closest(name: str, choices: Iterable[str], n: int = 3, *, typo: bool = False) -> list[str]:
    """Up to `n` of `choices` near `name` (difflib's ratio ≥ `CUTOFF`, without case), nearest first.

    `typo`: only names a typing slip away (at most a third of the letters
    edited, at least 2), for keys, where a loose match misleads more than it
    helps (`nokey` is not `workers`); metric types keep the looser match, which
    also offers related names (`ToolCall` → `ToolCalls, MaxToolCalls, …`).
    Either way a name that is the other's leading or trailing `_`-separated
    words counts as near (`max_cost` → `max_cost_usd`, `latency` →
    `latency_ms`): a unit or qualifier left off is no typing slip, but the
    same mistake.

    Nearest: fewest typing edits (a swap of two neighbours is one edit), then
    the same letters in another order (`modle` is `model`, not `mode`), then
    difflib's ratio.
    """
    import difflib  # (here: only a mistake asks for a suggestion, and every run imported it, about 0.5 ms)

    by_lower: dict[str, str] = {}
    for choice in choices:
        by_lower.setdefault(choice.lower(), choice)
    if not by_lower:
        return []
    typed = name.lower()
    near = difflib.get_close_matches(typed, list(by_lower), n=len(by_lower), cutoff=CUTOFF)
    near += [m for m in by_lower if m not in near and _words_affix(typed, m)]
    ratio = {m: difflib.SequenceMatcher(None, typed, m).ratio() for m in near}
    edits = {m: _edits(typed, m) for m in near}
    if typo:
        near = [m for m in near if edits[m] <= max(2, len(typed) // 3) or _words_affix(typed, m)]
    near.sort(key=lambda m: (edits[m], sorted(m) != sorted(typed), -ratio[m]))
    return [by_lower[m] for m in near[:n]]


def _words_affix(a: str, b: str) -> bool:
    """True when the shorter of `a`, `b` (3 letters at least) is the longer's first or last `_`/`-`-separated words."""
    short, long = sorted((a, b), key=len)
    if len(short) < 3 or short == long:
        return False
    return any(long.startswith(short + sep) or long.endswith(sep + short) for sep in "_-")


def _edits(a: str, b: str) -> int:
    """Optimal-string-alignment distance: insertions, deletions, substitutions and adjacent swaps."""
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = a[i - 1] != b[j - 1]
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        prev2, prev = prev, cur
    return prev[len(b)]


def did_you_mean(name: str, choices: Iterable[str], n: int = 3, *, typo: bool = False) -> str:
    """`"did you mean a, b?"` naming the nearest choices (see `closest`), or `""` when none is near."""
    near = closest(name, choices, n, typo=typo)
    return f"did you mean {', '.join(near)}?" if near else ""


# Other tools' names for a key this config spells otherwise, where one clearly maps (no typing slip finds them):
# their name → (our key, what to know when moving the value across, or ""). Offered only where our key is allowed.
# (`timeout` → `timeout_s`, `model_name` → `model`, `api_key` → `api_key_env` need no entry: a name that is the
# other's leading words is found anyway.)
PEER_KEYS: dict[str, tuple[str, str]] = {
    # The OpenAI and Anthropic SDK clients, deepeval's and LangChain's models: retries after the first try.
    "max_retries": ("max_attempts", "max_retries counts the retries after the first try, max_attempts every try: "
                    "max_retries N is max_attempts N+1"),
    "num_retries": ("max_attempts", "LiteLLM's num_retries counts the retries after the first try, max_attempts every try: "
                    "num_retries N is max_attempts N+1"),
    # OpenAI Chat Completions' newer name for the reply cap; the Responses API's and Gemini's.
    "max_completion_tokens": ("max_tokens", ""),
    "max_output_tokens": ("max_tokens", ""),
    # LangChain's ChatOpenAI and LiteLLM: seconds, as timeout_s.
    "request_timeout": ("timeout_s", "in seconds"),
    # LiteLLM's and LangChain's name for an OpenAI-compatible server's address.
    "api_base": ("base_url", ""),
    "openai_api_base": ("base_url", ""),
}

# The peers' names for a metric's parameter (the same rule as `PEER_KEYS`; a name may stand for a parameter of several
# metrics: the first one the metric has is offered).
PEER_PARAMETERS: dict[str, tuple[tuple[str, str], ...]] = {
    # The expected text under the peers' case field (deepeval's and pydantic-evals' `expected_output`, inspect's
    # `target`), written on `Contains` (pydantic-evals' `Contains(value=…)` names it `value`, as here).
    "expected": (("value", ""),),
    "expected_output": (("expected", ""), ("value", "")),
    # pydantic-evals' `Equals(value=…)` and promptfoo's `equals` (ExactMatch), promptfoo's `regex` (Regex).
    "value": (("expected", ""), ("pattern", "")),
    "regex": (("pattern", ""),),
    # inspect's `includes` / `match` / `pattern` (`ignore_case`) against pydantic-evals' `Contains` (`case_sensitive`).
    "ignore_case": (("case_sensitive", "ignore_case: true is case_sensitive: false"),),
    "case_sensitive": (("ignore_case", "case_sensitive: false is ignore_case: true"),),
    # A list of expected tool names: deepeval's `expected_tools` (ToolCorrectness here), `expected_trajectory` (TrajectoryMatch).
    "expected_tools": (("expected_trajectory", ""),),
    "expected_trajectory": (("expected_tools", ""),),
}

# Other tools' top-level config keys: a config written for promptfoo (`promptfooconfig.yaml`) or a pydantic-evals dataset
# file run as is, or copied from. Where each part goes here (README: "Migrating from …").
_MIGRATING = 'see README, "Migrating from pydantic-evals / deepeval / multivon / τ²-bench / promptfoo / inspect-ai"'
PEER_SECTIONS: dict[str, str] = {
    "providers": f"promptfoo's `providers`: the model that judges is `judge:` ({{model: \"openai:gpt-4o-mini\"}}); your agent, "
                 f"if tracejudge is to run it, is `target:` ({_MIGRATING})",
    "prompts": f"promptfoo's `prompts`: tracejudge scores what an agent did, its recorded traces (`dataset:`) or a run of it "
               f"(`target:`) ({_MIGRATING})",
    "tests": f"promptfoo's `tests`: the cases are the `dataset:` file and the assertions are `metrics:` ({_MIGRATING})",
    "defaulttest": f"promptfoo's `defaultTest`: checks for every case are `metrics:` ({_MIGRATING})",
    "cases": f"a pydantic-evals dataset's `cases`: the cases are the `dataset:` file (format native, one case a line) "
             f"({_MIGRATING})",
    "evaluators": f"pydantic-evals' `evaluators`: they are `metrics:` ({_MIGRATING})",
}


def key_hint(model: type[BaseModel] | None, loc: tuple[Any, ...]) -> str:
    """For pydantic's `extra_forbidden` error at `loc` inside `model`: `"; did you mean key?"`, or `""`.

    Another tool's name for an allowed key (`PEER_KEYS`: `max_retries`, the OpenAI SDK's and deepeval's, is
    `max_attempts` here) names that key, with what differs (`"; did you mean max_attempts? (max_retries counts …)"`).
    """
    if not loc:
        return ""
    keys = model_keys(model, loc)
    typed = str(loc[-1]).lower()
    if len(loc) == 1 and typed in PEER_SECTIONS and {"dataset", "metrics"} <= set(keys):  # (a run config's own top level)
        return f"; {PEER_SECTIONS[typed]}"
    for peer in (PEER_KEYS[typed],) if typed in PEER_KEYS else PEER_PARAMETERS.get(typed, ()):
        if peer[0] in keys:
            return f"; did you mean {peer[0]}?" + (f" ({peer[1]})" if peer[1] else "")
    hint = did_you_mean(str(loc[-1]), keys, n=1, typo=True)
    return f"; {hint}" if hint else ""


# A quoted value in pydantic's list of the values a literal or enum allows (`'a', 'b' or 'c'`); repr quotes either way.
_QUOTED = re.compile(r"'(?:[^'\\]|\\.)*'" + r'|"(?:[^"\\]|\\.)*"')


def error_hint(err: Any, model: type[BaseModel] | None) -> str:
    """`"; did you mean X?"` for one pydantic error of validating `model`, or `""` when nothing valid is near.

    An unknown key (`extra_forbidden`) names the nearest key allowed at its
    place (`key_hint`); a string outside a fixed set of values (a `Literal` or
    an `Enum`: `literal_error`, `enum`) names the nearest allowed value, read
    from the error's own list of them, so any such field anywhere is covered;
    so does a string that missed a pattern of plain words (`^(trace|output)$`),
    which also lists the words: `" (expected one of: trace, output); did you mean output?"`.
    """
    if err["type"] == "extra_forbidden":
        return key_hint(model, tuple(err["loc"]))
    if err["type"] == "string_pattern_mismatch":
        return _words_hint(err)
    expected = (err.get("ctx") or {}).get("expected")
    if err["type"] not in ("literal_error", "enum") or not isinstance(err.get("input"), str) or not isinstance(expected, str):
        return ""
    values = []
    for quoted in _QUOTED.findall(expected):
        try:
            values.append(str(ast.literal_eval(quoted)))
        except (ValueError, SyntaxError):
            continue  # not a plain string value: nothing to offer for it
    hint = did_you_mean(err["input"], values, n=1, typo=True)
    return f"; {hint}" if hint else ""


# A pattern that is a plain choice of words (`^(trace|output)$`): a fixed set of values written as a regex.
_WORDS = re.compile(r"\^\((?:\?:)?([\w-]+(?:\|[\w-]+)*)\)\$")


def _words_hint(err: Any) -> str:
    """For a string that missed a pattern of plain words: `" (expected one of: a, b); did you mean b?"`, else `""`."""
    words = _WORDS.fullmatch(str((err.get("ctx") or {}).get("pattern", "")))
    if words is None or not isinstance(err.get("input"), str):
        return ""
    values = words.group(1).split("|")
    hint = did_you_mean(err["input"], values, n=1, typo=True)
    return f" (expected one of: {', '.join(values)})" + (f"; {hint}" if hint else "")


def model_keys(model: type[BaseModel] | None, loc: tuple[Any, ...]) -> list[str]:
    """The keys allowed beside the last item of pydantic error location `loc`, inside `model`.

    `loc` is the path of a key pydantic refused (`("judge", "modle")`); the
    result is the field names (and aliases) of the model that holds it, found by
    following `loc[:-1]` through nested models, optional fields, lists and
    mappings (list indices, mapping keys and union tags are stepped over).
    `[]` when the path leads to no model.
    """
    models = [model] if model is not None else []
    for part in loc[:-1]:
        fields = [m.model_fields[part] for m in models if isinstance(part, str) and part in m.model_fields]
        if fields:
            models = [m for f in fields for m in _models(f.annotation)]
    keys: list[str] = []
    for m in models:
        for name, info in m.model_fields.items():
            keys += [name] + ([info.alias] if info.alias else [])
    return keys


def _models(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models inside a field's annotation (`X | None`, `list[X]`, `dict[str, X]`, unions)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in typing.get_args(annotation) for m in _models(arg)]


def missing_key_typo(missing: str, present: Iterable[Any]) -> str | None:
    """The key of `present` that is a typing slip of the required key `missing` (`nam` for `name`), or None."""
    return next((str(k) for k in present if str(k) != missing and closest(str(k), [missing], typo=True)), None)


# The type of an error `pair_missing` made of a required key missing and an unknown key beside it.
PAIRED = "unknown_key_for_missing"


def pair_missing(errors: list[Any], model: type[BaseModel] | None = None) -> list[dict[str, Any]]:
    """`errors` with each required key missing beside an unknown key made one error of type `PAIRED`, at the
    unknown key (so its line is the one shown), in the place of the earlier of the two; other errors are kept, in order.

    The unknown key that is a typo of the missing one is taken first (`{"nam": …}`: `unknown_key_message`);
    missing keys left over are paired, in order, with unknown keys left over (`rubric:` for `criteria:` is no typo,
    but the same mistake: "unknown key `rubric`; the required key `criteria` is missing", naming the key of
    `model` an unknown one is a typo of, if any). pydantic lists `criteria: Field required` before
    `rubric: Extra inputs are not permitted`, which hid the unknown key, and counted the pair as two problems.
    """
    out: list[dict[str, Any] | None] = [dict(e) for e in errors]
    places: dict[tuple[Any, ...], dict[str, list[int]]] = {}
    for i, e in enumerate(errors):
        if e["type"] in ("missing", "extra_forbidden") and e["loc"]:
            places.setdefault(tuple(e["loc"][:-1]), {"missing": [], "extra_forbidden": []})[e["type"]].append(i)
    for parent, kinds in places.items():
        unknown = {str(errors[j]["loc"][-1]): j for j in kinds["extra_forbidden"]}
        left: list[int] = []
        for i in kinds["missing"]:
            want = str(errors[i]["loc"][-1])
            typo = missing_key_typo(want, unknown)
            if typo is None:
                left.append(i)
                continue
            _pair(out, i, unknown.pop(typo), (*parent, typo), unknown_key_message(typo, want))
        for i, (key, j) in zip(left, list(unknown.items())):
            near = did_you_mean(key, model_keys(model, (*parent, key)), n=1, typo=True)
            msg = f"unknown key `{key}`{f' ({near})' if near else ''}; the required key `{errors[i]['loc'][-1]}` is missing"
            if not parent and not near and (peer := key_hint(model, (key,))).startswith("; ") and str(key).lower() in PEER_SECTIONS:
                msg += peer
            _pair(out, i, j, (*parent, key), msg)
    return [e for e in out if e is not None]


def _pair(out: list[dict[str, Any] | None], missing: int, unknown: int, loc: tuple[Any, ...], msg: str) -> None:
    # The pair's error goes where the earlier of its two was; the later one's place is emptied.
    first, later = sorted((missing, unknown))
    out[first] = {**(out[missing] or {}), "loc": loc, "type": PAIRED, "msg": msg}
    out[later] = None


def unknown_key_message(typo: str, want: str) -> str:
    """The message of an unknown key `typo` standing where the required key `want` is missing."""
    return f"unknown key `{typo}`; did you mean {want}? (required key `{want}` is missing)"


# pydantic's words before a validator's own message: they say nothing to a user, whose every other error reads
# `key: problem` (`Regex: pattern: invalid regular expression: …`, not `…: Value error, invalid regular expression: …`).
_VALIDATOR_PREFIXES = {"value_error": "Value error, ", "assertion_error": "Assertion failed, "}


def message(err: Any) -> str:
    """The `msg` of pydantic error `err` (a mapping of `errors()`) as a user reads it: a validator's own message (a
    `ValueError` or `AssertionError` raised in it) without pydantic's "Value error, " / "Assertion failed, " before it;
    any other message as pydantic wrote it."""
    msg = str(err["msg"])
    prefix = _VALIDATOR_PREFIXES.get(err.get("type", ""))
    return msg.removeprefix(prefix) if prefix else msg


MAPPING_TYPES = frozenset({"dict_type", "model_type", "model_attributes_type"})
"""pydantic's error types for a value that should have been a mapping (a section, a model's keys)."""

# The extra `loc` element pydantic adds for each member of a union a value fits none of: the member's schema
# (`literal['a','b']`, `list[str]`, `str`, `function-after[...]`), never a key of a config.
_MEMBER = re.compile(r"^(?:[a-z][a-z-]*\[.*\]|str|int|float|bool|none|bytes)$", re.S)


def merge_union_errors(errors: list[Any]) -> list[dict[str, Any]]:
    """`errors` with the errors of one value that fits no member of a union made one, at the value's own place.

    pydantic reports such a value once per member, each under the member's schema as a last `loc`
    element (`group_by.literal['conversation','trace','run']: Input should be 'conversation', …` and
    `group_by.list[str]: Input should be a valid list`): a user sees one line at `group_by` whose
    message names every member's expectation (`Input should be 'conversation', 'trace' or 'run', or a
    valid list`). The merged error keeps the first member's type and input; other errors are kept as they are, in order.
    A mapping given where one member is a model is read as that model (`_structured_member`).
    """
    out: list[dict[str, Any]] = []
    merged: dict[tuple[Any, ...], dict[str, Any]] = {}
    errors = _structured_member(errors)
    unions = {tuple(e["loc"][:-1]) for e in errors if _scalar_member(e)}
    for err in errors:
        loc = tuple(err["loc"])
        # (a model member, named by its class, is one member more where a scalar one shows the union)
        member = _scalar_member(err) or (len(loc) > 1 and loc[:-1] in unions and isinstance(loc[-1], str) and _CLASS.match(loc[-1]) is not None)
        if len(loc) < 2 or not member:
            out.append(dict(err))
            continue
        # (a model member's "valid dictionary or instance of TokenizerFactor" names a class no config shows)
        msg = "a mapping of the section's keys" if err["type"] in MAPPING_TYPES else err["msg"].removeprefix("Input should be ")
        at = merged.get(loc[:-1])
        if at is None:
            at = merged[loc[:-1]] = {**err, "loc": loc[:-1], "msg": "Input should be " + msg}
            out.append(at)
        elif msg not in at["msg"]:
            at["msg"] += ", or " + msg
    return out


# A model member of a union: pydantic names it by its class (`judge.tokenizer.TokenizerFactor.factor`).
_CLASS = re.compile(r"^[A-Z][A-Za-z0-9]*$")


def _scalar_member(err: Any) -> bool:
    """True when `err` is about a union member that is no model: its `loc` ends in the member's schema (`str`, `list[str]`)."""
    loc = err["loc"]
    return bool(loc) and isinstance(loc[-1], str) and _MEMBER.match(loc[-1]) is not None


def _structured_member(errors: list[Any]) -> list[Any]:
    """`errors` with a mapping that fits no member of a union reported as the union's model member reports it.

    A mapping given for `str | TokenizerFactor` was meant as the model: pydantic's complaint that it is not
    a string and its class name in every `loc` (`tokenizer.TokenizerFactor.encodng`) hid the one line that
    helps (`tokenizer.encodng: unknown key`). With several model members, the one with fewest errors is taken.
    Errors of anything else pass unchanged.
    """
    scalars = {tuple(e["loc"][:-1]): e for e in errors if _scalar_member(e)}
    by_union: dict[tuple[Any, ...], dict[str, list[int]]] = {}
    for i, e in enumerate(errors):
        loc = tuple(e["loc"])
        for n in range(len(loc) - 1, -1, -1):
            if loc[:n] in scalars and isinstance(loc[n], str) and _CLASS.match(loc[n]):
                by_union.setdefault(loc[:n], {}).setdefault(loc[n], []).append(i)
                break
    drop: set[int] = set()
    fixed: dict[int, dict[str, Any]] = {}
    for union, members in by_union.items():
        if not isinstance(scalars[union].get("input"), dict):
            continue
        best = min(members.values(), key=len)
        drop.update(i for i, e in enumerate(errors) if tuple(e["loc"][:len(union)]) == union)
        for i in best:
            loc = tuple(errors[i]["loc"])
            fixed[i] = {**errors[i], "loc": (*union, *loc[len(union) + 1:])}
    if not drop:
        return errors
    return [fixed[i] if i in fixed else e for i, e in enumerate(errors) if i in fixed or i not in drop]
