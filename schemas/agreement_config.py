"""The ``agreement`` section of the service config: how each scorer's agreement with human labels is
measured, and when it alerts (``ingest.alerting.agreement_monitor``; docs/agreement.md).

A pass pairs every human label with the score of the same trace, span and scorer id written in the
window, and compares the window with the one just before it. Alerts go to ``drift.webhooks``, with
``drift.cooldown``.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from tracescore.schemas.drift_config import Duration


class AgreementConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = True  # the service's periodic pass (`tracescore agreement` works regardless)
    interval: Duration = 300.0
    window: Duration = 7 * 86_400.0  # scores written in this window (and the one before, to compare)
    min_pairs: int = Field(default=20, ge=3)  # fewer pairs: the measure is not given, the state insufficient
    confidence: float = Field(default=0.95, gt=0, lt=1)  # of every interval
    # A measure past its level puts the scorer in state "below" (and alerts).
    min_kappa: float = Field(default=0.4, ge=-1, le=1)
    min_spearman: float = Field(default=0.5, ge=-1, le=1)
    max_mae: float = Field(default=0.25, ge=0)
    # A drop against the window before this significant (one-sided p-value) puts it in state "dropped".
    drop_alpha: float = Field(default=0.01, gt=0, lt=1)
