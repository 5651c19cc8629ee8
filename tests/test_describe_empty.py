"""An exception without a message is described as Python's traceback shows it (`GeneratorExit`), not with a dangling
`": "` (`ValueError: `) — in a score's reason, a result's error, the crash line."""

from __future__ import annotations

from tracejudge.core.errors import describe


def test_an_exception_without_a_message_is_its_name() -> None:
    assert describe(ValueError()) == "ValueError"
    assert describe(GeneratorExit()) == "GeneratorExit"
    assert describe(ValueError("")) == "ValueError"
    assert describe(ValueError("bad input")) == "ValueError: bad input"
    assert describe(ExceptionGroup("g", [KeyError(), ValueError("x")])) == "KeyError; ValueError: x"
