"""Throughput of the `transformers` backend on real BFCL cases (not a test).

Three figures from one run:
1. ours: the backend (steps of all conversations batched, prefix KV reused) via `run_cases`;
2. plain: the same conversations replayed step by step, each step one `model.generate` over the
   whole conversation (stock transformers, same model and dtype, same number of new tokens);
3. limit: the model's own forward passes over what must be computed at least once: every
   distinct prompt prefix once (each prompt's tokens beyond its longest common prefix with any
   earlier prompt, on top of that prefix's cache, with the engine's forward but no chunk
   alignment), plus every generated token once (timed as our batched decode forwards and
   draft forwards: a draft verifies several tokens in one forward, see `hf.engine`).
The machine's load average is printed with each figure: other processes skew them.

    python bench/hf_throughput.py --model smollm2-135m --cases 4 --max-new-tokens 64
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
from transformers import AutoModelForCausalLM  # noqa: E402

from toolcalib.backends.base import Request  # noqa: E402
from toolcalib.backends.hf.backend import Options, TransformersBackend  # noqa: E402
from toolcalib.backends.hf.engine import Engine, Sequence, common_prefix  # noqa: E402
from toolcalib.backends.hf.prompt import render  # noqa: E402
from toolcalib.benchmarks.bfcl.gold import case_environment  # noqa: E402
from toolcalib.benchmarks.bfcl.plugin import load_cases  # noqa: E402
from toolcalib.benchmarks.bfcl.release import BfclRelease  # noqa: E402
from toolcalib.generate import run_cases  # noqa: E402
from toolcalib.models import SOURCES, fetch_model, read_manifest  # noqa: E402
from toolcalib.records import Emission  # noqa: E402
from toolcalib.variants import get_variant  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
BFCL = "bfcl-eval==2026.3.23"
MODES = {"smollm2-135m": "prompt", "qwen2.5-coder-0.5b": "native"}


class Recorder:
    """Passes requests to the backend and keeps them with their answers."""

    def __init__(self, backend: TransformersBackend):
        self.backend, self.name, self.cacheable = backend, backend.name, False
        self.answered: list[tuple[Request, Emission]] = []

    def identity(self) -> dict:
        return self.backend.identity()

    def generate_batch(self, requests: list[Request]) -> list:
        answers = self.backend.generate_batch(requests)
        self.answered += [(r, a) for r, a in zip(requests, answers, strict=True)
                          if isinstance(a, Emission)]
        return answers

    def steps(self) -> list[tuple[str, list[int], int]]:
        """(case id, prompt tokens, new tokens) per answered step, in the order answered."""
        o = self.backend.options
        return [(r.case.id, render(self.backend.tokenizer, r.messages, r.tools, o.tools_mode,
                                   o.keep_response), a.output_tokens) for r, a in self.answered]


def plain_seconds(model, steps: list[tuple[str, list[int], int]]) -> float:
    """Each step alone: `generate` over the whole prompt, as many new tokens as ours made."""
    started = time.perf_counter()
    for _, tokens, new in sorted(steps, key=lambda s: s[0]):  # conversation after conversation
        model.generate(torch.tensor([tokens]), attention_mask=torch.ones(1, len(tokens)),
                       max_new_tokens=new, min_new_tokens=new, do_sample=False)
    return time.perf_counter() - started


def distinct_prefill_seconds(engine: Engine, prompts: list[list[int]]) -> tuple[float, int]:
    """Forward time over each prompt's tokens beyond its longest common prefix with any
    earlier prompt (that prefix's KV copied in, not timed), with our engine's own forward
    (same attention and cuts, the first chunk starting wherever the shared prefix ends); and
    the number of such tokens."""
    kept: list[Sequence] = []
    seconds, distinct = 0.0, 0
    for tokens in prompts:
        prompt = torch.tensor(tokens)
        seq = engine.sequence(prompt, len(prompt))
        shared, best = max(((common_prefix(k.prompt, prompt), k) for k in kept),
                           default=(0, None), key=lambda pair: pair[0])
        if best is not None:
            seq.copy_prefix(best, min(shared, len(prompt) - 1))
        distinct += len(prompt) - seq.length
        started = time.perf_counter()
        engine.extend(seq)
        seconds += time.perf_counter() - started
        kept = [k for k in kept if common_prefix(k.prompt, prompt) < len(k.prompt)] + [seq]
    return seconds, distinct


def load() -> str:
    return f"load {os.getloadavg()[0]:.1f}"


def bfcl_wheel(cache: Path) -> Path:
    local = sorted((ROOT / "results" / "raw" / "bfcl").glob("bfcl_eval-*.whl"))
    if local:
        return local[0]
    cache.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                    "--quiet", "-d", str(cache), BFCL], check=True)
    return next(cache.glob("bfcl_eval-*.whl"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=sorted(SOURCES), default="smollm2-135m")
    parser.add_argument("--models-dir", type=Path, default=ROOT / ".toolcalib" / "models")
    parser.add_argument("--category", default="multi_turn_base")
    parser.add_argument("--cases", type=int, default=4)
    parser.add_argument("--same-tools", action="store_true",
                        help="only cases with the first case's tools (BFCL involved classes), "
                             "as most cases of a category run share their tools with others")
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--prefill-chunk", type=int, default=256)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--dtype", choices=["bfloat16", "float32"], default=None,
                        help="compute dtype (default: the converted folder's)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    folder = args.models_dir / args.model
    if not (folder / "toolcalib-model.json").is_file():
        started = time.perf_counter()
        fetch_model(SOURCES[args.model], folder)
        print(f"fetched and converted {args.model} in {time.perf_counter() - started:.0f} s")
    release = BfclRelease(bfcl_wheel(ROOT / ".toolcalib" / "bench"))
    cases = load_cases(release, args.category)
    if args.same_tools:
        cases = [c for c in cases
                 if c.environment["involved_classes"] == cases[0].environment["involved_classes"]]
    cases = cases[:args.cases]
    started = time.perf_counter()
    backend = TransformersBackend(args.model, Options(
        model_dir=str(folder), tools_mode=MODES[args.model], max_new_tokens=args.max_new_tokens,
        prefill_chunk=args.prefill_chunk, decode_rows=args.cases, threads=args.threads,
        dtype=args.dtype))
    print(f"loaded {args.model} ({backend.dtype}; {read_manifest(folder).dtype} weights, CPU "
          f"{torch.backends.cpu.get_cpu_capability()}) in "
          f"{time.perf_counter() - started:.1f} s; {len(cases)} {args.category} cases "
          f"({', '.join(c.id for c in cases)}), "
          f"max_new_tokens {args.max_new_tokens}, {args.threads} threads")

    recorder = Recorder(backend)
    started = time.perf_counter()
    trajectories = list(run_cases(cases, recorder, get_variant("baseline"),
                                  lambda c: case_environment(c, release), batch_size=len(cases)))
    ours = time.perf_counter() - started
    stats = backend.engine.stats
    steps = recorder.steps()
    print(f"ours:  {ours:7.1f} s  {3600 * len(cases) / ours:7.1f} cases/h  {load()}  "
          f"({len(steps)} steps, outcomes {[t.outcome for t in trajectories]})")
    print(f"       {backend.work_summary()}")

    plain_model = AutoModelForCausalLM.from_pretrained(
        folder, dtype=backend.model.dtype, local_files_only=True).eval()
    plain = plain_seconds(plain_model, steps)
    print(f"plain: {plain:7.1f} s  {3600 * len(cases) / plain:7.1f} cases/h  {load()}  "
          f"-> ours is {plain / ours:.2f}x plain (target >= 4x)")

    prefill, distinct = distinct_prefill_seconds(backend.engine, [t for _, t, _ in steps])
    generation = stats.decode_seconds + stats.draft_seconds
    limit = prefill + generation
    print(f"limit: {limit:7.1f} s  {3600 * len(cases) / limit:7.1f} cases/h  {load()}  "
          f"({distinct} distinct "
          f"prompt tokens in {prefill:.1f} s + decode and draft forwards {generation:.1f} s) "
          f"-> ours reaches {100 * limit / ours:.0f}% of it (target >= 70%)")
    overhead = ours - stats.prefill_seconds - generation
    print(f"       ours - limit = {ours - limit:.1f} s: prefill beyond distinct tokens "
          f"{stats.prefill_seconds - prefill:.1f} s, outside model forwards {overhead:.1f} s")


if __name__ == "__main__":
    main()
