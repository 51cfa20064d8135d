"""One drift pass over many series: each series' tests, one false-discovery correction over all of
them, and a finding per series.

A series is the scores of one (scorer, service, agent). Its recent window is compared with its
baseline by

- Mann-Whitney U (a shift in location) and Kolmogorov-Smirnov (any change in distribution),
- the population stability index over the baseline's quantile bins, with a p-value that accounts
  for sample size,
- the change in pass rate (binary scorers, or any scorer with a threshold) and in failure rate
  (failed decisions among scored and failed),
- and a CUSUM over per-bucket means for drift too slow for any one window to show.

A test counts only if its Benjamini-Hochberg adjusted p-value, taken over every test of every series
of the pass, is below ``alpha`` and its effect is large enough to matter (``min_effect``, ``min_ks``,
``min_psi``, ``min_rate_change``). Testing hundreds of series at once would otherwise raise false
alarms every pass.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

import numpy as np

from tracescore.schemas.drift_config import DriftConfig
from tracescore.scoring.drift.stats import (
    Counts,
    Floats,
    benjamini_hochberg,
    cusums,
    kolmogorov_smirnov,
    mann_whitney,
    psi,
    standardised,
    two_proportions_many,
)

State = Literal["drifted", "ok", "insufficient", "version_changed"]
# A drift finding compares a series' window with its baseline (of its current scorer version); a
# version change compares the scores of a series' earlier version with its current one's
# (``scoring.drift.version_changes``).
FindingKind = Literal["drift", "version_change"]
Severity = Literal["critical", "warning", "none"]
SeriesKey = tuple[str, str, str]  # (scorer id, service name, agent name)


@dataclass(frozen=True)
class Windows:
    baseline_start: datetime
    baseline_end: datetime
    window_start: datetime
    window_end: datetime


@dataclass
class SeriesData:
    """What the store holds of one series for a pass."""

    baseline: Counts
    window: Counts
    bucket_means: list[float] = field(default_factory=list)  # baseline and window buckets, in time order
    bucket_sizes: list[int] = field(default_factory=list)
    baseline_buckets: int = 0  # how many of the buckets lie in the baseline
    threshold: tuple[float, str] | None = None  # a rule's (threshold, pass_when)
    baseline_decisions: tuple[int, int] = (0, 0)  # (failed, scored or failed)
    window_decisions: tuple[int, int] = (0, 0)
    version: str = ""  # the scorer version of its scores (scoring.drift.version_changes)


@dataclass
class Finding:
    """The outcome for one series: a row of ``score_drift``."""

    scorer_id: str
    service_name: str
    agent_name: str
    windows: Windows
    baseline_n: int
    window_n: int
    baseline_mean: float = math.nan
    window_mean: float = math.nan
    baseline_sd: float = math.nan
    window_sd: float = math.nan
    mean_shift_sd: float = math.nan
    ks_statistic: float = math.nan
    ks_p_value: float = math.nan
    mann_whitney_p_value: float = math.nan
    psi: float = math.nan
    psi_p_value: float = math.nan
    baseline_pass_rate: float = math.nan
    window_pass_rate: float = math.nan
    pass_rate_p_value: float = math.nan
    baseline_failure_rate: float = math.nan
    window_failure_rate: float = math.nan
    failure_rate_p_value: float = math.nan
    cusum: float = 0.0
    cusum_alarm: bool = False
    p_value: float = 1.0  # the smallest adjusted p-value of the series' tests
    effect: float = math.nan  # the mean shift in baseline standard deviations
    drifted: bool = False
    severity: Severity = "none"
    state: State = "insufficient"
    reasons: list[str] = field(default_factory=list)
    kind: FindingKind = "drift"
    version: str = ""  # the scorer version compared (drift), or changed to (version_change)
    previous_version: str = ""  # the version changed from (version_change)
    version_changed_at: datetime | None = None  # when the current version's first score was written

    @property
    def key(self) -> SeriesKey:
        return (self.scorer_id, self.service_name, self.agent_name)

    @property
    def name(self) -> str:
        return "/".join(self.key)

    @property
    def summary(self) -> str:
        """A version change as a sentence (a drift finding: its series and state)."""
        if self.kind != "version_change":
            return f"{self.name}: {self.state}"
        at = f" at {self.version_changed_at:%Y-%m-%d %H:%M} UTC" if self.version_changed_at else ""
        head = f"{self.scorer_id} changed version{at} ({self.previous_version} → {self.version})"
        shift = self.window_mean - self.baseline_mean
        if not math.isfinite(shift):
            return f"{head}; too few scores of either version to compare"
        how = f"{abs(shift):.3f} {'lower' if shift < 0 else 'higher'}" if shift else "the same on average"
        return (
            f"{head}; the new version scores {how} than the old (mean {self.baseline_mean:.3f} → "
            f"{self.window_mean:.3f}, n {self.baseline_n} → {self.window_n}, Mann-Whitney "
            f"p={self.mann_whitney_p_value:.2g})"
        )

    def as_json(self) -> dict[str, Any]:
        """The finding as the ``--json`` output and webhooks show it (NaN: null)."""

        def clean(value: Any) -> Any:
            return None if isinstance(value, float) and not math.isfinite(value) else value

        w = self.windows
        return {
            "scorer_id": self.scorer_id,
            "service_name": self.service_name,
            "agent_name": self.agent_name,
            "drifted": self.drifted,
            "state": self.state,
            "severity": self.severity,
            "p_value": clean(self.p_value),
            "effect": clean(self.effect),
            "baseline_n": self.baseline_n,
            "window_n": self.window_n,
            "baseline_mean": clean(self.baseline_mean),
            "window_mean": clean(self.window_mean),
            "baseline_sd": clean(self.baseline_sd),
            "window_sd": clean(self.window_sd),
            "ks_statistic": clean(self.ks_statistic),
            "ks_p_value": clean(self.ks_p_value),
            "mann_whitney_p_value": clean(self.mann_whitney_p_value),
            "psi": clean(self.psi),
            "psi_p_value": clean(self.psi_p_value),
            "baseline_pass_rate": clean(self.baseline_pass_rate),
            "window_pass_rate": clean(self.window_pass_rate),
            "pass_rate_p_value": clean(self.pass_rate_p_value),
            "baseline_failure_rate": clean(self.baseline_failure_rate),
            "window_failure_rate": clean(self.window_failure_rate),
            "failure_rate_p_value": clean(self.failure_rate_p_value),
            "cusum": clean(self.cusum),
            "cusum_alarm": self.cusum_alarm,
            "reasons": list(self.reasons),
            "kind": self.kind,
            "version": self.version,
            "previous_version": self.previous_version,
            "version_changed_at": self.version_changed_at.isoformat() if self.version_changed_at else None,
            "baseline_start": w.baseline_start.isoformat(),
            "baseline_end": w.baseline_end.isoformat(),
            "window_start": w.window_start.isoformat(),
            "window_end": w.window_end.isoformat(),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Finding:
        """The finding ``as_json`` gave (null: NaN), as the service's ``POST /api/drift`` sends it."""
        ends = ("baseline_start", "baseline_end", "window_start", "window_end")
        windows = Windows(*(datetime.fromisoformat(data[end]) for end in ends))
        values: dict[str, Any] = {}
        for name, spec in cls.__dataclass_fields__.items():
            if name == "windows" or name not in data:
                continue
            value = data[name]
            values[name] = math.nan if value is None and spec.type == "float" else value
        values["reasons"] = list(data.get("reasons", []))
        if changed := data.get("version_changed_at"):
            values["version_changed_at"] = datetime.fromisoformat(changed)
        return cls(windows=windows, **values)


@dataclass
class _Test:
    finding: Finding
    name: str
    large_enough: bool
    p_value: float = math.nan
    # A two-proportion test's (x1, n1, x2, n2): its p-value comes from one call for every series.
    proportions: tuple[float, float, float, float] | None = None


@dataclass
class _Pass:
    """What the series of a pass leave for the steps taken over all of them at once."""

    tests: list[_Test] = field(default_factory=list)
    cusum_findings: list[Finding] = field(default_factory=list)
    cusum_inputs: list[Floats] = field(default_factory=list)  # standardised bucket means


def detect(series: dict[SeriesKey, SeriesData], windows: Windows, config: DriftConfig) -> list[Finding]:
    """Findings for every series, in key order."""
    findings: list[Finding] = []
    pending = _Pass()
    for key in sorted(series):
        findings.append(_evaluate(key, series[key], windows, config, pending))
    _two_proportion_tests(pending.tests)
    for finding, result in zip(
        pending.cusum_findings, cusums(pending.cusum_inputs, config.cusum.k, config.cusum.h), strict=True
    ):
        finding.cusum, finding.cusum_alarm = result.value * result.direction, result.alarm
    tests = [t for t in pending.tests if math.isfinite(t.p_value)]
    adjusted = benjamini_hochberg([t.p_value for t in tests])
    for test, q in zip(tests, adjusted, strict=True):
        finding = test.finding
        finding.p_value = min(finding.p_value, q)
        if q < config.alpha and test.large_enough:
            finding.reasons.append(test.name)
    for finding in findings:
        _conclude(finding)
    return findings


def _two_proportion_tests(tests: list[_Test]) -> None:
    """The p-values of every failure-rate and pass-rate test of the pass, in one call, set on the test
    and on its finding (``failure_rate_p_value``, ``pass_rate_p_value``)."""
    waiting = [t for t in tests if t.proportions is not None]
    if not waiting:
        return
    columns = np.array([t.proportions for t in waiting], dtype=np.float64)
    for test, p in zip(waiting, two_proportions_many(*columns.T).tolist(), strict=True):
        test.p_value = p
        setattr(test.finding, f"{test.name}_p_value", p)


def _evaluate(
    key: SeriesKey, data: SeriesData, windows: Windows, config: DriftConfig, pending: _Pass
) -> Finding:
    """The series' finding with its descriptive statistics and the tests that need only this series;
    its tests go to ``pending``, as do the two-proportion tests and the CUSUM, which run for every
    series at once."""
    base, recent = data.baseline, data.window
    finding = Finding(*key, windows=windows, baseline_n=base.n, window_n=recent.n, version=data.version)
    tests = pending.tests
    found_before = len(tests)

    def add(name: str, p_value: float, large_enough: bool) -> None:
        if math.isfinite(p_value):
            tests.append(_Test(finding, name, large_enough, p_value))

    failed_b, decided_b = data.baseline_decisions
    failed_w, decided_w = data.window_decisions
    if decided_b:
        finding.baseline_failure_rate = failed_b / decided_b
    if decided_w:
        finding.window_failure_rate = failed_w / decided_w
    if decided_b >= config.min_baseline_n and decided_w >= config.min_window_n:
        change = abs(finding.window_failure_rate - finding.baseline_failure_rate)
        failures = (failed_b, decided_b, failed_w, decided_w)
        tests.append(_Test(finding, "failure_rate", change >= config.min_rate_change, proportions=failures))

    if base.n:
        finding.baseline_mean, finding.baseline_sd = base.mean, base.sd
    if recent.n:
        finding.window_mean, finding.window_sd = recent.mean, recent.sd
    enough = base.n >= config.min_baseline_n and recent.n >= config.min_window_n
    if not enough:
        if len(tests) > found_before:
            finding.state = "ok"  # decisions alone could be tested
        return finding
    finding.state = "ok"
    sd = finding.baseline_sd
    shift = finding.window_mean - finding.baseline_mean
    finding.mean_shift_sd = shift / sd if sd > 0 else (0.0 if shift == 0 else math.copysign(math.inf, shift))
    finding.effect = finding.mean_shift_sd

    passed = _pass_mask(data.threshold, base, recent)
    if passed is not None:
        in_base, in_recent = passed
        finding.baseline_pass_rate = base.share(in_base)
        finding.window_pass_rate = recent.share(in_recent)
        change = abs(finding.window_pass_rate - finding.baseline_pass_rate)
        proportions = (
            finding.baseline_pass_rate * base.n,
            base.n,
            finding.window_pass_rate * recent.n,
            recent.n,
        )
        tests.append(_Test(finding, "pass_rate", change >= config.min_rate_change, proportions=proportions))
    if not (base.binary and recent.binary):  # for 0/1 scores the pass-rate test says it all
        finding.mann_whitney_p_value = mann_whitney(base, recent)
        add("mann_whitney", finding.mann_whitney_p_value, abs(finding.mean_shift_sd) >= config.min_effect)
        finding.ks_statistic, finding.ks_p_value = kolmogorov_smirnov(base, recent)
        add("kolmogorov_smirnov", finding.ks_p_value, finding.ks_statistic >= config.min_ks)
        finding.psi, finding.psi_p_value, _ = psi(base, recent, config.psi_bins)
        add("psi", finding.psi_p_value, finding.psi >= config.min_psi)

    if config.cusum.enabled and data.bucket_means:
        means = np.array(data.bucket_means, dtype=np.float64)
        sizes = np.array(data.bucket_sizes, dtype=np.float64)
        pending.cusum_findings.append(finding)
        pending.cusum_inputs.append(
            standardised(means, sizes, finding.baseline_mean, sd, data.baseline_buckets)
        )
    return finding


def _pass_mask(threshold: tuple[float, str] | None, base: Counts, recent: Counts) -> tuple[Any, Any] | None:
    """Which values pass, for each side: at the rule's threshold, or 1 of a binary scorer."""
    if threshold is not None:
        limit, when = threshold
        if when == "below":
            return base.values <= limit, recent.values <= limit
        return base.values >= limit, recent.values >= limit
    if base.binary and recent.binary:
        return base.values == 1.0, recent.values == 1.0
    return None


def _conclude(finding: Finding) -> None:
    if finding.cusum_alarm:
        finding.reasons.append("cusum")
    finding.drifted = bool(finding.reasons)
    if finding.drifted:
        finding.state = "drifted"
        big = (
            abs(finding.effect) >= 1.0
            or (math.isfinite(finding.psi) and finding.psi >= 0.25)
            or _rate_change(finding.baseline_pass_rate, finding.window_pass_rate) >= 0.2
            or _rate_change(finding.baseline_failure_rate, finding.window_failure_rate) >= 0.2
        )
        finding.severity = "critical" if big else "warning"


def _rate_change(before: float, after: float) -> float:
    change = abs(after - before)
    return change if math.isfinite(change) else 0.0
