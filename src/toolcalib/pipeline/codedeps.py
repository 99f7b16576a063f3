"""Which package source files a stage's command runs: the workflow declares them as inputs, so
editing a module reruns exactly the jobs whose code changed (in Snakemake and in DVC)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = "toolcalib"
ALWAYS = ("__init__.py", "cli.py", "stages/__init__.py")
"""The CLI entry every stage runs through; the CLI imports only the stage module it runs."""


def _module_file(src: Path, module: str) -> Path | None:
    parts = module.split(".")
    if parts[0] != PACKAGE:
        return None
    base = src.joinpath(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


DATA_FILES = "DATA_FILES"
"""A module-level tuple of this name (string literals, paths relative to the package folder)
names package data a module reads: it joins the closure with the module."""


def _imports(path: Path) -> set[str]:
    """Module-level imports only: imports inside functions are lazy by design (a registry
    imports the one backend asked for), so registries list their modules as roots. Data files
    a module declares (`DATA_FILES`) come back as `/<path>`."""
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8"), str(path)).body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == DATA_FILES for t in node.targets):
            names.update("/" + element.value for element in getattr(node.value, "elts", ())
                         if isinstance(element, ast.Constant) and isinstance(element.value, str))
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def closure(src: str | Path, roots: list[str]) -> list[str]:
    """Sorted source files (relative to `src`'s parent) reachable by imports from `roots`
    (paths relative to the package folder, e.g. 'generate.py'), plus the CLI entry files."""
    src = Path(src)
    package = src / PACKAGE
    todo = [package / root for root in (*ALWAYS, *roots)]
    seen: set[Path] = set()
    while todo:
        path = todo.pop()
        if path in seen or not path.is_file():
            continue
        seen.add(path)
        if path.suffix != ".py":
            continue
        parent = path.parent / "__init__.py"
        if parent.is_file() and path != parent:
            todo.append(parent)
        for module in _imports(path):
            found = package / module[1:] if module.startswith("/") else _module_file(src, module)
            if found is not None:
                todo.append(found)
    return sorted(str(p.relative_to(src.parent)) for p in seen)
