"""The soak's criteria, judged from its observations alone (a pure function: see ``Observations``).

Each gives one ``Verdict``: whether it held, and the figure that says how well. The soak passes when
every one holds."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from tests.soak.observations import NO_RESPONSE, Ending, Observations, Probe, Window

MIB = 2**20
PROBE_SHARE = 0.99  # of the probes while the process is up: answered 200 within the timeout
MEMORY_SLACK = 1.05  # peak RssAnon against memory_limit
STOP_LIMIT_S = 60.0  # SIGTERM to exit 0
FILL_GRACE_S = 2.0  # after a fill is given back, before free space counts again
RETRIED = (429, 503)
SHOWN = 3  # ids quoted in a figure


@dataclass(frozen=True)
class Verdict:
    number: int
    name: str
    passed: bool
    figure: str

    def line(self) -> str:
        return f"{'PASS' if self.passed else 'FAIL'}  {self.number}. {self.name}: {self.figure}"


def evaluate(obs: Observations) -> list[Verdict]:
    return [
        acknowledged_stored_and_decided(obs),
        nothing_twice(obs),
        well_formed_never_400(obs),
        refusals_carry_retry_after(obs),
        health_answers(obs),
        memory_bound(obs),
        restarts_and_store(obs),
        disk_above_floor(obs),
    ]


def acknowledged_stored_and_decided(obs: Observations) -> Verdict:
    name = "every acknowledged trace is in otel_traces with one decision per rule"
    acked = obs.all_acknowledged
    if not obs.store.opened:
        return Verdict(1, name, False, f"{len(acked):,} acknowledged; the store could not be read")
    missing = acked - obs.store.otel_traces
    expected = dict.fromkeys(obs.rules, 1)
    undecided = {trace for trace in acked if obs.store.decisions.get(trace) != expected}
    per_input = ", ".join(f"{source} {len(ids):,}" for source, ids in obs.acknowledged.items())
    figure = (
        f"{len(acked):,} acknowledged ({per_input}): {len(missing):,} missing from otel_traces"
        f"{_some(missing)}, {len(acked - obs.store.span_ledger):,} from span_ledger, {len(undecided):,} "
        f"without exactly one decision for each of {len(obs.rules)} rules{_some(undecided, obs)}"
    )
    return Verdict(1, name, bool(acked) and not missing and not undecided, figure)


def nothing_twice(obs: Observations) -> Verdict:
    name = "no score or decision twice under FINAL"
    if not obs.store.opened:
        return Verdict(2, name, False, "the store could not be read")
    decisions, scores = obs.store.doubled_decisions, obs.store.doubled_scores
    figure = f"{len(decisions):,} (trace, span, rule) with more than one decision, {len(scores):,} with more "
    figure += "than one score row" + _some(f"{t}/{s}/{r} x{n}" for t, s, r, n in [*decisions, *scores])
    return Verdict(2, name, not decisions and not scores, figure)


def well_formed_never_400(obs: Observations) -> Verdict:
    name = "no well-formed request answered 400; malformed ones 400 and nothing of them stored"
    well_formed = [answer for answer in obs.answers if answer.well_formed]
    bad = sum(1 for answer in well_formed if answer.status == 400)
    others = Counter(
        answer.status for answer in well_formed if answer.status not in (200, 400, NO_RESPONSE, *RETRIED)
    )
    outcomes = Counter(obs.malformed_outcomes)
    stored = obs.malformed_trace_ids & (obs.store.otel_traces | obs.store.span_ledger)
    kafka = obs.kafka
    figure = (
        f"{bad:,} of {len(well_formed):,} well-formed answers were 400"
        + (f" (other refusals: {_counts(others)})" if others else "")
        + f"; malformed: {outcomes[400]} of {len(obs.malformed_outcomes)} answered 400"
        + (f" ({_counts(outcomes)})" if set(outcomes) - {400} else "")
        + f", {kafka.dead_lettered} of {kafka.malformed_produced} malformed Kafka records dead-lettered, "
        + (f"{len(stored)} of their traces stored" if obs.store.opened else "the store could not be read")
    )
    passed = (
        bad == 0
        and bool(obs.malformed_outcomes)
        and outcomes[400] == len(obs.malformed_outcomes)
        and kafka.dead_lettered == kafka.malformed_produced
        and obs.store.opened
        and not stored
    )
    return Verdict(3, name, passed, figure)


def refusals_carry_retry_after(obs: Observations) -> Verdict:
    refused = [answer for answer in obs.answers if answer.status in RETRIED]
    bare = Counter(answer.status for answer in refused if not answer.retry_after)
    figure = f"{len(refused) - sum(bare.values()):,} of {len(refused):,} 429/503 answers carried Retry-After"
    if bare:
        figure += f" (without: {_counts(bare)})"
    return Verdict(4, "every 429/503 answer carries Retry-After", not bare, figure)


def counted_probes(obs: Observations, target: str) -> list[Probe]:
    """The probes of ``target`` that started while the process was up, early enough to finish before
    it was killed or stopped."""
    windows = [Window(w.start, w.end - obs.probe_timeout_s) for life in obs.lives if (w := life.window)]
    return [p for p in obs.probes if p.target == target and any(w.holds(p.at) for w in windows)]


def health_answers(obs: Observations) -> Verdict:
    parts, passed = [], True
    for target, label in (("otlp", "OTLP/HTTP port"), ("lane", "health lane")):
        probes = counted_probes(obs, target)
        good = [p for p in probes if _good(p, obs.probe_timeout_s)]
        share = len(good) / len(probes) if probes else 0.0
        passed = passed and bool(probes) and share >= PROBE_SHARE
        slowest = max((p.latency_s for p in good), default=0.0)
        failed = Counter(
            "slow 200" if p.status == 200 else str(p.status or "no answer")
            for p in probes
            if not _good(p, obs.probe_timeout_s)
        )
        parts.append(
            f"{label} {100 * share:.1f} % of {len(probes):,} (slowest good {slowest:.2f} s"
            + (f"; failed: {_counts(failed)}" if failed else "")
            + ")"
        )
    name = f"/healthz answered 200 within {obs.probe_timeout_s:g} s for >= {100 * PROBE_SHARE:g} % of probes"
    return Verdict(5, name + " while up", passed, "; ".join(parts))


def memory_bound(obs: Observations) -> Verdict:
    name = f"peak RssAnon <= {100 * MEMORY_SLACK:g} % of memory_limit"
    peak = max((life.peak_rss_anon for life in obs.lives), default=0)
    limit = obs.memory_limit_bytes
    unverified = [life.number for life in obs.lives if life.pid_is_serve is False]
    figure = f"peak {peak / MIB:.0f} MiB, {100 * peak / limit:.1f} % of {limit / MIB:.0f} MiB"
    if unverified:
        figure += f"; lives {unverified}: the pid sampled was not serve's"
    return Verdict(6, name, 0 < peak <= MEMORY_SLACK * limit and not unverified, figure)


def restarts_and_store(obs: Observations) -> Verdict:
    name = "every (re)start comes up, the store opens after every stop, SIGTERM exits 0"
    lives = obs.lives
    came_up = [life for life in lives if life.up_at is not None]
    exited = [life for life in lives if life.ended_by is Ending.EXITED]
    slowest = max((life.up_at - life.started_at for life in came_up if life.up_at is not None), default=0.0)
    last = lives[-1] if lives else None
    stopped = (
        last is not None
        and last.ended_by is Ending.SIGTERM
        and last.exit_code == 0
        and last.stop_s is not None
        and last.stop_s <= STOP_LIMIT_S
    )
    figure = f"{len(lives)} starts, {len(came_up)} came up (slowest {slowest:.1f} s), {len(exited)} exited"
    if exited:
        figure += " (" + ", ".join(f"life {life.number}: code {life.exit_code}" for life in exited) + ")"
    if last is not None and last.ended_by is Ending.SIGTERM and last.exit_code is None:
        figure += f"; SIGTERM: no exit within {STOP_LIMIT_S:g} s (then SIGKILL)"
    elif last is not None and last.ended_by is Ending.SIGTERM:
        figure += f"; SIGTERM: exit {last.exit_code} in {last.stop_s or 0:.1f} s"
    else:
        figure += "; never stopped with SIGTERM"
    figure += "; store opened at the end" if obs.store.opened else f"; store did not open: {obs.store.error}"
    passed = bool(lives) and len(came_up) == len(lives) and not exited and stopped and obs.store.opened
    return Verdict(7, name, passed, figure)


def outside(windows: Iterable[Window], grace_s: float) -> Callable[[float], bool]:
    spans = [Window(w.start, w.end + grace_s) for w in windows]
    return lambda at: not any(w.holds(at) for w in spans)


def disk_above_floor(obs: Observations) -> Verdict:
    name = "the store's disk stays above its floor outside the scheduled fills"
    keep = outside(obs.fill_windows, FILL_GRACE_S)
    samples = [(at, free) for at, free in obs.disk_samples if keep(at)]
    floor = obs.floor_bytes
    if not samples:
        return Verdict(8, name, False, "no free-space sample outside the fills")
    lowest = min(free for _, free in samples)
    under = sum(1 for _, free in samples if free <= floor)
    figure = f"lowest free outside fills {lowest / MIB:.1f} MiB, floor {floor / MIB:.1f} MiB"
    figure += f"; {under:,} of {len(samples):,} samples at or under it"
    return Verdict(8, name, lowest > floor, figure)


def _some(ids: Iterable[str], obs: Observations | None = None) -> str:
    """A few of ``ids`` for the figure (with what the store holds of each, given ``obs``)."""
    shown = sorted(ids)[:SHOWN]
    if not shown:
        return ""
    if obs is not None:
        shown = [f"{trace} {obs.store.decisions.get(trace, {})}" for trace in shown]
    return " (e.g. " + "; ".join(shown) + ")"


def _good(probe: Probe, timeout_s: float) -> bool:
    return probe.status == 200 and probe.latency_s <= timeout_s


def _counts(counts: Counter[int] | Counter[str]) -> str:
    """``3 x 503, 1 x no response``: how many of each."""
    items = sorted((str(key or "no response"), count) for key, count in counts.items())
    return ", ".join(f"{count:,} x {key}" for key, count in items)
