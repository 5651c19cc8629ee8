"""The judge cache key's text is built in parts (`tracejudge.llm.cache._key_text`) and must equal the canonical JSON
of the whole components, character for character, or every cache written before would miss (and, worse, two different
requests could share a key if a part were dropped)."""

from __future__ import annotations

import hashlib
import json
import sys

import pytest
from tracejudge.llm import cache
from tracejudge.llm.cache import cache_key, canonical

# Every code point but the surrogates, in one prompt: the escapes msgspec writes must be json's, one by one.
EVERY_CHAR = "".join(chr(i) for i in range(0x110000) if not 0xD800 <= i <= 0xDFFF)


@pytest.fixture(params=["msgspec", "json"], autouse=True)
def escaper(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test both ways the prompts are escaped: by msgspec (loaded) and by json (msgspec not imported)."""
    if request.param == "msgspec":
        import msgspec.json  # noqa: F401
    else:
        monkeypatch.delitem(sys.modules, "msgspec.json", raising=False)
    return str(request.param)


def components(system: str = "You judge.", user: str = "Trace: …", **changes: object) -> dict[str, object]:
    """Key components shaped as the judge client makes them, with `changes` applied."""
    out: dict[str, object] = {
        "provider": "openai", "base_url": "http://127.0.0.1:1/v1", "model": "gpt-4o-mini",
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
        "sampling": {"temperature": 0.0, "max_tokens": 512},
        "response_format": {"name": "verdict", "schema": {"type": "object", "properties": {"score": {"type": "integer", "minimum": 1}}}},
        "prompt_version": "rubric/3", "rubric": {"criteria": "Did it?", "scale": [1, 5]}, "trial": 0,
    }
    out.update(changes)
    return out


def json_dumps_key(comps: dict[str, object]) -> str:
    """The key as it was first defined: sha256 of `json.dumps` with sorted keys, no whitespace, UTF-8 kept."""
    return hashlib.sha256(json.dumps(comps, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()).hexdigest()


@pytest.mark.parametrize("comps", [
    components(),
    components(user=EVERY_CHAR),
    components(system=EVERY_CHAR[:5000], user='quotes " and \\ backslashes\n\ttabs \x00\x1f\x7f \u2028 emoji 🎉'),
    components(user=""),
    components(base_url=None, rubric=None, trial=3, sampling={"temperature": 1e-7, "max_tokens": 10**20}),
    components(messages=[{"role": "user", "content": "only one"}]),
    components(messages=[]),
    components(messages=[{"role": "system", "content": "s", "cache_control": {"type": "ephemeral"}}]),  # not a plain message
    components(messages=[{"role": "user", "content": ["a", "block", "list"]}]),
    components(messages=({"role": "user", "content": "a tuple"},)),
    components(response_format={"name": "verdict", "schema": {"b": 1, "a": [True, None, 2.5, float("inf")]}, "mode": "json_object"}),
], ids=lambda c: str(len(canonical(c))))
def test_the_key_text_is_the_canonical_json_and_the_key_its_sha256(comps: dict[str, object]) -> None:
    assert cache._key_text(comps) == canonical(comps)
    assert cache_key(comps) == json_dumps_key(comps)


def test_a_system_prompt_seen_before_gives_the_same_text_and_a_changed_one_another_key() -> None:
    first = cache_key(components(system="Judge strictly."))
    assert cache_key(components(system="Judge strictly.")) == first == json_dumps_key(components(system="Judge strictly."))
    assert cache_key(components(system="Judge strictly!")) != first
    assert cache_key(components(system="Judge strictly.", user="Trace: other")) != first


def test_a_lone_surrogate_fails_as_the_canonical_text_did() -> None:
    comps = components(user="bad \ud800 text")
    assert cache._key_text(comps) == canonical(comps)
    with pytest.raises(UnicodeEncodeError):
        cache_key(comps)


def test_missing_or_extra_components_are_refused() -> None:
    comps = components()
    del comps["trial"]
    with pytest.raises(ValueError, match="exactly"):
        cache_key(comps)
    with pytest.raises(ValueError, match="exactly"):
        cache_key({**components(), "run_id": "x"})
