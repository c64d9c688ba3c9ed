"""The traversal that does not rebuild the tree (rocmport.analysis.walk) makes LibCST's calls.

Compared on real code (rocmport's own sources, the test fixtures and, where torch is
installed, some of torch's largest modules, which use most of the grammar): the same nodes,
entered and left in the same order, for ``visit_batched`` with hooks; the children read from
LibCST's source equal the children LibCST itself visits, for every node type met.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import List, Tuple

import libcst as cst
import pytest

from rocmport.analysis import walk as _walk

ROOT = Path(__file__).resolve().parent.parent


def _corpus() -> List[Path]:
    files = sorted((ROOT / "rocmport").rglob("*.py")) + sorted((ROOT / "tests" / "fixtures").rglob("*.py"))
    spec = importlib.util.find_spec("torch")
    if spec is not None and spec.origin:
        base = Path(spec.origin).parent
        files += [base / name for name in ("_inductor/ir.py", "_tensor.py", "nn/modules/module.py",
                                           "_dynamo/variables/builtin.py", "testing/_internal/common_utils.py")
                  if (base / name).exists()]
    return files


# Syntax the corpus may not hold: match statements, walrus, star-excepts, f-string specs,
# decorators, async, type parameters, lambdas with defaults, global/nonlocal.
_GRAMMAR = '''
import a.b as c
from .x import (y as z, w)
from . import *
@dec(1)
@other
async def f[T](p: int = 1, /, q=2, *args, r: "s" = lambda u=3: u, **kw) -> T:
    global g
    async with m() as (n, o), p:
        async for i, j in k:
            if (v := i) and not j or -i:
                yield v
            elif i is not None:
                await g(*i, **j)
            else:
                raise E from None
    try:
        pass
    except* ValueError as e:
        del e
    finally:
        nonlocal_ = [x for x in y if x for z in x]
    match q:
        case {"a": 1, **rest} | [1, *others] | Point(x=0, y=_) as pt if pt:
            print(f"{q!r:>{width}} {q=}", end="")
        case _:
            return {k: v for k, v in q}, {*q}, (q,), q[1:2:3, ...], q @ q
class K(B, metaclass=M):
    x: int = 1; y = z = 2
    def __init__(self): self.a += 1
type Alias[U] = list[U]
assert x, "m"
while True: break
else: continue
'''


def _sources():
    yield "grammar", _GRAMMAR
    for path in _corpus():
        yield f"{path.parent.name}/{path.name}", path.read_bytes()


def _modules():
    for name, text in _sources():
        try:
            yield name, cst.parse_module(text)
        except (cst.ParserSyntaxError, UnicodeDecodeError):
            continue


MODULES = list(_modules())


def _events(run) -> List[Tuple[str, int]]:
    events: List[Tuple[str, int]] = []
    run(lambda node: events.append(("enter", id(node))), lambda node: events.append(("leave", id(node))))
    return events


@pytest.mark.parametrize("name,module", MODULES, ids=[name for name, _ in MODULES])
def test_batched_visit_makes_libcsts_calls(name, module):
    class Calls(cst.BatchableCSTVisitor):
        def __init__(self, log):
            super().__init__()
            self.log = log

        def visit_Name(self, node):
            self.log.append(("Name", id(node)))

        def leave_FunctionDef(self, node):
            self.log.append(("FunctionDef", id(node)))

    ours: List = []
    theirs: List = []
    ours_hooks = _events(lambda enter, leave: _walk.visit_batched(module, [Calls(ours)], enter, leave))
    theirs_hooks = _events(lambda enter, leave: cst.visit_batched(module, [Calls(theirs)], before_visit=enter,
                                                                   after_leave=leave))
    assert ours_hooks == theirs_hooks
    assert ours == theirs


def test_children_read_in_the_learnt_order_are_those_libcst_visits():
    seen = set()
    for _name, module in MODULES:
        stack = [module]
        while stack:
            node = stack.pop()
            assert _walk.children(node) == _walk._recorded_children(node), type(node).__name__
            seen.add(type(node))
            stack.extend(_walk.children(node))
    assert len(seen) > 100  # most of the grammar


def test_the_order_is_learnt_from_libcst_and_nothing_reads_its_source(monkeypatch):
    """From an empty table, with LibCST's source unreadable: the walk asks LibCST for the
    children of the first nodes of each type, learns the order of their fields, and makes
    LibCST's calls throughout; a node with a child in a field not yet placed is asked again."""
    import inspect

    def no_source(*args, **kwargs):
        raise AssertionError("LibCST's source was read")

    monkeypatch.setattr(inspect, "getsource", no_source)
    monkeypatch.setattr(_walk, "_ORDER", {})
    for _name, module in MODULES:
        ours = _events(lambda enter, leave: _walk.visit_batched(module, [], enter, leave))
        theirs = _events(lambda enter, leave: cst.visit_batched(module, [], before_visit=enter, after_leave=leave))
        assert ours == theirs
    # a function without a return annotation first, then one with: the new field is learnt
    monkeypatch.setattr(_walk, "_ORDER", {})
    plain, annotated = cst.parse_module("def f(a):\n    pass\n"), cst.parse_module("def g(a) -> int:\n    pass\n")
    for module in (plain, annotated, plain):
        assert _events(lambda e, l: _walk.visit_batched(module, [], e, l)) == \
            _events(lambda e, l: cst.visit_batched(module, [], before_visit=e, after_leave=l))
    order = _walk._ORDER[cst.FunctionDef]
    assert "returns" in order.fields and order.fields.index("params") < order.fields.index("returns")


def test_a_type_whose_children_sit_outside_its_fields_is_walked_the_slow_way(monkeypatch):
    module = cst.parse_module(_GRAMMAR)
    broken = _walk._Order(cst.FunctionDef)
    broken.broken = True
    monkeypatch.setitem(_walk._ORDER, cst.FunctionDef, broken)
    ours = _events(lambda enter, leave: _walk.visit_batched(module, [], enter, leave))
    theirs = _events(lambda enter, leave: cst.visit_batched(module, [], before_visit=enter, after_leave=leave))
    assert ours == theirs


@pytest.mark.parametrize("base,walk", [
    (cst.BatchableCSTVisitor, lambda module, hooks: _walk.visit_batched(module, [hooks])),
    (cst.CSTVisitor, _walk.visit),
], ids=["visit_batched", "visit"])
def test_attribute_hooks_get_libcsts_traversal(base, walk):
    module = cst.parse_module("def f(x):\n    return x\n")

    class Hooks(base):
        def __init__(self):
            super().__init__()
            self.bodies = 0

        def visit_FunctionDef_body(self, node):
            self.bodies += 1

    hooks = Hooks()
    walk(module, hooks)
    assert hooks.bodies == 1
    if base is cst.CSTVisitor:  # LibCST's do-nothing hook is not the visitor's own
        assert not _walk._own(cst.CSTVisitor, "visit_FunctionDef_body") and _walk._own(Hooks, "visit_FunctionDef_body")


def test_whitespace_leaves_are_passed_by_only_when_asked_and_unvisited():
    module = cst.parse_module(_GRAMMAR)

    def seen(**kw):
        out: List = []
        _walk.visit_batched(module, kw.pop("visitors", []), lambda node: out.append(id(node)), None, **kw)
        return out

    class Spaces(cst.BatchableCSTVisitor):
        def visit_SimpleWhitespace(self, node):
            pass

    every = _events(lambda enter, leave: cst.visit_batched(module, [], before_visit=enter, after_leave=leave))
    every = [key for kind, key in every if kind == "enter"]
    assert seen() == every and seen(visitors=[Spaces()], skip_whitespace=True) != every[:0]
    spaces = {id(node) for node in _all(module) if type(node) in _walk.WHITESPACE_LEAVES}
    assert seen(skip_whitespace=True) == [key for key in every if key not in spaces] and spaces
    newlines = {id(node) for node in _all(module) if type(node) is cst.Newline}
    assert seen(visitors=[Spaces()], skip_whitespace=True) == [key for key in every if key not in newlines]


def _all(module):
    stack, out = [module], []
    while stack:
        node = stack.pop()
        out.append(node)
        stack.extend(_walk.children(node))
    return out


class _Log(cst.CSTVisitor):
    """Logs calls; a ``visit_`` that returns False skips the children (LibCST's contract)."""

    def __init__(self):
        super().__init__()
        self.log: List[Tuple[str, int]] = []

    def visit_Name(self, node):
        self.log.append(("Name", id(node)))

    def visit_Lambda(self, node):
        self.log.append(("Lambda", id(node)))
        return False

    def leave_Call(self, node):
        self.log.append(("Call", id(node)))

    def visit_SimpleWhitespace(self, node):  # asked for: not passed by
        self.log.append(("space", id(node)))


class _Every(cst.CSTVisitor):
    """Overrides ``on_visit`` / ``on_leave``: sees every node, whitespace included."""

    def __init__(self):
        super().__init__()
        self.log: List[Tuple[str, int]] = []

    def on_visit(self, node):
        self.log.append(("enter", id(node)))
        return not isinstance(node, cst.Decorator)

    def on_leave(self, node):
        self.log.append(("leave", id(node)))


@pytest.mark.parametrize("name,module", MODULES, ids=[name for name, _ in MODULES])
def test_visit_makes_node_visits_calls(name, module):
    for kind in (_Log, _Every):
        ours, theirs = kind(), kind()
        _walk.visit(module, ours)
        module.visit(theirs)
        assert ours.log == theirs.log, kind.__name__
        assert ours.log or kind is _Log  # every module has nodes
    body = next((s for s in module.body if isinstance(s, cst.FunctionDef)), None)
    if body is not None:  # a part of a tree, as the analyses walk a kernel's body
        ours, theirs = _Log(), _Log()
        _walk.visit(body.body, ours)
        body.body.visit(theirs)
        assert ours.log == theirs.log


def test_visitor_classes_made_per_call_are_not_kept():
    """The analyses define visitor classes inside functions: remembering one must not keep it."""
    import gc
    import weakref

    module = cst.parse_module("x = 1\n")

    def one_walk():
        class Local(cst.CSTVisitor):
            def visit_Name(self, node):
                pass

        _walk.visit(module, Local())
        return weakref.ref(Local)

    ref = one_walk()
    gc.collect()
    assert ref() is None


class _Batched(cst.BatchableCSTVisitor):
    def visit_Name(self, node):
        pass

    def leave_Call(self, node):
        pass

    def helper(self):
        pass


class _Hooked(cst.CSTVisitor):
    def visit_Call_func(self, node):
        pass


class _HookedBelow(_Hooked):
    def visit_Name(self, node):
        pass


def test_batched_visitor_methods_are_libcsts_read_once_per_class(monkeypatch):
    import inspect

    from rocmport.analysis import walk as _walk

    first, second = _Batched(), _Batched()
    assert dict(_walk._batched_methods(first)) == first.get_visitors()
    calls = []
    real = inspect.getmembers
    monkeypatch.setattr(inspect, "getmembers", lambda *a, **k: calls.append(a) or real(*a, **k))
    methods = dict(_walk._batched_methods(second))
    assert methods == second.get_visitors() and calls == [(second,) + calls[0][1:]]  # only get_visitors' own
    assert sorted(methods) == ["leave_Call", "visit_Name"] and methods["visit_Name"].__self__ is second


@pytest.mark.parametrize("kind", [_Batched, _Hooked, _HookedBelow, cst.CSTVisitor])
def test_attribute_hooks_are_found_from_the_class_dicts_as_from_dir(kind):
    from rocmport.analysis import walk as _walk

    hooks = _walk._ATTRIBUTE_HOOK.match
    assert {name for name in _walk._defined(kind) if _walk._own(kind, name) and hooks(name)} == \
        {name for name in dir(kind) if _walk._own(kind, name) and hooks(name)}
    assert _walk._has_attribute_hooks(name for name in _walk._defined(kind) if _walk._own(kind, name)) == \
        (kind in (_Hooked, _HookedBelow))
