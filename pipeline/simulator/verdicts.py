"""What the simulator answers: deterministic verdicts for a request's schema, per question id or per item, through its flaws.

See `tracejudge.simulator.server`'s docstring for the contract (determinism, the
answers and multi-item schemas, the faults that spoil an answer).
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from typing import Any

from tracejudge.llm.prefix_cache import prompt_text
from tracejudge.llm.tokens import counter_for, encode
from tracejudge.simulator.flaws import is_pairwise, preference
from tracejudge.simulator.state import Sim
from tracejudge.simulator.tools import choice_count, forced_tool, openai_choice

__all__ = ["ANSWERS_SCHEMA_NAME", "MULTI_SCHEMA_NAME", "answer", "schema_name"]

# The schema name of a multi-item request (`tracejudge.stages.judge.multi`): one verdict per item id.
MULTI_SCHEMA_NAME = "verdicts"
# The shared schema of yes/no requests (`tracejudge.stages.judge.base.ANSWERS_SCHEMA`): answers listed by question id.
ANSWERS_SCHEMA_NAME = "answers"
_QUESTION_ID = re.compile(r"(?m)^([A-Z]+\d+): ")
_DATA_TAG = re.compile(r"==== DATA (\w+) BEGIN ====")
_DATA_END = re.compile(r"==== DATA \w+ END ====")
_ID = re.compile(r"^[A-Z]+\d+$")
Prompt = tuple[list[dict[str, Any]], str]  # `prompt_text(body)`: the messages with text content, the schema text


def _digest(body: dict[str, Any], seed: int) -> bytes:
    canon = json.dumps({k: body.get(k) for k in ("model", "messages", "system", "response_format", "tools")}, sort_keys=True)
    return hashlib.sha256(f"{seed}:{canon}".encode()).digest()


def _single(body: dict[str, Any], seed: int, schema: dict[str, Any], prompt: Prompt) -> bytes:
    """The digest a single verdict (a Rubric's `{score, reason}`: one answer, not keyed by question id) is drawn from:
    a hash of the seed, the request's first fenced data tag and the answer's place — the evaluation asked after the
    data (a Rubric's criteria and scale) and the schema — so every model of a panel gets the same flawless verdict and
    they differ only through `noise` (`tracejudge.simulator.flaws`). A request without fenced data: its whole body."""
    texts = _user_texts(prompt)
    tag = next((m.group(1) for t in texts for m in [_DATA_TAG.search(t)] if m), None)
    if tag is None:
        return _digest(body, seed)
    place = json.dumps({"asked": [_DATA_END.split(t)[-1] for t in texts], "schema": schema}, sort_keys=True)
    return hashlib.sha256(f"{seed}:{tag}:verdict:{place}".encode()).digest()


def _verdict(sim: Sim, body: dict[str, Any], schema: dict[str, Any], name: str | None, fault: str, prompt: Prompt) -> Any:
    """The verdict for `schema`; a multi-item request (schema named `verdicts`) gets one verdict per item id.

    Each item's verdict depends only on the seed and the item's id, so an
    item gets the same verdict in any request, in any position. Faults
    `drop_item` and `malformed_item` spoil the first item of the request.
    A single verdict (a Rubric's) depends on the seed, the data's tag and what is asked, not on the model (`_single`).
    """
    if name == ANSWERS_SCHEMA_NAME:
        return _answers(sim, body, schema, fault, prompt)
    if name != MULTI_SCHEMA_NAME or not isinstance(schema.get("properties"), dict):
        return sim.instance(schema, _single(body, sim.config.seed, schema, prompt))
    out: dict[str, Any] = {}
    defs = schema.get("$defs") or {}
    for item_id, sub in schema["properties"].items():
        ref = sub.get("$ref", "") if isinstance(sub, dict) else ""
        if ref.startswith("#/$defs/"):
            sub = defs.get(ref[len("#/$defs/"):], {})
        out[item_id] = sim.instance(sub, hashlib.sha256(f"{sim.config.seed}:item:{item_id}".encode()).digest())
    first = next(iter(schema.get("required") or list(out)), None)
    if first is not None and first in out:
        if fault == "drop_item":
            del out[first]
        elif fault == "malformed_item":
            out[first] = "GRADE: yes"
    return out


def _user_texts(prompt: Prompt) -> list[str]:
    return [str(m.get("content")) for m in prompt[0] if isinstance(m, dict) and m.get("role") == "user"]


def _asked(body: dict[str, Any], prompt: Prompt | None = None) -> tuple[list[str], list[str]]:
    """(the user messages' texts, the question ids they list after the data); `prompt`: `prompt_text(body)` when known."""
    texts = _user_texts(prompt or prompt_text(body))
    # Questions are listed after the data: a line of the data that looks like one is not asked.
    asked = [_DATA_END.split(t)[-1] for t in texts]
    return texts, list(dict.fromkeys(q for t in asked for q in _QUESTION_ID.findall(t)))


def schema_name(schema: dict[str, Any]) -> str | None:
    """The name a schema sent without one (`json_object`) would have: `verdicts` (items), `answers` (question ids), or None."""
    props = schema.get("properties")
    if not isinstance(props, dict) or not props:
        return None
    if "answers" in props or all(_ID.match(k) for k in props):
        return ANSWERS_SCHEMA_NAME
    if "$defs" in schema:
        return MULTI_SCHEMA_NAME
    return None


_ITEM = {"type": "object", "properties": {"answer": {"type": "string", "enum": ["yes", "no"]}, "reason": {"type": "string"}}}


def _answers(sim: Sim, body: dict[str, Any], schema: dict[str, Any], fault: str, prompt: Prompt) -> dict[str, Any]:
    """One answer per question id, each a function of the seed, the data tag and the id (see the module doc).

    The ids are the schema's own properties (a per-request schema keyed by question id), or, for the shared
    list schema (`{"answers": [{id, answer, reason}]}`), the ids the prompt lists.
    """
    texts, listed = _asked(body, prompt)
    tag = next((m.group(1) for t in texts for m in [_DATA_TAG.search(t)] if m), None) or _digest(body, sim.config.seed).hex()
    props = schema.get("properties") or {}
    as_list = isinstance(props.get("answers"), dict) and props["answers"].get("type") == "array"
    ids = listed if as_list else list(props)
    out: dict[str, Any] = {}
    for qid in ids:
        item = (props["answers"].get("items") or {}) if as_list else props.get(qid) or _ITEM
        ref = item.get("$ref", "") if isinstance(item, dict) else ""
        if ref.startswith("#/$defs/"):
            item = (schema.get("$defs") or {}).get(ref[len("#/$defs/"):], _ITEM)
        got = sim.instance(item, hashlib.sha256(f"{sim.config.seed}:{tag}:{qid}".encode()).digest())
        if isinstance(got, dict) and "id" in got:
            got["id"] = qid
        out[qid] = got
    first = next(iter(out), None)
    if first is not None and fault == "drop_item":
        del out[first]
    elif first is not None and fault == "malformed_item":
        out[first] = {**out[first], "answer": "GRADE: yes"}
    return {"answers": list(out.values())} if as_list else out


def _with_flaws(sim: Sim, body: dict[str, Any], schema: dict[str, Any], verdict: Any, prompt: Prompt) -> Any:
    """`verdict` through the simulator's known flaws; a pairwise request's verdict made here (`tracejudge.simulator.flaws`)."""
    texts = _user_texts(prompt)
    pairwise = is_pairwise(texts)
    if not (pairwise or sim.flaws.active):
        return verdict
    occurrence = sim.flaws.occurrence(_digest(body, sim.config.seed))
    model = str(body.get("model"))
    if pairwise:
        return preference(sim.flaws, texts, occurrence, model)
    tag = next((m.group(1) for t in texts for m in [_DATA_TAG.search(t)] if m), "")
    score = (schema.get("properties") or {}).get("score") or {}
    if score.get("type") == "integer":
        return sim.flaws.apply_graded(verdict, model, tag, occurrence, (int(score.get("minimum", 0)), int(score.get("maximum", 10))))
    return sim.flaws.apply(verdict, model, tag, occurrence)


def _response_schema(body: dict[str, Any], anthropic: bool, prompt: Prompt) -> tuple[dict[str, Any] | None, str | None]:
    """`(schema, name)` a reply must follow: the structured output asked for, the question ids the prompt lists, or none."""
    rf = body.get("response_format") or {}
    if rf.get("type") == "json_schema":
        return rf.get("json_schema", {}).get("schema"), rf.get("json_schema", {}).get("name")
    if rf.get("type") == "json_object" and isinstance(rf.get("schema"), dict):
        return rf["schema"], schema_name(rf["schema"])
    if not anthropic and (not rf or rf.get("type") == "json_object"):
        _, listed = _asked(body, prompt)
        if listed:  # no schema: a model reading the prompt answers the question ids it lists
            return {"type": "object", "properties": {q: _ITEM for q in listed}}, ANSWERS_SCHEMA_NAME
        if rf:  # JSON mode promises a JSON object, whatever the prompt asks
            return {"type": "object", "properties": {"answer": {"enum": ["yes", "no"]}, "reason": {"type": "string"}}}, None
    return None, None


def _sample(sim: Sim, body: dict[str, Any], schema: dict[str, Any] | None, name: str | None, fault: str,
            prompt: Prompt) -> tuple[Any, str, str]:
    """One sample of the reply: `(verdict, text, finish_reason)` (a second sample is the request's next occurrence)."""
    verdict = _verdict(sim, body, schema, name, fault, prompt) if schema else "yes"
    if schema and name != MULTI_SCHEMA_NAME:
        verdict = _with_flaws(sim, body, schema, verdict, prompt)
    text = json.dumps(verdict) if schema else "yes"
    if fault == "prose":
        text = f"Here is my assessment.\n```json\n{text}\n```\nLet me know if you need more."
    elif fault == "near_miss":
        if isinstance(verdict, dict) and isinstance(verdict.get("answers"), list):
            text = "\n".join(f"GRADE {a.get('id')}: {a.get('answer')}" for a in verdict["answers"] if isinstance(a, dict))
        else:
            text = "\n".join(f"GRADE {k}: {v}" for k, v in verdict.items()) if isinstance(verdict, dict) else "GRADE: CI"
    elif fault == "truncated":
        return verdict, text[: max(1, len(text) // 2)], "length"
    return verdict, text, "stop"


def _capped(samples: list[tuple[Any, str, str]], completions: list[int], counter: Any, cap: int) -> tuple[list[tuple[Any, str, str]], list[int]]:
    """`samples` and their `completions` cut at `cap` tokens, as a server makes them: the request's `max_tokens`, or the
    server's own output cap (`SimConfig.max_reply_tokens`, llama.cpp's `--n-predict`) when that is lower. A reply
    longer than `cap` is cut there, `finish_reason` `length`, `cap` completion tokens, as the server reports it."""
    out, counts = [], []
    for (verdict, text, finish), n in zip(samples, completions, strict=True):
        tokens = encode(counter.encoding, text)
        if len(tokens) > cap or n > cap:
            text, finish, n = counter.encoding.decode(tokens[:cap]), "length", cap
        out.append((verdict, text, finish))
        counts.append(n)
    return out, counts


def _written_whole(verdict: Any, text: str) -> dict[str, Any]:
    """The keys of `verdict` (an object) whose values `text`, its JSON cut short, holds whole, in order: a cut tool call's input."""
    kept: dict[str, Any] = {}
    if isinstance(verdict, dict):
        for key, value in verdict.items():
            more = {**kept, key: value}
            if not text.startswith(json.dumps(more)[:-1]):
                break
            kept = more
    return kept


def answer(sim: Sim, body: dict[str, Any], anthropic: bool, fault: str, prompt_tokens: int,
           prompt: Prompt | None = None) -> tuple[dict[str, Any], int]:
    """The success reply to a validated, admitted request: `(payload, completion_tokens)`.

    `fault` is one of `ok`, `truncated`, `prose`, `near_miss`, `drop_item`,
    `malformed_item` (the others are handled before an answer is made).
    OpenAI's `n` gets that many choices (the fault applies to each), their
    completion tokens summed; a forced tool (`tracejudge.simulator.tools`) gets
    a tool call whose input is the verdict for the tool's schema.
    Counts the answer in the stats. Used by the synchronous endpoints and by
    the batch endpoints alike. `prompt`: `prompt_text(body)` when the caller
    has it (read once per request).
    """
    prompt = prompt or prompt_text(body)
    st = sim.stats
    model = str(body["model"])
    # Only a `max_tokens` the request asks cuts a reply (a request without one gets what the model says, as from OpenAI).
    asked = body.get("max_tokens") or body.get("max_completion_tokens")
    schema, name = _response_schema(body, anthropic, prompt)
    forced = forced_tool(body, anthropic)
    if forced is not None:
        schema, name = forced.schema, forced.name  # (the tool's name plays the part of a structured output's schema name)
    samples = [_sample(sim, body, schema, name, fault, prompt) for _ in range(choice_count(body, anthropic))]
    counter = counter_for(model)
    # The tokens each sample holds, as a server reports what it sent: the `truncated` fault's half a verdict is counted as
    # half, not as all of max_tokens (a cut at max_tokens holds all of them; this one is the server's own, far under).
    completions = [counter.text(text) for _, text, _ in samples]
    limits = [int(n) for n in (asked, sim.config.max_reply_tokens) if n]
    if limits:
        # A reply longer than the request's max_tokens (or the server's own, lower cap) is cut there, `finish_reason:
        # length`, as an OpenAI-style server does: one sent whole, counted as max_tokens under `stop`, was no server's.
        samples, completions = _capped(samples, completions, counter, min(limits))
    completion = sum(completions)
    st.truncated += fault == "truncated"
    # Only OpenAI caches prefixes unasked; Anthropic caches only what `cache_control` marks.
    cached, written = sim.prefix_cache.anthropic(model, body) if anthropic else (min(prompt_tokens, sim.prefix_cache.openai(model, body, prompt)), 0)
    cached, written = min(cached, prompt_tokens), min(written, prompt_tokens - min(cached, prompt_tokens))
    st.cached_input_tokens += cached
    st.answered += 1
    st.input_tokens += prompt_tokens
    st.output_tokens += completion
    sim.serial += 1
    rid = hashlib.sha256(f"{sim.config.seed}:{sim.serial}".encode()).hexdigest()[:24]
    # A prose or near-miss fault is a model that answered in text instead. A forced Anthropic tool call cut at max_tokens is
    # still its `tool_use` block, incomplete (the API's "truncated response contains an incomplete tool use block"): its
    # input holds the keys written whole before the cut.
    as_call = forced is not None and fault in ("ok", "truncated", "drop_item", "malformed_item")
    if anthropic:
        verdict, text, finish = samples[0]
        as_tool = as_call and finish == "stop"
        call_input = verdict if as_tool else _written_whole(verdict, text)
        content = ([{"type": "tool_use", "id": f"toolu_{rid}", "name": forced.name, "input": call_input}] if as_call and forced
                   else [{"type": "text", "text": text}])
        payload: dict[str, Any] = {
            "id": f"msg_{rid}", "type": "message", "role": "assistant", "model": model, "content": content,
            "stop_reason": "max_tokens" if finish == "length" else ("tool_use" if as_tool else "end_turn"),
            "usage": {"input_tokens": prompt_tokens - cached - written, "output_tokens": completion,
                      "cache_read_input_tokens": cached, "cache_creation_input_tokens": written},
        }
    else:
        payload = {
            "id": f"chatcmpl-{rid}", "object": "chat.completion", "created": int(time.time()), "model": model,
            "choices": [openai_choice(i, text, finish, forced, as_call, rid) for i, (_, text, finish) in enumerate(samples)],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion, "total_tokens": prompt_tokens + completion,
                      "prompt_tokens_details": {"cached_tokens": cached}},
        }
    return payload, completion
