"""The audit as text: the metric and its cases, the artifacts and the stages that wrote them,
the run, the published runs' agreement and the replayed case."""

from __future__ import annotations

import json
from typing import Any

from toolcalib.provenance.audit.case import truncate
from toolcalib.provenance.audit.recompute import PER_CASE
from toolcalib.provenance.lock import MANIFEST

CMD_CHARS = 240
"""Command lines longer than this are shortened (`shorten`)."""
UNIT_CHARS = 400
"""A write unit's texts are cut here (its turns show them whole; --json has them whole)."""


def shorten(command: str, limit: int = CMD_CHARS) -> str:
    """A command line longer than `limit` with each run of more than three path arguments cut
    to its first and last (the aggregate stage lists hundreds of paths) and any word longer
    than 80 characters cut (a model spec's JSON), each cut saying what it left out."""
    if len(command) <= limit:
        return command
    out: list[str] = []
    paths: list[str] = []

    def flush() -> None:
        out.extend(paths if len(paths) <= 3 else
                   [paths[0], f"[... {len(paths) - 2} more paths ...]", paths[-1]])
        paths.clear()

    for word in command.split(" "):
        if "/" in word and not word.startswith("-") and not set(word) & set("{'\""):
            paths.append(word)
            continue
        flush()
        out.append(word if len(word) <= 80 else f"{word[:60]}...[{len(word) - 60} more chars]")
    flush()
    return " ".join(out)


def _fmt(value: Any) -> str:
    return "-" if value is None else str(value)


def _ids(ids: list[str], indent: str) -> list[str]:
    if not ids:
        return [f"{indent}(none)"]
    lines, line = [], indent
    for case_id in ids:
        if len(line) + len(case_id) + 1 > 100 and line.strip():
            lines.append(line.rstrip())
            line = indent
        line += case_id + " "
    return [*lines, line.rstrip()]


def _block(prefix: str, text: str) -> str:
    """`prefix` then `text`, its later lines indented to line up under the first."""
    return prefix + text.replace("\n", "\n" + " " * len(prefix))


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _render_metric(m: dict[str, Any]) -> list[str]:
    table, mine = m["table"], m["recomputed"]
    verdict = "MATCHES the table" if m["matches"] else "DIFFERS from the table"
    lines = [f"metric      {m['definition']}"]
    if m["kind"] == "rate":
        lines += [
            f"table       {m['name']} = {_fmt(table['value'])}  (k={table['k']}, "
            f"n={table['n']})  95% Wilson [{_fmt(table['lo'])}, {_fmt(table['hi'])}]",
            f"recomputed  {m['name']} = {mine['k']}/{mine['n']} = {_fmt(mine['value'])}  "
            f"95% Wilson [{_fmt(mine['lo'])}, {_fmt(mine['hi'])}]  from {PER_CASE}: {verdict}",
            f"numerator   k={mine['k']} scored cases with {m['per_case_column']}:",
            *_ids(m["numerator_cases"], "              "),
            f"denominator n={mine['n']} scored cases:",
            *_ids(m["denominator_cases"], "              "),
        ]
    else:
        lines += [
            f"table       {m['name']} = {table['value']}",
            f"recomputed  {m['name']} = {mine['value']} (of {mine['n']} cases in the cell) "
            f"from {PER_CASE}: {verdict}",
            f"cases       {mine['value']}:",
            *_ids(m["numerator_cases"], "              "),
            f"cell cases  {mine['n']}:",
            *_ids(m["denominator_cases"], "              "),
        ]
    return lines


def _render_provenance(p: dict[str, Any]) -> list[str]:
    if p["record"] != p["lock"]:
        return _render_own_record(p)
    lines = [f"provenance  (md5 recorded in {p['lock']} vs the file on disk)"]
    width = max((len(a["path"]) for a in p["artifacts"]), default=0)
    for a in p["artifacts"]:
        extra = "" if a["manifest_sha256"] is None else f"  manifest sha256 {a['manifest_sha256']}"
        if a["recorded_differently_by"]:
            extra += f"  recorded differently by {', '.join(a['recorded_differently_by'])}"
        lines.append(f"  {a['role']:<12} {a['path']:<{width}}  md5 {_fmt(a['md5_recorded'])}  "
                     f"{a['status'].upper() if a['status'] != 'ok' else 'ok'}"
                     f"  <- {_fmt(a['stage'])}{extra}")
        if a["status"] == "modified":
            lines.append(f"  {'':<12} {'':<{width}}  on disk {a['md5_disk']}")
            lines += [f"  {'':<12} {why}" for why in a["why"]]
    lines += [f"machine     {line}" for line in p["machine"]]
    lines.append("stages      (commands from dvc.lock, long ones shortened: --json has them whole)")
    for s in p["stages"]:
        code = (f"{s['code_deps']} code deps recorded, all match" if not s["code_changed"]
                else f"{s['code_deps']} code deps recorded, changed since: "
                     f"{', '.join(s['code_changed'])}")
        lines += [f"  {s['name']}  -> {', '.join(s['outs'])}", f"    cmd: {shorten(s['cmd'])}",
                  f"    code: {code}"]
    return lines


def _render_own_record(p: dict[str, Any]) -> list[str]:
    """The artifacts against the run's own manifest (dvc.lock records another config's run,
    or there is none)."""
    lines = [f"provenance  (sha256 recorded in {MANIFEST}, the run's own record, vs the file on "
             f"disk: {p['record_why']})"]
    width = max((len(a["path"]) for a in p["artifacts"]), default=0)
    for a in p["artifacts"]:
        status = {"record": "the record itself", "unhashed": "not hashed by the manifest"}.get(
            a["status"], a["status"].upper() if a["status"] != "ok" else "ok")
        lines.append(f"  {a['role']:<12} {a['path']:<{width}}  sha256 "
                     f"{_fmt(a['sha256_recorded'])[:16]}  {status}")
        if a["status"] == "modified":
            lines.append(f"  {'':<12} {'':<{width}}  on disk {a['sha256_disk']}")
            lines += [f"  {'':<12} {why}" for why in a["why"]]
    lines += [f"machine     {line}" for line in p["machine"]]
    why = (f"{p['lock']}'s commands are another run's" if p["lock_exists"]
           else f"there is no {p['lock']}")
    lines.append(f"stages      not listed: {why} (Snakemake ran this one: `snakemake -n -p` with "
                 "the run's config files prints its commands)")
    return lines


def _render_unit(u: dict[str, Any]) -> list[str]:
    if u["kind"] != "write":
        return [f"  unit {u['id']}: the case's further gold class {u['gold']} (gold turn "
                f"{_fmt(u['gold_turn'])}), read from the case's trajectory"]
    if "call" not in u:
        return [f"  unit {u['id']}: write call {u['number']}, but the trajectory has "
                f"{u['writes']}"]
    call = u["call"]
    recorded = u["recorded"]
    lines = [
        f"  unit {u['id']}: write call {u['number']} of {u['writes']}, turn {u['turn']} step "
        f"{u['step']}: {call['name']}({_json(call['arguments'])})"
        + ("" if u["result"] is None else f" -> {u['result']}"),
        f"    recorded: {'confirmed' if recorded['confirmed'] else 'not confirmed'} "
        f"(emitted {_fmt(recorded['emitted'])})",
    ]
    if u["agent_at"] is None:
        lines.append("    agent before it: no message without calls (a write in the first "
                     "exchange has no request for approval)")
    else:
        lines.append(_block(f"    agent before it (turn {u['agent_at']['turn']} step "
                            f"{u['agent_at']['step']}): ",
                            truncate(_fmt(u["agent_text"]), UNIT_CHARS) or "''"))
        lines.append(_block("    user's reply: ", truncate(_fmt(u["user_reply"]), UNIT_CHARS)))
    v = u["verdict"]
    if v is not None:
        agrees = "agrees with" if u["agrees"] else "DIFFERS from"
        lines.append(_block(f"    why: {v['rule']}: ", _fmt(v["evidence"]) or "''")
                     + f"  (the confirm rule: {'confirmed' if v['confirmed'] else 'not confirmed'},"
                     f" {agrees} the record)")
    elif u["verdict_source"] == "judge":
        lines.append("    why: the judge model's verdict (classifier judge): not recomputed")
    else:
        lines.append("    why: not recomputed (the confirm rule is not wired into this audit)")
    return lines


def _render_case(c: dict[str, Any]) -> list[str]:
    v = c["verdict"]
    verdict = "no score row" if v is None else (
        ("PASSED" if v["passed"] else "FAILED") if v["scored"] else "not scored")
    lines = [
        f"case        {c['case_id']}  outcome {c['outcome']}"
        + (f" ({c['error']})" if c["error"] else ""),
        f"  gold class {_fmt(c['gold_action'])} at gold turn {_fmt(c['gold_turn'])}; "
        f"in numerator: {c['in_numerator']}; in denominator: {c['in_denominator']}",
        f"  verdict: {verdict}",
    ]
    if v is not None and v["error_type"]:
        lines.append(f"    error {v['error_type']}: {_fmt(v['error_message'])}"
                     + (f" (turn {v['failed_turn']})" if v["failed_turn"] is not None else ""))
    if v is not None and v["details"]:
        lines.append(f"    details: {truncate(_json(v['details']), 600)}")
    if c["unit"] is not None:
        lines += _render_unit(c["unit"])
    for i in c["interventions"]:
        lines.append(f"  probe {i['probe']} turn {i['turn']} step {i['step']}: "
                     f"{'fired' if i['fired'] else 'not fired'} ({i['reason']})")
    for t in c["turns"]:
        cls = t["class"] or {}
        mark = "  <- GOLD TURN" if t["is_gold_turn"] else ""
        lines.append(f"  turn {t['index']}  gold {_fmt(t['gold_action'])}  class "
                     f"{_fmt(cls.get('action'))}  rule {_fmt(cls.get('rule'))}  evidence "
                     f"{cls.get('evidence')!r}  ended {_fmt(t['ended'])}{mark}")
        if not t["reached"]:
            lines.append("    (not reached)")
        messages = t["messages"]
        for s in [*t["steps"], None]:
            index = None if s is None else s["index"]
            for m in messages:
                if m["before_step"] == index:
                    lines.append(_block(f"    {m['role']}: ", m["content"]))
            if s is None:
                break
            step_cls = s["class"] or {}
            tag = " DROPPED (withdrawn by the probe; not in the turn's class)" if s["dropped"] \
                else ""
            lines.append(f"    step {s['index']}{tag}: class {_fmt(step_cls.get('action'))}  "
                         f"rule {_fmt(step_cls.get('rule'))}  evidence "
                         f"{step_cls.get('evidence')!r}  parse {s['parse']}"
                         + (f" ({s['parse_error']})" if s["parse_error"] else ""))
            if s["text"]:
                lines.append(_block("      text: ", s["text"]))
            for n, call in enumerate(s["calls"]):
                result = s["results"][n] if n < len(s["results"]) else None
                lines.append(f"      call {call['name']}({_json(call['arguments'])})"
                             + ("" if result is None else f" -> {result}")
                             + (f"  <- UNIT {c['case_id']}" if call["unit"] else ""))
    return lines


def render(report: dict[str, Any]) -> str:
    """The audit as text."""
    cell = report["cell"]
    context = report["config"]
    code = report["code"]
    lines = [
        f"cell        {' / '.join(cell.values())}  (gold {_fmt(report['gold_action'])})",
        *_render_metric(report["metric"]),
        "",
        *_render_provenance(report["provenance"]),
        "",
    ]
    if not code and not report["packages"]:
        lines.append(f"run         unknown: {MANIFEST} is missing (model identity, config, "
                     "package versions and code version come from it)")
    else:
        dirty = {True: "dirty", False: "clean"}.get(code.get("dirty"), "clean state unknown")
        lines += [
            f"model       {cell['model']}: identity {_json(report['model_identity'])}",
            f"config      limit={_fmt(context['limit'])} classifier="
            f"{_fmt(context['classifier'])} variants={_json(context['variants'])}",
            f"            model entry {_json(context['model'])}",
            f"            benchmark entry {_json(context['benchmark'])}",
            "packages    " + ", ".join(f"{k} {_fmt(v)}" for k, v in report["packages"].items()),
            f"code        git commit {code.get('git_commit', 'unknown')}, {dirty} (as the "
            "manifest recorded it)",
        ]
    if "published" in report:
        lines += ["", *(f"published   {text}" for text in report["published"]["agreement"]),
                  *(f"            {r['case_id'] or 'record ' + str(r['index'])} "
                    f"({r['status']}): recorded {_fmt(r['recorded_reward'])}, recomputed "
                    f"{_fmt(r['reward'])}: {_fmt(r['note'])}"
                    for r in report["published"]["listed"])]
    if "case" in report:
        lines += ["", *_render_case(report["case"])]
    lines.append("")
    provenance = report["provenance"]
    if report["ok"] and provenance["record"] == provenance["lock"]:
        lines.append("audit: OK (the number is reproduced and every artifact matches dvc.lock)")
    elif report["ok"]:
        unhashed = ", ".join(provenance["unhashed"]) or "none"
        lines.append(f"audit: OK (the number is reproduced and every artifact the run's "
                     f"manifest hashes matches it; not hashed by it: {unhashed})")
    else:
        lines += ["audit: FAILED", *(f"  - {p}" for p in report["problems"])]
    return "\n".join(lines) + "\n"
