"""Stage: triples, confusion matrices and per-case tables over every run."""

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any

from toolcalib.metrics.inputs import ACTION_SCHEMA, concat, read_parquet_table, read_table
from toolcalib.metrics.leaderboard import write_leaderboard
from toolcalib.metrics.pairs import parse_pairs, write_pairs
from toolcalib.metrics.per_case import CASE_SCHEMA
from toolcalib.metrics.published import RECORD_SCHEMA, read_recorded, write_recorded
from toolcalib.metrics.rows import CASES
from toolcalib.metrics.write import write_outputs
from toolcalib.stages import Arg, json_list, log


def run(actions: Annotated[Sequence[str], Arg("the action tables (JSON lines)")],
        runs: Annotated[Sequence[str], Arg("each run's per_case.jsonl")], out_dir: str,
        published: Annotated[Sequence[str], Arg(
            "the published runs' records tables (import-run --out-records)")] = (),
        recorded: Annotated[Sequence[str], Arg(
            "the published runs' own headlines, one JSON per category (<category>.recorded."
            "json of import-run), for the leaderboard")] = (),
        pairs: Annotated[Sequence[Mapping[str, Any]], Arg(
            "JSON list: the config's pairs, each {name, base, other} (pairs.csv)",
            json_list)] = ()) -> None:
    """`actions`: the action tables; `runs`: each run's per-case table (both written by
    `evaluate`, JSON lines); `published`: the published runs' records tables (`import-run`);
    `recorded`: their benchmarks' own headlines, one JSON per category (`import-run`), beside
    the leaderboard's numbers; `pairs`: the config's model-vs-model comparisons (name, base,
    other), behind `pairs.csv` and `pair_flips.csv` (header only without them)."""
    compared = parse_pairs(pairs)
    headlines = read_recorded(recorded)  # a bad file fails before anything is written
    action_frame = concat([read_table(p, ACTION_SCHEMA) for p in actions], ACTION_SCHEMA)
    write_outputs(out_dir, action_frame, [read_table(p, CASE_SCHEMA) for p in runs],
                  [read_table(p, RECORD_SCHEMA) for p in published])
    write_recorded(out_dir, headlines)
    write_leaderboard(out_dir, headlines)
    write_pairs(out_dir, read_parquet_table(Path(out_dir) / "per_case.parquet", CASES), compared)
    log(f"aggregated {len(actions)} action tables and {len(runs)} runs -> {out_dir}")
