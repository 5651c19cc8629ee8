"""A user message holding a photo and no text, between two of the user's texts, is a user message under format `otel`
as under `openai-messages` reading the conversation the application held: its images as OpenAI content parts. A user
message holding text and a photo keeps both, as content parts; the judge reads its text, never the image's URL or data.

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


def _parts(text: str, photo: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text}, {"type": "image_url", "image_url": {"url": f"https://example.com/{photo}.png"}}]


@pytest.mark.parametrize("which", ["oi", "tl"])
def test_a_photo_beside_the_users_text_is_kept_with_it_and_the_judge_reads_the_text(which: str) -> None:
    # Before, both formats kept the text alone: the photo the question was about was gone from the conversation.
    from tracejudge.stages.judge.metrics import TaskCompletion

    box, lid = "My order #W42 arrived broken. This is the box:", "And this is the lid. Can I get a refund?"
    held = _said(f"mixed-{which}.messages.jsonl", "openai-messages")
    assert held == [(0, _parts(box, "broken-box")), (0, _parts(lid, "broken-lid"))]
    assert _said(f"mixed-{which}.jsonl", "otel") == held
    (otel,) = extract_path(DATA / f"mixed-{which}.jsonl", "otel")
    (app,) = extract_path(DATA / f"mixed-{which}.messages.jsonl", "openai-messages")
    assert (otel.input, otel.turns) == (app.input, app.turns) == (box, [lid])
    # The judge is shown the words of each message, as before the photos were kept: the same prompt, no URL or image data.
    shown = TaskCompletion().plan(otel).render(0)
    assert shown == TaskCompletion().plan(app).render(0)
    assert f"User 1: {box}\nUser 2: {lid}\n" in shown and "example.com" not in shown and "image_url" not in shown, shown


def test_a_photo_sent_without_words_is_named_to_the_judge_not_dumped() -> None:
    # Its content parts were shown as the structure they are: a data URL's base64 filled the turn's characters.
    from tracejudge.core.records import Case
    from tracejudge.stages.judge.metrics import TaskCompletion

    data = "iVBORw0KGgo" * 300
    case = Case.model_validate({"id": "c", "trace": {"steps": [{"output": "Sorry to hear that."}], "user_messages": [
        {"step": 0, "content": "My order arrived broken."},
        {"step": 0, "content": [{"type": "image_url", "image_url": {"url": f"data:image/png;base64,{data}"}}]},
        {"step": 0, "content": [{"type": "image_url", "image_url": {"url": "https://cdn.example.com/box.png?X-Amz-Signature=abc"}}]},
        {"step": 0, "content": [{"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "QUJD"}}]}]}})
    shown = TaskCompletion().plan(case).render(0)
    assert f"User 2: [image: inline image/png, {len(data):,} characters of base64]" in shown, shown
    assert "User 3: [image: https://cdn.example.com/box.png]" in shown, shown
    assert "User 4: [image: inline image/jpeg, 4 characters of base64]" in shown, shown
    assert "iVBORw0KGgo" not in shown and "X-Amz-Signature" not in shown and "image_url" not in shown


@pytest.mark.parametrize("which", ["oi", "tl"])
@pytest.mark.parametrize("name", ["last", "alone"])
def test_a_photo_sent_last_or_alone_is_kept_as_openai_messages_keeps_it(name: str, which: str) -> None:
    # The question then the photo as the request's last message, or the photo and nothing else: the photo was dropped
    # (kept only between two texts), and a photo sent alone left the case with no user message at all.
    held = _said(f"{name}-{which}.messages.jsonl", "openai-messages")
    said = [(0, "My order #W42 arrived broken: can I get a refund? Here is the box.")] if name == "last" else []
    assert held == [*said, (0, PHOTO)]
    assert _said(f"{name}-{which}.jsonl", "otel") == held
