"""The judge's confirm verdict on the confirm corpus with a real local model, once, by hand:
a llama.cpp server (tests/servers.py) serving a GGUF with its own chat template, asked through
the `openai` backend by the `validate-confirm` stage (rule and judge side by side; answers in a
response store, so a rerun asks nothing). Prints the stage's wall time. With SAMPLE, on that
many rows only (a seeded sample of each source kind in proportion, written to OUT_DIR), when the
whole corpus costs more CPU time than there is.

    python -m tests.confirm.judge_run GGUF MODEL_NAME STORE OUT_DIR [SAMPLE]
"""

from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path

from tests.servers import LlamaServer
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


def main(gguf: str, model: str, store: str, out: str, size: str | None = None) -> None:
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    corpus = CORPUS if size is None else sample(CORPUS, int(size), folder / "sample.jsonl")
    server = LlamaServer(Path(gguf), folder / "server.log")
    try:
        spec = json.dumps({"name": model, "backend": "openai", "options": {
            "base_url": server.base_url, "model": model, "max_tokens": 3, "temperature": 0.0,
            "seed": 1, "timeout_s": 600, "backoff_s": 0.05}})
        started = time.monotonic()
        validate_confirm.run(str(corpus), ["default", "judge"], out, judge_spec=spec,
                             store=store)
        print(f"validate-confirm with {model}: {time.monotonic() - started:.0f} s", flush=True)
    finally:
        server.stop()


if __name__ == "__main__":
    main(*sys.argv[1:])
