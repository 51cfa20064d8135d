"""``tracescore serve`` with an OpenTelemetry SDK set up in its process (as ``opentelemetry-instrument``
would), exporting the process's own spans -- its judge calls among them -- back to its own OTLP/gRPC
receiver: the loop a loop guard must break.

    python -m tests.support.instrumented_serve CONFIG_FILE
"""

from __future__ import annotations

import asyncio
import sys

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from tracescore.ingest.cli.serve_command import serve
from tracescore.ingest.configuration.config_loader import load_config


def main() -> None:
    config = load_config(sys.argv[1])
    provider = TracerProvider(resource=Resource.create({"service.name": "tracescore"}))
    exporter = OTLPSpanExporter(endpoint=f"127.0.0.1:{config.receiver.grpc_port}", insecure=True)
    provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=100))
    trace.set_tracer_provider(provider)
    try:
        asyncio.run(serve(config))
    finally:
        provider.shutdown()


if __name__ == "__main__":
    main()
