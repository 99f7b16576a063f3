"""Job seconds of a Snakemake run, from its log (`snakemake --cores 8 2>&1 | tee run.log`, or
the file under `.snakemake/log/`).

    python bench/job_times.py run.log [--baseline other.log] [--top 15]

Prints the wall span, the job seconds summed per group (a model's jobs by its name, the
reference policies, the published runs' import, the preparation stages, the rest by rule) and
the longest jobs; with `--baseline`, each group's and the wall's ratio baseline / run (>1: the
run is faster). Jobs overlap (two at a time on 2 cores), so the groups' sum exceeds the wall
time; on a machine kept busy, sum / wall is the cores' use.
"""

from __future__ import annotations

import argparse
import re
from collections import defaultdict
from datetime import datetime
from pathlib import Path

STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]$")
RULE = re.compile(r"^(?:local)?(?:rule|checkpoint) (\w+):$")
FINISHED = re.compile(r"^Finished jobid: (\d+)")


def jobs(lines: list[str]) -> list[tuple[str, str, float, float]]:
    """(rule, output, start, end) of every finished job, times in seconds from the epoch."""
    started: dict[str, tuple[str, str, float]] = {}
    done = []
    stamp = 0.0
    rule = output = ""
    for line in lines:
        if found := STAMP.match(line.strip()):
            stamp = datetime.strptime(found[1], "%a %b %d %H:%M:%S %Y").timestamp()
        elif found := RULE.match(line.strip()):
            rule, output = found[1], ""
        elif line.strip().startswith("output:"):
            output = line.split(":", 1)[1].strip().split(",")[0]
        elif line.strip().startswith("jobid:") and rule:
            started[line.split(":", 1)[1].strip()] = (rule, output, stamp)
            rule = ""
        elif found := FINISHED.match(line.strip()):
            if found[1] in started:
                name, out, begin = started.pop(found[1])
                done.append((name, out, begin, stamp))
    return done


def group(rule: str, output: str) -> str:
    if rule == "generate":
        model = output.split("/")[2]
        return "policies" if model.startswith("policy-") else model
    if rule in ("import_run", "gold_published"):
        return "published runs"
    if rule in ("download", "normalize", "gold", "model"):
        return "preparation" if rule != "model" else f"model conversion ({output.split('/')[-1]})"
    return rule


def read(log: Path) -> list[tuple[str, str, float, float]]:
    done = jobs(log.read_text(encoding="utf-8").splitlines())
    if not done:
        raise SystemExit(f"{log}: no finished job found")
    return done


def summary(done: list[tuple[str, str, float, float]]) -> tuple[float, dict[str, list[float]]]:
    """Wall seconds (first start to last end) and each group's job seconds."""
    wall = max(end for *_, end in done) - min(begin for *_, begin, _ in done)
    sums: dict[str, list[float]] = defaultdict(list)
    for rule, output, begin, end in done:
        sums[group(rule, output)].append(end - begin)
    return max(wall, 1.0), sums


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("log", type=Path)
    parser.add_argument("--baseline", type=Path)
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    done = read(args.log)
    wall, sums = summary(done)
    base_wall, base = summary(read(args.baseline)) if args.baseline else (0.0, {})
    total = sum(map(sum, sums.values()))
    ratio = f", {base_wall / wall:.2f}x the baseline's {base_wall:.0f} s" if base else ""
    print(f"{len(done)} jobs, wall {wall:.0f} s (first start to last end{ratio}), "
          f"job seconds {total:.0f} ({total / wall:.2f} jobs at a time on average)")
    for name, seconds in sorted(sums.items(), key=lambda item: -sum(item[1])):
        against = (f"  baseline {sum(base[name]):7.0f} s, {sum(base[name]) / sum(seconds):.2f}x"
                   if name in base and sum(seconds) else "")
        print(f"  {name:40} {sum(seconds):7.0f} s  {len(seconds):3} jobs{against}")
    print(f"longest {args.top}:")
    for rule, output, begin, end in sorted(done, key=lambda job: job[2] - job[3])[:args.top]:
        print(f"  {end - begin:6.0f} s  {rule:14} {output}")


if __name__ == "__main__":
    main()
