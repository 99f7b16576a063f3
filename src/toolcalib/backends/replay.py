"""`replay`: a published run of any model, read by its benchmark's plugin
(`Benchmark.import_run`: each benchmark knows its own results format) instead of generated.

A `replay` model's jobs are imports (`toolcalib import-run`, rule `import_run`), never
generation: it runs under `baseline` only (what the recorded model actually saw), and its
trajectories and cases come from the files `path` names.
"""

from __future__ import annotations

from typing import Literal

from toolcalib.config import ModelSpec, StrictModel
from toolcalib.jsonio import InputError


class ReplayOptions(StrictModel, frozen=True, kw_only=True):
    path: str
    """A results file, or a folder of them (BFCL: the results folder holding `model`'s)."""
    model: str | None = None
    """BFCL: the model's folder under `path` (BFCL's registry name, `/` written `_`); `*`:
    every model folder under `path`, one model each, named `<entry name>.<folder>`
    (`toolcalib.expand`)."""
    format: Literal["prompt", "fc"] | None = None
    """BFCL: what a recorded output is (`prompt`: the model's text, required; `fc`: a bare
    string is an FC text reply); unset: read by type (a string is text, a list or dict an FC
    handler's decoded calls)."""
    score_path: str | None = None
    """BFCL: the folder holding the model folders of BFCL's score files (default: `score/`
    beside the result folder)."""
    pairing: Literal["content", "label"] = "content"
    """τ²: each simulation's task: the one its recorded checks match (`content`, ties broken
    by action ids, dialogue identifiers, then the label), or its label where the checks allow
    it (`label`; otherwise excluded); the evidence is recorded per simulation
    (`benchmarks.tau2.pairing`)."""
    policy: Literal["pinned", "edited"] = "pinned"
    """τ²: a file whose policy text differs from the pinned release's stops the import
    (`pinned`), or is imported with its first differing passage shown (`edited`: τ²'s reward
    does not read the policy; the agent did)."""


def make(spec: ModelSpec) -> None:
    raise InputError(f"model '{spec.name}': backend 'replay' imports a published run "
                     "(toolcalib import-run), it answers no requests")
