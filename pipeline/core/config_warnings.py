"""`run_warnings`: what a run of a valid config warns of as it starts (settings that likely do not do what was meant).

Kept apart from `core.config` (which re-exports it): the config's loading and validation is one job, the advice on a
config that validated another.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tracejudge.core.config_sections import WORKERS_DEPRECATED, trials_without_target
from tracejudge.core.judge_config import noisy_simulator_samples

if TYPE_CHECKING:
    from tracejudge.core.config import RunConfig

__all__ = ["run_warnings"]


def run_warnings(config: RunConfig) -> list[str]:
    """What a run of `config` warns of as it starts (valid settings that likely do not do what was meant): a deprecated
    `run.workers`; `run.trials` above 1 without a target; `Contains` on BFCL's answers as a plain substring test;
    `judge.samples` above 1 at `judge.temperature` 0 (unless every judge is the simulator with noise, whose samples differ);
    first, those its validation placed at their file and line (a panel of one member, `judge_config.lone_member_note`)."""
    notes = list(config._notes)
    if "workers" in config.run.model_fields_set:
        notes.append(WORKERS_DEPRECATED)
    if config.run.trials > 1 and config.target is None:
        notes.append(trials_without_target(config.run.trials))
    if config.dataset.format == "bfcl":
        plain = [i for i, spec in enumerate(config.metrics) if spec.get("type") == "Contains" and spec.get("value") is None
                 and spec.get("match", "substring") == "substring"]
        if plain:
            notes.append(f"{', '.join(f'metrics.{i}' for i in plain)}: Contains reads BFCL's accepted answers (memory, web_search) as a plain substring "
                         "test, which passes replies BFCL's checker fails ('49.99' inside '149.99'); add `match: bfcl` for "
                         "BFCL's own agentic_checker verdict")
    judge = config.judge
    if judge is not None and judge.samples > 1 and judge.temperature == 0 and not noisy_simulator_samples(judge):
        # The same request N times at temperature 0: a self-hosted server answers it the same N times (llama.cpp, vLLM
        # and Ollama are deterministic there), so the samples report no flakiness whatever the judge's real variance.
        notes.append(f"judge.samples: {judge.samples} at judge.temperature 0 asks the same request {judge.samples} times, and a deterministic "
                     "server answers it the same way each time: the samples' flakiness and flip rate then say nothing of the judge's "
                     "variance and the run pays for every sample; set judge.temperature (e.g. 0.7) to measure it, or samples: 1")
    return notes
