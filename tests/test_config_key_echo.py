"""A key pasted where a config names its variable, or given as a value a config error quotes, is not echoed.

`judge.api_key_env: sk-…` (the key itself, not the name of the variable holding it) stopped the run with
`judge.api_key_env: the environment variable sk-… is not set` on stderr; a config error quoting a value (`(got "…")`)
showed a key or a URL's password the same way. The canaries are fake.
"""

from __future__ import annotations

import pytest
from tracejudge.core.config import validate_config
from tracejudge.core.errors import ConfigError
from tracejudge.llm.redact import MASK, variable_name
from tracejudge.stages.judge.panel import member_key, panel_members
from tracejudge.stages.judge.resources import api_key
from tracejudge.stages.target.http_target import expand_headers

KEY = "sk-" + "judgeLit0042abcdEFGH1234"
PASSWORD = "Hunt3r" + "Pass99"


def _config(judge: dict) -> dict:
    return {"dataset": {"path": "cases.jsonl", "format": "native"}, "metrics": [{"type": "TaskCompletion"}], "judge": judge}


# Groq's `gsk_`, Fireworks' `fw_`, Mistral's 32 and Cohere's 40 letters and digits have no prefix the masking knows:
# they read as a variable's name to a rule of letters, digits and `_` alone.
@pytest.mark.parametrize("pasted", [KEY, "3f2a9c1b-7e4d-5a6f-8091-3f2a9c1b7e4d", "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2",
                                    "gsk_" + "a1B2c3D4e5F6g7H8i9J0kLmNoPqRsTuVwXyZ0123456789abcdEF", "fw_" + "3ZbQx9YwR2TnVm8KpLs4HdJc",
                                    "Xq7" + "Lm2Np9Rt4Vw8Yz3Bc6Df1Gh5Jk0Ms7", "p9Vb" + "2Xn7Lq4Wt8Rz1Hc6Jm3Ks0Fd5Gy9Ta2Ue8Io4"])
def test_a_key_pasted_in_api_key_env_is_not_echoed(pasted: str, monkeypatch) -> None:
    monkeypatch.delenv(pasted, raising=False)
    config = validate_config(_config({"provider": "openai", "model": "gpt-4o-mini", "api_key_env": pasted}), check_files=False)
    with pytest.raises(ConfigError) as err:
        api_key(config)
    assert pasted not in str(err.value) and MASK in str(err.value) and "not the key itself" in str(err.value), str(err.value)
    panel = validate_config(_config({"provider": "openai", "models": [{"model": "gpt-4o-mini", "api_key_env": pasted}]}), check_files=False)
    with pytest.raises(ConfigError) as err:
        member_key(panel_members(panel)[0])
    assert pasted not in str(err.value) and MASK in str(err.value), str(err.value)


def test_a_variables_name_is_still_named(monkeypatch) -> None:
    monkeypatch.delenv("MY_JUDGE_KEY", raising=False)
    config = validate_config(_config({"provider": "openai", "model": "gpt-4o-mini", "api_key_env": "MY_JUDGE_KEY"}), check_files=False)
    with pytest.raises(ConfigError, match="judge.api_key_env: the environment variable MY_JUDGE_KEY is not set$"):
        api_key(config)
    assert variable_name("OPENAI_API_KEY") == "OPENAI_API_KEY" and variable_name("sk_live_" + "a1B2c3D4e5F6g7") == MASK
    for name in ("GPU_HOST2", "llm_key_v2", "_PRIVATE_KEY", "AZURE_OPENAI_API_KEY", "HF_TOKEN", "X_2"):
        assert variable_name(name) == name
    with pytest.raises(ConfigError, match=r"target.headers.X-Key: environment variable \[REDACTED\] is not set"):
        expand_headers({"X-Key": "${sk_live_" + "a1B2c3D4e5F6g7}"})


@pytest.mark.parametrize("judge", [
    {"provider": "openai", "temperature": KEY},
    {"provider": KEY},
    {"provider": "openai", "base_url": f"http://ann:{PASSWORD}@127.0.0.1:99999/v1"},
    {"provider": "openai", "timeout_s": f"password={PASSWORD}"},
])
def test_a_config_error_quoting_a_value_masks_a_credential(judge: dict) -> None:
    with pytest.raises(ConfigError) as err:
        validate_config(_config(judge), check_files=False)
    text = str(err.value)
    # (a URL is shown without its user, password and query: nothing of them to mask)
    assert KEY not in text and PASSWORD not in text and (MASK in text or "base_url" in judge) and "(got " in text, text
