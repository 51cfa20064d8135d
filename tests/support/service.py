"""A ``Service`` in the test's own process: free loopback ports, a fresh embedded store, a short idle."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from tracescore.ingest.configuration.config_loader import load_config
from tracescore.ingest.service import Service
from tracescore.schemas.config import ServiceConfig


def service_config(tmp_path: Path, **overrides: Any) -> ServiceConfig:
    """The config of a service for one test; ``overrides`` are dotted keys (``"scoring.rules"``)."""
    return load_config(
        overrides={
            "store": str(tmp_path / "store"),
            "receiver.grpc_port": 0,
            "receiver.http_port": 0,
            "assembly.idle_seconds": 0.2,
            **overrides,
        },
        environ={},
    )


@asynccontextmanager
async def running_service(config: ServiceConfig) -> AsyncIterator[Service]:
    """The service started, and shut down afterwards (whatever the test did)."""
    service = Service(config)
    await service.start()
    try:
        yield service
    finally:
        await service.shutdown()
