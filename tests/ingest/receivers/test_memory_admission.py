"""Admission on the receivers: a request reserves what it will cost before its body is read (OTLP/HTTP)
or before it is decoded (OTLP/gRPC, Kafka); one that could fit later is asked to come back (429 with
Retry-After, RESOURCE_EXHAUSTED with RetryInfo, the Kafka consumer pauses), one that never could is
refused for good naming the fix (a Kafka record parked in the dead-letter topic), and the reservation
is held until the request's spans are stored, then released."""

from __future__ import annotations

import asyncio
import gzip
import time
from typing import Any

import grpc
from google.rpc import error_details_pb2, status_pb2

from tests.ingest.receivers.test_limits import TOPIC, _parked, _produce
from tests.support.otlp import (
    EXPORT_METHOD,
    Recorder,
    http_request,
    kv,
    proto_request,
    proto_span,
    running_grpc,
    running_http,
)
from tracescore.ingest.decode.cost import request_cost
from tracescore.ingest.observability.service_metrics import Metrics
from tracescore.ingest.receivers.kafka import KafkaReceiver
from tracescore.ingest.receivers.memory_admission import MemoryGuard, MemoryReservation
from tracescore.schemas.config import KafkaConfig, ReceiverConfig
from tracescore.schemas.spans import SpanBatch

MIB = 2**20
LIMIT = 512 * MIB
REST = 100 * MIB
PROTOBUF = {"Content-Type": "application/x-protobuf"}


async def settled_guard(metrics: Metrics, resident: int = REST) -> MemoryGuard:
    guard = MemoryGuard(LIMIT, metrics, busy=lambda: False, relieve=lambda: None, read=lambda: resident)
    guard.measure_rest(0)
    await guard.settle()
    return guard


def body(count: int = 3) -> bytes:
    spans = [proto_span(f"s{i}", span_id=(i + 1).to_bytes(8, "big")) for i in range(count)]
    return proto_request(*spans).SerializeToString()


class Watching(Recorder):
    """Records what the guard has reserved while each batch is being stored."""

    def __init__(self, guard: list[MemoryGuard]) -> None:
        super().__init__()
        self.guard = guard
        self.reserved: list[int] = []

    async def consume_spans(self, batch: SpanBatch) -> None:
        self.reserved.append(self.guard[0].reserved)
        await super().consume_spans(batch)


async def test_http_holds_the_cost_until_the_spans_are_stored_then_releases_it() -> None:
    metrics = Metrics()
    guard = await settled_guard(metrics)
    watching = Watching([guard])
    payload = body()
    async with running_http(next=watching, memory=guard, metrics=metrics) as running:
        reply = await http_request("POST", f"{running.url}/v1/traces", data=payload, headers=PROTOBUF)
    assert reply.status == 200
    assert watching.reserved == [request_cost("otlp_proto", len(payload), largest_item=len(payload))]
    assert guard.reserved == 0


async def test_http_asks_a_request_that_fits_later_to_come_back_and_takes_it_then() -> None:
    metrics = Metrics()
    guard = await settled_guard(metrics)
    held: MemoryReservation = guard.reserve(guard.admittable - 100, "requests in flight")
    async with running_http(memory=guard, metrics=metrics) as running:
        url = f"{running.url}/v1/traces"
        refused = await http_request("POST", url, data=body(), headers=PROTOBUF)
        held.release()
        taken = await http_request("POST", url, data=body(), headers=PROTOBUF)
    assert refused.status == 429 and refused.headers["Retry-After"] == "1"
    status = status_pb2.Status.FromString(refused.body)
    retry = error_details_pb2.RetryInfo()
    assert status.details[0].Unpack(retry) and retry.retry_delay.seconds == 1
    assert "send it again later" in status.message
    assert taken.status == 200 and len(running.next.spans) == 3


async def test_http_refuses_a_request_that_could_never_fit_before_reading_its_body() -> None:
    metrics = Metrics()
    guard = await settled_guard(metrics, resident=LIMIT // 2)
    too_big = guard.admittable  # its cost (body and slice) is more than the room
    async with running_http(memory=guard, metrics=metrics, max_request_bytes=LIMIT) as running:
        reader, writer = await asyncio.open_connection("127.0.0.1", running.port)
        writer.write(
            b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"
            + f"Content-Length: {too_big}\r\n\r\n".encode()
        )  # and not one byte of the body
        await writer.drain()
        answer = await asyncio.wait_for(reader.read(4096), 10)
        writer.close()
    head, _, rest = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413")
    message = status_pb2.Status.FromString(rest).message
    assert f"a request of {too_big} bytes needs" in message and "raise memory_limit" in message
    assert "send_batch_max_size" in message
    assert guard.reserved == 0


async def test_http_reserves_a_gzip_body_as_it_inflates() -> None:
    metrics = Metrics()
    guard = await settled_guard(metrics)
    text = "a" * (6 * MIB)  # 6 MiB inflated from a few KiB: the reservation follows the inflated size
    payload = gzip.compress(proto_request(proto_span("big", attributes=[kv("t", text)])).SerializeToString())
    watching = Watching([guard])
    headers = {**PROTOBUF, "Content-Encoding": "gzip"}
    async with running_http(
        next=watching, memory=guard, metrics=metrics, max_request_bytes=16 * MIB
    ) as running:
        reply = await http_request("POST", f"{running.url}/v1/traces", data=payload, headers=headers)
    assert reply.status == 200
    assert watching.reserved[0] >= 6 * MIB + len(payload)
    assert guard.reserved == 0


def _retry_info(error: grpc.aio.AioRpcError) -> error_details_pb2.RetryInfo | None:
    for key, value in error.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            status = status_pb2.Status.FromString(value if isinstance(value, bytes) else value.encode())
            retry = error_details_pb2.RetryInfo()
            return retry if status.details and status.details[0].Unpack(retry) else None
    return None


async def _export(port: int, payload: bytes) -> Any:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        try:
            return await channel.unary_unary(EXPORT_METHOD)(payload, timeout=10)
        except grpc.aio.AioRpcError as exc:
            return exc


async def test_grpc_refuses_before_decoding_for_now_with_retry_info_or_for_good_without() -> None:
    metrics = Metrics()
    guard = await settled_guard(metrics, resident=410 * MIB)  # about 50 MiB left for requests
    held = guard.reserve(guard.admittable - 100, "requests in flight")
    large = proto_request(proto_span("x", attributes=[kv("t", "a" * (40 * MIB))])).SerializeToString()
    async with running_grpc(memory=guard, metrics=metrics, max_request_bytes=64 * MIB) as running:
        for_now = await _export(running.port, body())
        held.release()
        never = await _export(running.port, large)
        taken = await _export(running.port, body())
    assert isinstance(for_now, grpc.aio.AioRpcError) and for_now.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    retry = _retry_info(for_now)
    assert retry is not None and retry.retry_delay.seconds == 1
    assert isinstance(never, grpc.aio.AioRpcError) and never.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert _retry_info(never) is None and "raise memory_limit" in (never.details() or "")
    assert taken == b"" and len(running.next.spans) == 3
    assert guard.reserved == 0


async def test_kafka_pauses_while_a_batch_does_not_fit_and_parks_a_record_that_never_could(
    kafka_bootstrap: str,
) -> None:
    metrics, recorder = Metrics(), Recorder()
    guard = await settled_guard(metrics, resident=410 * MIB)  # about 50 MiB left for requests
    held = guard.reserve(guard.admittable - 100, "requests in flight")
    # 7 MiB of text in one span: it fits the batch's first reservation, not once its largest item is known.
    large = proto_request(proto_span("large", attributes=[kv("t", "a" * (7 * MIB))])).SerializeToString()
    await asyncio.to_thread(_produce, kafka_bootstrap, body(), large)
    config = KafkaConfig(bootstrap=kafka_bootstrap, topic=TOPIC, group="memory", session_timeout_ms=6000)
    limits = ReceiverConfig(max_request_bytes=16 * MIB)
    receiver = KafkaReceiver(config, next=recorder, metrics=metrics, limits=limits, memory=guard)
    await receiver.start()
    try:
        await receiver.wait_assigned()
        deadline = time.monotonic() + 30
        while not metrics.registry.get_sample_value("tracescore_kafka_pauses_total"):
            assert time.monotonic() < deadline, "the consumer did not pause"
            await asyncio.sleep(0.05)
        assert recorder.spans == []  # nothing decoded while the batch does not fit
        held.release()
        while metrics.registry.get_sample_value("tracescore_dead_letters_total") != 1 or not recorder.spans:
            assert time.monotonic() < deadline, "timed out"
            await asyncio.sleep(0.1)
    finally:
        await receiver.shutdown()
    assert [span.name for span in recorder.spans] == ["s0", "s1", "s2"]
    parked = await asyncio.to_thread(_parked, kafka_bootstrap)
    assert len(parked) == 1 and parked[0].value == large
    reason = dict(parked[0].headers)["tracescore.error"].decode()
    assert "needs" in reason and "raise memory_limit" in reason
    assert guard.reserved == 0
