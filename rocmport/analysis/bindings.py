"""What names mean on CPython's tree: the part of the resolver that needs no LibCST.

The prefilter (``_prescan``) and the project index (``_index``) run before LibCST is imported
(the cache-hit path never imports it), so their questions are answered here; ``_resolve``
asks the same functions for LibCST's nodes and re-exports them. One answer each:

- :func:`import_binding` / :func:`from_import_binding`: the name an import binds and the dotted
  name bound to it (``import a.b.c`` binds ``a``; ``import a.b as x`` binds ``x`` to ``a.b``;
  ``from m import n as k`` binds ``k`` to ``m.n``; a relative import keeps its dots; ``*``
  binds nothing). :func:`import_bindings` applies them to an ``ast`` import statement, and
  :func:`module_imports` to the imports that run at module level (:func:`top_level`).
- :func:`resolve_name`: the absolute dotted name a callee spells through those imports.
- :func:`means_rocm_build`: does an expression mean exactly "this torch is a ROCm build"
  (``torch.version.hip is not None`` and its spellings, :func:`torch_names` giving the
  aliases of torch)?
- :func:`walk`: ``ast.walk``'s nodes in its order, less the leaves no question here reads
  (contexts, operators), two and a half times faster: the prefilter's walk of every file,
  the summaries' and the rules' walks of CPython's tree.
"""

from __future__ import annotations

import ast
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Set, Tuple

# (importing module or None, level) -> the absolute package a relative import names
Absolute = Callable[[Optional[str], int], Optional[str]]


def import_binding(name: str, asname: Optional[str]) -> Tuple[str, str]:
    """``import name [as asname]``: (the name it binds, the dotted name bound to it)."""
    if asname:
        return asname, name
    first = name.split(".", 1)[0]
    return first, first


def from_import_binding(module: Optional[str], level: int, name: str,
                        asname: Optional[str]) -> Optional[Tuple[str, str]]:
    """``from <level dots><module> import name [as asname]``: (the name it binds, the dotted
    name bound to it; a relative one keeps its dots), or None for ``*``."""
    if name == "*":
        return None
    base = "." * level + (module or "")
    return asname or name, (f"{base}.{name}" if module else base + name)


def import_bindings(stmt: ast.AST, absolute: Optional[Absolute] = None) -> Iterator[Tuple[str, str]]:
    """(name bound, dotted name bound to it) for each name an ``ast`` import binds. With
    ``absolute``, a relative import names its absolute module (and binds nothing when that is
    unknown); without, it keeps its dots."""
    if isinstance(stmt, ast.Import):
        for alias in stmt.names:
            yield import_binding(alias.name, alias.asname)
    elif isinstance(stmt, ast.ImportFrom):
        module, level = stmt.module, stmt.level
        if level and absolute is not None:
            module, level = absolute(stmt.module, stmt.level), 0
            if not module:
                return
        for alias in stmt.names:
            bound = from_import_binding(module, level, alias.name, alias.asname)
            if bound is not None:
                yield bound


def top_level(body: Sequence[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements that run at module level: the body, and blocks of if/try/with in it."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, (ast.If, ast.Try, ast.With)) or type(stmt).__name__ == "TryStar":
            for attr in ("body", "orelse", "finalbody"):
                yield from top_level(getattr(stmt, attr, ()))
            for handler in getattr(stmt, "handlers", ()):
                yield from top_level(handler.body)


def module_imports(body: Sequence[ast.stmt], absolute: Optional[Absolute] = None) -> Dict[str, str]:
    """name -> the dotted name the module-level imports bind to it (the last one wins)."""
    imports: Dict[str, str] = {}
    for stmt in top_level(body):
        for name, full in import_bindings(stmt, absolute):
            imports[name] = full
    return imports


def dotted(node: ast.AST) -> Optional[str]:
    """``a.b.c`` for a chain of names and attributes, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def resolve_name(imports: Dict[str, str], local_functions: Set[str], module: str, node: ast.AST) -> Optional[str]:
    """The absolute dotted name a callee spells, through the module's imports and its own
    top-level functions; None when unknown."""
    spelled = dotted(node)
    if spelled is None:
        return None
    root, _, rest = spelled.partition(".")
    if root in imports:
        full = imports[root]
        return f"{full}.{rest}" if rest else full
    if root in local_functions and not rest:
        return f"{module}.{root}"
    return None


def torch_names(imports: Dict[str, str]) -> Set[str]:
    """The names ``imports`` binds to torch itself."""
    return {name for name, full in imports.items() if full == "torch"}


def means_rocm_build(expr: ast.AST, torch_names: Set[str]) -> bool:
    """Does ``expr`` mean exactly "this torch is a ROCm build" (``t.version.hip is not None``,
    ``getattr(t.version, "hip", None) is not None``, ``!= None``, ``bool(...)``, ``t`` one of
    ``torch_names``)? ``_resolve.means_rocm_build`` hands LibCST's expressions to it."""
    def is_hip(node) -> bool:
        return any(dotted(node) == f"{t}.version.hip" for t in torch_names)

    def is_getattr_hip(node) -> bool:
        return (isinstance(node, ast.Call) and dotted(node.func) == "getattr" and len(node.args) == 3
                and not node.keywords
                and any(dotted(node.args[0]) == f"{t}.version" for t in torch_names)
                and isinstance(node.args[1], ast.Constant) and node.args[1].value == "hip"
                and isinstance(node.args[2], ast.Constant) and node.args[2].value is None)

    if isinstance(expr, ast.Compare) and len(expr.ops) == 1:
        comparator = expr.comparators[0]
        if (isinstance(expr.ops[0], (ast.IsNot, ast.NotEq)) and isinstance(comparator, ast.Constant)
                and comparator.value is None):
            return is_hip(expr.left) or is_getattr_hip(expr.left)
    if isinstance(expr, ast.Call) and dotted(expr.func) == "bool" and len(expr.args) == 1 and not expr.keywords:
        return is_hip(expr.args[0]) or is_getattr_hip(expr.args[0])
    return False


# Fields that never hold a node the prefilters and summaries look at: names and numbers, and the
# expression contexts and operators (leaves; ``walk`` passes them by).
# (Not ``name``: a string mostly, but ``type X = ...``'s is a Name, from Python 3.12.)
_NOT_CHILDREN = frozenset({"ctx", "op", "ops", "id", "attr", "arg", "asname", "module", "level", "kind",
                           "type_comment", "is_async", "conversion"})
_CHILD_FIELDS: Dict[type, Tuple[str, ...]] = {}


def child_fields(kind: type) -> Tuple[str, ...]:
    """The fields of an ``ast`` node type that ``walk`` reads."""
    fields = _CHILD_FIELDS.get(kind)
    if fields is None:
        fields = _CHILD_FIELDS[kind] = tuple(f for f in kind._fields if f not in _NOT_CHILDREN)
    return fields


def walk(tree: ast.AST, by_type: Optional[Dict[type, List[ast.AST]]] = None) -> List[ast.AST]:
    """Every node of ``tree`` in ``ast.walk``'s order (breadth first), less the expression
    contexts and operators, as a list; with ``by_type``, each node is also filed under its
    type there. About 2.5 times faster than ``ast.walk``."""
    todo = [tree]
    append = todo.append
    fields_of = _CHILD_FIELDS
    node_type = ast.AST
    for node in todo:  # the list grows while it is read: a queue
        cls = type(node)
        fields = fields_of.get(cls)
        if fields is None:
            fields = fields_of[cls] = tuple(f for f in cls._fields if f not in _NOT_CHILDREN)
        if by_type is not None:
            found = by_type.get(cls)
            if found is None:
                by_type[cls] = [node]
            else:
                found.append(node)
        for name in fields:
            value = getattr(node, name, None)
            if type(value) is list:
                for item in value:
                    if isinstance(item, node_type):
                        append(item)
            elif isinstance(value, node_type):
                append(value)
    return todo
