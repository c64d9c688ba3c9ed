"""LibCST's batched traversal, without rebuilding the tree on the way.

``libcst.visit_batched`` (like ``node.visit``) rebuilds every node it passes (each node's
``_visit_and_replace_children`` constructs a copy, which a visitor then throws away): on a
large file that is most of a traversal's time. :func:`visit_batched` makes the same calls in
the same order -- ``visit_<Type>`` before a node's children, ``leave_<Type>`` after them,
children in the order LibCST visits them, the same node objects -- and builds nothing. The
engine's one visit of a file and the parent records use it, and :func:`visit` is
``node.visit(visitor)`` for the analyses' own walks (a Triton kernel's body, a whole module).

The order of a node type's children is the order of the fields its own
``_visit_and_replace_children`` hands to LibCST's ``visit_*`` helpers, read once per type
from LibCST's source. Where that source cannot be read, a node's children are taken, in
LibCST's order, from one call of that method with a visitor that does not descend (it
rebuilds that one node). A visitor with attribute hooks (``visit_<Type>_<field>``), which
this walk does not call, gets LibCST's own traversal. ``tests/test_walk.py`` holds both to
the same calls on real code.
"""

from __future__ import annotations

import inspect
import re
import weakref
from typing import Callable, Dict, Iterable, List, Optional, Tuple, Type

import libcst as cst
from libcst._nodes.base import CSTNode

_FIELD = re.compile(r'\bvisit_(?:required|optional|sentinel|sequence|body_sequence|iterable|body_iterable)'
                    r'\(\s*self\s*,\s*"(\w+)"')
_ATTRIBUTE_HOOK = re.compile(r"^(?:visit|leave)_[A-Z][A-Za-z]*_\w+$")
_ORDER: Dict[type, Optional[Tuple[str, ...]]] = {}


def child_fields(cls: Type[CSTNode]) -> Optional[Tuple[str, ...]]:
    """The fields of ``cls`` that LibCST visits, in its order (None when unknown)."""
    try:
        return _ORDER[cls]
    except KeyError:
        pass
    try:
        source = inspect.getsource(cls._visit_and_replace_children)
    except (OSError, TypeError):
        order = None
    else:
        order = tuple(dict.fromkeys(_FIELD.findall(source)))
        if not order and "visit_" in source.split("\n", 1)[-1]:
            order = None  # it visits something the pattern does not read
    _ORDER[cls] = order
    return order


class _Recorder(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.children: List[CSTNode] = []

    def on_visit(self, node: CSTNode) -> bool:
        self.children.append(node)
        return False


def _recorded_children(node: CSTNode) -> List[CSTNode]:
    """``node``'s children in LibCST's order, from LibCST itself (the slow way)."""
    recorder = _Recorder()
    node._visit_and_replace_children(recorder)
    return recorder.children


def children(node: CSTNode) -> List[CSTNode]:
    """``node``'s children, in the order LibCST visits them."""
    fields = child_fields(type(node))
    if fields is None:
        return _recorded_children(node)
    out: List[CSTNode] = []
    for name in fields:
        child = getattr(node, name)
        if isinstance(child, CSTNode):
            out.append(child)
        elif type(child) is tuple or type(child) is list:
            out.extend(child)
    return out


def _has_attribute_hooks(names: Iterable[str]) -> bool:
    return any(_ATTRIBUTE_HOOK.match(name) for name in names)


# Leaf nodes that are only whitespace (44 % and 6 % of a module's nodes): a walk may pass
# them by (``skip_whitespace``) when no visitor has a method for them.
WHITESPACE_LEAVES = frozenset({cst.SimpleWhitespace, cst.Newline})


def visit_batched(node: CSTNode, visitors: Iterable[cst.BatchableCSTVisitor],
                  before_visit: Optional[Callable[[CSTNode], None]] = None,
                  after_leave: Optional[Callable[[CSTNode], None]] = None,
                  skip_whitespace: bool = False) -> None:
    """``libcst.visit_batched`` without rebuilding: every visitor's ``visit_<Type>`` in
    turn before a node's children (after ``before_visit``), ``leave_<Type>`` after them
    (then ``after_leave``). With ``skip_whitespace``, the nodes of ``WHITESPACE_LEAVES``
    that no visitor visits are passed by, hooks included."""
    visitors = list(visitors)
    methods: Dict[str, List[Callable]] = {}
    for batch in visitors:
        for name, function in _batched_methods(batch):
            methods.setdefault(name, []).append(function)
    if _has_attribute_hooks(methods):
        cst.visit_batched(node, visitors, before_visit=before_visit, after_leave=after_leave)
        return
    skip = frozenset(kind for kind in WHITESPACE_LEAVES if skip_whitespace
                     and f"visit_{kind.__name__}" not in methods and f"leave_{kind.__name__}" not in methods)
    visits: Dict[type, Tuple[Callable, ...]] = {}
    leaves: Dict[type, Tuple[Callable, ...]] = {}
    order = _ORDER
    is_node = _IS_NODE
    before = before_visit or _nothing
    after = after_leave or _nothing

    def walk(current: CSTNode) -> None:
        cls = type(current)
        calls = visits.get(cls)
        if calls is None:
            calls = visits[cls] = tuple(methods.get("visit_" + cls.__name__, ()))
            leaves[cls] = tuple(methods.get("leave_" + cls.__name__, ()))
        before(current)
        for call in calls:
            call(current)
        fields = order.get(cls, _UNREAD)
        if fields is _UNREAD or fields is None:
            for child in children(current):
                if type(child) not in skip:
                    walk(child)
        else:
            for name in fields:
                child = getattr(current, name)
                held = type(child)
                if held is tuple or held is list:
                    for item in child:
                        if type(item) not in skip:
                            walk(item)
                elif held not in skip and (is_node.get(held) or held not in is_node and _is_node(held)):
                    walk(child)
        for call in leaves[cls]:
            call(current)
        after(current)

    try:
        walk(node)
    finally:
        del walk  # a recursive closure is a cycle (its cell holds it): freed now, not by the collector


def visit(node: CSTNode, visitor: cst.CSTVisitor) -> None:
    """``node.visit(visitor)`` for a ``CSTVisitor``, without rebuilding: ``on_visit`` (or
    ``visit_<Type>``, whose ``False`` skips the children) before a node's children,
    ``on_leave`` (``leave_<Type>``) after them, in LibCST's order. A visitor with attribute
    hooks gets LibCST's own traversal."""
    kind = type(visitor)
    hooks = _HOOKS.get(kind)
    if hooks is None:
        hooks = _HOOKS[kind] = _has_attribute_hooks(name for name in _defined(kind) if _own(kind, name))
    if hooks:
        node.visit(visitor)
        return
    plain = kind.on_visit is cst.CSTVisitor.on_visit and kind.on_leave is cst.CSTVisitor.on_leave
    if not plain:
        on_visit, on_leave = visitor.on_visit, visitor.on_leave
    visits: Dict[type, Optional[Callable]] = {}
    leaves: Dict[type, Optional[Callable]] = {}
    skip = frozenset(k for k in WHITESPACE_LEAVES if plain and not _own(kind, f"visit_{k.__name__}")
                     and not _own(kind, f"leave_{k.__name__}"))
    order = _ORDER
    is_node = _IS_NODE

    def walk(current: CSTNode) -> None:
        cls = type(current)
        if plain:
            try:
                call = visits[cls]
            except KeyError:
                name = cls.__name__
                call = visits[cls] = getattr(visitor, "visit_" + name) if _own(kind, "visit_" + name) else None
                leaves[cls] = getattr(visitor, "leave_" + name) if _own(kind, "leave_" + name) else None
            descend = call is None or call(current) is not False
        else:
            descend = on_visit(current)
        if descend:  # the children as visit_batched reads them (inline: this runs per node)
            fields = order.get(cls, _UNREAD)
            if fields is _UNREAD or fields is None:
                for child in children(current):
                    if type(child) not in skip:
                        walk(child)
            else:
                for name in fields:
                    child = getattr(current, name)
                    held = type(child)
                    if held is tuple or held is list:
                        for item in child:
                            if type(item) not in skip:
                                walk(item)
                    elif held not in skip and (is_node.get(held) or held not in is_node and _is_node(held)):
                        walk(child)
        if plain:
            leave = leaves[cls]
            if leave is not None:
                leave(current)
        else:
            on_leave(current)

    try:
        walk(node)
    finally:
        del walk  # a recursive closure is a cycle (its cell holds it): freed now, not by the collector


# visitor class -> does it define attribute hooks; weak: the analyses define visitor classes
# inside functions, a new class on every call (a language server runs for hours)
_HOOKS: "weakref.WeakKeyDictionary[type, bool]" = weakref.WeakKeyDictionary()


def _own(kind: type, name: str) -> bool:
    """Does the visitor class ``kind`` define ``name`` itself (not LibCST's do-nothing)?"""
    found = getattr(kind, name, None)
    return found is not None and found is not getattr(cst.CSTVisitor, name, None)


def _defined(kind: type) -> Iterable[str]:
    """The names ``kind`` and its bases define, less those only LibCST's ``CSTVisitor`` and
    its bases do: every attribute hook of ``dir(kind)`` that ``_own`` finds is one of these,
    without reading LibCST's 1,400 do-nothing methods for each visitor class made in a call."""
    libcst_visitor = cst.CSTVisitor.__mro__
    return {name for klass in kind.__mro__ if klass not in libcst_visitor for name in vars(klass)}


# visitor class -> the names of its visit_ and leave_ methods, as
# ``BatchableCSTVisitor.get_visitors`` finds them on its first instance (that runs
# ``inspect.getmembers``, for each rule of each file: 4 % of a lint)
_BATCHED: "weakref.WeakKeyDictionary[type, Tuple[str, ...]]" = weakref.WeakKeyDictionary()


def _batched_methods(batch: cst.BatchableCSTVisitor) -> List[Tuple[str, Callable]]:
    """``batch.get_visitors().items()``, the names read once per class."""
    kind = type(batch)
    if kind.get_visitors is not cst.BatchableCSTVisitor.get_visitors:
        return list(batch.get_visitors().items())
    names = _BATCHED.get(kind)
    if names is None:
        names = _BATCHED[kind] = tuple(batch.get_visitors())
    return [(name, getattr(batch, name)) for name in names]


# node type -> is it a CSTNode (``isinstance`` of an abstract class is slow, and the walks
# ask it of every child)
_IS_NODE: Dict[type, bool] = {}


def _is_node(kind: type) -> bool:
    found = _IS_NODE[kind] = issubclass(kind, CSTNode)
    return found


def _nothing(_node: CSTNode) -> None:
    pass


_UNREAD = object()
