"""The judge's confirm figures from the response store alone, on the rows whose request it holds
(for a `tests.confirm.judge_run` stopped before the end, or finished): no request is sent; the
rows without an answer are counted and left out. Prints the judge's and the rule's lines on
those rows, overall and per source kind (`tests.confirm.verdicts.doc_lines`). With --export,
also writes the replies to FILE (`tests/data/confirm_judge_*.json`, which the fast tests
recompute the documented figures from), with LABEL and the JUDGE description (JSON) in it.
Run by hand with the spec the run used (judge_run's OUT_DIR/judge_spec.json):

    python -m tests.confirm.stored_verdicts CORPUS STORE JUDGE_SPEC_JSON
        [--export FILE --label LABEL --judge JSON --wall-s S]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from tests.confirm import verdicts as stored
from toolcalib.backends import make_backend
from toolcalib.backends.base import Request
from toolcalib.backends.store import ResponseStore, StoredBackend
from toolcalib.classify.confirm_judge import load_confirm_rubric
from toolcalib.classify.confirm_validation import load_confirm_corpus
from toolcalib.config import parse_model_spec
from toolcalib.records import Emission


def main() -> None:
    parser = argparse.ArgumentParser()
    for name in ("corpus", "store", "spec"):
        parser.add_argument(name)
    parser.add_argument("--export", type=Path)
    parser.add_argument("--label", default="")
    parser.add_argument("--judge", default="{}")
    parser.add_argument("--wall-s", type=float)
    args = parser.parse_args()
    backend = StoredBackend(make_backend(parse_model_spec(args.spec)), ResponseStore(args.store))
    rubric = load_confirm_rubric()
    rows = load_confirm_corpus(args.corpus)
    replies = []
    for row in rows:
        request = Request(messages=rubric.messages(row.context()), tools=[])
        if backend.store.get(backend.key(request).key) is not None:
            (answer,) = backend.generate_batch([request])
            assert isinstance(answer, Emission)
            replies.append({"id": row.id, "request_sha256": stored.request_sha256(
                request.messages), "reply": answer.text})
    assert backend.misses == 0
    data = {"label": args.label, "judge": json.loads(args.judge), "rubric": rubric.version,
            "wall_s": args.wall_s, "verdicts": replies}
    print(f"{len(replies)} of {len(rows)} rows answered in the store")
    print("\n".join(stored.doc_lines(rows, data)))
    if args.export:
        stored.write(args.export, {k: v for k, v in data.items() if k != "verdicts"}, replies)


if __name__ == "__main__":
    main()
