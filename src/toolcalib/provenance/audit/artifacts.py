"""The artifacts on one cell's path against the run's record, and the run's context (model
identity, config, package and code versions) from the manifest.

Which record describes the files on disk (`which_record`): `dvc.lock` when it records a run of
the config the run's manifest holds (its `manifest` stage ran with that `--config-json`); else
(an overlay run, a `--config` override, no dvc.lock at all) the run's own manifest, which every
full Snakemake run writes last: the sha256 of the files its numbers rest on (release, cases,
trajectories, metrics tables) and the digests of every trajectory. Against dvc.lock each
artifact has its recorded md5, the stage that wrote it and whether that stage's code changed
since; against the manifest, its recorded sha256 where the manifest keeps one."""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolcalib.jsonio import sha256_file
from toolcalib.provenance.audit.explain import explain, machine_lines
from toolcalib.provenance.audit.recompute import KEYS, PER_CASE, TRIPLES
from toolcalib.provenance.lock import HINT, LOCK, MANIFEST, dvc_md5
from toolcalib.provenance.trajdigest import explain_trajectory

ARTIFACTS: tuple[tuple[str, str], ...] = (
    ("release", "results/raw/{benchmark}/{release}"),
    ("weights", "results/models/{model}"),
    ("cases", "results/cases/{benchmark}/{category}.jsonl"),
    ("gold", "results/gold/{benchmark}/{category}.jsonl"),
    ("trajectories", "results/trajectories/{model}/{variant}/{benchmark}/{category}.jsonl"),
    ("actions", "results/actions/{model}/{variant}/{benchmark}/{category}.jsonl"),
    ("scores", "results/scores/{model}/{variant}/{benchmark}/{category}.jsonl"),
    ("run_per_case", "results/runs/{model}/{variant}/{benchmark}/per_case.jsonl"),
    ("triples", TRIPLES),
    ("per_case", PER_CASE),
    ("manifest", MANIFEST),
)
"""Every artifact on a cell's path, upstream first (the layout of workflow/rules/common.smk);
`weights` only when the run has a model stage for the model. A published run whose files
embed their own cases (τ²) is scored on its imported cases and their gold (`OWN`)."""
OWN = {"cases": "results/published/{model}/{benchmark}/{category}.cases.jsonl",
       "gold": "results/published/{model}/{benchmark}/{category}.gold.jsonl"}
"""The cases and gold a published run with embedded cases is scored on (its import's cases,
the gold made from them): the workflow's `run_inputs`."""
HASHED = ("release", "cases", "trajectories", "triples", "per_case")
"""The roles whose files every run's manifest hashes (its `inputs`); the others (gold, actions,
scores, the run's per-case table, weights) it does not."""


@dataclass(frozen=True)
class Record:
    """What the audit checks the files against: `dvc.lock` or the run's manifest (`why`)."""

    kind: str
    """`LOCK` or `MANIFEST`."""
    why: str | None = None
    """Why the manifest is the record (None for dvc.lock)."""


class Hashes:
    """md5/sha256 of files under the root, each computed once."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._md5: dict[str, str | None] = {}
        self._sha: dict[str, str | None] = {}

    def md5(self, relative: str) -> str | None:
        if relative not in self._md5:
            self._md5[relative] = dvc_md5(self.root / relative)
        return self._md5[relative]

    def sha256(self, relative: str) -> str | None:
        if relative not in self._sha:
            path = self.root / relative
            self._sha[relative] = sha256_file(path) if path.is_file() else None
        return self._sha[relative]


def lock_config(stages: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """The config dvc.lock's run had: its `manifest` stage's `--config-json` (None when the lock
    has no such stage or its command does not parse)."""
    command = (stages.get("manifest") or {}).get("cmd")
    if not isinstance(command, str):
        return None
    try:
        words = shlex.split(command)
        # the stage runs `bash -c '<command>'`: its words are inside that argument
        words += [inner for i, word in enumerate(words[:-1]) if word == "-c"
                  for inner in shlex.split(words[i + 1])]
        at = words.index("--config-json")
        config = json.loads(words[at + 1])
    except (ValueError, IndexError):
        return None
    return config if isinstance(config, dict) else None


def which_record(manifest: dict[str, Any], stages: dict[str, dict[str, Any]]) -> Record:
    """dvc.lock when it records a run of the manifest's config (or the manifest is missing, or
    the lock does not say its config); else the run's own manifest, saying why."""
    if not stages:
        return Record(MANIFEST, f"there is no {LOCK}, or it records no stage")
    recorded = lock_config(stages)
    config = manifest.get("config")
    if not manifest or recorded is None or recorded == config:
        return Record(LOCK)
    config = config if isinstance(config, dict) else {}
    differ = sorted(key for key in set(recorded) | set(config)
                    if recorded.get(key) != config.get(key))
    return Record(MANIFEST, f"{LOCK} records a run of another config (its manifest stage's "
                            f"config differs in: {', '.join(differ)})")


def _release_file(benchmark: str, manifest: dict[str, Any],
                  outs: dict[str, tuple[str, dict[str, Any]]]) -> str | None:
    entry = manifest.get("config", {}).get("benchmarks", {}).get(benchmark, {})
    if entry.get("file"):
        return str(entry["file"])
    prefix = f"results/raw/{benchmark}/"
    found = sorted(p.removeprefix(prefix) for p in outs if p.startswith(prefix))
    return found[0] if found else None


def lock_outputs(stages: dict[str, dict[str, Any]]) -> dict[str, tuple[str, dict[str, Any]]]:
    """Every output dvc.lock records: path -> (stage name, the out's entry)."""
    return {out["path"]: (name, out) for name, stage in stages.items()
            for out in stage.get("outs") or []}


def cell_paths(cell: tuple[str, str, str, str], manifest: dict[str, Any],
               stages: dict[str, dict[str, Any]]) -> dict[str, str]:
    """The path of every artifact role on the cell's path (`ARTIFACTS`), the cases and gold the
    run scored it on: a published run's own (`OWN`) where its manifest hashes them as a case
    file of the run, or dvc.lock's stage writing its actions read them."""
    outs = lock_outputs(stages)
    fields = dict(zip(KEYS, cell, strict=True))
    fields["release"] = _release_file(cell[2], manifest, outs) or "<unknown release>"
    paths = {role: template.format(**fields) for role, template in ARTIFACTS}
    own = {role: template.format(**fields) for role, template in OWN.items()}
    writer = outs.get(paths["actions"], (None, {}))[0]
    read = {dep.get("path") for dep in (stages.get(writer or "") or {}).get("deps") or []}
    if own["cases"] in (manifest.get("inputs") or {}) or own["cases"] in read:
        paths.update(own)
    return paths


def provenance(hashes: Hashes, cell: tuple[str, str, str, str], manifest: dict[str, Any],
               stages: dict[str, dict[str, Any]], record: Record | None = None
               ) -> dict[str, Any]:
    """Every artifact on the cell's path against the run's record (`which_record` unless
    given), and, against dvc.lock, each producing stage."""
    record = record or which_record(manifest, stages)
    outs = lock_outputs(stages)
    paths = cell_paths(cell, manifest, stages)
    if record.kind == LOCK:
        artifacts, problems = _against_lock(hashes, paths, manifest, stages, outs)
    else:
        artifacts, problems = _against_manifest(hashes, paths, manifest)
    producing: list[dict[str, Any]] = []
    for name in dict.fromkeys(a["stage"] for a in artifacts if a["stage"]):
        stage = stages[name]
        code = [d for d in stage.get("deps") or [] if not d["path"].startswith("results/")]
        changed = sorted(d["path"] for d in code if hashes.md5(d["path"]) != d.get("md5"))
        producing.append({
            "name": name, "cmd": stage.get("cmd", ""),
            "outs": [o["path"] for o in stage.get("outs") or []
                     if any(o["path"] == a["path"] for a in artifacts)],
            "code_deps": len(code), "code_changed": changed,
        })
    modified = any(a["status"] == "modified" for a in artifacts)
    return {"lock": LOCK, "lock_exists": bool(stages), "record": record.kind,
            "record_why": record.why, "artifacts": artifacts, "stages": producing,
            "problems": problems,
            "unhashed": [a["role"] for a in artifacts if a["status"] == "unhashed"],
            "machine": machine_lines(manifest.get("machine") or {}) if modified else []}


def _artifact(role: str, path: str, status: str, **fields: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "role": role, "path": path, "stage": None, "md5_recorded": None, "md5_disk": None,
        "sha256_recorded": None, "sha256_disk": None, "status": status, "why": [],
        "recorded_differently_by": [], "manifest_sha256": None}
    entry.update(fields)
    return entry


def _against_lock(hashes: Hashes, paths: dict[str, str], manifest: dict[str, Any],
                  stages: dict[str, dict[str, Any]],
                  outs: dict[str, tuple[str, dict[str, Any]]]
                  ) -> tuple[list[dict[str, Any]], list[str]]:
    recorded_inputs = manifest.get("inputs", {})
    artifacts: list[dict[str, Any]] = []
    problems: list[str] = []
    for role, path in paths.items():
        if role == "weights" and path not in outs:
            continue
        stage_name, out = outs.get(path, (None, {}))
        recorded = out.get("md5")
        disk = hashes.md5(path)
        why: list[str] = []
        if disk is None:
            status = "missing"
            problems.append(f"{path} ({role}) is missing: {HINT}")
        elif recorded is None:
            status = "unrecorded"
            problems.append(f"{path} ({role}) is not recorded in {LOCK}: record the run with "
                            "`dvc commit --force` (or `dvc repro`)")
        elif disk != recorded:
            status = "modified"
            problems.append(f"{path} ({role}) does not match {LOCK}: md5 {disk} on disk, "
                            f"{recorded} recorded by stage {stage_name}")
            why = explain(hashes.root, path, recorded, manifest)
        else:
            status = "ok"
        stale = sorted(
            name for name, stage in stages.items()
            for dep in stage.get("deps") or []
            if dep.get("path") == path and recorded is not None and dep.get("md5") != recorded
        )
        if stale:
            problems.append(f"{path} ({role}): stage(s) {', '.join(stale)} recorded it with "
                            f"another md5 than its producer {stage_name} (`dvc status` shows "
                            "which are out of date)")
        sha = recorded_inputs.get(path)
        artifacts.append(_artifact(
            role, path, status, stage=stage_name, md5_recorded=recorded, md5_disk=disk,
            why=why, recorded_differently_by=stale,
            manifest_sha256=None if sha is None else
            ("ok" if hashes.sha256(path) == sha else "differs")))
        if sha is not None and artifacts[-1]["manifest_sha256"] == "differs" and disk:
            problems.append(f"{path} ({role}) differs from the sha256 in {MANIFEST}")
    return artifacts, problems


def _against_manifest(hashes: Hashes, paths: dict[str, str], manifest: dict[str, Any]
                      ) -> tuple[list[dict[str, Any]], list[str]]:
    recorded_inputs = manifest.get("inputs") or {}
    artifacts: list[dict[str, Any]] = []
    problems: list[str] = []
    for role, path in paths.items():
        exists = (hashes.root / path).exists()
        if role == "weights" and not exists:
            continue
        if role == "manifest":
            artifacts.append(_artifact(role, path, "record" if exists else "missing"))
            if not exists:
                problems.append(f"{path} ({role}) is missing: {HINT}")
            continue
        sha = recorded_inputs.get(path)
        disk = hashes.sha256(path)
        why: list[str] = []
        if not exists:
            status = "missing"
            problems.append(f"{path} ({role}) is missing: {HINT}")
        elif sha is None and role in HASHED:
            status = "unrecorded"
            problems.append(f"{path} ({role}) has no sha256 in {MANIFEST}: the manifest is of "
                            "another run (rerun snakemake with the run's config files to "
                            "write this run's)")
        elif sha is None:
            status = "unhashed"
        elif disk != sha:
            status = "modified"
            problems.append(f"{path} ({role}) does not match {MANIFEST}: sha256 {disk} on "
                            f"disk, {sha} recorded")
            why = (explain_trajectory(path, manifest, hashes.root / path, None)
                   if role == "trajectories" else [])
        else:
            status = "ok"
        artifacts.append(_artifact(role, path, status, sha256_recorded=sha, sha256_disk=disk,
                                   why=why))
    return artifacts, problems


def run_context(manifest: dict[str, Any], cell: tuple[str, str, str, str]) -> dict[str, Any]:
    """Model identity, the config values that matter, package versions and code version."""
    config = manifest.get("config", {})
    entry = next((m for m in config.get("models", []) if m.get("name") == cell[0]), None)
    return {
        "model_identity": manifest.get("models", {}).get(cell[0]),
        "config": {
            "limit": config.get("limit"),
            "classifier": config.get("classifier"),
            "variants": config.get("variants"),
            "model": entry,
            "benchmark": config.get("benchmarks", {}).get(cell[2]),
        },
        "packages": manifest.get("packages", {}),
        "code": manifest.get("code", {}),
    }
