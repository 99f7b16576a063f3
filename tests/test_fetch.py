"""Pinned downloads: the real package manager, a verified hash, nothing left on failure."""

from __future__ import annotations

import pytest

from toolcalib.cli import main
from toolcalib.fetch import FetchError, fetch_package

from .conftest import BFCL_FILE, BFCL_REQUIREMENT, BFCL_SHA256


def test_fetch_verifies_and_keeps_the_release(tmp_path):
    out = tmp_path / "raw" / BFCL_FILE
    assert fetch_package(BFCL_REQUIREMENT, BFCL_SHA256, out) == out
    assert out.is_file() and sorted(p.name for p in out.parent.iterdir()) == [BFCL_FILE]


def test_hash_mismatch_stops_and_leaves_no_file(tmp_path, capsys):
    out = tmp_path / BFCL_FILE
    code = main(["fetch", "--requirement", BFCL_REQUIREMENT, "--sha256", "0" * 64,
                 "--out", str(out)])
    assert code == 2
    assert "sha256 mismatch for bfcl-eval==2026.3.23" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_failed_fetch_is_a_clear_error(tmp_path):
    with pytest.raises(FetchError, match="could not fetch bfcl-eval==0.0.0.0.1"):
        fetch_package("bfcl-eval==0.0.0.0.1", BFCL_SHA256, tmp_path / "x.whl")
    assert list(tmp_path.iterdir()) == []


def test_unpinned_requirement_is_refused(tmp_path):
    with pytest.raises(FetchError, match="not pinned"):
        fetch_package("bfcl-eval", BFCL_SHA256, tmp_path / "x.whl")
