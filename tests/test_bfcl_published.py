"""Published BFCL runs imported (`benchmarks.bfcl.published`): trimmed copies of real runs
(tests/data/bfcl_published, `tests.support.bfcl_published_fixture`) with each defect their source
lists, BFCL's recorded verdicts beside ours, the release check, and bad input."""

from __future__ import annotations

import json
import lzma
import shutil
from pathlib import Path

import polars as pl
import pytest

from toolcalib.backends.replay import ReplayOptions
from toolcalib.benchmarks import get_benchmark
from toolcalib.benchmarks.bfcl.plugin import load_cases
from toolcalib.classify import get_profile
from toolcalib.classify.base import NO_CONTEXT
from toolcalib.expand import expand_models
from toolcalib.generate import replay
from toolcalib.jsonio import InputError

DATA = Path(__file__).parent / "data" / "bfcl_published"
VLLM = DATA / "vllm" / "2025-11-12-main"
PANEL = DATA / "panel"
GPT = "openai_gpt-oss-20b"
BFCL = get_benchmark("bfcl")


def imported(release, category, path=VLLM, model=GPT, fmt="fc", ids=None, **extra):
    cases = load_cases(release, category)
    if ids is not None:
        cases = [c for c in cases if c.id in ids]
    options = ReplayOptions(path=str(path), model=model, format=fmt, **extra)
    return BFCL.import_run(str(release.wheel), options, f"m.{model}", category, cases, {},
                           replay)


def by_id(run):
    return {t.case_id: t for t in run.trajectories}


def scored(release, run, category):
    cases = {c.id: c for c in run.cases}
    from toolcalib.benchmarks.bfcl.gold import gold_trace

    return {t.case_id: BFCL.score(str(release.wheel), cases[t.case_id], t,
                                  gold_trace(cases[t.case_id], release)
                                  if cases[t.case_id].multi_step else None)
            for t in run.trajectories}


def test_dropped_text_is_unknown_and_inference_errors_are_excluded(bfcl_release):
    ids = {"multi_turn_miss_param_0", "multi_turn_miss_param_7", "multi_turn_miss_param_10"}
    run = imported(bfcl_release, "multi_turn_miss_param", ids=ids)
    trajectories = by_id(run)
    assert trajectories["multi_turn_miss_param_10"].outcome == "error"
    assert "Error during inference" in trajectories["multi_turn_miss_param_10"].error
    ended = [step.emission for turn in trajectories["multi_turn_miss_param_0"].turns
             for step in turn.steps if not step.emission.tool_calls]
    assert ended and all(not e.text_recorded and e.output_tokens for e in ended)
    profile = get_profile("default")
    assert {profile.classify(e, NO_CONTEXT).action for e in ended} == {"unknown"}
    assert run.summary["total_count"] == 3 and run.summary["correct_count"] == 1


def test_recorded_verdicts_agree_with_recomputed(bfcl_release):
    for category in ("multi_turn_base", "multi_turn_miss_func", "irrelevance",
                     "live_irrelevance"):
        run = imported(bfcl_release, category, ids={r.record for r in imported(
            bfcl_release, category, ids=set()).records})
        scores = scored(bfcl_release, run, category)
        recorded = {r.case_id: r.recorded.get("reward") for r in run.records}
        for case_id, score in scores.items():
            assert score.details["recorded_reward"] == recorded[case_id]
            if score.scored:
                assert score.details["reward_disagreement"] is None, (case_id, score)
                assert recorded[case_id] == float(score.passed)


def test_failed_case_keeps_bfcls_reason(bfcl_release):
    run = imported(bfcl_release, "multi_turn_base", ids={"multi_turn_base_0"})
    (record,) = [r for r in run.records if r.case_id == "multi_turn_base_0"]
    assert record.recorded["reward"] == 0.0 and record.recorded["reason"].startswith("multi_turn")


def test_absent_category_has_no_cell_and_is_named(bfcl_release):
    run = imported(bfcl_release, "multi_turn_long_context")
    assert run.trajectories == [] and run.cases == [] and run.records == []
    assert "no result file for category 'multi_turn_long_context'" in run.notes[0]
    assert run.summary["file"] is None and "no result file" in run.summary["source"]


def test_summary_only_score_file_gives_no_case_verdict(bfcl_release):
    run = imported(bfcl_release, "irrelevance", path=PANEL, model="gemini-2.5-flash-FC",
                   fmt=None, ids={"irrelevance_0", "irrelevance_27", "irrelevance_60"})
    assert all(r.recorded == {} for r in run.records)
    assert run.summary["source"] == "score file summary only"
    texts = {t.case_id: t.turns[0].steps[0].emission for t in run.trajectories}
    assert texts["irrelevance_0"].text.startswith("I am sorry")
    assert texts["irrelevance_27"].tool_calls
    no_score = imported(bfcl_release, "irrelevance", path=PANEL,
                        model="claude-opus-4-5-20251101-FC", fmt=None)
    assert no_score.summary["file"] is None and no_score.summary["source"] == "no score file"


def test_prompt_text_empty_list_is_recorded_text(bfcl_release):
    run = imported(bfcl_release, "irrelevance", path=PANEL, model="gpt-5.2-2025-12-11",
                   fmt=None, ids={"irrelevance_0"})
    first = by_id(run)["irrelevance_0"].turns[0].steps[0].emission
    assert first.text == "[]" and first.text_recorded


def test_release_check_excludes_changed_questions_and_unknown_ids(bfcl_release, tmp_path):
    root = tmp_path / "run"
    shutil.copytree(VLLM, root)
    path = root / "result" / GPT / "multi_turn" / "BFCL_v4_multi_turn_base_result.json"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    lines[1]["inference_log"][1]["begin_of_turn_query"][0]["content"] += " (edited)"
    lines.append({**lines[0], "id": "multi_turn_base_9999"})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    (root / "score").rename(tmp_path / "elsewhere")
    run = imported(bfcl_release, "multi_turn_base", path=root,
                   ids={line["id"] for line in lines})
    edited = lines[1]["id"]
    assert by_id(run)[edited].outcome == "error"
    (record,) = [r for r in run.records if r.record == edited]
    assert "turn 0 differs from the release's" in record.excluded
    (alien,) = [r for r in run.records if r.record == "multi_turn_base_9999"]
    assert alien.case_id is None and alien.excluded == "not a case of the pinned release"
    assert run.summary["source"] == "no score file"
    rescored = imported(bfcl_release, "multi_turn_base", path=root, ids={edited},
                        score_path=str(tmp_path / "elsewhere"))
    assert rescored.summary["total_count"] == 3


def test_compressed_and_v3_names_read_alike(bfcl_release, tmp_path):
    root = tmp_path / "result" / GPT / "non_live"
    root.mkdir(parents=True)
    source = VLLM / "result" / GPT / "non_live" / "BFCL_v4_irrelevance_result.json"
    (root / "BFCL_v3_irrelevance_result.json.xz").write_bytes(lzma.compress(source.read_bytes()))
    plain = imported(bfcl_release, "irrelevance", ids={"irrelevance_0", "irrelevance_16"})
    packed = imported(bfcl_release, "irrelevance", path=tmp_path / "result",
                      ids={"irrelevance_0", "irrelevance_16"})
    assert [t.turns for t in packed.trajectories] == [t.turns for t in plain.trajectories]


def test_many_models_in_one_entry_expand_to_one_model_each():
    entry = {"name": "panel", "backend": "replay", "options": {"path": str(PANEL), "model": "*"},
             "benchmarks": {"bfcl": ["baseline"]}}
    models = expand_models([entry, {"name": "other", "backend": "policy"}])
    assert [m["name"] for m in models] == [
        "panel.BitAgent_BitAgent-Bounty-8B", "panel.claude-opus-4-5-20251101-FC",
        "panel.gemini-2.5-flash-FC", "panel.gpt-5.2-2025-12-11", "other"]
    assert models[2]["options"] == {"path": str(PANEL), "model": "gemini-2.5-flash-FC"}
    with pytest.raises(InputError, match="needs 'benchmarks' to name the one benchmark"):
        expand_models([{**entry, "benchmarks": None}])
    with pytest.raises(InputError, match="option 'model' is BFCL's"):
        expand_models([{**entry, "benchmarks": {"tau2": ["baseline"]}}])


def _copy(tmp_path: Path) -> Path:
    root = tmp_path / "run"
    shutil.copytree(VLLM, root)
    return root


SCORE = Path("score") / GPT / "non_live" / "BFCL_v4_irrelevance_score.json"
RESULT = Path("result") / GPT / "non_live" / "BFCL_v4_irrelevance_result.json"


@pytest.mark.parametrize(("edit", "message"), [
    (lambda r: (r / RESULT).write_text((r / RESULT).read_text()[:-40]),
     r"BFCL_v4_irrelevance_result.json:2: not valid JSON"),
    (lambda r: (r / RESULT).write_text("oops\n" + (r / RESULT).read_text()),
     r"BFCL_v4_irrelevance_result.json:1: not valid JSON"),
    (lambda r: (r / SCORE).write_text((r / SCORE).read_text().replace(
        '"irrelevance_16"', '"irrelevance_17"')),
     r"BFCL_v4_irrelevance_score.json:2: field 'id': 'irrelevance_17' is not in the result"),
    (lambda r: (r / RESULT).write_text((r / RESULT).read_text().replace(
        '"irrelevance_16"', '"multi_turn_base_16"')),
     r"BFCL_v4_irrelevance_result.json:2: field 'id': 'multi_turn_base_16' is not a"),
    (lambda r: (r / RESULT).write_text((r / RESULT).read_text().replace(
        '"irrelevance_16"', '"irrelevance_0"')),
     r"BFCL_v4_irrelevance_result.json:2: field 'id': 'irrelevance_0' already on line 1"),
    (lambda r: (r / RESULT.with_name("BFCL_v3_irrelevance_result.json")).write_text(
        (r / RESULT).read_text()),
     r"two result files for category 'irrelevance'"),
    (lambda r: (r / SCORE).write_text('{"accuracy": 0.5, "correct_count": 0, '
                                      '"total_count": 2}\n' + (r / SCORE).read_text()
                                      .split("\n", 1)[1]),
     r"score.json:1: field 'correct_count': 0 of 2 leaves 2 failed, the file lists 1"),
    (lambda r: [(r / RESULT.with_suffix(".json.xz")).write_bytes(lzma.compress(
        (r / RESULT).read_bytes())[:-20]), (r / RESULT).unlink()],
     r"BFCL_v4_irrelevance_result.json.xz:\d+: cannot be read"),
])
def test_bad_input_is_one_line_naming_file_line_and_field(bfcl_release, tmp_path, edit,
                                                          message):
    root = _copy(tmp_path)
    edit(root)
    with pytest.raises(InputError, match=message):
        imported(bfcl_release, "irrelevance", path=root)


def test_the_stage_writes_the_recorded_headline_or_nothing(bfcl_release, tmp_path):
    from toolcalib.cli import main

    def run(path: Path) -> tuple[int, dict[str, Path]]:
        outs = {name: tmp_path / f"{name}.out" for name in ("t", "c", "r", "h")}
        spec = json.dumps({"name": "vllm.gpt", "backend": "replay",
                           "options": {"path": str(path), "model": GPT, "format": "fc"}})
        cases = tmp_path / "cases.jsonl"
        main(["normalize", "--benchmark", "bfcl", "--category", "irrelevance", "--source",
              str(bfcl_release.wheel), "--out", str(cases)])
        status = main(["import-run", "--model-spec", spec, "--benchmark", "bfcl",
                       "--category", "irrelevance", "--source", str(bfcl_release.wheel),
                       "--cases", str(cases), "--case-ids", "irrelevance_0,irrelevance_16",
                       "--out", str(outs["t"]), "--out-cases", str(outs["c"]),
                       "--out-records", str(outs["r"]), "--out-recorded", str(outs["h"])])
        return status, outs

    status, outs = run(VLLM)
    assert status == 0
    assert json.loads(outs["h"].read_text()) == {
        "accuracy": 0.5, "benchmark": "bfcl", "category": "irrelevance", "correct_count": 1,
        "file": f"score/{GPT}/non_live/BFCL_v4_irrelevance_score.json", "model": "vllm.gpt",
        "source": "score file summary", "total_count": 2}
    records = [json.loads(line) for line in outs["r"].read_text().splitlines()]
    assert [(r["case_id"], r["recorded_reward"]) for r in records] == [
        ("irrelevance_0", 1.0), ("irrelevance_16", 0.0)]
    root = _copy(tmp_path)
    (root / RESULT).write_text("oops\n")
    status, outs = run(root)
    assert status == 2 and not any(out.exists() for out in outs.values())


def test_shipped_runs_match_their_provenance():
    """Every shipped file is listed with its sha256, and decompresses to the published bytes."""
    import hashlib

    import yaml

    root = Path(__file__).parent.parent / "data" / "published" / "bfcl"
    provenance = yaml.safe_load((root / "PROVENANCE.yaml").read_text())
    listed = {entry["path"]: entry for entry in provenance["files"]}
    assert set(listed) == {p.relative_to(root).as_posix() for p in root.rglob("*.json.xz")}
    for path, entry in listed.items():
        packed = (root / path).read_bytes()
        assert hashlib.sha256(packed).hexdigest() == entry["sha256"], path
        assert hashlib.sha256(lzma.decompress(packed)).hexdigest() == \
            entry["upstream_sha256"], path
    assert {s["licence"] for s in provenance["sources"]} == {"none stated"}


def test_agreement_line_sets_the_recorded_headline_beside_ours(tmp_path):
    from toolcalib.metrics.published import (
        PUBLISHED,
        PUBLISHED_SCHEMA,
        file_lines,
        read_recorded,
        recorded_table,
    )

    def row(index, recorded, reward):
        return PUBLISHED.row({
            "model": "p.m", "benchmark": "bfcl", "category": "irrelevance", "file": "r.json",
            "index": index, "record": f"irrelevance_{index}", "case_id": f"irrelevance_{index}",
            "claimed_case": f"irrelevance_{index}", "note": None,
            "status": "scored", "recorded_reward": recorded, "reward": reward,
            "agrees": None if recorded is None else recorded == reward, "differences": 0,
            "policy_difference": None})

    path = tmp_path / "irrelevance.recorded.json"
    path.write_text(json.dumps({"model": "p.m", "benchmark": "bfcl", "category": "irrelevance",
                                "file": "s.json", "accuracy": 0.5, "correct_count": 1,
                                "total_count": 2, "source": "score file summary only"}))
    recorded = recorded_table(read_recorded([path]))
    summary_only = pl.DataFrame([row(0, None, 1.0), row(1, None, 1.0)], schema=PUBLISHED_SCHEMA)
    (line,) = file_lines(summary_only, recorded)
    assert "no per-case verdict recorded; recomputed 1.000 (scored)" in line
    assert line.endswith("bfcl's own headline (score file summary only): 1 of 2 = 0.500 vs "
                         "recomputed 2 of 2 scored (counts compared: the file records no "
                         "per-case verdict)")
    per_case = pl.DataFrame([row(0, 1.0, 1.0), row(1, 0.0, 0.0)], schema=PUBLISHED_SCHEMA)
    (line,) = file_lines(per_case, recorded)
    assert "agree on 2 of 2" in line and line.endswith("vs recomputed 1 of 2 scored")
    assert file_lines(per_case) == [line.split("; bfcl's own")[0]]


def test_a_run_without_case_verdicts_is_scored_in_the_published_table(bfcl_release, tmp_path):
    """The panel's files record only BFCL's summary: their records are still scored (our
    verdict), with no recorded verdict to agree with."""
    from toolcalib.cli import main
    from toolcalib.jsonio import read_records
    from toolcalib.metrics.inputs import read_table
    from toolcalib.metrics.per_case import CASE_SCHEMA
    from toolcalib.metrics.published import RECORD_SCHEMA, published_table
    from toolcalib.records import Case

    out = {name: str(tmp_path / f"{name}.jsonl") for name in
           ("cases", "gold", "t", "c", "r", "h", "a", "s", "pc")}
    wheel = str(bfcl_release.wheel)
    assert main(["normalize", "--benchmark", "bfcl", "--category", "irrelevance", "--source",
                 wheel, "--out", out["cases"]]) == 0
    kept = [c for c in read_records(out["cases"], Case) if c.id in {"irrelevance_0",
                                                                     "irrelevance_27"}]
    Path(out["cases"]).write_text("".join(
        line for line in Path(out["cases"]).read_text().splitlines(keepends=True)
        if json.loads(line)["id"] in {c.id for c in kept}))
    assert main(["gold", "--benchmark", "bfcl", "--cases", out["cases"], "--source", wheel,
                 "--out", out["gold"]]) == 0
    spec = json.dumps({"name": "panel.gemini", "backend": "replay", "options": {
        "path": str(PANEL), "model": "gemini-2.5-flash-FC"}})
    assert main(["import-run", "--model-spec", spec, "--benchmark", "bfcl", "--category",
                 "irrelevance", "--source", wheel, "--cases", out["cases"], "--out", out["t"],
                 "--out-cases", out["c"], "--out-records", out["r"],
                 "--out-recorded", out["h"]]) == 0
    assert main(["evaluate", "--profile", "default", "--benchmark", "bfcl", "--source", wheel,
                 "--cases", out["cases"], "--gold", out["gold"], "--trajectories", out["t"],
                 "--actions", out["a"], "--scores", out["s"], "--per-case", out["pc"],
                 "--triples", str(tmp_path / "triples.csv")]) == 0
    table = published_table([read_table(out["r"], RECORD_SCHEMA)],
                            read_table(out["pc"], CASE_SCHEMA))
    scored = table.filter(pl.col("case_id").is_not_null())
    assert scored["status"].to_list() == ["scored", "scored"]
    assert scored["reward"].to_list() == [1.0, 0.0]
    assert scored["recorded_reward"].null_count() == 2


def test_an_absent_category_is_named_in_the_report(tmp_path):
    from toolcalib.metrics.published import absent_lines, read_recorded, recorded_table

    path = tmp_path / "multi_turn_long_context.recorded.json"
    path.write_text(json.dumps({
        "model": "m", "benchmark": "bfcl", "category": "multi_turn_long_context", "file": None,
        "accuracy": None, "correct_count": None, "total_count": None,
        "source": "no result file for category 'multi_turn_long_context' under r/m: no cell"}))
    assert absent_lines(recorded_table(read_recorded([path]))) == [
        "m · bfcl · multi_turn_long_context: no result file for category "
        "'multi_turn_long_context' under r/m: no cell"]
    assert absent_lines(None) == []


def test_only_contradicted_or_unscored_records_are_listed():
    from toolcalib.metrics.published import PUBLISHED, PUBLISHED_SCHEMA, disagreements

    def row(index, status, recorded, reward):
        return PUBLISHED.row({
            "model": "m", "benchmark": "bfcl", "category": "irrelevance", "file": "r.json",
            "index": index, "record": f"irrelevance_{index}", "claimed_case": None,
            "case_id": f"irrelevance_{index}", "status": status, "recorded_reward": recorded,
            "reward": reward, "note": None, "differences": 0, "policy_difference": None,
            "agrees": None if recorded is None or reward is None else recorded == reward})

    table = pl.DataFrame([row(0, "scored", None, 1.0), row(1, "scored", 1.0, 1.0),
                          row(2, "scored", 1.0, 0.0), row(3, "excluded", 0.0, None)],
                         schema=PUBLISHED_SCHEMA)
    assert disagreements(table)["index"].to_list() == [2, 3]


def test_an_inference_error_record_names_its_error(bfcl_release):
    run = imported(bfcl_release, "multi_turn_miss_param", ids={"multi_turn_miss_param_10"})
    (record,) = [r for r in run.records if r.case_id == "multi_turn_miss_param_10"]
    assert record.excluded.startswith("BFCL recorded no outputs: Error during inference")
    assert record.recorded["reward"] == 0.0  # BFCL counted it failed
