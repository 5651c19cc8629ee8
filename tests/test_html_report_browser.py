"""report.html in headless Chromium (selenium): figures as Python formats them, a fragment that does not decode, the keyboard.

The page's score chips must read as report.md and the terminal print the same value (`f"{x:.3f}"`: an exact binary tie
rounds half to even, where JavaScript's toFixed rounds it up); a malformed `#…` must leave the default view, not an
empty table; the sort headers and row toggles must work from the keyboard and say their state (aria-sort, aria-expanded).
"""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

import pytest
from _runs import result_line, seven_and_three, write_config
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait
from test_viewer import browser, needs_chromium  # noqa: F401  (browser: the shared fixture)
from tracejudge.entrypoints.cli import main
from tracejudge.stages.reports.html_assets import PAGE_JS

pytestmark = needs_chromium

# Exact binary ties at 3 places (odd sixteenths), their negatives, and values near them that are no ties.
TIES = [k / 16 for k in range(1, 32, 2)] + [-k / 16 for k in (1, 5, 9, 13)]
NEAR = [0.0005, 1.0005, 0.0625000001, 0.3124999999, -0.0, -0.0004, 2.5, 1e21, 1.5e22]


def _load(driver: Any, page: Path, fragment: str = "") -> None:
    driver.get("about:blank")  # a new document even when only the fragment differs
    driver.get(page.resolve().as_uri() + fragment)
    WebDriverWait(driver, 15).until(lambda d: d.find_element(By.ID, "rows-shown").text != "0")  # the script has built the table


def _reported(tmp_path: Path, scores: dict[str, tuple[float, str]]) -> Path:
    """A run directory holding one result per case id (metric `m`: its value and reason, threshold 0.5), reported."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    with open(run_dir / "results.jsonl", "w", encoding="utf-8") as fh:
        for cid, score in scores.items():
            fh.write(result_line(cid, 0, {"m": score}, threshold=0.5) + "\n")
    main(["report", str(run_dir)])
    return run_dir


def _chips(driver: Any) -> dict[str, str]:
    return driver.execute_script(
        "var out = {}; document.querySelectorAll('#cases tbody tr[data-case]').forEach(function(tr){"
        " out[tr.getAttribute('data-case')] = tr.querySelector('.chip').textContent; }); return out;")


def test_report_html_chips_round_as_python_formats(tmp_path: Path, browser: Any) -> None:  # noqa: F811
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    # A score's value is in [0, 1] (a line holding another is a damaged line, left out of the page): the values in
    # that range here; the formatting of the rest is the next test's.
    values = {f"v{i:03d}": v for i, v in enumerate(v for v in TIES + NEAR if 0.0 <= v <= 1.0)}
    with open(run_dir / "results.jsonl", "w", encoding="utf-8") as fh:
        for cid, v in values.items():
            fh.write(result_line(cid, 0, {"m": (v, "r")}, threshold=0.5) + "\n")
    assert main(["report", str(run_dir)]) == 0
    shown: dict[str, str] = {}
    for n in (1, 2):  # 12 results: one page of 50 (a second page shows the last)
        _load(browser, run_dir / "report.html", f"#sort=case&page={n}")
        shown.update(_chips(browser))
    assert shown == {cid: f"{v:.3f}" for cid, v in values.items()}
    assert [shown[c] for c in ("v000", "v002", "v004", "v006")] == ["0.062", "0.312", "0.562", "0.812"]  # toFixed: 0.063, 0.313, …
    assert f"| {values['v000']:.3f} |" in (run_dir / "report.md").read_text(encoding="utf-8")  # report.md says the same


def _fixed_source() -> str:
    # The page's formatting function itself, cut out of its script, to call it on values no run would score.
    m = re.search(r"\n  function fixed\(x, nd\)\{\n.*?\n  \}\n", PAGE_JS, re.S)
    assert m, "the page's script has no fixed(x, nd)"
    return m.group()


def test_report_html_number_formatting_equals_python_at_every_precision(browser: Any) -> None:  # noqa: F811
    rng = random.Random(63)
    values = [*TIES, *NEAR, 0.5, 1.5, 0.25, 0.75, 0.125, 0.375, 1 / 32, 3 / 64, 2.0 ** 70, 123456789.125, 1e-300, 5e-324, 0.1, 0.15,
              0.25 + 2 ** -40, 1 / 3, 2 / 3, 1e20 + 0.5, 9.995, 99.9995]
    values += [rng.random() for _ in range(300)]
    values += [rng.randrange(-10 ** 6, 10 ** 6) / 2 ** rng.randrange(1, 12) for _ in range(300)]  # many exact ties at some precision
    values += [rng.uniform(-1, 1) * 10 ** rng.randrange(-8, 22) for _ in range(200)]
    driver = browser
    driver.get("about:blank")
    for nd in (0, 1, 2, 3, 4, 6, 10):
        got = driver.execute_script(_fixed_source() + "var nd = arguments[1]; return arguments[0].map(function(v){ return fixed(v, nd); });",
                                    values, nd)
        want = [f"{v:.{nd}f}" for v in values]
        bad = [(v, g, w) for v, g, w in zip(values, got, want, strict=True) if g != w]
        assert not bad, (nd, bad[:5])


@pytest.mark.parametrize("fragment", ["#%", "#sort=-traj%", "#page=%E0%A4%A", "#sort=%zz&page=1"])
def test_report_html_ignores_a_fragment_that_does_not_decode(tmp_path: Path, browser: Any, fragment: str) -> None:  # noqa: F811
    data = seven_and_three(tmp_path / "cases.jsonl")
    run_dir = tmp_path / "run"
    assert main(["run", str(write_config(tmp_path / "c.yaml", data, run_dir)), "--no-progress"]) == 0
    _load(browser, run_dir / "report.html", fragment)
    assert browser.find_element(By.ID, "rows-shown").text == "10"
    cases = [tr.get_attribute("data-case") for tr in browser.find_elements(By.CSS_SELECTOR, "#cases tbody tr[data-case]")]
    assert len(cases) == 10  # the default view: every row, in the report's order (worst first), unsorted
    assert browser.find_element(By.ID, "cases").get_attribute("data-sorted") is None


def _focused(driver: Any) -> Any:
    return driver.switch_to.active_element


def test_report_html_table_works_from_the_keyboard(tmp_path: Path, browser: Any) -> None:  # noqa: F811
    data = seven_and_three(tmp_path / "cases.jsonl")
    run_dir = tmp_path / "run"
    assert main(["run", str(write_config(tmp_path / "c.yaml", data, run_dir)), "--no-progress"]) == 0
    driver = browser
    _load(driver, run_dir / "report.html")
    table = driver.find_element(By.ID, "cases")
    keys = ActionChains(driver)
    # Tab from the top of the page: the five sort headers first (nothing before the table takes the focus), then each row's toggle.
    order = []
    for _ in range(15):
        keys.send_keys(Keys.TAB).perform()
        el = _focused(driver)
        order.append((el.tag_name, el.get_attribute("class"), el.text if "sort" in el.get_attribute("class") else el.get_attribute("aria-label")))
    assert order[:5] == [("button", "sort", name) for name in ("case", "trial", "status", "tc", "traj")]
    rows = [tr.get_attribute("data-case") for tr in driver.find_elements(By.CSS_SELECTOR, "#cases tbody tr[data-case]")]
    assert order[5:15] == [("button", "expand", f"reasons of {cid}") for cid in rows]

    # Enter on a header sorts by it; Space on it again reverses.
    header = driver.find_element(By.XPATH, "//table[@id='cases']//th[button[text()='traj']]")
    header.find_element(By.TAG_NAME, "button").send_keys(Keys.ENTER)
    assert table.get_attribute("data-sorted") == "traj" and header.get_attribute("aria-sort") == "ascending"
    _focused(driver).send_keys(Keys.SPACE)  # the focus stayed on the header's button
    assert table.get_attribute("data-sorted") == "-traj" and header.get_attribute("aria-sort") == "descending"
    assert [th.get_attribute("aria-sort") for th in table.find_elements(By.CSS_SELECTOR, "thead th")].count(None) == 4  # one column says it is sorted
    first = driver.find_elements(By.CSS_SELECTOR, "#cases tbody tr[data-case]")[0]
    assert first.get_attribute("data-case") == "good-0"

    # Enter on a row's toggle opens its reasons under it; Space closes them.
    toggle = first.find_element(By.CSS_SELECTOR, "button.expand")
    why = driver.find_element(By.ID, toggle.get_attribute("aria-controls"))
    assert not why.is_displayed() and toggle.get_attribute("aria-expanded") == "false"
    toggle.send_keys(Keys.ENTER)
    assert why.is_displayed() and toggle.get_attribute("aria-expanded") == "true"
    assert "tc" in why.text and "traj" in why.text
    _focused(driver).send_keys(Keys.SPACE)
    assert not why.is_displayed() and toggle.get_attribute("aria-expanded") == "false"
    first.find_elements(By.TAG_NAME, "td")[2].click()  # a click on the row still toggles it (once), as before
    assert why.is_displayed() and toggle.get_attribute("aria-expanded") == "true"


def _shown_source() -> str:
    # The page's `shown(text)` (with its pattern), cut out of its script, to call it on texts no run would hold.
    m = re.search(r"\n  var SHOWN = .*?\n  function shown\(text\)\{\n.*?\n  \}\n", PAGE_JS, re.S)
    assert m, "the page's script has no shown(text)"
    return m.group()


def test_report_html_shows_invisible_and_control_characters_as_report_md(tmp_path: Path, browser: Any) -> None:  # noqa: F811
    # "\u202eRTL" showed as "LTR" in the Cases table and a zero-width space not at all, where report.md and junit.xml
    # write `\u{202e}`, `\u{200b}`: the table shows them as `inert_text.visible` does, and the file holds none raw.
    from tracejudge.core.inert_text import visible

    ids = ["\u202eRTL", "zw\u200bsp", "esc\x1b[31mred", "tag\U000e0041", "text \\x1b and \\u{202e}", "bs\\\u202e", "plain"]
    run_dir = _reported(tmp_path, {cid: (0.0, f"why {cid}") for cid in ids})
    text = (run_dir / "report.html").read_text(encoding="utf-8")
    assert not [c for c in ("\u202e", "\u200b", "\x1b", "\U000e0041") if c in text]
    _load(browser, run_dir / "report.html", "#sort=case")
    rows = browser.execute_script(
        "var out = []; document.querySelectorAll('#cases tbody tr[data-case]').forEach(function(tr){"
        " out.push([tr.getAttribute('data-case'), tr.cells[0].lastChild.textContent, tr.cells[0].title,"
        " tr.nextSibling.querySelector('.reason').textContent]); }); return out;")
    assert {r[0] for r in rows} == set(ids)  # (the row keeps the id itself)
    for cid, cell, title, reason in rows:
        assert cell == title == visible(cid) and reason == visible(f"why {cid}"), (cid, cell, title, reason)
    # The page's function and Python's agree on every character they show and on backslashes before their forms.
    samples = [chr(c) for c in [*range(0, 0x20), *range(0x7f, 0xa1), 0xad, 0x180e, *range(0x200b, 0x2070), 0xfeff, 0xfff9, 0xfffb, 0xe0001, 0xe0041]]
    samples += ["a\\x41", "\\\\x1b", "\\u{202e}", "\\u{zz}", "\\\u202e", "\\\\\x1b", "\u200c\u200d\u200e\u200f", "案\\", "ok"]
    got = browser.execute_script(_shown_source() + "return arguments[0].map(shown);", samples)
    assert got == [visible(s) for s in samples]


def test_report_html_sorts_case_ids_in_natural_order_as_the_viewer_does(tmp_path: Path, browser: Any) -> None:  # noqa: F811
    from tracejudge.viewer.case_query import natural_key

    ids = ["10-0", "2-1", "2-0", "1-0", "task-100", "task-20", "task-3"]
    run_dir = _reported(tmp_path, {cid: (0.5, "r") for cid in ids})
    order = "var out = []; document.querySelectorAll('#cases tbody tr[data-case]').forEach(function(tr){ out.push(tr.getAttribute('data-case')); }); return out;"
    natural = sorted(ids, key=natural_key)
    assert natural == ["1-0", "2-0", "2-1", "10-0", "task-3", "task-20", "task-100"]
    _load(browser, run_dir / "report.html", "#sort=case")
    assert browser.execute_script(order) == natural  # (the text order put 10-0 before 2-0)
    _load(browser, run_dir / "report.html", "#sort=-case")
    assert browser.execute_script(order) == natural[::-1]
    _load(browser, run_dir / "report.html", "#sort=m")  # equal values: the ids' natural order breaks the tie
    assert browser.execute_script(order) == natural


def test_report_html_orders_mixed_ids_exactly_as_the_viewer_does(tmp_path: Path, browser: Any) -> None:  # noqa: F811
    # The browser's locale order (localeCompare) folds case and ranks punctuation and accents its own way: `a-2` came
    # before `B-1`, `_x` first and `é1` before `e2`, where the viewer's Cases table (SQLite, code points) has them after.
    from tracejudge.viewer.case_query import natural_key

    ids = ["a-2", "B-1", "b-10", "A-1", "_x", "c_1", "c-1", "c1", "é1", "e2", "task-007", "task-7", "Z9", "z10", "\U0001F600", "\uFB01"]
    run_dir = _reported(tmp_path, {cid: (0.5, "r") for cid in ids})
    order = "var out = []; document.querySelectorAll('#cases tbody tr[data-case]').forEach(function(tr){ out.push(tr.getAttribute('data-case')); }); return out;"
    viewer = sorted(ids, key=lambda i: (natural_key(i), i))
    assert viewer[:3] == ["A-1", "B-1", "Z9"] and viewer[-2:] == ["\uFB01", "\U0001F600"]  # (code points: U+FB01 first)
    _load(browser, run_dir / "report.html", "#sort=case")
    assert browser.execute_script(order) == viewer
    _load(browser, run_dir / "report.html", "#sort=-case")
    assert browser.execute_script(order) == viewer[::-1]
