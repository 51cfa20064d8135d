"""What the soak records while it runs and reads from the store afterwards: plain values, no I/O, so
the criteria (``tests.soak.criteria``) are a pure function of them and can be tested without a service.

Times are ``time.monotonic()`` seconds (the kernel's CLOCK_MONOTONIC: the same in every process of the
machine, so the prober's process and this one agree)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

NO_RESPONSE = 0  # the status of an answer that never came: connection refused or reset, timed out


class Input(StrEnum):
    """Where a request (or record) came from."""

    HTTP = "http"  # the paced OTLP/HTTP exporters
    KAFKA = "kafka"  # the paced Kafka producer
    FLOOD = "flood"
    BIG = "big"
    MALFORMED = "malformed"


@dataclass(frozen=True, slots=True)
class Answer:
    """One HTTP answer (or its absence) to one attempt of an export request."""

    at: float
    source: Input
    status: int  # NO_RESPONSE when none came
    retry_after: bool  # the answer carried a Retry-After header
    well_formed: bool = True
    took_s: float = 0.0


@dataclass(frozen=True, slots=True)
class Probe:
    """One ``GET /healthz``: when it started, on which port, its status (NO_RESPONSE: none within the
    timeout) and how long it took."""

    at: float
    target: str  # "otlp" or "lane"
    status: int
    latency_s: float


@dataclass(frozen=True, slots=True)
class Window:
    start: float
    end: float

    def holds(self, at: float) -> bool:
        return self.start <= at <= self.end


class Ending(StrEnum):
    SIGKILL = "sigkill"  # a scheduled kill
    SIGTERM = "sigterm"  # the soak's stop at the end
    EXITED = "exited"  # by itself: an unexpected exit (at start or later)
    NEVER_UP = "never_up"  # running, but no answer within the supervisor's bound: killed
    ABANDONED = "abandoned"  # the soak ended (e.g. Ctrl-C) with it running: killed


@dataclass
class Life:
    """One ``tracescore serve`` process, from its start to its end."""

    number: int
    started_at: float
    pid: int = 0
    pid_is_serve: bool | None = None  # /proc/<pid>/cmdline is serve's (not nsenter's)
    up_at: float | None = None  # both probes answered 200
    ended_at: float | None = None
    ended_by: Ending | None = None
    exit_code: int | None = None
    stop_s: float | None = None  # SIGTERM to exit
    peak_rss_anon: int = 0

    @property
    def window(self) -> Window | None:
        """While it was up: from its first answer until it was killed or stopped."""
        if self.up_at is None or self.ended_at is None:
            return None
        return Window(self.up_at, self.ended_at)


@dataclass
class StoreState:
    """What the store held after the last stop, read inside the tmpfs's namespace."""

    opened: bool
    error: str = ""
    otel_traces: frozenset[str] = frozenset()
    span_ledger: frozenset[str] = frozenset()
    decisions: dict[str, dict[str, int]] = field(default_factory=dict)  # trace -> rule -> rows (FINAL)
    doubled_decisions: list[tuple[str, str, str, int]] = field(default_factory=list)  # trace, span, rule, n
    doubled_scores: list[tuple[str, str, str, int]] = field(default_factory=list)
    footprint: dict[str, Any] = field(default_factory=dict)  # the store's bytes on its disk, per table


@dataclass
class KafkaOutcome:
    produced: int = 0  # well-formed records the broker took
    malformed_produced: int = 0
    dead_lettered: int = 0  # records in the dead-letter topic at the end
    committed_to_end: bool = False  # the group's committed offsets reached the topic's end


@dataclass
class Observations:
    """Everything the criteria are judged on."""

    rules: tuple[str, ...]
    acknowledged: dict[Input, set[str]]  # trace ids, per input
    sent: dict[Input, int]  # traces sent (at least once), per input
    malformed_trace_ids: set[str]  # trace ids inside the malformed requests and records
    malformed_outcomes: list[int]  # the last answer to each malformed request
    answers: list[Answer]
    probes: list[Probe]
    lives: list[Life]
    memory_limit_bytes: int
    disk_samples: list[tuple[float, int]]  # (at, free bytes of the store's disk)
    fill_windows: list[Window]
    floor_bytes: int
    store: StoreState
    kafka: KafkaOutcome = field(default_factory=KafkaOutcome)
    probe_timeout_s: float = 1.0

    @property
    def all_acknowledged(self) -> set[str]:
        """Every trace acknowledged, whichever input (a malformed request answered 200 is criterion 3's)."""
        kept = [ids for source, ids in self.acknowledged.items() if source is not Input.MALFORMED]
        return set().union(*kept)
