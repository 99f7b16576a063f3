"""Digests of trajectory files and their differences, in the terms a reader needs: did the
model's emissions change, the rest of a record (execution results, outcome, conversation), or
only the recorded identity?

The run manifest keeps a file's digests (`file_digests`); `reproduce` and `audit` compare a
built file with them (`compare_digests`), or with the recorded file itself when DVC's cache
holds it (`diff_records`). Records are read as plain JSON: any benchmark's trajectories work.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from toolcalib.jsonio import dumps, sha256_bytes

MAX_CASES = 64
"""Files with at most this many records keep per-case digests in the manifest (real-model runs
of the default config); larger ones keep file digests only."""
IDENTITY = "model_identity"
SHORT = 16


def _sha(obj: Any) -> str:
    return sha256_bytes(dumps(obj).encode("utf-8"))[:SHORT]


def emissions(record: dict[str, Any]) -> list[dict[str, Any]]:
    """Every emission of a trajectory record (text, calls, finish reason, token counts), with
    its turn and step."""
    return [{"turn": turn.get("index"), "step": step.get("index"), **step.get("emission", {})}
            for turn in record.get("turns", []) for step in turn.get("steps", [])]


def rest(record: dict[str, Any]) -> dict[str, Any]:
    """The record without its identity and without the emissions themselves."""
    out = {k: v for k, v in record.items() if k not in (IDENTITY, "turns")}
    out["turns"] = [{**turn, "steps": [{k: v for k, v in step.items() if k != "emission"}
                                       for step in turn.get("steps", [])]}
                    for turn in record.get("turns", [])]
    return out


def read_records(path: str | Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def file_digests(path: str | Path) -> dict[str, Any]:
    """A trajectory file's digests for the manifest: the emissions and the rest of every record
    (per case where the file has at most MAX_CASES records), and the identities it records."""
    records = read_records(path)
    digest: dict[str, Any] = {
        "records": len(records),
        "emissions": _sha([emissions(r) for r in records]),
        "rest": _sha([rest(r) for r in records]),
        "identity": _sha(sorted({dumps(r.get(IDENTITY, {})) for r in records})),
    }
    if len(records) <= MAX_CASES:
        digest["cases"] = {r["case_id"]: {"emissions": _sha(emissions(r)), "rest": _sha(rest(r))}
                           for r in records}
    return digest


def compare_digests(recorded: dict[str, Any], built: dict[str, Any]) -> list[str]:
    """What differs between a recorded file's digests and a built file's, one line each;
    empty when the digests agree."""
    lines: list[str] = []
    if recorded.get("records") != built.get("records"):
        lines.append(f"{recorded.get('records')} records recorded, {built.get('records')} built")
    for part, label in (("emissions", "emissions (texts, calls, finish reasons, token counts)"),
                        ("rest", "execution results, outcomes or conversation")):
        if recorded.get(part) == built.get(part):
            continue
        cases = _differing_cases(recorded.get("cases"), built.get("cases"), part)
        where = f" in case(s) {', '.join(cases)}" if cases else ""
        lines.append(f"{label} differ{where}")
    if recorded.get("identity") != built.get("identity"):
        lines.append("the recorded model identity differs")
    return lines


def _differing_cases(recorded: dict[str, Any] | None, built: dict[str, Any] | None,
                     part: str) -> list[str]:
    if recorded is None or built is None:
        return []
    return sorted(case for case in recorded.keys() | built.keys()
                  if (recorded.get(case) or {}).get(part) != (built.get(case) or {}).get(part))


def diff_records(recorded: Iterable[dict[str, Any]], built: Iterable[dict[str, Any]],
                 limit: int = 20) -> list[str]:
    """Record by record (matched by case id): which emissions, which other fields and which
    identity fields differ; at most `limit` lines."""
    old = {r["case_id"]: r for r in recorded}
    new = {r["case_id"]: r for r in built}
    lines = [f"case {c}: only in the recorded file" for c in sorted(old.keys() - new.keys())]
    lines += [f"case {c}: only in the built file" for c in sorted(new.keys() - old.keys())]
    for case in sorted(old.keys() & new.keys()):
        a, b = old[case], new[case]
        lines += [f"case {case}: {line}" for line in _record_diff(a, b)]
    return lines[:limit] + ([f"... {len(lines) - limit} more"] if len(lines) > limit else [])


def _record_diff(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    lines = []
    ea, eb = emissions(a), emissions(b)
    if len(ea) != len(eb):
        lines.append(f"{len(ea)} emissions recorded, {len(eb)} built")
    for x, y in zip(ea, eb, strict=False):
        fields = sorted(k for k in x.keys() | y.keys() if x.get(k) != y.get(k))
        if fields:
            lines.append(f"turn {x['turn']} step {x['step']}: emission {', '.join(fields)} "
                         "differ")
    ra, rb = rest(a), rest(b)
    fields = sorted(k for k in ra.keys() | rb.keys() if ra.get(k) != rb.get(k))
    if fields and not lines:
        lines.append(f"{', '.join(fields)} differ (emissions equal)")
    ia, ib = a.get(IDENTITY, {}), b.get(IDENTITY, {})
    for key in sorted(k for k in ia.keys() | ib.keys() if ia.get(k) != ib.get(k)):
        lines.append(f"identity {key}: {dumps(ia.get(key))} recorded, {dumps(ib.get(key))} "
                     "built")
    return lines


def explain_trajectory(path: str, recorded_manifest: dict[str, Any], built_file: Path,
                       committed_copy: Path | None) -> list[str]:
    """Why a trajectory file's hash differs: from the committed file when available, else from
    the committed manifest's digests."""
    if committed_copy is not None:
        lines = diff_records(read_records(committed_copy), read_records(built_file))
        return lines or ["records equal as JSON: the bytes differ in layout only"]
    recorded = (recorded_manifest.get("trajectories") or {}).get(path)
    if recorded is None:
        return ["the committed manifest has no digests for it and DVC's cache lacks the "
                "committed file (`dvc pull` fetches it): the difference cannot be located"]
    return compare_digests(recorded, file_digests(built_file)) or [
        "every digest agrees: the bytes differ outside the records' content"]
