"""A τ² results file checked against the pinned release: its policy (`check_release`,
`policy_difference`) and whether each embedded task is the release's."""

from __future__ import annotations

from typing import Literal

from toolcalib.benchmarks.tau2.environment import task_as_read
from toolcalib.benchmarks.tau2.release import Tau2Release
from toolcalib.benchmarks.tau2.run import Run
from toolcalib.jsonio import InputError

PolicyCheck = Literal["pinned", "edited"]


def check_release(run: Run, release: Tau2Release, policy: PolicyCheck = "pinned"
                  ) -> tuple[dict[str, bool], str | None]:
    """Task id -> whether the embedded task is the pinned release's as τ² reads tasks
    (`task_as_read`), and the first passage where the file's policy differs from the pinned
    one (None: the same); a differing policy raises unless `policy` is `edited`."""
    text = (run.info.get("environment_info") or {}).get("policy")
    difference = policy_difference(str(text or ""), release.policy(run.domain))
    if difference is not None and policy == "pinned":
        raise InputError(f"{run.path}: field 'info.environment_info.policy': not the pinned "
                         f"release's {run.domain} policy ({release.wheel.name}): {difference}"
                         "; to import it anyway set the model's option `policy: edited`")
    tasks = {task["id"]: task_as_read(release, task) for task in release.tasks(run.domain)}
    return {task_id: tasks.get(task_id) == task_as_read(release, task)
            for task_id, task in run.tasks.items()}, difference


def policy_difference(policy: str, pinned: str, width: int = 120) -> str | None:
    """Where `policy` first differs from `pinned`: the line of each holding the first
    differing character (cut to `width` characters around it; a difference at a line's end
    shows the next line too); None when equal."""
    if policy == pinned:
        return None
    at = next((i for i, (a, b) in enumerate(zip(policy, pinned, strict=False)) if a != b),
              min(len(policy), len(pinned)))
    line = policy.count("\n", 0, at) + 1

    def passage(text: str) -> str:
        if at >= len(text):
            return "nothing more"
        start, end = text.rfind("\n", 0, at) + 1, text.find("\n", at + 1)
        whole = text[start:len(text) if end < 0 else end]
        cut = max(0, min(at - start - width // 2, len(whole) - width))
        return repr(("…" if cut else "") + whole[cut:cut + width]
                    + ("…" if cut + width < len(whole) else ""))

    return (f"first difference at character {at} (line {line}): the file has "
            f"{passage(policy)}, the release {passage(pinned)}")
