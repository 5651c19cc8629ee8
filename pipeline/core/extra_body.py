"""`judge.extra_body`: request fields of the user's own, merged into every judge request body.

A self-hosted reasoning model thinks by default, and only a field of the request turns that off: vLLM and SGLang
`{"chat_template_kwargs": {"enable_thinking": false}}`, llama.cpp's server the same `chat_template_kwargs` (and
`reasoning_format`), Ollama's OpenAI-compatible endpoint `{"reasoning_effort": "none"}`. `extra_body` is sent with
every request the judge makes (verdicts, repair requests, multi-item and pairwise requests, batch mode, a panel
member's), as OpenAI's SDK sends its `extra_body`.

Rules (`validated`): the values are JSON (strings, finite numbers, booleans, null, lists, mappings with string keys);
a key tracejudge sets itself in the request is refused, naming the setting that controls it, and so is one it never
sends or sends with no setting to change it (`stream`: it never streams), saying so (`reserved`): extra_body adds
fields, it never replaces one tracejudge sends, nor is replaced by one. A top-level key that is empty (or blank) is
refused: it names no field; inside a value an empty key is the value's own data, sent as written. Every problem is
said at once. A top-level key given as null is refused:
in a panel member's extra_body null means "not sent" (below), so the same null in the section sent as JSON null, as
OpenAI's SDK sends an `extra_body` (and so inspect-ai's and pydantic-ai's), would read one way and act another; a null
inside a value (`chat_template_kwargs: {x: null}`) is a value, sent as written. On Anthropic, `thinking` other than
`{type: disabled}` is refused too: Anthropic refuses thinking beside a forced tool, and the verdict is a forced tool.

A panel member's own `extra_body` is put over the section's key by key (`merged`); a key the member gives as null
is left out of its requests. A member on another provider than the section's does not inherit the section's
extra_body (its fields are another server's), as it does not inherit its base URL.

What a run directory records of it (`recorded`: manifest.json, configs.jsonl, summary.json) keeps a value longer than
`RECORDED_MAX` characters of JSON as its size and sha256 (`"[sha256 … of 2097154 characters of JSON, not kept]"`): a
prompt-sized field was copied whole into each. Two values compare as their digests do, so a resume and `compare` still
tell any change; the config hash is computed over the values themselves. A credential inside such a value is masked
before the digest, so a resume tells its change by the manifest's salted digests of the values as given
(`engine.manifest.diff`). A score's judge block records the fields by `digest` of what summary.json shows.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from typing import Any

from pydantic_core import InitErrorDetails, PydanticCustomError, ValidationError

__all__ = ["RECORDED_MAX", "digest", "is_digest", "merged", "recorded", "recorded_config", "reserved", "secrets", "shown", "validated"]

# Characters of JSON a value of extra_body may have and be recorded as it is (`recorded`).
RECORDED_MAX = 4096

# Levels of lists and mappings a value of extra_body may nest (no server's request field comes near).
_MAX_DEPTH = 64

# The top-level keys of a protocol extra_body may not send, each with why. A key tracejudge sends from a setting names
# that setting (`set it there`); a key it never sends (it never streams, asks one choice) or sends with no setting to
# change (the messages it writes, the verdict tool it forces) is reserved, and says so: no setting would let it through.
_SENT = "sent"  # the value names the judge setting the field is sent from
_BOTH: dict[str, tuple[str, str]] = {
    "model": (_SENT, "judge.model (a panel member's `model`)"),
    "messages": ("reserved", "tracejudge writes every message (the metric's prompt and the trace); no setting changes them"),
    "temperature": (_SENT, "judge.temperature"),
    "max_tokens": (_SENT, "judge.max_tokens"),
    "stream": ("reserved", "tracejudge never streams (it sends no `stream`, whose default is false, and reads each reply "
                           "whole), and no setting changes that"),
}
_OPENAI: dict[str, tuple[str, str]] = {
    **_BOTH,
    "max_completion_tokens": ("reserved", "tracejudge caps each reply with `max_tokens`, from judge.max_tokens: set that "
                                          "(a server given both may read either)"),
    "n": ("reserved", "tracejudge reads one choice of each reply; judge.samples asks a request N times, each sample a "
                      "request of its own"),
    "stream_options": ("reserved", "tracejudge never streams (it reads each reply whole), so no stream option applies; "
                                   "no setting changes that"),
}
_ANTHROPIC: dict[str, tuple[str, str]] = {
    **_BOTH,
    "system": ("reserved", "tracejudge writes the metric's system prompt there; no setting changes it"),
    "tools": ("reserved", "the verdict schema goes to Anthropic as the one tool tracejudge forces; no setting changes it"),
    "tool_choice": ("reserved", "tracejudge forces its verdict tool; no setting changes it"),
}


def reserved(provider: str, structured: str = "json_schema", cache_hints: bool = True) -> dict[str, str]:
    """The top-level keys `judge.extra_body` may not send to `provider` (`simulator` speaks OpenAI's protocol) under
    `structured` (`judge.structured_output`) and `cache_hints`, each with the refusal's reason: the judge setting a key
    is sent from (`tracejudge sets `max_tokens` in its requests, from judge.max_tokens: set it there`), or why a key
    no setting controls is reserved (`stream`: tracejudge never streams)."""
    table = dict(_ANTHROPIC if provider == "anthropic" else _OPENAI)
    if provider != "anthropic" and structured != "none":
        table["response_format"] = (_SENT, "judge.structured_output (`none` sends no response_format, and extra_body may then send one)")
    if provider != "anthropic" and cache_hints:
        table["prompt_cache_key"] = (_SENT, "judge.cache_hints (false sends no prompt_cache_key, and extra_body may then send one)")
    return {key: (f"tracejudge sets `{key}` in its requests, from {why}: set it there (extra_body adds fields to a request; "
                  "it never replaces one tracejudge sends)" if how == _SENT else f"`{key}` is reserved: {why}; leave it out")
            for key, (how, why) in table.items()}


def _json_problems(value: Any, loc: tuple[Any, ...]) -> Iterator[tuple[tuple[Any, ...], str]]:
    """`(loc, message)` of each part of `value` that JSON cannot hold, or nested deeper than `_MAX_DEPTH`, in the
    order of `value`'s keys and items (a mapping's key before its value)."""
    if len(loc) > _MAX_DEPTH + 1:  # (the run's recorded copies and the request's encoder stop well before Python's own limit)
        yield loc[:2], f"nested too deeply: more than {_MAX_DEPTH} levels of lists or mappings"
        return
    if value is None or isinstance(value, (bool, str, int)):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            yield loc, "not a finite number: JSON has no NaN or Infinity"
    elif isinstance(value, dict):
        for k, v in value.items():
            # (named as the file spells it: `true`, `null`, not Python's `True`, `None`, nor `1` for `true` under it)
            spelt = k if isinstance(k, str) else json.dumps(k) if k is None or isinstance(k, (bool, int, float)) else str(k)
            if not isinstance(k, str):
                yield (*loc, spelt), f"a key must be a string, as a JSON object's keys are (got {type(k).__name__})"
            yield from _json_problems(v, (*loc, spelt))
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            yield from _json_problems(v, (*loc, i))
    else:
        yield loc, f"not a JSON value (a {type(value).__name__}): give a string, a number, true/false, null, a list or a mapping"


def _key_problem(key: str, value: Any, refused: dict[str, str]) -> str | None:
    """Why top-level key `key` (given `value`) may not be sent, or None: empty, null, or set or reserved by tracejudge."""
    if not key.strip():
        # A request's field name: sent as `"": …` it names no field, which a server ignores or refuses (Anthropic's
        # 400). Inside a value an empty key is left alone: it is the value's own data, which JSON allows and the
        # servers' parsers read (a `metadata` or `chat_template_kwargs` mapping is passed on as written).
        return "an empty key names no request field: give the field's name, or remove it"
    if value is None:
        return ("null: leave the key out to send nothing (null is how a panel member's extra_body leaves out a key of the "
                "section's; here it would be sent as JSON null)")
    return refused.get(key)


def _refused(problems: list[tuple[tuple[Any, ...], str]]) -> ValidationError:
    # Raised from a validator, a ValidationError keeps its own locations under the field's: each error names
    # `judge.extra_body.<key>`, not the whole mapping, and all of them are said at once. A section's own check
    # (`value_error`, a mapping as its input) is said without the value it was given, which may be a credential.
    # (`{why}`: the message is the template's one field.)
    return ValidationError.from_exception_data("extra_body", [
        InitErrorDetails(type=PydanticCustomError("value_error", "{why}", {"why": message}), loc=loc, input={})
        for loc, message in problems])


def validated(extra: dict[str, Any], provider: str, structured: str = "json_schema", cache_hints: bool = True) -> dict[str, Any]:
    """`extra` (a judge's `extra_body`) as it is sent: lists for tuples. Raises pydantic's `ValidationError` holding one
    error per problem, each located at the offending key (`("extra_body", "chat_template_kwargs", "x")`): a value JSON
    cannot hold, a top-level key that is empty (or blank) or given as null, a key tracejudge sets or reserves
    (`reserved`), or, for Anthropic, `thinking` other than `{type: disabled}`; every problem, in the order of the
    keys (a value's problems before its key's own). Values are never quoted: one may be a credential."""
    problems: list[tuple[tuple[Any, ...], str]] = []
    seen: set[tuple[tuple[Any, ...], str]] = set()
    refused = reserved(provider, structured, cache_hints)
    for key, value in extra.items():
        # Each key's problems in the file's order, its value's before its own: one run names every one, not the first
        # (a NaN hid a date, a reserved key and an empty key beside it).
        for found in _json_problems({key: value}, ("extra_body",)):
            if found not in seen:  # (one line for a value nested too deeply, however wide)
                seen.add(found)
                problems.append(found)
        if isinstance(key, str) and (why := _key_problem(key, value, refused)) is not None:
            problems.append((("extra_body", key), why))
    thinking = extra.get("thinking")
    if provider == "anthropic" and thinking is not None and not (isinstance(thinking, dict) and thinking.get("type") == "disabled"):
        problems.append((("extra_body", "thinking"), "Anthropic refuses extended thinking in a request that forces a tool, and "
                         "tracejudge forces its verdict tool: only `{type: disabled}` can be sent"))
    if problems:
        raise _refused(problems)
    return _lists(extra)


def _lists(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _lists(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_lists(v) for v in value]
    return value


def merged(section: dict[str, Any], member: dict[str, Any] | None) -> dict[str, Any]:
    """A panel member's extra_body: the section's with the member's keys put over it one by one, a key the member gives
    as null left out; the section's when the member gives none."""
    if member is None:
        return dict(section)
    out = {**section, **member}
    return {k: v for k, v in out.items() if not (k in member and member[k] is None)}


def shown(extra: dict[str, Any]) -> dict[str, Any]:
    """`extra` as results, reports and logs may show it: a value under a credential's key (`api_key`, `token`…) or shaped
    like one masked, as a run's recorded config masks it (`tracejudge.llm.redact.redact_config`)."""
    from tracejudge.llm.redact import redact_config  # (here: a config without extra_body never compiles the patterns)

    out: dict[str, Any] = redact_config(extra)
    return out


def secrets(extra: dict[str, Any]) -> tuple[str, ...]:
    """The strings of `extra` that `shown` masks: what a judge also removes from text it copies from a reply (a server
    may echo the request it refused)."""
    from tracejudge.engine.config_secrets import masked_values

    return tuple(v for v in masked_values(extra, shown(extra)).values() if isinstance(v, str))


def _capped(value: Any) -> Any:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    if len(text) <= RECORDED_MAX:
        return value
    if isinstance(value, dict):  # (its short keys stay readable: `chat_template_kwargs.enable_thinking` beside a long one)
        return {k: _capped(v) for k, v in value.items()}
    import hashlib

    return f"[sha256 {hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest()} of {len(text)} characters of JSON, not kept]"


def is_digest(value: Any) -> bool:
    """Whether `value` is a long value as `recorded` keeps it (`"[sha256 <hex> of N characters of JSON, not kept]"`)."""
    return isinstance(value, str) and _DIGEST.fullmatch(value) is not None


_DIGEST = re.compile(r"\[sha256 [0-9a-f]{64} of \d+ characters of JSON, not kept\]")


def recorded(extra: dict[str, Any]) -> dict[str, Any]:
    """`extra` as a run directory records it: `shown` (credentials masked), then each value whose JSON text is longer
    than `RECORDED_MAX` characters (a mapping's own values first) replaced by `"[sha256 <hex of that text> of N characters of
    JSON, not kept]"`. Idempotent: a recorded copy records as itself."""
    out: dict[str, Any] = _capped(shown(extra))
    return out


def digest(shown_fields: Any) -> str:
    """`sha256:<hex>` of `shown_fields` (extra_body as `recorded` keeps it, or a panel's mapping of member → that) as
    canonical JSON: what a score's judge block records of the fields its requests carried (`JudgeInfo.extra_body`),
    the digest of what summary.json shows of them, so a result line alone tells which were sent. Of the recorded
    copy, credentials masked, never of the values as given: a digest of a short credential could be tested offline."""
    import hashlib

    text = json.dumps(shown_fields, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def recorded_config(config: Any) -> Any:
    """A run's config (a manifest's `config`, credentials masked) with `judge.extra_body` and each panel member's
    `extra_body` as `recorded` keeps them; anything else, and a config without them, returned as it is."""
    judge = config.get("judge") if isinstance(config, dict) else None
    if not isinstance(judge, dict):
        return config
    out = dict(judge)
    if isinstance(judge.get("extra_body"), dict):
        out["extra_body"] = _capped(judge["extra_body"])
    if isinstance(judge.get("models"), list):
        out["models"] = [{**m, "extra_body": _capped(m["extra_body"])} if isinstance(m, dict) and isinstance(m.get("extra_body"), dict)
                         else m for m in judge["models"]]
    return {**config, "judge": out}
