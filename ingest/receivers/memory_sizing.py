"""How ``memory_limit`` is shared out at start: the rest size (``memory_admission.Rest``, measured
before the store opens), what is set aside beside it, one request of ``receiver.max_request_bytes``,
and what is left -- the room the assembler's bounds and the requests beyond the first share.

A limit that cannot hold the rest size, what is set aside and one request is refused before the store
is opened (``check_limit``: ``serve`` exits 2 naming the numbers and the fix). See
docs/operations/memory.md.
"""

from __future__ import annotations

from tracescore.ingest.decode.cost import request_cost
from tracescore.ingest.receivers.memory_admission import ADMIT_SHARE, Rest, mib
from tracescore.schemas.config import HELD_BYTES_SHARE, AssemblyConfig
from tracescore.schemas.errors import TracescoreError

# What the embedded store allocates beside the rest size while spans flow in (its inserts and merges),
# and the scoring pipeline with it: measured 110 to 300 MiB under a flood or a 20 MB request, given
# back within seconds once it stops. Set aside from the start (ingest.receivers.memory_admission).
STORE_WORKING_BYTES = 256 * 2**20
# What opening the store and starting the pipeline add to the rest size (measured before the store
# opens): about 84 MiB on a new embedded store (52 the engine, 28 the pipeline, 4 the first reads); a
# store holding 230 MB in 600 parts opens 35 MiB larger. Set aside rather than measured, so that every
# start measures the same whatever the store holds: what a store or recovery holds beyond it is
# counted by admission as it is resident, and never refuses a start.
STORE_OPEN_BYTES = 88 * 2**20
# What memory_limit leaves beside the rest size, the store's working memory and one request of
# receiver.max_request_bytes ("room") is shared: a quarter for the spans the assembler holds, a quarter
# for the traces it tracks, half for more requests in flight.
HELD_SHARE_OF_ROOM = 4
TRACKED_SHARE_OF_ROOM = 4
# A span held by the assembler takes about four times its stored size in Python; a tracked trace about
# 700 bytes, with the id it is remembered by once released (measured).
HELD_PYTHON_FACTOR = 4
TRACKED_TRACE_BYTES = 700
MIN_TRACKED_TRACES = 1_000
MAX_GRPC_STREAMS = 100
SET_ASIDE_BYTES = STORE_OPEN_BYTES + STORE_WORKING_BYTES


class MemoryLimitTooLow(TracescoreError, ValueError):
    """memory_limit cannot hold what the service needs before its store opens, what is set aside and one
    request (a configuration error: ``serve`` exits 2 with this message)."""


def check_limit(limit: int, max_request_bytes: int, rest: Rest) -> None:
    """Refuse a memory_limit that cannot hold the rest size, what is set aside beside it and one request
    of receiver.max_request_bytes."""
    request = request_cost("otlp_proto", max_request_bytes)
    needed = rest.floor + request
    if needed > limit * ADMIT_SHARE:
        raise MemoryLimitTooLow(
            f"memory_limit {mib(limit)} is too low: tracescore holds {mib(rest.resident)} before its "
            f"store opens, the store open and storing spans needs about {mib(rest.working)} more, and "
            f"one request of receiver.max_request_bytes ({mib(max_request_bytes)}) up to {mib(request)}: "
            f"set memory_limit to at least {mib(needed / ADMIT_SHARE + 2**20)}, or lower "
            "receiver.max_request_bytes"
        )


def room_left(limit: int, max_request_bytes: int, rest: Rest) -> tuple[int, int]:
    """What the limit leaves beside the rest size, what is set aside and the largest request; and that
    request's cost."""
    request = request_cost("otlp_proto", max_request_bytes)
    return int(limit * ADMIT_SHARE) - rest.floor - request, request


def size_assembly(assembly: AssemblyConfig, limit: int, room: int) -> None:
    """The assembler's bounds from the room, where the config file does not give them."""
    if "max_held_bytes" not in assembly.model_fields_set:
        held = room // HELD_SHARE_OF_ROOM // HELD_PYTHON_FACTOR
        assembly.max_held_bytes = max(2**20, min(held, limit // HELD_BYTES_SHARE))
        assembly.model_fields_set.discard("max_held_bytes")
    if "max_traces" not in assembly.model_fields_set:
        tracked = room // TRACKED_SHARE_OF_ROOM // TRACKED_TRACE_BYTES
        assembly.max_traces = max(MIN_TRACKED_TRACES, min(tracked, assembly.max_traces))
        assembly.model_fields_set.discard("max_traces")


def grpc_streams(room: int, request: int, largest: int, copies: int) -> int:
    """Messages grpcio may read per connection before admission weighs them: as many as fit."""
    return max(1, min(MAX_GRPC_STREAMS, (room + request) // (copies * largest)))
