"""Two runs compared on the same cases: the config's `pairs` (model `other` against model `base`,
e.g. one model served by two builds), per variant both ran.

`pairs.csv` holds, per pair, variant, benchmark, category, gold class and metric (GAR,
GAR@gold turn, TER, Acc), what `paired.paired` computes for the variant shifts (rates of both
sides, delta, discordant pairs, exact McNemar p, the flipped case ids each way, unpaired and
undecided counts), and the flips of that metric by cause. `pair_flips.csv` lists every case
that changed between the two runs, with its cause (`CAUSES`) and the metrics it flipped.

A case is one (benchmark, category, gold class, case id) both runs have. Its cause is the
first of:

- `error_appeared` / `error_vanished`: unscored (an infrastructure outcome: error, context
  overflow, excluded at import) on `other` only / on `base` only; no metric pairs it;
- `action_changed`: scored on both, the classes emitted (the union of turn classes) or the
  class at the gold turn differ; it explains every GAR, GAR@gold turn and TER flip;
- `execution_changed`: scored on both, the same classes, the benchmark's verdict differs (an
  Acc flip with the same actions).

A case the same on both sides has no row; a case present on one side only is counted in the
pairs table's `n_unpaired_*`, never a flip.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from toolcalib.jsonio import InputError, atomic_write_bytes
from toolcalib.metrics.paired import FLIP_SEP, METRICS, STATS, paired
from toolcalib.metrics.rows import DIGITS
from toolcalib.metrics.spec import Column, TableSpec

PAIR_METRICS = ("gar", "gar_turn", "ter", "acc")
"""The metrics compared, in their sort order."""
CELL = ["benchmark", "category", "gold_action"]
CASE = [*CELL, "case_id"]
CAUSES = ("error_appeared", "error_vanished", "action_changed", "execution_changed")
"""A changed case's cause, in this order of precedence (module docstring)."""
FLIP_CAUSES = CAUSES[2:]
"""The causes of a metric's discordant pair (both sides scored)."""
PAIR_NAME = (Column("pair"), Column("base"), Column("other"), Column("variant"))

RENAMES = {"rate_a": "rate_base", "rate_b": "rate_other", "n_unpaired_a": "n_unpaired_base",
           "n_unpaired_b": "n_unpaired_other"}
PAIRS = TableSpec("pairs", 1, (
    *PAIR_NAME, *(Column(key) for key in CELL),
    *(Column(RENAMES.get(c.name, c.name), c.dtype) for c in STATS),
    *(Column(f"flips_{cause}", "int") for cause in FLIP_CAUSES),
    *(Column(cause, "int") for cause in CAUSES[:2]),
))
"""`pairs.csv`: `delta` = rate_other - rate_base; `b01` the pairs that miss on base and hit on
other (`flips_gained`), `b10` the reverse (`flips_lost`); `flips_action_changed` +
`flips_execution_changed` = b01 + b10; `error_appeared` / `error_vanished`: the cell's cases
unscored on one side only (the same on each metric's row)."""
FLIPS = TableSpec("pair_flips", 1, (
    *PAIR_NAME, *(Column(key) for key in CASE), Column("cause"),
    Column("outcome_base"), Column("outcome_other"), Column("emitted_base"),
    Column("emitted_other"), Column("gold_turn_class_base"), Column("gold_turn_class_other"),
    Column("passed_base", "bool"), Column("passed_other", "bool"),
    Column("metrics_gained"), Column("metrics_lost"),
))
"""`pair_flips.csv`: one row per changed case; `metrics_gained` / `metrics_lost`: the metrics
of `PAIR_METRICS` that went miss -> hit / hit -> miss from base to other (`|`-joined, empty
when none: an action can change without moving any metric)."""
FILES = ("pairs.csv", "pair_flips.csv")
SIDE_COLUMNS = list(dict.fromkeys(["outcome", "emitted", "gold_turn_class", "passed", "scored",
                                   *(METRICS[m] for m in PAIR_METRICS)]))
"""Each side's per-case columns a flip is read from (`passed` is Acc's too)."""


@dataclass(frozen=True)
class Pair:
    """One entry of the config's `pairs`: `other` compared with `base`, named `name`."""

    name: str
    base: str
    other: str

    @classmethod
    def of(cls, entry: Mapping[str, Any]) -> Pair:
        fields = {"name", "base", "other"}
        if not isinstance(entry, Mapping) or set(entry) != fields or not all(
                isinstance(entry[key], str) and entry[key] for key in fields):
            raise InputError(f"a pair is {{name, base, other}} (three names), got {entry!r}")
        if entry["base"] == entry["other"]:
            raise InputError(f"pair {entry['name']!r}: base and other are both "
                             f"{entry['base']!r}")
        return cls(entry["name"], entry["base"], entry["other"])


def parse_pairs(entries: Iterable[Mapping[str, Any]]) -> list[Pair]:
    """The `--pairs` entries as `Pair`s (validated again here: names distinct)."""
    pairs = [Pair.of(entry) for entry in entries]
    names = [pair.name for pair in pairs]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise InputError(f"pairs named twice: {', '.join(twice)}")
    return pairs


def _side(per_case: pl.DataFrame, model: str, suffix: str) -> pl.DataFrame:
    return per_case.filter(pl.col("model") == model).select(
        "variant", *CASE, *(pl.col(c).alias(f"{c}_{suffix}") for c in SIDE_COLUMNS))


def _listed(flags: Sequence[tuple[str, pl.Expr]]) -> pl.Expr:
    """The names whose flag holds, `FLIP_SEP`-joined in the order given ('' when none)."""
    return pl.concat_list([pl.when(flag).then(pl.lit(name)) for name, flag in flags]) \
        .list.drop_nulls().list.join(FLIP_SEP)


def flip_table(per_case: pl.DataFrame, pairs: Sequence[Pair]) -> pl.DataFrame:
    """`FLIPS`: every case that changed between a pair's two runs, with its cause."""
    frames = []
    for pair in pairs:
        joined = _side(per_case, pair.base, "base").join(
            _side(per_case, pair.other, "other"), on=["variant", *CASE], how="inner")
        scored_base = pl.col("scored_base").fill_null(False)
        scored_other = pl.col("scored_other").fill_null(False)
        both = scored_base & scored_other
        acted = (pl.col("emitted_base").ne_missing(pl.col("emitted_other"))
                 | pl.col("gold_turn_class_base").ne_missing(pl.col("gold_turn_class_other")))
        cause = (pl.when(scored_base & ~scored_other).then(pl.lit(CAUSES[0]))
                 .when(~scored_base & scored_other).then(pl.lit(CAUSES[1]))
                 .when(both & acted).then(pl.lit(CAUSES[2]))
                 .when(both & pl.col("passed_base").ne_missing(pl.col("passed_other")))
                 .then(pl.lit(CAUSES[3])))
        hits = {m: (pl.col(f"{METRICS[m]}_base"), pl.col(f"{METRICS[m]}_other"))
                for m in PAIR_METRICS}
        gained = [(m, both & ~b & o) for m, (b, o) in hits.items()]
        lost = [(m, both & b & ~o) for m, (b, o) in hits.items()]
        frames.append(joined.with_columns(
            pl.lit(pair.name).alias("pair"), pl.lit(pair.base).alias("base"),
            pl.lit(pair.other).alias("other"), cause.alias("cause"),
            _listed(gained).alias("metrics_gained"), _listed(lost).alias("metrics_lost"),
        ).filter(pl.col("cause").is_not_null()).select(FLIPS.names))
    if not frames:
        return pl.DataFrame(schema=FLIPS.schema())
    return pl.concat(frames).cast(pl.Schema(FLIPS.schema())).sort(
        "pair", "variant", *CASE)


def _cause_counts(flips: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(per pair, variant, cell and metric: its flips by cause; per pair, variant and cell:
    the errors that appeared and vanished)."""
    keys = ["pair", "variant", *CELL]
    per_metric = (
        flips.select(*keys, "cause", pl.concat_list(
            pl.col("metrics_gained").str.split(FLIP_SEP),
            pl.col("metrics_lost").str.split(FLIP_SEP)).alias("metric"))
        .explode("metric").filter(pl.col("metric") != "")
        .group_by(*keys, "metric").agg(
            pl.col("cause").eq(cause).sum().cast(pl.Int64).alias(f"flips_{cause}")
            for cause in FLIP_CAUSES))
    errors = flips.group_by(keys).agg(
        pl.col("cause").eq(cause).sum().cast(pl.Int64).alias(cause) for cause in CAUSES[:2])
    return per_metric, errors


def pair_table(per_case: pl.DataFrame, pairs: Sequence[Pair],
               flips: pl.DataFrame | None = None) -> pl.DataFrame:
    """`PAIRS`: each pair, per variant both runs ran, compared with `paired.paired` on the
    cases (benchmark, category, gold class, case id) of both; `flips`: `flip_table`'s."""
    flips = flip_table(per_case, pairs) if flips is None else flips
    frames = []
    for pair in pairs:
        ran = {model: set(per_case.filter(pl.col("model") == model)["variant"].to_list())
               for model in (pair.base, pair.other)}
        for variant in sorted(ran[pair.base] & ran[pair.other]):
            for metric in PAIR_METRICS:
                table = paired(per_case, a={"model": pair.base, "variant": variant},
                               b={"model": pair.other, "variant": variant}, metric=metric,
                               keys=CASE, groups=CELL).table
                frames.append(table.rename(RENAMES).with_columns(
                    pl.lit(pair.name).alias("pair"), pl.lit(pair.base).alias("base"),
                    pl.lit(pair.other).alias("other"), pl.lit(variant).alias("variant")))
    schema = PAIRS.schema()
    if not frames:
        return pl.DataFrame(schema=schema)
    per_metric, errors = _cause_counts(flips)
    keys = ["pair", "variant", *CELL]
    order = {metric: i for i, metric in enumerate(PAIR_METRICS)}
    return (pl.concat(frames)
            .join(per_metric, on=[*keys, "metric"], how="left", nulls_equal=True)
            .join(errors, on=keys, how="left", nulls_equal=True)
            .with_columns(pl.col(c.name).fill_null(0) for c in PAIRS.columns[-4:])
            .with_columns(pl.col("metric").replace_strict(order).alias("_order"))
            .sort("pair", "variant", *CELL, "_order")
            .select(PAIRS.names).cast(pl.Schema(schema)))


def _csv(frame: pl.DataFrame) -> bytes:
    return frame.write_csv(float_precision=DIGITS).encode("utf-8")


def write_pairs(out_dir: str | Path, per_case: pl.DataFrame,
                pairs: Sequence[Pair]) -> dict[str, Path]:
    """`out_dir/pairs.csv` and `pair_flips.csv` (header only without pairs); their paths."""
    out = Path(out_dir)
    flips = flip_table(per_case, pairs)
    atomic_write_bytes(out / FILES[0], _csv(pair_table(per_case, pairs, flips)))
    atomic_write_bytes(out / FILES[1], _csv(flips))
    return {name: out / name for name in FILES}
