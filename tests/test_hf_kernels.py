"""`kernels: portable`: the libraries' variables are set before torch loads, a process without
them is refused, (slow) a model job of the default run gives the committed bytes, and both
default-run models compute the same bits natively and on QEMU's emulated Intel and AMD AVX2
CPUs."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from toolcalib.backends.base import MACHINE_FACTS
from toolcalib.backends.hf.kernels import PORTABLE, check, cpu_vendor
from toolcalib.backends.hf.onednn import GEMV_ROWS
from toolcalib.jsonio import InputError

ROOT = Path(__file__).resolve().parents[1]
X86 = platform.machine() in ("x86_64", "AMD64")
EMULATED = {"intel": "max,vendor=GenuineIntel", "amd": "max,vendor=AuthenticAMD"}
"""QEMU (user mode, TCG) CPU models: AVX2 and FMA, no AVX-512, the vendor as named."""


@pytest.mark.skipif(not X86, reason="the portable kernels are x86-64's AVX2 code")
def test_make_backend_sets_the_variables_before_torch_loads(tmp_path: Path) -> None:
    code = f"""
import os, sys
from toolcalib.backends import make_backend
from toolcalib.config import ModelSpec
from toolcalib.jsonio import InputError
spec = ModelSpec(name="m", backend="transformers",
                 options={{"model_dir": {str(tmp_path)!r}, "kernels": "portable"}})
try:
    make_backend(spec)
except InputError:  # no converted model there: torch has loaded by now
    pass
import torch
print(torch.backends.cpu.get_cpu_capability())
print(sorted((k, os.environ[k]) for k in {sorted(PORTABLE)!r}))
"""
    env = {k: v for k, v in os.environ.items() if k not in PORTABLE}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, check=True)
    capability, variables = done.stdout.strip().splitlines()
    assert capability == "AVX2"
    assert variables == str(sorted(PORTABLE.items()))


def test_a_process_without_the_variables_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in PORTABLE:
        monkeypatch.delenv(key, raising=False)
    check("m", "native", "AVX512")
    with pytest.raises(InputError, match="ATEN_CPU_CAPABILITY=avx2 .*MKL_CBWR=COMPATIBLE"):
        check("m", "portable", "AVX2")
    for key, value in PORTABLE.items():
        monkeypatch.setenv(key, value)
    check("m", "portable", "AVX2")
    with pytest.raises(InputError, match="torch dispatches to AVX512"):
        check("m", "portable", "AVX512")


def test_the_vendor_is_a_machine_fact() -> None:
    assert "cpu_vendor" in MACHINE_FACTS
    if Path("/proc/cpuinfo").is_file() and X86:
        assert cpu_vendor() in ("GenuineIntel", "AuthenticAMD", "HygonGenuine")


JOB = ("qwen2.5-coder-0.5b", "baseline", "bfcl", "irrelevance")
"""The default run's model job the test runs: Qwen2.5-Coder-0.5B's BFCL irrelevance cases as
config/config.yaml runs them (the first 2, one batch, up to 96 new tokens)."""
ALONE = "irrelevance_1"
"""A case of `JOB` run alone: it gives the line the batched job gives."""


def _config_model(name: str) -> dict:
    """Model `name`'s entry in the default config."""
    import yaml

    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text(encoding="utf-8"))
    return next(m for m in config["models"] if m["name"] == name)


def _job_command(model_dir: Path, wheel: Path, cases: Path, out: Path,
                 case: str | None = None) -> list[str]:
    """`toolcalib generate` for `JOB` as the workflow writes it (`spec_json`), the converted
    model at `model_dir` (`case`: that case alone)."""
    model, variant, benchmark, _ = JOB
    entry = _config_model(model)
    spec = {k: v for k, v in entry.items()
            if k not in ("source", "limit", "cases", "variants", "benchmarks")}
    spec["options"] = {**spec["options"], "model_dir": str(model_dir)}
    return [sys.executable, "-m", "toolcalib.cli", "generate", "--model-spec",
            json.dumps(spec, sort_keys=True, separators=(",", ":")), "--variant", variant,
            "--benchmark", benchmark, "--cases", str(cases), "--source", str(wheel),
            *(["--limit", str(entry["limit"][JOB[3]])] if case is None else
              ["--case-ids", case]),
            "--store", str(out.parent / "store"),
            "--out", str(out)]


def _committed_md5(path: str) -> str:
    """The md5 `dvc.lock` records for an output of the default run."""
    import yaml

    lock = yaml.safe_load((ROOT / "dvc.lock").read_text(encoding="utf-8"))
    return next(out["md5"] for stage in lock["stages"].values()
                for out in stage.get("outs", []) if out["path"] == path)


@pytest.mark.slow
def test_a_default_run_model_job_gives_the_committed_bytes(
        tmp_path: Path, request: pytest.FixtureRequest, bfcl_release) -> None:
    """`JOB` as the default run runs it (`kernels: portable`) gives the trajectories whose md5
    the committed `dvc.lock` records, and its case `ALONE` run alone gives that case's line."""
    from toolcalib.benchmarks.bfcl.plugin import load_cases
    from toolcalib.jsonio import write_jsonl

    from .support.models import converted_model

    model_dir = converted_model(JOB[0], request.config.cache.mkdir("toolcalib-models"))

    cases = tmp_path / "cases.jsonl"
    write_jsonl(cases, load_cases(bfcl_release, JOB[3]))
    env = {k: v for k, v in os.environ.items() if k not in PORTABLE}

    def run(case: str | None) -> bytes:
        out = tmp_path / (case or "job") / "out.jsonl"
        out.parent.mkdir()
        subprocess.run(_job_command(model_dir, bfcl_release.wheel, cases, out, case),
                       env=env, check=True, capture_output=True, text=True)
        return out.read_bytes()

    with ThreadPoolExecutor(2) as pool:
        job, alone = pool.map(run, (None, ALONE))
    committed = _committed_md5("results/trajectories/" + "/".join(JOB) + ".jsonl")
    assert hashlib.md5(job).hexdigest() == committed  # noqa: S324 - DVC's checksum
    line = next(line + b"\n" for line in job.splitlines()
                if json.loads(line)["case_id"] == ALONE)
    assert alone == line
    assert json.loads(line)["model_identity"]["kernels"] == "portable"


MODELS = ("smollm2-135m", "qwen2.5-coder-0.5b")
"""The default run's local models, probed with `tests.support.kernel_probe`."""


@pytest.mark.slow
@pytest.mark.skipif(not X86, reason="QEMU emulates x86-64 AVX2 CPUs here")
def test_default_run_models_compute_the_same_bits_on_emulated_intel_and_amd(
        request: pytest.FixtureRequest) -> None:
    """Both default-run models, with their default-run options, give the same tokens and the
    same bits in every layer's keys and values natively (any AVX2 or AVX-512 machine) and under
    QEMU's Intel and AMD AVX2 CPUs: a prefill chunk (oneDNN), 4-row decode forwards (MKL's
    `COMPATIBLE` weight-major product) and draft verification (oneDNN), the code paths of
    every model job of the default run (whole jobs take hours under QEMU's TCG)."""
    qemu = shutil.which("qemu-x86_64")
    if qemu is None:
        pytest.fail("qemu-x86_64 is not installed (Debian's qemu-user; see .ci/run)")
    from .support.models import converted_model

    cache = request.config.cache.mkdir("toolcalib-models")
    env = {k: v for k, v in os.environ.items() if k not in PORTABLE}
    runs = []
    for name in MODELS:
        options = {k: v for k, v in _config_model(name)["options"].items()
                   if k != "shared_prefix_dir"}
        assert options["kernels"] == "portable" and options.get("linear", "float") == "float"
        command = [sys.executable, "-m", "tests.support.kernel_probe",
                   str(converted_model(name, cache)), json.dumps(options)]
        runs += [(name, cpu, [*([qemu, "-cpu", EMULATED[cpu]] if cpu != "native" else []),
                               *command]) for cpu in ("native", *EMULATED)]

    def probe(run: tuple[str, str, list[str]]) -> dict:
        done = subprocess.run(run[2], env=env, cwd=ROOT, check=True, capture_output=True,
                              text=True)
        return json.loads(done.stdout)

    with ThreadPoolExecutor(2) as pool:
        results = dict(zip([(name, cpu) for name, cpu, _ in runs], pool.map(probe, runs),
                           strict=True))
    for name in MODELS:
        native = results[name, "native"]
        # 4-row decode forwards (MKL) and a verified draft of more than 4 rows (oneDNN)
        assert native["decode_steps"] > 0 and native["drafted_tokens"] >= GEMV_ROWS
        assert native["identity"]["kernels"] == "portable"
        for cpu in EMULATED:
            assert results[name, cpu] == native, (name, cpu)
