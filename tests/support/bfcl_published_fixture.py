"""Rebuilds tests/data/bfcl_published/ from the shared published BFCL runs (`python -m
tests.support.bfcl_published_fixture SHARED_BFCL_RUNS`; the tests read the committed copy only).

Trimmed copies keep each defect the shared README lists: replies whose text the FC handler
dropped (`[]` with output tokens), `Error during inference` records, an absent category
(`multi_turn_long_context`), score files listing failures only, and the panel's summary-only
score files. Each trimmed score file's summary line is recomputed over the lines kept (the
failed lines kept are exactly the failures among them), so the summary and lines agree as in
the published files; the panel's summary-only files keep BFCL's rule for irrelevance
(correct = no call)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

OUT = Path(__file__).parents[1] / "data" / "bfcl_published"
VLLM = {
    "multi_turn/BFCL_v4_multi_turn_base": ["multi_turn_base_0", "multi_turn_base_3",
                                           "multi_turn_base_10"],
    "multi_turn/BFCL_v4_multi_turn_miss_func": ["multi_turn_miss_func_0",
                                                "multi_turn_miss_func_3",
                                                "multi_turn_miss_func_4"],
    "multi_turn/BFCL_v4_multi_turn_miss_param": ["multi_turn_miss_param_0",
                                                 "multi_turn_miss_param_7",
                                                 "multi_turn_miss_param_10"],
    "non_live/BFCL_v4_irrelevance": ["irrelevance_0", "irrelevance_16"],
    "live/BFCL_v4_live_irrelevance": ["live_irrelevance_0-0-0", "live_irrelevance_1-0-1"],
}
PANEL = {"gemini-2.5-flash-FC": ["irrelevance_0", "irrelevance_27", "irrelevance_60"],
         "gpt-5.2-2025-12-11": ["irrelevance_0", "irrelevance_1"],
         "claude-opus-4-5-20251101-FC": ["irrelevance_0", "irrelevance_239"],
         "BitAgent_BitAgent-Bounty-8B": ["irrelevance_0", "irrelevance_27"]}


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def _write(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), "utf-8")


def _summary(kept: int, failed: int) -> dict:
    return {"accuracy": (kept - failed) / kept, "correct_count": kept - failed,
            "total_count": kept}


def vllm(shared: Path, run: str) -> None:
    model = "openai_gpt-oss-20b"
    for stem, ids in VLLM.items():
        result = shared / "bfcl-vllm-results" / run / "result" / model / f"{stem}_result.json"
        score = shared / "bfcl-vllm-results" / run / "score" / model / f"{stem}_score.json"
        rows = [row for row in _lines(result) if row["id"] in ids]
        failed = [row for row in _lines(score)[1:] if row["id"] in ids]
        _write(OUT / "vllm" / run / "result" / model / f"{stem}_result.json", rows)
        _write(OUT / "vllm" / run / "score" / model / f"{stem}_score.json",
               [_summary(len(rows), len(failed)), *failed])


def panel(shared: Path) -> None:
    root = shared / "bfcl-result-2025-12-16"
    for model, ids in PANEL.items():
        stem = "non_live/BFCL_v4_irrelevance"
        rows = [row for row in _lines(root / "result" / model / f"{stem}_result.json")
                if row["id"] in ids]
        _write(OUT / "panel" / "result" / model / f"{stem}_result.json", rows)
        if (root / "score" / model / f"{stem}_score.json").exists():
            calls = sum(isinstance(r["result"], list) and any(isinstance(i, dict)
                                                              for i in r["result"])
                        or isinstance(r["result"], str) and r["result"].startswith("[")
                        and r["result"] != "[]" for r in rows)
            _write(OUT / "panel" / "score" / model / f"{stem}_score.json",
                   [_summary(len(rows), calls)])


if __name__ == "__main__":
    shared = Path(sys.argv[1])
    vllm(shared, "2025-11-12-main")
    panel(shared)
