"""What the run tells a user about a reply it could not use because of how it ended: cut at `max_tokens`, cut by the
server itself far under it, cut where the context window filled, or with its text somewhere other than the answer.

`tracejudge bench` tells the same causes apart (`judge_bench.sender`); a run that said "cut off at max_tokens" of a
reply the server cut at a few tokens sent its user to raise a setting that could not help.
"""

from __future__ import annotations

from typing import Any

from tracejudge.llm.providers import Reply

__all__ = ["SERVER_CUT_FIX", "WINDOW_FIX", "WINDOW_FULL", "cut_problem", "cut_thinking", "empty_reply", "server_cut", "thinking_off",
           "thinking_sent_off", "with_thinking_advice"]

# A reply cut where its prompt and its text filled the model's context window (`Reply.window_full`), before max_tokens:
# the problem (told the model in the repair request too), and the setting that fixes it (raising max_tokens cannot).
WINDOW_FULL = "it was cut off where the prompt and the reply filled the model's context window"
WINDOW_FIX = "set judge.context_tokens to the model's window (and judge.tokenizer to its tokenizer), so the prompt leaves room for max_tokens"

# A reply the server cut itself, far under the `max_tokens` asked: what to change (raising max_tokens cannot help).
SERVER_CUT_FIX = ("a cap of the server's own, not judge.max_tokens, so raising judge.max_tokens does not help: raise the "
                  "server's (llama.cpp llama-server --n-predict, or its context per slot: --ctx-size divided by --parallel)")


def server_cut(reply: Reply, max_tokens: int, estimate: int | None = None) -> int | None:
    """The output tokens of `reply` when the server cut it short itself, else `None`: `finish_reason: length` (not at
    the context window) on a reply the server counted under the `max_tokens` its request asked. A reply cut at
    max_tokens holds all of them, so the server's own `completion_tokens` (reasoning tokens included) below it is the
    server's cap (llama.cpp's `--n-predict` at 20 of 30 asked), however close. A reply without usage
    (`Reply.usage_known` False) has only an estimate of its tokens — `estimate` when given (`tracejudge bench` counts
    the reply it has not billed yet), else the one `Judge` gave it — which may count a few tokens short or long, so it
    is taken as cut by the server only under half of `max_tokens`. The one rule of a run and of `tracejudge bench`."""
    if not reply.truncated or reply.window_full:
        return None
    if reply.usage_known:
        return reply.output_tokens if reply.output_tokens < max_tokens else None
    held = reply.output_tokens if estimate is None else estimate
    return held if 2 * held < max_tokens else None


def cut_problem(reply: Reply, max_tokens: int) -> str:
    """Why a truncated `reply` to a request asking `max_tokens` is unusable, as told to the model in the repair request
    and to the user in the score's reason: cut at the context window (`WINDOW_FULL`), by the server at N tokens, or at
    `max_tokens`."""
    if reply.window_full:
        return WINDOW_FULL
    cut = server_cut(reply, max_tokens)
    if cut is not None:
        return f"the server cut it off at {cut:,} tokens, under the max_tokens={max_tokens} asked"
    return f"it was cut off at max_tokens={max_tokens}"


# What turns off the thinking of a model behind an OpenAI-compatible server: a request field `judge.extra_body` sends
# (`tracejudge.core.extra_body`), or the server's own default.
_SERVER_DEFAULT = ("vLLM: --default-chat-template-kwargs '{\"enable_thinking\": false}'; llama.cpp llama-server: --reasoning-budget 0, "
                   "and --jinja, without which it applies no chat_template_kwargs")
_THINKING_OFF = ("turn the model's thinking off: judge.extra_body: {chat_template_kwargs: {enable_thinking: false}} sends it "
                 "with every request (vLLM, SGLang, llama.cpp's server; Ollama: {reasoning_effort: none}), or make it the "
                 f"server's default ({_SERVER_DEFAULT.partition(', and')[0]})")

# The fields of `judge.extra_body` that ask a server to turn thinking off (`thinking_sent_off`), as the user wrote them.
_OFF_FIELDS = ((("chat_template_kwargs", "enable_thinking"), False), (("reasoning_effort",), "none"),
               (("reasoning", "effort"), "none"), (("thinking", "type"), "disabled"))


def thinking_sent_off(extra_body: dict[str, Any] | None) -> str | None:
    """The field of `extra_body` (a judge's `judge.extra_body`) that already asks the server to turn thinking off, as
    `chat_template_kwargs.enable_thinking: false`; None when it sends none."""
    for path, off in _OFF_FIELDS:
        value: Any = extra_body or {}
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        if value is off or (isinstance(off, str) and value == off):
            return f"{'.'.join(path)}: {str(off).lower()}"
    return None


def thinking_off(extra_body: dict[str, Any] | None) -> str:
    """The advice to turn a model's thinking off, for a judge sending `extra_body`: the field to send, or, when it is sent
    already (`thinking_sent_off`) and the model thinks all the same, that the server seems to ignore it and the server
    flag that makes thinking off its default (advising the field again would not help)."""
    sent = thinking_sent_off(extra_body)
    return _THINKING_OFF if sent is None else f"turn the model's thinking off {_ignored(sent)}"


def _ignored(sent: str) -> str:
    # The server's side, for a judge whose extra_body sends `sent` already.
    return (f"on the server: judge.extra_body already sends {sent} with every request and the model thinks all the same, "
            "so the server seems to ignore it (a chat template that reads no enable_thinking, or a server that drops the "
            f"field); make it the server's default ({_SERVER_DEFAULT}) or serve a model without thinking")


def with_thinking_advice(message: str, extra_body: dict[str, Any] | None) -> str:
    """`message` (a parse error of a reply still thinking: `parse.THINKING_FIELD_ADVICE` in it) with that advice replaced
    by the server's side when `extra_body` already sends the field (`thinking_off`); `message` unchanged otherwise."""
    from tracejudge.stages.judge.parse import THINKING_FIELD_ADVICE

    sent = thinking_sent_off(extra_body)
    return message if sent is None else message.replace(THINKING_FIELD_ADVICE, _ignored(sent))


def empty_reply(reply: Reply, provider: str = "openai", max_tokens: int | None = None, extra_body: dict[str, Any] | None = None) -> str:
    """What to tell the user about a reply whose answer text is empty ("" when it is not): that the content was empty,
    and, when the server put the model's text elsewhere (`Reply.reasoning`), where, how long it was and the server
    setting usually responsible, for the protocol in use (`provider`: `judge.provider`, `anthropic` or an
    OpenAI-compatible server's `openai`). A verdict found there is never used: it may be a draft the model went on to
    change. `max_tokens`: what the request asked, so a reply the server cut far under it (`server_cut`) is said so.
    `extra_body`: the judge's `judge.extra_body`, so a model thinking though it asks for thinking off is said so
    (`thinking_off`)."""
    if reply.text.strip():
        return ""
    if not reply.reasoning and reply.tool_calls:
        # Not "no text": the server answered, with a call of a tool nobody offered (a gateway that turns the schema into one).
        return (f"the reply's content was empty (null or \"\") and its message called tools instead ({reply.tool_calls[:200]}), "
                "though the judge offers none: the verdict is read from the content only; check the server (or the gateway "
                "before it) answers a request without tools in its content")
    if not reply.reasoning:
        return "the reply's content was empty (null or \"\"): the server returned no text"
    n = len(reply.reasoning)
    if reply.truncated:
        fix = "raise judge.max_tokens" + ("" if provider == "anthropic" else f", or {thinking_off(extra_body)}")
        short = None if max_tokens is None else server_cut(reply, max_tokens)
        cut = (f"the context window filled ({WINDOW_FIX})" if reply.window_full
               else f"the server cut it off at {short:,} tokens, under max_tokens {max_tokens} ({SERVER_CUT_FIX})" if short is not None
               else f"max_tokens cut it off ({fix})")
        return (f"the reply's content was empty and its text ({n:,} characters) is in {reply.reasoning_field}: the model was still "
                f"reasoning when {cut}; a verdict in {reply.reasoning_field} is never used")
    if reply.reasoning_field == "thinking" and provider == "anthropic":
        return (f"the reply held only thinking blocks ({n:,} characters), no text or tool_use; "
                "a verdict in thinking is never used: raise judge.max_tokens or turn extended thinking off")
    if reply.reasoning_field == "thinking":  # (an OpenAI-compatible server's content chunks: magistral's `thinking`)
        return (f"the reply held only thinking chunks ({n:,} characters), no text chunk; a verdict in thinking is never "
                f"used: raise judge.max_tokens so the model can finish thinking and answer, or {thinking_off(extra_body)}")
    return (f"the reply's content was empty (null or \"\") and the server put its text ({n:,} characters) in "
            f"message.{reply.reasoning_field}: its reasoning parser took the whole reply as reasoning (llama.cpp llama-server "
            "--reasoning-format none keeps it in the content; vLLM --reasoning-parser needs a model that closes its reasoning "
            "before answering: drop the parser or pick a non-reasoning model); a verdict in "
            f"{reply.reasoning_field} is never used")


def cut_thinking(reply: Reply, provider: str, max_tokens: int, extra_body: dict[str, Any] | None = None) -> str:
    """What to tell the user about a truncated `reply` whose content is still in a reasoning block that never closed
    (`<think>` with no `</think>`: a server without a reasoning parser), "" for any other: the block, and for a reply
    cut at `max_tokens` the advice a reply cut while reasoning in `reasoning_content` gets (`empty_reply`): raise
    judge.max_tokens, or turn the model's thinking off. A cut at the context window or by the server's own cap has its
    own fix, said beside it (`WINDOW_FIX`, `SERVER_CUT_FIX`)."""
    from tracejudge.stages.judge.parse import unclosed_reasoning
    from tracejudge.stages.judge.reasoning_blocks import HARMONY, TAGS

    tag = unclosed_reasoning(reply.text) if reply.truncated else ""
    if not tag:
        return ""
    where = ("its analysis channel (gpt-oss) never reached a final channel" if tag == HARMONY
             else "its {} reasoning block never closed".format(TAGS[tag][0]))
    said = f"the model was still reasoning when the reply ended ({where}; a draft verdict inside it is never taken)"
    if reply.window_full or server_cut(reply, max_tokens) is not None:
        return said
    return said + ": raise judge.max_tokens" + ("" if provider == "anthropic" else f", or {thinking_off(extra_body)}")
