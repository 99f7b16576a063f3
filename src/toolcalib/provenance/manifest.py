"""The run manifest: what produced the numbers (code version, benchmark plugin versions, config,
the machine, model identities, package versions, input hashes, trajectory digests). Together
with dvc.lock it answers "where does this come from?". Artifacts hold content; the manifest
holds the machine.
"""

from __future__ import annotations

import importlib.util
import json
import os
import platform
import subprocess
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from toolcalib.jsonio import sha256_file
from toolcalib.provenance.trajdigest import file_digests

CODE_PATHS = ("Snakefile", "workflow", "config", "src", "pyproject.toml", "constraints.txt")
"""Tracked paths whose uncommitted edits make the code version 'dirty'."""
PACKAGES = ("toolcalib", "snakemake", "dvc", "polars", "pydantic", "msgspec", "jsonlines",
            "torch", "transformers", "tokenizers", "safetensors", "gguf", "numpy", "jinja2",
            "accelerate", "matplotlib", "deepdiff", "openai", "httpx", "llama_cpp_python")
"""The releases that shape the outputs' bytes (all of them pinned by constraints.txt);
`toolcalib reproduce` names those whose version differs from the lock's manifest."""


def code_version(root: str | Path = ".") -> dict[str, Any]:
    def git(*args: str) -> str | None:
        done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no", "--", *CODE_PATHS)
    return {"git_commit": commit or "unknown", "dirty": bool(status) if commit else None}


def package_versions() -> dict[str, str | None]:
    versions: dict[str, str | None] = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def machine() -> dict[str, Any]:
    """This machine's facts that can change a model's bits (and so key the response store) but
    are recorded here rather than in trajectories: the CPU and torch's kernel capability."""
    facts: dict[str, Any] = {"arch": platform.machine(), "cpu_count": os.cpu_count(),
                             "processor": _processor(), "cpu_capability": None}
    if importlib.util.find_spec("torch") is not None:
        import torch

        facts["cpu_capability"] = torch.backends.cpu.get_cpu_capability()
    return facts


def _processor() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor()


def model_identities(trajectories: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The identity recorded by each model's own trajectories (first line of each file)."""
    identities: dict[str, dict[str, Any]] = {}
    for path in trajectories:
        with open(path, encoding="utf-8") as handle:
            first = handle.readline()
        if first.strip():
            record = json.loads(first)
            identities.setdefault(record["model"], record.get("model_identity", {}))
    return dict(sorted(identities.items()))


def build_manifest(config: dict[str, Any], inputs: Sequence[str],
                   trajectories: Sequence[str], root: str | Path = ".",
                   benchmarks: dict[str, str] | None = None) -> dict[str, Any]:
    """`benchmarks`: each benchmark plugin's version (`Benchmark.version`), by name."""
    return {
        "benchmarks": dict(sorted((benchmarks or {}).items())),
        "code": code_version(root),
        "config": config,
        "machine": machine(),
        "models": model_identities(trajectories),
        "packages": package_versions(),
        "trajectories": {path: file_digests(path) for path in sorted(trajectories)},
        "inputs": {path: sha256_file(path) for path in sorted(set(inputs))},
    }
