"""Fill the `exchange` of every confirm corpus row (the agent's earlier texts of the write's
exchange, `classify.confirm.exchange_texts`) from the whole conversation, as
`writes.write_contexts` derives it; the labels and every other field are kept. Run by hand (not
a test):

    python -m tests.confirm.exchange WHEEL CORPUS [RESULTS]

A row's conversation is read from the run its source names, under RESULTS (default
`results`), as the workflow wrote it:

- `published` rows: `trajectories/<model>/baseline/tau2/<domain>.jsonl` with the imported
  cases `published/<model>/tau2/<domain>.cases.jsonl` (the run as the default run pairs it);
- `reference` and `real` rows: `trajectories/<source's trajectories>` with the release's cases;
- `handwritten` rows: their whole hand-written conversation (`tests.confirm.handwritten`).

A row whose run is not there (the SmolLM2-user episodes are not kept), or whose run gives
other messages, call, `agent_text` or `user_reply` (made again since the export), is read from
its own messages (the last 10), with the release's write tools. Prints how many rows came from where
and how many have an exchange.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from tests.confirm import handwritten
from tests.confirm.export import context_row
from toolcalib.benchmarks.tau2.plugin import Tau2
from toolcalib.benchmarks.tau2.writes import write_contexts
from toolcalib.evaluate import matching
from toolcalib.jsonio import read_records
from toolcalib.records import Message, ToolCall, Trajectory
from toolcalib.writes import exchange_texts

KEYS = ("id", "source", "messages", "call", "agent_text", "user_reply", "exchange",
        "confirmed", "reason")
"""A corpus row's fields, in the order they are written."""
DOMAINS = ("airline", "retail")


def run_rows(wheel: str, results: Path, rows: list[dict[str, Any]]
             ) -> dict[str, dict[str, Any]]:
    """Row id -> the unlabelled row rebuilt from its run's whole conversation, for every run
    the corpus's rows name that is under `results`."""
    found = {row["id"]: row for row in handwritten.rows()}
    tau2 = Tau2()
    runs: set[tuple[str, str, str]] = set()  # (id prefix, trajectories, cases or "")
    for row in rows:
        source = row["source"]
        if source["kind"] == "published":
            domain = source["case_id"].partition("_")[0]
            runs.add((f"published/{source['model']}/",
                      f"trajectories/{source['model']}/baseline/tau2/{domain}.jsonl",
                      f"published/{source['model']}/tau2/{domain}.cases.jsonl"))
        elif source.get("trajectories"):
            runs.add((f"{source['trajectories'].partition('/')[0]}/",
                      f"trajectories/{source['trajectories']}", ""))
    for prefix, trajectories, cases in sorted(runs):
        if not (results / trajectories).is_file():
            continue
        if cases:
            pairs = matching(str(results / cases), str(results / trajectories))
        else:
            domain = Path(trajectories).stem
            by_id = {case.id: case for case in tau2.load_cases(wheel, domain)}
            pairs = [(by_id[t.case_id], t) for t in read_records(results / trajectories,
                                                                 Trajectory)]
        for case, trajectory in pairs:
            for number, (_, context) in enumerate(write_contexts(case, trajectory), start=1):
                row_id = f"{prefix}{case.id}#write{number}"
                found[row_id] = context_row(row_id, {}, context)
    return found


def write_tools(wheel: str) -> set[str]:
    tau2 = Tau2()
    return {name for domain in DOMAINS for case in tau2.load_cases(wheel, domain)
            for name in case.environment.get("write_tools") or ()}


def from_messages(row: dict[str, Any], writes: set[str]) -> list[str]:
    if not row["agent_text"]:
        return []
    messages = [Message(role=m["role"], content=m.get("content", ""), name=m.get("name"),
                        tool_calls=[ToolCall(**c) for c in m.get("tool_calls", [])])
                for m in row["messages"]]
    return list(exchange_texts(messages, writes))


def main(wheel: str, corpus: str, results: str = "results") -> None:
    rows = [json.loads(line) for line in Path(corpus).read_text("utf-8").splitlines()]
    whole = run_rows(wheel, Path(results), rows)
    writes = write_tools(wheel)
    told: Counter[str] = Counter()
    for row in rows:
        kind = row["source"]["kind"]
        full = whole.get(row["id"])
        if full is not None and any(full[key] != row[key]
                                    for key in ("messages", "call", "agent_text",
                                                "user_reply")):
            told[f"{kind}: its run gives another context"] += 1
            full = None
        if full is not None:
            row["exchange"] = full["exchange"]
            told[f"{kind}: from the whole conversation"] += 1
        else:
            row["exchange"] = from_messages(row, writes)
            told[f"{kind}: from the row's messages"] += 1
        told["rows with an exchange"] += bool(row["exchange"])
    with open(corpus, "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps({key: row[key] for key in KEYS}, ensure_ascii=False) + "\n")
    for what, count in sorted(told.items()):
        print(f"{what}: {count}")


if __name__ == "__main__":
    main(*sys.argv[1:])
