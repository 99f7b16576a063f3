"""`toolcalib audit`: where does one number of `results/metrics/triples.csv` come from?

Read-only. For one cell (model, variant, benchmark, category, and with `--gold` the gold class,
needed where a category has several: a τ² domain) and one metric it recomputes the
number from `results/metrics/per_case.parquet` (numerator and denominator case ids), checks
every artifact on the cell's path against the run's record (the md5 in `dvc.lock` where it
records a run of this config, else the sha256 in the run's own `results/manifest.json`:
`artifacts.which_record`), and lists the producing commands, the model's identity, the config
and the package versions of the manifest. `--case ID` replays one case or unit: messages,
emissions, calls, results, action classes and the verdict. Exit status: 0 when everything
agrees, 1 when the recomputed number or an artifact disagrees with the record, 2 when an input
is missing or the cell, case or unit unknown.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from toolcalib.jsonio import InputError
from toolcalib.metrics.inputs import read_csv_table
from toolcalib.metrics.published import (
    PUBLISHED_SCHEMA,
    RECORDED_FILE,
    RECORDED_SCHEMA,
    disagreements,
    file_lines,
)
from toolcalib.metrics.triples import TRIPLE_SCHEMA
from toolcalib.provenance.audit.artifacts import (
    Hashes,
    cell_paths,
    provenance,
    run_context,
    which_record,
)
from toolcalib.provenance.audit.case import WriteVerdicts, case_detail
from toolcalib.provenance.audit.recompute import (
    KEYS,
    PER_CASE,
    TRIPLES,
    cell_row,
    recompute,
    resolve_metric,
)
from toolcalib.provenance.audit.render import render
from toolcalib.provenance.lock import (
    HINT,
    LOCK,
    MANIFEST,
    ProvenanceError,
    read_lock,
    read_manifest,
    require,
)

PUBLISHED = "results/metrics/published.csv"
RECORDED = f"results/metrics/{RECORDED_FILE}"


@dataclass
class Run:
    """The recorded run an audit reads: tables, manifest, dvc.lock stages, file hashes."""

    root: Path
    triples: pl.DataFrame
    per_case: pl.DataFrame
    manifest: dict[str, Any]
    stages: dict[str, dict[str, Any]]
    hashes: Hashes
    published: pl.DataFrame | None = None
    """The published runs' table (`metrics.published`), where the run has one."""
    recorded: pl.DataFrame | None = None
    """The published runs' own headlines per category (`metrics.published.RECORDED`)."""


def load_run(root: str | Path) -> Run:
    """Read what every audit of the run at `root` needs (raises ProvenanceError when missing)."""
    root = Path(root)
    triples_path = require(root, TRIPLES, "the triples table")
    per_case_path = require(root, PER_CASE, "the per-case table")
    if not (root / LOCK).is_file() and not (root / MANIFEST).is_file():
        raise ProvenanceError(f"neither {LOCK} nor {MANIFEST} (the run's record) is under "
                              f"{root}: {HINT}")
    stages = read_lock(root) if (root / LOCK).is_file() else {}
    return Run(
        root=root,
        # typed: a rate column with no value (every cell n = 0) is a float column, not text
        triples=pl.read_csv(triples_path, infer_schema_length=None,
                            schema_overrides=TRIPLE_SCHEMA),
        per_case=pl.read_parquet(per_case_path),
        manifest=read_manifest(root),
        stages=stages,
        hashes=Hashes(root),
        published=(read_csv_table(root / PUBLISHED, PUBLISHED_SCHEMA)
                   if (root / PUBLISHED).is_file() else None),
        recorded=(read_csv_table(root / RECORDED, RECORDED_SCHEMA)
                  if (root / RECORDED).is_file() else None),
    )


def audit(run: Run | str | Path, model: str, variant: str, benchmark: str, category: str,
          metric: str, case: str | None = None, gold: str | None = None,
          write_verdicts: WriteVerdicts | None = None) -> dict[str, Any]:
    """The whole audit of one cell's metric (of gold class `gold`, required where the cell
    has several) as a JSON-ready dict (key order is fixed).

    `run` is a project root or a loaded Run (to audit many cells, hashing each file once);
    `write_verdicts`: the benchmark's write calls with the confirm rule's verdicts, which a
    write unit's replay shows (`case.WriteVerdicts`; without it, the call and the texts).
    """
    run = run if isinstance(run, Run) else load_run(run)
    cell = (model, variant, benchmark, category)
    row = cell_row(run.triples, cell, gold)
    metric = resolve_metric(metric, run.triples.columns)
    numbers = recompute(run.per_case, cell, metric, row, row["gold_action"] if gold else None)
    chain = provenance(run.hashes, cell, run.manifest, run.stages,
                       which_record(run.manifest, run.stages))
    context = run_context(run.manifest, cell)
    problems = [*numbers["problems"], *chain["problems"]]
    if run.manifest and context["model_identity"] is None:
        problems.append(f"model {model} has no identity in {MANIFEST}")
    report: dict[str, Any] = {
        "cell": dict(zip(KEYS, cell, strict=True)),
        "gold_action": row.get("gold_action"),
        "metric": {k: v for k, v in numbers.items() if k != "problems"},
        "provenance": {k: v for k, v in chain.items() if k != "problems"},
        **context,
    }
    if run.published is not None:
        mine = run.published.filter((pl.col("model") == model)
                                    & (pl.col("benchmark") == benchmark)
                                    & (pl.col("category") == category))
        if mine.height:
            report["published"] = {
                "agreement": file_lines(mine, run.recorded),
                "listed": disagreements(mine).drop("model").to_dicts()}
    if case is not None:
        rows = run.per_case.filter(pl.all_horizontal(
            pl.col(k) == v for k, v in zip(KEYS, cell, strict=True))).to_dicts()
        report["case"] = case_detail(
            run.root, cell, case, numbers, cell_paths(cell, run.manifest, run.stages), rows,
            context["config"]["classifier"], write_verdicts)
        problems += report["case"].pop("problems")
    report["ok"] = not problems
    report["problems"] = problems
    return report


def main_audit(argv: Sequence[str] | None = None,
               write_verdicts: WriteVerdicts | None = None) -> int:
    """`toolcalib audit MODEL VARIANT BENCHMARK CATEGORY METRIC [--gold] [--root] [--case]
    [--json]`; `write_verdicts` as `audit` takes it."""
    parser = argparse.ArgumentParser(prog="toolcalib audit",
                                     description=__doc__.split("\n")[0])
    for key in KEYS:
        parser.add_argument(key)
    parser.add_argument("metric", help="a rate (gar, ter, acc, ...) or count (n, ...) column")
    parser.add_argument("--root", type=Path, default=Path("."),
                        help="project root holding results/ and dvc.lock (default: .)")
    parser.add_argument("--gold", default=None,
                        help="the cell's gold class, where its category has several (τ²)")
    parser.add_argument("--case", default=None,
                        help="also show this case's (or unit's: <case>#write<k>) trajectory")
    parser.add_argument("--json", action="store_true", help="one JSON object instead of text")
    args = parser.parse_args(argv)
    try:
        report = audit(args.root, args.model, args.variant, args.benchmark, args.category,
                       args.metric, args.case, args.gold, write_verdicts)
    except (ProvenanceError, InputError) as error:
        print(f"toolcalib audit: error: {error}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=2))
    else:
        sys.stdout.write(render(report))
    if not report["ok"]:
        print(f"toolcalib audit: FAILED: {len(report['problems'])} problem(s)", file=sys.stderr)
        return 1
    return 0
