"""The published-turns corpus: agent turns of the published τ²-bench runs
(`data/published/tau2/`), sampled by the selection rule `published-turns-v1`
(`docs/history.md`, "Published-run agent turns"), labelled by hand and merged into the
classifier corpus as `source: published`; and the held-out draws `published-heldout-v1`, `-v2`
and `-v3`, labelled blind, as `source: published-heldout`, `published-heldout-2` and
`published-heldout-3`. Run by hand
(not a test):

    python -m tests.support.published_turns sample   # published_turns.jsonl and the second pass
    python -m tests.support.published_turns merge    # the classifier corpus's published rows
    python -m tests.support.published_turns heldout  # held-out draws `published-heldout-v1`..`-v3`

Each corpus row carries the context the classify stage gives the turn (`classify.base.Context`):
the simulated user's whole message that opened it and the names of the tools τ² offers in its
domain (the pinned release's, `merge` reads the release's wheel where the pipeline downloads
it). `tests/test_published_turns.py` checks that rebuilding gives the committed bytes.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.confirm.published import PUBLISHED, files
from tests.support.corpus_merge import merged
from tests.support.shipped import check_sha256, shipped_sha256
from toolcalib.benchmarks.tau2.environment import tool_schemas
from toolcalib.benchmarks.tau2.loop import GREETING
from toolcalib.benchmarks.tau2.release import WHEEL_FILE, Tau2Release
from toolcalib.benchmarks.tau2.results import read_run
from toolcalib.benchmarks.tau2.turns import simulation_turns

DATA = Path(__file__).resolve().parents[1] / "data"
TURNS = DATA / "published_turns.jsonl"
LABELS = DATA / "published_turn_labels.jsonl"
SECOND_PASS = DATA / "published_turns_second_pass.jsonl"
CORPUS = DATA / "classifier_corpus.jsonl"
WHEEL = Path(__file__).resolve().parents[2] / "results" / "raw" / "tau2" / WHEEL_FILE
"""The pinned τ² release where the pipeline downloads it (`merge` reads its tool names)."""
SOURCE = "published"
CALL_QUOTA = 15
TEXT_QUOTA = 17
SECOND_PASS_SIZE = 100
HELDOUT_SIZE = 200
CONTEXT_CHARS = 400
HELDOUT_DRAWS: dict[int, tuple[Path, Path, str]] = {
    1: (DATA / "published_heldout_turns.jsonl", DATA / "published_heldout_labels.jsonl",
        "published-heldout"),
    2: (DATA / "published_heldout2_turns.jsonl", DATA / "published_heldout2_labels.jsonl",
        "published-heldout-2"),
    3: (DATA / "published_heldout3_turns.jsonl", DATA / "published_heldout3_labels.jsonl",
        "published-heldout-3"),
}
"""Held-out draw -> its turns, its labels and its corpus source."""
NEGATION = re.compile(r"\b(?:can't|can’t|cannot|unable|not able|not eligible|not allowed|"
                      r"not permitted|unfortunately|don't have|don’t have|do not have|"
                      r"not possible|won't be able|won’t be able)\b", re.IGNORECASE)
STRATA_OF: dict[str, tuple[str, ...]] = {
    "refuse": ("first-neg", "middle-neg", "last-neg"),
    "ask": ("first-plain", "first-neg"),
    "confirm": ("middle-plain", "middle-neg"),
    "other": ("last-plain", "last-neg"),
    "tool_call": ("call",),
}
"""The strata a short class draws its further rounds from (the shortfall rule)."""
ROUNDS: dict[str, int] = {"confirm": 13}
"""Further rounds drawn per short class after labelling the first draw (the shortfall rule):
`confirm` had 30 of 50 after the first draw and reached 52 after 13 rounds."""


@dataclass(frozen=True)
class Turn:
    """One agent message of a published simulation, with its stratum."""

    id: str
    file: str
    sha256: str
    text: str
    calls: tuple[str, ...]
    parse: str
    stratum: str
    context: str
    user: str = field(default="", compare=False)
    """The user's whole message (`context` is its first `CONTEXT_CHARS` characters)."""
    domain: str = field(default="", compare=False)

    def order(self) -> tuple[str, str]:
        """The turn's place in its stratum: the sha256 of its id, then the id."""
        return _sha(self.id), self.id

    def row(self) -> dict[str, Any]:
        return {"id": self.id, "text": self.text, "structured_calls": bool(self.calls),
                "calls": list(self.calls), "parse": self.parse, "file": self.file,
                "sha256": self.sha256, "stratum": self.stratum, "context": self.context}


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def turns_of(path: Path, sha256: str) -> list[Turn]:
    """Every agent turn of one results file but τ²'s greeting, in file order."""
    name = path.relative_to(PUBLISHED).as_posix()
    run = read_run(path)
    check_sha256(name, run.sha256, sha256)
    found = []
    for number, sim in enumerate(run.simulations):
        traces, _, _ = simulation_turns(sim, f"{name}: simulation {number}", None)
        steps = [(trace.user or "", step.emission) for trace in traces for step in trace.steps]
        indices = [i for i, m in enumerate(sim["messages"]) if m.get("role") == "assistant"]
        first = sim["messages"][indices[0]] if indices else {}
        if not first.get("tool_calls") and first.get("content") == GREETING:
            indices = indices[1:]
        if len(indices) != len(steps):
            raise SystemExit(f"{name}: simulation {number}: {len(indices)} agent messages, "
                             f"{len(steps)} emissions")
        texts = [k for k, (_, emission) in enumerate(steps) if not emission.tool_calls]
        for k, (index, (user, emission)) in enumerate(zip(indices, steps, strict=True)):
            if emission.tool_calls:
                stratum = "call"
            else:
                position = ("first" if k == texts[0] else "last" if k == texts[-1]
                            else "middle")
                stratum = f"{position}-{'neg' if NEGATION.search(emission.text) else 'plain'}"
            found.append(Turn(f"{path.stem}:{number}:{index}", name, sha256, emission.text,
                              tuple(call.name for call in emission.tool_calls), emission.parse,
                              stratum, user[:CONTEXT_CHARS], user, run.domain))
    return found


def quota(stratum: str, rounds: dict[str, int]) -> int:
    """How many turns of a stratum are taken: the first draw's quota and the rounds drawn."""
    base = CALL_QUOTA if stratum == "call" else TEXT_QUOTA
    return base + sum(n for label, n in rounds.items() if stratum in STRATA_OF[label])


def sample(turns: list[Turn], rounds: dict[str, int]) -> list[Turn]:
    """One file's sampled turns (the selection rule), in file order."""
    taken: set[str] = set()
    for stratum in sorted({turn.stratum for turn in turns}):
        members = sorted((t for t in turns if t.stratum == stratum), key=Turn.order)
        taken.update(t.id for t in members[:quota(stratum, rounds)])
    return [turn for turn in turns if turn.id in taken]


def population() -> list[Turn]:
    """Every agent turn of every shipped results file, files sorted by path."""
    sha = shipped_sha256(PUBLISHED)
    return [turn for path in files()
            for turn in turns_of(path, sha[path.relative_to(PUBLISHED).as_posix()])]


def sampled(rounds: dict[str, int]) -> list[Turn]:
    turns = population()
    return [t for name in sorted({t.file for t in turns})
            for t in sample([t for t in turns if t.file == name], rounds)]


def second_pass(first_draw: list[Turn]) -> list[dict[str, str]]:
    """The blind second reader's rows: text-only turns of the first draw, no labels."""
    texts = sorted((t for t in first_draw if not t.calls),
                   key=lambda t: (_sha(f"second-pass:{t.id}"), t.id))
    return [{"id": t.id, "text": t.text, "context": t.context}
            for t in texts[:SECOND_PASS_SIZE]]


def heldout(turns: list[Turn], drawn: set[str]) -> dict[int, list[Turn]]:
    """Each held-out draw (`published-heldout-v<draw>`, the keys of `HELDOUT_DRAWS`): the
    text-only turns not in `drawn` (the first corpus's ids) ordered by the sha256 of
    `heldout:<id>`, then the id; draw 1 takes the first `HELDOUT_SIZE`, draw 2 the next, draw 3 the
    rest (181)."""
    rest = sorted((t for t in turns if not t.calls and t.id not in drawn),
                  key=lambda t: (_sha(f"heldout:{t.id}"), t.id))
    return {draw: rest[(draw - 1) * HELDOUT_SIZE : draw * HELDOUT_SIZE]
            for draw in HELDOUT_DRAWS}


def heldout_draws() -> dict[int, list[Turn]]:
    """`heldout` over the shipped runs, the first corpus's turns drawn."""
    return heldout(population(), {row["id"] for row in read_jsonl(TURNS)})


def contexts(release: Tau2Release) -> dict[str, dict[str, list[str]]]:
    """Turn id -> its context as a corpus row holds it (`classify.base.Context`, JSON): the
    user's whole message, and the tools of the turn's domain in the release's order (what
    the classify stage gives an imported run's turn, `classify.trajectory.turn_contexts`)."""
    names: dict[str, list[str]] = {}
    found = {}
    for turn in population():
        if turn.domain not in names:
            names[turn.domain] = [doc["name"] for doc in tool_schemas(release, turn.domain)]
        found[turn.id] = {"user": [turn.user], "tools": names[turn.domain]}
    return found


def corpus_rows(turns: list[dict[str, Any]], labels: dict[str, dict[str, Any]],
                source: str = SOURCE, seen: dict[str, dict[str, list[str]]] | None = None,
                ) -> list[dict[str, Any]]:
    """The classifier-corpus rows of the labelled turns (every turn labelled, no label spare),
    each with its context where `seen` (`contexts`) is given."""
    missing = [t["id"] for t in turns if t["id"] not in labels]
    spare = sorted(set(labels) - {t["id"] for t in turns})
    if missing or spare:
        raise SystemExit(f"unlabelled turns {missing}; labels of no turn {spare}")
    return [{"id": t["id"], "text": t["text"], "structured_calls": t["structured_calls"],
             "parse": t["parse"], "label": labels[t["id"]]["label"],
             "reason": labels[t["id"]]["reason"], "source": source,
             **({} if seen is None else {"context": seen[t["id"]]})} for t in turns]


def published_sources() -> tuple[str, ...]:
    """The corpus sources this module writes: the first corpus's, then each held-out draw's."""
    return (SOURCE, *(source for _, _, source in HELDOUT_DRAWS.values()))


def labelled_rows(release: Tau2Release | None = None) -> list[dict[str, Any]]:
    """The corpus rows of every draw: the first corpus's, then each held-out draw's, each with
    its context (tool names from `release`; by default the pipeline's download, `WHEEL`)."""
    def by_id(path: Path) -> dict[str, dict[str, Any]]:
        return {row["id"]: row for row in read_jsonl(path)}

    seen = contexts(release or Tau2Release(WHEEL))
    rows = corpus_rows(read_jsonl(TURNS), by_id(LABELS), seen=seen)
    for turns, labels, source in HELDOUT_DRAWS.values():
        rows += corpus_rows(read_jsonl(turns), by_id(labels), source, seen)
    return rows


def rebuilt_corpus(release: Tau2Release | None = None) -> str:
    """The classifier corpus with its published rows rebuilt from the turns and their labels."""
    return merged(CORPUS.read_text("utf-8"), labelled_rows(release), published_sources())


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def jsonl(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n" for row in rows)


def main(command: str) -> None:
    if command == "sample":
        TURNS.write_text(jsonl([t.row() for t in sampled(ROUNDS)]), "utf-8")
        SECOND_PASS.write_text(jsonl(second_pass(sampled({}))), "utf-8")
    elif command == "heldout":
        for draw, turns in heldout_draws().items():
            HELDOUT_DRAWS[draw][0].write_text(jsonl([t.row() for t in turns]), "utf-8")
    elif command == "merge":
        CORPUS.write_text(rebuilt_corpus(), "utf-8")
    else:
        raise SystemExit(f"unknown command {command!r}: sample, heldout or merge")


if __name__ == "__main__":
    main(*sys.argv[1:])
