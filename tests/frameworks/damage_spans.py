"""Damage a real OTLP/JSON recording the way exporters and hand edits do, for the tests of reading what is left.

    python tests/frameworks/damage_spans.py SRC DST MODE [ARG ...]

MODE:
- `drop-roots`: leave out every span without a parent (an exporter dropped the batch holding the roots).
- `lose-parents`: `drop-roots`, and every other span's parent set to one id no span has (every parent lost).
- `bad-attr NAME KEY`: the attribute KEY of the spans named NAME given the value `{"intValue": "notanint"}`,
  which does not decode.

Every kept span is written as an export of its own (one line each), with its resource and scope.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

LOST = "AAAAAAAAAAAAAAAA"


def damage(src: Path, dst: Path, mode: str, *args: str) -> int:
    out = []
    for line in src.read_text(encoding="utf-8").splitlines():
        doc = json.loads(line)
        for rs in doc.get("resourceSpans", []):
            for ss in rs.get("scopeSpans", []):
                for span in ss.get("spans", []):
                    if mode in ("drop-roots", "lose-parents") and not span.get("parentSpanId"):
                        continue
                    if mode == "lose-parents":
                        span["parentSpanId"] = LOST
                    if mode == "bad-attr" and span.get("name") == args[0]:
                        for attr in span.get("attributes", []):
                            if attr["key"] == args[1]:
                                attr["value"] = {"intValue": "notanint"}
                    out.append({"resourceSpans": [{"resource": rs.get("resource", {}), "scopeSpans": [{"scope": ss.get("scope", {}), "spans": [span]}]}]})
    dst.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in out), encoding="utf-8")
    return len(out)


if __name__ == "__main__":
    print(damage(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], *sys.argv[4:]))
