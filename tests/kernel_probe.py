"""A short greedy generation through the transformers engine, as a model job computes it, printed
as one JSON line: the generated tokens, the engine's counts and the md5 of every layer's keys
and values (the bits of every position of every layer).

    python -m tests.kernel_probe MODEL_DIR OPTIONS_JSON PROMPT_TOKENS NEW_TOKENS

`tests/test_hf_kernels.py` runs it natively and under QEMU's emulated Intel and AMD CPUs with a
default-run model's options: one prefill chunk (oneDNN's GEMM), 4-row decode forwards (MKL's
weight-major product) and draft verification (oneDNN again, a prompt-lookup draft of the
repeated prompt), the attention in both of its paths, on the model's real weights.
"""

from __future__ import annotations

import hashlib
import json
import sys

from toolcalib.backends import make_backend
from toolcalib.config import ModelSpec

WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu"
"""Repeated in the prompt, so the model's continuation repeats it and drafts are verified."""


def main() -> None:
    model_dir, options, prompt_tokens, new_tokens = sys.argv[1:5]
    spec = ModelSpec(name="probe", backend="transformers",
                     options={**json.loads(options), "model_dir": model_dir})
    backend = make_backend(spec)
    ids = backend.tokenizer(" ".join([WORDS] * 8))["input_ids"][:int(prompt_tokens)]
    seq = backend.engine.generate([ids], int(new_tokens))[0]
    digest = hashlib.md5()  # noqa: S324 - a fingerprint of bits, not a security hash
    for tensor in seq.keys + seq.values:
        digest.update(tensor[:, :, :seq.length].contiguous().numpy().tobytes())
    stats = backend.engine.stats
    print(json.dumps({"generated": seq.generated, "length": seq.length,
                      "kv_md5": digest.hexdigest(), "decode_steps": stats.decode_steps,
                      "draft_forwards": stats.draft_forwards,
                      "identity": backend.identity()}, sort_keys=True))


if __name__ == "__main__":
    main()
