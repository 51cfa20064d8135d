"""An OTLP export request read from the protobuf wire format, envelope by envelope, its items parsed a
run at a time.

Parsing a whole request with protobuf builds its entire message tree at once, which takes 1 to 8 times
the request's bytes (measured: most for many small attributes, whose every key and value is a message
of its own). Both signals share one shape -- the request's field 1 holds resources, a resource's field 1
its ``Resource`` and field 2 its scopes, a scope's field 1 its ``InstrumentationScope`` and field 2 its
items (spans or log records), field 3 of either a schema URL -- so the envelopes are read here from the
bytes, and the items of a scope are parsed by protobuf in runs of at most ``RUN_BYTES``: the bytes of
consecutive item fields are themselves a valid scope message holding just those items.

What protobuf would do is kept: a singular message field given twice is merged (the bytes of all its
occurrences parsed as one), the last schema URL wins, unknown fields are skipped, and a request of
which any part is unreadable (a length past the end, a bad tag, an item protobuf cannot parse) is
refused as a whole (``WireError``) -- found by ``WireRequest.measure`` before any of it is stored.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from google.protobuf import message as protobuf_message
from opentelemetry.proto.common.v1.common_pb2 import InstrumentationScope
from opentelemetry.proto.resource.v1.resource_pb2 import Resource

RUN_BYTES = 256 * 1024
# Field numbers shared by ExportTraceServiceRequest / ResourceSpans / ScopeSpans and their logs twins.
RESOURCES, ENVELOPE, ITEMS, SCHEMA_URL = 1, 1, 2, 3
_VARINT, _I64, _LEN, _SGROUP, _EGROUP, _I32 = 0, 1, 2, 3, 4, 5
_MAX_DEPTH = 100  # nested groups, as protobuf's own recursion limit


class WireError(ValueError):
    """The bytes are not a protobuf message of the expected shape."""


def _varint(buf: memoryview, pos: int, end: int) -> tuple[int, int]:
    value = shift = 0
    while pos < end:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
        if shift >= 70:
            raise WireError("a varint is longer than 10 bytes")
    raise WireError("a varint runs past the end of its message")


def fields(buf: memoryview, start: int, end: int) -> Iterator[tuple[int, int, int, int, int]]:
    """``(field number, wire type, field start, value start, value end)`` of each field of the message
    in ``buf[start:end]``; for a length-delimited field the value is past its length."""
    pos = start
    while pos < end:
        field_start = pos
        key, pos = _varint(buf, pos, end)
        number, wire_type = key >> 3, key & 7
        if number == 0:
            raise WireError("field number 0")
        if wire_type == _LEN:
            size, pos = _varint(buf, pos, end)
            value_end = pos + size
        elif wire_type == _VARINT:
            value_end = _varint(buf, pos, end)[1]
        elif wire_type == _I64:
            value_end = pos + 8
        elif wire_type == _I32:
            value_end = pos + 4
        elif wire_type == _SGROUP:
            value_end = _group_end(buf, pos, end, number, 1)
        else:
            raise WireError(f"unexpected wire type {wire_type} of field {number}")
        if value_end > end:
            raise WireError(f"field {number} runs past the end of its message")
        yield number, wire_type, field_start, pos, value_end
        pos = value_end


def _group_end(buf: memoryview, pos: int, end: int, number: int, depth: int) -> int:
    """Where the (deprecated) group of field ``number`` starting at ``pos`` ends, past its end tag."""
    if depth > _MAX_DEPTH:
        raise WireError("groups nested too deeply")
    while pos < end:
        key, pos = _varint(buf, pos, end)
        inner, wire_type = key >> 3, key & 7
        if wire_type == _EGROUP:
            if inner != number:
                raise WireError(f"group {number} ends with the tag of field {inner}")
            return pos
        if wire_type == _LEN:
            size, pos = _varint(buf, pos, end)
            pos += size
        elif wire_type == _VARINT:
            pos = _varint(buf, pos, end)[1]
        elif wire_type == _I64:
            pos += 8
        elif wire_type == _I32:
            pos += 4
        elif wire_type == _SGROUP:
            pos = _group_end(buf, pos, end, inner, depth + 1)
        else:
            raise WireError(f"unexpected wire type {wire_type} in group {number}")
    raise WireError(f"group {number} has no end")


def _string(buf: memoryview, start: int, end: int, what: str) -> str:
    try:
        return bytes(buf[start:end]).decode()
    except UnicodeDecodeError as exc:
        raise WireError(f"{what} is not valid UTF-8: {exc}") from None


def _envelope(buf: memoryview, start: int, end: int, what: str) -> tuple[bytes, str]:
    """The bytes of a resource's or scope's own message (every occurrence of its field, which protobuf
    merges) and its schema URL."""
    parts: list[bytes] = []
    schema_url = ""
    for number, wire_type, _, value_start, value_end in fields(buf, start, end):
        if wire_type != _LEN:
            continue
        if number == ENVELOPE:
            parts.append(bytes(buf[value_start:value_end]))
        elif number == SCHEMA_URL:
            schema_url = _string(buf, value_start, value_end, f"a {what}'s schema URL")
    return b"".join(parts), schema_url


@dataclass(frozen=True)
class WireShape:
    """One signal's scope and item messages (ScopeSpans and Span, ScopeLogs and LogRecord)."""

    scope_message: type[protobuf_message.Message]  # parses a run of items
    item_type: type[protobuf_message.Message]
    items_of: Callable[[Any], Iterable[Any]]  # a parsed run's items


class WireScope:
    """A scope envelope: its ``InstrumentationScope``, schema URL, and items parsed a run at a time."""

    def __init__(self, buf: memoryview, start: int, end: int, shape: WireShape) -> None:
        self._buf, self._start, self._end, self._shape = buf, start, end, shape
        envelope, self.schema_url = _envelope(buf, start, end, "scope")
        try:
            self.scope = InstrumentationScope.FromString(envelope)
        except protobuf_message.DecodeError as exc:
            raise WireError(f"an instrumentation scope is not readable: {exc}") from None

    def _runs(self) -> Iterator[tuple[int, int, list[int]]]:
        """``(start, end, item sizes)`` of each run: a stretch of item fields and nothing else, of
        at most about ``RUN_BYTES`` (the bytes of such a stretch are a scope message of just them)."""
        run_start = run_end = -1
        sizes: list[int] = []
        for number, wire_type, field_start, value_start, value_end in fields(
            self._buf, self._start, self._end
        ):
            if number != ITEMS or wire_type != _LEN:
                if run_start >= 0:
                    yield run_start, run_end, sizes
                    run_start, sizes = -1, []
                continue
            if run_start < 0:
                run_start = field_start
            run_end = value_end
            sizes.append(value_end - value_start)
            if run_end - run_start >= RUN_BYTES:
                yield run_start, run_end, sizes
                run_start, sizes = -1, []
        if run_start >= 0:
            yield run_start, run_end, sizes

    def _parse(self, start: int, end: int) -> Any:
        try:
            return self._shape.scope_message.FromString(self._buf[start:end])  # type: ignore[arg-type]
        except protobuf_message.DecodeError as exc:
            raise WireError(f"an item between bytes {start} and {end} is not readable: {exc}") from None

    def item_sizes(self) -> Iterator[int]:
        """The size in bytes of each item, in order, once protobuf has read it (``WireError`` if it
        cannot: the request is refused as a whole, as protobuf would refuse it)."""
        for start, end, sizes in self._runs():
            self._parse(start, end)  # its items are read here to be checked, and let go
            yield from sizes

    def items(self) -> Iterator[tuple[Any, int]]:
        """The scope's items in order, each with its size in bytes (``item_sizes`` has checked them)."""
        items_of = self._shape.items_of
        for start, end, sizes in self._runs():
            yield from zip(items_of(self._parse(start, end)), sizes, strict=True)


class WireResource:
    """A resource envelope: its ``Resource``, schema URL, and scopes."""

    def __init__(self, buf: memoryview, start: int, end: int, shape: WireShape) -> None:
        self._buf, self._start, self._end, self._shape = buf, start, end, shape
        envelope, self.schema_url = _envelope(buf, start, end, "resource")
        try:
            self.resource = Resource.FromString(envelope)
        except protobuf_message.DecodeError as exc:
            raise WireError(f"a resource is not readable: {exc}") from None

    def scopes(self) -> Iterator[WireScope]:
        for number, wire_type, _, value_start, value_end in fields(self._buf, self._start, self._end):
            if number == ITEMS and wire_type == _LEN:
                yield WireScope(self._buf, value_start, value_end, self._shape)


class WireRequest:
    """An export request held as its bytes; ``count_items`` checks its envelopes and counts its items."""

    def __init__(self, payload: bytes | bytearray, shape: WireShape) -> None:
        self._buf = memoryview(payload)
        self._shape = shape

    def measure(self) -> tuple[int, int]:
        """How many items the request holds and the size in bytes of the largest, reading every
        envelope (``WireError`` if one is malformed, so the request is refused before any of it is
        stored)."""
        count = largest = 0
        for resource in self.resources():
            for scope in resource.scopes():
                for size in scope.item_sizes():
                    count += 1
                    largest = max(largest, size)
        return count, largest

    def resources(self) -> Iterator[WireResource]:
        buf = self._buf
        for number, wire_type, _, start, end in fields(buf, 0, len(buf)):
            if number == RESOURCES and wire_type == _LEN:
                yield WireResource(buf, start, end, self._shape)
