"""Trajectories for the confirm corpus with a real LLM playing the τ² user: SmolLM2-135M on a
llama.cpp server (tests/support/servers.py) answers the oracle agent, whose requests for approval
("To confirm: I will call ... Would you like me to proceed (yes/no)?") the model answers as it
will; the oracle writes whatever the answer. Run once by hand (not a test):

    python -m tests.confirm.llm_user_run WHEEL GGUF OUT_DIR [N_PER_DOMAIN [OFFSET]]

Tasks: each domain's tasks whose reference actions hold a write and at most four agent
actions, every k-th of them from OFFSET (k spreading N_PER_DOMAIN over the list). Prints
the wall time.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from tests.support.servers import LlamaServer
from toolcalib.stages import generate, normalize

ORACLE = json.dumps({"name": "oracle", "backend": "policy", "options": {"policy": "oracle"}})
USER_OPTIONS = {"max_tokens": 48, "seed": 7, "temperature": 0.7, "timeout_s": 600,
                "backoff_s": 0.05}


def chosen(cases: Path, n: int, offset: int = 0) -> list[str]:
    eligible = []
    for line in cases.read_text("utf-8").splitlines():
        case = json.loads(line)
        writes = set(case["environment"].get("write_tools") or ())
        actions = [a for a in ((case["environment"]["task"].get("evaluation_criteria") or {})
                               .get("actions") or [])
                   if a.get("requestor", "assistant") == "assistant"]
        if any(a["name"] in writes for a in actions) and len(actions) <= 4:
            eligible.append(case["id"])
    step = max(1, len(eligible) // n)
    return eligible[offset::step][:n]


def main(wheel: str, gguf: str, out: str, n: int = 12, offset: int = 0) -> None:
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    server = LlamaServer(Path(gguf), folder / "server.log")
    try:
        spec = json.dumps({"name": "smollm2-user", "backend": "openai", "options": {
            "base_url": server.base_url, "model": "smollm2", **USER_OPTIONS}})
        for domain in ("airline", "retail"):
            started = time.monotonic()
            cases = folder / f"cases-{domain}.jsonl"
            normalize.run(benchmark="tau2", category=domain, source=wheel, out=str(cases))
            ids = chosen(cases, n, offset)
            generate.run(ORACLE, "baseline", "tau2", str(cases), wheel,
                         str(folder / f"{domain}.jsonl"), store=str(folder / "store"),
                         case_ids=ids, benchmark_options={"user": "smollm2-user",
                                                          "max_steps": 18},
                         user_spec=spec)
            print(f"{domain}: {len(ids)} tasks {ids}: {time.monotonic() - started:.0f} s",
                  flush=True)
    finally:
        server.stop()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], *(int(a) for a in sys.argv[4:6]))
