"""What a program does, as far as the project's own code proves it: the facts ``rocmport
setup`` needs to put only settings that change something, and to put them where they take
effect.

A program is an entry point and the project modules it imports, at any depth and in any
scope (an import inside ``main()`` runs too). Read with CPython's ``ast``, never imported.

- ``compiles``: some module of the program calls ``torch.compile`` (any spelling the text
  shows: ``torch.compile``, ``torch.compiler.compile``, ``torch._dynamo.optimize``,
  ``model.compile(mode=...)``, ``from torch import compile``);
- ``autotunes``: some module names max-autotune (``"max-autotune"``, ``max_autotune``,
  ``TORCHINDUCTOR_MAX_AUTOTUNE``): only then do the GEMM backends matter;
- ``captures``: some module captures CUDA graphs by hand (``torch.cuda.graph``,
  ``CUDAGraph``, ``make_graphed_callables``);
- ``early_inductor``: the statements that import ``torch._inductor.config`` (directly, or by
  importing ``torch._dynamo`` / ``torch._inductor`` or calling ``torch.compile``, which import
  it) while the entry point's imports run, in the entry point or in a project module those
  imports load: an environment default set after them is read by nobody.
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Set, Tuple

from rocmport.analysis.bindings import dotted as _dotted
from rocmport.analysis.bindings import top_level
from rocmport.analysis.index import ProjectIndex
from rocmport.source import read_regular

MAX_MODULES = 3000

_COMPILES = re.compile(rb"torch\.compile\b|torch\.compiler\.compile\b|_dynamo\.optimize\(|from torch import[^\n]*\bcompile\b"
                       rb"|\.compile\([^()]*\b(?:mode|fullgraph|backend|dynamic|options)\s*=")
_AUTOTUNES = re.compile(rb"max-autotune|max_autotune|MAX_AUTOTUNE")
_CAPTURES = re.compile(rb"cuda\.graph\(|CUDAGraph\(|make_graphed_callables")
# what imports torch._inductor.config when it runs (torch-facts: `import torch` alone does not)
_INDUCTOR_MODULES = ("torch._inductor", "torch._dynamo")
_COMPILE_CALLS = {"torch.compile", "torch.compiler.compile", "torch._dynamo.optimize"}


@dataclass
class Program:
    entry: str
    modules: List[str] = field(default_factory=list)  # files: the entry first
    compiles: bool = False
    autotunes: bool = False
    captures: bool = False
    early_inductor: List[str] = field(default_factory=list)  # "path:line: what"


def _parse(path: str) -> Optional[ast.Module]:
    try:
        data = read_regular(path)
        return ast.parse(data, path)
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _imported_names(index: ProjectIndex, name: Optional[str], stmts: Iterable[ast.AST]) -> List[str]:
    """The dotted names an import statement among ``stmts`` names (relative ones made absolute
    from module ``name``), each with the ``from`` module's members."""
    out = []
    for node in stmts:
        if isinstance(node, ast.Import):
            out += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = index.absolute(name, node.module, node.level) if node.level and name else node.module
            if base:
                out += [base] + [f"{base}.{alias.name}" for alias in node.names]
    return out


def _project_modules(index: ProjectIndex, dotted: Iterable[str]) -> List[str]:
    found = []
    for target in dotted:
        parts = target.split(".")
        for i in range(1, len(parts) + 1):
            module = ".".join(parts[:i])
            if index.path_of(module) is not None and module not in found:
                found.append(module)
    return found


def _import_time(tree: ast.Module) -> List[ast.AST]:
    """The nodes that run when the module is imported: module-level statements (and the
    blocks of if/try/with), class bodies, decorators and default values; no function body."""
    out: List[ast.AST] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            for deco in getattr(node, "decorator_list", ()):
                out.extend(ast.walk(deco))
            args = node.args
            for default in list(args.defaults) + [d for d in args.kw_defaults if d is not None]:
                out.extend(ast.walk(default))
            return
        out.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)

    for stmt in tree.body:
        visit(stmt)
    return out


def _inductor_at_import(nodes: Iterable[ast.AST], torch_names: Set[str]) -> List[Tuple[int, str]]:
    """(line, what) of the nodes that import torch._inductor.config when they run."""
    found = []
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(_INDUCTOR_MODULES):
                    found.append((node.lineno, f"import {alias.name}"))
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            if node.module.startswith(_INDUCTOR_MODULES) or (
                    node.module == "torch" and any(a.name in ("_dynamo", "_inductor", "compile") for a in node.names)):
                found.append((node.lineno, f"from {node.module} import ..."))
        elif isinstance(node, ast.Call):
            name = _dotted(node.func)
            if name:
                root, _, rest = name.partition(".")
                spelled = "torch." + rest if root in torch_names and rest else name
                if spelled in _COMPILE_CALLS:
                    found.append((node.lineno, f"{name}(...)"))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            pass
    return found


def _torch_names(tree: ast.Module) -> Set[str]:
    names = {"torch"}
    for stmt in top_level(tree.body):
        if isinstance(stmt, ast.Import):
            names |= {alias.asname for alias in stmt.names if alias.name == "torch" and alias.asname}
    return names


def analyse(entry: str, files: Iterable[str], before_line: Optional[int] = None,
            entry_text: Optional[str] = None) -> Program:
    """The program that starts at ``entry`` among the project's ``files``. ``before_line``: the
    entry's statements from that line on run after the set-up (they are not checked for an
    early import of the inductor config). ``entry_text``: the entry's text, when it is not
    the file's (a fix in progress)."""
    entry = os.path.abspath(entry)
    files = [os.path.abspath(f) for f in files if f.endswith(".py")]
    if entry not in files:
        files.append(entry)
    index = ProjectIndex(files)
    program = Program(entry)
    entry_name = index.module_name(entry)
    seen: Dict[str, None] = {entry: None}
    queue = [(entry, entry_name)]
    trees: Dict[str, ast.Module] = {}
    while queue and len(seen) <= MAX_MODULES:
        path, name = queue.pop(0)
        if path == entry and entry_text is not None:
            blob = entry_text.encode("utf-8", "surrogateescape")
            try:
                tree = ast.parse(entry_text, path)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                tree = None
        else:
            tree = _parse(path)
            try:
                blob = read_regular(path)
            except OSError:
                blob = b""
        if tree is None:
            continue
        trees[path] = tree
        program.compiles = program.compiles or _COMPILES.search(blob) is not None
        program.autotunes = program.autotunes or _AUTOTUNES.search(blob) is not None
        program.captures = program.captures or _CAPTURES.search(blob) is not None
        for module in _project_modules(index, _imported_names(index, name, ast.walk(tree))):
            target = index.path_of(module)
            if target is not None and target not in seen:
                seen[target] = None
                queue.append((target, module))
    program.modules = list(seen)
    program.early_inductor = _early_inductor(index, entry, entry_name, trees, before_line)
    return program


def _early_inductor(index: ProjectIndex, entry: str, entry_name: Optional[str], trees: Dict[str, ast.Module],
                    before_line: Optional[int]) -> List[str]:
    """Statements that import torch._inductor.config while the entry's imports (those above
    ``before_line``) run: in the entry, or at import time in a project module they load."""
    tree = trees.get(entry) or _parse(entry)
    if tree is None:
        return []
    head = [stmt for stmt in tree.body if before_line is None or stmt.lineno < before_line]
    nodes = [n for stmt in head for n in _import_time(ast.Module(body=[stmt], type_ignores=[]))]
    found = [f"{os.path.relpath(entry)}:{line}: {what}" for line, what in _inductor_at_import(nodes, _torch_names(tree))]
    pending = _project_modules(index, _imported_names(index, entry_name, [n for n in nodes
                                                                          if isinstance(n, (ast.Import, ast.ImportFrom))]))
    seen: Set[str] = set()
    while pending and len(seen) < MAX_MODULES:
        module = pending.pop(0)
        if module in seen:
            continue
        seen.add(module)
        path = index.path_of(module)
        module_tree = trees.get(path) if path else None
        if module_tree is None and path is not None:
            module_tree = _parse(path)
        if module_tree is None:
            continue
        nodes = _import_time(module_tree)
        found += [f"{os.path.relpath(path)}:{line}: {what}"
                  for line, what in _inductor_at_import(nodes, _torch_names(module_tree))]
        pending += [m for m in _project_modules(index, _imported_names(
            index, module, [n for n in nodes if isinstance(n, (ast.Import, ast.ImportFrom))])) if m not in seen]
    return found
