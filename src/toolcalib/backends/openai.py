"""Any OpenAI-compatible chat-completions server (vLLM, llama.cpp, hosted APIs).

Requests of a batch run concurrently (at most `max_concurrency` in flight) and are retried with
exponential backoff on 429/5xx, timeouts, connection errors and truncated or invalid bodies,
honouring `Retry-After`. A request that finally fails is an `InfrastructureError` in its slot; a
400 saying the context is exceeded is a `ContextOverflow`. The API key is read from the
environment variable named by `api_key_env` and appears in no identity, log or error text.

`tools_mode`: `native` sends the tools (the case's canonical JSON schemas as OpenAI functions;
name, description and parameters only) and reads structured `tool_calls`; `prompt` describes
them in the system prompt, without the members a benchmark marks as its own (`Request.extras`:
BFCL's `response`), and leaves calls in the text for the harness's decoder.
"""

from __future__ import annotations

import email.utils
import json
import os
import re
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any

import httpx

from toolcalib.backends.base import Answer, ContextOverflow, InfrastructureError, Request
from toolcalib.backends.hf.prompt import PROMPT_VERSION, openai_tool, template_messages
from toolcalib.backends.openai_options import OpenAIOptions
from toolcalib.config import ModelSpec, model_options
from toolcalib.jsonio import InputError
from toolcalib.records import Emission, Message, ToolCall

REQUEST_FORMAT = 2
"""Bump when the conversion of messages or tools changes: it is part of the identity (2: tools
arrive in canonical JSON schema, converted at normalization; BFCL's `any` is now "string", as
BFCL maps it, where format 1 left it unconstrained)."""
TOOL_SCHEMA = "canonical JSON schema, 'response' field dropped, " \
              "names outside [A-Za-z0-9_-] replaced by '_'"
RESERVED_PARAMS = {"model", "messages", "tools", "stream", "n"}
CONTEXT_EXCEEDED = re.compile(r"context[ _-]?(length|window|size)|maximum context|"
                              r"exceed_context_size|too many tokens", re.IGNORECASE)
EXCERPT = 300
MAX_BACKOFF_S = 60.0


def safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)[:64]


def convert_tool(doc: dict[str, Any]) -> dict[str, Any]:
    function = {"name": safe_name(doc["name"]), "description": doc.get("description", ""),
                "parameters": doc.get("parameters") or {"type": "object", "properties": {}}}
    return {"type": "function", "function": function}


def convert_messages(messages: list[Message], native: bool) -> list[dict[str, Any]]:
    """OpenAI messages. Call ids are `call_<turn>_<step>_<i>` from positions in the list
    (turn: user messages so far; step: assistant messages since); assistant content is
    always a string (llama.cpp answers HTTP 500 when it is missing)."""
    out: list[dict[str, Any]] = []
    turn, step, result = -1, -1, 0
    for message in messages:
        if message.role == "user":
            turn, step = turn + 1, -1
        if message.role == "assistant":
            step, result = step + 1, 0
            item: dict[str, Any] = {"role": "assistant", "content": message.content}
            if native and message.tool_calls:
                item["tool_calls"] = [
                    {"id": f"call_{max(turn, 0)}_{step}_{i}", "type": "function",
                     "function": {"name": safe_name(call.name),
                                  "arguments": json.dumps(call.arguments, ensure_ascii=False)}}
                    for i, call in enumerate(message.tool_calls)]
        elif message.role == "tool":
            item = {"role": "tool", "content": message.content,
                    "tool_call_id": f"call_{max(turn, 0)}_{max(step, 0)}_{result}"}
            if message.name:
                item["name"] = safe_name(message.name)
            result += 1
        else:
            item = {"role": message.role, "content": message.content}
        out.append(item)
    return out


def parse_choice(body: Any, names: dict[str, str], structured: bool) -> Emission:
    """The raw emission of a chat-completions body; KeyError/TypeError/ValueError if the body
    is not one. Arguments that are not a JSON object make the emission `malformed` (model
    behaviour), with the raw call as evidence."""
    choice = body["choices"][0]
    message = choice["message"]
    usage = body.get("usage") or {}
    emission = Emission(text=message.get("content") or "",
                        finish_reason=choice.get("finish_reason"),
                        input_tokens=usage.get("prompt_tokens"),
                        output_tokens=usage.get("completion_tokens"))
    raw_calls = message.get("tool_calls") or []
    if not structured or not raw_calls:
        return emission
    calls = []
    for raw in raw_calls:
        function = raw["function"]
        arguments = function.get("arguments")
        try:
            if isinstance(arguments, str):
                arguments = json.loads(arguments) if arguments.strip() else {}
            if not isinstance(arguments, dict):
                raise ValueError("arguments are not a JSON object")
        except ValueError as exc:
            return emission.replace(
                structured=True, parse="malformed",
                parse_error=f"{function.get('name')}: {exc}: {json.dumps(raw)[:EXCERPT]}")
        calls.append(ToolCall(name=names.get(function["name"], function["name"]),
                              arguments=arguments))
    return emission.replace(tool_calls=calls, structured=True)


def retry_after(response: httpx.Response) -> float | None:
    """`Retry-After` in seconds (a number or an HTTP date), None when absent or unreadable."""
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        try:
            moment = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        return max(0.0, moment.timestamp() - time.time())


class OpenAIBackend:
    cacheable = True

    def __init__(self, spec: ModelSpec):
        self.options = model_options(OpenAIOptions, spec)
        self.name = spec.name
        headers = {}
        self._secret = None
        if self.options.api_key_env:
            self._secret = os.environ.get(self.options.api_key_env)
            if not self._secret:
                raise InputError(f"model '{spec.name}': environment variable "
                                 f"{self.options.api_key_env} (api_key_env) is not set")
            headers["Authorization"] = f"Bearer {self._secret}"
        limit = self.options.max_concurrency
        self._client = httpx.Client(
            base_url=self.options.base_url, headers=headers,
            timeout=httpx.Timeout(self.options.timeout_s),
            limits=httpx.Limits(max_connections=limit, max_keepalive_connections=limit))

    def __repr__(self) -> str:
        return f"OpenAIBackend({self.name!r}, {self.options.base_url!r}, {self.options.model!r})"

    def identity(self) -> dict[str, Any]:
        o = self.options
        identity = {"backend": "openai", "base_url": o.base_url, "model": o.model,
                    "tools_mode": o.tools_mode, "request_format": REQUEST_FORMAT,
                    "sampling": {"temperature": o.temperature, "max_tokens": o.max_tokens,
                                 "seed": o.seed}}
        if o.tools_mode == "native":
            identity["tool_schema"] = TOOL_SCHEMA
        else:
            identity["prompt_version"] = PROMPT_VERSION
        if o.weights_sha256:
            identity["weights_sha256"] = o.weights_sha256
        return identity

    def body(self, request: Request) -> dict[str, Any]:
        """The chat-completions request body (request.params override the sampling options)."""
        reserved = RESERVED_PARAMS & request.params.keys()
        if reserved:
            raise ValueError(f"request params may not set {sorted(reserved)}")
        o = self.options
        native = o.tools_mode == "native"
        if native:
            messages = convert_messages(request.messages, native)
        else:  # the tools described in the system prompt, results as <tool_response> turns
            docs = [openai_tool(doc, request.extras) for doc in request.tools]
            messages = template_messages(request.messages, docs, "prompt")
        body: dict[str, Any] = {"model": o.model, "messages": messages,
                                "temperature": o.temperature, "max_tokens": o.max_tokens}
        if o.seed is not None:
            body["seed"] = o.seed
        if native and request.tools:
            body["tools"] = [convert_tool(doc) for doc in request.tools]
        body.update(request.params)
        return body

    def _scrub(self, text: str) -> str:
        return text.replace(self._secret, "***") if self._secret else text

    def _fail(self, cls: type[InfrastructureError], message: str) -> InfrastructureError:
        return cls(self._scrub(f"{self.options.base_url} ({self.options.model}): {message}"))

    def answer(self, request: Request) -> Answer:
        """One request, retried as configured; never raises for the server's failures."""
        body = self.body(request)
        names = {safe_name(doc["name"]): doc["name"] for doc in request.tools}
        structured = self.options.tools_mode == "native"
        attempts = self.options.max_retries + 1
        cause = ""
        for attempt in range(attempts):
            delay = min(MAX_BACKOFF_S, self.options.backoff_s * 2 ** attempt)
            try:
                response = self._client.post("chat/completions", json=body)
            except httpx.TimeoutException:
                cause = f"timeout after {self.options.timeout_s} s"
            except httpx.TransportError as exc:
                cause = f"connection error ({type(exc).__name__}: {exc})"
            else:
                status = response.status_code
                if status == 200:
                    try:
                        emission = parse_choice(response.json(), names, structured)
                    except (ValueError, KeyError, IndexError, TypeError):
                        cause = f"invalid response body: {response.text[:EXCERPT]}"
                    else:
                        return self._check_context(emission)
                elif status == 400 and CONTEXT_EXCEEDED.search(response.text):
                    return self._fail(ContextOverflow, f"context exceeded (HTTP 400): "
                                                       f"{response.text[:EXCERPT]}")
                elif status in (408, 409, 425, 429) or status >= 500:
                    cause = f"HTTP {status}: {response.text[:EXCERPT]}"
                    delay = retry_after(response) or delay
                else:
                    return self._fail(InfrastructureError,
                                      f"HTTP {status}: {response.text[:EXCERPT]}")
            if attempt + 1 < attempts:
                time.sleep(delay)
        return self._fail(InfrastructureError, f"gave up after {attempts} attempts; last: {cause}")

    def _check_context(self, emission: Emission) -> Answer:
        window = self.options.context_window
        used = (emission.input_tokens or 0) + (emission.output_tokens or 0)
        if window and emission.finish_reason == "length" and used >= window:
            return self._fail(ContextOverflow, f"context window of {window} tokens reached "
                                               f"({used} tokens used)")
        return emission

    def generate_batch(self, requests: list[Request],
                       on_answer: Callable[[int, Answer], None] | None = None) -> list[Answer]:
        """Answers in request order; `on_answer(index, answer)` is called in this thread as
        each request completes (in completion order)."""
        answers: dict[int, Answer] = {}
        if not requests:
            return []
        pool = ThreadPoolExecutor(max_workers=min(self.options.max_concurrency, len(requests)))
        try:
            pending: dict[Future[Answer], int] = {
                pool.submit(self.answer, request): i for i, request in enumerate(requests)}
            while pending:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    index = pending.pop(future)
                    answers[index] = answer = future.result()
                    if on_answer is not None:
                        on_answer(index, answer)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        return [answers[index] for index in range(len(requests))]

    def close(self) -> None:
        self._client.close()


def make(spec: ModelSpec) -> OpenAIBackend:
    return OpenAIBackend(spec)
