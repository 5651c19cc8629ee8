"""The search for a judge prompt's credentials stays linear on one long token.

`quoted_values` (what a judge's reply is masked of) matched a field named for a password anywhere inside a run of name
characters, so a run of them (a base64 blob, a hex dump, a JWT in a case's output) was searched from every position to
its end: 32,000 characters took 24 s, 100,000 hung the run at 100% CPU and made SIGTERM wait. Each search runs in a
forked child whose CPU time is capped (`RLIMIT_CPU`, so a busy machine does not count): 10 CPU-seconds is 50 to 100 times
what the search takes now on 200,000 characters, where the quadratic search took about 15 minutes.
"""

from __future__ import annotations

import base64
import os
import resource
import signal

import pytest
from tracejudge.llm.reply_secrets import quoted_values

N = 200_000


@pytest.mark.parametrize("token", [
    "B" * N,
    base64.urlsafe_b64encode(bytes(range(256)) * (N // 340)).decode(),
    "ab1.-_" * (N // 6),
    "password" * (N // 8),  # every position a name's end
], ids=["one-letter", "base64url", "name-characters", "password-repeated"])
def test_a_long_token_is_searched_in_linear_time(token: str) -> None:
    text = f"key: x\n{token}\ndb_password: hunter2xyz"
    pid = os.fork()
    if pid == 0:  # the child: exit 0 when the field after the token is found, killed by SIGXCPU past its CPU budget
        try:
            resource.setrlimit(resource.RLIMIT_CPU, (10, 11))
            os._exit(0 if "hunter2xyz" in quoted_values(text) else 1)
        finally:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert not os.WIFSIGNALED(status) or os.WTERMSIG(status) != signal.SIGXCPU, f"over 10 CPU-seconds on {len(token):,} characters"
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status


def test_fields_inside_a_run_of_name_characters_are_still_found() -> None:
    found = quoted_values('{db_password:hunter2xyz, x.y.secret: "Tr0ub4dor\\"&3zz", my-passwd=abcdefgh12}')
    assert {"hunter2xyz", 'Tr0ub4dor"&3zz', "abcdefgh12"} <= set(found), found
