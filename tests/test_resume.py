"""Generation survives `kill -9`: rerun loses no answered request and ends with the same bytes
as an uninterrupted run; a rerun after completion makes zero model calls. Real model, real
subprocesses."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import time
from contextlib import closing
from pathlib import Path

import pytest

from toolcalib.backends.store import FILE
from toolcalib.benchmarks.bfcl.plugin import load_cases
from toolcalib.jsonio import write_jsonl

pytestmark = pytest.mark.slow
N_CASES = 3


def stored(store: Path) -> int:
    """Answers committed so far (0 while the writer has not created its table yet)."""
    if not (store / FILE).exists():
        return 0
    with closing(sqlite3.connect(store / FILE)) as db:
        try:
            return db.execute("SELECT count(*) FROM responses").fetchone()[0]
        except sqlite3.OperationalError:
            return 0


def command(spec: dict, cases: Path, wheel: Path, store: Path, out: Path) -> list[str]:
    return ["toolcalib", "generate", "--model-spec", json.dumps(spec), "--variant", "baseline",
            "--benchmark", "bfcl", "--cases", str(cases), "--source", str(wheel),
            "--store", str(store), "--out", str(out)]


def test_kill_9_midway_then_rerun_gives_identical_bytes(tmp_path, smollm2_dir, bfcl_release):
    cases = tmp_path / "cases.jsonl"
    write_jsonl(cases, load_cases(bfcl_release, "irrelevance")[:N_CASES])
    spec = {"name": "smollm2", "backend": "transformers", "batch_size": 1,
            "options": {"model_dir": str(smollm2_dir), "tools_mode": "prompt",
                        "max_new_tokens": 24}}
    wheel = bfcl_release.wheel

    reference = tmp_path / "reference.jsonl"
    subprocess.run(command(spec, cases, wheel, tmp_path / "store-a", reference), check=True,
                   capture_output=True)

    store, out = tmp_path / "store-b", tmp_path / "resumed.jsonl"
    process = subprocess.Popen(command(spec, cases, wheel, store, out),
                               stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while stored(store) < 1 and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    process.send_signal(signal.SIGKILL)
    process.wait()
    kept = stored(store)
    assert 1 <= kept < N_CASES, "killed after the first answer and before the last"
    assert not out.exists(), "no half-written artifact"

    rerun = subprocess.run(command(spec, cases, wheel, store, out), capture_output=True,
                           text=True, check=True)
    assert f"{N_CASES - kept} model calls, {kept} answers from the store" in rerun.stderr
    assert out.read_bytes() == reference.read_bytes()

    again = subprocess.run(command(spec, cases, wheel, store, out), capture_output=True,
                           text=True, check=True)
    assert f"0 model calls, {N_CASES} answers from the store" in again.stderr
    assert out.read_bytes() == reference.read_bytes()
