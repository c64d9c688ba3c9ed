"""When a fix may test the project's own ROCm test instead of a gate line of its own.

Reusing ``is_rocm()`` from another module of the project changes what the fixed program
imports and when it reads a name, so it is done only where a conservative proof from the
sources (CPython's ``ast``, nothing imported or run) says the program imports and runs as
before; in doubt, the file gets its own gate line (``placement``). The proof asks:

- the test is plain: its name is bound once at its module's top level (no ``is_rocm =
  is_rocm()`` after the ``def``, no star import, no ``global``), a function is undecorated or
  only cached (``functools.cache``/``lru_cache``), and each module that re-exports it binds
  the name once too;
- the name the fixed file tests is bound once in that file (no parameter, loop variable or
  star import of the same name), and the module it names is not spelled like a module of
  the standard library (``platform``: which of the two Python imports depends on the path);
- the module the fixed file reads the test from cannot import the fixed file back, nor a
  package above it by name (that package may be half-imported: its ``__init__`` may be what
  imports the fixed file). Every import its module-level code runs is followed, in class
  bodies and branches too; code whose imports cannot be told (a call of the module's own or
  the project's functions, ``importlib``, ``exec``) counts as reaching anything;
- a module the fix newly imports, and every project module that import runs, has no
  import-time effect: definitions, constants, imports of the standard library, torch or what
  the fixed file imports already, and calls that only read (``getattr``, ``os.environ.get``).
"""

from __future__ import annotations

import ast
import sys
import weakref
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Set, Tuple

from rocmport.analysis.bindings import dotted, import_binding, import_bindings

_STDLIB = frozenset(getattr(sys, "stdlib_module_names", ())) or frozenset({
    "abc", "argparse", "array", "ast", "asyncio", "base64", "bisect", "builtins", "calendar", "cmath", "code",
    "codecs", "collections", "concurrent", "configparser", "contextlib", "copy", "csv", "ctypes", "dataclasses",
    "datetime", "decimal", "difflib", "dis", "email", "enum", "errno", "fnmatch", "fractions", "functools", "gc",
    "getpass", "gettext", "glob", "gzip", "hashlib", "heapq", "hmac", "html", "http", "importlib", "inspect", "io",
    "ipaddress", "itertools", "json", "keyword", "linecache", "locale", "logging", "lzma", "math", "mmap",
    "multiprocessing", "numbers", "operator", "os", "pathlib", "pickle", "pkgutil", "platform", "pprint",
    "profile", "queue", "random", "re", "resource", "runpy", "sched", "secrets", "select", "selectors", "shlex",
    "shutil", "signal", "site", "socket", "sqlite3", "ssl", "stat", "statistics", "string", "struct",
    "subprocess", "sys", "sysconfig", "tarfile", "tempfile", "test", "textwrap", "threading", "time", "timeit",
    "token", "tokenize", "traceback", "types", "typing", "unittest", "urllib", "uuid", "warnings", "weakref",
    "zipfile", "zlib"})

# Decorators that keep a test a plain call of the function (a cache).
CACHES = frozenset({"functools.cache", "functools.lru_cache"})
# Calls that only compute or read: allowed in a module a fix newly imports.
_PURE_BUILTINS = frozenset({
    "getattr", "hasattr", "isinstance", "issubclass", "len", "bool", "int", "float", "str", "bytes", "tuple",
    "list", "dict", "set", "frozenset", "range", "enumerate", "zip", "sorted", "min", "max", "abs", "repr",
    "object", "property", "staticmethod", "classmethod", "any", "all", "reversed", "iter", "type"})
_PURE_CALLS = CACHES | frozenset({
    "os.environ.get", "os.getenv", "functools.wraps", "functools.partial", "typing.TypeVar", "typing.NewType",
    "typing.cast", "typing.overload", "dataclasses.dataclass", "dataclasses.field", "collections.namedtuple",
    "typing.NamedTuple", "contextlib.suppress", "re.compile", "os.path.join", "os.path.dirname",
    "os.path.abspath", "os.path.basename", "logging.getLogger", "enum.auto"})
# Builtins and modules whose calls run code that cannot be followed.
_OPAQUE_BUILTINS = frozenset({"exec", "eval", "__import__", "compile", "globals", "locals", "vars", "setattr",
                              "delattr", "open", "breakpoint", "input"})
_OPAQUE_MODULES = frozenset({"importlib", "runpy", "imp", "pkgutil", "builtins", "site", "sys"})
_LIMIT = 400  # modules followed from one start; more: cannot tell


@dataclass
class ModuleFacts:
    """What importing one module of the project runs (its module-level code, with branches
    and class bodies; not function bodies)."""

    edges: Set[Tuple[str, bool]] = field(default_factory=set)  # (project module, named: its attributes read)
    externals: Set[str] = field(default_factory=set)  # top-level names of the other modules it imports
    bound: Dict[str, int] = field(default_factory=dict)  # names bound at module level, counted
    decorators: Dict[str, Tuple[Optional[str], ...]] = field(default_factory=dict)  # function -> decorators
    rebound: Set[str] = field(default_factory=set)  # names in a global or nonlocal statement
    star: bool = False  # a star import
    opaque: bool = False  # runs code whose imports cannot be told
    pure: bool = True  # no effect outside the module but its imports'


_FACTS: "weakref.WeakKeyDictionary[object, Dict[str, Optional[ModuleFacts]]]" = weakref.WeakKeyDictionary()


def module_facts(index, name: str) -> Optional[ModuleFacts]:
    """The facts of project module ``name`` (None: not a module of the project, or it cannot
    be read or parsed), computed once per index; the current file's answer then depends on
    its bytes (``index.depend_on_bytes``)."""
    index.depend_on_bytes(name)
    cache = _FACTS.setdefault(index, {})
    if name in cache:
        return cache[name]
    cache[name] = None
    path = index.path_of(name)
    blob = index.file_bytes(path) if path else None
    if blob is None:
        return None
    try:
        tree = compile(blob, path, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    facts = ModuleFacts()
    try:
        _Facts(index, name, path, facts, blob).module(tree)
    except RecursionError:
        return None
    cache[name] = facts
    return facts


class _Facts:
    def __init__(self, index, name: str, path: str, facts: ModuleFacts, blob: bytes):
        self.index, self.name, self.facts = index, name, facts
        self.is_package = path.endswith(("__init__.py", "__init__.pyi"))
        self.imports: Dict[str, Tuple[str, bool]] = {}  # local name -> (dotted, of the project)
        self.local: Set[str] = set()  # names bound by the module's own code (not imports)
        self.metaclasses = b"__init_subclass__" in blob or b"metaclass" in blob

    def _absolute(self, module: Optional[str], level: int) -> Optional[str]:
        if not level:
            return module
        return self.index.absolute(self.name, module, level)

    def _project(self, dotted_name: str) -> bool:
        return self.index.path_of(dotted_name) is not None

    def _bind(self, name: str) -> None:
        self.facts.bound[name] = self.facts.bound.get(name, 0) + 1

    def module(self, tree: ast.Module) -> None:
        for node in ast.walk(tree):
            if isinstance(node, (ast.Global, ast.Nonlocal)):
                self.facts.rebound.update(node.names)
        self.body(tree.body)

    def body(self, stmts: Iterable[ast.stmt]) -> None:
        for stmt in stmts:
            self.stmt(stmt)

    def stmt(self, stmt: ast.stmt) -> None:
        facts = self.facts
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                self._import(alias.name, alias.name if alias.asname else None)
                bound, full = import_binding(alias.name, alias.asname)
                self._bind(bound)
                self.imports[bound] = (full, self._project(full))
        elif isinstance(stmt, ast.ImportFrom):
            if stmt.module == "__future__" and not stmt.level:
                return
            base = self._absolute(stmt.module, stmt.level)
            if not base:
                facts.opaque, facts.pure = True, False  # a relative import that cannot be placed
                return
            if len(stmt.names) == 1 and stmt.names[0].name == "*":
                facts.star = True
                self._import(base, base)
                return
            subs = [f"{base}.{a.name}" for a in stmt.names]
            named = not all(self._project(s) for s in subs)
            self._import(base, base if named else None)
            for alias, sub in zip(stmt.names, subs):
                if self._project(sub):
                    self._import(sub, sub)
                bound, _full = import_binding(alias.name, alias.asname)  # `from m import a.b` is no syntax
                self._bind(bound)
                self.imports[bound] = (sub, self._project(sub) or self._project(base))
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self._bind(stmt.name)
            self.local.add(stmt.name)
            decorators = []
            for dec in stmt.decorator_list:
                self._decorator(dec)
                target = dec.func if isinstance(dec, ast.Call) else dec
                decorators.append(self._resolve(target))
            facts.decorators[stmt.name] = tuple(decorators)
            args = stmt.args
            for expr in list(args.defaults) + [d for d in args.kw_defaults if d is not None]:
                self.expr(expr)
        elif isinstance(stmt, ast.ClassDef):
            self._bind(stmt.name)
            self.local.add(stmt.name)
            for dec in stmt.decorator_list:
                self._decorator(dec)
            for base in list(stmt.bases) + [k.value for k in stmt.keywords]:
                self.expr(base)
                root = (dotted(base) or "").split(".")[0]
                if root in self.imports and self.imports[root][1] or (root in self.local and self.metaclasses):
                    facts.opaque, facts.pure = True, False  # its __init_subclass__ or metaclass runs
            self.body(stmt.body)
        elif isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            if getattr(stmt, "value", None) is not None:
                self.expr(stmt.value)
            for target in targets:
                if isinstance(stmt, ast.AnnAssign) and stmt.value is None:
                    continue
                self._target(target)
        elif isinstance(stmt, ast.Expr):
            self.expr(stmt.value)
        elif isinstance(stmt, (ast.If, ast.While)):
            self.expr(stmt.test)
            self.body(stmt.body)
            self.body(stmt.orelse)
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            self.expr(stmt.iter)
            self._target(stmt.target)
            self.body(stmt.body)
            self.body(stmt.orelse)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            for item in stmt.items:
                self.expr(item.context_expr)
                call = item.context_expr
                if not (isinstance(call, ast.Call) and self._resolve(call.func) == "contextlib.suppress"):
                    facts.pure = False
                if item.optional_vars is not None:
                    self._target(item.optional_vars)
            self.body(stmt.body)
        elif isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
            self.body(stmt.body)
            for handler in stmt.handlers:
                if handler.type is not None:
                    self.expr(handler.type)
                if handler.name:
                    self._bind(handler.name)
                self.body(handler.body)
            self.body(stmt.orelse)
            self.body(stmt.finalbody)
        elif isinstance(stmt, (ast.Pass, ast.Raise, ast.Assert, ast.Global, ast.Nonlocal)):
            for child in ast.iter_child_nodes(stmt):
                if isinstance(child, ast.expr):
                    self.expr(child)
        else:  # del, match, anything else: not followed
            facts.opaque, facts.pure = True, False

    def _target(self, target: ast.expr) -> None:
        if isinstance(target, ast.Name):
            self._bind(target.id)
            self.local.add(target.id)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for elt in target.elts:
                self._target(elt.value if isinstance(elt, ast.Starred) else elt)
        else:  # an attribute or item of another object: os.environ[...] = ..., torch.x.y = ...
            self.facts.pure = False
            self.expr(target)

    def _import(self, module: str, named: Optional[str]) -> None:
        """An import of ``module`` (``named``: the module whose attributes are then read)."""
        parts = module.split(".")
        project = False
        for i in range(1, len(parts) + 1):
            prefix = ".".join(parts[:i])
            if self._project(prefix):
                project = True
                self.facts.edges.add((prefix, prefix == named))
        if not project:
            self.facts.externals.add(parts[0])

    def _resolve(self, node: ast.AST) -> Optional[str]:
        spelled = dotted(node)
        if spelled is None:
            return None
        root, _, rest = spelled.partition(".")
        if root in self.imports:
            full = self.imports[root][0]
            return f"{full}.{rest}" if rest else full
        return spelled

    def _decorator(self, dec: ast.expr) -> None:
        if isinstance(dec, ast.Call):
            self.expr(dec)  # the factory's call
            self._callee(dec.func, called_result=True)
        else:
            self.expr(dec)
            self._callee(dec)

    def _callee(self, func: ast.AST, called_result: bool = False) -> None:
        """A call of ``func`` (or, ``called_result``, of what a call of it returned)."""
        facts = self.facts
        spelled = dotted(func)
        if spelled is None:
            facts.opaque, facts.pure = True, False
            return
        root = spelled.split(".")[0]
        full = self._resolve(func) or spelled
        if root in self.imports:
            if self.imports[root][1]:  # the project's own code
                facts.opaque, facts.pure = True, False
                return
            if full.split(".")[0] in _OPAQUE_MODULES and full not in _PURE_CALLS:
                facts.opaque = True
            if full not in _PURE_CALLS:
                facts.pure = False
            return
        if root in self.local or root in facts.bound:
            facts.opaque, facts.pure = True, False  # the module's own function, class or object
            return
        if spelled in _OPAQUE_BUILTINS:
            facts.opaque, facts.pure = True, False
        elif spelled not in _PURE_BUILTINS or called_result:
            facts.pure = False

    def expr(self, node: ast.expr) -> None:
        todo: List[ast.AST] = [node]
        while todo:
            item = todo.pop()
            if isinstance(item, ast.Lambda):
                todo.extend(item.args.defaults)
                continue  # its body runs when it is called
            if isinstance(item, ast.Call):
                self._callee(item.func)
            elif isinstance(item, (ast.Await, ast.Yield, ast.YieldFrom)):
                self.facts.opaque, self.facts.pure = True, False
            elif isinstance(item, ast.NamedExpr):
                self._target(item.target)
            todo.extend(ast.iter_child_nodes(item))


# ------------------------------------------------------------------------------------------
# The proof
# ------------------------------------------------------------------------------------------

def _ancestors(name: str) -> Set[str]:
    parts = name.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts))}


def reaches(index, starts: Iterable[str], target: Optional[str]) -> bool:
    """Could importing the modules ``starts`` import module ``target`` (the fixed file), or
    read a package above it by name, which may be half-imported then? True also when it
    cannot be told (code whose imports are unknown, a module that cannot be read, too many)."""
    if target is None:
        return False
    above = _ancestors(target)
    todo = [s for s in starts]
    seen = set(todo)
    while todo:
        if len(seen) > _LIMIT:
            return True
        module = todo.pop()
        if module == target:
            return True
        facts = module_facts(index, module)
        if facts is None or facts.opaque:
            return True
        for dep, named in facts.edges:
            if dep == target:
                return True
            if dep in above and not named:
                continue  # a package above the fixed file: imported already, its names not read
            if dep not in seen:
                seen.add(dep)
                todo.append(dep)
    return False


def without_effects(index, starts: Iterable[str], importer: Optional[str], allowed: Set[str]) -> bool:
    """Does importing the modules ``starts`` run nothing but definitions, constants and
    imports (of the standard library, torch, the top-level modules in ``allowed``, or project
    modules of the same kind)? Packages above ``importer`` are imported already."""
    above = _ancestors(importer) if importer else set()
    todo = [s for s in starts if s not in above]
    seen = set(todo)
    while todo:
        if len(seen) > _LIMIT:
            return False
        facts = module_facts(index, todo.pop())
        if facts is None or facts.opaque or not facts.pure:
            return False
        if any(root not in _STDLIB and root != "torch" and root not in allowed for root in facts.externals):
            return False
        for dep, _ in facts.edges:
            if dep not in seen and dep not in above:
                seen.add(dep)
                todo.append(dep)
    return True


def new_modules(index, module: str, importer: Optional[str]) -> List[str]:
    """The modules an import of ``module`` runs that ``importer`` has not imported by then:
    it and the packages above it, less those above ``importer``."""
    above = _ancestors(importer) if importer else set()
    return [m for m in sorted(_ancestors(module) | {module}) if m not in above and m != importer
            and index.path_of(m) is not None]


def plain_test(index, module: str, name: str, depth: int = 0) -> bool:
    """Is ``module.name`` a plain ROCm test: bound once at its module's top level, no star
    import or ``global`` there, a function undecorated or only cached; followed through
    re-exports, each binding the name once."""
    if depth > 8:
        return False
    facts = module_facts(index, module)
    if facts is None or facts.star or name in facts.rebound or facts.bound.get(name) != 1:
        return False
    summary = index.summary(module)
    if summary is None:
        return False
    for test, kind in summary.rocm_tests:
        if test == name:
            return kind != "function" or all(dec in CACHES for dec in facts.decorators.get(name, ()))
    target = summary.imports.get(name)
    if target and "." in target:
        owner, _, attr = target.rpartition(".")
        return plain_test(index, owner, attr, depth + 1)
    return False


def _binds(tree: ast.AST, name: str) -> List[ast.AST]:
    """Every node of ``tree`` that binds ``name`` (in any scope)."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load):
            out.append(node)
        elif isinstance(node, ast.arg) and node.arg == name:
            out.append(node)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            out.append(node)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            if any(alias.name == "*" for alias in node.names) or any(
                    bound == name for bound, _full in import_bindings(node)):
                out.append(node)
        elif isinstance(node, ast.ExceptHandler) and node.name == name:
            out.append(node)
        elif isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names:
            out.append(node)
        elif type(node).__name__ in ("MatchAs", "MatchStar") and getattr(node, "name", None) == name:
            out.append(node)
        elif type(node).__name__ == "MatchMapping" and getattr(node, "rest", None) == name:
            out.append(node)
    return out


def bound_once(tree: Optional[ast.AST], name: str, new: bool = False) -> bool:
    """Does ``name`` in the fixed file always mean what its module-level import binds (``new``:
    a name the fix adds, then bound nowhere else)? No star import; ``import a.b`` and
    ``import a.c`` both bind ``a`` to the same module and count once."""
    if tree is None:
        return False
    binds = _binds(tree, name)
    if any(isinstance(b, ast.ImportFrom) and any(a.name == "*" for a in b.names) for b in binds) or \
            any(isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names) for n in ast.walk(tree)):
        return False
    if new:
        return not binds
    body = getattr(tree, "body", [])
    plain = [b for b in binds if isinstance(b, ast.Import) and b in body
             and all(not a.asname for a in b.names if import_binding(a.name, a.asname)[0] == name)]
    return len(binds) == 1 or (bool(plain) and len(plain) == len(binds))


def stdlib_named(module: str) -> bool:
    """Is the top-level name of an absolute module also a module of the standard library
    (which of the two ``import`` finds depends on the path and on what was imported first)?"""
    return module.split(".")[0] in _STDLIB


def imported_roots(tree: Optional[ast.AST]) -> Set[str]:
    """The top-level modules a file imports at module level (absolute imports)."""
    roots: Set[str] = set()
    for stmt in getattr(tree, "body", []):
        if isinstance(stmt, ast.Import):
            roots.update(a.name.split(".")[0] for a in stmt.names)
        elif isinstance(stmt, ast.ImportFrom) and not stmt.level and stmt.module:
            roots.add(stmt.module.split(".")[0])
    return roots

