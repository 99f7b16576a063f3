"""τ²-bench tasks -> canonical cases: one case per task, its tools in JSON-schema form.

A case's id is `<domain>_<task id>`; its one scripted turn opens no messages (the simulated
user speaks first) and carries the task's gold class, and `open_turns` lets the user open the
rest. `environment` holds the domain, the task as τ² writes it, and the names of the tools τ²
marks as writes. `source.line` is the task's 1-based position in the domain's `tasks.json`
array, `line_sha256` the hash of the task's canonical JSON.
"""

from __future__ import annotations

from typing import Any

from toolcalib.benchmarks.tau2.gold import DEFAULT_ASK_GOLD, gold_class
from toolcalib.jsonio import InputError, dumps, sha256_bytes
from toolcalib.records import Case, SourceRef, Turn, docs_json

REQUIRED = {"id": str, "user_scenario": dict}
"""Task fields every case needs, and their JSON types."""


def check_task(task: Any, where: str) -> None:
    """A malformed task stops normalization with one message naming file, task and field."""
    if not isinstance(task, dict):
        raise InputError(f"{where}: a task is a JSON object, got {type(task).__name__}")
    for field, kind in REQUIRED.items():
        if not isinstance(task.get(field), kind):
            raise InputError(f"{where}: field '{field}': missing or not a {kind.__name__}")
    instructions = task["user_scenario"].get("instructions")
    if not isinstance(instructions, dict | str):
        raise InputError(f"{where}: field 'user_scenario.instructions': missing")
    if isinstance(instructions, dict) and not isinstance(instructions.get("reason_for_call"),
                                                         str):
        raise InputError(f"{where}: field 'user_scenario.instructions.reason_for_call': missing"
                         " or not a string")
    criteria = task.get("evaluation_criteria")
    if criteria is not None and not isinstance(criteria, dict):
        raise InputError(f"{where}: field 'evaluation_criteria': not an object")
    for number, action in enumerate((criteria or {}).get("actions") or [], start=1):
        if not isinstance(action, dict) or not isinstance(action.get("name"), str) \
                or not isinstance(action.get("arguments", {}), dict):
            raise InputError(f"{where}: field 'evaluation_criteria.actions[{number}]': an "
                             "action needs a string 'name' and an object 'arguments'")


def normalize_tasks(domain: str, tasks: list[Any], tools: list[dict[str, Any]],
                    write_tools: frozenset[str], *, file: str, artifact: str,
                    artifact_sha256: str, ask_gold: str = DEFAULT_ASK_GOLD) -> list[Case]:
    """Every task of one domain, in the file's order; `ask_gold`: which tasks are also `ask`
    (`gold.ASK_GOLD`)."""
    cases = []
    for position, task in enumerate(tasks, start=1):
        where = f"{artifact}:{file}: task {position}"
        check_task(task, where)
        gold, rule, also = gold_class(task, domain, ask_gold=ask_gold)
        cases.append(Case(
            id=f"{domain}_{task['id']}", benchmark="tau2", category=domain,
            turns=[Turn(index=0, messages=[], gold_action=gold)], tools_json=docs_json(tools),
            environment={"domain": domain, "task": task, "write_tools": sorted(write_tools)},
            gold_action=gold, gold_turn=0, open_turns=True, gold_rule=rule, gold_also=also,
            source=SourceRef(artifact=artifact, artifact_sha256=artifact_sha256, file=file,
                             line=position, line_sha256=sha256_bytes(dumps(task).encode()))))
    return cases
