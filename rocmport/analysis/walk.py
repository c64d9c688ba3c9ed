"""LibCST's batched traversal, without rebuilding the tree on the way.

``libcst.visit_batched`` (like ``node.visit``) rebuilds every node it passes (each node's
``_visit_and_replace_children`` constructs a copy, which a visitor then throws away): on a
large file that is most of a traversal's time. :func:`visit_batched` makes the same calls in
the same order -- ``visit_<Type>`` before a node's children, ``leave_<Type>`` after them,
children in the order LibCST visits them, the same node objects -- and builds nothing. The
engine's one visit of a file and the parent records use it, and :func:`visit` is
``node.visit(visitor)`` for the analyses' own walks (a Triton kernel's body, a whole module).

The order of a node type's children is learnt from LibCST itself: the first nodes of a type
have their children taken, in LibCST's order, from one call of their own
``_visit_and_replace_children`` with a visitor that does not descend (it rebuilds that one
node), and each such call says in which order the fields it met come (:class:`_Order`).
Once the fields a node holds children in are known to be in a known order, its children are
read straight from those fields. Nothing is read from LibCST's source. A visitor with attribute
hooks (``visit_<Type>_<field>``), which this walk does not call, gets LibCST's own traversal.
``tests/test_walk.py`` holds both to the same calls on real code.
"""

from __future__ import annotations

import dataclasses
import re
import weakref
from typing import Callable, Dict, Iterable, List, Optional, Tuple

import libcst as cst
from libcst import CSTNode

_ATTRIBUTE_HOOK = re.compile(r"^(?:visit|leave)_[A-Z][A-Za-z]*_\w+$")


class _Order:
    """What LibCST's traversals of a node type have shown of the order of its fields.

    ``fields``: the fields known to come in that order (each pair of them was seen together);
    ``unplaced``: the type's other fields. A node whose children all sit in ``fields`` is
    read from them; one with a child in an ``unplaced`` field is recorded from LibCST, and the
    order learnt grows. LibCST visits a type's fields in one fixed order, so what any two
    traversals show agrees."""

    __slots__ = ("fields", "unplaced", "every", "before", "seen", "broken")
    # ``seen``: field -> how many learnt nodes held children in it

    def __init__(self, cls: type):
        self.fields: Tuple[str, ...] = ()
        self.every: Tuple[str, ...] = tuple(f.name for f in dataclasses.fields(cls))
        self.unplaced: Tuple[str, ...] = self.every
        self.before: set = set()  # (a, b): a's children come before b's
        self.seen: Dict[str, int] = {}
        self.broken = False  # a field's children were not together: always ask LibCST

    def learn(self, node: CSTNode, recorded: List[CSTNode]) -> None:
        if self.broken:
            return
        where: Dict[int, str] = {}
        for name in self.every:
            value = getattr(node, name, None)
            if isinstance(value, CSTNode):
                where[id(value)] = name
            elif type(value) is tuple or type(value) is list:
                for item in value:
                    where[id(item)] = name
        sequence: List[str] = []
        for child in recorded:
            name = where.get(id(child))
            if name is None:  # a child not held in a field as such: ask LibCST each time
                self.broken = True
                return
            if not sequence or sequence[-1] != name:
                if name in sequence:
                    self.broken = True
                    return
                sequence.append(name)
        for i, a in enumerate(sequence):
            self.seen[a] = self.seen.get(a, 0) + 1
            for b in sequence[i + 1:]:
                self.before.add((a, b))
        # the known order: the most used fields first, each kept if its order with every one
        # kept before it is known (a chain of the order LibCST visits them in)
        placed: List[str] = []
        for f in sorted(self.seen, key=lambda name: -self.seen[name]):
            if all((f, g) in self.before or (g, f) in self.before for g in placed):
                placed.append(f)
        rank = {f: sum((g, f) in self.before for g in placed) for f in placed}  # its predecessors
        self.fields = tuple(sorted(placed, key=rank.__getitem__))
        self.unplaced = tuple(name for name in self.every if name not in rank)


_ORDER: Dict[type, _Order] = {}


def _order(cls: type) -> _Order:
    found = _ORDER.get(cls)
    if found is None:
        found = _ORDER[cls] = _Order(cls)
    return found


def _holds_child(value) -> bool:
    return isinstance(value, CSTNode) or ((type(value) is tuple or type(value) is list) and len(value) > 0)


def _known(order: _Order, node: CSTNode) -> bool:
    """Are ``node``'s children all in fields whose order is known?"""
    if order.broken:
        return False
    for name in order.unplaced:
        if _holds_child(getattr(node, name, None)):
            return False
    return True


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
    order = _order(type(node))
    if not _known(order, node):
        recorded = _recorded_children(node)
        order.learn(node, recorded)
        return recorded
    out: List[CSTNode] = []
    for name in order.fields:
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
        known = order.get(cls)
        if known is None or ((known.unplaced or known.broken) and not _known(known, current)):
            for child in children(current):
                if type(child) not in skip:
                    walk(child)
        else:
            for name in known.fields:
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
            known = order.get(cls)
            if known is None or ((known.unplaced or known.broken) and not _known(known, current)):
                for child in children(current):
                    if type(child) not in skip:
                        walk(child)
            else:
                for name in known.fields:
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

