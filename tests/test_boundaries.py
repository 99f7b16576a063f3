"""Benchmark plugins stay plugins: no module outside `toolcalib/benchmarks/<name>/` imports a
benchmark's package (only the registry, `toolcalib.benchmarks`, which loads plugins lazily),
and no benchmark's package imports another's. Read with `ast`, imports inside functions
included, so a lazy import cannot slip a benchmark into the core. Nor does any module outside a
benchmark's package know that benchmark's file layout (`LAYOUTS`). Provenance reads what the
other packages write and none of them imports it; the classifiers import no package but
`backends` (`CLASSIFY_READS`); the workflow's tooling (`pipeline`) is imported by the CLI and
the workflow alone, and reads only the core and the registries (docs/architecture.md). A
benchmark's package is a leaf: it imports only the core (`PLUGIN_CORE`, `PLUGIN_PACKAGES`),
and the core it imports reaches no benchmark; nor does anything it imports reach, at any
depth, a classifier, the metrics, a stage, the report, provenance, the workflow's tooling or a
driver (`PLUGIN_NEVER_REACHES`): a classifier it reads with and the replay driver are handed
in, a loop of scripted turns is stated as facts (`Scripted`). The import graph of the whole
package (`_graph`) has no cycle."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from toolcalib.benchmarks import PLUGINS

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "toolcalib"
BENCHMARKS = PACKAGE / "benchmarks"
NAMES = sorted({PLUGINS.module(name).split(".")[2] for name in PLUGINS})
LAYOUTS = {"bfcl": ("BFCL_v4", "_result.json")}
"""Benchmark -> strings of its results files' layout (BFCL's version prefix, result names)."""
NO_PROVENANCE = ("backends", "benchmarks", "classify", "execute", "metrics", "pipeline", "report")
"""Packages that never import `toolcalib.provenance`."""
PROVENANCE_READS = ("metrics", "provenance")
"""The packages `toolcalib.provenance` may import, besides the root modules."""
CLASSIFY_READS = ("backends", "classify")
"""The packages `toolcalib.classify` may import, besides the root modules (the judge's model;
never the metrics, whose tables the stages make of its scores)."""
PLUGIN_CORE = ("records", "jsonio", "registry", "config", "verdicts", "variants", "steploop",
               "writes")
"""The root modules a benchmark's package may import: the records it states its facts in
(`records`, `verdicts`, `writes`), reading and naming (`jsonio`, `registry`), its config
section (`config`), the variants its loop applies (`variants`) and the step loop
(`steploop`)."""
PLUGIN_PACKAGES = ("backends", "execute")
"""The packages a benchmark's package may import (besides the registry, `toolcalib.benchmarks`,
and its own): the backend protocol and replay options, and how calls are read from text."""
PLUGIN_NEVER_REACHES = ("classify", "metrics", "stages", "report", "provenance", "pipeline",
                        "generate", "probes", "evaluate")
"""The packages and root modules nothing a benchmark's package imports reaches, at any depth:
the stages hand in what of them a plugin uses (`records.ReadAlone`, `Replay`)."""
PIPELINE_USERS = ("toolcalib.cli", "toolcalib.pipeline")
"""The modules (and packages) that may import `toolcalib.pipeline`: the CLI and itself."""
PIPELINE_REGISTRIES = ("toolcalib.backends", "toolcalib.benchmarks")
"""The registries `toolcalib.pipeline` may read (the packages' `__init__`, not their modules),
besides the root modules."""


def _module(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Every module `path` imports, at any depth (relative imports resolved), and every
    module named as a literal to `importlib.import_module`."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = _module(path).split(".")
                if path.name != "__init__.py":
                    package = package[:-1]
                base = ".".join([*package[:len(package) - node.level + 1], *filter(None, [base])])
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr == "import_module" and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            names.add(node.args[0].value)
    return names


def _benchmark_of(module: str) -> str | None:
    """The benchmark package a module name lies in (None: the core or the registry)."""
    parts = module.split(".")
    if parts[:2] == ["toolcalib", "benchmarks"] and len(parts) > 2 and parts[2] in NAMES:
        return parts[2]
    return None


def _package_of(module: str) -> str | None:
    """The package of `toolcalib` a module name lies in (None: a root module)."""
    parts = module.split(".")
    if parts[0] != "toolcalib" or len(parts) < 2 or not (PACKAGE / parts[1]).is_dir():
        return None
    return parts[1]


def _sources() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


MODULES = {_module(path): path for path in _sources()}


def _resolved(path: Path) -> set[str]:
    """The package's modules `path` imports (`_imports`): `from X import a` names the module
    `X.a` where there is one, else `X` (a package's `__init__` is the module `X`); `import
    X.Y.z` the longest module of its prefixes. A package's `__init__` runs before its
    submodules whoever imports them, so no edge goes to the ancestors of the module named."""
    found = set()
    for name in _imports(path):
        parts = name.split(".")
        while parts and ".".join(parts) not in MODULES:
            parts.pop()
        if parts:
            found.add(".".join(parts))
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module is not None:
            names = {f"{node.module}.{alias.name}" for alias in node.names}
            if names and names <= MODULES.keys():  # `from package import submodule`
                found.discard(node.module)
    return found - {_module(path)}


def _graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports (`_resolved`)."""
    return {module: _resolved(path) for module, path in MODULES.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's, iterative), each
    sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        while work:
            node, targets = work[-1]
            target = next(targets, None)
            if target is not None:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    work.append((target, iter(sorted(graph.get(target, ())))))
                elif target in stack:
                    low[node] = min(low[node], index[target])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while (member := stack.pop()) != node:
                    component.append(member)
                component.append(node)
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _reached(graph: dict[str, set[str]], roots: list[str]) -> set[str]:
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo.extend(graph[module])
    return seen


def test_every_benchmark_is_a_package():
    for name in NAMES:
        assert (BENCHMARKS / name / "__init__.py").is_file(), name
    assert not [p.name for p in BENCHMARKS.glob("*.py") if p.name != "__init__.py"]


@pytest.mark.parametrize("path", [p for p in _sources() if _benchmark_of(_module(p)) is None],
                         ids=lambda p: str(p.relative_to(PACKAGE)))
def test_generic_modules_import_no_benchmark(path):
    found = sorted(name for name in _imports(path) if _benchmark_of(name))
    assert not found, f"{path.relative_to(SRC)} imports {found}; use the registry"


@pytest.mark.parametrize("name", NAMES)
def test_benchmarks_do_not_import_each_other(name):
    for path in sorted((BENCHMARKS / name).rglob("*.py")):
        others = sorted(module for module in _imports(path)
                        if _benchmark_of(module) not in (None, name))
        assert not others, f"{path.relative_to(SRC)} imports {others}"


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_only_a_benchmarks_package_knows_its_file_layout(name):
    assert (BENCHMARKS / name).is_dir()
    for path in _sources():
        if _benchmark_of(_module(path)) == name:
            continue
        text = path.read_text(encoding="utf-8")
        found = [string for string in LAYOUTS[name] if string in text]
        assert not found, f"{path.relative_to(SRC)} holds {name}'s file layout: {found}"


def test_the_walk_sees_imports_at_any_depth(tmp_path):
    source = tmp_path / "probe.py"
    source.write_text("def f():\n    from toolcalib.benchmarks.bfcl.normalize import CATEGORIES\n"
                      "    import importlib\n"
                      "    importlib.import_module('toolcalib.benchmarks.tau2.plugin')\n")
    assert {_benchmark_of(m) for m in _imports(source)} >= {"bfcl", "tau2"}


@pytest.mark.parametrize("package", NO_PROVENANCE)
def test_no_package_imports_provenance(package):
    for path in sorted((PACKAGE / package).rglob("*.py")):
        found = sorted(m for m in _imports(path) if _package_of(m) == "provenance")
        assert not found, f"{path.relative_to(SRC)} imports {found}"


def test_provenance_imports_only_the_root_modules_and_metrics():
    for path in sorted((PACKAGE / "provenance").rglob("*.py")):
        found = sorted(m for m in _imports(path)
                       if _package_of(m) not in (None, *PROVENANCE_READS))
        assert not found, f"{path.relative_to(SRC)} imports {found}"


def test_classify_imports_only_the_root_modules_and_backends():
    for path in sorted((PACKAGE / "classify").rglob("*.py")):
        found = sorted(m for m in _imports(path) if _package_of(m) not in (None, *CLASSIFY_READS))
        assert not found, f"{path.relative_to(SRC)} imports {found}"


@pytest.mark.parametrize("path", sorted((PACKAGE / "backends").rglob("*.py")),
                         ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_backend_imports_the_benchmarks(path):
    """A benchmark's own policies reach the policy backend from the generate stage."""
    found = sorted(name for name in _imports(path) if _package_of(name) == "benchmarks")
    assert not found, f"{path.relative_to(SRC)} imports {found}"


@pytest.mark.parametrize("path", [p for p in _sources() if _benchmark_of(_module(p))],
                         ids=lambda p: str(p.relative_to(PACKAGE)))
def test_a_benchmark_imports_only_the_core(path):
    """A plugin states facts (cases, gold, environment, scores, write calls); who classifies
    them, makes rows of them or runs the stages is not its business."""
    own = _benchmark_of(_module(path))
    found = sorted(module for module in _resolved(path)
                   if _benchmark_of(module) != own and module != "toolcalib.benchmarks"
                   and module.split(".")[1] not in (*PLUGIN_CORE, *PLUGIN_PACKAGES))
    assert not found, f"{path.relative_to(SRC)} imports {found}"


def test_the_core_a_benchmark_imports_reaches_no_benchmark():
    graph = _graph()
    roots = [module for module in graph if module.split(".")[1:2] and
             module.split(".")[1] in (*PLUGIN_CORE, *PLUGIN_PACKAGES)]
    found = sorted(m for m in _reached(graph, roots) if _package_of(m) == "benchmarks"
                   or m == "toolcalib.benchmarks")
    assert not found, f"the core a benchmark imports reaches {found}"


def _chain(graph: dict[str, set[str]], roots: list[str], wanted: str) -> list[str]:
    """The shortest import chain from one of `roots` to `wanted` (breadth first)."""
    came_from: dict[str, str | None] = dict.fromkeys(roots)
    todo = list(roots)
    while todo:
        module = todo.pop(0)
        if module == wanted:
            chain = [module]
            while (parent := came_from[chain[-1]]) is not None:
                chain.append(parent)
            return chain[::-1]
        for target in sorted(graph[module]):
            if target not in came_from:
                came_from[target] = module
                todo.append(target)
    return []


@pytest.mark.parametrize("name", NAMES)
def test_a_benchmark_never_reaches_a_classifier_a_stage_or_a_driver(name):
    """Lazy and type-only imports included: what a plugin imports lazily runs all the same."""
    graph = _graph()
    roots = sorted(module for module in graph if _benchmark_of(module) == name)
    found = sorted(m for m in _reached(graph, roots)
                   if m.split(".")[1:2] and m.split(".")[1] in PLUGIN_NEVER_REACHES)
    assert not found, f"benchmark {name} reaches {found}: " + "; ".join(
        " -> ".join(_chain(graph, roots, m)) for m in found)


def test_the_chain_names_each_import_on_the_way():
    graph = {"p.a": {"core.x"}, "p.b": set(), "core.x": {"core.y"}, "core.y": set()}
    assert _chain(graph, ["p.a", "p.b"], "core.y") == ["p.a", "core.x", "core.y"]


def test_the_import_graph_has_no_cycle():
    cycles = _cycles(_graph())
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_the_cycle_finder_finds_cycles():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e", "d"}}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _cycles({"x": {"y"}, "y": {"x"}}) == [["x", "y"]]


@pytest.mark.parametrize("path", [p for p in _sources()
                                  if not _module(p).startswith(PIPELINE_USERS)],
                         ids=lambda p: str(p.relative_to(PACKAGE)))
def test_only_the_cli_imports_the_pipeline(path):
    found = sorted(m for m in _imports(path) if _package_of(m) == "pipeline")
    assert not found, f"{path.relative_to(SRC)} imports {found}"


def _reads_a_registry(module: str) -> bool:
    """`module` is a registry package or a name in it (not one of its modules)."""
    base, _, name = module.rpartition(".")
    return module in PIPELINE_REGISTRIES or (
        base in PIPELINE_REGISTRIES and _package_of(module) is not None
        and not (PACKAGE / base.split(".")[1] / name).is_dir()
        and not (PACKAGE / base.split(".")[1] / f"{name}.py").is_file())


def test_pipeline_imports_only_the_root_modules_and_the_registries():
    for path in sorted((PACKAGE / "pipeline").rglob("*.py")):
        found = sorted(m for m in _imports(path)
                       if _package_of(m) not in (None, "pipeline") and not _reads_a_registry(m))
        assert not found, f"{path.relative_to(SRC)} imports {found}"
