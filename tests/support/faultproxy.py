"""A fault-injecting HTTP proxy on 127.0.0.1 in front of a server (tests and bench only): a real
one (llama.cpp) or the scripted one of tests/support/scripted_server.py.

Each incoming request takes the next action of the script (`pass` once it is used up):
  pass       forward to the upstream server and return its answer
  429:N      HTTP 429 with `Retry-After: N`
  500        HTTP 500
  503[:N]    HTTP 503 (with `Retry-After: N` when N is given)
  stall:N    wait N seconds, then close the connection without answering
  reset      close the connection with a TCP reset
  truncate   forward, then return the first half of the body (consistent length, broken JSON)
  short      forward, then announce the full Content-Length, send half and close
  delay:N    wait N seconds, then forward
  echo401    HTTP 401 whose body echoes the request's Authorization header
`latency_s` is added before every forwarded request. Counters: `requests` (all received),
`forwarded`, and `max_in_flight` (most forwarded requests handled at once); `exchanges` holds
(request body, response body) of every answer passed through unchanged.
"""

from __future__ import annotations

import http.client
import json
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

from tests.support.threaded_server import ThreadedServer

SKIPPED = {"connection", "keep-alive", "transfer-encoding", "content-length", "host", "server",
           "date"}
"""Headers the proxy sets itself (hop-by-hop or written by http.server)."""
ACTIONS = {"pass", "429", "500", "503", "stall", "reset", "truncate", "short", "delay", "echo401"}


def _checked(actions: Iterable[str]) -> deque[str]:
    script = deque(actions)
    unknown = [a for a in script if a.partition(":")[0] not in ACTIONS]
    if unknown:
        raise ValueError(f"unknown proxy actions {unknown} (known: {sorted(ACTIONS)})")
    return script


class FaultProxy(ThreadedServer):
    def __init__(self, upstream: str, script: Iterable[str] = (), latency_s: float = 0.0):
        parts = urlsplit(upstream)
        self.upstream = (parts.hostname or "127.0.0.1", parts.port or 80)
        self.latency_s = latency_s
        self.requests = self.forwarded = self.max_in_flight = 0
        self.authorization: list[str] = []
        self.exchanges: list[tuple[bytes, bytes]] = []
        self._script = _checked(script)
        self._in_flight = 0
        self._lock = threading.Lock()
        handler = type("Handler", (_Handler,), {"proxy": self})
        super().__init__(_Server(("127.0.0.1", 0), handler))

    def script(self, actions: Iterable[str]) -> None:
        """Replace the remaining script and reset the counters."""
        with self._lock:
            self._script = _checked(actions)
            self.requests = self.forwarded = self.max_in_flight = 0
            self.authorization = []
            self.exchanges = []

    def _next(self, authorization: str) -> str:
        with self._lock:
            self.requests += 1
            self.authorization.append(authorization)
            return self._script.popleft() if self._script else "pass"

    def _enter(self) -> None:
        with self._lock:
            self.forwarded += 1
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)

    def _leave(self, exchange: tuple[bytes, bytes] | None) -> None:
        with self._lock:
            self._in_flight -= 1
            if exchange is not None:
                self.exchanges.append(exchange)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        """Clients that hang up on a stalled or broken answer are expected here."""


class _Handler(BaseHTTPRequestHandler):
    proxy: FaultProxy
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: tests assert on counters, not on logs."""

    def do_GET(self) -> None:
        self._handle(b"")

    def do_POST(self) -> None:
        self._handle(self.rfile.read(int(self.headers.get("Content-Length") or 0)))

    def _handle(self, body: bytes) -> None:
        action, _, arg = self.proxy._next(self.headers.get("Authorization", "")).partition(":")
        if action == "429":
            self._reply(429, b'{"error": {"message": "rate limited"}}', {"Retry-After": arg})
        elif action == "500":
            self._reply(500, b'{"error": {"message": "injected failure"}}')
        elif action == "503":
            self._reply(503, b'{"error": {"message": "injected overload"}}',
                        {"Retry-After": arg} if arg else None)
        elif action == "echo401":
            text = json.dumps({"error": {"message": f"bad key: {self.headers['Authorization']}"}})
            self._reply(401, text.encode())
        elif action == "stall":
            time.sleep(float(arg))
            self.close_connection = True
        elif action == "reset":
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                       struct.pack("ii", 1, 0))
            self.connection.close()
            self.close_connection = True
        else:
            self._forward(body, action, float(arg) if action == "delay" else 0.0)

    def _forward(self, body: bytes, action: str, delay: float) -> None:
        self.proxy._enter()
        exchange = None
        try:
            time.sleep(self.proxy.latency_s + delay)
            upstream = http.client.HTTPConnection(*self.proxy.upstream, timeout=600)
            headers = {k: v for k, v in self.headers.items() if k.lower() not in SKIPPED}
            upstream.request(self.command, self.path, body=body, headers=headers)
            response = upstream.getresponse()
            status, data = response.status, response.read()
            extra = {k: v for k, v in response.getheaders() if k.lower() not in SKIPPED}
            upstream.close()
            if action in ("pass", "delay"):
                exchange = (body, data)
        finally:
            self.proxy._leave(exchange)
        if action == "truncate":
            self._reply(status, data[: len(data) // 2], extra)
        elif action == "short":
            self.send_response(status)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data[: len(data) // 2])
            self.close_connection = True
        else:
            self._reply(status, data, extra)

    def _reply(self, status: int, data: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
