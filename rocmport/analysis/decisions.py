"""Where the project decides a stored value, and what reads it: facts for fixing a compile mode
once where it is decided (issue 29) instead of at every call that reads it.

A shared analysis (facts, never findings), over the project index (every linted file whose
bytes hold the name; CPython's ``ast``), with the file being linted read from its current
text. Two questions:

- ``attribute(ctx, name)``: the attribute, field or key ``name`` (``cfg.compile_mode``,
  ``cfg["compile_mode"]``, an argparse option's destination). Where its value is decided
  (``Place``): a class attribute or dataclass field (``field(default=...)`` too), an attribute
  or key assignment, a dict display, a keyword argument, ``setattr``, an argparse
  ``add_argument(..., default=...)`` whose destination it is, the default of a
  ``getattr``/``.get`` read. What reads it (``Reader``): ``x.name``, ``x["name"]``,
  ``x.get("name")``, ``getattr(x, "name")``.
- ``constant(ctx, module, name)``: a module-level constant (a literal assigned once) of a
  project module, read by name where that module is it, or imports it, and as ``mod.name``.

A reader is a "mode" when its value is handed to ``torch.compile``'s mode: ``mode=`` of a
compile call (``torch.compile``, ``nn.Module.compile``, ``functools.partial(torch.compile,
...)``), the mode of ``list_mode_options``, a parameter of a project function that the index
follows to a mode, a ``"mode"`` of a kwargs dict splatted into a compile call, or a local
name assigned it whose every read in the function is one of those. It is "shown" in an
f-string, ``print``, a logging call or ``warnings.warn``; "stored" into another name (``x.m =
cfg.compile_mode``, ``Config(compile_mode=...)``), which the caller may follow; anything else
(compared, tested, returned, passed on) is "other". Both arms of a conditional expression, and
the operands of ``or``/``and``, are read as the value.
"""

from __future__ import annotations

import ast
import hashlib
from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional, Set, Tuple

from .bindings import dotted, module_imports, resolve_name
from .platforms import ROCM, Env, classify, cuda_only_package, module_tests
from .testing import is_test_module

COMPILE = frozenset({"torch.compile", "torch.compiler.compile"})
PARTIAL = frozenset({"functools.partial"})
LIST_MODE_OPTIONS = frozenset({"torch._inductor.list_mode_options"})
_LOG_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "critical", "exception", "log",
                          "warning_once", "info_once"})
_MAX_DEPTH = 3
HARMLESS = ("mode", "shown", "truth")  # readers a ROCm form of the mode changes nothing for but the mode


@dataclass(frozen=True)
class Value:
    """What a place stores: "literal" (``value`` is it: a str, None, a bool or a number),
    "gated" (a conditional expression on the ROCm test), "constant" (``value`` is (module,
    name) of a project constant) or "unknown"."""

    kind: str
    value: object = None


@dataclass(frozen=True)
class Place:
    module: str
    path: str
    line: int
    column: int  # 0-based, CPython's
    kind: str  # "class attribute" | "attribute" | "key" | "dict value" | "keyword" | "argparse default" | "choice"
    #            | "read default" | "constant"
    value: Value
    test_module: bool = False  # in a test module (``testing.is_test_module``: by what its code proves)
    nvidia_only: bool = False  # in a module that imports a CUDA-only package unconditionally

    @property
    def in_place(self) -> bool:
        """A literal that ROC105 rewrites where it stands (a stored default, not an argument)."""
        return self.value.kind == "literal" and self.kind in (
            "class attribute", "attribute", "dict value", "argparse default", "constant")


@dataclass(frozen=True)
class Reader:
    module: str
    path: str
    line: int
    column: int
    kind: str  # "mode" | "shown" | "truth" | "stored" | "other"
    what: str  # for messages: "torch.compile(mode=...)", "compared", "stored as `x`"
    target: str = ""  # "stored": the attribute, key or keyword it is stored as


@dataclass
class Decisions:
    name: str
    places: List[Place]
    readers: List[Reader]
    kind: str = "attribute"  # or "constant"


# ----------------------------------------------------------------------------------------
# The two questions
# ----------------------------------------------------------------------------------------

def attribute(ctx, name: str) -> Decisions:
    """The places and readers of the attribute / key ``name`` across the project."""
    places: List[Place] = []
    readers: List[Reader] = []
    for scan in _scans(ctx, name, "attribute"):
        places += scan[0]
        readers += scan[1]
    return Decisions(name, places, readers)


def constant(ctx, module: str, name: str) -> Decisions:
    """The module-level constant ``module.name`` (one place: its assignment) and its readers."""
    places: List[Place] = []
    readers: List[Reader] = []
    for scan in _scans(ctx, name, "constant:" + module):
        places += scan[0]
        readers += scan[1]
    return Decisions(name, places, readers, "constant")


def resolved(ctx, decisions: Decisions, depth: int = 0, seen: Optional[Set[str]] = None) -> List[Reader]:
    """The readers, with each "stored" one followed to what reads the name it is stored as:
    a "mode" where that name's every reader is a mode or shown (and one is a mode), else
    "other"."""
    seen = set(seen or ()) | {decisions.name}
    out = []
    for reader in decisions.readers:
        if reader.kind == "stored":
            kind = "other"
            if depth < _MAX_DEPTH and reader.target not in seen:
                inner = resolved(ctx, attribute(ctx, reader.target), depth + 1, seen)
                if inner and all(r.kind in HARMLESS for r in inner) and any(r.kind == "mode" for r in inner):
                    kind = "mode"
            reader = Reader(reader.module, reader.path, reader.line, reader.column, kind,
                            reader.what if kind == "other" else f"{reader.what}, which reaches torch.compile's mode",
                            reader.target)
        out.append(reader)
    return out


# ----------------------------------------------------------------------------------------
# One module at a time, memoised on the index
# ----------------------------------------------------------------------------------------

def _scans(ctx, name: str, question: str) -> Iterator[Tuple[List[Place], List[Reader]]]:
    from .index import ProjectIndex

    index = ctx.index if ctx.index is not None else ctx.shared("own_index", lambda c: ProjectIndex([c.path]))
    current = index.module_name(ctx.path) or "__main__"
    tree = ctx.facts.tree if ctx.facts is not None else None
    seen_current = False
    for module, path, blob in index.modules_mentioning(name):
        if module == current:
            seen_current = True
            if tree is not None:
                key = repr(("decisions", name, question))
                yield ctx.shared(key, lambda c: _scan(index, module, path, tree, name, question, True))
            continue
        key = ("decisions", module, name, question, hashlib.blake2b(blob, digest_size=12).hexdigest())
        found = index.memo.get(key)
        if found is None:
            parsed = index.tree(module, blob, path)
            found = ([], []) if parsed is None else _scan(index, module, path, parsed, name, question)
            index.memo[key] = found
        yield found
    if not seen_current and tree is not None and name in ctx.text:
        # the file's current text (a fix pass may have added the name; a file linted alone)
        key = repr(("decisions", name, question))
        yield ctx.shared(key, lambda c: _scan(index, current, ctx.path, tree, name, question, True))


class _Module:
    """One module's tree with what reading it needs: parents, imports, local functions, its
    platform tests (for "gated"), the index."""

    def __init__(self, index, module: str, path: str, tree: ast.AST, current: bool = False):
        self.index, self.module, self.path, self.tree = index, module, path, tree
        # the file being linted: its own functions from its current text, not the index's bytes
        self.own = index.summary(module, tree=tree, path=path) if current and index is not None else None
        self.parents: Dict[ast.AST, ast.AST] = {}
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                self.parents[child] = node
        body = getattr(tree, "body", [])

        def absolute(name, level):
            return index.absolute(module, name, level) if index is not None else (None if level else name)

        self.imports = module_imports(body, absolute)
        self.functions = {s.name for s in body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
        self.env = Env(self.imports, {}, index.platform_test if index is not None else None)
        module_tests(body, self.env)
        self.test_module = is_test_module(tree, path)
        self.nvidia_only = any(cuda_only_package(full) for s in body if isinstance(s, (ast.Import, ast.ImportFrom))
                               for full in module_imports([s], absolute).values())

    def parent(self, node: ast.AST) -> Optional[ast.AST]:
        return self.parents.get(node)

    def place(self, node: ast.AST, kind: str, value: Value) -> Place:
        return Place(self.module, self.path, getattr(node, "lineno", 0), getattr(node, "col_offset", 0), kind, value,
                     self.test_module, self.nvidia_only)

    def reader(self, node: ast.AST, kind: str, what: str, target: str = "") -> Reader:
        return Reader(self.module, self.path, getattr(node, "lineno", 0), getattr(node, "col_offset", 0), kind, what,
                      target)

    # -- values ----------------------------------------------------------------------------
    def value(self, node: Optional[ast.AST]) -> Value:
        if node is None:
            return Value("literal", None)
        if isinstance(node, ast.Constant) and isinstance(node.value, (str, bool, int, float, type(None))):
            return Value("literal", node.value)
        if isinstance(node, ast.IfExp) and self.is_rocm_test(node.test):
            return Value("gated")
        if isinstance(node, ast.Call) and _field_call(node):
            default = next((k.value for k in node.keywords if k.arg == "default"), None)
            if default is not None:
                return self.value(default)
            return Value("unknown")
        if isinstance(node, (ast.Name, ast.Attribute)):
            spelled = dotted(node)
            if spelled is not None and self.index is not None:
                full = resolve_name(self.imports, set(), self.module, node)
                if full is None and isinstance(node, ast.Name):
                    full = f"{self.module}.{node.id}"
                found = self.index.constant(full) if full else None
                if found is not None:
                    module, _, name = full.rpartition(".")
                    return Value("constant", (module, name, found[1]))
        return Value("unknown")

    def is_rocm_test(self, test: ast.AST) -> bool:
        try:
            known = classify(test, self.env)
        except RecursionError:
            return False
        return (ROCM in known.true) != (ROCM in known.false)

    # -- calls ----------------------------------------------------------------------------
    def callee(self, call: ast.Call):
        """("compile" | "partial" | "list_mode_options" | "wrapper" | "shown" | None, summary)."""
        func = call.func
        full = resolve_name(self.imports, self.functions, self.module, func)
        if full in COMPILE:
            return "compile", None
        if full in PARTIAL:
            if call.args and resolve_name(self.imports, set(), self.module, call.args[0]) in COMPILE:
                return "compile", None
            return None, None
        if full in LIST_MODE_OPTIONS:
            return "list_mode_options", None
        if isinstance(func, ast.Name) and func.id == "print" and "print" not in self.imports:
            return "shown", None
        if full == "warnings.warn" or (isinstance(func, ast.Attribute) and func.attr in _LOG_METHODS
                                       and "log" in (dotted(func.value) or "").lower()):
            return "shown", None
        if self.own is not None and full is not None and full.startswith(self.module + ".") \
                and "." not in full[len(self.module) + 1:]:
            summary = self.own.functions.get(full[len(self.module) + 1:])
            if summary is not None:
                return "wrapper", summary
        if full is not None and full.split(".", 1)[0] != "torch" and self.index is not None:
            summary = self.index.function(full)
            if summary is not None:
                return "wrapper", summary
        if isinstance(func, ast.Attribute) and func.attr == "compile" and dotted(func.value) not in self.imports:
            return "compile", None  # nn.Module.compile
        return None, None

    # -- readers ----------------------------------------------------------------------------
    def classify(self, node: ast.AST, depth: int = 0) -> Tuple[str, str, str]:
        """(kind, what, target) for an expression that reads the value."""
        value = node
        parent = self.parent(value)
        while True:
            if isinstance(parent, (ast.IfExp, ast.BoolOp)) and (not isinstance(parent, ast.IfExp)
                                                                 or value is not parent.test):
                value, parent = parent, self.parent(parent)
            elif isinstance(parent, ast.Call) and value in parent.args and _maps_mode(parent):
                value, parent = parent, self.parent(parent)  # `{...}.get(m, m)`: the mode, mapped
            else:
                break
        if isinstance(parent, ast.keyword):
            call = self.parent(parent)
            kind, summary = self.callee(call) if isinstance(call, ast.Call) else (None, None)
            if parent.arg is None:
                return "other", "splatted into a call", ""
            if kind == "compile" and parent.arg == "mode":
                return "mode", "torch.compile(mode=...)", ""
            if kind == "list_mode_options" and parent.arg == "mode":
                return "mode", "list_mode_options(mode=...)", ""
            if kind == "wrapper" and summary.target(parent.arg, None) == "mode":
                return "mode", f"{summary.name}({parent.arg}=...), which hands it to torch.compile", ""
            if kind == "shown":
                return "shown", "logged", ""
            if kind in ("compile", "wrapper", "list_mode_options"):
                return "other", f"passed as {parent.arg}=", ""
            return "stored", f"passed as {parent.arg}=", parent.arg
        if isinstance(parent, ast.Call) and value in parent.args:
            kind, summary = self.callee(parent)
            if kind == "list_mode_options" and parent.args[0] is value:
                return "mode", "list_mode_options(...)", ""
            if kind == "wrapper":
                position = parent.args.index(value)
                if not any(isinstance(a, ast.Starred) for a in parent.args[:position]) \
                        and summary.target(None, position) == "mode":
                    return "mode", f"{summary.name}(...), which hands it to torch.compile", ""
            if kind == "shown":
                return "shown", "logged", ""
            return "other", f"passed to {dotted(parent.func) or 'a call'}()", ""
        if isinstance(parent, ast.FormattedValue):
            return "shown", "formatted", ""
        if isinstance(parent, ast.Dict) and value in parent.values:
            key = parent.keys[parent.values.index(value)]
            key = key.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else None
            if key == "mode" and self.splatted_into_compile(parent, depth):
                return "mode", '{"mode": ...} splatted into torch.compile', ""
            if key is not None and key != "mode":
                return "stored", f'stored under "{key}"', key
            return "other", "stored in a dict", ""
        if isinstance(parent, (ast.Assign, ast.AnnAssign)) and parent.value is value:
            targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
            if len(targets) == 1 and isinstance(targets[0], ast.Attribute):
                return "stored", f"stored as `{targets[0].attr}`", targets[0].attr
            if len(targets) == 1 and isinstance(targets[0], ast.Name) and depth < _MAX_DEPTH:
                scope = self.scope_of(parent)
                if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    loads = self.local_loads(scope, targets[0].id)
                    kinds = [self.classify(load, depth + 1)[0] for load in loads]
                    if kinds and all(k in HARMLESS for k in kinds) and "mode" in kinds:
                        return "mode", f"assigned to `{targets[0].id}`, handed to torch.compile's mode", ""
                return "other", f"assigned to `{targets[0].id}`", ""
            return "other", "assigned", ""
        if isinstance(parent, ast.Compare):
            others = [parent.left] + parent.comparators
            if len(others) == 2 and isinstance(parent.ops[0], (ast.Is, ast.IsNot, ast.Eq, ast.NotEq)) and any(
                    isinstance(o, ast.Constant) and o.value is None for o in others if o is not value):
                return "truth", "compared with None", ""  # a mode and its ROCm form are both not None
            return "other", "compared", ""
        if (isinstance(parent, (ast.If, ast.While, ast.Assert, ast.IfExp)) and value is parent.test) or (
                isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.Not)) or (
                isinstance(parent, ast.Call) and dotted(parent.func) == "bool" and parent.args == [value]):
            # a mode and its ROCm form are both non-empty strings: the test does not change
            return "truth", "tested for truth", ""
        if isinstance(parent, (ast.If, ast.While, ast.Assert)) or isinstance(parent, ast.UnaryOp):
            return "other", "tested", ""
        if isinstance(parent, ast.Return):
            return "other", "returned", ""
        return "other", "read", ""

    def splatted_into_compile(self, display: ast.Dict, depth: int) -> bool:
        parent = self.parent(display)
        if isinstance(parent, ast.keyword) and parent.arg is None:
            call = self.parent(parent)
            return isinstance(call, ast.Call) and self.callee(call)[0] == "compile"
        if isinstance(parent, ast.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0], ast.Name):
            scope = self.scope_of(parent)
            loads = self.local_loads(scope, parent.targets[0].id) if scope is not None else []
            splats = []
            for load in loads:
                holder = self.parent(load)
                if isinstance(holder, ast.keyword) and holder.arg is None:
                    call = self.parent(holder)
                    if not (isinstance(call, ast.Call) and self.callee(call)[0] == "compile"):
                        return False
                    splats.append(load)
                elif self.classify(load, depth + 1)[0] not in ("shown", "truth"):
                    return False
            return bool(splats)
        return False

    def scope_of(self, node: ast.AST) -> Optional[ast.AST]:
        current = self.parent(node)
        while current is not None and not isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda,
                                                                ast.ClassDef, ast.Module)):
            current = self.parent(current)
        return current

    def local_loads(self, scope: ast.AST, name: str) -> List[ast.Name]:
        """The loads of ``name`` in ``scope`` (its own body: nested functions that bind the name
        again are left out)."""
        out = []
        for node in ast.walk(scope):
            if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load):
                if self.scope_of(node) is scope or not _binds(self.scope_of(node), name):
                    out.append(node)
        return out


def _maps_mode(call: ast.Call) -> bool:
    """``{"reduce-overhead": ..., ...}.get(m, m)`` (ROC104's inline mapping) or
    ``rocmport_compile_mode(m)`` (its older mapper): the mode, mapped on ROCm."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr == "get" and isinstance(func.value, ast.Dict):
        return any(isinstance(k, ast.Constant) and k.value == "reduce-overhead" for k in func.value.keys)
    return isinstance(func, ast.Name) and func.id == "rocmport_compile_mode"


def _binds(scope: Optional[ast.AST], name: str) -> bool:
    if scope is None:
        return False
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        args = scope.args
        if any(a.arg == name for a in args.posonlyargs + args.args + args.kwonlyargs):
            return True
    return any(isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load) for n in ast.walk(scope))


def _field_call(call: ast.Call) -> bool:
    """``field(...)``, ``dataclasses.field(...)``, pydantic's ``Field(...)``."""
    spelled = dotted(call.func) or ""
    return spelled.rpartition(".")[2] in ("field", "Field")


def _literal_items(node: Optional[ast.AST]) -> List[ast.AST]:
    """The constant items of a list, tuple or set display (``choices=[...]``)."""
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return [e for e in node.elts if isinstance(e, ast.Constant)]
    return []


def _literal_choices(annotation: ast.AST) -> List[ast.AST]:
    """The constants of ``Literal["default", "reduce-overhead"]`` anywhere in an annotation
    (``Optional[Literal[...]]`` too): the values a field may be given."""
    out = []
    for node in ast.walk(annotation):
        if isinstance(node, ast.Subscript) and (dotted(node.value) or "").rpartition(".")[2] == "Literal":
            items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            out += [i for i in items if isinstance(i, ast.Constant)]
    return out


def _argparse_dest(call: ast.Call) -> Optional[str]:
    dest = next((k.value for k in call.keywords if k.arg == "dest"), None)
    if isinstance(dest, ast.Constant) and isinstance(dest.value, str):
        return dest.value
    options = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    longs = [o for o in options if o.startswith("--")]
    chosen = longs[0][2:] if longs else (options[0].lstrip("-") if options else None)
    return chosen.replace("-", "_") if chosen else None


def _scan(index, module: str, path: str, tree: ast.AST, name: str, question: str,
          current: bool = False) -> Tuple[List[Place], List[Reader]]:
    m = _Module(index, module, path, tree, current)
    places: List[Place] = []
    readers: List[Reader] = []
    if question.startswith("constant:"):
        _scan_constant(m, question[len("constant:"):], name, places, readers)
        return places, readers
    if question.startswith("calls:"):
        target, _, param = question[len("calls:"):].rpartition(":")
        return [], _scan_calls(m, target, param, name)
    for node in ast.walk(tree):
        kind = type(node)
        if kind is ast.Attribute and node.attr == name:
            if isinstance(node.ctx, ast.Load):
                readers.append(m.reader(node, *m.classify(node)))
            elif isinstance(node.ctx, ast.Store):
                places.append(m.place(node, "attribute", _stored_value(m, node)))
        elif kind is ast.Subscript and isinstance(node.slice, ast.Constant) and node.slice.value == name:
            if isinstance(node.ctx, ast.Load):
                readers.append(m.reader(node, *m.classify(node)))
            elif isinstance(node.ctx, ast.Store):
                places.append(m.place(node, "key", _stored_value(m, node)))
        elif kind is ast.Call:
            func = node.func
            spelled = dotted(func) or ""
            first = node.args[0] if node.args else None
            if isinstance(func, ast.Attribute) and func.attr == "get" and isinstance(first, ast.Constant) \
                    and first.value == name:
                readers.append(m.reader(node, *m.classify(node)))
                default = node.args[1] if len(node.args) > 1 else next(
                    (k.value for k in node.keywords if k.arg == "default"), None)
                if default is not None:
                    places.append(m.place(default, "read default", m.value(default)))
            elif spelled in ("getattr", "setattr") and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) \
                    and node.args[1].value == name:
                if spelled == "getattr":
                    readers.append(m.reader(node, *m.classify(node)))
                    if len(node.args) == 3:
                        places.append(m.place(node.args[2], "read default", m.value(node.args[2])))
                elif len(node.args) == 3:
                    places.append(m.place(node, "attribute", m.value(node.args[2])))
            elif isinstance(func, ast.Attribute) and func.attr == "add_argument" and _argparse_dest(node) == name:
                default = next((k.value for k in node.keywords if k.arg == "default"), None)
                places.append(m.place(default or node, "argparse default", m.value(default)))
                choices = next((k.value for k in node.keywords if k.arg == "choices"), None)
                for choice in _literal_items(choices):
                    places.append(m.place(choice, "choice", m.value(choice)))  # a value the user is offered
            for k in node.keywords:
                if k.arg == name:
                    kind_of, summary = m.callee(node)
                    if kind_of == "compile" or (kind_of == "wrapper" and summary.target(name, None) is not None):
                        continue  # a compile call's own argument: ROC101/ROC102/ROC104 read it there
                    where = "dict value" if spelled == "dict" else "keyword"
                    places.append(m.place(k.value, where, m.value(k.value)))
        elif kind is ast.Dict:
            for key, value in zip(node.keys, node.values):
                if isinstance(key, ast.Constant) and key.value == name:
                    places.append(m.place(value, "dict value", m.value(value)))
        elif kind is ast.ClassDef:
            for stmt in node.body:
                if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
                    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                    if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                        if isinstance(stmt, ast.AnnAssign):
                            for choice in _literal_choices(stmt.annotation):
                                places.append(m.place(choice, "choice", m.value(choice)))
                        value = stmt.value
                        if isinstance(value, ast.Call) and _field_call(value):
                            value = next((k.value for k in value.keywords if k.arg == "default"), value)
                        places.append(m.place(value, "class attribute", m.value(value)))
    return places, readers


def _stored_value(m: _Module, target: ast.AST) -> Value:
    parent = m.parent(target)
    if isinstance(parent, ast.Assign) and len(parent.targets) == 1 and parent.targets[0] is target:
        return m.value(parent.value)
    if isinstance(parent, ast.AnnAssign) and parent.target is target and parent.value is not None:
        return m.value(parent.value)
    return Value("unknown")


def _scan_constant(m: _Module, module: str, name: str, places: List[Place], readers: List[Reader]) -> None:
    """The module-level assignment of ``module.name`` (where ``m`` is that module) and the
    reads: by name where ``m`` is that module or imports the name from it (not where a
    function binds it again), as ``alias.name`` where ``m`` imports the module."""
    local = None
    if m.module == module:
        local = name
        for stmt in getattr(m.tree, "body", []):
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                    places.append(m.place(stmt.value, "constant", m.value(stmt.value)))
    else:
        for alias, full in m.imports.items():
            if full == f"{module}.{name}":
                local = alias
        for node in ast.walk(m.tree):
            if isinstance(node, ast.Global) and name in node.names:
                places.append(m.place(node, "constant", Value("unknown")))  # rebound by a function
    module_aliases = {alias for alias, full in m.imports.items() if full == module}
    if local is None:
        for node in ast.walk(m.tree):
            if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
                base = m.index.absolute(m.module, node.module, node.level) if m.index is not None and node.level \
                    else node.module
                if base == module:
                    local = name  # a star import of the module: its names, read by name
    for node in ast.walk(m.tree):
        if isinstance(node, ast.Name) and local is not None and node.id == local and isinstance(node.ctx, ast.Load):
            scope = m.scope_of(node)
            if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and _binds(scope, local):
                continue
            readers.append(m.reader(node, *m.classify(node)))
        elif isinstance(node, ast.Attribute) and node.attr == name and isinstance(node.ctx, ast.Load) \
                and dotted(node.value) in module_aliases:
            readers.append(m.reader(node, *m.classify(node)))


# ----------------------------------------------------------------------------------------
# A project function that hands a parameter to torch.compile's mode: its callers, and the
# compile call inside it
# ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Argument:
    """What one call of the project function hands to the parameter."""

    module: str
    path: str
    line: int
    value: Value  # "literal", "gated", "constant" or "unknown"
    read: Optional[Tuple[str, str]] = None  # ("attribute", name) for `cfg.name`, `cfg["name"]`, `cfg.get("name")`
    param: Optional[Tuple[str, str, Value]] = None  # the caller's own parameter: (function, name, its default)
    test_module: bool = False


def arguments(ctx, module: str, function: str, param: str) -> List[Argument]:
    """Every call of ``module.function`` in the project (by a name that resolves to it), with
    what it hands to ``param``; a call that leaves it out hands the default (not listed)."""
    out: List[Argument] = []
    for scan in _scans(ctx, function, f"calls:{module}:{param}"):
        out += scan[1]
    return out


def forwards(ctx, module: str, function: str, param: str, depth: int = 0) -> Optional[Tuple[str, int]]:
    """(path, line) of the compile call in ``module.function`` whose mode is ``param`` itself
    (``torch.compile(fn, mode=param)``, ``list_mode_options(param)``), directly or through
    another project function it hands the parameter to unchanged; None where the parameter
    reaches the mode in any other form (a conditional, a rebinding, ``**kwargs``)."""
    from .index import ProjectIndex

    index = ctx.index if ctx.index is not None else ctx.shared("own_index", lambda c: ProjectIndex([c.path]))
    key = ("forwards", module, function, param)
    if key in index.memo:
        return index.memo[key]
    index.memo[key] = None  # a cycle reads None
    found = None
    path = index.path_of(module)
    current = index.module_name(ctx.path) or "__main__"
    tree = None
    if module == current and ctx.facts is not None:
        tree, path = ctx.facts.tree, ctx.path
    elif path is not None:
        for name, p, blob in index.modules_mentioning(function):
            if name == module:
                tree = index.tree(name, blob, p)
    if tree is not None and depth < _MAX_DEPTH:
        m = _Module(index, module, path or "", tree, module == current)
        node = next((s for s in getattr(tree, "body", []) if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
                     and s.name == function), None)
        if node is not None and not _rebinds_param(node, param):
            for sub in ast.walk(node):
                if not (isinstance(sub, ast.Name) and sub.id == param and isinstance(sub.ctx, ast.Load)):
                    continue
                value, holder = sub, m.parent(sub)
                while (isinstance(holder, ast.IfExp) and value is not holder.test) or (
                        isinstance(holder, ast.Call) and value in holder.args and _maps_mode(holder)):
                    value, holder = holder, m.parent(holder)  # an arm, or the mapping ROC104 wrote
                call = m.parent(holder) if isinstance(holder, ast.keyword) else holder
                if not isinstance(call, ast.Call):
                    continue
                kind, summary = m.callee(call)
                if kind == "compile" and isinstance(holder, ast.keyword) and holder.arg == "mode":
                    found = (m.path, sub.lineno)
                elif kind == "list_mode_options" and (call.args[:1] == [value] or (
                        isinstance(holder, ast.keyword) and holder.arg == "mode")):
                    found = (m.path, sub.lineno)
                elif kind == "wrapper" and summary is not None:
                    target = holder.arg if isinstance(holder, ast.keyword) else None
                    if value is not sub:
                        continue  # changed on the way: not handed on unchanged
                    position = None if target is not None else call.args.index(sub) if sub in call.args else None
                    reached = summary.target(target, position)
                    inner = (target if target in summary.keywords else None) if target is not None else (
                        summary.positional[position] if position is not None and position < len(summary.positional)
                        else None)
                    if reached == "mode" and inner is not None:
                        found = forwards(ctx, summary.module, summary.name, inner, depth + 1)
                if found is not None:
                    break
    index.memo[key] = found
    return found


def _rebinds_param(function: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load) for n in ast.walk(function))


def _scan_calls(m: _Module, target: str, param: str, function: str) -> List[Argument]:
    out: List[Argument] = []
    for node in ast.walk(m.tree):
        if not isinstance(node, ast.Call):
            continue
        kind, summary = m.callee(node)
        if kind != "wrapper" or summary is None or summary.module != target or summary.name != function:
            continue
        value = None
        for k in node.keywords:
            if k.arg == param:
                value = k.value
        if value is None and param in summary.positional:
            position = summary.positional.index(param)
            if position < len(node.args) and not any(isinstance(a, ast.Starred) for a in node.args[:position + 1]):
                value = node.args[position]
        if value is None:
            if any(k.arg is None for k in node.keywords) or any(isinstance(a, ast.Starred) for a in node.args):
                out.append(Argument(m.module, m.path, node.lineno, Value("unknown"), test_module=m.test_module))
            continue  # the default
        out.append(_argument(m, node, value))
    return out


def _argument(m: _Module, call: ast.Call, value: ast.AST) -> Argument:
    read = None
    if isinstance(value, ast.Attribute):
        read = ("attribute", value.attr)
    elif isinstance(value, ast.Subscript) and isinstance(value.slice, ast.Constant) and isinstance(value.slice.value, str):
        read = ("attribute", value.slice.value)
    elif (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "get"
          and value.args and isinstance(value.args[0], ast.Constant) and isinstance(value.args[0].value, str)):
        read = ("attribute", value.args[0].value)
    param = None
    scope = m.scope_of(call)
    while isinstance(value, ast.Name) and isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        # the parameter of the function the call is in, or of one around it (a closure)
        if _rebinds_param(scope, value.id) and not _takes(scope, value.id):
            break
        if _takes(scope, value.id):
            if _rebinds_param(scope, value.id):
                break
            args = scope.args
            positional = args.posonlyargs + args.args
            defaults = dict(zip([a.arg for a in positional[len(positional) - len(args.defaults):]], args.defaults))
            defaults.update({a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None})
            owner = m.scope_of(scope)
            name = scope.name if isinstance(owner, ast.Module) and not isinstance(scope, ast.Lambda) else ""
            param = (name, value.id, m.value(defaults[value.id]) if value.id in defaults else Value("unknown"))
            break
        scope = m.scope_of(scope)
    return Argument(m.module, m.path, call.lineno, m.value(value), read, param, m.test_module)


def _takes(function: ast.AST, name: str) -> bool:
    args = function.args
    return any(a.arg == name for a in args.posonlyargs + args.args + args.kwonlyargs)


# ----------------------------------------------------------------------------------------
# A test parameter: `@pytest.mark.parametrize("mode", [None, "reduce-overhead"])`
# ----------------------------------------------------------------------------------------

def parameter(ctx, line: int, param: str) -> Decisions:
    """The readers of the test parameter ``param`` in the function or class (its methods that
    take it) defined at ``line`` of the file being linted (where its decorators begin or its
    ``def``/``class`` stands): what the parametrized values reach."""
    tree = ctx.facts.tree if ctx.facts is not None else None
    readers: List[Reader] = []
    if tree is None:
        return Decisions(param, [], readers, "parameter")
    from .index import ProjectIndex

    index = ctx.index if ctx.index is not None else ctx.shared("own_index", lambda c: ProjectIndex([c.path]))
    module = index.module_name(ctx.path) or "__main__"

    def build(c):
        return _Module(index, module, c.path, tree, True)

    m = ctx.shared("decisions:module", build)
    target = None
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and (
                node.lineno == line or any(d.lineno == line for d in node.decorator_list)):
            target = node
            break
    if target is None:
        return Decisions(param, [], readers, "parameter")
    functions = [target] if not isinstance(target, ast.ClassDef) else [
        s for s in target.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and _takes(s, param)]
    for function in functions:
        if _rebinds_param(function, param):
            readers.append(m.reader(function, "other", f"assigned again in `{function.name}`"))
            continue
        for load in m.local_loads(function, param):
            readers.append(m.reader(load, *m.classify(load)))
    return Decisions(param, [], readers, "parameter")
