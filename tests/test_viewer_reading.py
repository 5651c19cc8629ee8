"""Reading failing case after failing case: a Case page opened from a filtered Cases table says where the case stands in
that list and links to the previous and next case of it and back to the list's page holding it, over HTTP on
127.0.0.1 (a real `tracejudge view` process); j / k / u do the same from the keyboard, in Debian's headless Chromium.
What is read on the way: a reason one clause a line, a chip's hover kept short, a Cases table of five metrics that
keeps its request column and whole headers at 800 px.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _runs import view_server, write_config, write_dataset
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait
from test_viewer import browser, needs_chromium  # noqa: F401  (browser: the shared fixture)
from test_viewer_usability import _cases, get
from tracejudge.entrypoints.cli import main
from tracejudge.viewer.case_nav import Place, nav_html
from tracejudge.viewer.case_query import CaseQuery


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`nav`: 8 native cases `nav-0` … `nav-7`; `nav-0`, `nav-3` and `nav-6` call one tool too few (tc and traj fail).
    Five metrics, as the demo scores: the Cases table is as crowded as a user's. `nav-recall`: the same cases, writes_exact
    scored by recall; `nav-judged`: the same cases judged by the simulator (a judge block: tokens and dollars)."""
    tmp = tmp_path_factory.mktemp("case-nav")
    data = write_dataset(tmp / "nav.jsonl", _cases("nav", "navigate"))
    metrics = [{"type": "ToolCorrectness", "name": "tc"}, {"type": "TrajectoryMatch", "name": "traj", "order": "in_order", "threshold": 0.9},
               {"type": "ToolCalls", "name": "writes_exact"}, {"type": "ToolCallAccuracy"}, {"type": "MaxToolCalls", "max_calls": 10}]
    assert main(["run", str(write_config(tmp / "nav.yaml", data, tmp / "nav", metrics=metrics)), "--no-progress"]) in (0, 1)
    metrics[2] = {**metrics[2], "score": "recall"}  # (a baseline scoring writes_exact otherwise: 0.5 where nav has 0.667)
    assert main(["run", str(write_config(tmp / "recall.yaml", data, tmp / "nav-recall", metrics=metrics)), "--no-progress"]) in (0, 1)
    judged = write_config(tmp / "judged.yaml", data, tmp / "nav-judged", metrics=[{"type": "TaskCompletion"}],
                          judge={"provider": "simulator", "model": "gpt-4o-mini"})
    assert main(["run", str(judged), "--no-progress"]) in (0, 1)
    with view_server(str(tmp / "nav"), str(tmp / "nav-recall"), str(tmp / "nav-judged")) as url:
        yield url


def _nav(page: str) -> dict[str, str]:
    """The Case page's bar: each link's id mapped to its href (unescaped), and `pos` to the case's place."""
    bar = re.search(r'<nav id="case-nav".*?</nav>', page, re.S).group(0)
    out = {m.group(1): html.unescape(m.group(2)) for m in re.finditer(r'<a id="([a-z-]+)"[^>]*href="([^"]*)"', bar)}
    text = re.sub(r"<[^>]+>", "", bar)
    out["pos"] = text[text.find("case "):].strip()
    return out


def test_the_case_links_of_a_filtered_list_carry_its_filter_and_the_case_page_moves_along_it(server: str) -> None:
    status, listing = get(server + "/run/nav/cases?below=tc&sort=case&desc=1")
    assert status == 200
    links = [html.unescape(h) for h in re.findall(r'class="case-link" href="([^"]*)"', listing)]
    assert links == [f"/run/nav/case?id=nav-{i}&below=tc&desc=1" for i in (6, 3, 0)]
    bar = _nav(get(server + links[1])[1])
    assert bar["pos"] == "case 2 of 3 in the list (below=tc, desc=1)"
    assert bar["prev-case"] == links[0] and bar["next-case"] == links[2]
    assert bar["to-list"] == "/run/nav/cases?below=tc&desc=1"
    last = get(server + links[2])[1]
    assert 'id="next-case">next →</span>' in last and _nav(last)["pos"].startswith("case 3 of 3")  # the end: no link past it


def test_the_list_link_opens_the_page_holding_the_case_and_a_case_outside_the_list_says_so(server: str) -> None:
    bar = _nav(get(server + "/run/nav/case?id=nav-7&size=25&sort=metric:tc")[1])
    assert bar["pos"] == "case 8 of 8 in the list (sort=metric:tc, size=25)"
    assert bar["to-list"] == "/run/nav/cases?sort=metric%3Atc&size=25"
    page = get(server + "/run/nav/case?id=nav-1&below=tc")[1]
    assert "this case is not in the list (below=tc)" in page and 'id="next-case"' not in page
    plain = _nav(get(server + "/run/nav/case?id=nav-1")[1])  # (no list named: every result, in case order)
    assert plain["pos"] == "case 2 of 8 in the list (all results)"
    assert plain["prev-case"] == "/run/nav/case?id=nav-0" and plain["next-case"] == "/run/nav/case?id=nav-2"


def test_in_a_list_of_passes_and_fails_the_bar_also_skips_to_the_previous_and_next_failed_result(server: str) -> None:
    bar = _nav(get(server + "/run/nav/case?id=nav-4&tag=nav-tag")[1])
    assert bar["prev-failed"] == "/run/nav/case?id=nav-3&tag=nav-tag" and bar["next-failed"] == "/run/nav/case?id=nav-6&tag=nav-tag"
    assert bar["prev-case"] == "/run/nav/case?id=nav-3&tag=nav-tag" and bar["next-case"] == "/run/nav/case?id=nav-5&tag=nav-tag"
    last = get(server + "/run/nav/case?id=nav-7")[1]
    assert _nav(last)["prev-failed"] == "/run/nav/case?id=nav-6" and 'id="next-failed">failed →</span>' in last  # (none after it)
    assert "next-failed" not in get(server + "/run/nav/case?id=nav-3&status=failed")[1]  # (its next already is the next failed)


def test_the_list_link_goes_back_to_the_lists_page_holding_the_case(server: str) -> None:
    bar = _nav(get(server + "/run/nav/case?id=nav-7&size=25")[1])
    assert bar["to-list"] == "/run/nav/cases?size=25"  # (8 results: one page)
    status, page = get(server + "/run/nav/case?id=nav-0&size=abc")
    assert status == 400 and "size='abc'" in page
    # (the 60th of 80 results, 25 a page: page 3; the first page's link names no page)
    far = _nav(nav_html("r", CaseQuery(below="tc", size=25), Place(60, 80, ("a", 0), ("b", 1))))
    assert far["to-list"] == "/run/r/cases?below=tc&size=25&page=3" and far["next-case"] == "/run/r/case?id=b&trial=1&below=tc&size=25"
    assert _nav(nav_html("r", CaseQuery(size=25), Place(25, 80, None, None)))["to-list"] == "/run/r/cases?size=25"


def test_the_cases_header_gives_the_unit_of_durations(server: str) -> None:
    assert "took (s)" in get(server + "/run/nav/cases")[1]


# Each place an element's text goes on to a new line: (the character before, the one after).
BREAKS_JS = """
return [...document.querySelectorAll(arguments[0])].map(el => {
  const walk = document.createTreeWalker(el, NodeFilter.SHOW_TEXT), out = [];
  let top = null, prev = "";
  for (let n = walk.nextNode(); n; n = walk.nextNode()) for (let i = 0; i < n.data.length; i++) {
    const r = document.createRange(); r.setStart(n, i); r.setEnd(n, i + 1);
    const y = Math.round(r.getBoundingClientRect().top);
    if (top !== null && y > top + 2) out.push([prev, n.data[i]]);
    top = y; prev = n.data[i];
  }
  return [el.textContent, out];
});
"""


def mid_word(driver: Any, selector: str) -> list[tuple[str, list[list[str]]]]:
    """The elements matching `selector` whose text goes to a new line inside a word: not at a space, after a `_`, or
    between a lower-case letter and an upper-case one (`Tool|Correctness`, as `html.name_html` lets a name wrap)."""
    def fine(a: str, b: str) -> bool:
        return a.isspace() or b.isspace() or a in "_-,/" or (a.islower() and b.isupper())
    return [(text, br) for text, br in driver.execute_script(BREAKS_JS, selector) if not all(fine(a, b) for a, b in br)]


def press(driver: Any, key: str) -> None:
    """`key` pressed where the focus is (an element's `send_keys` would move the focus to that element first)."""
    ActionChains(driver).send_keys(key).perform()


@needs_chromium
def test_j_k_and_u_move_along_the_failing_cases_from_the_keyboard(server: str, browser: Any) -> None:  # noqa: F811
    browser.get(server + "/run/nav/cases?below=tc")
    press(browser, "j")
    press(browser, "j")
    focused = browser.switch_to.active_element
    assert focused.get_attribute("class") == "case-link" and focused.text == "nav-3"
    assert browser.execute_script("return getComputedStyle(arguments[0]).outlineStyle", focused) != "none"  # focus visible
    focused.send_keys(Keys.ENTER)
    WebDriverWait(browser, 30).until(lambda d: d.find_elements(By.ID, "case-pos") and d.find_element(By.ID, "case-id").text == "nav-3")
    press(browser, "j")
    WebDriverWait(browser, 30).until(lambda d: d.find_elements(By.ID, "case-id") and d.find_element(By.ID, "case-id").text == "nav-6")
    press(browser, "k")
    WebDriverWait(browser, 30).until(lambda d: d.find_elements(By.ID, "case-id") and d.find_element(By.ID, "case-id").text == "nav-3")
    assert not browser.find_elements(By.ID, "next-failed")  # (a list of failed results: n and p are j and k there)
    press(browser, "u")
    WebDriverWait(browser, 30).until(lambda d: d.current_url.endswith("/run/nav/cases?below=tc"))
    # (back on the list, the case just read has the focus: j goes on from there)
    WebDriverWait(browser, 30).until(lambda d: d.switch_to.active_element.text == "nav-3")
    press(browser, "j")
    assert browser.switch_to.active_element.text == "nav-6"
    search = browser.find_element(By.ID, "f-q")
    search.send_keys("jk")  # typed into the search box: text, not moves
    assert search.get_attribute("value") == "jk" and browser.current_url.endswith("/run/nav/cases?below=tc")
    browser.get(server + "/run/nav/case?id=nav-1")  # (every result: n skips the passing ones to the next failed)
    press(browser, "n")
    WebDriverWait(browser, 30).until(lambda d: d.find_elements(By.ID, "case-id") and d.find_element(By.ID, "case-id").text == "nav-3")


def test_a_reasons_clauses_each_start_a_line_and_read_as_written(server: str) -> None:
    page = get(server + "/run/nav/case?id=nav-0")[1]
    cell = re.search(r'<tr data-metric="writes_exact">.*?<td class="reason">(.*?)<details>', page, re.S).group(1)
    clauses = [html.unescape(c) for c in re.findall(r'<span class="clause">(.*?)</span>', cell)]
    assert len(clauses) >= 2 and clauses[1].startswith("missing: [1] book("), clauses
    text = re.sub(r'<div class="to-parts">.*', "", cell)  # (the link to the expected-vs-actual table the reason sums up)
    assert "".join(clauses) == html.unescape(re.sub(r"<[^>]+>", "", text))  # (only line breaks added: the text is the reason's)
    assert '<td class="metric">writes_<wbr>exact</td>' in page  # (a narrow column breaks the name at its word, not mid-word)


@needs_chromium
def test_at_800_px_the_cases_table_keeps_a_column_for_the_request_and_every_header_whole(server: str, browser: Any) -> None:  # noqa: F811
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {"width": 800, "height": 600, "deviceScaleFactor": 1, "mobile": False})
    try:
        browser.get(server + "/run/nav/cases")
        WebDriverWait(browser, 30).until(lambda d: d.execute_script(
            "const c = document.querySelector('#cases td.snippet'); return c && getComputedStyle(c).whiteSpace === 'nowrap'"))
        # (five metric columns left the request's words a column 0 px wide: the input was not shown at all)
        assert browser.find_element(By.CSS_SELECTOR, "#cases th.c-input").rect["width"] >= 90
        cut = browser.execute_script("return [...document.querySelectorAll('#cases thead th')].filter(th => th.scrollWidth > th.clientWidth)"
                                     ".map(th => th.textContent)")
        assert cut == [], cut  # ("Trajector", "Completi": a header clipped by its column)
        browser.get(server + "/run/nav")
        WebDriverWait(browser, 30).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#summary td.num"))
        assert mid_word(browser, "#summary td:first-child a, #summary td.num, #summary th") == []  # ("ToolCorre|ctness", "0.52|4")
        aligned = browser.execute_script("return [...document.querySelectorAll('#summary td.num')].map(td => getComputedStyle(td).textAlign)")
        assert aligned and set(aligned) == {"right"}  # (figures line up on their last digit)
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def test_a_chips_hover_gives_the_start_of_its_reason_and_the_row_under_it_all_of_it(server: str) -> None:
    page = get(server + "/run/nav/cases?size=25")[1]
    row = re.search(r'<tr data-case="nav-0".*?</tr><tr class="why" hidden>.*?</tr>', page, re.S).group(0)
    title = html.unescape(re.search(r'data-metric="writes_exact"><span class="chip fail" title="([^"]*)"', row).group(1))
    full = html.unescape(re.search(r'<b>writes_exact</b>.*?<span class="reason">(.*?)</span></div>', row, re.S).group(1))
    assert len(full) > 170 and title == "writes_exact: fail — " + full[:159] + "…"  # (600 characters made a third of the page)


def test_beside_a_baseline_each_score_says_how_it_moved(server: str) -> None:
    page = get(server + "/run/nav/case?id=nav-0&vs=nav-recall")[1]
    left, right = page.split('<div class="side" data-run="nav">')
    assert 'class="delta' not in left  # (the baseline's own column is not told against itself)
    cell = lambda m: re.search(rf'<tr data-metric="{m}">.*?<td class=num><span class="v">(.*?)</td>', right, re.S).group(1)  # noqa: E731
    assert re.search(r'<span class="ok small delta" title="nav-recall: 0.500 \(fail\)">\+0.167</span>', cell("writes_exact")), cell("writes_exact")
    assert ">= baseline</span>" in cell("tc")
    assert 'class="delta' not in get(server + "/run/nav/case?id=nav-0&vs=-")[1]  # alone: nothing to move from


def test_a_score_links_to_the_table_its_reason_sums_up_and_the_side_to_its_transcript(server: str) -> None:
    page = get(server + "/run/nav/case?id=nav-0&vs=nav-recall")[1]
    jumps = [html.unescape(h) for h in re.findall(r'<a class="to-part" href="#([^"]*)"', page)]
    assert {"nav-align-writes_exact", "nav-transcript", "nav-recall-align-writes_exact", "nav-recall-transcript"} <= set(jumps), jumps
    ids = set(re.findall(r' id="([^"]*)"', page))
    assert set(jumps) <= ids  # (each side's links lead into that side)
    assert re.search(r'<div id="nav-align-writes_exact"><div class="alignment" data-metric="writes_exact">', page)


def test_the_judge_blocks_figures_read_as_counts_and_dollars(server: str) -> None:
    page = get(server + "/run/nav-judged")[1]
    block = dict(re.findall(r"<tr><th>([a-z ]+)</th><td class=num>([^<]*)</td></tr>", re.search(r'id="judge">(.*?)</table>', page, re.S).group(1)))
    assert re.fullmatch(r"\d{1,3}(,\d{3})+", block["input tokens"]), block  # (thousands of tokens, grouped: 4,104 not 4104)
    assert re.fullmatch(r"\$\d+\.\d{4}", block["cost usd"]), block
    assert block["requests"] == "8" and block["mode"] in ("sync", "batch")
