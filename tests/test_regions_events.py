"""One rule, one place, for ROC3xx / ROC4xx: the shared region analysis yields typed events
(facts), and the rule classes write every message and every fix.

The source checks keep the split: ``_regions`` and ``_events`` name no rule code and hold no
message text; every event type is used by a rule. The behaviour checks show what a rule gets:
events with their region and the chain of calls that reaches them.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path

import pytest

from rocmport.analysis import events as _events
from rocmport.analysis import regions as _regions

from .harness import lint

ANALYSIS = Path(_regions.__file__).parent
RULES = ANALYSIS.parent / "rules"
ANALYSES = ("regions.py", "events.py")
# Two words in a row, or a backtick: the stuff of messages ("breaks the graph", "`.item()`").
_PROSE = re.compile(r"[A-Za-z]{2,}\s+[A-Za-z]{2,}|`")


def _docstrings(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                yield first.value


def _prose_strings(path: Path):
    """String literals outside docstrings (f-string parts included) that read like a message."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = {id(d) for d in _docstrings(tree)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            if _PROSE.search(node.value):
                yield node.lineno, node.value


@pytest.mark.parametrize("name", ANALYSES)
def test_the_analysis_names_no_rule_code(name):
    text = (ANALYSIS / name).read_text(encoding="utf-8")
    assert not re.findall(r"ROC[34]", text, re.IGNORECASE)


@pytest.mark.parametrize("name", ANALYSES)
def test_the_analysis_writes_no_message(name):
    assert list(_prose_strings(ANALYSIS / name)) == []


def test_the_prose_check_can_fail(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text('"""A docstring may say anything."""\n'
                      'X = "torch.cuda.graph"\n'
                      'def f(where):\n    return f"`.item()` breaks the graph {where}"\n')
    assert [line for line, _ in _prose_strings(sample)] == [4]


@pytest.mark.parametrize("name", ANALYSES)
def test_the_analysis_builds_no_finding_or_fix(name):
    tree = ast.parse((ANALYSIS / name).read_text(encoding="utf-8"))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            imported.add(node.module or "")
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
    assert not imported & {"rocmport.findings", "Fix", "Finding", "Applicability", "Edit"}


def _event_types():
    return [obj for obj in vars(_events).values()
            if isinstance(obj, type) and issubclass(obj, _events.RegionEvent) and obj is not _events.RegionEvent]


def test_every_event_type_is_used_by_a_rule():
    rules = "".join(path.read_text(encoding="utf-8") for family in ("capture", "graph_breaks")
                    for path in sorted((RULES / family).glob("*.py")))
    unused = [t.__name__ for t in _event_types() if not re.search(rf"\b{t.__name__}\b", rules)]
    assert unused == []


def test_events_are_frozen_facts():
    for event_type in _event_types():
        params = event_type.__dataclass_params__
        assert params.frozen, event_type.__name__
        assert [f.name for f in dataclasses.fields(event_type)][:3] == ["node", "region", "via"]


def _analysis(monkeypatch, src: str, select):
    """Lint ``src`` and hand back the file's region analysis."""
    built = []
    real = _regions.analysis

    def spy(ctx):
        found = real(ctx)
        if not built or built[-1] is not found:
            built.append(found)
        return found

    monkeypatch.setattr(_regions, "analysis", spy)
    # the engine releases the analysis once the rules are done: kept whole here, to be read
    monkeypatch.setattr(_regions.RegionAnalysis, "release", lambda self: None)
    findings = lint(src, select=select)
    assert len(built) == 1
    return built[0], findings


CHAIN = """\
import torch

def norm(x):
    return x / x.sum().item()

def step(x):
    print(x)
    return norm(x)

def run(g, x):
    with torch.cuda.graph(g):
        y = step(x)

@torch.compile
def compiled(x):
    return step(x)
"""


def test_events_carry_region_and_chain(monkeypatch):
    found, findings = _analysis(monkeypatch, CHAIN, ["ROC301", "ROC401", "ROC402"])
    seen = [(type(e).__name__, e.region.kind, e.region.line, e.region.origin, [s.label for s in e.via])
            for e in found.events]
    assert seen == [
        # the capture at line 11 reaches step() then norm()
        ("PrintCall", "capture", 11, "with", ["step"]),
        ("ScalarRead", "capture", 11, "with", ["step", "norm"]),
        # the compiled function at line 14 reaches the same code, entered at compiled()
        ("PrintCall", "compiled", 14, "compile", ["step"]),
        ("ScalarRead", "compiled", 14, "compile", ["step", "norm"]),
    ]
    printed = found.events[0]
    assert isinstance(printed, _events.PrintCall) and printed.of_tensor is False
    assert found.events[1].method == "item" and found.events[1].in_capture
    assert found.events[3].in_compiled and found.events[3].region.compiled_label == "compiled"
    # The same `.item()` is ROC301 in the capture and ROC401 in compiled code; print(x) of an
    # unknown value is only a graph break.
    assert sorted((f.code, f.start.row) for f in findings) == [("ROC301", 4), ("ROC401", 4), ("ROC402", 7)]
    by_code = {f.code: f.message for f in findings}
    assert "inside the capture begun at line 11, via step() → norm()" in by_code["ROC301"]
    assert "inside `compiled`, compiled at line 14, via step() → norm()" in by_code["ROC401"]


def test_a_disabled_rule_changes_no_event(monkeypatch):
    """The analysis is the same whichever rules run: the events do not depend on them."""
    all_events, _ = _analysis(monkeypatch, CHAIN, ["ROC301", "ROC401", "ROC402"])
    monkeypatch.undo()
    one, findings = _analysis(monkeypatch, CHAIN, ["ROC402"])
    assert [type(e) for e in one.events] == [type(e) for e in all_events.events]
    assert [f.code for f in findings] == ["ROC402"]


def test_trailing_synchronize_is_a_region_fact(monkeypatch):
    src = ("import torch\ndef f(g, x):\n    with torch.cuda.graph(g):\n        y = x * 2\n"
           "        torch.cuda.synchronize()\n")
    found, findings = _analysis(monkeypatch, src, ["ROC301"])
    (event,) = found.events
    assert isinstance(event, _events.DeviceSynchronize) and not event.via
    assert id(event.node) in event.region.trailing_syncs
    (finding,) = findings
    assert finding.fixable and "move it to just after the `with` block" in finding.message


_BINDINGS = '''
import torch
from torch import nn as tnn

LIMIT = 3


class Model(tnn.Module):
    scale = 2

    def forward(self, x, *rest, k=1, **kw):
        import math
        y = x * self.scale
        y += 1
        for i, j in enumerate(rest):
            y = y + i
        with torch.no_grad() as ctx:
            z = [w for w in rest if (n := w)]
        f = lambda a, b=LIMIT: a + b
        return f(y, k) + len(z) + n


@torch.compile
def step(model, x):
    global LIMIT
    LIMIT = 4

    def inner(v):
        return v.item()
    return inner(model(x))
'''


def test_the_region_analysis_reads_names_from_the_resolvers_tables(monkeypatch):
    # the collection pass feeds the resolver's recorder on the engine's one traversal; the
    # tables it hands on are those the resolver makes on its own, scope by scope
    import libcst as cst

    from rocmport.analysis.resolve import ScopeBindings

    made = []
    original = _regions.RegionAnalysis.__init__

    def spy(self, ctx, collector=None):
        original(self, ctx, collector)
        made.append((self, collector))

    monkeypatch.setattr(_regions.RegionAnalysis, "__init__", spy)
    monkeypatch.setattr(_regions.RegionAnalysis, "release", lambda self: None)  # kept whole, to be read
    assert [f.code for f in lint(_BINDINGS, select=["ROC401"])] == ["ROC401"]
    (analysis, collector), = made
    names = analysis.names
    assert collector is not None  # fed by the engine's traversal, no walk of its own
    fresh = ScopeBindings(analysis.module, analysis._parent)
    scopes = [analysis.module]

    class Scopes(cst.CSTVisitor):
        def visit_FunctionDef(self, node):
            scopes.append(node)

        def visit_Lambda(self, node):
            scopes.append(node)

    analysis.module.visit(Scopes())
    assert len(scopes) == 5
    for scope in scopes:
        fed, own = names.bindings(scope), fresh.bindings(scope)
        assert {k: [id(v) for v in vs] for k, vs in fed.items()} == {k: [id(v) for v in vs] for k, vs in own.items()}
    forward = scopes[1]
    assert sorted(names.bindings(forward)) == ["ctx", "f", "i", "j", "k", "kw", "math", "n", "rest",
                                                        "self", "w", "x", "y", "z"]
