"""Throughput of the `openai` backend's bounded concurrency against a real server.

Run from the repository root (the first run installs/fetches the server and model exactly as
the slow tests do; later runs start in seconds):

    python bench/openai_throughput.py --requests 32 --concurrency 4 --latency 1.0

It serves SmolLM2-135M with llama.cpp on 127.0.0.1, puts `tests/support/faultproxy.py` in front of
it adding a fixed latency L to every request, measures the service time S at concurrency 1 (no added
latency), then sends R short requests with `max_concurrency` C through the latency proxy.
It prints the measured requests/s, the bound C / (L + S) and their ratio (target >= 0.9).
The llama.cpp server answers one request at a time, so keep C * S well below L + S.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.faultproxy import FaultProxy  # noqa: E402
from tests.support.servers import (  # noqa: E402
    LlamaServer,
    ensure_llama_cpp,
    fetch_model,
    make_request,
)
from toolcalib.backends.base import Request  # noqa: E402
from toolcalib.backends.openai import OpenAIBackend  # noqa: E402
from toolcalib.config import ModelSpec  # noqa: E402
from toolcalib.records import Emission  # noqa: E402

MODEL_CACHE = ROOT / ".pytest_cache" / "d" / "smollm2"
"""Shared with the test fixture `smollm2_gguf` (pytest's cache folder)."""


def make(base_url: str, concurrency: int, max_tokens: int) -> OpenAIBackend:
    options = {"base_url": base_url, "model": "smollm2", "tools_mode": "prompt",
               "max_concurrency": concurrency, "max_tokens": max_tokens, "max_retries": 0}
    return OpenAIBackend(ModelSpec(name="smollm2", backend="openai", options=options))


def timed(backend: OpenAIBackend, requests: list[Request]) -> float:
    start = time.monotonic()
    answers = backend.generate_batch(requests)
    elapsed = time.monotonic() - start
    failed = [a for a in answers if not isinstance(a, Emission)]
    if failed:
        raise SystemExit(f"{len(failed)} requests failed, first: {failed[0]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=32)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--max-tokens", type=int, default=1)
    args = parser.parse_args()

    ensure_llama_cpp()
    MODEL_CACHE.mkdir(parents=True, exist_ok=True)
    model = fetch_model(MODEL_CACHE)
    requests = [make_request(f"Say the number {i}.") for i in range(args.requests)]
    with tempfile.TemporaryDirectory() as tmp:
        server = LlamaServer(model, Path(tmp) / "server.log")
        try:
            with FaultProxy(server.url) as direct, \
                    FaultProxy(server.url, latency_s=args.latency) as slow:
                serial = make(f"{direct.url}/v1", 1, args.max_tokens)
                timed(serial, requests[:2])
                service = statistics.median(timed(serial, [r]) for r in requests[:8])
                elapsed = timed(make(f"{slow.url}/v1", args.concurrency, args.max_tokens),
                                requests)
                in_flight = slow.max_in_flight
        finally:
            server.stop()
    rate = args.requests / elapsed
    bound = args.concurrency / (args.latency + service)
    print(f"R={args.requests} C={args.concurrency} L={args.latency:.2f}s "
          f"S={service:.3f}s (median at concurrency 1), max in flight {in_flight}")
    print(f"measured {rate:.2f} req/s; bound C/(L+S) {bound:.2f} req/s; "
          f"ratio {rate / bound:.3f} (target >= 0.9)")


if __name__ == "__main__":
    main()
