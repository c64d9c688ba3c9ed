"""The import graph points one way.

The graph is built from the sources with ``ast``: every ``import`` and ``from ... import``
counts, at module level or inside a function (a lazy import still ties the two modules
together); only imports under ``if TYPE_CHECKING:`` do not. The test fails on any cycle and on
any arrow from a lower layer to a higher one. A new module must be given a layer here.
"""

from __future__ import annotations

import ast
import fnmatch
from pathlib import Path
from typing import Dict, Iterator, List, Set, Tuple

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("rocmport",)

# Lowest first. A module may import modules of its own layer or of a lower one. The first
# pattern that matches a module's dotted name gives its layer.
LAYERS: List[Tuple[str, Tuple[str, ...]]] = [
    # findings, source text, edits, the prelude's text, file kinds, suppression comments
    ("vocabulary", ("rocmport", "rocmport.findings", "rocmport.source", "rocmport.writer",
                    "rocmport.prelude", "rocmport.filekinds", "rocmport.suppression", "rocmport.reports",
                    "rocmport.rocm_facts", "rocmport.signals", "rocmport.process")),
    # shared analyses: names, scopes, positions, regions, Triton kernels, the prefilter, the index
    ("analyses", ("rocmport.analysis", "rocmport.analysis.*")),
    # what every rule is built on: Rule, RuleContext, Case
    ("rule base", ("rocmport.rules", "rocmport.rules.base")),
    # one package per family, one module per rule (and the family's common module)
    ("rules", ("rocmport.rules.*",)),
    # configuration, the registry, discovery, the engine (one Python text in, findings and
    # fixed text out) and its cache
    ("engine", ("rocmport.config", "rocmport.registry", "rocmport.discovery", "rocmport.engine",
                "rocmport.file_analysis", "rocmport.parsing", "rocmport.gating", "rocmport.linting", "rocmport.fixing",
                "rocmport.cache", "rocmport.house", "rocmport.placement", "rocmport.reuse", "rocmport.reformat",
                "rocmport._rule_index", "rocmport.reasons", "rocmport.program", "rocmport.package_gate")),
    # input adapters: one file in by its kind (notebooks, other file kinds, Python), and the
    # worker pool that checks many
    ("inputs", ("rocmport.inputs", "rocmport.notebook", "rocmport.runner")),
    # command line, output formats, rule docs, doctor, flake8, LibCST commands, language server
    ("faces", ("rocmport.cli", "rocmport.__main__", "rocmport.output", "rocmport.docs",
               "rocmport.doctor", "rocmport.flake8_plugin", "rocmport.libcst_commands",
               "rocmport.server", "rocmport.lsp", "rocmport.patch", "rocmport.entrypoints",
               "rocmport.noqa", "rocmport.progress", "rocmport.prbody")),
]

# Arrows that are known to point up, each with the reason and what removes it. The test
# fails when one of them is gone, so that the entry goes too.
KNOWN_UPWARD: Dict[Tuple[str, str], str] = {}


def module_files() -> Dict[str, Path]:
    modules = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST) -> Iterator[ast.stmt]:
    """Every import statement, except those under ``if TYPE_CHECKING:``."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def import_graph(modules: Dict[str, Path]) -> Dict[str, Set[str]]:
    graph: Dict[str, Set[str]] = {}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        targets: Set[str] = set()
        for node in _imports(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                candidates = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    anchor = name.split(".") if is_package else name.split(".")[:-1]
                    anchor = anchor[:len(anchor) - (node.level - 1)]
                    base = ".".join(anchor + ([base] if base else []))
                candidates = [f"{base}.{alias.name}" for alias in node.names] + [base]
            for candidate in candidates:
                # the longest project module the name starts with: `a.b.c` imports `a.b` when
                # c is a name defined in a/b.py
                while candidate and candidate not in modules:
                    candidate = candidate.rpartition(".")[0]
                # importing a.b.c runs a/__init__.py and a/b/__init__.py too
                while candidate:
                    if candidate != name:
                        targets.add(candidate)
                    candidate = candidate.rpartition(".")[0]
        graph[name] = targets
    return graph


def layer_of(module: str) -> int:
    for index, (_label, patterns) in enumerate(LAYERS):
        if any(fnmatch.fnmatchcase(module, pattern) for pattern in patterns):
            return index
    raise AssertionError(f"{module} has no layer: add it to LAYERS in tests/test_layers.py")


def cycles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    found: List[List[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


GRAPH = import_graph(module_files())


def test_every_module_has_a_layer():
    for module in GRAPH:
        layer_of(module)


def test_no_arrow_points_up():
    upward = sorted(f"{a} ({LAYERS[layer_of(a)][0]}) -> {b} ({LAYERS[layer_of(b)][0]})"
                    for a, targets in GRAPH.items() for b in targets
                    if layer_of(b) > layer_of(a) and (a, b) not in KNOWN_UPWARD)
    assert not upward, "imports that point up a layer:\n" + "\n".join(upward)


def test_no_cycle():
    graph = {a: {b for b in targets if (a, b) not in KNOWN_UPWARD} for a, targets in GRAPH.items()}
    assert cycles(graph) == []


def test_known_upward_arrows_still_exist():
    gone = [f"{a} -> {b}" for a, b in KNOWN_UPWARD if b not in GRAPH.get(a, ())]
    assert not gone, "no longer imported, remove from KNOWN_UPWARD: " + ", ".join(gone)


def test_the_graph_sees_lazy_imports_and_skips_type_checking(tmp_path):
    # the checker itself, on a made-up package: a function-level import is an arrow, an
    # import under TYPE_CHECKING is not, relative imports resolve
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "low.py").write_text("def f():\n    from .high import g\n")
    (package / "high.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                     "    from pkg import other\nfrom . import low\n")
    (package / "other.py").write_text("import pkg.high\n")
    modules = {"pkg": package / "__init__.py", "pkg.low": package / "low.py",
               "pkg.high": package / "high.py", "pkg.other": package / "other.py"}
    graph = import_graph(modules)
    assert graph == {"pkg": set(), "pkg.low": {"pkg", "pkg.high"}, "pkg.high": {"pkg", "pkg.low"},
                     "pkg.other": {"pkg", "pkg.high"}}
    assert cycles(graph) == [["pkg.high", "pkg.low"]]


# ------------------------------------------------------------------------------------------
# Private names stay private
# ------------------------------------------------------------------------------------------

def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_uses(modules: Dict[str, Path]) -> List[str]:
    """Every use of another project module's private name: ``from m import _x``, and ``m._x``
    where ``m`` is bound to a project module by an import in the same file."""
    found = []
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        bound: Dict[str, str] = {}  # local name -> the project module it is bound to
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name in modules:
                        bound[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else \
                            alias.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = name.split(".") if is_package else name.split(".")[:-1]
                    anchor = anchor[:len(anchor) - (node.level - 1)]
                    base = ".".join(anchor + ([base] if base else []))
                for alias in node.names:
                    target = f"{base}.{alias.name}" if base else alias.name
                    if target in modules:
                        bound[alias.asname or alias.name] = target
                    elif base in modules and base != name and _private(alias.name):
                        found.append(f"{name}:{node.lineno}: from {base} import {alias.name}")
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and _private(node.attr) and isinstance(node.value, ast.Name) \
                    and bound.get(node.value.id, name) != name:
                found.append(f"{name}:{node.lineno}: {bound[node.value.id]}.{node.attr}")
    return sorted(found)


def test_no_module_uses_another_modules_private_name():
    found = private_uses(module_files())
    assert not found, "private names used from another module (give them a public name):\n" + "\n".join(found)


def test_the_private_name_check_sees_both_spellings(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("_x = 1\ny = 2\n")
    (package / "b.py").write_text("from .a import _x, y\nfrom pkg import a as _a\nz = _a._x + _a.y\n"
                                  "def f():\n    import pkg.a\n    return pkg.a.__name__\n")
    modules = {"pkg": package / "__init__.py", "pkg.a": package / "a.py", "pkg.b": package / "b.py"}
    assert private_uses(modules) == ["pkg.b:1: from pkg.a import _x", "pkg.b:3: pkg.a._x"]
