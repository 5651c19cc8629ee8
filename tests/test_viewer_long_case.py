"""A case of many tool calls: its Case page holds the first `FOLD_CALLS` calls (and alignment rows), the rest is fetched
when asked for (a button, or a link into it) and is what the whole page held, byte for byte. It was one page of every
call: 5,000 calls made 6-8 MB, seconds to render."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _runs import native_case, view_server, write_config, write_dataset
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait
from test_viewer import browser, needs_chromium  # noqa: F401  (browser: the shared fixture)
from test_viewer_usability import get
from tracejudge.entrypoints.cli import main
from tracejudge.viewer.transcript import FOLD_CALLS

N = 600


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A run of case `long` (N steps of one call each, 50 expected) and case `short` (one call)."""
    tmp = tmp_path_factory.mktemp("long")
    case = native_case("long", ["lookup"] * 50, [])
    case["trace"]["steps"] = [{"tool_calls": [{"name": "lookup", "arguments": {"q": f"item {i}"}, "result": json.dumps({"id": i})}]}
                              for i in range(N)]
    data = write_dataset(tmp / "d.jsonl", [case, native_case("short", ["a"], ["a"])])
    metrics = [{"type": "ToolCorrectness", "name": "tc"}, {"type": "ToolCalls", "name": "calls"}]
    assert main(["run", str(write_config(tmp / "c.yaml", data, tmp / "long", metrics=metrics)), "--no-progress"]) in (0, 1)
    with view_server(str(tmp / "long")) as url:
        yield url


_REST = re.compile(r'<(?:div|tr) class="rest" data-src="([^"]+)">.*?</(?:div|tr)>', re.S)


def test_the_page_holds_the_first_calls_and_the_rest_is_what_it_left_out(server: str) -> None:
    status, page = get(server + "/run/long/case?id=long")
    assert status == 200
    calls = [int(i) for i in re.findall(r'<div class="call" id="long-call-(\d+)"', page)]
    assert calls == list(range(FOLD_CALLS))  # (the alignment table's calls carry no id)
    assert page.count('<tr class="unexpected">') + page.count('<tr class="pair">') == FOLD_CALLS
    sources = _REST.findall(page)
    assert len(sources) == 2 and "show the other 400 steps (400 tool calls)" in page and f"show the other {N - FOLD_CALLS:,} rows" in page
    whole = _REST.sub(lambda m: get(server + html.unescape(m.group(1)))[1], page)
    assert [int(i) for i in re.findall(r'<div class="call" id="long-call-(\d+)"', whole)] == list(range(N))
    assert whole.count('<tr class="unexpected">') + whole.count('<tr class="pair">') == N
    assert whole.index("long-call-599") < whole.index("final output")  # (the steps come back where they were left out)
    short = get(server + "/run/long/case?id=short")[1]
    assert 'class="rest"' not in short  # a case of few calls is one page, as before
    assert get(server + "/run/long/case/rest?id=long&part=align%3Anope&from=200")[0] == 404


@needs_chromium
def test_the_rest_loads_from_its_button_and_from_a_link_into_it(server: str, browser: Any) -> None:  # noqa: F811
    browser.get(server + "/run/long/case?id=long")
    assert browser.find_elements(By.ID, "long-call-450") == []
    browser.find_element(By.CSS_SELECTOR, "div.rest button.load-rest").click()
    WebDriverWait(browser, 30).until(lambda d: d.find_elements(By.ID, "long-call-450"))
    assert browser.find_elements(By.CSS_SELECTOR, "div.rest") == []
    assert len(browser.find_elements(By.CSS_SELECTOR, "table.align tr.unexpected, table.align tr.pair")) == FOLD_CALLS
    browser.find_element(By.CSS_SELECTOR, "tr.rest button.load-rest").click()
    WebDriverWait(browser, 30).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "table.align tr.unexpected, table.align tr.pair")) == N)
    # A link into the part left out (as a judge's question about a call links to it) loads it and goes there.
    browser.get(server + "/run/long/case?id=long")
    browser.execute_script("const a = document.createElement('a'); a.id = 'to-550'; a.href = '#long-call-550'; a.textContent = 'to 550';"
                           "document.querySelector('h1').append(a);")
    browser.find_element(By.ID, "to-550").click()
    WebDriverWait(browser, 30).until(lambda d: d.execute_script("return location.hash") == "#long-call-550")
    assert browser.execute_script("return document.querySelector(':target') && document.querySelector(':target').id") == "long-call-550"
    # A URL pointing at a call left out loads it and shows it.
    browser.get(server + "/run/long/case?id=long#long-call-599")
    WebDriverWait(browser, 30).until(lambda d: d.find_elements(By.ID, "long-call-599"))
    WebDriverWait(browser, 10).until(lambda d: d.execute_script(
        "const r = document.getElementById('long-call-599').getBoundingClientRect(); return r.top < innerHeight && r.bottom > 0;"))
