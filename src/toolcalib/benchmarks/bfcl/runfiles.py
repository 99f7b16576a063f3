"""A published BFCL run's files: where they are and what each line holds.

Layouts read (what `bfcl generate` / `bfcl evaluate` write, and the BFCL team's archive):
`<path>/<model>/<group>/BFCL_v4_<category>_result.json` with the score files in a sibling
`score/` folder (`<path>` named `result`), or `<path>/{result,score}/<model>/...` (an archive's
`<date>/` folder); an option may name the score folder instead. Result files are found at any
depth under the model's folder, as BFCL's evaluator finds them; `BFCL_v3_` and `BFCL_v4_` names
both read (the same multi-turn data), and a file may be xz- or gzip-compressed (`.json.xz`,
`.json.gz`: the shipped copies). Two files for one category are an error; files of
categories we do not run are ignored.

A result line is `{"id", "result", ...}`; a score file's first line is BFCL's summary
(`accuracy`, `correct_count`, `total_count`), each further line one FAILED case (`id`, `valid`,
`error`, `prompt`): a case absent from it passed. Every malformed line raises an InputError
naming the file, line and field.
"""

from __future__ import annotations

import gzip
import json
import lzma
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TextIO

from toolcalib.jsonio import InputError

GROUPS = {"multi_turn_base": "multi_turn", "multi_turn_long_context": "multi_turn",
          "multi_turn_miss_func": "multi_turn", "multi_turn_miss_param": "multi_turn",
          "irrelevance": "non_live", "live_irrelevance": "live"}
"""bfcl_eval/utils.py: get_directory_structure_by_category, for the categories we run (the
BFCL plugin's categories: a test checks they agree)."""
FILE_NAME = re.compile(r"BFCL_v[34]_(\w+?)_(result|score)\.json(\.xz|\.gz)?")
"""bfcl_eval/utils.py: extract_test_category (v3 and v4 prefixes, compressed copies too)."""
INFERENCE_ERROR = "Error during inference: "
"""bfcl_eval/_llm_response_generation.py: the `result` BFCL records when inference raised."""
Kind = Literal["result", "score"]


def multi_turn(category: str) -> bool:
    """Whether BFCL records the category's outputs per turn and step (its `multi_turn` group)."""
    return GROUPS[category] == "multi_turn"


@dataclass(frozen=True)
class Layout:
    """Where one model's result files and score files are (`score` None: none recorded)."""

    result: Path
    score: Path | None


def folders(path: str | Path, score_path: str | Path | None = None) -> tuple[Path, Path | None]:
    """The result folder holding model folders, and the score folder beside it (if any)."""
    root = Path(path)
    result = root / "result" if (root / "result").is_dir() else root
    if score_path is not None:
        return result, Path(score_path)
    beside = result.parent / "score"
    return result, beside if beside.is_dir() and result.name == "result" else None


def model_folders(path: str | Path) -> list[str]:
    """Every model folder of a result folder that holds at least one result file we read."""
    result, _ = folders(path)
    if not result.is_dir():
        raise InputError(f"no folder {result}")
    return sorted(child.name for child in result.iterdir()
                  if child.is_dir() and find_files(child, "result"))


def layout(path: str | Path, model: str, score_path: str | Path | None = None) -> Layout:
    """One model's folders under a run's `path` (its score folder only if it exists)."""
    result, score = folders(path, score_path)
    model_score = None if score is None else score / model
    return Layout(result / model, model_score if model_score and model_score.is_dir() else None)


def find_files(folder: Path, kind: Kind) -> dict[str, Path]:
    """Category -> file of `kind`, for the categories we run, at any depth under `folder`."""
    found: dict[str, Path] = {}
    for path in sorted(folder.rglob(f"BFCL_v*_*_{kind}.json*")):
        match = FILE_NAME.fullmatch(path.name)
        if not match or match.group(2) != kind or match.group(1) not in GROUPS \
                or not path.is_file():
            continue
        category = match.group(1)
        if category in found:
            raise InputError(f"two {kind} files for category '{category}': {found[category]} "
                             f"and {path}")
        found[category] = path
    return found


def lines(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, decoded JSON) of every non-blank line, decompressing `.xz` / `.gz`."""
    number = 0
    try:
        with _open_text(path) as handle:
            for number, text in enumerate(handle, start=1):
                if not text.strip():
                    continue
                try:
                    yield number, json.loads(text)
                except json.JSONDecodeError as exc:
                    raise InputError(f"{path}:{number}: not valid JSON ({exc.msg} at column "
                                     f"{exc.colno}); truncated or not a BFCL file") from exc
    except (lzma.LZMAError, EOFError, OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}:{number + 1}: cannot be read ({exc}); truncated or not a "
                         "BFCL file") from exc


def _open_text(path: Path) -> TextIO:
    """A file as UTF-8 text, `.xz` and `.gz` decompressed."""
    if path.suffix == ".xz":
        return lzma.open(path, "rt", encoding="utf-8")
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8")
    return open(path, encoding="utf-8")


@dataclass(frozen=True)
class ResultLine:
    """One result line: its step outputs per turn (one turn of one step for single-turn cases;
    None when BFCL recorded an inference error instead), token counts, and the questions its
    `inference_log` recorded per turn (None where it has none)."""

    file: Path
    line: int
    index: int
    """0-based position among the file's records."""
    case_id: str
    turns: list[list[Any]] | None
    error: str | None
    input_tokens: Any
    output_tokens: Any
    questions: list[list[dict[str, Any]]] | None


def _record(line: Any, where: str, category: str) -> tuple[dict[str, Any], str]:
    """A line as an object with a string id of `category`."""
    if not isinstance(line, dict):
        raise InputError(f"{where}: field '<record>': expected an object, got "
                         f"{type(line).__name__}")
    case_id = line.get("id")
    if not isinstance(case_id, str):
        raise InputError(f"{where}: field 'id': expected a string, got {type(case_id).__name__}")
    if case_id.rsplit("_", 1)[0] != category:
        raise InputError(f"{where}: field 'id': '{case_id}' is not a {category} case")
    return line, case_id


def read_results(path: Path, category: str) -> dict[str, ResultLine]:
    """Case id -> result line, in file order."""
    entries: dict[str, ResultLine] = {}
    for number, raw in lines(path):
        where = f"{path}:{number}"
        line, case_id = _record(raw, where, category)
        if case_id in entries:
            raise InputError(f"{where}: field 'id': '{case_id}' already on line "
                             f"{entries[case_id].line}")
        if "result" not in line:
            raise InputError(f"{where}: field 'result': missing")
        turns, error = _turns(line["result"], multi_turn(category), where)
        entries[case_id] = ResultLine(path, number, len(entries), case_id, turns, error,
                                      line.get("input_token_count"),
                                      line.get("output_token_count"),
                                      _logged_questions(line.get("inference_log")))
    return entries


def _turns(result: Any, is_multi: bool, where: str) -> tuple[list[list[Any]] | None, str | None]:
    """A line's outputs as turns of steps, or its inference error; shape errors raise."""
    if isinstance(result, str) and (is_multi or result.startswith(INFERENCE_ERROR)):
        return None, result
    if not is_multi:
        return [[result]], None
    if not isinstance(result, list):
        raise InputError(f"{where}: field 'result': expected a list of turns, got "
                         f"{type(result).__name__}")
    for t, steps in enumerate(result):
        if not isinstance(steps, list):
            raise InputError(f"{where}: field 'result[{t}]': expected a list of step outputs,"
                             f" got {type(steps).__name__}")
    return result, None


def _logged_questions(log: Any) -> list[list[dict[str, Any]]] | None:
    """The `begin_of_turn_query` of each turn of a multi-turn `inference_log` (its first item
    is the initial state), or None when the line has no such log."""
    if not isinstance(log, list):
        return None
    turns = [item for item in log if isinstance(item, dict)]
    if not turns or any("begin_of_turn_query" not in item for item in turns):
        return None
    return [item["begin_of_turn_query"] for item in turns]


@dataclass(frozen=True)
class ScoreFile:
    """A score file: BFCL's summary line and its failed cases (id -> (line, reason, prompt))."""

    path: Path
    accuracy: float
    correct: int
    total: int
    failed: dict[str, tuple[int, str, Any]]

    @property
    def per_case(self) -> bool:
        """Whether the failed lines are all there (else only the summary was recorded)."""
        return len(self.failed) == self.total - self.correct


def read_score(path: Path, category: str, results: dict[str, ResultLine]) -> ScoreFile:
    """A score file checked against its result file: every failed id is a result of the same
    category, once; the failed lines number `total - correct` or none (summary only)."""
    summary: dict[str, Any] | None = None
    failed: dict[str, tuple[int, str, Any]] = {}
    for number, raw in lines(path):
        where = f"{path}:{number}"
        if summary is None:
            summary = _summary(raw, where)
            continue
        line, case_id = _record(raw, where, category)
        if case_id in failed:
            raise InputError(f"{where}: field 'id': '{case_id}' already on line "
                             f"{failed[case_id][0]}")
        if case_id not in results:
            raise InputError(f"{where}: field 'id': '{case_id}' is not in the result file "
                             f"{next(iter(results.values())).file if results else '(empty)'}")
        if line.get("valid") is not False:
            raise InputError(f"{where}: field 'valid': expected false (a score file lists "
                             f"failed cases), got {line.get('valid')!r}")
        failed[case_id] = (number, _reason(line), line.get("prompt"))
    if summary is None:
        raise InputError(f"{path}:1: field 'accuracy': missing (an empty score file)")
    score = ScoreFile(path, summary["accuracy"], summary["correct_count"],
                      summary["total_count"], failed)
    if failed and not score.per_case:
        raise InputError(f"{path}:1: field 'correct_count': {score.correct} of {score.total} "
                         f"leaves {score.total - score.correct} failed, the file lists "
                         f"{len(failed)}")
    return score


def _summary(raw: Any, where: str) -> dict[str, Any]:
    """BFCL's summary line, its three fields checked."""
    if not isinstance(raw, dict):
        raise InputError(f"{where}: field '<summary>': expected an object, got "
                         f"{type(raw).__name__}")
    for name, kind in (("accuracy", (int, float)), ("correct_count", int), ("total_count", int)):
        value = raw.get(name)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise InputError(f"{where}: field '{name}': expected a number, got {value!r}")
    return raw


def _reason(line: dict[str, Any]) -> str:
    """The checker's reason a failed case gives (multi-turn: a dict; single-turn: a list of
    messages beside `error_type`)."""
    error = line.get("error")
    if isinstance(error, dict):
        return f"{error.get('error_type')}: {error.get('error_message')}"
    messages = "; ".join(map(str, error)) if isinstance(error, list) else str(error)
    return f"{line.get('error_type')}: {messages}"
