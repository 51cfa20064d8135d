"""Listening sockets of the HTTP receivers: aiohttp's TCP site with a connection gate in front
(``ingest.receivers.connections``), its kernel queue and accept batches, and the message when a port
cannot be bound."""

from __future__ import annotations

import asyncio
import errno
import os
import socket
import ssl

from aiohttp import web

from tracescore.ingest.receivers.connections import ConnectionGate

# Connections the kernel queues before they are accepted (capped by net.core.somaxconn). With the
# default of 100, a burst of clients overflows the queue and a dropped SYN waits a second to be sent
# again: a health probe behind 2,000 stalled uploads took 1.03 s.
LISTEN_BACKLOG = 4096
# Connections asyncio accepts per turn of the event loop (it takes the listen backlog for this, too).
# A flood keeps the queue full: 4,096 set up and closed in one turn held the loop for over a second,
# and every other connection waited for it (measured: half of /healthz probes failed). In turns of
# 64, the loop serves the others in between.
ACCEPT_BATCH = 64


class GatedSite(web.BaseSite):
    """aiohttp's TCP site, with the connection gate in front of the server's protocol."""

    def __init__(
        self,
        runner: web.BaseRunner,
        host: str,
        port: int,
        gate: ConnectionGate,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        super().__init__(runner, ssl_context=ssl_context)
        self._host = host
        self._requested_port = port
        self._gate = gate

    @property
    def name(self) -> str:
        scheme = "https" if self._ssl_context else "http"
        return f"{scheme}://{self._host}:{self._requested_port}"

    async def start(self) -> None:
        await super().start()
        server = self._runner.server
        assert server is not None
        self._server = await asyncio.get_running_loop().create_server(
            self._gate.wrap(server),
            self._host,
            self._requested_port,
            reuse_address=True,
            backlog=ACCEPT_BATCH,
            ssl=self._ssl_context,
            # A TLS handshake is part of getting the request's headers in: the same deadline.
            ssl_handshake_timeout=self._gate.header_timeout_s if self._ssl_context else None,
        )
        for listening in self._server.sockets:  # the kernel's queue as long as before
            with socket.fromfd(listening.fileno(), listening.family, listening.type) as same:
                same.listen(LISTEN_BACKLOG)
        self._gate.start()

    async def stop(self) -> None:
        self._gate.stop()
        await super().stop()


# The flag, environment variable and config key that choose each receiver's port.
_PORT_SETTINGS = {
    "OTLP/gRPC": ("--grpc-port", "TRACESCORE_GRPC_PORT", "receiver.grpc_port"),
    "OTLP/HTTP": ("--http-port", "TRACESCORE_HTTP_PORT", "receiver.http_port"),
    "health": ("--health-port", "TRACESCORE_HEALTH_PORT", "receiver.health_port"),
}
_HOST_SETTING = "--host, TRACESCORE_HOST or receiver.host"
# What a refusal of the OS usually means here, after its own words.
_MEANING = {
    errno.EADDRINUSE: "another tracescore or an OpenTelemetry Collector?",
    errno.EADDRNOTAVAIL: "no network interface of this machine has that address",
}


def bind_error(host: str, port: int) -> OSError | None:
    """The operating system's refusal to bind ``host:port`` now, None when it binds. grpcio keeps its
    reason to its own log ("Failed to bind to address"); asking the OS again gives it."""
    try:
        addresses = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        return exc
    for family, kind, protocol, _, address in addresses:
        with socket.socket(family, kind, protocol) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the receivers do
            try:
                probe.bind(address)
            except OSError as exc:
                return exc
    return None


def cannot_listen(receiver: str, host: str, port: int, exc: BaseException | None) -> str:
    """Why a receiver could not bind, in the OS's words (``Cannot assign requested address``), naming
    the receiver, host and port, and the setting to change."""
    flag, variable, key = _PORT_SETTINGS[receiver]
    where = f"{receiver} receiver cannot listen on {host}:{port}"
    other_port = f"choose another port with {flag}, {variable} or {key}"
    if isinstance(exc, socket.gaierror):
        return f"{where}: cannot resolve {host!r} ({exc.strerror}); choose another host with {_HOST_SETTING}"
    if not isinstance(exc, OSError) or not exc.errno or exc.errno < 0:
        told = f" ({exc})" if exc is not None and str(exc) else ""
        return f"{where}: it could not be bound{told}; run with -v for the server's own reason"
    reason = os.strerror(exc.errno)
    meaning = _MEANING.get(exc.errno)
    if exc.errno == errno.EACCES and 0 < port < 1024:
        meaning = "ports below 1024 need privileges"
    said = f"{where}: {reason}" + (f" ({meaning})" if meaning else "")
    if exc.errno == errno.EADDRNOTAVAIL:
        return f"{said}; choose another host with {_HOST_SETTING}"
    if exc.errno in (errno.EADDRINUSE, errno.EACCES):
        return f"{said}; {other_port}"
    return said
