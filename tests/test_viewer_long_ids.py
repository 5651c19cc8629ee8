"""`tracejudge view` opens the Case page of every case, however long its id: one over 8 KB URL-encoded (9,000 ASCII or
2,800 CJK characters) got aiohttp's raw `400 Got more than 8190 bytes` and a traceback on the viewer's stderr.
Such a case is linked by its id's hash; a link by `id=` still opens; a request line too long even so is refused in one line.
Ids holding a bidirectional override or a zero-width space are shown as report.md shows them (`\\u{202e}`)."""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import quote

from _runs import view_process
import _forkserver

IDS = ["short", "x" * 9000, "案" * 2800, "\u202eRTL", "zw\u200bsp"]


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(errors="replace")


def test_every_case_page_opens_whatever_its_id(tmp_path: Path) -> None:
    with open(tmp_path / "data.jsonl", "w", encoding="utf-8") as fh:
        for cid in IDS:
            fh.write(json.dumps({"id": cid, "input": "x", "trace": {"steps": [], "output": "o"}, "expected_output": "o"}) + "\n")
    (tmp_path / "eval.yaml").write_text("dataset: {path: data.jsonl, format: native}\nmetrics: [{type: ExactMatch}]\n")
    done = _forkserver.run([sys.executable, "-m", "tracejudge", "run", "eval.yaml", "--no-progress"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    with view_process(str(tmp_path / "runs" / "eval")) as (base, proc):
        status, page = _get(f"{base}/run/eval/cases")
        assert status == 200
        links = [html.unescape(h) for h in re.findall(r'class="case-link" href="([^"]*)"', page)]
        assert len(links) == len(IDS), links
        opened = {}
        for link in links:
            assert len(link) < 200, link[:200]  # a long id is linked by its hash
            status, body = _get(base + link)
            assert status == 200, (link[:100], status, body[:200])
            opened[re.search(r'<code id="case-id">(.*?)</code>', body, re.S).group(1)] = body
        # Each page is its case's; invisible characters are shown as report.md shows them, never raw.
        assert set(opened) == {"short", "x" * 9000, "案" * 2800, "\\u{202e}RTL", "zw\\u{200b}sp"}, [k[:20] for k in opened]
        shown = re.sub(r"<[^>]*>", " ", page)  # (the text; a `data-case` attribute keeps the id as it is, for the page's script)
        assert "\u202e" not in shown and "\u200b" not in shown and "\\u{202e}RTL" in shown
        # An old link by id still opens (up to 64 KiB of request line); one past that is a 400, and a hash no case has a 404.
        assert _get(f"{base}/run/eval/case?id={quote('案' * 2800)}")[0] == 200
        assert _get(f"{base}/run/eval/case?id={'y' * 70_000}")[0] == 400
        assert _get(f"{base}/run/eval/case?h=0123")[0] == 404
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    assert "Traceback" not in err and "LineTooLong" not in err, err
    assert err.count("refused a request it cannot read") == 1, err
