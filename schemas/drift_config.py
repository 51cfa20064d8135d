"""The ``drift`` section of the service config: how score drift is detected and who is told.

Durations are given as ``30s``, ``15m``, ``1h``, ``7d`` (or a number of seconds).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, HttpUrl, model_validator

from tracescore.schemas.durations import parse_duration

Duration = Annotated[float, BeforeValidator(parse_duration), Field(gt=0)]


class _Config(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ReferencePeriod(_Config):
    """A fixed baseline (e.g. the week after a release was validated) instead of the preceding period."""

    start: datetime
    end: datetime

    @model_validator(mode="after")
    def _ordered(self) -> ReferencePeriod:
        if self.start >= self.end:
            raise ValueError("drift.reference: start must be before end")
        return self


class CusumConfig(_Config):
    """The streaming detector: a two-sided CUSUM over per-bucket means, in standard errors.

    ``k`` is the drift allowance per bucket and ``h`` the alarm level; with the defaults a stationary
    series is above ``h`` at a given moment with probability about 1e-3.
    """

    enabled: bool = True
    k: float = Field(default=0.5, gt=0)
    h: float = Field(default=8.0, gt=0)


class WebhookConfig(_Config):
    """Where drift alerts and recoveries are posted: ``json`` (tracescore's own body) or ``slack``
    (an incoming-webhook body, also understood by Mattermost, Teams workflows and Discord's /slack)."""

    url: HttpUrl
    name: str | None = None  # as recorded in drift_notifications; default: the URL's host
    format: Literal["json", "slack"] = "json"
    headers: dict[str, str] = Field(default_factory=dict)

    @property
    def label(self) -> str:
        return self.name or self.url.host or str(self.url)


class DriftConfig(_Config):
    enabled: bool = True  # the service's periodic pass (the `tracescore drift` command works regardless)
    interval: Duration = 300.0
    window: Duration = 3_600.0  # the recent window
    baseline: Duration = 7 * 86_400.0  # the period just before it (unless `reference` fixes one)
    reference: ReferencePeriod | None = None
    bucket: Duration = 3_600.0  # the streaming detector's step
    min_window_n: int = Field(default=30, ge=2)
    min_baseline_n: int = Field(default=100, ge=2)
    # The false discovery rate over every test of a pass (all series): Benjamini-Hochberg.
    alpha: float = Field(default=0.01, gt=0, lt=1)
    # A significant change must also be this large to count as drift.
    min_effect: float = Field(default=0.2, ge=0)  # mean shift, in baseline standard deviations
    min_ks: float = Field(default=0.1, ge=0, le=1)  # Kolmogorov-Smirnov distance
    min_psi: float = Field(default=0.1, ge=0)  # population stability index
    min_rate_change: float = Field(default=0.05, ge=0, le=1)  # pass rate or failure rate, absolute
    psi_bins: int = Field(default=10, ge=2, le=100)
    cusum: CusumConfig = Field(default_factory=CusumConfig)
    webhooks: list[WebhookConfig] = Field(default_factory=list)
    cooldown: Duration = 3_600.0  # at most one alert per series in this time
    retries: int = Field(default=3, ge=0, le=10)  # another try after a failed post, this many times
    retry_backoff: Duration = 1.0  # doubled after each failed try, up to a minute
    timeout: Duration = 10.0  # per post
