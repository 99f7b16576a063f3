"""The context of the classifier corpus's `model` rows (real emissions of this pipeline's runs):
what the model saw at the emission's turn, built from the row's provenance and its case exactly
as the classify stage builds it (`classify.corpus.contexts`, `classify.trajectory.turn_contexts`:
the case as the row's variant presents it). Run by hand, with the case files the rows' runs
used (not a test: case files are pipeline outputs):

    python -m tests.support.corpus_contexts results/cases/bfcl/*.jsonl

Only `model` rows change (their `context` set, written last); every other line is kept byte
for byte. `hand` rows have no context (written by hand: nothing was sent); the published rows
get theirs from the published runs (`tests.support.published_turns`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import msgspec

from tests.support.published_turns import CORPUS
from toolcalib.classify.corpus import contexts
from toolcalib.classify.validation import CorpusRow
from toolcalib.jsonio import iter_records
from toolcalib.records import Case, Trajectory, TurnTrace


def with_contexts(corpus: str, cases: dict[tuple[str, str], Case]) -> str:
    """`corpus` with each `model` row's context set from its case (module docstring)."""
    lines = []
    for line in corpus.splitlines():
        row = json.loads(line)
        if row["source"] == "model":
            where = msgspec.convert(row, CorpusRow).provenance
            assert where is not None
            case = cases[(where.benchmark, where.case)]
            turn = TurnTrace(index=where.turn, steps=[], ended="no_call")
            trajectory = Trajectory(case_id=where.case, benchmark=where.benchmark,
                                    category=where.category, model=where.model,
                                    variant=where.variant, outcome="completed", turns=[turn],
                                    messages=[])
            seen = contexts(trajectory, case)[where.turn]
            row["context"] = {key: list(value)
                              for key, value in msgspec.structs.asdict(seen).items()}
            line = json.dumps(row, ensure_ascii=False)
        lines.append(line)
    return "".join(line + "\n" for line in lines)


def main(case_files: list[str]) -> None:
    cases = {(case.benchmark, case.id): case
             for path in case_files for case in iter_records(path, Case)}
    CORPUS.write_text(with_contexts(CORPUS.read_text("utf-8"), cases), "utf-8")


if __name__ == "__main__":
    main(sys.argv[1:] or [str(path) for path in sorted(Path("results/cases/bfcl").glob("*.jsonl"))])
