"""`toolcalib reproduce`: is the committed dvc.lock what a build from scratch gives?

Clones the project's committed HEAD into a fresh folder (an empty response store and prefix
folder come with it: both live under the clone), runs `snakemake --cores N` and `dvc commit`,
and compares every output hash with the committed dvc.lock. The manifest is compared by its
content (benchmark versions, config, model identities, inputs, trajectory digests), since it
names the commit and the machine. Every difference is explained: the stage that wrote the file
and, for trajectories, whether the emissions, the rest of the records or the recorded identity
differ (from the committed manifest's digests, and record by record when DVC's cache holds the
committed file). Exit status: 0 when every hash is equal, 1 when any differs, 2 when the build
itself fails. It never passes with a difference, on any CPU: when the lock was made on another
CPU capability the report says so next to the differences.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from toolcalib.provenance.lock import (
    LOCK,
    MANIFEST,
    ProvenanceError,
    dvc_cached,
    is_trajectory,
    read_lock,
    read_manifest,
)
from toolcalib.provenance.trajdigest import explain_trajectory

CONTENT = ("benchmarks", "config", "models", "inputs", "trajectories")
"""Manifest sections that must be equal; the others (code, machine, packages) describe where
and from which commit a build ran."""


@dataclass
class Comparison:
    """The outcome of comparing a built tree's dvc.lock with the committed one."""

    outputs: int = 0
    differing: list[dict[str, Any]] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)
    manifest: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    machine: dict[str, Any] = field(default_factory=dict)
    packages: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.differing or self.missing or self.extra or self.manifest or self.stale)


def outputs(stages: dict[str, dict[str, Any]]) -> dict[str, tuple[str, str]]:
    """Every output path of a lock -> (its md5, the stage that wrote it)."""
    return {out["path"]: (out.get("md5", ""), name) for name, stage in stages.items()
            for out in stage.get("outs") or []}


def capability(manifest: dict[str, Any]) -> str | None:
    """The CPU capability a manifest records (older manifests: in the model identities)."""
    found: str | None = (manifest.get("machine") or {}).get("cpu_capability")
    if found:
        return found
    old = {m.get("cpu_capability") for m in manifest.get("models", {}).values()} - {None}
    return ", ".join(sorted(old)) or None


def compare(committed_root: Path, built_root: Path) -> Comparison:
    """The built tree's dvc.lock against the committed one, every difference explained."""
    committed_stages = read_lock(committed_root)
    committed = outputs(committed_stages)
    built_stages = read_lock(built_root)
    built = outputs(built_stages)
    recorded_manifest, built_manifest = read_manifest(committed_root), read_manifest(built_root)
    result = Comparison(outputs=len(committed),
                        missing=sorted(committed.keys() - built.keys()),
                        extra=sorted(built.keys() - committed.keys()),
                        machine={"recorded": capability(recorded_manifest),
                                 "built": capability(built_manifest)})
    result.packages = package_changes(recorded_manifest, built_manifest)
    # a lock entry no dvc.yaml stage owns, or an output recorded but not built, proves nothing
    result.stale = sorted(committed_stages.keys() - _stage_names(committed_root))
    result.missing = sorted({*result.missing, *(p for p in built
                                                if not (built_root / p).exists())})
    changed = {p for p in committed.keys() & built.keys() if committed[p][0] != built[p][0]}
    for path in sorted(changed - {MANIFEST}):
        md5, stage = committed[path]
        deps = [d["path"] for d in committed_stages[stage].get("deps") or []
                if d["path"] in changed]
        if is_trajectory(path, recorded_manifest):
            why = explain_trajectory(path, recorded_manifest, built_root / path,
                                     dvc_cached(committed_root, md5))
        elif deps:
            why = [f"derived from differing input(s): {_listed(deps)}"]
        elif code := _changed_code(committed_stages[stage], built_stages.get(stage, {}),
                                   committed):
            why = [f"the code it runs differs from the lock's: {_listed(code)}"]
        else:
            why = ["its recorded inputs and code are equal: the stage wrote other bytes "
                   "from them" + (" (the packages above differ)" if result.packages else "")]
        result.differing.append({"path": path, "stage": stage, "recorded": md5,
                                 "built": built[path][0], "why": why})
    for section in CONTENT:
        if recorded_manifest.get(section) != built_manifest.get(section):
            keys = _differing_keys(recorded_manifest.get(section), built_manifest.get(section))
            result.manifest.append(f"{MANIFEST}: section `{section}` differs"
                                   + (f" ({', '.join(keys)})" if keys else ""))
    return result


def package_changes(recorded: dict[str, Any], built: dict[str, Any]) -> list[str]:
    """`name recorded -> built` for each package both manifests name at different versions."""
    old, new = recorded.get("packages") or {}, built.get("packages") or {}
    return [f"{name} {old[name]} -> {new[name]}" for name in sorted(old.keys() & new.keys())
            if name != "toolcalib" and old[name] != new[name]]


def _stage_names(root: Path) -> set[str]:
    path = root / "dvc.yaml"
    return set((yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("stages") or {}) \
        if path.is_file() else set()


def _changed_code(committed: dict[str, Any], built: dict[str, Any],
                  produced: dict[str, Any]) -> list[str]:
    """A stage's dependencies that no stage writes (its code and config) whose md5 differs
    between the two locks."""
    mine = {d["path"]: d.get("md5") for d in built.get("deps") or []}
    return sorted(d["path"] for d in committed.get("deps") or []
                  if d["path"] not in produced and mine.get(d["path"]) != d.get("md5"))


def _listed(paths: list[str], limit: int = 3) -> str:
    return ", ".join(paths[:limit]) + (f" and {len(paths) - limit} more"
                                       if len(paths) > limit else "")


def _differing_keys(a: Any, b: Any, limit: int = 5) -> list[str]:
    if not (isinstance(a, dict) and isinstance(b, dict)):
        return []
    keys = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
    return keys[:limit] + ([f"{len(keys) - limit} more"] if len(keys) > limit else [])


def render(result: Comparison) -> str:
    machine = result.machine
    lines = [f"lock made on CPU capability {machine['recorded'] or 'unknown'}, built here on "
             f"{machine['built'] or 'unknown'}"]
    if result.packages:
        lines.append("packages differ from the lock's manifest (constraints.txt pins the lock's): "
                     + ", ".join(result.packages))
    for item in result.differing:
        lines.append(f"DIFFERS {item['path']}  <- stage {item['stage']}")
        lines.append(f"        md5 {item['recorded']} recorded, {item['built']} built")
        lines += [f"        {why}" for why in item["why"]]
    lines += [f"MISSING {p} (recorded in a lock, not built)" for p in result.missing]
    lines += [f"STALE   {name}: a stage of the committed {LOCK} that dvc.yaml no longer has "
              "(its outputs are never built)" for name in result.stale]
    lines += [f"EXTRA   {p} (built, not in the committed lock)" for p in result.extra]
    lines += [f"DIFFERS {line}" for line in result.manifest]
    if result.ok:
        lines.append(f"reproduce: OK: all {result.outputs} outputs equal to {LOCK} "
                     "(the manifest by its content)")
        return "\n".join(lines) + "\n"
    count = len(result.differing) + len(result.missing) + len(result.extra) + len(result.stale)
    lines.append(f"reproduce: FAILED: {count} of {result.outputs} outputs differ from {LOCK}"
                 + (", and the manifest's content" if result.manifest else ""))
    if machine["recorded"] != machine["built"]:
        lines.append(f"  note: the lock was made on {machine['recorded']} and this build ran on "
                     f"{machine['built']}: float kernels of another family can give other "
                     "emissions, and every file derived from them differs with them")
    return "\n".join(lines) + "\n"


def _run(args: Sequence[str], cwd: Path, log: Path, env: dict[str, str] | None = None) -> None:
    """Run a command with its output streamed to `log` (a long build shows its progress)."""
    with open(log, "a", encoding="utf-8") as handle:
        handle.write(f"$ {' '.join(args)}\n")
        handle.flush()
        done = subprocess.run(args, cwd=cwd, stdout=handle, stderr=subprocess.STDOUT, env=env)
    if done.returncode != 0:
        tail = log.read_text(encoding="utf-8", errors="replace")[-3000:]
        raise RuntimeError(f"`{' '.join(args)}` failed ({done.returncode}); log {log}:\n{tail}")


def build(root: Path, work: Path, cores: int) -> Path:
    """A clean clone of `root`'s HEAD under `work`, built by Snakemake and recorded by DVC,
    with the clone's own package first on the path (an editable install of `root` would
    otherwise run the working tree's code, committed or not)."""
    clone = work / "clone"
    log = work / "build.log"
    _run(["git", "clone", "-q", "--no-hardlinks", str(root), str(clone)], work, log)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(clone / "src"), *filter(None, [os.environ.get("PYTHONPATH")])])}
    found = subprocess.run([sys.executable, "-c", "import toolcalib; print(toolcalib.__file__)"],
                           cwd=clone, env=env, capture_output=True, text=True).stdout.strip()
    if not Path(found).resolve().is_relative_to(clone.resolve()):
        raise RuntimeError(f"the build would import toolcalib from {found}, not the clone")
    # --forceall: a clone's committed outputs (results tables kept in git) can be as new as the
    # code and data they derive from (one checkout, one clock tick), and Snakemake would keep
    # them; every output must be rebuilt, or a stale committed table passes unchecked.
    _run(["snakemake", "--cores", str(cores), "--quiet", "--forceall"], clone, log, env)
    _run(["dvc", "commit", "--force", "--quiet"], clone, log, env)
    return clone


def main_reproduce(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="toolcalib reproduce",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--root", type=Path, default=Path("."),
                        help="the project (its committed HEAD is cloned; default: .)")
    parser.add_argument("--cores", type=int, default=8, help="snakemake --cores (default 8)")
    parser.add_argument("--workdir", type=Path, default=None,
                        help="build here and keep it (default: a temporary folder, removed)")
    parser.add_argument("--built", type=Path, default=None,
                        help="compare this already-built tree instead of building one")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    started = time.monotonic()
    work = None
    try:
        if args.built is not None:
            built = args.built.resolve()
        else:
            dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                                   cwd=root, capture_output=True, text=True).stdout.strip()
            if dirty:
                print("toolcalib reproduce: uncommitted changes are not part of the build "
                      "(it clones the committed HEAD)", file=sys.stderr)
            work = args.workdir or Path(tempfile.mkdtemp(prefix="toolcalib-reproduce-"))
            work.mkdir(parents=True, exist_ok=True)
            print(f"toolcalib reproduce: building a clean clone in {work} "
                  f"(log: {work / 'build.log'})", file=sys.stderr, flush=True)
            built = build(root, work, args.cores)
        result = compare(root, built)
    except (ProvenanceError, RuntimeError, FileNotFoundError, ValueError) as error:
        print(f"toolcalib reproduce: error: {error}", file=sys.stderr)
        return 2
    finally:
        if work is not None and args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)
    sys.stdout.write(render(result))
    print(f"toolcalib reproduce: {time.monotonic() - started:.0f} s", file=sys.stderr)
    return 0 if result.ok else 1
