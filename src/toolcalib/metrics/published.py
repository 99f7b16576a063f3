"""The published runs' table: every record a published run's files hold, what became of it
(scored, excluded, or no cell), its recorded reward beside the recomputed verdict and the named
cause of each disagreement; and one agreement line per file (report, `toolcalib audit`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

import msgspec
import polars as pl

from toolcalib.jsonio import InputError, atomic_write_bytes
from toolcalib.metrics.rows import csv_bytes
from toolcalib.metrics.spec import Column, TableSpec
from toolcalib.records import Published

PUBLISHED = TableSpec("published", 1, (
    Column("model"), Column("benchmark"), Column("category"), Column("file"),
    Column("index", "int"), Column("record"), Column("claimed_case"), Column("case_id"),
    Column("status"), Column("recorded_reward", "float"), Column("reward", "float"),
    Column("agrees", "bool"), Column("note"), Column("differences", "int"),
    Column("policy_difference"),
))
"""The published-runs table (`published.csv`), one row per record, in file order. `status`:
`scored`, `excluded` (its case counted in `n_excluded`) or `no cell` (no task to score it on);
`reward`: the recomputed verdict (1 passed, 0 failed); `note`: why it is excluded, how it was
paired, or why the recorded reward differs; `policy_difference`: where the file's policy
first differs from the pinned release's (τ², imported with `policy: edited`), else empty."""
PUBLISHED_SCHEMA: dict[str, pl.DataType] = PUBLISHED.schema()
RECORDS = TableSpec("records", 1, tuple(
    PUBLISHED.column(name) if name in PUBLISHED.names else Column(name)
    for name in ["model", "benchmark", "category", "file", "index", "record", "claimed_case",
                 "case_id", "pairing", "excluded", "recorded_reward", "differences",
                 "policy_difference"]))
"""An import's records table (`<category>.records.jsonl`, `record_rows`): its columns typed as
`PUBLISHED`'s, `pairing` and `excluded` text."""
RECORD_COLUMNS = RECORDS.names
RECORD_SCHEMA: dict[str, pl.DataType] = RECORDS.schema()


def record_rows(model: str, benchmark: str, category: str,
                records: Iterable[Published]) -> list[dict[str, Any]]:
    """An import's records as rows of `RECORDS`."""
    return [RECORDS.row({
        "model": model, "benchmark": benchmark, "category": category, "file": r.file,
        "index": r.index, "record": r.record, "claimed_case": r.claimed_case,
        "case_id": r.case_id, "pairing": r.pairing, "excluded": r.excluded,
        "recorded_reward": r.recorded.get("reward"), "differences": len(r.differences),
        "policy_difference": r.policy_difference})
        for r in records]


def published_table(records: Sequence[pl.DataFrame], cases: pl.DataFrame) -> pl.DataFrame:
    """Every record with its fate, joined with the per-case table's verdict of its case."""
    if not records:
        return pl.DataFrame(schema=PUBLISHED_SCHEMA)
    table = pl.concat([frame.cast(RECORD_SCHEMA) for frame in records])  # type: ignore[arg-type]
    verdicts = cases.filter(pl.col("variant") == "baseline").select(
        "model", "benchmark", "category", "case_id", "scored", "passed",
        "reward_disagreement").unique(["model", "benchmark", "category", "case_id"])
    joined = table.join(verdicts, on=["model", "benchmark", "category", "case_id"],
                        how="left")
    reward = pl.when(pl.col("scored")).then(pl.col("passed").cast(pl.Float64))
    status = (pl.when(pl.col("case_id").is_null()).then(pl.lit("no cell"))
              .when(pl.col("scored")).then(pl.lit("scored")).otherwise(pl.lit("excluded")))
    note = (pl.when(pl.col("case_id").is_null() | ~pl.col("scored").fill_null(False))
            .then(pl.col("excluded"))
            .otherwise(pl.coalesce("reward_disagreement", "pairing")))
    return (joined.with_columns(reward.alias("reward"), status.alias("status"),
                                note.alias("note"))
            .with_columns((pl.col("reward") == pl.col("recorded_reward")).alias("agrees"))
            .select(PUBLISHED.names).sort("model", "benchmark", "file", "index"))


def file_lines(table: pl.DataFrame, recorded: pl.DataFrame | None = None) -> list[str]:
    """One agreement line per (model, file): records, scored, excluded, mean rewards (recorded
    over every record with one, both over the scored), agreements; where `recorded` (the
    `RECORDED` table) holds the category's own headline, it and our passes beside it, counts
    only where the file records no per-case verdict."""
    lines = []
    for (model, benchmark, file), rows in table.group_by(
            "model", "benchmark", "file", maintain_order=True):
        scored = rows.filter(pl.col("status") == "scored")
        recorded_all = rows["recorded_reward"].drop_nulls()
        line = (
            f"{model} · {benchmark} · {file}: {rows.height} records, {scored.height} scored, "
            f"{rows.filter(pl.col('status') == 'excluded').height} excluded, "
            f"{rows.filter(pl.col('status') == 'no cell').height} without a cell; ")
        if recorded_all.len():
            line += (f"mean reward recorded {_mean(recorded_all)} (all), "
                     f"{_mean(scored['recorded_reward'])} vs recomputed "
                     f"{_mean(scored['reward'])} (scored); agree on "
                     f"{int(scored['agrees'].sum() or 0)} of {scored.height}")
        else:
            line += (f"no per-case verdict recorded; recomputed {_mean(scored['reward'])} "
                     "(scored)")
        edited = rows["policy_difference"].drop_nulls()
        lines.append(line + _headline(recorded, model, benchmark, rows["category"][0], scored,
                                      counts_only=not recorded_all.len())
                     + (f"; policy edited, {edited[0]}" if edited.len() else ""))
    return lines


def absent_lines(recorded: pl.DataFrame | None) -> list[str]:
    """One line per (model, benchmark, category) whose import found no file: no cell."""
    if recorded is None:
        return []
    return [f"{r['model']} · {r['benchmark']} · {r['category']}: {r['source']}"
            for r in recorded.filter(pl.col("file").is_null()
                                     & pl.col("source").str.starts_with("no result file"))
            .iter_rows(named=True)]


def _headline(recorded: pl.DataFrame | None, model: str, benchmark: str, category: str,
              scored: pl.DataFrame, counts_only: bool) -> str:
    """`; <benchmark>'s own headline ...` for the line of a file, or '' without one."""
    if recorded is None:
        return ""
    mine = recorded.filter((pl.col("model") == model) & (pl.col("benchmark") == benchmark)
                           & (pl.col("category") == category)
                           & pl.col("correct_count").is_not_null())
    if not mine.height:
        return ""
    row = mine.row(0, named=True)
    passed = int(scored["reward"].sum() or 0)
    return (f"; {benchmark}'s own headline ({row['source']}): {row['correct_count']} of "
            f"{row['total_count']} = {row['accuracy']:.3f} vs recomputed {passed} of "
            f"{scored.height} scored" + (" (counts compared: the file records no per-case "
                                          "verdict)" if counts_only else ""))


def disagreements(table: pl.DataFrame) -> pl.DataFrame:
    """The scored records whose recorded reward the scorer contradicts, and the excluded ones,
    with their notes (a record without a recorded verdict has nothing to disagree with)."""
    contradicted = (pl.col("status") == "scored") & pl.col("agrees").eq(False).fill_null(False)
    return table.filter(contradicted | (pl.col("status") != "scored")).select(
        "model", "file", "index", "case_id", "status", "recorded_reward", "reward", "note")


def _mean(values: pl.Series) -> str:
    mean = values.drop_nulls().mean()  # None when no value is left
    return f"{mean:.3f}" if isinstance(mean, int | float) else "–"


class Recorded(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One `<category>.recorded.json` of an import: the benchmark's own headline for the
    category as its files record it (fields null where they record none)."""

    model: str
    benchmark: str
    category: str
    file: str | None
    accuracy: float | None
    correct_count: int | None
    total_count: int | None
    source: str | None


def read_recorded(paths: Iterable[str | Path]) -> list[Recorded]:
    """Each file's `Recorded`; a file that is not one, or whose counts are half given or out of
    range, fails naming the file."""
    out = []
    for path in paths:
        try:
            record = msgspec.json.decode(Path(path).read_bytes(), type=Recorded)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise InputError(f"{path}: not a recorded headline: {exc}") from None
        correct, total = record.correct_count, record.total_count
        if (correct is None) != (total is None):
            raise InputError(f"{path}: correct_count and total_count must both be given or "
                             f"both null, got {correct} and {total}")
        if correct is not None and total is not None and not 0 <= correct <= total:
            raise InputError(f"{path}: need 0 <= correct_count <= total_count, got "
                             f"{correct} and {total}")
        out.append(record)
    return out


RECORDED = TableSpec("recorded", 1, (
    Column("model"), Column("benchmark"), Column("category"), Column("file"), Column("source"),
    Column("accuracy", "float"), Column("correct_count", "int"), Column("total_count", "int"),
))
"""The published runs' own headlines per category (`recorded.csv`, one row per import, sorted
by model, benchmark, category): the benchmark's figure as the run's files record it (BFCL:
its score file's summary line, errors counted BFCL's way), null where they record none."""
RECORDED_SCHEMA: dict[str, pl.DataType] = RECORDED.schema()
RECORDED_FILE = "recorded.csv"


def recorded_table(headlines: Iterable[Recorded]) -> pl.DataFrame:
    """The headlines as `RECORDED` rows."""
    rows = sorted((msgspec.structs.asdict(h) for h in headlines),
                  key=lambda r: (r["model"], r["benchmark"], r["category"]))
    return pl.DataFrame([RECORDED.row(r) for r in rows], schema=RECORDED_SCHEMA)


def write_recorded(out_dir: str | Path, headlines: Sequence[Recorded]) -> Path:
    """`recorded.csv` in `out_dir`."""
    path = Path(out_dir) / RECORDED_FILE
    atomic_write_bytes(path, csv_bytes(recorded_table(headlines).to_dicts(), RECORDED.names))
    return path


class ImportFile(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """What became of one file's records in an import (`ImportStatus.files`)."""

    file: str
    """As the import's records name it (under the model's `path`)."""
    records: int
    scored: int
    """Records in a cell with a model outcome."""
    excluded: int
    """Records in a cell, never scored (their cases counted in `n_excluded`)."""
    without_cell: int
    """Records with no case to score them on (τ²: no task; BFCL: not a case of the release)."""
    not_selected: int
    """Records of a release case the run does not select (`limit`, `cases`)."""


class ImportStatus(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One `<category>.import.json` of the `import-run` stage: whether the published run's
    files of the category were imported, and what became of their records; or the one-line
    reason (`InputError`) its files could not be imported. No timestamp, no absolute path: the
    same files and code give the same bytes."""

    model: str
    benchmark: str
    category: str
    status: Literal["imported", "failed"]
    reason: str | None
    """`failed`: why (file, line, field); `imported` without a file: why nothing was read (no
    file for the category); else null."""
    files: list[ImportFile]
    cases_without_record: int = 0
    """Cases the run selects that no record answers (excluded; BFCL)."""


def read_imports(paths: Iterable[str | Path]) -> list[ImportStatus]:
    """Each file's `ImportStatus`; a file that is not one fails naming it."""
    out = []
    for path in paths:
        try:
            out.append(msgspec.json.decode(Path(path).read_bytes(), type=ImportStatus))
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise InputError(f"{path}: not an import status: {exc}") from None
    return out


IMPORT_FAILURES: dict[str, pl.DataType] = {
    "model": pl.String(), "benchmark": pl.String(), "category": pl.String(),
    "reason": pl.String()}
"""The report's "Imports that failed" table: one row per failed import."""


def failed_imports(statuses: Iterable[ImportStatus]) -> pl.DataFrame:
    """The imports that failed: model, benchmark, category and the one-line reason, sorted."""
    rows = [{"model": s.model, "benchmark": s.benchmark, "category": s.category,
             "reason": s.reason} for s in statuses if s.status == "failed"]
    return pl.DataFrame(rows, schema=IMPORT_FAILURES).sort("model", "benchmark", "category")
