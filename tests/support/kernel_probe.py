"""A short greedy generation through the transformers engine, as a model job computes it, printed
as one JSON line: the generated tokens, the engine's counts and the md5 of every layer's keys
and values (the bits of every position of every layer).

    python -m tests.support.kernel_probe MODEL_DIR OPTIONS_JSON

`tests/test_hf_kernels.py` runs it natively and under QEMU's emulated Intel and AMD CPUs with a
default-run model's options. Two prompts: a repeated pattern, whose continuation the engine
drafts by prompt lookup and verifies in one forward of more than 4 rows (oneDNN's GEMM), and a
plain sentence, decoded in 4-row forwards (MKL's weight-major product); both prefilled in chunks
of more than 4 rows (oneDNN); the attention in both of its paths; the model's real weights.
Sized for QEMU's TCG (about 0.1 GFLOP/s): a few dozen rows in all.
"""

from __future__ import annotations

import hashlib
import json
import sys

from toolcalib.backends import make_backend
from toolcalib.config import ModelSpec

PROMPTS = (("a b c d e f " * 4, 16, 6), ("The capital of France is", 16, 3))
"""Text, most prompt tokens and new tokens: the repeated pattern (a 5-token draft), the sentence
(two decode forwards)."""


def main() -> None:
    model_dir, options = sys.argv[1:3]
    spec = ModelSpec(name="probe", backend="transformers",
                     options={**json.loads(options), "model_dir": model_dir})
    backend = make_backend(spec)
    sequences = [backend.engine.generate([backend.tokenizer(text)["input_ids"][:most]], new)[0]
                 for text, most, new in PROMPTS]
    digest = hashlib.md5()  # noqa: S324 - a fingerprint of bits, not a security hash
    for seq in sequences:
        for tensor in seq.keys + seq.values:
            digest.update(tensor[:, :, :seq.length].contiguous().numpy().tobytes())
    stats = backend.engine.stats
    print(json.dumps({"generated": [seq.generated for seq in sequences],
                      "kv_md5": digest.hexdigest(), "decode_steps": stats.decode_steps,
                      "draft_forwards": stats.draft_forwards,
                      "drafted_tokens": stats.drafted_tokens,
                      "identity": backend.identity()}, sort_keys=True))


if __name__ == "__main__":
    main()
