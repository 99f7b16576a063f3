"""Stage: triples, confusion matrices and per-case tables over every run."""

from collections.abc import Sequence

from toolcalib.metrics.inputs import ACTION_SCHEMA, concat, read_table
from toolcalib.metrics.per_case import CASE_SCHEMA
from toolcalib.metrics.published import RECORD_SCHEMA
from toolcalib.metrics.write import write_outputs
from toolcalib.stages import log


def run(actions: Sequence[str], runs: Sequence[str], out_dir: str,
        published: Sequence[str] = ()) -> None:
    """`actions`: the action tables; `runs`: each run's per-case table (both written by
    `evaluate`, JSON lines); `published`: the published runs' records tables (`import-run`)."""
    action_frame = concat([read_table(p, ACTION_SCHEMA) for p in actions], ACTION_SCHEMA)
    write_outputs(out_dir, action_frame, [read_table(p, CASE_SCHEMA) for p in runs],
                  [read_table(p, RECORD_SCHEMA) for p in published])
    log(f"aggregated {len(actions)} action tables and {len(runs)} runs -> {out_dir}")
