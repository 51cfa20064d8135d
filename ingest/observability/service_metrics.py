"""Prometheus metrics of one service instance (its own registry, so tests can run many services).

The scoring stage's metrics (``scoring.runtime.scoring_metrics``) are registered on the same registry, as
``scoring``.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from tracescore.scoring.runtime.scoring_metrics import ScoringMetrics

PROMETHEUS_CONTENT_TYPE = CONTENT_TYPE_LATEST


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter(
            "tracescore_export_requests",
            "OTLP export requests received",
            ["transport", "outcome"],
            registry=r,
        )
        self.connections_refused = Counter(
            "tracescore_http_connections_refused",
            "OTLP/HTTP connections closed on arrival: receiver.max_connections were open, every one "
            "busy with a request",
            registry=r,
        )
        self.connections_closed = Counter(
            "tracescore_http_connections_closed",
            "OTLP/HTTP connections closed by the connection limits, by reason: header_timeout, "
            "idle_timeout, evicted (stalled or idle, to admit a new one), max_connections_per_client "
            "(on arrival), max_connections (on arrival, as tracescore_http_connections_refused)",
            ["reason"],
            registry=r,
        )
        self.connections_open = Gauge(
            "tracescore_http_connections_open", "Open OTLP/HTTP connections", registry=r
        )
        self.spans_received = Counter(
            "tracescore_spans_received", "Spans accepted from receivers", ["transport"], registry=r
        )
        self.spans_rejected = Counter(
            "tracescore_spans_rejected", "Spans rejected at decoding", ["transport"], registry=r
        )
        self.spans_stored = Counter("tracescore_spans_stored", "Spans written to otel_traces", registry=r)
        self.commits = Counter(
            "tracescore_store_commits", "Group commits of accepted spans and log records", registry=r
        )
        self.requests_refused = Counter(
            "tracescore_requests_refused",
            "Export requests and Kafka batches refused to slow intake down, by the bound reached (memory: "
            "no room for now; memory_too_large: could never fit under memory_limit)",
            ["reason"],
            registry=r,
        )
        self.kafka_pauses = Counter(
            "tracescore_kafka_pauses",
            "Times the Kafka consumer paused its partitions to slow intake",
            registry=r,
        )
        self.dead_letters = Counter(
            "tracescore_dead_letters", "Kafka records parked in the dead-letter topic", registry=r
        )
        self.traces_assembled = Counter(
            "tracescore_traces_assembled", "Traces handed to the transform", ["reason"], registry=r
        )
        self.spans_dropped = Counter(
            "tracescore_assembly_spans_dropped",
            "Spans dropped by the assembler's memory bounds",
            ["reason"],
            registry=r,
        )
        self.traces_pending = Gauge(
            "tracescore_assembly_traces_pending", "Traces being assembled", registry=r
        )
        self.spans_pending = Gauge(
            "tracescore_assembly_spans_pending", "Spans held by the assembler", registry=r
        )
        self.held_bytes = Gauge(
            "tracescore_assembly_held_bytes",
            "Bytes of spans and log records held by the assembler",
            registry=r,
        )
        self.backlog = Gauge(
            "tracescore_backlog",
            "Work waiting, by stage: spans and log records waiting for their commit (commit), runs queued "
            "for a scorer (scoring_queue), score and decision rows waiting for the store (rows_buffered)",
            ["stage"],
            registry=r,
        )
        self.resident_bytes = Gauge(
            "tracescore_memory_resident_bytes", "The process's resident memory (sampled)", registry=r
        )
        self.memory_limit = Gauge("tracescore_memory_limit_bytes", "The configured memory_limit", registry=r)
        self.memory_reserved = Gauge(
            "tracescore_memory_reserved_bytes",
            "Memory reserved by the requests being read, decoded and stored (what they cost at most)",
            registry=r,
        )
        self.memory_rest = Gauge(
            "tracescore_memory_rest_bytes",
            "The process's resident memory once started, before any request (measured at start)",
            registry=r,
        )
        self.traces_spilled = Counter(
            "tracescore_assembly_traces_spilled",
            "Traces whose items left memory (memory: over max_held_bytes) or that were forgotten until "
            "recovery finds them in the store (forgotten: over max_traces)",
            ["reason"],
            registry=r,
        )
        self.bytes_spilled = Counter(
            "tracescore_assembly_spilled_bytes",
            "Bytes (as stored) of the held spans and log records that left memory with their traces, by "
            "the same reasons as tracescore_assembly_traces_spilled",
            ["reason"],
            registry=r,
        )
        self.traces_recovered = Counter(
            "tracescore_traces_recovered",
            "Undecided traces found in the store and adopted (after a restart, or forgotten)",
            registry=r,
        )
        self.recovery_remaining = Gauge(
            "tracescore_recovery_remaining_traces",
            "Traces adopted by recovery and not yet handed on to scoring (0 when no recovery runs)",
            registry=r,
        )
        self.traces_handed = Counter(
            "tracescore_traces_handed",
            "Traces handed between replicas: out (to the replica that owns them), in (handed to this one)",
            ["direction"],
            registry=r,
        )
        self.live_replicas = Gauge(
            "tracescore_live_replicas",
            "Replicas sharing this store that are live, as this one sees them",
            registry=r,
        )
        self.watermark_lag = Gauge(
            "tracescore_watermark_lag_seconds",
            "How far the durable watermark (everything before it is decided) is behind now",
            registry=r,
        )
        self.runs_built = Counter("tracescore_runs_built", "Agent runs built from traces", registry=r)
        self.transform_errors = Counter(
            "tracescore_transform_errors", "Traces whose transform failed", registry=r
        )
        # Log records (OTLP logs signal): GenAI message content correlated with spans by id.
        self.logs_received = Counter(
            "tracescore_logs_received", "Log records accepted from receivers", ["transport"], registry=r
        )
        self.logs_rejected = Counter(
            "tracescore_logs_rejected", "Log records rejected at decoding", ["transport"], registry=r
        )
        self.logs_stored = Counter("tracescore_logs_stored", "Log records written to otel_logs", registry=r)
        self.logs_dropped = Counter(
            "tracescore_assembly_logs_dropped",
            "Log records dropped by the assembler's memory bounds (they are stored)",
            ["reason"],
            registry=r,
        )
        self.logs_pending = Gauge(
            "tracescore_assembly_logs_pending", "Log records held by the assembler", registry=r
        )

        self.annotations_stored = Counter(
            "tracescore_annotations_stored",
            "Human labels written to the annotations table, by source: api (POST /api/annotations), otlp "
            "(gen_ai.evaluation.result events and span attributes with an annotator)",
            ["source"],
            registry=r,
        )
        self.annotations_refused = Counter(
            "tracescore_annotations_refused",
            "Evaluation results with an annotator sent over OTLP that are no label (no name, neither a "
            "value nor a label, no span): their spans and log records are stored, without a label",
            registry=r,
        )
        self.agreement = AgreementMetrics(r)

        self.scoring = ScoringMetrics(r)

    def render(self) -> bytes:
        return generate_latest(self.registry)


class AgreementMetrics:
    """How well each scorer agrees with people, as the last agreement pass found it
    (``ingest.alerting.agreement_monitor``)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.value = Gauge(
            "tracescore_judge_agreement",
            "A scorer's agreement with human labels over the agreement window, by measure: kappa (Cohen's, "
            "labels), spearman (rank correlation of values), mae (mean absolute error of values); absent "
            "with too few pairs",
            ["scorer", "measure"],
            registry=registry,
        )
        self.pairs = Gauge(
            "tracescore_judge_agreement_pairs",
            "Pairs of a human label and a score of the same unit in the agreement window, by kind: labels "
            "or values",
            ["scorer", "kind"],
            registry=registry,
        )
        self.state = Gauge(
            "tracescore_judge_agreement_state",
            "1 for each scorer's state at the last agreement pass: ok, below (under a set level), dropped "
            "(significantly below the window before) or insufficient (too few pairs)",
            ["scorer", "state"],
            registry=registry,
        )
        self.passes = Counter(
            "tracescore_judge_agreement_passes", "Agreement passes by outcome", ["outcome"], registry=registry
        )
