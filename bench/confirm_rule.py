"""The confirm verdicts of the shipped τ² runs under the rule of the working tree, beside the
verdicts the shipped metrics were computed with.

Run from the repository root:

    python bench/confirm_rule.py [--models M ...] [--list] [--json F]

For every (model, domain) of `MODELS` it reads the run's trajectories and cases, builds every
write call's context as the evaluate stage does (`benchmarks.tau2.writes.write_contexts`) and
takes the `default` profile's verdict (the rule in `classify/confirm.py` as it is now). Beside
it, `shipped`: the write's verdict in `results/metrics/per_case.parquet` (`gold_emitted` of its
`confirm` row), i.e. the rule that produced the committed metrics.

Confirm GAR is GAR on `confirm` rows (`docs/tau2.md`, `docs/metrics.md`): confirmed writes
over scored writes (a write's trajectory is scored unless its outcome is an infrastructure
one; each write weighs 1). Printed per model and domain: writes, scored, confirmed shipped and
now, GAR shipped and now, verdicts that changed (+: now confirmed, -: no longer), and the
unconfirmed writes now by deciding rule. `--list` also lists each unconfirmed write: id, rule,
evidence. `--request-only`: `now` with the details read in the approval request alone (the
rule before issue 40), the same trajectories.

Inputs: `results/trajectories/<model>/baseline/tau2/<domain>.jsonl` when present, else the copy
`dvc.lock` records for that path in the DVC cache (`.dvc/cache/files/md5/..`; read directly,
no `dvc` command runs); cases: `results/published/<model>/tau2/<domain>.cases.jsonl` for an
imported run, else `results/cases/tau2/<domain>.jsonl`. Nothing is written under `results/`.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from toolcalib.benchmarks.tau2.writes import write_contexts  # noqa: E402
from toolcalib.classify.confirm import ConfirmVerdict  # noqa: E402
from toolcalib.classify.profiles import get_profile  # noqa: E402
from toolcalib.evaluate import matching  # noqa: E402
from toolcalib.records import MODEL_OUTCOMES  # noqa: E402

MODELS = ["claude-sonnet-4-5", "gpt-oss-120b", "toolorchestra", "policy-oracle",
          "policy-oracle_no_confirm"]
DOMAINS = ["airline", "retail"]
PER_CASE = ROOT / "results" / "metrics" / "per_case.parquet"


def locked_copy(relative: str) -> Path | None:
    """The DVC cache's copy of `relative` as `dvc.lock` records it (its md5), if present."""
    lock = ROOT / "dvc.lock"
    if not lock.is_file():
        return None
    found = re.search(rf"- path:\s+{re.escape(relative)}\n\s+hash: md5\n\s+md5: (\w+)",
                      lock.read_text("utf-8"))
    if found is None:
        return None
    md5 = found.group(1)
    copy = ROOT / ".dvc" / "cache" / "files" / "md5" / md5[:2] / md5[2:]
    return copy if copy.is_file() else None


def inputs(model: str, domain: str) -> tuple[Path, Path] | None:
    """(cases, trajectories) of one run's domain; None when it has no trajectories."""
    relative = f"results/trajectories/{model}/baseline/tau2/{domain}.jsonl"
    trajectories: Path | None = ROOT / relative
    if trajectories is None or not trajectories.is_file():
        trajectories = locked_copy(relative)
    if trajectories is None or trajectories.stat().st_size == 0:
        return None
    published = ROOT / "results" / "published" / model / "tau2" / f"{domain}.cases.jsonl"
    cases = published if published.is_file() and published.stat().st_size else \
        ROOT / "results" / "cases" / "tau2" / f"{domain}.jsonl"
    return cases, trajectories


def shipped_verdicts() -> dict[tuple[str, str, str], bool]:
    """(model, domain, unit id) -> the committed verdict of each τ² write."""
    if not PER_CASE.is_file():
        return {}
    import polars as pl

    rows = pl.read_parquet(PER_CASE, columns=["model", "variant", "benchmark", "category",
                                              "case_id", "gold_action", "gold_emitted"])
    rows = rows.filter((pl.col("benchmark") == "tau2") & (pl.col("variant") == "baseline")
                       & (pl.col("gold_action") == "confirm"))
    return {(r["model"], r["category"], r["case_id"]): bool(r["gold_emitted"])
            for r in rows.iter_rows(named=True)}


def run(model: str, domain: str, shipped: dict[tuple[str, str, str], bool],
        request_only: bool = False) -> dict[str, Any] | None:
    """One (model, domain): counts, GAR before (shipped) and now, and the unconfirmed writes."""
    files = inputs(model, domain)
    if files is None:
        return None
    profile = get_profile("default")
    writes: list[tuple[str, bool, ConfirmVerdict]] = []
    for case, trajectory in matching(str(files[0]), str(files[1])):
        contexts = [replace(context, exchange=()) if request_only else context
                    for _, context in write_contexts(case, trajectory)]
        counted = trajectory.outcome in MODEL_OUTCOMES
        for number, verdict in enumerate(profile.confirm_verdicts(contexts), start=1):
            writes.append((f"{case.id}#write{number}", counted, verdict))
    scored = [(unit, verdict) for unit, counted, verdict in writes if counted]
    now = sum(verdict.confirmed for _, verdict in scored)
    before = [shipped.get((model, domain, unit)) for unit, _ in scored]
    known = all(b is not None for b in before)
    flips = Counter(("+" if verdict.confirmed else "-")
                    for (unit, verdict), b in zip(scored, before, strict=True)
                    if b is not None and b != verdict.confirmed)
    return {"model": model, "domain": domain, "writes": len(writes), "scored": len(scored),
            "shipped": sum(bool(b) for b in before) if known else None, "now": now,
            "gained": flips["+"], "lost": flips["-"],
            "unconfirmed": dict(Counter(verdict.rule.rpartition(":")[2]
                                        for _, verdict in scored if not verdict.confirmed)),
            "list": [(unit, verdict.rule, verdict.evidence) for unit, verdict in scored
                     if not verdict.confirmed]}


def gar(k: int | None, n: int) -> str:
    return "–" if k is None or not n else f"{k}/{n} = {k / n:.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=MODELS)
    parser.add_argument("--list", action="store_true", help="list every unconfirmed write")
    parser.add_argument("--json", help="also write the figures as JSON here")
    parser.add_argument("--request-only", action="store_true",
                        help="'now' as the rule read before issue 40: the details in the "
                             "approval request alone (the exchange's earlier texts dropped)")
    args = parser.parse_args()
    shipped = shipped_verdicts()
    results = [found for model in args.models for domain in DOMAINS
               if (found := run(model, domain, shipped, args.request_only)) is not None]
    print("| model | domain | writes | scored | confirmed shipped | confirmed now "
          "| confirm GAR shipped | confirm GAR now | + | - | unconfirmed now, by rule |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in results:
        rules = ", ".join(f"{rule} {count}" for rule, count in sorted(r["unconfirmed"].items()))
        print(f"| {r['model']} | {r['domain']} | {r['writes']} | {r['scored']} "
              f"| {'–' if r['shipped'] is None else r['shipped']} | {r['now']} "
              f"| {gar(r['shipped'], r['scored'])} | {gar(r['now'], r['scored'])} "
              f"| {r['gained']} | {r['lost']} | {rules} |")
    if args.list:
        for r in results:
            for unit, rule, evidence in r["list"]:
                print(f"{r['model']}\t{r['domain']}\t{unit}\t{rule}\t{evidence[:160]!r}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n",
                                   "utf-8")


if __name__ == "__main__":
    main()
