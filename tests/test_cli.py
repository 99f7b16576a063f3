"""How a stage's error reaches the shell: bad input is one line and exit status 2; anything else
is a bug, with its traceback and exit status 1."""

from __future__ import annotations

import subprocess
import sys

import pytest

STAGE = ("import functools, sys, toolcalib.stages.report as stage\n"
         "from toolcalib.jsonio import InputError\n"
         "@functools.wraps(stage.run)\n"  # its arguments: the stage's
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


def test_every_command_of_the_table_has_its_parser() -> None:
    """A stage's options are its `run`'s parameters, read from its signature; a tool's are its
    own (it gets the rest of the command line)."""
    import inspect

    from toolcalib.cli import COMMANDS, _stage, build_parser, command_parser

    listed = build_parser().format_help()
    for name, command in COMMANDS.items():
        assert name in listed
        assert (command.stage is None) != (command.main is None)
        if command.stage is not None:
            options = {a.dest for a in command_parser(name)._actions if a.dest != "help"}
            assert options == set(inspect.signature(_stage(command)).parameters)
