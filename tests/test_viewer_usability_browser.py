"""`tracejudge view` in Debian's headless Chromium, as a reader uses it: a run followed while being written keeps what
the reader is doing (a search being typed, the reasons opened), and a window of 800×600 breaks no word, number or
badge in two and puts a case above its baseline rather than beside it.

Every wait is for a condition on the page, never for time.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _runs import view_server, write_config, write_dataset
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait
from test_viewer import browser, needs_chromium, no_overflow  # noqa: F401  (browser: the shared fixture)
from test_viewer_usability import _cases
from tracejudge.entrypoints.cli import main

pytestmark = needs_chromium

# How many lines the text of each element matching the selector takes (one rectangle per line box of its text).
LINES_JS = """
return [...document.querySelectorAll(arguments[0])].filter(el => el.offsetParent !== null).map(el => {
  const r = document.createRange();
  r.selectNodeContents(el);
  const tops = new Set([...r.getClientRects()].filter(b => b.width > 0).map(b => Math.round(b.top)));
  return [el.textContent.trim(), tops.size];
});
"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """`alpha` (8 native cases), `alpha-again` (the same dataset: a baseline), `live` (3 of alpha's results; `rest` the others)."""
    tmp = tmp_path_factory.mktemp("usability-browser")
    data = write_dataset(tmp / "alpha.jsonl", _cases("alpha", "alpine"))
    out: dict[str, Path] = {}
    for name in ("alpha", "alpha-again"):
        assert main(["run", str(write_config(tmp / f"{name}.yaml", data, tmp / name)), "--no-progress"]) in (0, 1)
        out[name] = tmp / name
    live = tmp / "live"
    live.mkdir()
    shutil.copy(out["alpha"] / "manifest.json", live)
    lines = (out["alpha"] / "results.jsonl").read_bytes().splitlines(keepends=True)
    (live / "results.jsonl").write_bytes(b"".join(lines[:3]))
    out["live"], out["rest"] = live, tmp / "rest.jsonl"
    out["rest"].write_bytes(b"".join(lines[3:]))
    return out


@pytest.fixture(scope="module")
def server(runs: dict[str, Path]) -> Iterator[str]:
    with view_server(str(runs["alpha"]), str(runs["live"]), "--baseline", str(runs["alpha-again"])) as url:
        yield url


@pytest.fixture
def narrow(browser: Any) -> Iterator[Any]:  # noqa: F811
    """The browser with an 800×600 viewport."""
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {"width": 800, "height": 600, "deviceScaleFactor": 1, "mobile": False})
    try:
        yield browser
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def test_following_a_run_keeps_the_search_being_typed_and_the_reasons_opened(server: str, browser: Any, runs: dict[str, Path]) -> None:  # noqa: F811
    browser.get(server + "/run/live/cases")
    WebDriverWait(browser, 30).until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-results") == "3")
    first = browser.find_element(By.CSS_SELECTOR, "#cases tbody tr[data-case]")
    first.find_element(By.CSS_SELECTOR, "button.expand").click()
    key = first.get_attribute("data-case")
    box = browser.find_element(By.ID, "f-q")
    box.send_keys("alpine req")  # typing, not submitted yet, when the run writes more results
    with open(runs["live"] / "results.jsonl", "ab") as fh:
        fh.write(runs["rest"].read_bytes())
    WebDriverWait(browser, 30, ignored_exceptions=(StaleElementReferenceException,)).until(
        lambda d: d.find_element(By.ID, "n-matching").text == "8")
    assert browser.find_element(By.ID, "f-q").get_attribute("value") == "alpine req"
    assert browser.execute_script("return document.activeElement.id") == "f-q"
    row = browser.find_element(By.CSS_SELECTOR, f'#cases tbody tr[data-case="{key}"]')
    why = row.find_element(By.XPATH, "following-sibling::tr[1]")
    assert "why" in why.get_attribute("class") and why.is_displayed()  # the reasons opened before stay open
    assert row.find_element(By.CSS_SELECTOR, "button.expand").get_attribute("aria-expanded") == "true"


def _styled(driver: Any, selector: str) -> None:
    """Wait until the page's stylesheet applies to `selector` (`white-space: nowrap`, view.css): the layout is measured
    with it, not with the browser's defaults, which break any header."""
    WebDriverWait(driver, 30).until(
        lambda d: d.execute_script("const el = document.querySelector(arguments[0]); return el && getComputedStyle(el).whiteSpace", selector) == "nowrap",
        f"view.css never applied to {selector}")


def test_800x600_breaks_no_word_number_or_badge(server: str, narrow: Any) -> None:
    narrow.get(server + "/?list")
    _styled(narrow, "#runs th")
    broken = [t for t, n in narrow.execute_script(LINES_JS, "#runs th, #runs .badge, #runs td.num") if n > 1]
    assert broken == [], broken  # "resul|ts", "PA|SS"
    no_overflow(narrow)
    # The same table 10% narrower, as a machine whose system font is a few % wider than Debian's DejaVu lays it out at
    # 800: a header stays on its line ("started (UTC)" broke in two there while every column fitted here).
    narrow.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {"width": 720, "height": 600, "deviceScaleFactor": 1, "mobile": False})
    narrow.get(server + "/?list")
    _styled(narrow, "#runs th")
    broken = [t for t, n in narrow.execute_script(LINES_JS, "#runs th, #runs .badge, #runs td.num") if n > 1]
    assert broken == [], broken
    no_overflow(narrow)
    narrow.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {"width": 800, "height": 600, "deviceScaleFactor": 1, "mobile": False})
    narrow.get(server + "/run/alpha/cases")
    _styled(narrow, "#cases .chip")
    broken = [t for t, n in narrow.execute_script(LINES_JS, "#cases td.num, #cases .chip, #cases th[data-sort=trial]") if n > 1]
    assert broken == [], broken  # "0.0|37", "tria" cut
    no_overflow(narrow)


def test_800x600_shows_a_case_above_its_baseline(server: str, narrow: Any) -> None:
    narrow.get(server + "/run/alpha/case?id=alpha-0")
    sides = narrow.find_elements(By.CSS_SELECTOR, ".sides.two .side")
    assert [s.get_attribute("data-run") for s in sides] == ["alpha-again", "alpha"]
    width = narrow.execute_script("return document.documentElement.clientWidth")
    assert all(s.rect["width"] > 0.8 * width for s in sides)  # one above the other, each the page's width
    # (a value and, under it, how it moved from the baseline's: each on one line)
    broken = [t for t, n in narrow.execute_script(LINES_JS, "table.scores th, table.scores td.num .v, table.scores .delta") if n > 1]
    assert broken == [], broken  # "va|lu|e", "1.|00|0"
    assert len(narrow.find_elements(By.CSS_SELECTOR, "table.scores .delta")) > 0
    no_overflow(narrow)


def test_a_finished_run_is_polled_every_30_s_and_one_being_written_every_2_s(server: str, browser: Any) -> None:  # noqa: F811
    # `alpha` wrote its summary (complete); `live` has results but no summary yet: it is still being written.
    body = lambda d: d.find_element(By.TAG_NAME, "body")  # noqa: E731
    browser.get(server + "/run/alpha/cases")
    WebDriverWait(browser, 30).until(lambda d: body(d).get_attribute("data-poll-ms") == "30000")
    browser.get(server + "/run/live/cases")
    WebDriverWait(browser, 30).until(lambda d: body(d).get_attribute("data-poll-ms") == "2000")


def test_the_cases_link_of_a_case_goes_back_to_the_list_as_it_was_left(server: str, browser: Any) -> None:  # noqa: F811
    # The list filtered by a search, then a case opened from it: "Cases" at the top keeps the search (it led to the
    # whole list, the filters lost).
    browser.get(server + "/run/alpha/cases?q=alpine")
    WebDriverWait(browser, 30).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#cases tbody tr[data-case] a"))
    browser.find_element(By.CSS_SELECTOR, "#cases tbody tr[data-case] a").click()
    WebDriverWait(browser, 30).until(lambda d: "/case" in d.current_url and "/cases" not in d.current_url)
    back = [a for a in browser.find_elements(By.CSS_SELECTOR, "header nav a") if a.text == "Cases"]
    assert back and back[0].get_attribute("href").endswith("/run/alpha/cases?q=alpine"), [a.get_attribute("href") for a in back]
    back[0].click()
    WebDriverWait(browser, 30).until(lambda d: d.current_url.endswith("/run/alpha/cases?q=alpine"))
    assert browser.find_element(By.ID, "f-q").get_attribute("value") == "alpine"


def test_a_rows_reasons_button_is_named_for_its_case(server: str, browser: Any) -> None:  # noqa: F811
    # Read aloud as "▸" (its text), with nothing saying what it opens or whose; report.html's says "reasons of <id>".
    browser.get(server + "/run/alpha/cases")
    buttons = browser.find_elements(By.CSS_SELECTOR, "#cases tbody tr[data-case] button.expand")
    named = [(b.accessible_name, b.find_element(By.XPATH, "ancestor::tr[1]").get_attribute("data-case")) for b in buttons]
    assert named and all(name == f"reasons of {case}" for name, case in named), named
