"""The model stage's conversion with the GGUF read once against transformers' own repeated
reads, side by side in one process, on one fetched and verified GGUF.

    python bench/model_conversion.py [--model smollm2-135m|qwen2.5-coder-0.5b] [--repeat 1]

The GGUF is fetched and verified once and transformers imported (untimed); then, per repeat,
`models.convert` runs with `gguf_read_once` replaced by a no-op (BASE: transformers parses the
GGUF's metadata for the tokenizer and again for the model's config, and builds gguf's
tensor-name map per module) and as the stage runs it (OURS). Prints each conversion's wall and
CPU seconds, the ratio, and whether both folders hold the same bytes (DVC's directory md5),
which they must.
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import tempfile
import time
from pathlib import Path

import yaml

from toolcalib import models
from toolcalib.jsonio import from_data
from toolcalib.provenance.lock import md5_dir

ROOT = Path(__file__).resolve().parents[1]


def source_of(name: str) -> models.ModelSource:
    config = yaml.safe_load((ROOT / "config/config.yaml").read_text(encoding="utf-8"))
    entry = next(m for m in config["models"] if m["name"] == name)
    return from_data(entry["source"], models.ModelSource, "source", strict=False)


def timed(gguf: Path, folder: Path, source: models.ModelSource) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    models.convert(gguf, folder, source)
    return time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    source = source_of(args.model)
    scratch = Path(tempfile.mkdtemp(prefix="model-conversion-"))
    try:
        gguf = models.assemble_gguf(source, scratch)
        import transformers  # imports paid before either timing (the first would pay them)

        transformers.AutoModelForCausalLM, transformers.AutoTokenizer  # noqa: B018
        read_once = models.gguf_read_once
        for run in range(args.repeat):
            models.gguf_read_once = contextlib.nullcontext  # type: ignore[assignment]
            base = timed(gguf, scratch / f"base{run}", source)
            models.gguf_read_once = read_once
            ours = timed(gguf, scratch / f"ours{run}", source)
            same = md5_dir(scratch / f"base{run}") == md5_dir(scratch / f"ours{run}")
            print(f"{args.model} run {run}: BASE {base[0]:.1f} s wall {base[1]:.1f} s CPU, "
                  f"OURS {ours[0]:.1f} s wall {ours[1]:.1f} s CPU, ratio (CPU) "
                  f"{base[1] / ours[1]:.2f}x, same bytes: {same}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
