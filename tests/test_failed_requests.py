"""Requests that finally fail fail the generate job, and nothing already answered is lost: a
server that refuses connections, one that answers 401, one that times out (the scripted
server of tests/support/scripted_server.py behind tests/support/faultproxy.py: fast). Each asserts
the job's message, that the output was not written, that the answers received are in the store and
that
rerunning the same command asks only the failed requests. Also: context overflow never fails a
job; `max_failed_share` lets a bounded share pass as excluded cases. End to end (slow):
Snakemake on a tiny overlay whose openai model points at a closed port, then at a server."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.scripted_server import ScriptedServer
from tests.support.servers import free_port
from tests.support.workflow_build import BFCL_FILE, TINY, tiny_project
from toolcalib.backends.store import ResponseStore
from toolcalib.benchmarks.bfcl.plugin import load_cases
from toolcalib.cli import main
from toolcalib.jsonio import write_jsonl

SECRET = "sk-test-failed-requests-do-not-leak"
KEY_ENV = "TOOLCALIB_TEST_FAILED_KEY"


class Job:
    """One `toolcalib generate` command (run in this process) and what it left."""

    def __init__(self, tmp_path: Path, wheel: Path, cases: list, base_url: str,
                 batch_size: int = 1, max_failed_share: float | None = None, **options):
        self.cases = tmp_path / "cases.jsonl"
        write_jsonl(self.cases, cases)
        self.category = cases[0].category
        self.store, self.out, self.wheel = tmp_path / "store", tmp_path / "out.jsonl", wheel
        spec = {"name": "api", "backend": "openai", "batch_size": batch_size,
                "options": {"base_url": base_url, "model": "m", "tools_mode": "prompt",
                            "max_retries": 1, "backoff_s": 0.01, "timeout_s": 5, **options}}
        if max_failed_share is not None:
            spec["max_failed_share"] = max_failed_share
        self.spec = json.dumps(spec)

    def run(self, capsys: pytest.CaptureFixture[str], store: Path | None = None,
            out: Path | None = None) -> tuple[int, str]:
        capsys.readouterr()
        status = main(["generate", "--model-spec", self.spec, "--variant", "baseline",
                       "--benchmark", "bfcl", "--cases", str(self.cases),
                       "--source", str(self.wheel), "--store", str(store or self.store),
                       "--out", str(out or self.out)])
        return status, capsys.readouterr().err

    def stored(self) -> int:
        store = ResponseStore(self.store)
        try:
            return len(store)
        finally:
            store.close()

    def outcomes(self) -> list[str]:
        return [json.loads(line)["outcome"] for line in self.out.read_text().splitlines()]


def label(job: Job) -> str:
    return f"api/baseline/bfcl/{job.category}"


def assert_failed(status: int, err: str, job: Job, failed: int, total: int, cause: str) -> str:
    """The one-paragraph message, and no output; returns the message."""
    assert status == 1 and not job.out.exists()
    (message,) = [line for line in err.splitlines() if line.startswith("toolcalib generate:")]
    assert message.startswith(f"toolcalib generate: error: {failed} of {total} cases of "
                              f"{label(job)} failed: their requests got no answer after the "
                              f"backend's retries (last error: ")
    assert cause in message
    assert "Rerunning the same command asks only the failed requests" in message
    assert "the rest come from the store" in message and "max_failed_share" in message
    return message


@pytest.fixture(scope="module")
def irrelevance(bfcl_release):
    return load_cases(bfcl_release, "irrelevance")[:3]


def test_closed_port_fails_the_job_and_the_rerun_asks_only_those_requests(
        tmp_path, bfcl_wheel, irrelevance, capsys):
    port = free_port()
    job = Job(tmp_path, bfcl_wheel, irrelevance[:2], f"http://127.0.0.1:{port}/v1",
              batch_size=2)
    job.out.write_text("a stale output of an earlier run\n")
    status, err = job.run(capsys)
    message = assert_failed(status, err, job, 2, 2, "connection error (ConnectError")
    assert "gave up after 2 attempts" in message and "0 answered now" in message
    assert job.stored() == 0

    with ScriptedServer(port=port) as server:  # the server comes up where it was expected
        status, err = job.run(capsys)
        assert status == 0, err
        assert len(server.requests) == 2 and "2 model calls, 0 answers from the store" in err
        assert job.outcomes() == ["completed", "completed"]
        status, err = job.run(capsys)
        assert status == 0 and len(server.requests) == 2
        assert "0 model calls, 2 answers from the store" in err


def test_401_keeps_the_other_answers_and_the_rerun_asks_only_the_refused_one(
        tmp_path, bfcl_wheel, irrelevance, scripted, proxy, capsys, monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)
    job = Job(tmp_path, bfcl_wheel, irrelevance, f"{proxy.url}/v1", batch_size=3,
              max_concurrency=1, api_key_env=KEY_ENV)
    proxy.script(["pass", "echo401", "pass"])  # one at a time, in case order
    status, err = job.run(capsys)
    message = assert_failed(status, err, job, 1, 3, "HTTP 401")
    assert "Bearer ***" in message and SECRET not in err
    assert "2 answered now, 0 from earlier runs" in message
    assert job.stored() == 2 and len(scripted.requests) == 2  # a 401 is not retried

    proxy.script([])
    status, err = job.run(capsys)
    assert status == 0, err
    assert proxy.requests == 1 and "1 model calls, 2 answers from the store" in err
    assert job.outcomes() == ["completed"] * 3 and job.stored() == 3


def test_timeout_midway_through_a_conversation_keeps_its_earlier_steps(
        tmp_path, bfcl_wheel, bfcl_release, scripted, proxy, capsys):
    """The first case's second turn times out (twice: max_retries 1); its first turn and the
    whole second case are answered. The rerun asks the first case's remaining turns only, and
    ends with the bytes of a run that never failed."""
    cases = load_cases(bfcl_release, "multi_turn_base")[:2]
    job = Job(tmp_path, bfcl_wheel, cases, f"{proxy.url}/v1", timeout_s=0.3)
    proxy.script(["pass", "stall:1", "stall:1"])
    status, err = job.run(capsys)
    message = assert_failed(status, err, job, 1, 2, "timeout after 0.3 s")
    kept = job.stored()
    second = len(cases[1].turns)  # an echo has no call: one request per turn
    assert kept == 1 + second and f"{kept} answered now" in message

    proxy.script([])
    status, err = job.run(capsys)
    assert status == 0, err
    remaining = len(cases[0].turns) - 1
    assert proxy.requests == remaining
    assert f"{remaining} model calls, {kept} answers from the store" in err
    assert job.outcomes() == ["completed", "completed"]

    clean = tmp_path / "clean.jsonl"
    status, _ = job.run(capsys, store=tmp_path / "fresh-store", out=clean)
    assert status == 0 and clean.read_bytes() == job.out.read_bytes()


def test_context_overflow_is_excluded_and_never_fails_the_job(tmp_path, bfcl_wheel,
                                                              irrelevance, capsys):
    with ScriptedServer(max_prompt_chars=1) as server:
        job = Job(tmp_path, bfcl_wheel, irrelevance[:2], server.base_url, max_retries=3)
        status, err = job.run(capsys)
        assert status == 0, err
        assert job.outcomes() == ["context_overflow"] * 2 and len(server.requests) == 2


@pytest.mark.parametrize("share", [0.5, 0.4])
def test_max_failed_share_lets_a_bounded_share_pass_as_excluded(
        tmp_path, bfcl_wheel, irrelevance, proxy, capsys, share):
    job = Job(tmp_path, bfcl_wheel, irrelevance[:2], f"{proxy.url}/v1", batch_size=2,
              max_concurrency=1, max_failed_share=share)
    proxy.script(["pass", "echo401"])
    status, err = job.run(capsys)
    if share < 0.5:
        assert_failed(status, err, job, 1, 2, "HTTP 401")
        return
    assert status == 0, err
    assert job.outcomes() == ["completed", "error"]
    assert (f"1 of 2 cases of {label(job)} failed (last error: " in err
            and "within the model's max_failed_share 0.5" in err)


OVERLAY = """limit: 2
variants: [baseline]
benchmarks:
  bfcl:
    package: bfcl-eval
    version: "2026.3.23"
    file: bfcl_eval-2026.3.23-py3-none-any.whl
    sha256: 3bb6dfa5f0c68ad403c9ec50b00db2bb3b4cc9b38ab1ff33f48fe30d853d3a0a
    categories: [irrelevance]
models:
  - {{name: policy-oracle, backend: policy, options: {{policy: oracle}}}}
  - name: api
    backend: openai
    options: {{base_url: "http://127.0.0.1:{port}/v1", model: m, tools_mode: prompt,
              max_retries: 1, backoff_s: 0.01}}
"""


def snakemake(project: Path, overlay: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["snakemake", "--cores", "2", "--configfile", TINY, str(overlay),
                           *extra], cwd=project, capture_output=True, text=True)


def status(project: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["toolcalib", "status"], cwd=project, capture_output=True, text=True)


@pytest.mark.slow
def test_snakemake_fails_on_a_closed_port_then_reruns_only_that_job(tmp_path, bfcl_wheel):
    project = tiny_project(tmp_path / "project")
    (project / "results/raw/bfcl").mkdir(parents=True)
    shutil.copy(bfcl_wheel, project / "results/raw/bfcl" / BFCL_FILE)
    port = free_port()
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text(OVERLAY.format(port=port))
    results = project / "results"
    failed_log = results / "logs/generate/api/baseline/bfcl/irrelevance.log"

    first = snakemake(project, overlay, "--keep-going")
    output = first.stdout + first.stderr
    assert first.returncode != 0
    assert "2 of 2 cases of api/baseline/bfcl/irrelevance failed" in failed_log.read_text()
    assert "Rerunning the same command asks only the failed requests" in failed_log.read_text()
    assert not (results / "trajectories/api/baseline/bfcl/irrelevance.jsonl").exists()
    policy = results / "trajectories/policy-oracle/baseline/bfcl/irrelevance.jsonl"
    assert (results / "runs/policy-oracle/baseline/bfcl/per_case.jsonl").is_file()
    assert not (results / "metrics/triples.csv").exists()
    # the summary at the end: the failed job, its last error and its log
    assert "  api/baseline/bfcl/irrelevance: 2 of 2 cases failed; last error: " in output
    assert "Connection refused" in output
    assert "    log: results/logs/generate/api/baseline/bfcl/irrelevance.log" in output
    listed = status(project)
    assert listed.returncode == 1 and "api/baseline/bfcl/irrelevance: 2 of 2" in listed.stdout

    policy_written = policy.stat().st_mtime_ns
    with ScriptedServer(port=port) as server:  # the server is up now
        second = snakemake(project, overlay)
        assert second.returncode == 0, second.stdout + second.stderr
        assert len(server.requests) == 2
    output = second.stdout + second.stderr
    assert output.count("(Rule: generate)") == 1 and policy.stat().st_mtime_ns == policy_written
    assert "2 model calls, 0 answers from the store" in failed_log.read_text()
    assert (results / "metrics/triples.csv").is_file()
    assert [line.split()[:5] for line in output.splitlines() if line.startswith("api ")] == [
        ["api", "bfcl", "1/1", "2", "2"]]
    assert status(project).returncode == 0
