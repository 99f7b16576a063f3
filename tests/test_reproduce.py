"""`toolcalib reproduce`'s comparison and the trajectory digests it explains differences with,
on small trees built here (the real build from scratch is the `repro` tier)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import yaml

from tests.support.servers import make_request
from toolcalib.backends.base import MACHINE_FACTS, recorded_identity
from toolcalib.backends.store import request_key
from toolcalib.jsonio import dumps
from toolcalib.provenance.manifest import build_manifest
from toolcalib.provenance.reproduce import build, compare, render
from toolcalib.provenance.trajdigest import MAX_CASES, compare_digests, file_digests

TRAJ = "results/trajectories/m/baseline/bench/cat.jsonl"
ACTIONS = "results/actions/m/baseline/bench/cat.jsonl"
IDENTITY = {"backend": "transformers", "gguf_sha256": "ab" * 32, "threads": 1}


def record(case: str, text: str, identity: dict | None = None, result: str = "ok") -> dict:
    return {"case_id": case, "model": "m", "model_identity": identity or IDENTITY,
            "outcome": "completed", "turns": [{"index": 0, "ended": "no_call", "steps": [
                {"index": 0, "results": [result], "emission": {
                    "text": text, "tool_calls": [], "finish_reason": "stop",
                    "output_tokens": 3}}]}]}


def md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


def make_tree(root: Path, records: list[dict], actions: str = "a") -> Path:
    """A built project: one trajectory file, one file derived from it, manifest and lock."""
    (root / TRAJ).parent.mkdir(parents=True)
    (root / TRAJ).write_text("".join(dumps(r) + "\n" for r in records))
    (root / ACTIONS).parent.mkdir(parents=True)
    (root / ACTIONS).write_text(actions)
    with contextlib.chdir(root):
        manifest = build_manifest({"limit": 1}, [TRAJ], [TRAJ], root=root)
    (root / "results/manifest.json").write_text(json.dumps(manifest))
    stages = {
        "generate": {"cmd": "gen", "deps": [], "outs": [{"path": TRAJ, "md5": md5(root / TRAJ)}]},
        "evaluate": {"cmd": "eval", "deps": [{"path": TRAJ, "md5": md5(root / TRAJ)}],
                     "outs": [{"path": ACTIONS, "md5": md5(root / ACTIONS)}]},
        "manifest": {"cmd": "man", "deps": [], "outs": [
            {"path": "results/manifest.json", "md5": md5(root / "results/manifest.json")}]},
    }
    (root / "dvc.lock").write_text(yaml.safe_dump({"schema": "2.0", "stages": stages}))
    (root / "dvc.yaml").write_text(yaml.safe_dump({"stages": {
        name: {"cmd": stage["cmd"]} for name, stage in stages.items()}}))
    return root


def test_equal_builds_pass_though_the_manifests_name_other_machines(tmp_path):
    committed = make_tree(tmp_path / "a", [record("c1", "hi")])
    built = make_tree(tmp_path / "b", [record("c1", "hi")])
    manifest = json.loads((built / "results/manifest.json").read_text())
    manifest["machine"]["cpu_capability"] = "AVX512"
    manifest["code"]["git_commit"] = "f" * 40
    (built / "results/manifest.json").write_text(json.dumps(manifest))
    result = compare(committed, built)
    assert result.ok, render(result)
    assert "reproduce: OK: all 3 outputs" in render(result)


def test_changed_emissions_fail_and_are_located_from_the_manifest_digests(tmp_path):
    committed = make_tree(tmp_path / "a", [record("c1", "hi"), record("c2", "yo")])
    built = make_tree(tmp_path / "b", [record("c1", "hi"), record("c2", "YO")], actions="b")
    result = compare(committed, built)
    text = render(result)
    assert not result.ok
    traj = next(d for d in result.differing if d["path"] == TRAJ)
    assert traj["stage"] == "generate"
    assert traj["why"][0].startswith("emissions (texts, calls, finish reasons, token counts) "
                                     "differ in case(s) c2")
    derived = next(d for d in result.differing if d["path"] == ACTIONS)
    assert derived["why"] == [f"derived from differing input(s): {TRAJ}"]
    assert "section `inputs` differs" in text and "section `trajectories` differs" in text
    assert "reproduce: FAILED: 2 of 3 outputs differ" in text


def test_dvc_cache_copy_gives_the_differing_records_and_fields(tmp_path):
    committed = make_tree(tmp_path / "a", [record("c1", "hi")])
    built = make_tree(tmp_path / "b", [record("c1", "hi", {**IDENTITY, "threads": 2})])
    recorded_md5 = md5(committed / TRAJ)
    cache = committed / ".dvc/cache/files/md5" / recorded_md5[:2] / recorded_md5[2:]
    cache.parent.mkdir(parents=True)
    shutil.copy(committed / TRAJ, cache)
    result = compare(committed, built)
    traj = next(d for d in result.differing if d["path"] == TRAJ)
    assert traj["why"] == ["case c1: identity threads: 1 recorded, 2 built"]
    (built / TRAJ).write_text(dumps(record("c1", "ho")) + "\n")
    traj = next(d for d in compare(committed, built).differing if d["path"] == TRAJ)
    assert traj["why"] == ["case c1: turn 0 step 0: emission text differ"]


def test_missing_outputs_and_other_config_fail(tmp_path):
    committed = make_tree(tmp_path / "a", [record("c1", "hi")])
    built = make_tree(tmp_path / "b", [record("c1", "hi")])
    lock = yaml.safe_load((built / "dvc.lock").read_text())
    del lock["stages"]["evaluate"]
    (built / "dvc.lock").write_text(yaml.safe_dump(lock))
    manifest = json.loads((built / "results/manifest.json").read_text())
    manifest["config"]["limit"] = 2
    (built / "results/manifest.json").write_text(json.dumps(manifest))
    result = compare(committed, built)
    assert result.missing == [ACTIONS]
    assert result.manifest == ["results/manifest.json: section `config` differs (limit)"]
    assert "MISSING " + ACTIONS in render(result)


def test_digests_tell_emissions_from_results_and_identity(tmp_path):
    def digests(records: list[dict]) -> dict:
        path = tmp_path / f"{len(list(tmp_path.iterdir()))}.jsonl"
        path.write_text("".join(dumps(r) + "\n" for r in records))
        return file_digests(path)

    base = digests([record("c1", "hi")])
    assert compare_digests(base, digests([record("c1", "hi")])) == []
    assert compare_digests(base, digests([record("c1", "hi", result="err")])) == [
        "execution results, outcomes or conversation differ in case(s) c1"]
    assert compare_digests(base, digests([record("c1", "hi", {"backend": "x"})])) == [
        "the recorded model identity differs"]
    many = digests([record(f"c{i}", "x") for i in range(MAX_CASES + 1)])
    assert "cases" not in many and many["records"] == MAX_CASES + 1


def test_trajectories_record_no_machine_facts_but_the_store_key_keeps_them():
    identity = {**IDENTITY, "cpu_capability": "AVX2", "cpu_vendor": "AuthenticAMD",
                "versions": {"torch": "2.13.0"}}
    assert set(MACHINE_FACTS) <= identity.keys()
    assert recorded_identity(identity) == IDENTITY
    request = make_request("hi")
    key = request_key(identity, request.messages, [], {}).key
    for fact, other in (("cpu_capability", "AVX512"), ("cpu_vendor", "GenuineIntel")):
        assert key != request_key({**identity, fact: other}, request.messages, [], {}).key


def test_a_stage_whose_code_changed_says_which_file(tmp_path):
    committed = make_tree(tmp_path / "a", [record("c1", "hi")])
    built = make_tree(tmp_path / "b", [record("c1", "hi")], actions="b")
    for root, digest in ((committed, "1" * 32), (built, "2" * 32)):
        lock = yaml.safe_load((root / "dvc.lock").read_text())
        lock["stages"]["evaluate"]["deps"].append({"path": "src/toolcalib/x.py", "md5": digest})
        (root / "dvc.lock").write_text(yaml.safe_dump(lock))
    derived = next(d for d in compare(committed, built).differing if d["path"] == ACTIONS)
    assert derived["why"] == ["the code it runs differs from the lock's: src/toolcalib/x.py"]


def test_stale_lock_stages_and_unbuilt_outputs_fail(tmp_path):
    committed = make_tree(tmp_path / "a", [record("c1", "hi")])
    built = make_tree(tmp_path / "b", [record("c1", "hi")])
    for root in (committed, built):  # the dvc.yaml lost a stage its dvc.lock still records
        (root / "dvc.yaml").write_text(yaml.safe_dump({"stages": {"generate": {"cmd": "gen"},
                                                                  "manifest": {"cmd": "man"}}}))
    (built / ACTIONS).unlink()
    result = compare(committed, built)
    assert result.stale == ["evaluate"] and result.missing == [ACTIONS]
    text = render(result)
    assert "STALE   evaluate" in text and "reproduce: FAILED: 2 of 3" in text


def test_a_stage_that_wrote_other_bytes_names_the_packages_that_differ(tmp_path):
    committed = make_tree(tmp_path / "a", [record("c1", "hi")])
    built = make_tree(tmp_path / "b", [record("c1", "hi")])
    (built / "results/model.bin").write_text("other")
    for root, text in ((committed, "one"), (built, "other")):
        (root / "results/model.bin").write_text(text)
        lock = yaml.safe_load((root / "dvc.lock").read_text())
        lock["stages"]["model"] = {"cmd": "m", "deps": [], "outs": [
            {"path": "results/model.bin", "md5": md5(root / "results/model.bin")}]}
        (root / "dvc.lock").write_text(yaml.safe_dump(lock))
        (root / "dvc.yaml").write_text(yaml.safe_dump({"stages": {
            name: {"cmd": "x"} for name in lock["stages"]}}))
    manifest = json.loads((built / "results/manifest.json").read_text())
    manifest["packages"]["transformers"] = "99.0.0"
    manifest["packages"]["toolcalib"] = "9.9.9"  # the project itself is the code, not a package
    (built / "results/manifest.json").write_text(json.dumps(manifest))
    result = compare(committed, built)
    recorded = json.loads((committed / "results/manifest.json").read_text())["packages"]
    assert result.packages == [f"transformers {recorded['transformers']} -> 99.0.0"]
    model = next(d for d in result.differing if d["path"] == "results/model.bin")
    assert model["why"][0].endswith("(the packages above differ)")
    assert f"constraints.txt pins the lock's): transformers {recorded['transformers']}" \
        in render(result)


def test_the_build_rebuilds_committed_outputs_newer_than_their_inputs(tmp_path):
    """A committed output that a checkout writes after its input (here: later in path order)
    looks up to date to Snakemake; the build still rebuilds it, so a stale committed table
    cannot pass as reproduced."""
    repo = tmp_path / "repo"
    (repo / "src/toolcalib").mkdir(parents=True)
    (repo / "src/toolcalib/__init__.py").write_text("")
    (repo / "a_input.txt").write_text("new\n")
    (repo / "z_output.txt").write_text("stale\n")  # committed, derived from a_input.txt
    (repo / "Snakefile").write_text(
        'rule all:\n    input: "z_output.txt"\n\n'
        'rule derive:\n    input: "a_input.txt"\n    output: "z_output.txt"\n'
        '    shell: "cp {input} {output}"\n')
    for args in (["git", "init", "-q"], ["dvc", "init", "-q"], ["git", "add", "-A"],
                 ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c"]):
        subprocess.run(args, cwd=repo, check=True)
    (tmp_path / "work").mkdir()
    clone = build(repo, tmp_path / "work", cores=1)
    assert (clone / "z_output.txt").read_text() == "new\n"
