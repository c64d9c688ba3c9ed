"""A cheap first look at a file with CPython's own parser, before LibCST sees it.

Most files of a large tree mention the words the rules look for (``compile``, ``graph``,
``triton``) without holding anything a rule could report: ``re.compile``, an FX ``graph``
parameter, a docstring. Parsing them with LibCST and resolving their names costs ten times
more than CPython's ``ast``, which the engine runs on every such file anyway (it refuses
over-deep nesting before LibCST could overflow the C stack). :class:`Facts` keeps what that
tree says about names (its bindings and name index, and every node filed by type), and each
rule's ``Rule.may_match(facts)`` answers whether the file can hold one of its findings at all:
its ``NEEDS`` (``rocmport.analysis.needs``) on these facts, unless the rule keeps a measured
fast path of its own. Whatever else a need asks (strings, keywords, keys) is computed from
``Facts.nodes`` on first use, never in the walk every parsed file pays for.

Every answer must be conservative: ``False`` only when the rule provably cannot report
anything in the file. The argument rests on how LibCST's ``QualifiedNameProvider`` (which
the rules use to recognise ``torch.compile``, ``torch.cuda.graph``, ``triton.jit`` and the
rest) names a node: it takes the node's dotted name the way
``libcst.helpers.get_full_name_for_node`` builds it (``a.b`` through attributes, the callee
of a call, the value of a subscript) and replaces its first part with the qualified name of
the binding in sight: what an import binds to it, or, for a name bound otherwise, its local
name (``x`` at module level, ``A.x`` in class ``A``, ``f.<locals>.x`` in a function, which
no rule's name resembles); a name bound by nothing gives none (or ``builtins.x``).
``Facts.roots`` is a superset of those first parts over every binding of the file, so
``Facts.qualified_names`` is a superset of anything the provider can return for a node,
``builtins.*`` aside (no prefilter looks for a builtin).
Relative imports give names that start with a dot (never a rule's) and star imports bind
nothing the provider sees; both are left out, exactly as the provider leaves them.

The same bindings, sorted by scope (``Facts.binding_kinds``), let ``RuleContext`` answer
most qualified-name questions in the files that do reach LibCST without running the
provider (``rocmport.analysis.names.import_names``).

``rocmport.analysis.prescan.PREFILTER["enabled"] = False`` switches every such shortcut off; a test runs
a corpus both ways and requires the same findings.
"""

from __future__ import annotations

import ast
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Set, Tuple

from .bindings import child_fields, from_import_binding, import_binding, import_bindings, walk

_PEEL = (ast.Attribute, ast.Call, ast.Subscript)


def _last(node: ast.AST) -> str:
    """The last part of ``node``'s dotted name as the provider builds it ("" for none)."""
    while True:
        kind = type(node)
        if kind is ast.Attribute:
            return node.attr
        if kind is ast.Name:
            return node.id
        if kind is ast.Call:
            node = node.func
        elif kind is ast.Subscript:
            node = node.value
        else:
            return ""


class Names:
    """The dotted names a node may resolve to, without listing them: ``{b + tail for b in
    bound}``, and when the root is bound some other way too, ``local + tail`` and
    ``path + "." + local + tail`` for every class path of the file. Listing the class paths
    for every name asked about made a file's prefilter quadratic in its size (a 100,000-line
    file has thousands of classes); the questions the rules ask (meets a set? under a
    prefix?) are answered from the set they ask about instead."""

    __slots__ = ("bound", "local", "class_paths", "tail")

    def __init__(self, bound, local: Optional[str], class_paths, tail: str = ""):
        self.bound, self.local, self.class_paths, self.tail = bound, local, class_paths, tail

    def with_tail(self, tail: str) -> "Names":
        return Names(self.bound, self.local, self.class_paths, self.tail + tail) if tail else self

    def __bool__(self) -> bool:
        return bool(self.bound) or self.local is not None

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        tail = self.tail
        if tail and not name.endswith(tail):
            return False
        head = name[:len(name) - len(tail)] if tail else name
        if head in self.bound:
            return True
        local = self.local
        if local is None:
            return False
        if head == local:
            return True
        return head.endswith("." + local) and head[:-len(local) - 1] in self.class_paths

    def isdisjoint(self, names: Iterable[str]) -> bool:
        return not any(name in self for name in names)

    def __and__(self, names) -> Set[str]:
        return {name for name in names if name in self}

    def __iter__(self) -> Iterator[str]:
        tail = self.tail
        for b in self.bound:
            yield b + tail
        if self.local is not None:
            yield self.local + tail
            for path in self.class_paths:
                yield f"{path}.{self.local}{tail}"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Names):
            other = set(other)
        return set(self) == other if isinstance(other, (set, frozenset)) else NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Names({sorted(self)!r})"

    def any_under(self, prefix: str) -> bool:
        """Is one of the names ``prefix`` or inside it?"""
        dotted = prefix + "."
        tail = self.tail
        for b in self.bound:
            q = b + tail
            if q == prefix or q.startswith(dotted):
                return True
        local = self.local
        if local is None:
            return False
        q = local + tail
        if q == prefix or q.startswith(dotted):
            return True
        first = prefix.split(".", 1)[0]
        for path in self.class_paths:  # only paths that start like the prefix can be under it
            if path.split(".", 1)[0] == first:
                q = f"{path}.{local}{tail}"
                if q == prefix or q.startswith(dotted):
                    return True
        return False


def _class_paths(body, prefix: str, out: Set[str]) -> None:
    for stmt in body:
        kind = type(stmt)
        if kind is ast.ClassDef:
            path = prefix + stmt.name
            out.add(path)
            _class_paths(stmt.body, path + ".", out)
        elif kind in _BLOCKS:
            for attr in ("body", "orelse", "finalbody"):
                _class_paths(getattr(stmt, attr, ()), prefix, out)
            for handler in getattr(stmt, "handlers", ()):
                _class_paths(handler.body, prefix, out)
            for case in getattr(stmt, "cases", ()):
                _class_paths(case.body, prefix, out)


_BLOCKS = tuple(getattr(ast, name) for name in ("If", "For", "AsyncFor", "While", "With", "AsyncWith", "Try",
                                                 "TryStar", "Match") if hasattr(ast, name))
# Other nodes that bind names: (node type) -> the names.
_OTHER_BINDERS = {
    ast.ExceptHandler: lambda n: (n.name,) if n.name else (),
    ast.Global: lambda n: n.names,
    ast.Nonlocal: lambda n: n.names,
}
for _name, _get in (("MatchAs", lambda n: (n.name,) if n.name else ()),
                    ("MatchStar", lambda n: (n.name,) if n.name else ()),
                    ("MatchMapping", lambda n: (n.rest,) if n.rest else ()),
                    ("TypeVar", lambda n: (n.name,)), ("ParamSpec", lambda n: (n.name,)),
                    ("TypeVarTuple", lambda n: (n.name,))):
    if hasattr(ast, _name):
        _OTHER_BINDERS[getattr(ast, _name)] = _get


class Facts:
    """What one CPython parse of a file says about its names, calls and bindings: the name
    index every qualified-name question reads. Anything else a prefilter asks (strings,
    keywords, keys, ...) is computed on first use from ``nodes(...)`` and kept in ``memo``
    (``rocmport.analysis.needs``)."""

    __slots__ = ("bindings", "names", "attributes", "calls", "decorators", "other_bindings", "class_paths", "tree",
                 "by_type", "_kinds", "_imports", "_module_imports", "index", "path", "memo")

    def __init__(self) -> None:
        self.bindings: Dict[str, Set[str]] = {}  # name -> qualified names that imports bind to it
        self.names: Set[str] = set()  # every Name used
        self.attributes: Dict[str, List[ast.Attribute]] = {}  # attribute name -> its nodes
        self.calls: Dict[str, List[ast.Call]] = {}  # last part of the callee's name -> the calls
        self.decorators: Dict[str, List[ast.expr]] = {}  # the same for decorators
        # Names bound otherwise than by an import (in any scope): an assignment, a parameter,
        # a def, ... (``roots`` adds their local names; ``binding_kinds`` sorts by scope)
        self.other_bindings: Set[str] = set()
        self.class_paths: Set[str] = set()  # "A", "A.B": classes not inside a function
        self.tree: Optional[ast.AST] = None
        self.by_type: Dict[type, List[ast.AST]] = {}  # node type -> the nodes (see ``walk``)
        self._kinds: Optional[Dict[str, Set[str]]] = None
        self._imports: Dict[str, Set[str]] = {}
        self._module_imports: Dict[str, Set[str]] = {}
        self.index = None  # the project index (rocmport.analysis.index) and the file's path: set by the engine
        self.path: Optional[str] = None
        self.memo: Dict[object, object] = {}  # what a need or a rule derived from these facts, asked again by
        # its prefilter, its ``reach`` and its visit (by a key of its own: "needs:strings", "compile_modes:...",
        # or a rule's NEEDS object itself: its answer)

    @classmethod
    def of(cls, tree: ast.AST) -> "Facts":
        facts = cls()
        facts.tree = tree
        _class_paths(getattr(tree, "body", ()), "", facts.class_paths)
        by_type = facts.by_type
        walk(tree, by_type)
        get = by_type.get
        Load, Attribute, Name = ast.Load, ast.Attribute, ast.Name
        names, other = facts.names, facts.other_bindings
        for node in get(Name, ()):
            names.add(node.id)
            if type(node.ctx) is not Load:
                other.add(node.id)
        attributes = facts.attributes
        for node in get(Attribute, ()):
            found = attributes.get(node.attr)
            if found is None:
                attributes[node.attr] = [node]
            else:
                found.append(node)
        calls = facts.calls
        for node in get(ast.Call, ()):
            func = node.func
            func_kind = type(func)
            last = func.attr if func_kind is Attribute else func.id if func_kind is Name else _last(func)
            found = calls.get(last)
            if found is None:
                calls[last] = [node]
            else:
                found.append(node)
        other.update(node.arg for node in get(ast.arg, ()))
        decorators = facts.decorators
        for kind in (ast.FunctionDef, ast.AsyncFunctionDef):
            for node in get(kind, ()):
                other.add(node.name)
                for decorator in node.decorator_list:
                    decorators.setdefault(_last(decorator), []).append(decorator)
        other.update(node.name for node in get(ast.ClassDef, ()))
        bindings = facts.bindings
        for node in get(ast.Import, ()):
            for name, full in import_bindings(node):
                bindings.setdefault(name, set()).add(full)
        for node in get(ast.ImportFrom, ()):
            if not node.level:  # relative: names start with "."
                for name, full in import_bindings(node):
                    bindings.setdefault(name, set()).add(full)
        for kind, binds in _OTHER_BINDERS.items():
            for node in get(kind, ()):
                other.update(binds(node))
        return facts

    # -- what a node, or any node of the file, may resolve to ----------------------------
    def qualified_names(self, node: ast.AST) -> "Names":
        """Every qualified name ``node`` could resolve to (a superset of the provider's)."""
        rest: List[str] = []
        while isinstance(node, _PEEL):
            if isinstance(node, ast.Attribute):
                rest.append(node.attr)
                node = node.value
            elif isinstance(node, ast.Call):
                node = node.func
            else:
                node = node.value
        if not isinstance(node, ast.Name):
            return Names(frozenset(), None, frozenset())
        return self.roots(node.id).with_tail("".join("." + part for part in reversed(rest)))

    def roots(self, name: str) -> "Names":
        """What the provider may call the name ``name`` (a superset): what imports bind to
        it, and, when it is bound some other way, its local name (``x`` at module level,
        ``A.x`` in class ``A``; names in functions hold ``<locals>``, which no rule's does)."""
        bound = self.bindings.get(name, frozenset())
        return Names(bound, name if name in self.other_bindings else None, self.class_paths)

    def may_be(self, node: ast.AST, names: Iterable[str]) -> bool:
        return not self.qualified_names(node).isdisjoint(names)

    def may_be_under(self, node: ast.AST, prefix: str) -> bool:
        return self.qualified_names(node).any_under(prefix)

    def may_reference(self, names: Iterable[str]) -> bool:
        """Could some name or attribute of the file resolve to one of ``names``?"""
        wanted = frozenset(names)
        for name in self.names:
            if not self.roots(name).isdisjoint(wanted):
                return True
        for last in {n.rsplit(".", 1)[-1] for n in wanted}:
            for node in self.attributes.get(last, ()):
                if self.may_be(node, wanted):
                    return True
        return False

    def may_reference_under(self, prefix: str) -> bool:
        """Could some name or attribute resolve to ``prefix`` or to something inside it?"""
        for name in self.names:
            if self.roots(name).any_under(prefix):
                return True
        return any(self.may_be_under(node, prefix) for node in self.attributes.get(prefix.rsplit(".", 1)[-1], ()))

    def _keys(self, wanted: frozenset) -> Set[str]:
        """The index keys (last parts of dotted names) under which a node that may resolve
        to one of ``wanted`` is filed: an attribute keeps the name's own last part, a bare
        name is the import binding itself (``from torch.cuda import graph as G``: "G")."""
        keys = {n.rsplit(".", 1)[-1] for n in wanted}
        # A name whose roots meet ``wanted`` either is the last part of a wanted name (its
        # local name: in ``keys`` already) or is bound to one by an import.
        names = self.names
        keys.update(name for name, bound in self.bindings.items() if name in names and not bound.isdisjoint(wanted))
        return keys

    def spellings(self, names: Iterable[str]) -> Set[str]:
        """The words that code naming one of ``names`` holds, as text: the last part of each
        (an attribute, or a name imported as itself) and every name an import binds to one
        of them under another (``from torch import float8_e4m3fn as F8``). The provider
        names a node after the binding of its first part, so no other spelling resolves to
        one of ``names``."""
        wanted = frozenset(names)
        words = {name.rsplit(".", 1)[-1] for name in wanted}
        words.update(name for name, bound in self.bindings.items() if not bound.isdisjoint(wanted))
        return words

    def nodes(self, *types: type) -> Iterator[ast.AST]:
        """The file's nodes of ``types``, each type's in ``ast.walk``'s order (no expression
        contexts or operators)."""
        for kind in types:
            yield from self.by_type.get(kind, ())

    def calls_to(self, names: Iterable[str]) -> Iterator[ast.Call]:
        """The calls whose callee may resolve to one of ``names``."""
        wanted = frozenset(names)
        for key in self._keys(wanted):
            for call in self.calls.get(key, ()):
                if self.may_be(call.func, wanted):
                    yield call

    def decorated_with(self, names: Iterable[str]) -> bool:
        """Is some function decorated with one of ``names`` (or a call of one)?"""
        wanted = frozenset(names)
        return any(self.may_be(decorator, wanted) for key in self._keys(wanted)
                   for decorator in self.decorators.get(key, ()))

    def class_roots(self) -> Set[str]:
        """The names of the outermost classes (the first part of every class path)."""
        return {path.split(".", 1)[0] for path in self.class_paths}

    def binding_kinds(self) -> Dict[str, Set[str]]:
        """name -> how it is bound: "import" (an import run at module level), "inner import"
        (an import in a function or class), "module" (otherwise at module level),
        "function" (in a function, lambda or comprehension), "class" (in a class body),
        "other" (a type parameter). Computed on first use: only files that reach LibCST
        need it."""
        if self._kinds is None:
            binder = _Binder()
            binder.visit(self.tree)
            self._kinds = binder.kinds
            self._imports = binder.imports
            self._module_imports = binder.module_imports
        return self._kinds

    def module_imports(self) -> Dict[str, Set[str]]:
        """name -> what the imports run at module level bind to it."""
        self.binding_kinds()
        return self._module_imports

    def binding_kinds_imports(self) -> Dict[str, Set[str]]:
        """name -> what its imports (any scope) bind to it, as the provider names it (a
        relative import keeps its dots: ``from .a import b`` is ".a.b")."""
        self.binding_kinds()
        return self._imports


class _Binder(ast.NodeVisitor):
    """Sorts every binding of the file by the scope it binds in (see ``binding_kinds``).
    What an import binds is ``rocmport.analysis.resolve``'s answer, as for LibCST's tree."""

    def __init__(self) -> None:
        self.kinds: Dict[str, Set[str]] = {}
        self.imports: Dict[str, Set[str]] = {}  # name -> what its imports bind to it
        self.module_imports: Dict[str, Set[str]] = {}  # the same, imports run at module level only
        self.scopes: List[str] = ["module"]  # module, class, function, comprehension
        self.declared: List[Dict[str, str]] = [{}]  # per scope: global/nonlocal declarations

    # node type -> its visit_ method (None: generic_visit), read once per type
    _VISITS: Dict[type, Optional[Callable]] = {}

    def visit(self, node: ast.AST) -> None:
        """``ast.NodeVisitor.visit``, the method looked up once per node type."""
        kind = type(node)
        try:
            method = self._VISITS[kind]
        except KeyError:
            method = getattr(_Binder, "visit_" + kind.__name__, None)
            if method is ast.NodeVisitor.visit_Constant:  # only for the deprecated visit_Num & co.
                method = None
            self._VISITS[kind] = method
        if method is None:
            self.generic_visit(node)
        else:
            method(self, node)

    def generic_visit(self, node: ast.AST) -> None:
        """``ast.NodeVisitor.generic_visit`` over the fields ``walk`` reads (the others hold
        names, numbers, contexts and operators: no binding)."""
        node_type = ast.AST
        for name in child_fields(type(node)):
            value = getattr(node, name, None)
            if type(value) is list:
                for item in value:
                    if isinstance(item, node_type):
                        self.visit(item)
            elif isinstance(value, node_type):
                self.visit(value)

    def bind(self, name: str, kind: Optional[str] = None) -> None:
        if kind is None:
            scope = self.scopes[-1]
            declared = self.declared[-1].get(name)
            if declared == "global":
                scope = "module"
            kind = {"module": "module", "class": "class"}.get(scope, "function")
        self.kinds.setdefault(name, set()).add(kind)

    def _push(self, scope: str) -> None:
        self.scopes.append(scope)
        self.declared.append({})

    def _pop(self) -> None:
        self.scopes.pop()
        self.declared.pop()

    def visit_Name(self, node: ast.Name) -> None:
        if not isinstance(node.ctx, ast.Load):
            self.bind(node.id)

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        # binds in the nearest scope that is not a comprehension
        index = len(self.scopes) - 1
        while self.scopes[index] == "comprehension":
            index -= 1
        scope = self.scopes[index]
        self.kinds.setdefault(node.target.id, set()).add(
            {"module": "module", "class": "class"}.get(scope, "function"))
        self.visit(node.value)

    def _function(self, node, name: Optional[str]) -> None:
        if name is not None:
            self.bind(name)
        for decorator in getattr(node, "decorator_list", ()):
            self.visit(decorator)
        args = node.args
        for default in list(args.defaults) + [d for d in args.kw_defaults if d is not None]:
            self.visit(default)
        for arg in args.posonlyargs + args.args + args.kwonlyargs + [a for a in (args.vararg, args.kwarg) if a]:
            if arg.annotation is not None:
                self.visit(arg.annotation)
        if getattr(node, "returns", None) is not None:
            self.visit(node.returns)
        if getattr(node, "type_params", None):
            for param in node.type_params:
                self.bind(getattr(param, "name", ""), "other")
        self._push("function")
        for arg in args.posonlyargs + args.args + args.kwonlyargs + [a for a in (args.vararg, args.kwarg) if a]:
            self.bind(arg.arg)
        body = node.body if isinstance(node.body, list) else [node.body]
        for stmt in body:
            self.visit(stmt)
        self._pop()

    def visit_FunctionDef(self, node) -> None:
        self._function(node, node.name)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self._function(node, None)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.bind(node.name)
        for expr in list(node.decorator_list) + list(node.bases) + [k.value for k in node.keywords]:
            self.visit(expr)
        for param in getattr(node, "type_params", ()) or ():
            self.bind(getattr(param, "name", ""), "other")
        self._push("class")
        for stmt in node.body:
            self.visit(stmt)
        self._pop()

    def _comprehension(self, node, elements) -> None:
        generators = node.generators
        self.visit(generators[0].iter)  # evaluated in the enclosing scope
        self._push("comprehension")
        for index, generator in enumerate(generators):
            if index:
                self.visit(generator.iter)
            self.visit(generator.target)
            for condition in generator.ifs:
                self.visit(condition)
        for element in elements:
            self.visit(element)
        self._pop()

    def visit_ListComp(self, node) -> None:
        self._comprehension(node, [node.elt])

    visit_SetComp = visit_GeneratorExp = visit_ListComp

    def visit_DictComp(self, node: ast.DictComp) -> None:
        self._comprehension(node, [node.key, node.value])

    def visit_Global(self, node: ast.Global) -> None:
        for name in node.names:
            self.declared[-1][name] = "global"
            self.kinds.setdefault(name, set()).add("module")

    def visit_Nonlocal(self, node: ast.Nonlocal) -> None:
        for name in node.names:
            self.declared[-1][name] = "nonlocal"

    def _import(self, name: str, full: str) -> None:
        self.imports.setdefault(name, set()).add(full)
        if self.scopes[-1] == "module":
            self.module_imports.setdefault(name, set()).add(full)
        self.bind(name, "import" if self.scopes[-1] == "module" else "inner import")

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._import(*import_binding(alias.name, alias.asname))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        for alias in node.names:
            bound = from_import_binding(node.module, node.level, alias.name, alias.asname)
            if bound is not None:
                self._import(*bound)

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.name:
            self.bind(node.name)
        self.generic_visit(node)

    def visit_MatchAs(self, node) -> None:
        if node.name:
            self.bind(node.name)
        self.generic_visit(node)

    def visit_MatchStar(self, node) -> None:
        if node.name:
            self.bind(node.name)

    def visit_MatchMapping(self, node) -> None:
        if node.rest:
            self.bind(node.rest)
        self.generic_visit(node)


def parse(text: str) -> Tuple[Optional[ast.AST], Optional[BaseException]]:
    """CPython's tree of ``text`` (None and the exception when it does not parse)."""
    try:
        return compile(text, "<rocmport>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True), None
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return None, exc

# The engine's prefilter (rule TRIGGERS) and the name gates (``may_resolve``) only skip work
# that cannot lead to a finding. Tests switch them off to prove it: findings must not change.
PREFILTER = {"enabled": True}
