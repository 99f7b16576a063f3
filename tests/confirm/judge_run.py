"""The judge's confirm verdict on the confirm corpus with a real local model, once, by hand: a
llama.cpp server (tests/support/servers.py) serving a GGUF with its own chat template, asked through
the `openai` backend by the `validate-confirm` stage (rule and judge side by side; answers in a
response store, so a rerun asks nothing). Prints the stage's wall time and writes the judge's
spec to OUT_DIR/judge_spec.json (what `tests.confirm.stored_verdicts` needs). With --sample, on
that many rows only (a seeded sample of each source kind in proportion, written to OUT_DIR),
when the whole corpus costs more CPU time than there is. The server listens on --port and the
spec names the GGUF's sha256, so a stopped run resumes from the store on the same port.

    python -m tests.confirm.judge_run GGUF MODEL_NAME STORE OUT_DIR [--sample N]
        [--threads N] [--port N]
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

from tests.support.servers import LlamaServer
from toolcalib.jsonio import sha256_file
from toolcalib.stages import validate_confirm

CORPUS = Path(__file__).resolve().parents[1] / "data" / "confirm_corpus.jsonl"
SEED = 15


def sample(corpus: Path, size: int, out: Path) -> Path:
    lines = corpus.read_text("utf-8").splitlines()
    kinds: dict[str, list[str]] = {}
    for line in lines:
        kinds.setdefault(json.loads(line)["source"]["kind"], []).append(line)
    chosen = set()
    for _, rows in sorted(kinds.items()):
        chosen |= set(random.Random(SEED).sample(rows, round(size * len(rows) / len(lines))))
    out.write_text("".join(line + "\n" for line in lines if line in chosen), "utf-8")
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    for name in ("gguf", "model", "store", "out"):
        parser.add_argument(name)
    parser.add_argument("--sample", type=int)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args()
    folder = Path(args.out)
    folder.mkdir(parents=True, exist_ok=True)
    corpus = CORPUS if args.sample is None else sample(CORPUS, args.sample,
                                                       folder / "sample.jsonl")
    server = LlamaServer(Path(args.gguf), folder / "server.log", n_threads=args.threads,
                         port=args.port)
    try:
        spec = json.dumps({"name": args.model, "backend": "openai", "options": {
            "base_url": server.base_url, "model": args.model, "max_tokens": 3,
            "temperature": 0.0, "seed": 1, "timeout_s": 600, "backoff_s": 0.05,
            "weights_sha256": sha256_file(Path(args.gguf))}})
        (folder / "judge_spec.json").write_text(spec + "\n", "utf-8")
        started = time.monotonic()
        validate_confirm.run(str(corpus), ["default", "judge"], args.out, judge_spec=spec,
                             store=args.store)
        print(f"validate-confirm with {args.model} ({args.threads} threads): "
              f"{time.monotonic() - started:.0f} s", flush=True)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
