"""A published BFCL run imported for one category: its records checked against the pinned
release, BFCL's recorded verdicts kept beside ours, and the cases replayed (`replay`).

- **Release check per case.** A record whose id is not a case of the pinned release has no
  cell; a record whose questions (its `inference_log`'s `begin_of_turn_query` per turn, or the
  score entry's `prompt`) differ from the release's is excluded with the reason (outcome
  `error`, counted in `n_excluded`), never scored. A selected case without a record is
  excluded too.
- **Recorded verdict.** From the score file: a failed line means failed, absence means passed
  (`recorded.reward` 0 / 1, with the checker's reason), when the file lists every failure; a
  file holding only BFCL's summary line gives no per-case verdict (`reward` null) and its counts
  are compared instead. BFCL's headline (`RecordedSummary`) is the summary line as recorded.
- **Absent category.** No result file for the category: nothing is imported (no cell), the
  category is named in the notes and the summary.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolcalib.benchmarks import ImportedRun, published_name
from toolcalib.benchmarks.bfcl.normalize import data_file
from toolcalib.benchmarks.bfcl.release import MISS_FUNC_MESSAGE, BfclRelease
from toolcalib.benchmarks.bfcl.replay import RecordedRun
from toolcalib.benchmarks.bfcl.runfiles import (
    ResultLine,
    ScoreFile,
    find_files,
    layout,
    read_results,
    read_score,
)
from toolcalib.jsonio import InputError, sha256_file
from toolcalib.records import Published

if TYPE_CHECKING:
    from toolcalib.backends.replay import ReplayOptions
    from toolcalib.records import Case, Trajectory

Question = list[list[dict[str, Any]]]


def release_questions(source: str | Path, category: str) -> dict[str, Question]:
    """Case id -> its question turns, as the pinned release writes them."""
    release = BfclRelease(source)
    return {line["id"]: line["question"] for line in
            (json.loads(text) for _, text in release.read_lines(data_file(category)))}


def _messages(turn: Any) -> list[tuple[Any, Any]]:
    return [(m.get("role"), m.get("content")) for m in turn if isinstance(m, dict)] \
        if isinstance(turn, list) else [("<not a list>", turn)]


def question_mismatch(recorded: Any, release: Question, where: str,
                      prefix: bool = False) -> str | None:
    """Where `recorded` question turns differ from the release's, or None. A turn the release
    leaves empty (miss_func: functions added) matches BFCL's own message for it; `prefix`: the
    record may stop early (BFCL ends a case at its step cap, logging no later turn)."""
    if not isinstance(recorded, list) or len(recorded) > len(release) \
            or (len(recorded) < len(release) and not prefix):
        count = len(recorded) if isinstance(recorded, list) else "no"
        return f"{where}: {count} turns, the release has {len(release)}"
    for index, (mine, theirs) in enumerate(zip(recorded, release[:len(recorded)], strict=True)):
        got, want = _messages(mine), _messages(theirs)
        if not want and len(got) == 1 and isinstance(got[0][1], str) \
                and got[0][1].endswith(MISS_FUNC_MESSAGE):
            continue
        if got != want:
            return f"{where}: turn {index} differs from the release's"
    return None


def _prompt_question(prompt: Any) -> Any:
    """A score entry's recorded question turns (its `prompt` is the release's case)."""
    return prompt.get("question") if isinstance(prompt, dict) else None


def check_record(entry: ResultLine, score: ScoreFile | None,
                 questions: Mapping[str, Question]) -> str | None:
    """Why a record cannot be scored against the release (None: it can)."""
    release = questions[entry.case_id]
    if entry.questions is not None:
        found = question_mismatch(entry.questions, release,
                                  f"{entry.file.name}:{entry.line} inference_log "
                                  "begin_of_turn_query", prefix=True)
        if found:
            return found
    failed = None if score is None else score.failed.get(entry.case_id)
    if failed is not None and _prompt_question(failed[2]) is not None:
        return question_mismatch(_prompt_question(failed[2]), release,
                                 f"{score.path.name if score else ''}:{failed[0]} prompt")
    return None


def recorded_verdict(case_id: str, score: ScoreFile | None) -> dict[str, Any]:
    """BFCL's own verdict of a case (`Published.recorded`): reward 1 / 0 and the checker's
    reason, or an empty dict where the score file records no per-case verdict."""
    if score is None or not score.per_case:
        return {}
    failed = score.failed.get(case_id)
    return {"reward": 1.0} if failed is None else {"reward": 0.0, "reason": failed[1]}


def recorded_agreement(recorded: Mapping[str, Any], score: Any) -> dict[str, Any]:
    """BFCL's recorded verdict beside ours (a score's `details`: `recorded_reward`, and
    `reward_disagreement` naming both checkers' reasons where they differ; an unscored case
    keeps the recorded verdict and no disagreement)."""
    reward = recorded["reward"]
    if not score.scored or reward == (1.0 if score.passed else 0.0):
        return {"recorded_reward": reward, "reward_disagreement": None}
    theirs = "passed" if reward == 1.0 else f"failed ({recorded.get('reason')})"
    ours = "passed" if score.passed else f"failed ({score.error_type}: {score.error_message})"
    return {"recorded_reward": reward,
            "reward_disagreement": f"BFCL recorded {theirs}; recomputed {ours}"}


def summary(score: ScoreFile | None, root: Path, note: str | None = None) -> dict[str, Any]:
    """BFCL's headline for the category as recorded (its score file's summary line)."""
    if score is None:
        return {"file": None, "accuracy": None, "correct_count": None, "total_count": None,
                "source": note or "no score file"}
    return {"file": published_name(score.path, root), "accuracy": score.accuracy,
            "correct_count": score.correct, "total_count": score.total,
            "source": "score file summary" + ("" if score.per_case else " only")}


def import_category(source: str | Path, options: ReplayOptions, name: str, category: str,
                    cases: list[Case], run: Any) -> ImportedRun:
    """A published BFCL run's records of one category (see the module docstring). `run`
    replays the selected cases through the benchmark's loop with a backend."""
    if options.model is None:
        raise InputError(f"model '{name}': option 'model' (the model's folder under 'path') "
                         "is required to replay a BFCL run")
    folders = layout(options.path, options.model, options.score_path)
    if not folders.result.is_dir():
        raise InputError(f"model '{name}': no folder {folders.result}")
    results = find_files(folders.result, "result")
    if not results:
        raise InputError(f"model '{name}': no BFCL_v3/v4 result file of a category we run "
                         f"under {folders.result}")
    scores = find_files(folders.score, "score") if folders.score else {}
    root = Path(options.path)
    identity = _identity(options, results, scores, root, source)
    if category not in results:
        note = f"no result file for category '{category}' under {folders.result}: no cell"
        return ImportedRun([], [], identity, notes=[note], summary=summary(None, root, note))
    entries = read_results(results[category], category)
    if options.format == "prompt":
        _require_text(entries.values())
    score = read_score(scores[category], category, entries) if category in scores else None
    questions = release_questions(source, category)
    selected = {case.id for case in cases}
    excluded: dict[str, str] = {}
    records: list[Published] = []
    file = published_name(results[category], root)
    digest = identity["files"][file]
    for entry in entries.values():
        reason = "not a case of the pinned release" if entry.case_id not in questions else \
            check_record(entry, score, questions)
        in_cell = entry.case_id in questions and entry.case_id in selected
        if reason and in_cell:
            excluded[entry.case_id] = reason
        if not reason and entry.error is not None:  # kept in its cell, never scored
            reason = f"BFCL recorded no outputs: {entry.error.splitlines()[0][:300]}"
        records.append(Published(
            file=file, file_sha256=digest, index=entry.index, record=entry.case_id,
            claimed_case=entry.case_id, case_id=entry.case_id if in_cell else None,
            excluded=reason if reason else None if in_cell else "not selected (limit or cases)",
            recorded=recorded_verdict(entry.case_id, score)))
    for case in cases:
        if case.id not in entries:
            excluded[case.id] = f"no record in {file}"
    backend = RecordedRun(name, options.model, entries, identity, excluded,
                          fc=options.format == "fc")
    by_case = {record.case_id: record for record in records if record.case_id is not None}
    trajectories = [_with_record(t, by_case.get(t.case_id)) for t in run(cases, backend)]
    notes = [f"{r.file}:{r.index + 1} ({r.record}): {r.excluded}" for r in records
             if r.excluded and not r.excluded.startswith("not selected")]
    notes += [f"{case_id}: excluded, {why}" for case_id, why in sorted(excluded.items())
              if case_id not in entries]
    notes += _count_notes(score, entries, file)
    return ImportedRun(list(cases), trajectories, identity, records,
                       notes + backend.notes(), summary=summary(score, root))


def _with_record(trajectory: Trajectory, record: Published | None) -> Trajectory:
    return trajectory if record is None else trajectory.replace(published=record)


def _require_text(entries: Iterable[ResultLine]) -> None:
    """Option `format: prompt`: every recorded output is the model's text."""
    for entry in entries:
        for t, steps in enumerate(entry.turns or []):
            for s, output in enumerate(steps):
                if not isinstance(output, str):
                    name = "result" if len(entry.turns or []) == 1 and len(steps) == 1 \
                        else f"result[{t}][{s}]"
                    raise InputError(f"{entry.file}:{entry.line}: field '{name}': expected a "
                                     f"string (format 'prompt'), got {type(output).__name__}")


def _count_notes(score: ScoreFile | None, entries: Mapping[str, ResultLine],
                 file: str) -> list[str]:
    if score is None or score.total == len(entries):
        return []
    return [f"{file}: {len(entries)} records, BFCL's summary counts {score.total}"]


def _identity(options: ReplayOptions, results: Mapping[str, Path], scores: Mapping[str, Path],
              root: Path, source: str | Path) -> dict[str, Any]:
    """What identifies the run: the model folder, its result and score files (sha256) and the
    release they are checked against."""
    files = {published_name(path, root): sha256_file(path)
             for path in sorted([*results.values(), *scores.values()])}
    release = Path(source)
    return {"backend": "replay", "model": options.model, "format": options.format or "auto",
            "files": files,
            "release": {"artifact": release.name, "sha256": sha256_file(release)}}
