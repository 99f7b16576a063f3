"""The environment is the one the committed dvc.lock was built with: every package
constraints.txt pins has that version where it is installed (a fresh clone installs with
`pip install -c constraints.txt`; a newer transformers, for one, changes the model stage's
bytes)."""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def pins() -> dict[str, str]:
    found: dict[str, str] = {}
    for line in (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.partition("==")
            assert version, f"constraints.txt: {line!r} is not an exact pin"
            found[name] = version
    return found


def test_every_installed_package_has_its_pinned_version() -> None:
    wrong = []
    for name, version in pins().items():
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
        if installed.split("+")[0] != version:
            wrong.append(f"{name} {installed} (pinned {version})")
    assert not wrong, ("reinstall with `pip install -c constraints.txt -e .[dev]`: "
                       + ", ".join(wrong))


def test_the_lock_shaping_packages_are_pinned() -> None:
    from toolcalib.provenance.manifest import PACKAGES

    pinned = {name.lower().replace("-", "_") for name in pins()}
    unpinned = [name for name in PACKAGES
                if name != "toolcalib" and name.lower().replace("-", "_") not in pinned
                and _installed(name)]
    assert not unpinned


def _installed(name: str) -> bool:
    try:
        metadata.version(name)
    except metadata.PackageNotFoundError:
        return False
    return True
