"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1 (a thread of the test
process, no model): every POST to /v1/chat/completions gets a canned, valid completion whose
text is `echo: ` and the content of the request's last message, with usage counted from the
request. Faults (429 with Retry-After, 5xx, stalls, resets, truncated bodies, 401) come from
tests/support/faultproxy.py in front of it.

`max_prompt_chars`: a request whose messages hold more characters gets HTTP 400 with
llama.cpp's context-exceeded error. `port`: listen there (0: any free port), e.g. where a
client already failed to connect. Counters: `requests` (the bodies received, in order) and
`authorization` (each request's Authorization header)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.support.threaded_server import ThreadedServer

CONTEXT_EXCEEDED = {"error": {"code": 400, "type": "exceed_context_size_error",
                              "message": "the request exceeds the available context size, "
                                         "try increasing it"}}


def completion(body: dict[str, Any], number: int) -> dict[str, Any]:
    """The canned answer to a chat-completions request body."""
    messages = body.get("messages") or [{}]
    text = f"echo: {messages[-1].get('content') or ''}"
    prompt = sum(len(str(m.get("content") or "")) for m in messages)
    return {"id": f"chatcmpl-{number}", "object": "chat.completion", "created": 0,
            "model": body.get("model", ""),
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": len(text.split()),
                      "total_tokens": prompt + len(text.split())}}


class ScriptedServer(ThreadedServer):
    def __init__(self, max_prompt_chars: int | None = None, port: int = 0):
        self.max_prompt_chars = max_prompt_chars
        self.requests: list[dict[str, Any]] = []
        self.authorization: list[str] = []
        self._lock = threading.Lock()
        handler = type("Handler", (_Handler,), {"server_state": self})
        server = ThreadingHTTPServer(("127.0.0.1", port), handler)
        server.daemon_threads = True
        super().__init__(server)
        self.base_url = f"{self.url}/v1"

    def answer(self, body: dict[str, Any], authorization: str) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.requests.append(body)
            self.authorization.append(authorization)
            number = len(self.requests)
        chars = sum(len(str(m.get("content") or "")) for m in body.get("messages") or [])
        if self.max_prompt_chars is not None and chars > self.max_prompt_chars:
            return 400, CONTEXT_EXCEEDED
        return 200, completion(body, number)


class _Handler(BaseHTTPRequestHandler):
    server_state: ScriptedServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: tests assert on counters, not on logs."""

    def do_GET(self) -> None:
        if self.path.rstrip("/") == "/v1/models":
            self._reply(200, {"object": "list", "data": [{"id": "scripted", "object": "model"}]})
        else:
            self._reply(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:
        data = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path != "/v1/chat/completions":
            self._reply(404, {"error": {"message": f"no route {self.path}"}})
            return
        try:
            body = json.loads(data)
        except ValueError:
            self._reply(400, {"error": {"message": "request body is not JSON"}})
            return
        self._reply(*self.server_state.answer(body, self.headers.get("Authorization", "")))

    def _reply(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
