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
                    "rocmport.rocm_facts", "rocmport.signals")),
    # the rule base and shared analyses: names, scopes, regions, Triton kernels, the prefilter
    ("analyses", ("rocmport.codemods", "rocmport.codemods.base", "rocmport.codemods.tool", "rocmport.codemods._*")),
    # one module per rule family
    ("rules", ("rocmport.codemods.*",)),
    # configuration, the registry, discovery, the engine (one Python text in, findings and
    # fixed text out) and its cache
    ("engine", ("rocmport.config", "rocmport.registry", "rocmport.discovery", "rocmport.engine",
                "rocmport.cache", "rocmport.house", "rocmport.placement", "rocmport.reformat",
                "rocmport._rule_index")),
    # input adapters: one file in by its kind (notebooks, other file kinds, Python), and the
    # worker pool that checks many
    ("inputs", ("rocmport.inputs", "rocmport.notebook", "rocmport.runner")),
    # command line, output formats, rule docs, doctor, flake8, LibCST commands, language server
    ("faces", ("rocmport.cli", "rocmport.__main__", "rocmport.output", "rocmport.docs",
               "rocmport.doctor", "rocmport.flake8_plugin", "rocmport.libcst_commands",
               "rocmport.server", "rocmport.lsp", "rocmport.patch", "rocmport.entrypoints",
               "rocmport.noqa")),
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
