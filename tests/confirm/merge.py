"""Fill the hand labels into the exported, unlabelled confirm corpus (`confirmed`, `reason` by
id); every row must get exactly one label. Run once by hand:

    python -m tests.confirm.merge CORPUS LABELS [LABELS ...]
"""

from __future__ import annotations

import json
import sys


def main(corpus: str, *label_files: str) -> None:
    labels: dict[str, dict[str, object]] = {}
    for path in label_files:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                label = json.loads(line)
                if label["id"] in labels:
                    raise SystemExit(f"{path}: {label['id']} labelled twice")
                labels[label["id"]] = label
    with open(corpus, encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle]
    missing = [row["id"] for row in rows if row["id"] not in labels]
    unknown = sorted(set(labels) - {row["id"] for row in rows})
    if missing or unknown:
        raise SystemExit(f"unlabelled rows {missing}; labels of no row {unknown}")
    with open(corpus, "w", encoding="utf-8") as handle:
        for row in rows:
            row["confirmed"], row["reason"] = (labels[row["id"]][k] for k in ("confirmed",
                                                                                "reason"))
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main(*sys.argv[1:])
