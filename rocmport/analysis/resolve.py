"""What a name refers to here: the one resolver of the rules and shared analyses.

Every question "what does this name (or dotted chain) refer to at this point" is answered
here, on LibCST's tree, or -- for the parts that must stay cheap -- without any tree:

- **What an import binds** (:func:`import_binding`, :func:`from_import_binding`, defined in
  ``_bindings`` with the other answers that need no LibCST): one answer for CPython's tree
  and LibCST's. ``import a.b.c`` binds ``a``; ``import a.b as x`` binds ``x``
  to ``a.b``; ``from m import n as k`` binds ``k`` to ``m.n``; a relative import keeps its dots
  (``from .a import b`` is ".a.b"); ``*`` binds nothing. The prefilter's binder
  (``_prescan``, on CPython's ``ast``, before LibCST runs), the project index and every LibCST
  walk below use these two functions. :func:`cst_import_bindings` applies them to LibCST's nodes.
- **Names bound in a scope, and the one value a name stands for** (:class:`ScopeBindings`):
  a statement-level walk per function, lambda or the module (nested functions and classes are
  bindings, not walked), then the lookup from the innermost function outwards. A parameter or
  a local assignment shadows a module constant; a name bound more than once gives no value.
  Used by the Triton analysis (``_triton.TritonAnalysis.bindings`` / ``resolve``) for
  ``BLOCK = 128`` constants, grids and config lists, and by the region analysis
  (``_regions.RegionAnalysis.names``: what a name was assigned, loops over generators, a logger
  rebound to a no-op, a name that shadows a compiled function), whose collection pass feeds
  a :class:`BindingRecorder` on the engine's one traversal instead of walking again.
  ``ScopeBindings(module, parent)``, ``parent`` being a function from a node to its parent
  node or None (``Rule.parent``, ``TritonAnalysis.parent``; LibCST's lazy metadata values
  already unwrapped), then ``scope_of(node)``, ``bindings(scope)``, ``assigned(scope)``,
  ``resolve(name, at)``. The region analysis keeps its own model of what is not a name:
  functions and classes as call targets, the instances a name or ``self.attr`` holds.
  ``meaning(name, at)`` says where a read's name is bound by Python's rules (the module, only
  imports of the function around it, another local binding), so that ``RuleContext.
  qualified_names`` answers a name bound several ways without LibCST's whole-module scope
  analysis; where LibCST reads a binding otherwise than Python does, it says it cannot tell.
- **The file's own ROCm test** (:func:`rocm_test_binding`): the module-level name bound once,
  to exactly "this torch is a ROCm build" (``IS_HIP = torch.version.hip is not None``), that
  fixed code may test instead of adding a gate; the engine's ``_choose_gate`` asks it.
  Whether an expression is such a test is decided by one recogniser,
  ``_bindings.means_rocm_build`` (on CPython's tree; :func:`means_rocm_build` hands it LibCST's
  expression), with the torch aliases an import binds (:func:`torch_aliases`).
- **Data flow through ScopeProvider** (:func:`assigned_values`, :func:`binding_reads`,
  :func:`dict_flow`): which expressions were assigned to a name that is read, and where else
  the same binding is read (``x["key"] = value``, ``x.update({...})``), for ROC2xx and ROC6xx.
- **Names of other modules of the project** (:func:`imported_as`, :func:`callee_summary`,
  :func:`constant_value`), through the project index.

Everything is best effort and bounded: an unknown answer is empty or None, never a guess.
The lenient "does this test mention ROCm" check that decides whether code is already gated
(``base.mentions_rocm`` / ``Rule.in_rocm_branch``) is a different question and stays there.
"""

from __future__ import annotations

import ast
import re
from typing import Callable, Dict, Iterator, List, Optional, Set, Tuple, Union

import libcst as cst
from libcst.metadata import ParentNodeProvider, ScopeProvider

from . import bindings as _bindings
from . import index as _index
from . import walk as _walk
from .bindings import from_import_binding, import_binding
from .syntax import dotted_name, literal_string

# ----------------------------------------------------------------------------------------
# What an import binds (any tree)
# ----------------------------------------------------------------------------------------

def cst_import_bindings(node: Union[cst.Import, cst.ImportFrom]) -> Iterator[Tuple[str, str, cst.ImportAlias]]:
    """(name bound, dotted name bound to it, the alias) for each name a LibCST import binds."""
    if isinstance(node, cst.Import):
        for alias in node.names:
            full = dotted_name(alias.name)
            if full is not None:
                yield import_binding(full, _asname(alias)) + (alias,)
        return
    if isinstance(node.names, cst.ImportStar):
        return
    module = dotted_name(node.module) if node.module is not None else None
    for alias in node.names:
        name = dotted_name(alias.name)
        bound = from_import_binding(module, len(node.relative), name, _asname(alias)) if name else None
        if bound is not None:
            yield bound + (alias,)


def _asname(alias: cst.ImportAlias) -> Optional[str]:
    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
        return alias.asname.name.value
    return None


def _accesses(rule, name: cst.Name):
    local = _local_accesses(rule, name)
    if local is not None:
        return local
    scope = rule.get_metadata(ScopeProvider, name, None)
    if scope is None:
        return []
    try:
        return list(scope.accesses[name])
    except Exception:  # pragma: no cover - libcst raises for odd nodes
        return []


def _local_accesses(rule, name: cst.Name):
    """``_accesses`` of a name bound in a function or class, from ScopeProvider's analysis
    of the one top-level statement around it (LibCST's of the whole module reads every
    statement: a second on a large module). A binding of a function, class or comprehension
    scope is seen from inside that statement only, so its accesses and assignments are the
    same there; None where a referent is the module's or a builtin (or none is found)."""
    statement = name
    parent = rule.get_metadata(ParentNodeProvider, statement, None)
    while parent is not None and not isinstance(parent, cst.Module):
        statement, parent = parent, rule.get_metadata(ParentNodeProvider, parent, None)
    if parent is None or not isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
        return None
    scopes = rule.context.shared("resolve:statement_scopes", lambda _: {})
    found = scopes.get(id(statement))
    if found is None:
        wrapper = cst.MetadataWrapper(cst.Module(body=[statement]), unsafe_skip_copy=True)
        found = scopes[id(statement)] = (statement, wrapper.resolve(ScopeProvider))
    scope = found[1].get(name)
    if scope is None or isinstance(scope, (cst.metadata.GlobalScope, cst.metadata.BuiltinScope)):
        return None
    try:
        accesses = list(scope.accesses[name])
    except Exception:  # pragma: no cover - libcst raises for odd nodes
        return None
    if not accesses or any(not access.referents or any(
            isinstance(getattr(referent, "scope", None), (cst.metadata.GlobalScope, cst.metadata.BuiltinScope))
            for referent in access.referents) for access in accesses):
        return None
    return accesses


def _assignments(rule, name: cst.Name):
    out = []
    for access in _accesses(rule, name):
        for referent in access.referents:
            if hasattr(referent, "node") and referent not in out:
                out.append(referent)
    return out


def assigned_values(rule, name: cst.Name) -> List[cst.BaseExpression]:
    """Expressions bound to ``name`` by plain assignments (``name = value``,
    ``name: T = value``) of the binding(s) the read ``name`` refers to."""
    values: List[cst.BaseExpression] = []
    for assignment in _assignments(rule, name):
        node = assignment.node
        if not isinstance(node, cst.Name):
            continue
        parent = rule.get_metadata(ParentNodeProvider, node, None)
        if isinstance(parent, cst.AssignTarget):
            assign = rule.get_metadata(ParentNodeProvider, parent, None)
            if isinstance(assign, cst.Assign):
                values.append(assign.value)
        elif isinstance(parent, cst.AnnAssign) and parent.target is node and parent.value is not None:
            values.append(parent.value)
    return values


def only_assigned(rule, name: cst.Name) -> Optional[List[cst.BaseExpression]]:
    """The values of the plain assignments that bind what ``name`` reads, where nothing else
    binds it (a parameter, a loop, ``+=``, an import, ``global``): None otherwise."""
    assignments = _assignments(rule, name)
    values = assigned_values(rule, name)
    if not assignments or len(values) != len(assignments):
        return None
    return values


def binding_reads(rule, name: cst.Name) -> List[cst.Name]:
    """Every read of the binding(s) that ``name`` refers to (``name`` itself included)."""
    reads: List[cst.Name] = []
    for assignment in _assignments(rule, name):
        for access in getattr(assignment, "references", ()):
            node = access.node
            if isinstance(node, cst.Name) and node not in reads:
                reads.append(node)
    return reads


def string_subscript(node: cst.CSTNode) -> Optional[Tuple[cst.BaseExpression, str]]:
    """``(container, "key")`` for ``container["key"]``, else None."""
    if (isinstance(node, cst.Subscript) and len(node.slice) == 1
            and isinstance(node.slice[0].slice, cst.Index)):
        key = literal_string(node.slice[0].slice.value)
        if key is not None:
            return node.value, key
    return None


def dict_items(node: cst.BaseExpression) -> Iterator[Tuple[str, cst.BaseExpression]]:
    """``(key, value)`` for the literal-string keys of a dict display or ``dict(k=v)``."""
    if isinstance(node, cst.Dict):
        for element in node.elements:
            if isinstance(element, cst.DictElement):
                key = literal_string(element.key)
                if key is not None:
                    yield key, element.value
    elif isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "dict":
        for arg in node.args:
            if arg.keyword is not None:
                yield arg.keyword.value, arg.value
            elif arg.star == "**" and isinstance(arg.value, cst.Dict):
                yield from dict_items(arg.value)


def call_items(call: cst.Call) -> Iterator[Tuple[str, cst.BaseExpression]]:
    """``(key, value)`` handed to a mapping-style call such as ``d.update(...)`` or
    ``config.patch(...)``: a literal dict, keywords, a literal ``**{...}``."""
    for arg in call.args:
        if arg.keyword is not None:
            yield arg.keyword.value, arg.value
        elif arg.star == "**" and isinstance(arg.value, cst.Dict):
            yield from dict_items(arg.value)
        elif arg.star == "" and isinstance(arg.value, (cst.Dict, cst.Call)):
            yield from dict_items(arg.value)


def dict_flow(rule, value: cst.BaseExpression, depth: int = 0) -> Iterator[Tuple[str, cst.BaseExpression]]:
    """Keys and values that reach a dict expression: a dict display, ``dict(...)``, or a
    name bound to one, together with ``name["key"] = value`` and ``name.update(...)``."""
    if depth > 3:
        return
    if isinstance(value, (cst.Dict, cst.Call)):
        yield from dict_items(value)
        return
    if not isinstance(value, cst.Name):
        return
    for bound in assigned_values(rule, value):
        yield from dict_flow(rule, bound, depth + 1)
    for read in binding_reads(rule, value):
        parent = rule.get_metadata(ParentNodeProvider, read, None)
        grand = rule.get_metadata(ParentNodeProvider, parent, None) if parent is not None else None
        sub = string_subscript(parent) if parent is not None else None
        if sub is not None and sub[0] is read and isinstance(grand, cst.AssignTarget):
            assign = rule.get_metadata(ParentNodeProvider, grand, None)
            if isinstance(assign, cst.Assign):
                yield sub[1], assign.value
        elif (isinstance(parent, cst.Attribute) and parent.value is read and parent.attr.value == "update"
              and isinstance(grand, cst.Call) and grand.func is parent):
            yield from call_items(grand)


def paren(rule, node: cst.CSTNode, text: str) -> str:
    """``text`` in parentheses unless ``node`` is a whole assigned value, argument or dict
    value, where a conditional expression needs none."""
    parent = rule.get_metadata(ParentNodeProvider, node, None)
    if isinstance(parent, (cst.DictElement, cst.Assign, cst.AnnAssign, cst.Arg)):
        return text
    return f"({text})"


def operand(rule, node: cst.BaseExpression) -> str:
    """The source of ``node`` as the ``else`` arm of a conditional expression."""
    source = rule.context.source(node)
    if isinstance(node, (cst.Lambda, cst.NamedExpr, cst.Yield)) and not node.lpar:
        return f"({source})"
    return source


# ----------------------------------------------------------------------------------------
# The project index (rocmport.analysis.index), as rules see it from one file
# ----------------------------------------------------------------------------------------

def project_index(rule):
    """The project index of the run, or an index of this one file when it is linted alone."""
    ctx = rule.context
    if ctx.index is not None:
        return ctx.index
    return ctx.shared("own_index", lambda c: _index.ProjectIndex([c.path]))


def module_name(rule) -> str:
    return rule.context.shared("module_name", lambda c: project_index(rule).module_name(c.path) or "__main__")


def own_summary(rule):
    """This file's summary, from its current text (a fix pass sees its own edits)."""
    ctx = rule.context

    def build(c):
        if c.facts is None or c.facts.tree is None:
            return None
        return project_index(rule).summary(module_name(rule), tree=c.facts.tree, path=c.path,
                                           rebinds="global" in c.text or "nonlocal" in c.text)

    return ctx.shared("own_summary", build)


def imported_as(rule, name: str) -> Optional[str]:
    """The absolute dotted name that a module-level import (the only binding of ``name``)
    binds to ``name``; relative imports resolved against this module."""
    facts = rule.context.facts
    if facts is None or facts.binding_kinds().get(name) != {"import"}:
        return None
    bound = facts.binding_kinds_imports().get(name, set())
    if len(bound) != 1:
        return None
    full = next(iter(bound))
    if full.startswith("."):
        level = len(full) - len(full.lstrip("."))
        base = project_index(rule).absolute(module_name(rule), None, level)
        rest = full[level:]
        if not base:
            return rest or None
        return f"{base}.{rest}" if rest else base
    return full


def callee_summary(rule, func: cst.BaseExpression):
    """The index's summary of the project function (or partial) a call's callee names: a
    module-level function or partial of this file, or one imported from the project
    (``wrap``, ``pkg.mod.wrap``, ``mod.wrap``); None otherwise."""
    dotted = dotted_name(func)
    if dotted is None:
        return None
    root, _, rest = dotted.partition(".")
    facts = rule.context.facts
    if facts is None:
        return None
    kinds = facts.binding_kinds().get(root)
    if not rest and kinds == {"module"}:
        own = own_summary(rule)
        return own.functions.get(root) if own is not None else None
    full = imported_as(rule, root)
    if full is None:
        return None
    return project_index(rule).function(f"{full}.{rest}" if rest else full)


def constant_value(rule, node: cst.BaseExpression):
    """(True, value) when ``node`` names a literal constant of this module or of a project
    module (assigned once, at module level), else (False, None)."""
    dotted = dotted_name(node)
    facts = rule.context.facts
    if dotted is None or facts is None:
        return False, None
    root, _, rest = dotted.partition(".")
    kinds = facts.binding_kinds().get(root)
    if not rest and kinds == {"module"}:
        own = own_summary(rule)
        if own is not None and root in own.constants:
            return True, own.constants[root]
        return False, None
    full = imported_as(rule, root)
    if full is None:
        return False, None
    found = project_index(rule).constant(f"{full}.{rest}" if rest else full)
    return (True, found[1]) if found is not None else (False, None)


def function_summary(rule, node: cst.FunctionDef):
    """This file's summary of a module-level function or a method of a module-level class."""
    own = own_summary(rule)
    if own is None:
        return None
    parent = rule.get_metadata(ParentNodeProvider, node, None)
    if isinstance(parent, cst.Module):
        found = own.functions.get(node.name.value)
        return found if found is not None and found.kind == "function" else None
    block = parent
    cls = rule.get_metadata(ParentNodeProvider, block, None) if block is not None else None
    if isinstance(cls, cst.ClassDef) and isinstance(rule.get_metadata(ParentNodeProvider, cls, None), cst.Module):
        return own.methods.get(f"{cls.name.value}.{node.name.value}")
    return None


def call_arguments(call: cst.Call, summary, target: str) -> Iterator[Tuple[cst.BaseExpression, Optional[str]]]:
    """(value, parameter) for the arguments of a call of a project function that reach
    ``target`` ("mode", "options", "cudagraphs"), also inside a literal ``**{...}``; the
    parameter is None for a keyword that the function takes through ``**kwargs``."""
    position = 0
    for arg in call.args:
        if arg.star == "*":
            break
        if arg.star == "**":
            if isinstance(arg.value, cst.Dict):
                for key, value in dict_items(arg.value):
                    if summary.target(key, None) == target:
                        yield value, (key if key in summary.keywords else None)
            continue
        if arg.keyword is not None:
            if summary.target(arg.keyword.value, None) == target:
                key = arg.keyword.value
                yield arg.value, (key if key in summary.keywords else None)
        else:
            if summary.target(None, position) == target:
                yield arg.value, summary.positional[position]
            position += 1


# ----------------------------------------------------------------------------------------
# Names bound in a scope, without ScopeProvider
# ----------------------------------------------------------------------------------------

class ScopeBindings:
    """name -> what binds it in a function, lambda or the module, and the one value a name
    stands for at a node. ``parent`` maps a node to its parent (None at the top). The tables
    are made one scope at a time when asked, or all at once by a :class:`BindingRecorder`
    that an analysis fed during its own traversal (:meth:`adopt`)."""

    def __init__(self, module: cst.Module, parent: Callable[[cst.CSTNode], Optional[cst.CSTNode]]) -> None:
        self.module = module
        self.parent = parent
        self._cache: Dict[int, Dict[str, List[cst.CSTNode]]] = {}
        self._declared: Dict[int, Dict[str, str]] = {}

    def adopt(self, recorder: "BindingRecorder") -> None:
        """Take the tables of every scope a recorder saw (a walk of the whole module)."""
        self._cache.update(recorder.tables)
        self._declared.update(recorder.declared)

    def scope_of(self, node: cst.CSTNode) -> cst.CSTNode:
        """The function or lambda around ``node``, else the module."""
        current = self.parent(node)
        while current is not None:
            if isinstance(current, (cst.FunctionDef, cst.Lambda)):
                return current
            current = self.parent(current)
        return self.module

    def bindings(self, scope: cst.CSTNode) -> Dict[str, List[cst.CSTNode]]:
        """name -> the values bound to it directly in ``scope`` (nested functions and classes
        are bindings, not walked). Bindings that are not plain assignments (loops, augmented
        assignments, parameters, imports) are recorded as the binding node."""
        key = id(scope)
        found = self._cache.get(key)
        if found is None:
            recorder = BindingRecorder(scope)
            _walk.visit(scope, recorder)
            found = self._cache[key] = recorder.tables.get(key, {})
            self._declared[key] = recorder.declared.get(key, {})
        return found

    def declared(self, scope: cst.CSTNode) -> Dict[str, str]:
        """name -> "global" or "nonlocal", as ``scope``'s own statements declare it."""
        self.bindings(scope)
        return self._declared.get(id(scope), {})

    def meaning(self, name: str, at: cst.CSTNode, classes_bind: bool = True):
        """Where the name ``name`` read at ``at`` is bound, by Python's rules: ``("module",
        None)`` (the module's binding, a builtin, or none), ``("imports", {dotted names})``
        (only imports bind it in the function that holds the read), ``("local", None)``
        (another binding there, a parameter say), or None where this cannot tell (a class
        body that may bind it -- pass ``classes_bind=False`` when no class body binds the
        name --, a comprehension's name seen from its function, an import beside another
        binding). QualifiedNameProvider's question, without its whole-module analysis."""
        holder = self.parent(at)
        if isinstance(holder, cst.Param) and holder.name is at:  # a parameter's own name: its function's
            parameters = self.parent(holder)
            function = self.parent(parameters) if parameters is not None else None
            chain = [function] if isinstance(function, (cst.FunctionDef, cst.Lambda)) else None
        else:
            chain = self._read_scopes(at)
        if chain is None:
            return None
        for scope in chain:
            if isinstance(scope, cst.ClassDef):
                if classes_bind:
                    return None
                continue
            if not isinstance(scope, (cst.FunctionDef, cst.Lambda)):  # a comprehension
                targets, walrus = _comprehension_names(scope)
                if name in targets:
                    return ("local", None)
                if name in walrus:  # Python binds it outside, the provider inside
                    return None
                continue
            declared = self.declared(scope).get(name)
            if declared == "global":
                return ("module", None)
            if declared == "nonlocal":
                continue
            bound = self.bindings(scope).get(name)
            if not bound:
                continue
            if any(isinstance(value, _UNSURE) for value in bound):
                return None
            aliases = [value for value in bound if isinstance(value, cst.ImportAlias)]
            if not aliases:
                return ("local", None)
            if len(aliases) < len(bound):
                return None
            imported: Set[str] = set()
            for alias in aliases:
                statement = self.parent(alias)
                if not isinstance(statement, (cst.Import, cst.ImportFrom)):
                    return None
                imported.update(full for _, full, each in cst_import_bindings(statement) if each is alias)
            return ("imports", imported)
        return ("module", None)

    def _read_scopes(self, at: cst.CSTNode) -> Optional[List[cst.CSTNode]]:
        """The scopes a name read at ``at`` looks in, innermost first, the module left out:
        the functions and lambdas whose bodies hold it, the comprehensions (less the first
        iterable, evaluated outside), and a class only where its body holds the read
        directly. None if the way up does not reach the module."""
        chain: List[cst.CSTNode] = []
        below, child, current = None, at, self.parent(at)
        while current is not None:
            if isinstance(current, (cst.FunctionDef, cst.Lambda)):
                if child is current.body:
                    chain.append(current)
            elif isinstance(current, cst.ClassDef):
                if child is current.body and not chain:
                    chain.append(current)
            elif isinstance(current, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
                if not (child is current.for_in and below is current.for_in.iter):
                    chain.append(current)
            below, child, current = child, current, self.parent(current)
        return chain if child is self.module else None

    def assigned(self, scope: cst.CSTNode) -> Dict[str, List[cst.BaseExpression]]:
        """name -> the values plain assignments (``name = value``, ``name: T = value``) bind
        to it directly in ``scope``."""
        return {name: plain for name, values in self.bindings(scope).items()
                if (plain := [v for v in values if _is_assigned_value(v)])}

    def resolve(self, name: str, at: cst.CSTNode) -> Optional[cst.CSTNode]:
        """The one value bound to ``name`` where ``at`` is (its function, then the enclosing
        ones, then the module); None when it is bound more than once or not at all."""
        scope = self.scope_of(at)
        while True:
            bound = self.bindings(scope).get(name)
            if bound:
                return bound[0] if len(bound) == 1 else None
            if scope is self.module:
                return None
            scope = self.scope_of(scope)


# Bindings that ``meaning`` leaves to QualifiedNameProvider: a comprehension's own name,
# recorded in its function; and three that Python makes local but the provider reads as the
# module's binding (``del x``, ``x := ...`` in a comprehension, a ``case`` capture).
_UNSURE = (cst.CompFor, cst.Del, cst.NamedExpr, cst.MatchAs, cst.MatchStar, cst.MatchMapping)


def _comprehension_names(node: cst.CSTNode) -> Tuple[Set[str], Set[str]]:
    """The names a comprehension's loops bind, and those ``:=`` binds anywhere in it."""
    targets: Set[str] = set()
    loop = getattr(node, "for_in", None)
    while loop is not None:
        _target_names(loop.target, targets)
        loop = loop.inner_for_in
    walrus: Set[str] = set()
    todo = [node]
    while todo:
        current = todo.pop()
        if isinstance(current, cst.NamedExpr):
            _target_names(current.target, walrus)
        todo.extend(_walk.children(current))
    return targets, walrus


def _target_names(target: cst.CSTNode, names: Set[str]) -> None:
    if isinstance(target, cst.Name):
        names.add(target.value)
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            _target_names(element.value, names)
    elif isinstance(target, cst.StarredElement):
        _target_names(target.value, names)


def _is_assigned_value(value: cst.CSTNode) -> bool:
    # a plain assignment records its value; every other binding its node (``x := v``, and
    # ``*rest`` of an unpacking, both expressions too)
    return isinstance(value, cst.BaseExpression) and not isinstance(value, (cst.NamedExpr, cst.StarredElement))


class BindingRecorder(cst.CSTVisitor):
    """Records, per function, lambda and the module, what binds each name directly in it.

    Walked from ``root`` (a scope): nested functions and classes become bindings of the scope
    and are not entered. Walked from the module with ``nested=True`` (or fed the same visits
    by another traversal, :class:`ScopeBindings.adopt`), every scope's table is made at once:
    a function, lambda or class body opens a scope of its own (a class body's names are
    attributes, recorded nowhere)."""

    def __init__(self, root: cst.CSTNode, nested: bool = False) -> None:
        self.root = root
        self.nested = nested
        self.tables: Dict[int, Dict[str, List[cst.CSTNode]]] = {id(root): {}}
        self.declared: Dict[int, Dict[str, str]] = {}  # scope -> name -> "global" / "nonlocal"
        self._stack: List[Optional[Dict[str, List[cst.CSTNode]]]] = [self.tables[id(root)]]
        self._scopes: List[Optional[int]] = [id(root)]

    def _bind(self, name: str, value: cst.CSTNode) -> None:
        table = self._stack[-1]
        if table is not None:
            table.setdefault(name, []).append(value)

    def add(self, target: cst.CSTNode, value: cst.CSTNode) -> None:
        if isinstance(target, cst.Name):
            self._bind(target.value, value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self.add(element.value, element)  # unpacking: not a known value
        elif isinstance(target, cst.StarredElement):
            self.add(target.value, target)

    def _open(self, node: cst.CSTNode, table: Optional[Dict[str, List[cst.CSTNode]]]) -> bool:
        if not self.nested:
            return False
        if table is not None:
            self.tables[id(node)] = table
        self._stack.append(table)
        self._scopes.append(id(node) if table is not None else None)
        return True

    def _close(self, node: cst.CSTNode) -> None:
        if self.nested and node is not self.root:
            self._stack.pop()
            self._scopes.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        if node is self.root:
            return True
        self._bind(node.name.value, node)
        return self._open(node, {})

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._close(original_node)

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self._bind(node.name.value, node)
        return self._open(node, None)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self._close(original_node)

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        if node is self.root:
            return True
        return self._open(node, {})

    def leave_Lambda(self, original_node: cst.Lambda) -> None:
        self._close(original_node)

    def visit_Param(self, node: cst.Param) -> None:
        self._bind(node.name.value, node)

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self.add(target.target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self.add(node.target, node.value if node.value is not None else node)  # ``x: int`` binds too

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self.add(node.target, node)

    def visit_For(self, node: cst.For) -> None:
        self.add(node.target, node)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self.add(node.target, node)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self.add(node.target, node)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self.add(node.asname.name, node)

    def visit_Import(self, node: cst.Import) -> None:
        for name, _full, alias in cst_import_bindings(node):
            self._bind(name, alias)

    visit_ImportFrom = visit_Import

    # the other bindings: recorded as the binding node (no value)
    def visit_Del(self, node: cst.Del) -> None:
        self.add(node.target, node)

    def visit_ExceptHandler(self, node: Union[cst.ExceptHandler, cst.ExceptStarHandler]) -> None:
        if node.name is not None:
            self.add(node.name.name, node)

    visit_ExceptStarHandler = visit_ExceptHandler

    def visit_MatchAs(self, node: Union[cst.MatchAs, cst.MatchStar]) -> None:
        if node.name is not None:
            self._bind(node.name.value, node)

    visit_MatchStar = visit_MatchAs

    def visit_MatchMapping(self, node: cst.MatchMapping) -> None:
        if node.rest is not None:
            self._bind(node.rest.value, node)

    def visit_TypeAlias(self, node: cst.TypeAlias) -> None:
        self._bind(node.name.value, node)

    def visit_TypeParam(self, node: cst.TypeParam) -> None:
        self._bind(node.param.name.value, node)

    def visit_Global(self, node: Union[cst.Global, cst.Nonlocal]) -> None:
        scope = self._scopes[-1]
        if scope is not None:
            kind = "global" if isinstance(node, cst.Global) else "nonlocal"
            for item in node.names:
                self.declared.setdefault(scope, {})[item.name.value] = kind

    visit_Nonlocal = visit_Global

    # the visits that make the tables, for a traversal that feeds a recorder
    EVENTS = ("visit_FunctionDef", "leave_FunctionDef", "visit_ClassDef", "leave_ClassDef", "visit_Lambda",
              "leave_Lambda", "visit_Param", "visit_Assign", "visit_AnnAssign", "visit_AugAssign", "visit_For",
              "visit_CompFor", "visit_NamedExpr", "visit_WithItem", "visit_Import", "visit_ImportFrom",
              "visit_Del", "visit_ExceptHandler", "visit_ExceptStarHandler", "visit_MatchAs", "visit_MatchStar",
              "visit_MatchMapping", "visit_TypeAlias", "visit_TypeParam", "visit_Global", "visit_Nonlocal")


# ----------------------------------------------------------------------------------------
# The file's own ROCm test
# ----------------------------------------------------------------------------------------

def torch_aliases(module: cst.Module) -> Set[str]:
    """The names that a module-level import statement of the body binds to ``torch``
    (``import torch``, ``import torch as t``, ``import torch.cuda``)."""
    names = set()
    for stmt in module.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.Import):
                    names.update(name for name, full, _alias in cst_import_bindings(small) if full == "torch")
    return names


def means_rocm_build(expr: cst.BaseExpression, torch_names: Set[str]) -> bool:
    """Does ``expr`` mean exactly "this torch is a ROCm build" (``t.version.hip is not None``,
    ``getattr(t.version, "hip", None) is not None``, ``!= None``, ``bool(...)``, ``t`` one of
    ``torch_names``)? The recogniser is ``_bindings.means_rocm_build``, on CPython's tree."""
    if not torch_names:
        return False
    # Only ``... is not None`` / ``... != None`` or ``bool(...)`` can be one: skip printing
    # anything else (a module-level table can be large).
    if isinstance(expr, cst.Comparison):
        if len(expr.comparisons) != 1 or dotted_name(expr.comparisons[0].comparator) != "None":
            return False
    elif not (isinstance(expr, cst.Call) and dotted_name(expr.func) == "bool"):
        return False
    source = cst.Module(body=[]).code_for_node(expr)
    if "hip" not in source:
        return False
    try:
        tree = ast.parse(f"(\n{source}\n)", mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return _bindings.means_rocm_build(tree.body, torch_names)


def rocm_test_binding(module: cst.Module, text: str) -> Optional[Tuple[str, cst.SimpleStatementLine]]:
    """The file's own ROCm test that fixed code may use: (name, its statement) for a name that
    one module-level statement binds, once in the whole file, to :func:`means_rocm_build`."""
    torch_names = torch_aliases(module)
    if not torch_names:
        return None
    bindings: Dict[str, List[Tuple[cst.SimpleStatementLine, cst.BaseExpression]]] = {}
    for stmt in module.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if isinstance(small, cst.Assign) and len(small.targets) == 1:
                target, value = small.targets[0].target, small.value
            elif isinstance(small, cst.AnnAssign) and small.value is not None:
                target, value = small.target, small.value
            else:
                continue
            if isinstance(target, cst.Name):
                bindings.setdefault(target.value, []).append((stmt, value))
    for name, assigned in bindings.items():
        if len(assigned) == 1 and means_rocm_build(assigned[0][1], torch_names):
            if len(re.findall(rf"(?<![\w.]){re.escape(name)}\s*=[^=]", text)) == 1:
                return name, assigned[0][0]
    return None
