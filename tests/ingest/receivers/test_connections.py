"""The connection gate of the OTLP/HTTP receiver, in process: the header timeout ends where a request's
handling begins (a body being uploaded has its own timeout), and a receiver that stops closes the
connections aiohttp never saw (those that sent nothing)."""

from __future__ import annotations

import asyncio

from tests.support.otlp import LOOPBACK, counter, running_http


async def test_the_header_timeout_does_not_cut_a_request_whose_body_is_coming() -> None:
    async with running_http(header_timeout_seconds=0.3, body_timeout_seconds=1.5) as running:
        reader, writer = await asyncio.open_connection(LOOPBACK, running.port)
        writer.write(
            b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"
            b"Content-Length: 100\r\n\r\n\x0a"
        )
        await writer.drain()
        answered = asyncio.create_task(reader.read(4096))
        await asyncio.sleep(0.8)  # past the header timeout: the body's own deadline holds
        assert not answered.done()
        answer = await asyncio.wait_for(answered, 5)
        writer.close()
        await writer.wait_closed()
        await asyncio.sleep(0.1)  # gone on the server too: its shutdown need not wait for it
        assert answer.startswith(b"HTTP/1.1 408")
        assert b"request body did not arrive within 1.5 s" in answer
        assert counter(running.metrics, "tracescore_http_connections_closed", reason="header_timeout") == 0


async def test_a_receiver_that_stops_closes_the_connections_that_sent_nothing() -> None:
    async with running_http() as running:
        reader, writer = await asyncio.open_connection(LOOPBACK, running.port)
        await asyncio.sleep(0.1)
        # counted, though aiohttp has not seen it
        assert running.metrics.registry.get_sample_value("tracescore_http_connections_open") == 1
    try:
        closed = await asyncio.wait_for(reader.read(1), 5)
    except ConnectionResetError:
        closed = b""
    writer.close()
    assert closed == b""
