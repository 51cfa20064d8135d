"""Slow clients, as an attacker runs them (slowloris): thousands of connections, each sending its
request headers one byte every few seconds and never finishing them; a connection the server closes is
opened again on its next turn. They run in worker processes of their own (``python -m
tests.support.slow_clients``), so the test process keeps its file descriptors and its CPU for the
clients it measures.

Each worker reports, when told to stop (SIGTERM), how many connections it opened, how many the server
closed, and how many were open at the end."""

from __future__ import annotations

import argparse
import json
import resource
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

PROJECT_ROOT = str(Path(__file__).resolve().parents[2])
# Headers that never end: a request line, then one header after another, one byte per turn.
REQUEST_LINE = b"POST /v1/traces HTTP/1.1\r\nHost: tracescore\r\nContent-Type: application/x-protobuf\r\n"
PAD_HEADER = b"X-Pad: a\r\n"
TURNS_PER_SECOND = 20  # the sockets are visited a slice at a time, spread over the interval


def header_byte(position: int) -> bytes:
    if position < len(REQUEST_LINE):
        return REQUEST_LINE[position : position + 1]
    offset = (position - len(REQUEST_LINE)) % len(PAD_HEADER)
    return PAD_HEADER[offset : offset + 1]


def raise_open_file_limit() -> int:
    """The soft limit of open files raised to the hard limit; returns it."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


class _Worker:
    def __init__(self, host: str, port: int, sources: Sequence[str], count: int, interval: float) -> None:
        self.target = (host, port)
        self.sources = sources
        self.interval = interval
        self.sockets: list[socket.socket | None] = [None] * count
        self.sent = [0] * count  # header bytes sent on the current connection
        self.connects = 0
        self.closed_by_server = 0
        self.failed_connects = 0
        self.stopping = False

    def connect(self, index: int) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setblocking(False)
        try:
            sock.bind((self.sources[index % len(self.sources)], 0))
            sock.connect_ex(self.target)
        except OSError:
            sock.close()
            self.failed_connects += 1
            return
        self.sockets[index], self.sent[index] = sock, 0
        self.connects += 1

    def turn(self, index: int) -> None:
        """One byte more, or a new connection if the server closed this one."""
        sock = self.sockets[index]
        if sock is None:
            self.connect(index)
            return
        try:
            if sock.recv(4096) == b"":  # closed by the server (a 408 it may have sent first is read here)
                raise ConnectionResetError
        except BlockingIOError:
            pass
        except OSError:
            self._closed(index, sock)
            return
        try:
            self.sent[index] += sock.send(header_byte(self.sent[index]))
        except BlockingIOError:
            pass  # still connecting (the server's accept queue is full)
        except OSError:
            self._closed(index, sock)

    def _closed(self, index: int, sock: socket.socket) -> None:
        if self.sent[index]:
            self.closed_by_server += 1
        sock.close()
        self.sockets[index] = None

    def run(self) -> None:
        count = len(self.sockets)
        per_turn = max(1, round(count / (self.interval * TURNS_PER_SECOND)))
        for index in range(count):  # open them all at once, as an attack starts
            self.connect(index)
        print(json.dumps({"ready": True}), flush=True)
        next_index, next_turn = 0, time.monotonic()
        while not self.stopping:
            for index in range(next_index, min(count, next_index + per_turn)):
                self.turn(index)
            next_index = 0 if next_index + per_turn >= count else next_index + per_turn
            next_turn += 1 / TURNS_PER_SECOND
            time.sleep(max(0.0, next_turn - time.monotonic()))

    def report(self) -> dict[str, int]:
        open_ = sum(1 for index, sock in enumerate(self.sockets) if sock is not None and self.sent[index])
        return {
            "connects": self.connects,
            "closed_by_server": self.closed_by_server,
            "failed_connects": self.failed_connects,
            "open": open_,
        }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--sources", required=True, help="comma-separated source addresses")
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--interval", type=float, default=3.0)
    args = parser.parse_args(argv)
    raise_open_file_limit()
    worker = _Worker(args.host, args.port, args.sources.split(","), args.count, args.interval)

    def stop(signum: int, frame: FrameType | None) -> None:
        worker.stopping = True

    signal.signal(signal.SIGTERM, stop)
    worker.run()
    print(json.dumps(worker.report()), flush=True)


@dataclass
class SlowClientsReport:
    connects: int = 0
    closed_by_server: int = 0
    failed_connects: int = 0
    open: int = 0


def loopback_sources(count: int) -> list[str]:
    """``count`` loopback addresses other than 127.0.0.1 (all of 127.0.0.0/8 is this host on Linux):
    127.0.0.2, 127.0.0.3, ..."""
    return [f"127.0.{n // 250}.{2 + n % 250}" for n in range(count)]


def established(port: int) -> int:
    """TCP connections to ``port`` on this host that are established (accepted or waiting to be)."""
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "01" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                count += 1
    return count


@contextmanager
def slow_clients(
    port: int, count: int, sources: Sequence[str], workers: int = 2, interval: float = 3.0
) -> Iterator[SlowClientsReport]:
    """``count`` slow clients on ``port`` from ``sources`` while the block runs; the report is filled in
    when it ends."""
    report = SlowClientsReport()
    procs = []
    share = -(-count // workers)
    try:
        for index in range(workers):
            n = min(share, count - index * share)
            procs.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "tests.support.slow_clients",
                        "--port",
                        str(port),
                        "--count",
                        str(n),
                        "--interval",
                        str(interval),
                        "--sources",
                        ",".join(sources[index::workers] or sources),
                    ],
                    stdout=subprocess.PIPE,
                    text=True,
                    cwd=PROJECT_ROOT,
                )
            )
        for proc in procs:
            assert proc.stdout is not None
            assert json.loads(proc.stdout.readline()) == {"ready": True}
        yield report
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        for proc in procs:
            out, _ = proc.communicate(timeout=30)
            lines = out.strip().splitlines()
            if lines:
                for key, value in json.loads(lines[-1]).items():
                    setattr(report, key, getattr(report, key) + value)


if __name__ == "__main__":
    main()
