"""Write contexts of the published τ²-bench runs (`data/published/tau2/`) for the confirm
corpus (source kind `published`). Every results file is imported
(`benchmarks.tau2.published`, pairing `evidence`) and every write call of every imported
trajectory is a candidate (`write_contexts`); the labelled ones are a sample fixed before any
was read:

- **Sampling rule.** Stratified by file: from each file, a seeded uniform sample
  (`random.Random(SEED)`) of `QUOTA` of its contexts (all of them if it has fewer), kept in
  import order. No verdict is read.

The hand labels (`confirmed`, `reason` by id, written by reading each context) are data:
`tests/confirm/published_labels.jsonl`. Run by hand (not a test):

    python -m tests.confirm.published WHEEL OUT            # the sample, unlabelled
    python -m tests.confirm.published WHEEL CORPUS LABELS  # CORPUS's `published` rows rebuilt
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

from tests.confirm import merge
from tests.confirm.export import context_row
from toolcalib.benchmarks.tau2.published import import_run
from toolcalib.benchmarks.tau2.release import Tau2Release
from toolcalib.benchmarks.tau2.results import read_run
from toolcalib.benchmarks.tau2.writes import write_contexts

ROOT = Path(__file__).resolve().parents[2]
PUBLISHED = ROOT / "data" / "published" / "tau2"
QUOTA = 55
SEED = 16


def files() -> list[Path]:
    """The published results files, sorted by path."""
    return sorted(PUBLISHED.glob("*/*.json"))


def rows_of(release: Tau2Release, path: Path) -> list[dict[str, Any]]:
    """One unlabelled row per write call of every imported trajectory of one file."""
    name = path.relative_to(PUBLISHED).as_posix()
    model = path.parent.name
    run = read_run(path)
    cases, trajectories, _ = import_run(run, release, model, {"backend": "replay"},
                                        "content", name)
    by_id = {case.id: case for case in cases}
    rows = []
    for trajectory in trajectories:
        contexts = write_contexts(by_id[trajectory.case_id], trajectory)
        for number, (turn, context) in enumerate(contexts, start=1):
            rows.append(context_row(
                f"published/{model}/{trajectory.case_id}#write{number}",
                {"kind": "published", "file": name, "model": model, "agent": run.agent,
                 "user": run.user, "case_id": trajectory.case_id, "write": number,
                 "turn": turn},
                context))
    return rows


def sample(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One file's sampled rows (the sampling rule, module docstring)."""
    picked = random.Random(SEED).sample(range(len(rows)), min(QUOTA, len(rows)))
    return [rows[i] for i in sorted(picked)]


def main(wheel: str, out: str, labels: str | None = None) -> None:
    release = Tau2Release(wheel)
    rows = []
    for path in files():
        found = rows_of(release, path)
        rows += sample(found)
        print(f"{path.name}: {len(found)} write contexts", flush=True)
    print(f"sampled {len(rows)}", flush=True)
    if labels is None:
        _write(Path(out), rows)
        return
    corpus = Path(out)
    kept = [json.loads(line) for line in corpus.read_text("utf-8").splitlines()]
    kept = [row for row in kept if row["source"]["kind"] != "published"]
    fresh = corpus.with_name(corpus.name + ".published")
    _write(fresh, rows)
    merge.main(str(fresh), labels)
    labelled = [json.loads(line) for line in fresh.read_text("utf-8").splitlines()]
    fresh.unlink()
    _write(corpus, kept + labelled)


def _write(path: Path, rows: list[dict[str, Any]]) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main(*sys.argv[1:])
