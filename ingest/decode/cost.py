"""What an export request costs in memory at its peak while it is read, decoded and stored.

The receivers reserve this before they read a request (``ingest.receivers.memory_admission``), from what
they know then --
its encoding and size -- and again once its envelopes are read and its largest item is known. The
factors were measured on the worst shapes a 20 MB request can take (resident size of a fresh process,
so that freed memory of earlier work could not hide any of it):

- protobuf: the body is held while its items are walked (1x); a request of up to 1 MiB is parsed whole
  (its tree: up to 8x, measured 1.8x for small spans and 7.5x for small attributes), a larger one a
  run of at most ``ingest.decode.wire.RUN_BYTES`` at a time; one slice (``ingest.decode.SLICE_BOUNDS``)
  exists as Python objects, rows and insert buffers at a time: measured 10 to 16 MiB for a full slice (2,000
  small spans, 20,000 attribute values or 1 MiB of text), up to 30 times the bytes of a smaller one
  (small spans: a span object, its dicts and rows take about 4.5 kB for 200 bytes sent). One item
  larger than a slice costs up to 12 times its bytes (a text with one character outside Latin-1 takes
  4 bytes a character as a Python ``str``; then its JSON for the span ledger, the insert's buffers and
  the store's columns).
- OTLP/JSON: ``json.loads`` builds the whole document as Python objects, then protobuf's tree of the
  whole request: up to 13 times the body (measured 6x for spans with a few attributes, 13x for spans
  of a thousand small ones), then the slices as for protobuf.
- gzip or deflate: the compressed body too, while it is inflated.
"""

from __future__ import annotations

from tracescore.ingest.decode import SLICE_BOUNDS, WHOLE_PARSE_BYTES

MIB = 2**20
SLICE_PER_BYTE = 30  # a slice's items, rows and insert per byte it came in as: up to 30x (small items)
FULL_SLICE = 16 * MIB  # a slice at SLICE_BOUNDS (2,000 small spans, 20,000 values or 1 MiB of text)
TEXT_PER_BYTE = 12  # an item larger than a slice is mostly text: per byte of it beyond the slice's
JSON_PER_BYTE = 14  # per byte of an OTLP/JSON body: its document and protobuf's tree of it
TREE_PER_BYTE = 8  # per byte of a protobuf body parsed whole (up to WHOLE_PARSE_BYTES): its tree


def slice_cost(size: int, largest_item: int = 0) -> int:
    """One slice of a request of ``size`` bytes whose largest item is ``largest_item`` bytes."""
    beyond = max(0, largest_item - SLICE_BOUNDS.wire_bytes)
    return min(SLICE_PER_BYTE * size, FULL_SLICE) + TEXT_PER_BYTE * beyond


def request_cost(encoding: str, size: int, compressed: int = 0, largest_item: int = 0) -> int:
    """Bytes a request of ``size`` bytes (inflated) costs at its peak; ``compressed``: its bytes as sent
    when they were gzip or deflate (or a second copy of it held meanwhile); ``largest_item``: once
    known, the bytes of its largest item."""
    if encoding == "otlp_json":
        body = size * (1 + JSON_PER_BYTE)
    elif size <= WHOLE_PARSE_BYTES:
        body = size * (1 + TREE_PER_BYTE)
    else:
        body = size
    return compressed + body + slice_cost(size, largest_item)
