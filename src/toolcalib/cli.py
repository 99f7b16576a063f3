"""`toolcalib <stage> ...`: the command line the workflow rules call."""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import TYPE_CHECKING

from toolcalib.jsonio import InputError

if TYPE_CHECKING:
    from toolcalib.classify.base import ConfirmVerdict
    from toolcalib.records import Case, Trajectory
    from toolcalib.writes import WriteContext


def _ids(text: str) -> list[str]:
    ids = [part.strip() for part in text.split(",")]
    if not all(ids) or len(set(ids)) != len(ids):
        raise argparse.ArgumentTypeError("case ids must be non-empty and distinct")
    return ids


def _json_object(text: str) -> dict:
    import json

    value = json.loads(text)
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("expected a JSON object")
    return value


def _json_list(text: str) -> list:
    import json

    value = json.loads(text)
    if not isinstance(value, list):
        raise argparse.ArgumentTypeError("expected a JSON list")
    return value


def _limit(text: str) -> int | None:
    if text == "all":
        return None
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError("limit must be a non-negative integer or 'all'")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="toolcalib", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("fetch", help="download a pinned release and verify its sha256")
    p.add_argument("--requirement", required=True, help="e.g. bfcl-eval==2026.3.23")
    p.add_argument("--sha256", required=True)
    p.add_argument("--out", required=True)

    p = sub.add_parser("model", help="fetch pinned weights, verify sha256, convert once")
    p.add_argument("--source-json", required=True, help="JSON: the model's `source` config")
    p.add_argument("--out", required=True)
    p.add_argument("--keep-gguf", action="store_true",
                   help="keep the verified GGUF instead of converting it (llama.cpp)")

    p = sub.add_parser("normalize", help="raw benchmark -> canonical cases (JSONL)")
    p.add_argument("--benchmark", required=True)
    p.add_argument("--category", required=True)
    p.add_argument("--source", required=True, help="the downloaded release")
    p.add_argument("--benchmark-options", type=_json_object, default=None,
                   help="JSON: the fields of the benchmark's config section that shape its"
                        " cases (τ²: ask_gold)")
    p.add_argument("--out", required=True)

    p = sub.add_parser("gold", help="execute each case's ground truth once")
    p.add_argument("--benchmark", required=True)
    p.add_argument("--cases", required=True)
    p.add_argument("--source", required=True)
    p.add_argument("--known-cases", default=None,
                   help="cases already executed (with --known): a case of the same task takes"
                        " its gold row instead of executing again")
    p.add_argument("--known", default=None, help="the gold of --known-cases")
    p.add_argument("--out", required=True)

    p = sub.add_parser("generate", help="run a model on cases (multi-turn protocol)")
    p.add_argument("--model-spec", required=True, help="JSON: {name, backend, options}")
    p.add_argument("--variant", required=True)
    p.add_argument("--benchmark", required=True)
    p.add_argument("--cases", required=True)
    p.add_argument("--source", required=True)
    p.add_argument("--limit", type=_limit, default=None,
                   help="first N cases (0: none), or 'all' (default)")
    p.add_argument("--case-ids", type=_ids, default=None,
                   help="comma-separated case ids to run (in file order) instead of --limit")
    p.add_argument("--store", default=None, help="response store folder (cacheable backends)")
    p.add_argument("--explain-misses", type=int, default=3,
                   help="log why the first N store misses missed (which key part differs)")
    p.add_argument("--benchmark-options", type=_json_object, default=None,
                   help="JSON: the loop's fields of the benchmark's config section (τ²: user,"
                        " max_steps, max_errors)")
    p.add_argument("--user-spec", default=None,
                   help="JSON, as --model-spec: the model playing a simulated user")
    p.add_argument("--out", required=True)

    p = sub.add_parser("import-run", help="a published run (backend `replay`) -> one "
                       "category's cases and trajectories, read by its benchmark's plugin")
    p.add_argument("--model-spec", required=True, help="JSON: {name, backend: replay, options}")
    p.add_argument("--benchmark", required=True)
    p.add_argument("--category", required=True)
    p.add_argument("--source", required=True, help="the downloaded release")
    p.add_argument("--cases", default=None,
                   help="the release's cases of the category (benchmarks whose results files"
                        " do not embed theirs: BFCL)")
    p.add_argument("--limit", type=_limit, default=None,
                   help="first N cases (0: none), or 'all' (default)")
    p.add_argument("--case-ids", type=_ids, default=None,
                   help="comma-separated case ids (in file order) instead of --limit")
    p.add_argument("--benchmark-options", type=_json_object, default=None,
                   help="JSON: the benchmark config section's own settings")
    p.add_argument("--out", required=True, help="out: the trajectories (JSON lines)")
    p.add_argument("--out-cases", required=True, help="out: the cases scored (JSON lines)")
    p.add_argument("--out-records", required=True,
                   help="out: every record read, with its provenance (JSON lines)")
    p.add_argument("--out-recorded", required=True,
                   help="out: the run's own headline for the category, as recorded (JSON)")
    p.add_argument("--out-status", default=None,
                   help="out: the import's status (JSON: records per file by fate, or why it "
                        "failed); bad input is then recorded there, the other outputs written "
                        "empty, exit 0 (the workflow's rule), instead of stopping (exit 2)")

    p = sub.add_parser("evaluate", help="classify and score every category of one run, then"
                       " its per-case table and triples")
    p.add_argument("--profile", required=True, help="classifier profile")
    p.add_argument("--benchmark", required=True)
    p.add_argument("--source", required=True, help="the downloaded release")
    p.add_argument("--cases", nargs="+", required=True, help="one file per category")
    p.add_argument("--gold", nargs="+", required=True, help="per category, as --cases")
    p.add_argument("--trajectories", nargs="+", required=True, help="per category, as --cases")
    p.add_argument("--actions", nargs="+", required=True, help="out: per category, as --cases")
    p.add_argument("--scores", nargs="+", required=True, help="out: per category, as --cases")
    p.add_argument("--per-case", required=True, help="out: the run's per-case table (JSON lines)")
    p.add_argument("--triples", required=True, help="out: the run's triples (CSV)")
    p.add_argument("--judge-spec", default=None,
                   help="JSON: the judge model, as --model-spec (profile `judge`)")
    p.add_argument("--store", default=None, help="response store folder (profile `judge`)")

    p = sub.add_parser("aggregate", help="triples, confusion matrices, per-case tables")
    p.add_argument("--actions", nargs="+", required=True, help="the action tables (JSON lines)")
    p.add_argument("--runs", nargs="+", required=True, help="each run's per_case.jsonl")
    p.add_argument("--published", nargs="*", default=(),
                   help="the published runs' records tables (import-run --out-records)")
    p.add_argument("--recorded", nargs="*", default=(),
                   help="the published runs' own headlines, one JSON per category "
                        "(<category>.recorded.json of import-run), for the leaderboard")
    p.add_argument("--pairs", type=_json_list, default=(),
                   help="JSON list: the config's pairs, each {name, base, other} (pairs.csv)")
    p.add_argument("--out-dir", required=True)

    p = sub.add_parser("validate", help="classifier profiles vs the labelled corpus")
    _validation_args(p)
    p.add_argument("--sources", nargs="+", default=None,
                   help="only the corpus rows of these sources (e.g. published-heldout)")

    p = sub.add_parser("validate-confirm",
                       help="confirm verdicts vs the hand-labelled write contexts")
    _validation_args(p)

    p = sub.add_parser("report", help="the self-contained HTML report (plots, audit anchors)")
    p.add_argument("--metrics-dir", required=True)
    p.add_argument("--validation", default=None, help="classifier validation table (CSV)")
    p.add_argument("--validation-summary", default=None,
                   help="classifier validation summary per profile and source (CSV)")
    p.add_argument("--policies", default=None,
                   help="JSON: the reference policies' model names and kinds "
                        "(default: models named policy-<kind>)")
    p.add_argument("--imports", nargs="*", default=(),
                   help="the published runs' import statuses (import-run --out-status): the "
                        "failed ones are listed first")
    p.add_argument("--out-dir", required=True)

    p = sub.add_parser("manifest", help="the run manifest: code, config, models, packages, hashes")
    p.add_argument("--config-json", required=True)
    p.add_argument("--inputs", nargs="+", required=True)
    p.add_argument("--trajectories", nargs="+", required=True)
    p.add_argument("--out", required=True)

    sub.add_parser("audit", add_help=False,
                   help="where a number of triples.csv comes from: recompute it, check "
                        "artifacts against dvc.lock (an overlay run: its manifest); --case ID "
                        "shows one case")
    sub.add_parser("reproduce", add_help=False,
                   help="build the committed HEAD from scratch in a clean clone and compare "
                        "every output hash with dvc.lock")
    sub.add_parser("status", add_help=False,
                   help="per model and benchmark: cases scored, excluded by reason, failed "
                        "generate jobs and their logs (also printed at the end of snakemake)")
    sub.add_parser("dvc-sync", add_help=False,
                   help="regenerate dvc.yaml from the Snakemake DAG (--check: fail if stale)")
    return parser


def _reported(exc: Exception) -> bool:
    """Bad input (`InputError`) or a failed fetch: one line on stderr, exit status 2; an error
    that carries its own `exit_status` (failed requests: 1) is reported the same way. Anything
    else is a bug: its traceback, exit status 1. (`FetchError` is looked up only if the fetch
    module ran: the other stages start without it.)"""
    fetch = sys.modules.get("toolcalib.fetch")
    return isinstance(exc, InputError) or (
        fetch is not None and isinstance(exc, fetch.FetchError)) or hasattr(exc, "exit_status")


def _validation_args(p: argparse.ArgumentParser) -> None:
    """A validation stage's arguments: a corpus, profiles, the judge and where to write."""
    p.add_argument("--corpus", required=True)
    p.add_argument("--profiles", nargs="+", required=True)
    p.add_argument("--judge-spec", default=None,
                   help="JSON: the judge model, as --model-spec (profile `judge`)")
    p.add_argument("--store", default=None, help="response store folder (profile `judge`)")
    p.add_argument("--out-dir", required=True)


def _write_verdicts(case: Case, trajectory: Trajectory
                    ) -> list[tuple[WriteContext, ConfirmVerdict]]:
    """Each write call's context with the confirm rule's verdict (what `toolcalib audit`
    recomputes for a write unit)."""
    from toolcalib.benchmarks import get_benchmark
    from toolcalib.classify.profiles import get_profile

    contexts = [write.context for write in get_benchmark(case.benchmark).writes(case, trajectory)]
    verdicts = get_profile("default").confirm_verdicts(contexts)  # the rule, read by `default`
    return list(zip(contexts, verdicts, strict=True))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["dvc-sync"]:
        from toolcalib.pipeline.dvcsync import main_dvc_sync

        return main_dvc_sync(argv[1:])
    if argv[:1] == ["audit"]:
        from toolcalib.provenance.audit.main import main_audit

        return main_audit(argv[1:], _write_verdicts)
    if argv[:1] == ["status"]:
        from toolcalib.pipeline.status import main_status

        return main_status(argv[1:])
    if argv[:1] == ["reproduce"]:
        from toolcalib.provenance.reproduce import main_reproduce

        return main_reproduce(argv[1:])
    args = vars(build_parser().parse_args(argv))
    command = args.pop("command").replace("-", "_")
    try:
        importlib.import_module(f"toolcalib.stages.{command}").run(**args)
    except Exception as exc:
        if not _reported(exc):
            raise
        print(f"toolcalib {command.replace('_', '-')}: error: {exc}", file=sys.stderr)
        return getattr(exc, "exit_status", 2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
