"""The baseline of `scoring_speed.py`: BFCL's own checker plus a paper-style GAR, in one process.

    python bench/bfcl_reference_scorer.py --wheel WHEEL --results DIR --model NAME --out FILE

What BFCL's eval runner does for the six categories, without its heavy imports: BFCL's full
`eval_runner` pulls in every model handler (and their SDKs), so only
`bfcl_eval.eval_checker.multi_turn_eval` is imported from the pinned wheel (via `zipimport`) and
the runner's per-entry logic is replicated:

- multi-turn (`_evaluate_single_multi_turn_entry`): a turn count that differs from the ground
  truth's is `multi_turn:force_terminated`; otherwise steps whose decoded call list is empty
  are skipped and BFCL's `multi_turn_checker` decides (it `eval`s the calls on BFCL's simulated
  API classes and re-executes the ground truth turn by turn);
- irrelevance (`_evaluate_single_relevance_entry`): any decoded call fails the case
  (`irrelevance_error:decoder_success`).

Inputs, read in the timed run: BFCL's prompt files (and the possible answers of the multi-turn
categories) straight from the wheel, and one model-result file per category under `--results`
in BFCL's result-file layout (one JSON line per case: `id`, `result`), where each step of each
turn holds the step's text and the call strings BFCL's handler would have decoded (rendered
by `toolcalib.execute.calls.render_call` when the file was written, untimed).

GAR, paper style: the published cue classifier (regex call patterns, then refuse > ask >
confirm phrases; the tables are read from `src/toolcalib/data/paper_classifier.yaml`) over the
text of every emission; an emission with structured calls is `tool_call`; a case counts when
the union of its emissions' classes contains the category's gold class (the published
`gar.py` union). Unlike our `paper` profile, a malformed call is classified by its text alone
(the published code has no `malformed` class).

Writes `--out`: JSON with a verdict per case and GAR numerators/denominators per category.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
import zipfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
CUES = ROOT / "src" / "toolcalib" / "data" / "paper_classifier.yaml"
DATA = "bfcl_eval/data"
CHECKER = "bfcl_eval.eval_checker.multi_turn_eval"
MULTI_TURN = ("multi_turn_base", "multi_turn_long_context", "multi_turn_miss_func",
              "multi_turn_miss_param")
IRRELEVANCE = ("irrelevance", "live_irrelevance")
GOLD = {"multi_turn_base": "tool_call", "multi_turn_long_context": "tool_call",
        "multi_turn_miss_func": "refuse", "multi_turn_miss_param": "ask",
        "irrelevance": "refuse", "live_irrelevance": "refuse"}
"""The paper's case gold class per category."""
SCORED = ("completed", "step_cap")
"""Outcomes that are model behaviour (others are infrastructure and left out, as we do)."""


def json_lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


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


def multi_turn_entry(checker, utils, entry: dict, prompt: dict, truth: list, category: str,
                     model: str) -> dict:
    """BFCL's `_evaluate_single_multi_turn_entry` (decoding already done in the result file)."""
    result = entry["result"]
    if len(result) != len(truth):
        return {"valid": False, "error_type": "multi_turn:force_terminated"}
    decoded = []
    for turn in result:
        steps = []
        for step in turn:
            calls = step["calls"]
            if utils.is_empty_execute_response(calls):
                continue
            steps.append(calls)
        decoded.append(steps)
    try:
        verdict = checker.multi_turn_checker(decoded, truth, prompt, category, model)
    finally:  # BFCL keeps every instance in module globals; drop this case's
        for key in [key for key in vars(utils) if key.endswith("_instance")]:
            del vars(utils)[key]
    return {"valid": verdict["valid"], "error_type": verdict.get("error_type")}


def irrelevance_entry(entry: dict) -> dict:
    """BFCL's `_evaluate_single_relevance_entry` for irrelevance: any decoded call fails."""
    if any(step["calls"] for turn in entry["result"] for step in turn):
        return {"valid": False, "error_type": "irrelevance_error:decoder_success"}
    return {"valid": True, "error_type": None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheel", required=True)
    parser.add_argument("--results", required=True, help="folder of <category>.json")
    parser.add_argument("--model", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    os.environ["TZ"] = "UTC"  # as our executor pins it (timestamps in simulated API state)
    time.tzset()
    sys.path.append(str(Path(args.wheel).resolve()))
    checker = __import__(f"{CHECKER}.multi_turn_checker", fromlist=["_"])
    utils = __import__(f"{CHECKER}.multi_turn_utils", fromlist=["_"])
    classify = PaperClassifier(CUES)
    wheel = zipfile.ZipFile(args.wheel)

    verdicts: dict[str, dict] = {}
    gar: dict[str, dict] = {}
    for category in (*MULTI_TURN, *IRRELEVANCE):
        name = f"BFCL_v4_{category}.json"
        prompts = {p["id"]: p for p in json_lines(wheel.read(f"{DATA}/{name}").decode())}
        answers = {}
        if category in MULTI_TURN:
            answers = {a["id"]: a["ground_truth"] for a in
                       json_lines(wheel.read(f"{DATA}/possible_answer/{name}").decode())}
        entries = json_lines((Path(args.results) / f"{category}.json").read_text("utf-8"))
        hits = scored = 0
        for entry in entries:
            if entry["outcome"] not in SCORED:
                continue
            scored += 1
            if category in MULTI_TURN:
                prompt = dict(prompts[entry["id"]])
                prompt.pop("function", None)
                verdict = multi_turn_entry(checker, utils, entry, prompt, answers[entry["id"]],
                                           category, args.model)
            else:
                verdict = irrelevance_entry(entry)
            emitted = {classify(step) for turn in entry["result"] for step in turn} - {None}
            gold_hit = GOLD[category] in emitted
            hits += gold_hit
            verdicts[entry["id"]] = {**verdict, "category": category, "gold_hit": gold_hit,
                                     "emitted": sorted(emitted)}
        gar[category] = {"k": hits, "n": scored, "gar": hits / scored if scored else None}
    Path(args.out).write_text(json.dumps({"verdicts": verdicts, "gar": gar}, sort_keys=True))
    print(f"scored {len(verdicts)} cases -> {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
