"""Export the write contexts of the confirm corpus, unlabelled (`confirmed`, `reason`: null):
a sample of the reference trajectories (oracle, oracle_no_confirm), every write of the real
SmolLM2 agent trajectories and of the episodes with SmolLM2 as the user
(`tests.confirm.llm_user_run`). Run once by hand (not a test); the labels are written by
reading each context (`tests/confirm/labels.jsonl`), before any verdict runs on it, and merged
by `tests.confirm.merge`:

    python -m tests.confirm.export WHEEL OUT SOURCE=FOLDER [SOURCE=FOLDER ...]

SOURCE is `policy-oracle`, `policy-oracle_no_confirm` (sampled: SAMPLE each), `smollm2-135m`
or `smollm2-user` (all); each FOLDER holds `airline.jsonl` and/or `retail.jsonl`.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

from toolcalib.benchmarks import get_benchmark
from toolcalib.benchmarks.tau2.writes import write_contexts
from toolcalib.jsonio import builtins, read_records
from toolcalib.records import Trajectory

SAMPLE = {"policy-oracle": 36, "policy-oracle_no_confirm": 36}
SEED = 15
WINDOW = 10


def context_row(row_id: str, source: dict[str, Any], context: Any) -> dict[str, Any]:
    """An unlabelled corpus row of one write context (the judge's window of messages)."""
    return {"id": row_id, "source": source,
            "messages": [builtins(m, omit_defaults=True) for m in context.messages[-WINDOW:]],
            "call": builtins(context.call, omit_defaults=True),
            "agent_text": context.agent_text, "user_reply": context.user_reply,
            "exchange": list(context.exchange), "confirmed": None, "reason": None}


def user_of(identity: dict[str, Any]) -> str:
    """Who played the user: `reference`, or `<backend>:<model>` of the backend that did."""
    return identity.get("user") or f"{identity.get('backend')}:{identity.get('model')}"


def rows_of(wheel: str, source: str, folder: Path, sample: bool = True
            ) -> list[dict[str, Any]]:
    """Every write context of a source's trajectories (`sample`: a source in `SAMPLE` sampled)."""
    tau2 = get_benchmark("tau2")
    rows = []
    for domain in ("airline", "retail"):
        path = folder / f"{domain}.jsonl"
        if not path.exists():
            continue
        cases = {case.id: case for case in tau2.load_cases(wheel, domain)}
        for trajectory in read_records(path, Trajectory):
            contexts = write_contexts(cases[trajectory.case_id], trajectory)
            for number, (turn, context) in enumerate(contexts, start=1):
                rows.append(context_row(
                    f"{source}/{trajectory.case_id}#write{number}",
                    {"kind": "handwritten" if source == "handwritten" else (
                        "reference" if source.startswith("policy-") else "real"),
                     "trajectories": f"{source}/baseline/tau2/{domain}.jsonl",
                     "agent": trajectory.model,
                     "user": user_of(trajectory.user_identity or {}),
                     "case_id": trajectory.case_id, "write": number, "turn": turn},
                    context))
    if sample and source in SAMPLE and len(rows) > SAMPLE[source]:
        rows = sorted(random.Random(SEED).sample(rows, SAMPLE[source]), key=lambda r: r["id"])
    return rows


def main(wheel: str, out: str, *sources: str) -> None:
    rows = []
    for item in sources:
        source, folder = item.split("=", 1)
        found = rows_of(wheel, source, Path(folder))
        print(f"{source}: {len(found)} write contexts", flush=True)
        rows += found
    with open(out, "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main(*sys.argv[1:])
