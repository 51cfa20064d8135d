"""Open connections of the OTLP/HTTP receiver, bounded in number and in time, so slow or hostile
clients cannot starve the port (see docs/operations/slow-clients.md). aiohttp has none of these
limits of its own.

- A connection must send its request headers within ``receiver.header_timeout_seconds`` of opening
  (or, kept alive, of the first byte of its next request); past it, it is answered 408 and closed.
  One kept alive without a request for ``receiver.idle_timeout_seconds`` is closed. (A request body
  has ``receiver.body_timeout_seconds``, in ``ingest.receivers.http``.)
- At most ``receiver.max_connections`` are open. When all are taken, a newcomer is admitted by
  closing the connection that has waited longest for its request headers (else the one idle longest
  between requests), never one whose request is being handled; only when every connection is busy
  with a request is the newcomer closed at once. So stalled clients, however many, take turns with
  everyone else instead of shutting them out.
- One client address holds at most ``receiver.max_connections_per_client``: beyond it, its newcomer
  takes the place of its own longest stalled (or idle) connection, or is closed at once if all of its
  connections are busy with requests.

Closes are counted by reason and logged once a minute. The gate sits in front of aiohttp's own
protocol, which sees only the connections let through (and only once they send a byte); a request
tells the gate when its handling starts and ends (``ConnectionGate.middleware``).
"""

from __future__ import annotations

import asyncio
import logging
import resource
import time
from collections import Counter, OrderedDict
from collections.abc import Awaitable, Callable

from aiohttp import web

from tracescore.ingest.observability.service_metrics import Metrics
from tracescore.schemas.receiver_config import PER_CLIENT_SHARE, ReceiverConfig

log = logging.getLogger(__name__)

LOG_EVERY_SECONDS = 60.0
MAX_DEFAULT_CAP = 4_096
# Why a connection was closed by the gate (the ``reason`` label of tracescore_http_connections_closed).
REFUSED = "max_connections"  # all busy with requests: the newcomer is closed on arrival
CLIENT_CAP = "max_connections_per_client"  # its address's share all busy: closed on arrival
HEADER_TIMEOUT = "header_timeout"  # its request headers did not arrive in time: 408
IDLE_TIMEOUT = "idle_timeout"  # kept alive without a request for too long
EVICTED = "evicted"  # it waited longest, for headers or idle, when a newcomer needed the room
_EXPLAINED = {
    REFUSED: "refused on arrival, every connection busy with a request (receiver.max_connections)",
    CLIENT_CAP: "refused on arrival, its address's receiver.max_connections_per_client all busy",
    HEADER_TIMEOUT: "timed out waiting for request headers (receiver.header_timeout_seconds)",
    IDLE_TIMEOUT: "idle between requests for too long (receiver.idle_timeout_seconds)",
    EVICTED: "stalled or idle, closed to admit a new one (receiver.max_connections)",
}
# The answer to a client whose headers did not arrive in time (RFC 9110 408); then the connection closes.
_TIMEOUT_BODY = b"the request headers did not arrive in time"
REQUEST_TIMEOUT_RESPONSE = (
    b"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Type: text/plain\r\n"
    b"Content-Length: %d\r\n\r\n%s" % (len(_TIMEOUT_BODY), _TIMEOUT_BODY)
)


def default_cap(share: int = 2) -> int:
    """A ``share``-th of the process's open-file limit (the rest is for the store, Kafka, the other
    receiver, logs), at most 4,096."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return MAX_DEFAULT_CAP
    return max(16, min(MAX_DEFAULT_CAP, soft // share))


ProtocolFactory = Callable[[], asyncio.BaseProtocol]
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
# A connection's phase: waiting for its request headers, handling a request, idle between requests.
WAITING, BUSY, IDLE = "waiting", "busy", "idle"


class _Queue:
    """The connections of one scope (all, or one client address) that may be closed to make room:
    those waiting for request headers, then those idle between requests; oldest first in each."""

    def __init__(self) -> None:
        self.count = 0  # open connections in the scope, whatever their phase
        # connection -> since when (time.monotonic()) it has waited, or idled
        self.waiting: OrderedDict[_GatedProtocol, float] = OrderedDict()
        self.idle: OrderedDict[_GatedProtocol, float] = OrderedDict()

    def victim(self) -> _GatedProtocol | None:
        """The one to close: waiting longest for its headers, else idle longest with its last
        response delivered; None when every connection is busy with a request."""
        waiting = next(iter(self.waiting), None)
        return waiting or next((idle for idle in self.idle if idle.delivered()), None)

    def forget(self, connection: _GatedProtocol) -> None:
        self.waiting.pop(connection, None)
        self.idle.pop(connection, None)


class ConnectionGate:
    """The open connections of one listening port, their phases, and the limits above."""

    def __init__(
        self,
        cap: int,
        per_client_cap: int,
        header_timeout_s: float,
        idle_timeout_s: float,
        on_closed: Callable[[str], None],
        name: str = "OTLP/HTTP",
    ) -> None:
        self.name = name
        self.cap = cap
        self.per_client_cap = per_client_cap
        self.header_timeout_s = header_timeout_s
        self.idle_timeout_s = idle_timeout_s
        self._on_closed = on_closed
        self._all = _Queue()
        self._clients: dict[str, _Queue] = {}
        self._by_transport: dict[asyncio.BaseTransport, _GatedProtocol] = {}
        self._closed_since_log: Counter[str] = Counter()
        self._logged_at = 0.0
        self._sweeper: asyncio.TimerHandle | None = None

    @property
    def open(self) -> int:
        return self._all.count

    def wrap(self, factory: ProtocolFactory) -> Callable[[], asyncio.Protocol]:
        return lambda: _GatedProtocol(self, factory)

    def start(self) -> None:
        """Start timing out connections whose headers are late, and idle ones."""
        if self._sweeper is None:
            self._sweep()

    def stop(self) -> None:
        """Stop the timeouts, and close the connections that never sent a byte (aiohttp, which has
        not seen them, closes the others)."""
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None
        for connection in [waiting for waiting in self._all.waiting if not waiting.started]:
            connection.abort()

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Tells the gate a request's headers are in (it is busy: never closed by the gate) and,
        once the handler is done, that its connection is idle."""
        connection = self._by_transport.get(request.transport) if request.transport else None
        if connection is not None:
            self.place(connection, BUSY)
        try:
            return await handler(request)
        finally:
            if connection is not None and connection.counted:
                self.place(connection, IDLE)

    def admit(self, connection: _GatedProtocol, client: str, transport: asyncio.BaseTransport) -> bool:
        """Whether a new connection may stay, making room for it if need be."""
        scope = self._clients.get(client)
        if scope is not None and scope.count >= self.per_client_cap and self.per_client_cap < self.cap:
            victim, reason = scope.victim(), CLIENT_CAP  # room is made within the client's own share
        elif self.open >= self.cap:
            victim, reason = self._all.victim(), REFUSED
        else:
            victim, reason = None, ""
        if reason:
            if victim is None:
                self.closed(reason)
                return False
            victim.close(EVICTED)
        scope = self._clients.setdefault(client, _Queue())  # (the victim may have been its last)
        scope.count += 1
        self._all.count += 1
        self._by_transport[transport] = connection
        self.place(connection, WAITING)
        return True

    def place(self, connection: _GatedProtocol, phase: str) -> None:
        """Moves a connection to the back of its phase's queues (or out of them: busy)."""
        now = time.monotonic()
        for scope in (self._all, self._clients[connection.client]):
            scope.forget(connection)
            if phase == WAITING:
                scope.waiting[connection] = now
            elif phase == IDLE:
                scope.idle[connection] = now

    def waiting(self, connection: _GatedProtocol) -> bool:
        return connection in self._all.waiting

    def idle(self, connection: _GatedProtocol) -> bool:
        return connection in self._all.idle

    def release(self, connection: _GatedProtocol, transport: asyncio.BaseTransport) -> None:
        """A connection closed or lost: its place is free."""
        scope = self._clients[connection.client]
        for queue in (self._all, scope):
            queue.forget(connection)
            queue.count -= 1
        if not scope.count:
            del self._clients[connection.client]
        self._by_transport.pop(transport, None)

    def closed(self, reason: str) -> None:
        self._on_closed(reason)
        self._closed_since_log[reason] += 1
        now = time.monotonic()
        if now - self._logged_at >= LOG_EVERY_SECONDS:
            counts = "; ".join(f"{n} {_EXPLAINED[why]}" for why, n in self._closed_since_log.items())
            log.warning("%s closed connections (%d open): %s", self.name, self.open, counts)
            self._logged_at = now
            self._closed_since_log.clear()

    def _sweep(self) -> None:
        """Closes the connections past their deadline: the oldest are first in each queue."""
        now = time.monotonic()
        for queue, timeout_s, reason in (
            (self._all.waiting, self.header_timeout_s, HEADER_TIMEOUT),
            (self._all.idle, self.idle_timeout_s, IDLE_TIMEOUT),
        ):
            while queue:
                connection, since = next(iter(queue.items()))
                if since > now - timeout_s:
                    break
                connection.close(reason)
        tick = min(0.5, self.header_timeout_s / 4, self.idle_timeout_s / 4)
        self._sweeper = asyncio.get_running_loop().call_later(tick, self._sweep)


class _GatedProtocol(asyncio.Protocol):
    """Lets a connection through to the real protocol when the gate admits it, and keeps its phase."""

    def __init__(self, gate: ConnectionGate, factory: ProtocolFactory) -> None:
        self._gate = gate
        self._factory = factory
        self._inner: asyncio.Protocol | None = None
        self._transport: asyncio.Transport | None = None
        self.client = ""
        self.counted = False  # holds a place in the gate (until it is closed or lost)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        peer = transport.get_extra_info("peername")
        self.client = str(peer[0]) if isinstance(peer, tuple) and peer else ""
        if not self._gate.admit(self, self.client, transport):
            transport.abort()
            return
        self._transport, self.counted = transport, True
        # aiohttp's protocol is made when the first byte arrives: a connection that never sends one
        # (most of a flood of them, evicted first) costs only this much.

    @property
    def started(self) -> bool:
        """Whether a byte came, and aiohttp's protocol with it."""
        return self._inner is not None

    def abort(self) -> None:
        transport = self._transport
        self._release()
        if transport is not None:
            transport.abort()

    def delivered(self) -> bool:
        """Its last response has been handed to the kernel (closing it loses nothing)."""
        return self._transport is not None and self._transport.get_write_buffer_size() == 0

    def close(self, reason: str) -> None:
        """Closed by the gate: a 408 first if it had begun a request it did not finish in time."""
        # Bytes came (aiohttp's protocol was made) and it waits for headers: a request was begun.
        transport, began = self._transport, self._inner is not None and self._gate.waiting(self)
        self._release()
        self._gate.closed(reason)
        if transport is None:
            return
        if self._inner is None:
            transport.abort()  # nothing was said on it: nothing to answer, no lingering close
            return
        if began:
            transport.write(REQUEST_TIMEOUT_RESPONSE)
        transport.close()

    def _release(self) -> None:
        if self.counted:
            self.counted = False
            assert self._transport is not None
            self._gate.release(self, self._transport)

    def connection_lost(self, exc: Exception | None) -> None:
        self._release()
        if self._inner is not None:
            self._inner.connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._inner is None:
            if not self.counted or self._transport is None:
                return  # refused or closed by the gate: nothing more for it
            inner = self._factory()
            assert isinstance(inner, asyncio.Protocol)
            self._inner = inner
            inner.connection_made(self._transport)
        if self._gate.idle(self):
            self._gate.place(self, WAITING)  # a next request begins: its headers are timed from now
        self._inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self._inner.eof_received() if self._inner is not None else None

    def pause_writing(self) -> None:
        if self._inner is not None:
            self._inner.pause_writing()

    def resume_writing(self) -> None:
        if self._inner is not None:
            self._inner.resume_writing()


def receiver_gate(config: ReceiverConfig, metrics: Metrics) -> ConnectionGate:
    """The OTLP/HTTP receiver's gate, sized by ``config`` (or the open-file limit), counting its closes
    and open connections in ``metrics``."""
    cap = config.max_connections or default_cap()
    per_client = min(cap, config.max_connections_per_client or max(1, cap // PER_CLIENT_SHARE))

    def closed(reason: str) -> None:
        metrics.connections_closed.labels(reason).inc()
        if reason == REFUSED:
            metrics.connections_refused.inc()

    gate = ConnectionGate(cap, per_client, config.header_timeout_seconds, config.idle_timeout_seconds, closed)
    metrics.connections_open.set_function(lambda: gate.open)
    return gate
