"""Judge providers: build a request payload, send it, read the reply — three small functions each.

Two wire protocols:

- `openai`: any OpenAI-compatible `POST {base_url}/chat/completions`
  (OpenAI, vLLM, llama.cpp server, Ollama, LiteLLM proxy); structured output
  (`structured`, the config's `judge.structured_output`) through
  `response_format: {type: json_schema, json_schema: {name, schema, strict}}`,
  or `{type: json_object, schema}` (llama-cpp-python's server reads the schema
  there), or no `response_format` at all (`none`: the prompt gives the format).
- `anthropic`: `POST {base_url}/messages`; structured output through one
  tool whose `input_schema` is the verdict schema, forced with
  `tool_choice: {type: tool}`.

`simulator` speaks the OpenAI protocol to the loopback judge simulator.
`base_url` includes the version prefix (`https://api.openai.com/v1`).

API keys: `auth_headers` puts the key in a request header and nowhere else;
no error message, log line or record built here contains a header value, and
provider text copied into an error message is passed through
`tracejudge.llm.redact.redact` (an endpoint may echo the headers it got).

Nothing in a reply is trusted (`tracejudge.llm.replies`): `send` reads at most
`max_bytes` of it, a body nested too deep to decode is text, and `read_reply`
refuses usage figures that are not plausible token counts; each is a malformed
reply (kind `server`), never an exception of another kind. A refusal of the
request itself (`replies.request_refused`) is kind `request`: no retry can fix
it, only a change of config (`replies.request_fix` names the setting). A
content filter's 400 stays `fatal`: one item's content causes it. So is a 200
whose reply is a refusal (Anthropic `stop_reason: "refusal"`, an OpenAI
message's `refusal`, `finish_reason: "content_filter"`), named as one; and an
Anthropic reply that calls the forced tool is read from that call alone, never
from a text block beside it (`read_reply`).
"""

from __future__ import annotations

# The steps live in `tracejudge.llm.wire` (records, payload, transport, rate_headers, read); this module is their one public surface.
from tracejudge.llm.wire.payload import ANTHROPIC_VERSION, DEFAULT_BASE_URLS, auth_headers, build_payload, endpoint, protocol_of, public_url, response_format
from tracejudge.llm.wire.rate_headers import rate_info
from tracejudge.llm.wire.read import read_reply
from tracejudge.llm.wire.records import HttpReply, JudgeRequest, ProviderError, RateInfo, Reply
from tracejudge.llm.wire.transport import open_session, send

__all__ = [
    "DEFAULT_BASE_URLS",
    "HttpReply",
    "JudgeRequest",
    "ProviderError",
    "RateInfo",
    "Reply",
    "auth_headers",
    "build_payload",
    "endpoint",
    "open_session",
    "protocol_of",
    "public_url",
    "rate_info",
    "read_reply",
    "send",
]
