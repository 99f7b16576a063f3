"""Stage: one action class per emission and per turn."""

from toolcalib.classify.profiles import get_profile
from toolcalib.classify.trajectory import actions_frame, classify_trajectory
from toolcalib.stages import log, matching, write_parquet
from toolcalib.variants import get_variant


def run(profile: str, cases: str, trajectories: str, out: str) -> None:
    """Gold classes are the case's as the trajectory's variant presents it."""
    chosen = get_profile(profile)
    rows = [row for case, trajectory in matching(cases, trajectories)
            for row in classify_trajectory(
                trajectory, get_variant(trajectory.variant).adjust_case(case), chosen)]
    write_parquet(out, actions_frame(rows))
    log(f"classified {len(rows)} emissions/turns with profile '{profile}' -> {out}")
