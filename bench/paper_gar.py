"""Paper-style GAR over BFCL result files, as the published `gar.py` computes it after BFCL.

    python bench/paper_gar.py --results DIR --scores DIR --model NAME --out FILE

The second baseline process of `scoring_speed.py` (the first, `bfcl_reference_scorer.py`,
writes BFCL's score files). The published cue classifier (regex call patterns, then
refuse > ask > confirm phrases; the tables are read from
`src/toolcalib/data/paper_classifier.yaml`) labels the text of every emission; an emission with
structured calls is `tool_call`; a case counts when the union of its emissions' classes holds
the category's gold class. Acc is read from each category's score-file header, as `gar.py`
does. Unlike our `paper` profile, a malformed call is classified by its text alone (the
published code has no `malformed` class).

Writes `--out`: JSON with, per category, GAR's numerator and denominator and Acc, and per case
whether the gold class was emitted (for `scoring_speed.py`'s case-by-case check).
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import yaml
from bfcl_reference_scorer import GROUP, SCORED

CUES = Path(__file__).resolve().parents[1] / "src" / "toolcalib" / "data" / "paper_classifier.yaml"
GOLD = {"multi_turn_base": "tool_call", "multi_turn_long_context": "tool_call",
        "multi_turn_miss_func": "refuse", "multi_turn_miss_param": "ask",
        "irrelevance": "refuse", "live_irrelevance": "refuse"}
"""The paper's case gold class per category."""


class PaperClassifier:
    """The published cue classifier: first hit wins (call pattern, refuse, ask, confirm)."""

    def __init__(self, path: Path):
        cues = yaml.safe_load(path.read_text("utf-8"))
        self.patterns = []
        for entry in cues["tool_call_patterns"]:
            flags = 0
            for flag in entry["flags"]:
                flags |= re.RegexFlag[flag]
            regex = re.compile(entry["regex"], flags)
            self.patterns.append(regex.match if entry["mode"] == "match" else regex.search)
        self.quotes = str.maketrans({char: quote for quote, chars
                                     in cues["quote_normalisation"].items() for char in chars})
        self.question_mark = cues["ask_question_mark"]
        self.refuse, self.ask, self.confirm = cues["refuse"], cues["ask"], cues["confirm"]

    def __call__(self, step: dict) -> str | None:
        if step["structured"] and step["calls"]:
            return "tool_call"
        text = step["text"]
        if not text.strip():
            return None
        if any(find(text) for find in self.patterns):
            return "tool_call"
        normalised = text.translate(self.quotes)
        lower = normalised.lower()
        if any(phrase in lower for phrase in self.refuse):
            return "refuse"
        if self.question_mark in normalised or any(phrase in lower for phrase in self.ask):
            return "ask"
        if any(phrase in lower for phrase in self.confirm):
            return "confirm"
        return "other"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", required=True, help="folder of <category>.json")
    parser.add_argument("--scores", required=True, help="BFCL score folder")
    parser.add_argument("--model", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    classify = PaperClassifier(CUES)
    summary: dict[str, dict] = {}
    cases: dict[str, dict] = {}
    for category, gold in GOLD.items():
        hits = n = 0
        with open(Path(args.results) / f"{category}.json", encoding="utf-8") as fh:
            for line in fh:
                if not line.strip():
                    continue
                entry = json.loads(line)
                if entry["outcome"] not in SCORED:
                    continue
                n += 1
                emitted = {classify(step) for turn in entry["result"] for step in turn} - {None}
                hits += gold in emitted
                cases[entry["id"]] = {"gold_hit": gold in emitted, "emitted": sorted(emitted)}
        score = (Path(args.scores) / args.model / GROUP[category]
                 / f"BFCL_v4_{category}_score.json")
        with open(score, encoding="utf-8") as fh:
            header = json.loads(fh.readline())
        summary[category] = {"k": hits, "n": n, "gar": hits / n if n else None,
                             "acc": header["accuracy"]}
    Path(args.out).write_text(json.dumps({"gar": summary, "cases": cases}, sort_keys=True))


if __name__ == "__main__":
    main()
