"""A cheap first look at a file with CPython's own parser, before LibCST sees it.

Most files of a large tree mention the words the rules look for (``compile``, ``graph``,
``triton``) without holding anything a rule could report: ``re.compile``, an FX ``graph``
parameter, a docstring. Parsing them with LibCST and resolving their names costs ten times
more than CPython's ``ast``, which the engine runs on every such file anyway (it refuses
over-deep nesting before LibCST could overflow the C stack). :class:`Facts` keeps what that
tree says about names, and each rule family's ``Rule.may_match(facts)`` answers whether the
file can hold one of its findings at all.

Every answer must be conservative: ``False`` only when the rule provably cannot report
anything in the file. The argument rests on how LibCST's ``QualifiedNameProvider`` (which
the rules use to recognise ``torch.compile``, ``torch.cuda.graph``, ``triton.jit`` and the
rest) names a node: it takes the node's dotted name the way
``libcst.helpers.get_full_name_for_node`` builds it (``a.b`` through attributes, the callee
of a call, the value of a subscript) and replaces its first part with what an *import* bound
to that name; a name bound any other way (an assignment, a parameter, ``with ... as``) gives a
local name, never ``torch.*``, and a name bound by nothing gives none. So a node can resolve
to a qualified name only if its root name is bound by an import somewhere in the file: this
module computes, for any node, every name it could resolve to under any import binding of
its root (in any scope), a superset of what the provider can return. Relative imports give
names that start with a dot (never a rule's) and star imports bind nothing the provider
sees; both are ignored, exactly as the provider ignores them.

``codemods.base.PREFILTER["enabled"] = False`` switches every such shortcut off; a test runs
a corpus both ways and requires the same findings.
"""

from __future__ import annotations

import ast
from typing import Dict, Iterable, Iterator, List, Optional, Set, Tuple

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


class Facts:
    """What one CPython parse of a file says about its names, calls and writes."""

    __slots__ = ("bindings", "names", "attributes", "calls", "decorators", "keyword_calls", "keywords",
                 "strings", "assigned_names", "assigned_attributes", "stored_keys", "dict_keys",
                 "subscript_call_keywords")

    def __init__(self) -> None:
        self.bindings: Dict[str, Set[str]] = {}  # name -> qualified names that imports bind to it
        self.names: Set[str] = set()  # every Name used
        self.attributes: Dict[str, List[ast.Attribute]] = {}  # attribute name -> its nodes
        self.calls: Dict[str, List[ast.Call]] = {}  # last part of the callee's name -> the calls
        self.decorators: Dict[str, List[ast.expr]] = {}  # the same for decorators
        self.keyword_calls: List[ast.Call] = []  # calls with mode=, options= or **
        self.keywords: Set[str] = set()  # every keyword argument name
        self.strings: Set[str] = set()  # every str constant
        self.assigned_names: Set[str] = set()  # ``a = ...`` (plain and annotated): "a"
        self.assigned_attributes: Dict[str, List[ast.Attribute]] = {}  # ``a.b = ...``: "b" -> targets
        self.stored_keys: Set[str] = set()  # ``a["k"] = ...``: "k"
        self.dict_keys: Set[str] = set()  # ``{"k": ...}``: "k"
        self.subscript_call_keywords: Set[str] = set()  # keywords of ``x[...](...)`` calls

    @classmethod
    def of(cls, tree: ast.AST) -> "Facts":
        facts = cls()
        bindings, names, attributes, calls = facts.bindings, facts.names, facts.attributes, facts.calls
        keywords, strings = facts.keywords, facts.strings
        Name, Attribute, Call, Constant = ast.Name, ast.Attribute, ast.Call, ast.Constant
        Import, ImportFrom, Subscript = ast.Import, ast.ImportFrom, ast.Subscript
        Assign, AnnAssign, Dict = ast.Assign, ast.AnnAssign, ast.Dict
        FunctionDef, AsyncFunctionDef = ast.FunctionDef, ast.AsyncFunctionDef
        for node in ast.walk(tree):
            kind = type(node)
            if kind is Name:
                names.add(node.id)
            elif kind is Attribute:
                found = attributes.get(node.attr)
                if found is None:
                    attributes[node.attr] = [node]
                else:
                    found.append(node)
            elif kind is Call:
                func = node.func
                func_kind = type(func)
                last = func.attr if func_kind is Attribute else func.id if func_kind is Name else _last(func)
                found = calls.get(last)
                if found is None:
                    calls[last] = [node]
                else:
                    found.append(node)
                if node.keywords:
                    hit = False
                    for k in node.keywords:
                        arg = k.arg
                        if arg is None or arg == "mode" or arg == "options":
                            hit = True
                        if arg is not None:
                            keywords.add(arg)
                    if hit:
                        facts.keyword_calls.append(node)
                    if func_kind is Subscript:
                        facts.subscript_call_keywords.update(k.arg for k in node.keywords if k.arg)
            elif kind is Constant:
                if type(node.value) is str:
                    strings.add(node.value)
            elif kind is Assign or kind is AnnAssign:
                for target in (node.targets if kind is Assign else (node.target,)):
                    target_kind = type(target)
                    if target_kind is Name:
                        facts.assigned_names.add(target.id)
                    elif target_kind is Attribute:
                        facts.assigned_attributes.setdefault(target.attr, []).append(target)
                    elif target_kind is Subscript:
                        key = target.slice
                        if type(key) is Constant and type(key.value) is str:
                            facts.stored_keys.add(key.value)
            elif kind is Dict:
                for key in node.keys:
                    if type(key) is Constant and type(key.value) is str:
                        facts.dict_keys.add(key.value)
            elif kind is FunctionDef or kind is AsyncFunctionDef:
                for decorator in node.decorator_list:
                    facts.decorators.setdefault(_last(decorator), []).append(decorator)
            elif kind is Import:
                for alias in node.names:
                    if alias.asname:
                        bindings.setdefault(alias.asname, set()).add(alias.name)
                    else:  # ``import a.b.c`` binds ``a``
                        first = alias.name.split(".", 1)[0]
                        bindings.setdefault(first, set()).add(first)
            elif kind is ImportFrom:
                if node.level or not node.module:
                    continue  # relative: the provider's names start with "."
                for alias in node.names:
                    if alias.name != "*":
                        bindings.setdefault(alias.asname or alias.name, set()).add(f"{node.module}.{alias.name}")
        return facts

    # -- what a node, or any node of the file, may resolve to ----------------------------
    def qualified_names(self, node: ast.AST) -> Set[str]:
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
            return set()
        bound = self.bindings.get(node.id)
        if not bound:
            return set()
        tail = "".join("." + part for part in reversed(rest))
        return {full + tail for full in bound}

    def may_be(self, node: ast.AST, names: Iterable[str]) -> bool:
        return not self.qualified_names(node).isdisjoint(names)

    def may_be_under(self, node: ast.AST, prefix: str) -> bool:
        return any(q == prefix or q.startswith(prefix + ".") for q in self.qualified_names(node))

    def may_reference(self, names: Iterable[str]) -> bool:
        """Could some name or attribute of the file resolve to one of ``names``?"""
        wanted = frozenset(names)
        for name in self.names:
            bound = self.bindings.get(name)
            if bound and not bound.isdisjoint(wanted):
                return True
        for last in {n.rsplit(".", 1)[-1] for n in wanted}:
            for node in self.attributes.get(last, ()):
                if self.may_be(node, wanted):
                    return True
        return False

    def may_reference_under(self, prefix: str) -> bool:
        """Could some name or attribute resolve to ``prefix`` or to something inside it?"""
        for name in self.names:
            if any(q == prefix or q.startswith(prefix + ".") for q in self.bindings.get(name, ())):
                return True
        return any(self.may_be_under(node, prefix) for node in self.attributes.get(prefix.rsplit(".", 1)[-1], ()))

    def _keys(self, wanted: frozenset) -> Set[str]:
        """The index keys (last parts of dotted names) under which a node that may resolve
        to one of ``wanted`` is filed: an attribute keeps the name's own last part, a bare
        name is the import binding itself (``from torch.cuda import graph as G``: "G")."""
        keys = {n.rsplit(".", 1)[-1] for n in wanted}
        keys.update(name for name, bound in self.bindings.items() if not bound.isdisjoint(wanted))
        return keys

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

    def first_strings(self, method: str) -> Set[str]:
        """The string literals passed first to calls of ``method`` (``x.method("s", ...)``)."""
        out: Set[str] = set()
        for call in self.calls.get(method, ()):
            if call.args and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str):
                out.add(call.args[0].value)
        return out


def parse(text: str) -> Tuple[Optional[ast.AST], Optional[BaseException]]:
    """CPython's tree of ``text`` (None and the exception when it does not parse)."""
    try:
        return compile(text, "<rocmport>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True), None
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return None, exc
