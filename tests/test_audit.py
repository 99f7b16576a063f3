"""`toolcalib audit`: every number of a real (tiny) run is reproduced from its listed cases,
tampering is reported against dvc.lock, a case replays with its classes and verdict, and
unknown cells or missing artifacts give errors that say what exists and what to run."""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl
import pytest

from tests.support.workflow_build import TINY, clone, sh
from toolcalib.metrics.counts import COUNTED
from toolcalib.metrics.rows import COUNTS, DIGITS, RATES, STRUCTURAL
from toolcalib.metrics.wilson import wilson
from toolcalib.provenance.audit.case import align_messages, truncate
from toolcalib.provenance.audit.main import audit, load_run, main_audit
from toolcalib.provenance.audit.recompute import (
    KEYS,
    PER_CASE,
    TRIPLES,
    metrics_of,
    natural_key,
    resolve_metric,
)
from toolcalib.provenance.audit.render import shorten
from toolcalib.provenance.lock import ProvenanceError, md5_dir, md5_file
from toolcalib.records import Emission, Message, Step, ToolCall, Trajectory, TurnTrace

# -- fast: the pieces ----------------------------------------------------------------------

def test_natural_order_reads_numbers() -> None:
    ids = ["case_10", "case_2", "case_1", "live_12-3-1", "live_3-10-0", "live_3-2-0"]
    assert sorted(ids, key=natural_key) == [
        "case_1", "case_2", "case_10", "live_3-2-0", "live_3-10-0", "live_12-3-1"]


def test_truncation_says_how_much_was_cut() -> None:
    assert truncate("x" * 300) == "x" * 300
    assert truncate("x" * 1000) == "x" * 300 + "... [truncated: 700 more chars]"


def test_md5_is_what_dvc_records(tmp_path: Path) -> None:
    from dvc_data.hashfile.hash_info import HashInfo
    from dvc_data.hashfile.meta import Meta
    from dvc_data.hashfile.tree import Tree

    (tmp_path / "w" / "sub").mkdir(parents=True)
    (tmp_path / "w" / "a.txt").write_text("a\n")
    (tmp_path / "w" / "sub" / "b.bin").write_bytes(b"xyz")
    assert md5_file(tmp_path / "w" / "a.txt") == "60b725f10c9c85c70d97880dfe8191b3"
    tree = Tree()
    for path in sorted((tmp_path / "w").rglob("*")):
        if path.is_file():
            tree.add(path.relative_to(tmp_path / "w").parts, Meta(size=path.stat().st_size),
                     HashInfo("md5", md5_file(path)))
    tree.digest()
    assert md5_dir(tmp_path / "w") == tree.hash_info.value


def test_every_count_and_rate_is_auditable() -> None:
    columns = ["model", "n", *COUNTS, *(c for r in RATES for c in (f"{r}_k", r))]
    assert list(COUNTED) == COUNTS
    assert set(metrics_of(columns)) == set(RATES) | set(COUNTS)
    assert resolve_metric("gar_lo", columns) == resolve_metric("gar_k", columns) == "gar"
    with pytest.raises(ProvenanceError, match="metrics: gar, "):
        resolve_metric("model", columns)


def test_messages_align_with_steps_also_around_dropped_steps() -> None:
    said = Emission(text="Understood.")
    call = Emission(tool_calls=[ToolCall(name="ls", arguments={})], parse="ok")
    trajectory = Trajectory(
        case_id="c_0", benchmark="b", category="k", model="m", variant="sri",
        outcome="completed",
        turns=[
            TurnTrace(index=0, ended="no_call", steps=[
                Step(index=0, emission=said, dropped=True),
                Step(index=1, emission=call, results=["[]"]),
                Step(index=2, emission=said)]),
            TurnTrace(index=1, ended="no_call", steps=[Step(index=0, emission=said)]),
        ],
        messages=[
            Message(role="system", content="sys"), Message(role="user", content="u0"),
            Message(role="user", content="probe"),
            Message(role="assistant", tool_calls=call.tool_calls),
            Message(role="tool", name="ls", content="[]"),
            Message(role="assistant", content="Understood."),
            Message(role="user", content="u1"), Message(role="assistant", content="Understood."),
        ],
    )
    aligned = align_messages(trajectory)
    assert [(m["content"], m["before_step"]) for m in aligned[0]] == [
        ("sys", 0), ("u0", 0), ("probe", 1)]
    assert [(m["content"], m["before_step"]) for m in aligned[1]] == [("u1", 0)]


def test_missing_run_says_what_to_run(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main_audit(["--root", str(tmp_path), "m", "v", "b", "c", "gar"]) == 2
    error = capsys.readouterr().err
    assert TRIPLES in error and "dvc repro" in error and "snakemake --cores 8" in error


# -- slow: a real tiny run, recorded by DVC ------------------------------------------------

@pytest.fixture
def run(tiny_build: Path) -> Path:
    """The tiny config run by Snakemake in a fresh git repo, then `dvc commit`ted (the build
    shared by the whole run, tests/support/workflow_build.py: read only)."""
    return tiny_build


def cells(root: Path) -> list[dict]:
    return pl.read_csv(root / TRIPLES, schema_overrides=dict.fromkeys(KEYS, pl.String)).to_dicts()


@pytest.mark.slow
def test_every_cell_and_metric_is_reproduced_from_its_listed_cases(run: Path) -> None:
    loaded = load_run(run)
    rows = cells(run)
    metrics = metrics_of(list(rows[0]))
    assert set(metrics) == set(RATES) | {STRUCTURAL} | set(COUNTS) and len(rows) == 12
    per_case = pl.read_parquet(run / PER_CASE)
    for row in rows:
        cell = [row[k] for k in KEYS]
        in_cell = per_case.filter(pl.all_horizontal(pl.col(k) == row[k] for k in KEYS))
        for metric in metrics:
            report = audit(loaded, *cell, metric)
            assert report["ok"], report["problems"]
            numbers = report["metric"]
            numerator, denominator = numbers["numerator_cases"], numbers["denominator_cases"]
            assert numerator == sorted(numerator, key=natural_key)
            assert set(numerator) <= set(denominator) <= set(in_cell["case_id"])
            if metric in RATES:
                k, n = len(numerator), len(denominator)
                assert (k, n) == (row[f"{metric}_k"], row["n"]), (cell, metric)
                assert (round(k / n, DIGITS) if n else None) == row[metric]
                low, high = wilson(k, n)
                assert (round(low, DIGITS), round(high, DIGITS)) == (
                    row[f"{metric}_lo"], row[f"{metric}_hi"])
                # the listed numerator cases are exactly those whose column is true
                column = in_cell.filter(pl.col("scored") & pl.col(RATES[metric]))
                assert set(numerator) == set(column["case_id"])
            elif metric == STRUCTURAL:  # BFCL: no reading, 0 of 0
                assert (len(numerator), len(denominator)) == (0, row[f"{metric}_n"]) == (0, 0)
                assert report["metric"]["recomputed"]["value"] is None
            else:
                assert len(numerator) == row[metric], (cell, metric)
                assert len(denominator) == in_cell.height
        statuses = {a["role"]: a["status"] for a in report["provenance"]["artifacts"]}
        assert set(statuses.values()) == {"ok"}
        assert {"release", "cases", "gold", "trajectories", "actions", "scores", "run_per_case",
                "triples", "per_case", "manifest"} == set(statuses)


@pytest.mark.slow
def test_text_and_json_reports(run: Path, capsys: pytest.CaptureFixture) -> None:
    cell = ["policy-never_call", "baseline", "bfcl", "irrelevance"]
    assert main_audit([*cell, "acc_without_gold", "--root", str(run)]) == 0
    text = capsys.readouterr().out
    assert "acc_without_gold = 3" in text and "MATCHES the table" in text
    assert "irrelevance_0 irrelevance_1 irrelevance_2" in text
    assert "toolcalib generate --model-spec" in text and "toolcalib evaluate" in text
    assert "more paths ...]" in text  # the aggregate stage's long command, shortened
    assert '"policy": "never_call"' in text and "limit=3 classifier=" in text
    assert "audit: OK" in text

    assert main_audit([*cell, "acc", "--root", str(run), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert list(report) == ["cell", "gold_action", "metric", "provenance", "model_identity",
                            "config", "packages", "code", "ok", "problems"]
    assert report["metric"]["recomputed"] == {"value": 1.0, "k": 3, "n": 3, "lo": 0.438494,
                                              "hi": 1.0}
    assert report["model_identity"] == {"backend": "policy", "policy": "never_call"}
    assert report["config"]["model"]["name"] == "policy-never_call"
    assert report["code"]["dirty"] is False and report["packages"]["polars"]
    stages = [s["name"] for s in report["provenance"]["stages"]]
    assert stages[0].startswith("download--bfcl") and "aggregate" in stages
    assert "generate--policy-never_call--baseline--bfcl--irrelevance" in stages


@pytest.mark.slow
def test_case_replay_shows_messages_classes_and_verdict(
        run: Path, capsys: pytest.CaptureFixture) -> None:
    cell = ["policy-oracle", "baseline", "bfcl", "multi_turn_miss_param"]
    assert main_audit([*cell, "gar", "--root", str(run), "--case", "multi_turn_miss_param_0"]) == 0
    text = capsys.readouterr().out
    assert "gold class ask at gold turn" in text and "verdict: PASSED" in text
    assert re.search(r"turn 3  gold ask  class ask  rule \w+:ask:\S+ .*<- GOLD TURN", text)
    assert "call cd(" in text and "rule structured" in text and "user: " in text

    cell = ["policy-never_call", "sri", "bfcl", "multi_turn_base"]
    assert main_audit([*cell, "gar", "--root", str(run), "--json",
                       "--case", "multi_turn_base_0"]) == 0
    case = json.loads(capsys.readouterr().out)["case"]
    assert case["verdict"]["passed"] is False and case["verdict"]["error_type"]
    assert case["in_denominator"] and not case["in_numerator"]
    first = case["turns"][0]
    assert first["is_gold_turn"] and first["gold_action"] == "tool_call"
    assert first["class"]["action"] == "other"
    assert [s["dropped"] for s in first["steps"]] == [True, False]
    assert first["messages"][-1]["before_step"] == 1  # the probe's message, after the drop
    assert case["interventions"] and case["interventions"][0]["fired"]

    assert main_audit([*cell, "gar", "--root", str(run), "--case", "multi_turn_base_0"]) == 0
    text = capsys.readouterr().out
    assert "DROPPED" in text and "verdict: FAILED" in text and "error multi_turn:" in text


@pytest.mark.slow
def test_unknown_cell_metric_or_case_lists_what_exists(
        run: Path, capsys: pytest.CaptureFixture) -> None:
    base = ["--root", str(run)]
    assert main_audit([*base, "policy-x", "baseline", "bfcl", "irrelevance", "gar"]) == 2
    error = capsys.readouterr().err
    assert "unknown model 'policy-x'" in error
    assert "models: policy-never_call, policy-oracle" in error
    assert "variants: baseline, sri" in error
    assert "categories: irrelevance, multi_turn_base, multi_turn_miss_param" in error
    assert "metrics: gar, gar_turn" in error
    assert main_audit([*base, "policy-oracle", "baseline", "bfcl", "irrelevance", "garr"]) == 2
    assert "unknown metric 'garr'" in capsys.readouterr().err
    assert main_audit([*base, "policy-oracle", "baseline", "bfcl", "irrelevance", "gar",
                       "--case", "nope"]) == 2
    assert "irrelevance_0, irrelevance_1, irrelevance_2" in capsys.readouterr().err


@pytest.mark.slow
def test_tampered_or_missing_artifacts_fail_the_audit(
        tiny_build: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    run = clone(tiny_build, tmp_path / "audited")  # tampered with below: a private copy
    cell = ["policy-oracle", "sri", "bfcl", "multi_turn_base"]
    trajectories = run / "results/trajectories/policy-oracle/sri/bfcl/multi_turn_base.jsonl"
    original = trajectories.read_bytes()
    try:
        trajectories.write_bytes(original.replace(b'"Done."', b'"Done!"', 1))
        report = audit(run, *cell, "acc")
        assert not report["ok"] and report["metric"]["matches"]
        bad = {a["role"]: a for a in report["provenance"]["artifacts"] if a["status"] != "ok"}
        assert list(bad) == ["trajectories"] and bad["trajectories"]["status"] == "modified"
        assert bad["trajectories"]["manifest_sha256"] == "differs"
        # DVC's cache holds the recorded version: the differing record and field are named
        why = bad["trajectories"]["why"]
        assert len(why) == 1 and re.fullmatch(
            r"case multi_turn_base_\d+: turn \d+ step \d+: emission text differ", why[0]), why
        assert main_audit([*cell, "acc", "--root", str(run)]) == 1
        out = capsys.readouterr()
        assert "does not match dvc.lock" in out.out and "FAILED" in out.err
        assert "emission text differ" in out.out and "machine     recorded" in out.out
        cached = next((run / ".dvc/cache/files/md5").rglob(bad["trajectories"]["md5_recorded"][2:]))
        cached.rename(cached.with_suffix(".away"))  # without it: the manifest's digests
        try:
            why = audit(run, *cell, "acc")["provenance"]["artifacts"]
            why = next(a["why"] for a in why if a["role"] == "trajectories")
            assert len(why) == 1 and why[0].startswith(
                "emissions (texts, calls, finish reasons, token counts) differ in case(s) "
                "multi_turn_base_"), why
        finally:
            cached.with_suffix(".away").rename(cached)
    finally:
        trajectories.write_bytes(original)

    triples = run / TRIPLES
    original = triples.read_bytes()
    try:
        table = pl.read_csv(triples, schema_overrides=dict.fromkeys(KEYS, pl.String))
        hit = pl.all_horizontal(pl.col(k) == v for k, v in zip(KEYS, cell, strict=True))
        table.with_columns(acc_k=pl.when(hit).then(pl.col("acc_k") - 1)
                           .otherwise(pl.col("acc_k"))).write_csv(triples)
        report = audit(run, *cell, "acc")
        assert not report["metric"]["matches"]
        assert any("recomputed k 3 != table 2" in p for p in report["problems"])
        assert main_audit([*cell, "acc", "--root", str(run)]) == 1
        assert "DIFFERS from the table" in capsys.readouterr().out
    finally:
        triples.write_bytes(original)

    gold = run / "results/gold/bfcl/multi_turn_base.jsonl"
    moved = gold.with_suffix(".away")
    gold.rename(moved)
    try:
        report = audit(run, *cell, "acc")
        missing = [a for a in report["provenance"]["artifacts"] if a["status"] == "missing"]
        assert [a["role"] for a in missing] == ["gold"]
        assert any("dvc repro" in p for p in report["problems"])
    finally:
        moved.rename(gold)
    assert audit(run, *cell, "acc")["ok"]


@pytest.mark.slow
def test_an_overlay_run_audits_against_its_manifest_straight_after_snakemake(
        tiny_build: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """A run of another config than dvc.lock records (here the tiny build rerun with one more
    overlay, `limit: 2`), audited right after `snakemake` with no DVC step: every number of
    every cell is reproduced and every artifact the run's manifest hashes matches it; a
    changed trajectory still fails, explained by the manifest's digests."""
    run = clone(tiny_build, tmp_path / "overlay")
    (run / "overlay.yaml").write_text("limit: 2\n")
    sh("snakemake", "--cores", "2", "--configfile", TINY, "overlay.yaml", "--quiet", cwd=run)
    loaded = load_run(run)
    rows = cells(run)
    assert len(rows) == 12 and {row["n"] for row in rows} == {2}
    for row in rows:
        for metric in ("gar", "acc", "n"):
            report = audit(loaded, *(row[k] for k in KEYS), metric)
            assert report["ok"], report["problems"]
            statuses = {a["role"]: a["status"] for a in report["provenance"]["artifacts"]}
            assert statuses == {"release": "ok", "cases": "ok", "gold": "unhashed",
                                "trajectories": "ok", "actions": "unhashed",
                                "scores": "unhashed", "run_per_case": "unhashed",
                                "triples": "ok", "per_case": "ok", "manifest": "record"}
    cell = ["policy-oracle", "sri", "bfcl", "multi_turn_base"]
    assert main_audit([*cell, "acc", "--root", str(run)]) == 0
    text = capsys.readouterr().out
    assert ("dvc.lock records a run of another config (its manifest stage's config differs "
            "in: limit)") in text and "audit: OK" in text
    trajectories = run / "results/trajectories/policy-oracle/sri/bfcl/multi_turn_base.jsonl"
    trajectories.write_bytes(trajectories.read_bytes().replace(b'"Done."', b'"Done!"', 1))
    assert main_audit([*cell, "acc", "--root", str(run)]) == 1
    out = capsys.readouterr().out
    assert "does not match results/manifest.json" in out
    assert re.search(r"emissions \(texts, calls, finish reasons, token counts\) differ in "
                     r"case\(s\) multi_turn_base_\d", out), out


def test_long_commands_are_shortened_saying_what_was_cut() -> None:
    paths = " ".join(f"results/actions/m/{i}.jsonl" for i in range(50))
    command = f"toolcalib aggregate --actions {paths} --out-dir results/metrics"
    assert shorten(command) == (
        "toolcalib aggregate --actions results/actions/m/0.jsonl [... 48 more paths ...] "
        "results/actions/m/49.jsonl --out-dir results/metrics")
    spec = "--model-spec '" + "{" + '"a":1,' * 40 + "}'"
    assert shorten(f"toolcalib generate {spec} {paths}").startswith(
        "toolcalib generate --model-spec '{\"a\":1,")
    assert "more chars]" in shorten(f"toolcalib generate {spec} {paths}")
    assert shorten("toolcalib report --out-dir results/report") == (
        "toolcalib report --out-dir results/report")
