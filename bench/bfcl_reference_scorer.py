"""BFCL's evaluation of one model's result files, as its eval runner does it, minus its imports.

    python bench/bfcl_reference_scorer.py --wheel WHEEL --results DIR --model NAME --scores DIR \
        [--no-score-files]

The first of the two baseline processes `scoring_speed.py` spawns (the second is
`paper_gar.py`, as the paper runs `bfcl evaluate` and then its own `gar.py`). BFCL's full
`eval_runner` pulls in every model handler (and their SDKs), so only
`bfcl_eval.eval_checker.multi_turn_eval` is imported from the pinned wheel (via `zipimport`) and
the runner's per-entry logic is replicated:

- multi-turn (`_evaluate_single_multi_turn_entry`): a turn count that differs from the ground
  truth's is `multi_turn:force_terminated`; otherwise steps whose decoded call list is empty
  are skipped and BFCL's `multi_turn_checker` decides (it `eval`s the calls on BFCL's simulated
  API classes and re-executes the ground truth turn by turn);
- irrelevance (`_evaluate_single_relevance_entry`): any decoded call fails the case
  (`irrelevance_error:decoder_success`);
- each category's score file is written as `save_eval_results` writes it
  (`<scores>/<model>/<group>/BFCL_v4_<category>_score.json`: an accuracy header, then one line
  per failed entry with the fields BFCL records, through its `make_json_serializable`).

`--no-score-files` builds the same failure records but writes only the headers: a lower bound
of BFCL's cost that `scoring_speed.py` reports next to the real one. Left out, in BFCL's
favour: the runner's imports, its file locks, cost/latency records and the leaderboard CSVs.

Inputs, read in the timed run: BFCL's prompt files (and the multi-turn
possible answers) straight from the wheel, and one model-result file per category under
`--results` (one JSON line per case: `id`, `result`, `outcome`), where each step of each turn
holds the step's text and the call strings BFCL's handler would have decoded (rendered by
`toolcalib.execute.calls.render_call` when the file was written, untimed). Cases whose outcome
is an infrastructure error are left out, as our pipeline leaves them out of the rates.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import zipfile
from pathlib import Path

DATA = "bfcl_eval/data"
CHECKER = "bfcl_eval.eval_checker.multi_turn_eval"
MULTI_TURN = ("multi_turn_base", "multi_turn_long_context", "multi_turn_miss_func",
              "multi_turn_miss_param")
GROUP = {**dict.fromkeys(MULTI_TURN, "multi_turn"), "irrelevance": "non_live",
         "live_irrelevance": "live"}
"""BFCL's `get_directory_structure_by_category` for these categories."""
SCORED = ("completed", "step_cap")
"""Outcomes that are model behaviour (the others are infrastructure, left out as we do)."""


def json_lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def make_json_serializable(value):
    """BFCL's `utils.make_json_serializable`."""
    if isinstance(value, dict):
        return {k: make_json_serializable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [make_json_serializable(item) for item in value]
    try:
        json.dumps(value, ensure_ascii=False)
        return value
    except (TypeError, ValueError):
        return str(value)


def multi_turn_entry(checker, utils, entry: dict, prompt: dict, truth: list, category: str,
                     model: str) -> dict:
    """BFCL's `_evaluate_single_multi_turn_entry` (decoding already done in the result file)."""
    prompt.pop("function", None)
    result = entry["result"]
    if len(result) != len(truth):
        return {"id": entry["id"], "model_name": model, "test_category": category,
                "valid": False,
                "error": {"error_message": [
                    "Model was force-terminated during inference phase. The length of the model"
                    f" result turns ({len(result)}) does not match the length of the ground"
                    f" truth turns ({len(truth)})."],
                    "error_type": "multi_turn:force_terminated"},
                "prompt": prompt, "model_result": result, "possible_answer": truth}
    decoded = [[step["calls"] for step in turn if not utils.is_empty_execute_response(
        step["calls"])] for turn in result]
    try:
        verdict = checker.multi_turn_checker(decoded, truth, prompt, category, model)
    finally:  # BFCL keeps every instance in module globals; drop this case's
        for key in [key for key in vars(utils) if key.endswith("_instance")]:
            del vars(utils)[key]
    if verdict["valid"]:
        return {"valid": True}
    return {"id": entry["id"], "model_name": model, "test_category": category,
            "valid": verdict.pop("valid"), "error": verdict, "prompt": prompt,
            "model_result_raw": result, "model_result_decoded": decoded,
            "possible_answer": truth}


def irrelevance_entry(entry: dict, prompt: dict, category: str, model: str) -> dict:
    """BFCL's `_evaluate_single_relevance_entry` for irrelevance: any decoded call fails."""
    decoded = [call for turn in entry["result"] for step in turn for call in step["calls"]]
    if not decoded:
        return {"valid": True}
    return {"id": entry["id"], "model_name": model, "test_category": category, "valid": False,
            "prompt": prompt, "model_result": entry["result"], "decoded_result": decoded,
            "error": ["Valid syntax. Successfully decode AST when it should not."],
            "error_type": "irrelevance_error:decoder_success"}


def save_eval_results(failures: list[dict], correct: int, total: int, path: Path) -> None:
    """BFCL's `save_eval_results` + `write_list_of_dicts_to_file` (without the file lock)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    header = {"accuracy": correct / total, "correct_count": correct, "total_count": total}
    with open(path, "w", encoding="utf-8") as f:
        for entry in [header, *failures]:
            f.write(json.dumps(make_json_serializable(entry), ensure_ascii=False) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheel", required=True)
    parser.add_argument("--results", required=True, help="folder of <category>.json")
    parser.add_argument("--model", required=True)
    parser.add_argument("--scores", required=True, help="score folder, laid out as BFCL's")
    parser.add_argument("--no-score-files", action="store_true",
                        help="write each score file's header only (not BFCL's behaviour)")
    args = parser.parse_args()

    os.environ["TZ"] = "UTC"  # as our executor pins it (timestamps in simulated API state)
    time.tzset()
    sys.path.append(str(Path(args.wheel).resolve()))
    checker = __import__(f"{CHECKER}.multi_turn_checker", fromlist=["_"])
    utils = __import__(f"{CHECKER}.multi_turn_utils", fromlist=["_"])
    wheel = zipfile.ZipFile(args.wheel)
    for category, group in GROUP.items():
        name = f"BFCL_v4_{category}.json"
        prompts = {p["id"]: p for p in json_lines(wheel.read(f"{DATA}/{name}").decode())}
        answers = {}
        if category in MULTI_TURN:
            answers = {a["id"]: a["ground_truth"] for a in
                       json_lines(wheel.read(f"{DATA}/possible_answer/{name}").decode())}
        entries = [e for e in json_lines((Path(args.results) / f"{category}.json")
                                         .read_text("utf-8")) if e["outcome"] in SCORED]
        failures, correct = [], 0
        for entry in entries:
            prompt = prompts[entry["id"]]
            if category in MULTI_TURN:
                verdict = multi_turn_entry(checker, utils, entry, prompt, answers[entry["id"]],
                                           category, args.model)
            else:
                verdict = irrelevance_entry(entry, prompt, category, args.model)
            if verdict["valid"]:
                correct += 1
                continue
            if category in MULTI_TURN:  # `multi_turn_runner` adds it, the relevance one not
                verdict["inference_log"] = entry.get("inference_log", "")
            failures.append(verdict)
        if args.no_score_files:
            failures = []
        save_eval_results(failures, correct, len(entries), Path(args.scores) / args.model
                          / group / f"BFCL_v4_{category}_score.json")
    print(f"scored {args.model} -> {args.scores}", file=sys.stderr)


if __name__ == "__main__":
    main()
