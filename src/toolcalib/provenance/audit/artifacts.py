"""The artifacts on one cell's path against dvc.lock: each file's recorded and current md5,
the stage that wrote it and whether that stage's code changed since; and the run's context
(model identity, config, package and code versions) from the manifest."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from toolcalib.jsonio import sha256_file
from toolcalib.provenance.audit.explain import explain, machine_lines
from toolcalib.provenance.audit.recompute import KEYS, PER_CASE, TRIPLES
from toolcalib.provenance.lock import HINT, LOCK, MANIFEST, dvc_md5

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
`weights` only when the run has a model stage for the model."""

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


def _release_file(benchmark: str, manifest: dict[str, Any],
                  outs: dict[str, tuple[str, dict[str, Any]]]) -> str | None:
    entry = manifest.get("config", {}).get("benchmarks", {}).get(benchmark, {})
    if entry.get("file"):
        return str(entry["file"])
    prefix = f"results/raw/{benchmark}/"
    found = sorted(p.removeprefix(prefix) for p in outs if p.startswith(prefix))
    return found[0] if found else None


def provenance(hashes: Hashes, cell: tuple[str, str, str, str], manifest: dict[str, Any],
               stages: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Every artifact on the cell's path against dvc.lock, and each producing stage."""
    outs: dict[str, tuple[str, dict[str, Any]]] = {}
    for name, stage in stages.items():
        for out in stage.get("outs") or []:
            outs[out["path"]] = (name, out)
    fields = dict(zip(KEYS, cell, strict=True))
    fields["release"] = _release_file(cell[2], manifest, outs) or "<unknown release>"
    recorded_inputs = manifest.get("inputs", {})
    artifacts: list[dict[str, Any]] = []
    problems: list[str] = []
    for role, template in ARTIFACTS:
        path = template.format(**fields)
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
        artifacts.append({
            "role": role, "path": path, "stage": stage_name, "md5_recorded": recorded,
            "md5_disk": disk, "status": status, "why": why, "recorded_differently_by": stale,
            "manifest_sha256": None if sha is None else
            ("ok" if hashes.sha256(path) == sha else "differs"),
        })
        if sha is not None and artifacts[-1]["manifest_sha256"] == "differs" and disk:
            problems.append(f"{path} ({role}) differs from the sha256 in {MANIFEST}")
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
    return {"lock": LOCK, "artifacts": artifacts, "stages": producing, "problems": problems,
            "machine": machine_lines(manifest.get("machine") or {}) if modified else []}


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
