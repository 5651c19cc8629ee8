"""Format `bfcl`: Berkeley Function Calling Leaderboard question + possible-answer files.

The dataset `path` is a question file (`BFCL_v4_<category>.json`, JSON Lines
despite the extension); `tasks` is its possible-answer file, by default
`possible_answer/<same name>` beside it. The files hold no model output, so
cases come without a `trace`: a run needs a `target:` that answers each
question (refused when the config loads without one). Each question becomes one case:

- `id` is the question id; `input` the last user message of the first
  turn (the one the model answers), `turns` the first user message of each
  later turn; `context` keeps
  the offered `functions` (single-turn) or `involved_classes` (multi-turn),
  and `messages`, the first turn's chat messages in order, when that turn is
  more than one user message: live questions may open with a `system` prompt
  or hold an earlier exchange (`user`, `assistant`, `user`), which upstream
  sends to the model whole, so a target asking only `input` would answer
  another question;
  and `missed_function` (multi_turn_miss_func: `{turn index: [names]}`, the
  functions upstream offers only from that turn on; that turn has no user
  message, so its `turns` entry is null);
  `tags` = `["bfcl", category]`, the category the id names
  (`live_simple_106-63-0`), else the file name's (`BFCL_v4_<category>.json`,
  as upstream's eval runner reads it); neither is the question's error, `id`;
  `metadata`: `category`, and `not_applicable`, the expectations upstream
  checks none of for the question (`_not_applicable`);
- `simple_java` / `simple_javascript` answers become the source text a
  model sends for them, as upstream converts it (`bfcl_lang`);
- single-turn `ground_truth` `[{fn: {param: [accepted, …]}}]` becomes one
  expected call per entry. A parameter's accepted-value list becomes the
  value itself when it holds one value, else `{"$any_of": [...]}`; an
  accepted `""` means the parameter may be left out, so `{"$absent": true}`
  joins the options, unless the function docs list it as `required` (upstream
  checks those first). A `""` sent is a string: it is accepted where upstream's
  type check lets a string through (a `string` / `any` parameter, or answers
  that are strings), and for an `array` so is `[]` (upstream's `list_checker`
  reads the accepted `""` as an empty list). Numbers are typed as that check
  types them: an `integer` whose answers are integers refuses `5.0`, an
  `array` of `integer` / `float` items refuses items of the other kind (unless
  `""` is accepted), a `float` takes an int; a `dict`'s values compare with
  Python's `==` (`1` meets `true`) (`bfcl_accepted`). An answer parameter the
  docs do not declare may only be left out, and a required one the answer
  lacks is never met, as upstream. An empty accepted list (7 parameters
  of `live_simple_106-63-0`) is read as "the value is `[]`", which is what
  those questions ask for; upstream's list check would accept nothing. Nested objects, given as mappings whose
  fields are again accepted-value lists, convert recursively. Parameters
  absent from the answer must not be sent, which is what `arguments: exact`
  checks; several calls (parallel categories) pair as upstream pairs them
  with `ToolCalls` `pairing: first_fit`;
- multi-turn answers (Python call strings, one list per turn) are parsed
  with `ast` and flattened in order; positional arguments get their names
  from the function docs of the record's `involved_classes`
  (`multi_turn_func_doc/` beside the question file). Upstream checks these
  by executing them against a simulated state, so name/argument comparison
  is an approximation there;
- memory and web_search answers are lists of accepted texts, not calls: they
  become `expected_output` (the list) and the case states no expected calls
  (`null`). `Contains` with `match: bfcl` gives upstream's agentic checker's
  verdict on the final reply (`,./-_*^()` dropped, case ignored, whole
  words); plain `Contains` is a substring test, which finds `49.99` in
  `149.99` where upstream does not;
- `BFCL_v4_format_sensitivity.json` is no question file but an index of other
  categories' question ids: it is one `invalid_input` saying so;
- `irrelevance` questions (no answer file) expect no call (`[]`);
  `live_relevance` questions (no answer file: any call is right) state no
  expected calls (`null`) and carry their own metric, `bfcl_relevance`
  (`_RELEVANCE`: `BfclRelevance`). Upstream checks both categories with one
  rule (`relevance_file_runner`): the reply holds a call when its calls
  decode, every call's arguments a JSON object, and there is at least one;
  any name counts, offered or not. `BfclRelevance` applies that rule to the
  recorded calls itself, so a target recording undecodable arguments as a
  call still fails it; `[]` scored by `ToolCalls` counts every recorded call,
  so for irrelevance the target must record such a reply as no call
  (`examples/agents/bfcl_agent.py` does), or score it with
  `BfclRelevance(expect: none)`.

Strings compare as BFCL's AST checker compares them (`standardize_string` in
ShishirPatil/gorilla, `berkeley-function-call-leaderboard/bfcl_eval/eval_checker/ast_eval/ast_checker.py`):
spaces and `,./-_*^` dropped, lower-cased, `'` read as `"`, so `"New York, NY"`
accepts `"new york ny"` and `"NewYork,NY"`, not `"New-York!"`. Where upstream does:
a parameter the function docs type `string` or `any` (each accepted string), an
`array`/`tuple` (each string item; the string values of a list of dicts) and a
`dict` (its string values, one level down, as `dict_checker`). A string accepted
for a parameter of another type (a variable name for an `integer`) compares
exactly, as upstream's; so do multi-turn answers, which upstream checks by
running them. Each such string becomes `{"$loose": the string}` (`standard_string`), the
matcher comparing both sides' `standardize` (`value_match.standardize`) as upstream does.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tracejudge.core.log import get_logger
from tracejudge.core.records import Case
from tracejudge.core.registry import Format, NoOptions, register_format
from tracejudge.stages.extract.bfcl_accepted import accepted_values, call_arguments, standard_string
from tracejudge.stages.extract.bfcl_answers import id_problem, read_answers
from tracejudge.stages.extract.bfcl_lang import language
from tracejudge.stages.load import RawRecord, jsonl_lines, loads, loads_line, read_jsonl
from tracejudge.stages.load.framing import quieted
from tracejudge.stages.score.value_match import standardize

log = get_logger("tracejudge.extract.bfcl")

# A live_relevance case's own metric: no call is named, so no expected call can say "some call"; the count of tool calls
# is what upstream's relevance check reads (`expected_tool_calls: []` is its mirror for irrelevance).
_RELEVANCE = '{"type": "BfclRelevance", "name": "bfcl_relevance"}'

__all__ = ["accepted_values", "adapt", "load_context", "parse_call", "standard_string", "standardize"]

_CLASS_DOCS = {
    "GorillaFileSystem": "gorilla_file_system.json",
    "MathAPI": "math_api.json",
    "MessageAPI": "message_api.json",
    "TwitterAPI": "posting_api.json",
    "TicketAPI": "ticket_api.json",
    "TradingBot": "trading_bot.json",
    "TravelAPI": "travel_booking.json",
    "VehicleControlAPI": "vehicle_control.json",
}


def load_context(question_file: Path, answer_file: Path | None) -> dict[str, Any]:
    """Load what every record needs: answers by id and multi-turn parameter names.

    `answer_file` defaults to `possible_answer/<name>` beside the question
    file; when it does not exist `answers` is `None` (irrelevance and
    relevance categories). `params` maps a class name to `{function: [param
    names in declaration order]}`, read from `multi_turn_func_doc/`.
    """
    folder = Path(question_file).parent
    if answer_file is None:
        candidate = folder / "possible_answer" / Path(question_file).name
        answer_file = candidate if candidate.exists() else None
        name = Path(question_file).name
        if answer_file is None and "relevance" not in name and "format_sensitivity" not in name and not quieted():
            # Every category but (live_)irrelevance and live_relevance ships an answer file: without it no case has an
            # expectation, and each metric that needs one said "not computed" with nothing naming the file it missed.
            # (The format-sensitivity index has none either: `_read` says in its one error what that file is. Not on
            # a trial read, `quieted`.)
            log.warning("BFCL answer file not found: the questions are read without their expected calls, so metrics that "
                        "need them are not computed; put BFCL's possible_answer/ folder beside the question file, or name "
                        "the answer file in dataset.tasks", questions=str(question_file), looked_for=str(candidate))
    # An answer line that cannot be read costs its question only (`bfcl_answers.read_answers`).
    read = None if answer_file is None else read_answers(Path(answer_file))
    answers = None if read is None else read.answers
    params: dict[str, dict[str, list[str]]] = {}
    docs = folder / "multi_turn_func_doc"
    for cls, fname in _CLASS_DOCS.items():
        path = docs / fname
        if path.exists():
            table: dict[str, list[str]] = {}
            # As bytes, like the answer file: a byte-order mark is dropped (`jsonl_lines`), a line that is not UTF-8 is skipped.
            with open(path, "rb") as fh:
                for _, line in jsonl_lines(fh):
                    if line.strip():
                        try:
                            doc = loads(line)
                            table[doc["name"]] = list(((doc.get("parameters") or {}).get("properties") or {}).keys())
                        except (ValueError, KeyError, TypeError, AttributeError):
                            continue  # an unreadable doc line leaves that function's argument names unknown
            params[cls] = table
    return {"answers": answers, "params": params, "bad_answers": {} if read is None else read.bad,
            "unplaced_answers": [] if read is None else read.unplaced, "category": file_category(question_file)}


def parse_call(text: str, params: dict[str, list[str]]) -> dict[str, Any]:
    """Parse a Python call string such as `cd(folder='temp')` into `{name, arguments}`.

    Positional arguments take their names from `params[name]`. Raises
    `ValueError` for text that is not a single call with literal arguments.
    """
    node = ast.parse(text.strip(), mode="eval").body
    if not isinstance(node, ast.Call):
        raise ValueError(f"not a function call: {text!r}")
    name = ast.unparse(node.func)
    args: dict[str, Any] = {}
    names = params.get(name, [])
    for i, arg in enumerate(node.args):
        if i >= len(names):
            raise ValueError(f"positional argument {i} of {name} has no documented name")
        args[names[i]] = ast.literal_eval(arg)
    for kw in node.keywords:
        if kw.arg is None:
            raise ValueError(f"**kwargs in {text!r}")
        args[kw.arg] = ast.literal_eval(kw.value)
    return {"name": name, "arguments": args}


def _category(qid: Any) -> str | None:
    """The category a question id names, what precedes its number (`live_simple_106-63-0`, `memory_0-customer-0`);
    None for an id that names none (a number, `"7"`, `"q1"`)."""
    found = re.match(r"^(.*?)_\d", qid) if isinstance(qid, str) else None
    return found.group(1) if found and found.group(1) else None


def file_category(question_file: Path | str) -> str | None:
    """The category a question file's name gives (`BFCL_v4_live_relevance.json` -> `live_relevance`), None for another name.

    Upstream's eval runner takes the category from the file name (`extract_test_category`).
    """
    found = re.fullmatch(r"BFCL_v\d+_(\w+?)\.json", Path(question_file).name)
    return found.group(1) if found else None


def _not_applicable(category: str, expected: Any, texts: Any) -> dict[str, list[str]]:
    """`{"not_applicable": [...]}`: the expectations a question states none of because upstream checks none for it
    (`score.base.NOT_APPLICABLE_KEY`: a metric needing one counts the case as not applicable, not as not computed):
    answer texts in a call category, calls in an agentic one and in live_relevance. `{}` for a question whose answer
    file is missing, which expects neither for want of it (not computed, as the warning says)."""
    if expected is None and texts is None and category != "live_relevance":
        return {}
    skipped = [key for key, given in (("expected_tool_calls", expected), ("expected_output", texts)) if given is None]
    return {"not_applicable": skipped} if skipped else {}


def _answer_texts(truth: Any) -> bool:
    """Whether a `ground_truth` is a list of accepted answer texts (memory, web_search), not calls."""
    return isinstance(truth, list) and bool(truth) and all(isinstance(t, str) for t in truth)


def _read(dataset: Any) -> Iterator[RawRecord]:
    """The question file's lines; BFCL's format-sensitivity id list (one JSON object) is one error saying what it is."""
    records = read_jsonl(dataset.path, dataset.limit)
    first = next(records, None)
    if first is None:
        return
    if first.error is None and (first.end is None or first.payload.strip() == b"{"):  # (end None: read as one pretty document)
        try:
            index = json.loads(Path(dataset.path).read_bytes())
        except ValueError:
            index = None
        if isinstance(index, dict) and index and all(isinstance(v, list) for v in index.values()):
            yield RawRecord(first.file, 1, error=(
                "this is BFCL's format-sensitivity index (question ids by category, e.g. "
                f"{next(iter(index))!r}), not a question file: its questions are those of the categories' own files "
                "(BFCL_v4_<category>.json), asked under other prompt formats"))
            return
    yield first
    yield from records


def _first_user(turn: Any) -> Any:
    for msg in turn if isinstance(turn, list) else []:
        if isinstance(msg, dict) and msg.get("role") == "user":
            return msg.get("content")
    return None


def _last_user(turn: Any) -> Any:
    """The content of a turn's last user message (what the model answers), None when it has none."""
    return _first_user(list(reversed(turn)) if isinstance(turn, list) else turn)


def _history(turn: Any) -> list[dict[str, Any]] | None:
    """A turn's messages as `[{role, content}]` when it is more than one user message, else None (`input` says it all)."""
    msgs = [{"role": m.get("role"), "content": m.get("content")} for m in turn if isinstance(m, dict)] if isinstance(turn, list) else []
    return None if [m["role"] for m in msgs] in ([], ["user"]) else msgs


def _bad_doc(functions: Any) -> tuple[str, str] | None:
    """`(field, why)` of the first of a question's function docs (`function`: a list, or one doc) that is no doc."""
    from tracejudge.stages.extract.common import json_type

    docs = functions if isinstance(functions, list) else [] if functions is None else [functions]
    for f, doc in enumerate(docs):
        where = f"function[{f}]" if isinstance(functions, list) else "function"
        if not isinstance(doc, dict):
            return where, f"expected a function doc (an object with a `name`), got {json_type(doc)}"
        if not isinstance(doc.get("name"), str) or not doc["name"].strip():
            return f"{where}.name", f"expected the function's name, got {json_type(doc.get('name'))}"
        if doc.get("parameters") is not None and not isinstance(doc["parameters"], dict):
            return f"{where}.parameters", f"expected an object (a JSON schema), got {json_type(doc['parameters'])}"
    return None


def adapt(raw: bytes | str | dict[str, Any], ctx: dict[str, Any] | None) -> Case:
    """Turn one BFCL question line into a `Case` (see the module docstring).

    Raises `AdapterError` naming the field for a line that is not a JSON
    object with `id` and `question`, an answer that cannot be read, or a
    question whose answer is missing from the answer file.
    """
    from tracejudge.stages.extract.errors import AdapterError

    try:
        rec = raw if isinstance(raw, dict) else loads_line(raw)
    except ValueError as exc:
        raise AdapterError(str(exc)) from None
    if not isinstance(rec, dict) or "id" not in rec:
        raise AdapterError("id: a question object with an `id` is required", field="id")
    if (why := id_problem(rec["id"], "question")) is not None:  # (as the answer file's ids are read)
        raise AdapterError(why, field="id")
    qid = str(rec["id"])
    question = rec.get("question")
    if not isinstance(question, list) or not question:
        from tracejudge.stages.extract.common import not_a_list

        why = ("question: required list of turns is missing" if "question" not in rec else
               "question: the list of turns is empty" if isinstance(question, list) else not_a_list(question, "question", "turns"))
        raise AdapterError(why, field="question", case_id=qid)
    if (bad := _bad_doc(rec.get("function"))) is not None:  # (read as it was, it reached the target as its crash)
        raise AdapterError(f"{bad[0]}: {bad[1]}", field=bad[0], case_id=qid)
    ctx = ctx or {}
    # The id's own category as upstream's generation reads it (a file may mix categories), else the file name's, as its
    # eval runner reads it: an id naming none (a number) was its own category, the relevance check silently gone.
    category = _category(rec["id"]) or ctx.get("category")
    if category is None:
        from tracejudge.stages.extract.common import json_type

        raise AdapterError(f"id: names no category (`live_relevance_0-0-0`: the category, then `_` and a number), "
                           f"nor does the file's name (BFCL_v4_<category>.json); got {json_type(rec['id'])}, {json.dumps(rec['id'])[:80]}",
                           field="id", case_id=qid)
    answers, params = ctx.get("answers"), ctx.get("params") or {}

    expected: list[dict[str, Any]] | None
    answer_texts: list[str] | None = None
    if qid in (ctx.get("bad_answers") or {}):
        raise AdapterError(f"ground_truth: answer line unreadable: {ctx['bad_answers'][qid]}", field="ground_truth", case_id=qid)
    if answers is None or qid not in answers:
        if category in ("irrelevance", "live_irrelevance"):
            expected = []
        elif category == "live_relevance" or answers is None:
            expected = None
        else:
            # (A line whose id could not be read may have been this question's: said, not left silent.)
            lost = ctx.get("unplaced_answers") or []
            also = f"; {len(lost)} answer line(s) have no readable id, the first {lost[0]}" if lost else ""
            raise AdapterError(f"ground_truth: question {qid!r} is not in the answer file{also}", field="ground_truth", case_id=qid)
    else:
        truth = answers[qid]
        expected = []
        if _answer_texts(truth):
            # memory / web_search ("agentic"): the answer is text the final reply must mention, whatever was called
            expected, answer_texts = None, truth
        elif rec.get("involved_classes") is not None:
            table = {fn: names for cls in rec["involved_classes"] for fn, names in params.get(cls, {}).items()}
            for t, turn in enumerate(truth):
                for c, text in enumerate(turn):
                    try:
                        expected.append(parse_call(text, table))
                    except (ValueError, SyntaxError) as exc:
                        raise AdapterError(f"ground_truth[{t}][{c}]: {exc}", field=f"ground_truth[{t}][{c}]", case_id=qid) from None
        else:
            for c, call in enumerate(truth):
                if not isinstance(call, dict) or len(call) != 1:
                    raise AdapterError("expected one {function: {param: [values]}} per call", field=f"ground_truth[{c}]", case_id=qid)
                (name, args), = call.items()
                # (Java / JavaScript: the values as the source text upstream's checker converts, `bfcl_lang`)
                expected.append({"name": name, "arguments": call_arguments(name, args, rec.get("function"), language(category))})

    context: dict[str, Any] = {}
    if rec.get("function") is not None:
        context["functions"] = rec["function"]
    if rec.get("involved_classes") is not None:
        context["involved_classes"] = rec["involved_classes"]
    history = _history(question[0])
    if history is not None:
        context["messages"] = history
    if rec.get("missed_function"):
        # multi_turn_miss_func: `{turn index: [names]}`, functions upstream withholds until that turn, which has no
        # user message (its `turns` entry is null): without it a target would offer them from the start.
        context["missed_function"] = rec["missed_function"]
    return Case.model_validate(
        {
            "id": qid,
            "input": _last_user(question[0]),
            "turns": [_first_user(t) for t in question[1:]],
            "expected_tool_calls": expected,
            "expected_output": answer_texts,
            "context": context or None,
            "tags": ["bfcl", category],
            "metadata": {"category": category, **_not_applicable(category, expected, answer_texts)},
            "metrics": [json.loads(_RELEVANCE)] if category == "live_relevance" else [],  # (a copy per case)
        }
    )


register_format(
    Format(
        "bfcl",
        read=_read,
        adapt=adapt,
        prepare=lambda ds: load_context(ds.path, ds.tasks),
        options=NoOptions,
        needs_target=True,  # questions only: without a target every case would end invalid_input
    )
)
