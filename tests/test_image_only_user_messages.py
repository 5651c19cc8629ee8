"""A user message holding a photo and no text, between two of the user's texts, is a user message under format `otel`
as under `openai-messages` reading the conversation the application held: its images as OpenAI content parts.

Recordings: `tests/frameworks/record_image_only_users.py` (`tests/data/image-only-users`: OpenInference's and OpenLLMetry's
OpenAI instrumentors, and the application's own messages).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers import extract_path

DATA = Path(__file__).parent / "data" / "image-only-users"
PHOTO = [{"type": "image_url", "image_url": {"url": "https://example.com/broken-box.png"}}]


def _said(name: str, fmt: str) -> list[tuple[int, Any]]:
    (case,) = extract_path(DATA / name, fmt)
    assert not isinstance(case, tuple), case
    return [(m.step, m.content) for m in case.trace.user_messages]


@pytest.mark.parametrize("which", ["oi", "tl"])
def test_an_image_only_user_message_is_kept_as_openai_messages_keeps_it(which: str) -> None:
    held = _said(f"loop-{which}.messages.jsonl", "openai-messages")
    assert held == [(0, "My order #W42 arrived broken."), (0, PHOTO), (0, "Can I get a refund?")]
    assert _said(f"loop-{which}.jsonl", "otel") == held
