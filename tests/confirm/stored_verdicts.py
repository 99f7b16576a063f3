"""The judge's confirm figures from the response store alone, on the rows whose request it holds
(for a `tests.confirm.judge_run` stopped before the end): no request is sent; the rows without
an answer are counted and left out. Run by hand with the spec the run used:

    python -m tests.confirm.stored_verdicts CORPUS STORE JUDGE_SPEC_JSON
"""

from __future__ import annotations

import sys

from toolcalib.backends import make_backend
from toolcalib.backends.base import Request
from toolcalib.classify.confirm_judge import ConfirmJudge, load_confirm_rubric
from toolcalib.classify.confirm_validation import (
    confirm_scores,
    load_confirm_corpus,
    render_markdown,
    verdicts,
)
from toolcalib.classify.profiles import get_profile
from toolcalib.config import parse_model_spec
from toolcalib.store import ResponseStore, StoredBackend


def main(corpus: str, store: str, spec: str) -> None:
    backend = StoredBackend(make_backend(parse_model_spec(spec)), ResponseStore(store))
    rubric = load_confirm_rubric()
    rows = load_confirm_corpus(corpus)
    held = [row for row in rows if backend.store.get(backend.key(Request(
        messages=rubric.messages(row.context()), tools=[])).key) is not None]
    judge = ConfirmJudge(backend, rubric=rubric)
    summary = [{"profile": "default", **confirm_scores(held, verdicts(held, get_profile(
        "default")))}, {"profile": "judge", **confirm_scores(held, judge.judge(
            [row.context() for row in held]))}]
    assert backend.misses == 0
    print(f"{len(held)} of {len(rows)} rows answered in the store")
    print(render_markdown(summary), end="")


if __name__ == "__main__":
    main(*sys.argv[1:])
