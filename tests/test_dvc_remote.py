"""The project's S3 remote (`.dvc/config`) against a real S3 API on loopback (moto): the tiny
build pushed from one clone, pulled into a fresh clone with an empty cache, where every cell
audits without a stage rerun; the credentials stay in the environment."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from urllib.parse import urlparse

import polars as pl
import pytest

from tests.support.s3_server import S3Server
from tests.support.workflow_build import ROOT, clone, sh

REMOTE = "s3"


def remote_bucket() -> str:
    """The bucket of the project's documented S3 remote."""
    done = subprocess.run(["dvc", "remote", "list"], cwd=ROOT, capture_output=True, text=True,
                          check=True)
    urls = dict(line.split()[:2] for line in done.stdout.splitlines())
    return urlparse(urls[REMOTE]).netloc


def use_remote(project: Path, server: S3Server) -> None:
    """The project's remotes, this machine's endpoint (`--local`: outside git)."""
    sh("dvc", "remote", "modify", "--local", REMOTE, "endpointurl", server.url, cwd=project)


@pytest.mark.slow
def test_push_then_pull_into_a_fresh_clone_audits_every_cell(tiny_build: Path,
                                                            tmp_path: Path) -> None:
    publisher = clone(tiny_build, tmp_path / "publisher")
    shutil.copy(ROOT / ".dvc" / "config", publisher / ".dvc" / "config")
    sh("git", "add", "-A", cwd=publisher)  # dvc.yaml, dvc.lock and the tables kept in git
    sh("git", "commit", "-qm", "tiny build recorded", cwd=publisher)
    auditor = tmp_path / "auditor"
    with S3Server(tmp_path / "moto.log") as server:
        server.create_bucket(remote_bucket())
        env = server.env()
        use_remote(publisher, server)
        sh("dvc", "push", "-r", REMOTE, cwd=publisher, env=env)

        sh("git", "clone", "-q", str(publisher), str(auditor), cwd=tmp_path)
        assert not (auditor / ".dvc" / "cache").exists()
        use_remote(auditor, server)
        sh("dvc", "pull", "-r", REMOTE, cwd=auditor, env=env)

    status = sh("dvc", "status", "--json", cwd=auditor)
    assert json.loads(status.stdout) == {}, status.stdout  # every stage up to date
    lock = (auditor / "dvc.lock").read_text()
    outs = [line.split("path: ")[1] for line in lock.splitlines() if "- path: results/" in line]
    assert all((auditor / path).exists() for path in outs)

    triples = pl.read_csv(auditor / "results/metrics/triples.csv", infer_schema_length=0)
    cells = triples.select("model", "variant", "benchmark", "category").unique().rows()
    assert len(cells) == 12
    for cell in cells:
        audit = subprocess.run(["toolcalib", "audit", *cell, "gar", "--json"], cwd=auditor,
                               capture_output=True, text=True)
        assert audit.returncode == 0, (cell, audit.stdout[-2000:], audit.stderr[-2000:])
        assert json.loads(audit.stdout)["ok"]
    # nothing ran: no job log, no response store
    assert not (auditor / "results/logs").exists() and not (auditor / ".toolcalib").exists()

    secrets = [server.credentials["AWS_ACCESS_KEY_ID"],
               server.credentials["AWS_SECRET_ACCESS_KEY"]]
    for root in (publisher, auditor):
        for path in root.rglob("*"):
            if path.is_file() and ".git" not in path.relative_to(root).parts:
                data = path.read_bytes()
                assert not any(s.encode() in data for s in secrets), path
