"""How a stage's error reaches the shell: bad input is one line and exit status 2; anything else
is a bug, with its traceback and exit status 1."""

from __future__ import annotations

import subprocess
import sys

import pytest

STAGE = ("import sys, toolcalib.stages.report as stage; from toolcalib.jsonio import InputError\n"
         "def run(**_): {raise_}\n"
         "stage.run = run\n"
         "from toolcalib.cli import main\n"
         "sys.exit(main(['report', '--metrics-dir', 'm', '--out-dir', 'o']))")


def _run(raise_: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", STAGE.replace("{raise_}", raise_)],
                          capture_output=True, text=True, timeout=120)


def test_bad_input_is_one_line_and_status_2() -> None:
    done = _run("raise InputError('cases.jsonl:3: field \\'id\\': Expected `str`')")
    assert done.returncode == 2
    assert done.stderr == "toolcalib report: error: cases.jsonl:3: field 'id': Expected `str`\n"


@pytest.mark.parametrize("bug", ["{}['gold']", "int('x')", "None.id"])
def test_a_bug_shows_its_traceback_and_status_1(bug: str) -> None:
    done = _run(bug)
    assert done.returncode == 1
    assert done.stderr.startswith("Traceback (most recent call last):")
    assert "toolcalib report: error" not in done.stderr
