"""Config sections that measure the judge itself: labels, panels, pairwise comparison.

They hang off `judge:` (`judge.labels`, `judge.models`, `judge.pairwise`);
`judge.samples` and `judge.aggregate` are plain fields of `JudgeConfig`.

```yaml
judge:
  provider: openai
  model: gpt-4o-mini
  samples: 3                 # ask each request 3 times (temperature > 0 makes them differ)
  temperature: 0.7
  models:                    # a panel: every model answers, `aggregate` decides
    - openai:gpt-4o-mini
    - {provider: anthropic, model: claude-haiku-4-5, limits: {rpm: 50}}
  aggregate: majority        # majority | mean | all | any
  labels:                    # agreement with human labels, in the summary and `tracejudge calibrate`
    path: labels.jsonl       # {"case_id", "metric", "label"} lines, or a CSV with those columns
    fields: {TaskCompletion: metadata.reward}
  pairwise: {rubric: "Which run served the user better?", min_win_rate: 0.5}
```
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, StrictBool, field_validator, model_serializer, model_validator
from tracejudge.core.field_paths import parse_path
from tracejudge.core.strict_numbers import NoBoolNumbers
from tracejudge.core.urls import http_url

__all__ = ["LabelsConfig", "PairwiseConfig", "PanelModel"]


class _Strict(NoBoolNumbers):
    model_config = ConfigDict(extra="forbid")


class LabelsConfig(_Strict):
    """Where a judge's reference labels come from, and how a numeric label reads as pass/fail.

    `path`: a JSONL file of `{"case_id", "metric", "label"}` objects (optional
    `trial`, default: the label holds for every trial) or a CSV file with those
    columns (`.csv`). `fields` maps a metric key to a dotted path into each
    result record, e.g. `{TaskCompletion: metadata.reward}` (τ-bench's reward,
    which the tau-bench reader keeps in the case metadata; a key holding a dot in
    brackets, `metadata.labels["correct.v2"]`: `field_paths`). A label is `true`/`false`
    or a number; a number is a pass when it is >= `threshold` for a yes/no
    comparison. `resamples` and `seed` drive the κ and ρ bootstrap CIs, which resample the labelled cases (accuracy has
    the Wilson interval, `tracejudge.stages.judge.label_stats`).
    """

    path: Path | None = None
    fields: dict[str, str] = Field(default_factory=dict)
    threshold: float = 0.5
    resamples: int = Field(default=1000, ge=100, le=100_000)
    seed: int = 0
    # The dataset's case ids, when a run judges only some of them (`calibrate --labels`): a label's case id one slip
    # from one of them (`7` for `007`) is offered as the run's would be, though that case was not judged.
    _dataset_cases: frozenset[str] = PrivateAttr(default=frozenset())

    @field_validator("fields")
    @classmethod
    def _paths(cls, fields: dict[str, str]) -> dict[str, str]:
        """Each field path is one `field_paths` reads (a key holding a dot in brackets: `metadata.labels["correct.v2"]`)."""
        for metric, path in fields.items():
            try:
                parse_path(path)
            except ValueError as exc:
                raise ValueError(f"{metric}: {exc}") from None
        return fields

    @model_validator(mode="after")
    def _some_source(self) -> LabelsConfig:
        if self.path is None and not self.fields:
            raise ValueError("give `path` (a JSONL or CSV file of labels) or `fields` (metric → dotted path in the results)")
        return self


class PanelModel(_Strict):
    """One judge of a panel (`judge.models`): a model, optionally on another provider, with its own prices and limits.

    Written as `provider:model` or as a mapping; what it does not set comes
    from the `judge:` section (base URL, key variable, structured output, sampling, retries).
    `limits` (rpm, tpm, max_in_flight) default to the run's `limits:`.
    """

    model: str
    provider: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    prices: dict[str, Any] | None = None
    limits: dict[str, Any] | None = None
    # How this member's server takes the verdict schema (`judge.structured_output`'s values); None: the section's. A panel
    # mixing servers (a TGI member needs `none`, vLLM takes `json_schema`) cannot share one setting.
    structured_output: Literal["json_schema", "json_object", "none"] | None = None
    # Put over the section's `extra_body` key by key (a key given as null is not sent; `tracejudge.core.extra_body.merged`).
    extra_body: dict[Any, Any] | None = None  # (keys checked as the section's are: `JudgeConfig.extra_body`)

    @model_validator(mode="before")
    @classmethod
    def _from_string(cls, data: Any) -> Any:
        if isinstance(data, str):
            return {"model": data}
        return data

    @field_validator("base_url")
    @classmethod
    def _base_url(cls, url: str | None) -> str | None:
        return http_url(url)


class PairwiseConfig(_Strict):
    """`tracejudge compare A --vs B --judge CONFIG`: the rubric the judge compares two runs' trajectories against.

    `min_win_rate`: the gate; the comparison FAILS (exit 1) when B's win rate
    (ties count half) is below it, or when its 95% CI is not informative (under
    50 judged cases, or every pair one outcome: `pairwise_rule.uninformative`).

    `include_system_prompt`: each run's fence opens with that run's recorded system prompts (`system_section`), as a
    metric's option does: two runs of differently instructed agents are each judged with their own instructions.
    """

    rubric: str = ("Which run served the user better: completed what the user asked, correctly, "
                   "without unnecessary or harmful actions?")
    min_win_rate: float | None = Field(default=None, ge=0, le=1)
    include_system_prompt: StrictBool = False

    @model_serializer(mode="wrap")
    def _without_unset_system(self, handler: Any) -> Any:
        out = handler(self)
        if isinstance(out, dict) and out.get("include_system_prompt") is False:
            del out["include_system_prompt"]  # (a config without it hashes and is written as it always was)
        return out
