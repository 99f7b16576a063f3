"""`kernels: native` vs `portable` (and float vs int8 linear layers): the same `toolcalib generate`
job, one process per setting, run one after another on the same machine.

    python bench/kernel_families.py [--model qwen2.5-coder-0.5b] [--category irrelevance]
        [--limit 2] [--models-dir .pytest_cache/d/toolcalib-models] [--workdir DIR]
        [--settings float-native float-portable]

Prints each setting's wall time (start-up included) and the engine's prefill tok/s and decode
s/step from its log, and the ratio of wall times to the first setting (by default float,
native kernels).
`portable` gives the same bytes on every AVX2 machine (tests/test_hf_kernels.py checks it under
QEMU), so its figures are what portable bits cost on this machine.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from hf_throughput import MODES, bfcl_wheel, load  # noqa: E402
from llamacpp_engine import model_folder  # noqa: E402

from toolcalib.backends.hf.kernels import PORTABLE  # noqa: E402
from toolcalib.benchmarks.bfcl.plugin import load_cases  # noqa: E402
from toolcalib.benchmarks.bfcl.release import BfclRelease  # noqa: E402
from toolcalib.jsonio import write_jsonl  # noqa: E402

SETTINGS = [("float", "native"), ("int8", "native"), ("float", "portable"), ("int8", "portable")]
SUMMARY = re.compile(r"\((\d+) tok/s\);.* \(([\d.]+) s/step\)")


def run(model: str, model_dir: Path, wheel: Path, cases: Path, work: Path, linear: str,
        kernels: str) -> tuple[float, str]:
    """One job in a fresh process with an empty store: wall seconds and the engine's summary."""
    out = work / f"{linear}-{kernels}"
    out.mkdir()
    spec = {"backend": "transformers", "name": model, "batch_size": 4,
            "options": {"model_dir": str(model_dir), "tools_mode": MODES[model],
                        "dtype": "float32", "decode_rows": 4, "max_new_tokens": 96,
                        "linear": linear, "kernels": kernels}}
    env = {k: v for k, v in os.environ.items() if k not in PORTABLE}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "toolcalib.cli", "generate", "--model-spec",
                           json.dumps(spec), "--variant", "baseline", "--benchmark", "bfcl",
                           "--cases", str(cases), "--source", str(wheel),
                           "--store", str(out / "store"), "--out", str(out / "out.jsonl")],
                          env=env, capture_output=True, text=True, check=True)
    seconds = time.perf_counter() - start
    found = SUMMARY.search(done.stderr)
    summary = f"prefill {found[1]} tok/s, decode {found[2]} s/step" if found else "-"
    return seconds, summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="qwen2.5-coder-0.5b", choices=sorted(MODES))
    parser.add_argument("--category", default="irrelevance")
    parser.add_argument("--limit", type=int, default=2)
    parser.add_argument("--models-dir", type=Path,
                        default=Path(".pytest_cache/d/toolcalib-models"))
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--settings", nargs="+", metavar="LINEAR-KERNELS",
                        default=[f"{linear}-{kernels}" for linear, kernels in SETTINGS],
                        help="which settings to run, in order (int8 is slow on AVX2 without "
                             "VNNI)")
    args = parser.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="kernels-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    model_dir = model_folder(args.model, args.models_dir / args.model, keep_gguf=False)
    wheel = bfcl_wheel(work / "wheel")
    cases = work / "cases.jsonl"
    write_jsonl(cases, load_cases(BfclRelease(wheel), args.category)[:args.limit])
    print(f"{args.model}, {args.category} x {args.limit}, one thread, {load()}")
    base = None
    for linear, kernels in (setting.split("-") for setting in args.settings):
        seconds, summary = run(args.model, model_dir, wheel, cases, work, linear, kernels)
        base = base or seconds
        print(f"  {linear:5} {kernels:8} {seconds:7.1f} s  ({base / seconds:.2f}x)  {summary}")
    print(f"(ratio: the first setting's wall time over each one's; {load()})")


if __name__ == "__main__":
    main()
