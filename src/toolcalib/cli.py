"""`toolcalib <command> ...`: the command line the workflow rules call.

One table (`COMMANDS`) names every command: a stage (`toolcalib.stages.<name>`, whose `run`'s
signature declares its arguments: `stages.add_arguments`) or a tool that reads its own
arguments (`main`, given the rest of the command line). Only the module of the command that
runs is imported.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from toolcalib.jsonio import InputError
from toolcalib.stages import add_arguments

if TYPE_CHECKING:
    from toolcalib.classify.base import ConfirmVerdict
    from toolcalib.records import Case, Trajectory
    from toolcalib.writes import WriteContext


@dataclass(frozen=True)
class Command:
    """A command: its one-line help and either the stage it runs (a module of
    `toolcalib.stages`) or `main`, which parses the rest of the command line itself and returns
    the exit status."""

    help: str
    stage: str | None = None
    main: Callable[[list[str]], int] | None = None


def _dvc_sync(argv: list[str]) -> int:
    from toolcalib.pipeline.dvcsync import main_dvc_sync

    return main_dvc_sync(argv)


def _audit(argv: list[str]) -> int:
    from toolcalib.provenance.audit.main import main_audit

    return main_audit(argv, _write_verdicts)


def _status(argv: list[str]) -> int:
    from toolcalib.pipeline.status import main_status

    return main_status(argv)


def _reproduce(argv: list[str]) -> int:
    from toolcalib.provenance.reproduce import main_reproduce

    return main_reproduce(argv)


COMMANDS: dict[str, Command] = {
    "fetch": Command("download a pinned release and verify its sha256", "fetch"),
    "model": Command("fetch pinned weights, verify sha256, convert once", "model"),
    "normalize": Command("raw benchmark -> canonical cases (JSONL)", "normalize"),
    "gold": Command("execute each case's ground truth once", "gold"),
    "generate": Command("run a model on cases (multi-turn protocol)", "generate"),
    "import-run": Command("a published run (backend `replay`) -> one category's cases and "
                          "trajectories, read by its benchmark's plugin", "import_run"),
    "evaluate": Command("classify and score every category of one run, then its per-case "
                        "table and triples", "evaluate"),
    "aggregate": Command("triples, confusion matrices, per-case tables", "aggregate"),
    "validate": Command("classifier profiles vs the labelled corpus", "validate"),
    "validate-confirm": Command("confirm verdicts vs the hand-labelled write contexts",
                                "validate_confirm"),
    "report": Command("the self-contained HTML report (plots, audit anchors)", "report"),
    "manifest": Command("the run manifest: code, config, models, packages, hashes",
                        "manifest"),
    "audit": Command("where a number of triples.csv comes from: recompute it, check artifacts "
                     "against dvc.lock (an overlay run: its manifest); --case ID shows one case",
                     main=_audit),
    "reproduce": Command("build the committed HEAD from scratch in a clean clone and compare "
                         "every output hash with dvc.lock", main=_reproduce),
    "status": Command("per model and benchmark: cases scored, excluded by reason, failed "
                      "generate jobs and their logs (also printed at the end of snakemake)",
                      main=_status),
    "dvc-sync": Command("regenerate dvc.yaml from the Snakemake DAG (--check: fail if stale)",
                        main=_dvc_sync),
}


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser: the commands and their help (`toolcalib --help`); each command's
    arguments are its own parser's (`command_parser`)."""
    parser = argparse.ArgumentParser(prog="toolcalib", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name, command in COMMANDS.items():
        sub.add_parser(name, help=command.help, add_help=False)
    return parser


def _stage(command: Command) -> Callable[..., object]:
    run: Callable[..., object] = importlib.import_module(f"toolcalib.stages.{command.stage}").run
    return run


def command_parser(name: str) -> argparse.ArgumentParser:
    """A stage's parser, derived from its `run`."""
    command = COMMANDS[name]
    parser = argparse.ArgumentParser(prog=f"toolcalib {name}", description=command.help)
    add_arguments(parser, _stage(command))
    return parser


def _reported(exc: Exception) -> bool:
    """Bad input (`InputError`) or a failed fetch: one line on stderr, exit status 2; an error
    that carries its own `exit_status` (failed requests: 1) is reported the same way. Anything
    else is a bug: its traceback, exit status 1. (`FetchError` is looked up only if the fetch
    module ran: the other stages start without it.)"""
    fetch = sys.modules.get("toolcalib.fetch")
    return isinstance(exc, InputError) or (
        fetch is not None and isinstance(exc, fetch.FetchError)) or hasattr(exc, "exit_status")


def _write_verdicts(case: Case, trajectory: Trajectory
                    ) -> list[tuple[WriteContext, ConfirmVerdict]]:
    """Each write call's context with the confirm rule's verdict (what `toolcalib audit`
    recomputes for a write unit)."""
    from toolcalib.benchmarks import get_benchmark
    from toolcalib.classify.profiles import get_profile

    contexts = [write.context for write in get_benchmark(case.benchmark).writes(case, trajectory)]
    verdicts = get_profile("default").confirm_verdicts(contexts)  # the rule, read by `default`
    return list(zip(contexts, verdicts, strict=True))


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = COMMANDS.get(argv[0]) if argv else None
    if command is None:
        build_parser().parse_args(argv)  # help, or the error naming the commands (exit 2)
        return 2
    if command.main is not None:
        return command.main(argv[1:])
    args = vars(command_parser(argv[0]).parse_args(argv[1:]))
    try:
        _stage(command)(**args)
    except Exception as exc:
        if not _reported(exc):
            raise
        print(f"toolcalib {argv[0]}: error: {exc}", file=sys.stderr)
        return int(getattr(exc, "exit_status", 2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
