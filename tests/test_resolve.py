"""The one resolver (rocmport.analysis.resolve): what an import binds, the bindings of a scope
and the one value a name stands for, and the file's own ROCm test -- on the cases that each
former copy handled (the Triton analysis's scope walk, the prefilter's binder, the engine's
gate search)."""

from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path
from typing import Optional

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, ParentNodeProvider

from rocmport.analysis import bindings as _bindings
from rocmport.analysis import index as _index
from rocmport.analysis import prescan as _prescan
from rocmport.analysis import resolve as _resolve
from rocmport.analysis.resolve import (
    ScopeBindings,
    cst_import_bindings,
    from_import_binding,
    import_binding,
    means_rocm_build,
    rocm_test_binding,
    torch_aliases,
)


def _module(code: str):
    module = cst.parse_module(textwrap.dedent(code))
    parents = MetadataWrapper(module, unsafe_skip_copy=True).resolve(ParentNodeProvider)
    return module, ScopeBindings(module, parents.get)


def _names(node: cst.CSTNode, value: Optional[str]):
    """Every ``Name`` of ``value`` (None: every ``Name``) under ``node``, in source order."""
    found = []

    class Finder(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> None:
            if value is None or n.value == value:
                found.append(n)

    node.visit(Finder())
    return found


# -- what an import binds ---------------------------------------------------------------

def test_what_an_import_binds():
    assert import_binding("torch", None) == ("torch", "torch")
    assert import_binding("torch.cuda", None) == ("torch", "torch")  # ``import a.b`` binds ``a``
    assert import_binding("torch.cuda", "tc") == ("tc", "torch.cuda")
    assert import_binding("torch", "t") == ("t", "torch")
    assert from_import_binding("torch", 0, "version", "v") == ("v", "torch.version")
    assert from_import_binding("torch", 0, "version", None) == ("version", "torch.version")
    assert from_import_binding(None, 1, "a", None) == ("a", ".a")
    assert from_import_binding("pkg.mod", 2, "b", "c") == ("c", "..pkg.mod.b")
    assert from_import_binding("torch", 0, "*", None) is None  # a star binds nothing in sight


IMPORTS = """
import torch
import torch.cuda
import numpy as np, os.path
import torch.nn.functional as F
from torch import version as v
from torch import compile
from . import sibling
from ..pkg import helper as h
from triton import *
try:
    import triton.language as tl
except ImportError:
    tl = None
if True:
    from torch import compile as tc
def f():
    import torch as inner
"""


def test_the_prefilter_binder_and_libcst_agree_on_every_import():
    # the prefilter's binder (CPython's tree) and a LibCST walk give the same names
    facts = _prescan.Facts.of(ast.parse(IMPORTS))
    from_binder = facts.binding_kinds_imports()
    from_cst = {}

    class Walk(cst.CSTVisitor):
        def visit_Import(self, node) -> None:
            for name, full, _alias in cst_import_bindings(node):
                from_cst.setdefault(name, set()).add(full)

        visit_ImportFrom = visit_Import

    cst.parse_module(IMPORTS).visit(Walk())
    assert from_binder == from_cst == {
        "torch": {"torch"}, "np": {"numpy"}, "os": {"os"}, "F": {"torch.nn.functional"},
        "v": {"torch.version"}, "compile": {"torch.compile"}, "sibling": {".sibling"},
        "h": {"..pkg.helper"}, "tl": {"triton.language"}, "tc": {"torch.compile"}, "inner": {"torch"}}
    kinds = facts.binding_kinds()
    assert kinds["tl"] == {"import", "module"}  # conditional: an import and an assignment
    assert kinds["inner"] == {"inner import"} and kinds["torch"] == {"import"}


# -- the bindings of a scope, and the one value a name stands for ----------------------

def test_a_module_constant_reaches_a_function():
    module, scopes = _module("""
        BLOCK = 128
        def kernel(x):
            return x + BLOCK
    """)
    read = _names(module.body[1], "BLOCK")[0]
    value = scopes.resolve("BLOCK", read)
    assert isinstance(value, cst.Integer) and value.value == "128"
    assert scopes.scope_of(read) is module.body[1] and scopes.scope_of(module.body[0]) is module


def test_a_parameter_or_a_local_shadows_the_module_constant():
    module, scopes = _module("""
        BLOCK = 128
        def by_param(BLOCK):
            return BLOCK
        def by_local():
            BLOCK = 64
            return BLOCK
        def by_loop():
            for BLOCK in (1, 2):
                pass
            return BLOCK
        g = lambda BLOCK: BLOCK
    """)
    by_param, by_local, by_loop, lam = module.body[1], module.body[2], module.body[3], module.body[4]
    assert isinstance(scopes.resolve("BLOCK", _names(by_param.body, "BLOCK")[0]), cst.Param)
    assert scopes.resolve("BLOCK", _names(by_local.body, "BLOCK")[-1]).value == "64"
    assert isinstance(scopes.resolve("BLOCK", _names(by_loop.body, "BLOCK")[-1]), cst.For)
    assert isinstance(scopes.resolve("BLOCK", _names(lam, "BLOCK")[-1]), cst.Param)
    # the module's own binding is untouched by the functions' ones
    assert [v.value for v in scopes.bindings(module)["BLOCK"]] == ["128"]


def test_a_name_bound_twice_or_conditionally_has_no_one_value():
    module, scopes = _module("""
        BLOCK = 128
        if big:
            BLOCK = 256
        try:
            import triton
        except ImportError:
            triton = None
        def f():
            return BLOCK, triton
    """)
    f = module.body[-1]
    assert scopes.resolve("BLOCK", _names(f, "BLOCK")[0]) is None
    assert scopes.resolve("triton", _names(f, "triton")[0]) is None
    assert len(scopes.bindings(module)["triton"]) == 2


def test_imports_aliases_and_re_imports_bind_as_the_prefilter_says():
    module, scopes = _module("""
        from torch import version as v
        import torch.cuda
        import numpy as np
        import numpy as np
        from triton import *
        def f():
            import torch as t
            return t
    """)
    bound = scopes.bindings(module)
    assert isinstance(bound["v"][0], cst.ImportAlias) and bound["v"][0].name.value == "version"
    assert isinstance(bound["torch"][0], cst.ImportAlias)  # ``import torch.cuda`` binds ``torch``
    assert len(bound["np"]) == 2  # imported twice: two bindings, no one value
    assert scopes.resolve("np", module.body[-1]) is None
    assert "triton" not in bound and "*" not in bound  # a star binds nothing in sight
    assert "t" not in bound and isinstance(scopes.bindings(module.body[-1])["t"][0], cst.ImportAlias)


def test_nested_functions_and_classes_are_bindings_not_walked():
    module, scopes = _module("""
        def outer():
            x = 1
            def inner():
                x = 2
                return x
            class K:
                x = 3
            (a, b) = pair
            return x
    """)
    outer = module.body[0]
    bound = scopes.bindings(outer)
    assert [v.value for v in bound["x"]] == ["1"]
    assert isinstance(bound["inner"][0], cst.FunctionDef) and isinstance(bound["K"][0], cst.ClassDef)
    assert isinstance(bound["a"][0], cst.Element)  # unpacking: not a known value
    inner = outer.body.body[1]
    assert scopes.resolve("x", _names(inner.body, "x")[-1]).value == "2"


# -- the file's own ROCm test --------------------------------------------------------------

OWN_TESTS = [
    ("import torch\nIS_HIP = torch.version.hip is not None\n", "IS_HIP"),
    ("import torch as t\nON_ROCM = t.version.hip is not None\n", "ON_ROCM"),
    ("import torch.cuda\nIS_HIP = torch.version.hip != None\n", "IS_HIP"),
    ('import torch\nIS_HIP = getattr(torch.version, "hip", None) is not None\n', "IS_HIP"),
    ("import torch\nIS_HIP = bool(torch.version.hip)\n", "IS_HIP"),
    ("import torch\nIS_HIP = (\n    torch.version.hip  # the HIP version\n    is not None\n)\n", "IS_HIP"),
    ("import torch\r\nx = 1\r\nIS_HIP = torch.version.hip is not None\r\n", "IS_HIP"),
    # not exactly a ROCm build test, or not the one binding of the name
    ("import torch\nIS_HIP = torch.version.hip\n", None),
    ("import torch\nIS_HIP = torch.version.hip is None\n", None),
    ("import torch\nIS_HIP = torch.version.cuda is not None\n", None),
    ("import torch\nIS_HIP = torch.version.hip is not None\nIS_HIP = False\n", None),
    ("import torch\nIS_HIP = torch.version.hip is not None\ndef f():\n    IS_HIP = False\n", None),
    ("import torch\nif True:\n    IS_HIP = torch.version.hip is not None\n", None),
    ("import torch as t\nIS_HIP = torch.version.hip is not None\n", None),  # ``torch`` is unbound
    ("import torch.cuda as tc\nIS_HIP = tc.version.hip is not None\n", None),  # ``tc`` is torch.cuda
    ("IS_HIP = torch.version.hip is not None\n", None),  # no import at all
    ("try:\n    import torch\nexcept ImportError:\n    pass\nIS_HIP = torch.version.hip is not None\n", None),
    # a name bound to torch.version is not torch: the exact test, shared with the project
    # index (``_bindings.means_rocm_build``), knows torch's own aliases only
    ("from torch import version as v\nIS_HIP = v.hip is not None\n", None),
    ('import torch\nIS_HIP = "torch.version.hip is not None"\n', None),
    # annotated: the check that the name is bound once in the whole file counts ``NAME =``
    # only, so such a test has never been reused (kept as it was)
    ("import torch\nIS_HIP: bool = torch.version.hip is not None\n", None),
]


@pytest.mark.parametrize("code, expected", OWN_TESTS)
def test_the_files_own_rocm_test(code, expected):
    module = cst.parse_module(code)
    found = rocm_test_binding(module, code)
    if expected is None:
        assert found is None
    else:
        name, stmt = found
        assert name == expected and stmt in module.body


def test_torch_aliases_are_module_level_imports_of_torch():
    code = "import torch as t, torch.cuda\nimport torchvision\nimport torch.nn as nn\ndef f():\n    import torch as u\n"
    assert torch_aliases(cst.parse_module(code)) == {"t", "torch"}


EXPRESSIONS = [
    ("torch.version.hip is not None", True),
    ("t.version.hip != None", True),
    ('getattr(torch.version, "hip", None) is not None', True),
    ("bool(torch.version.hip)", True),
    ("(torch.version.hip) is not None", True),
    ("torch.version.hip", False),
    ("torch.version.hip is None", False),
    ("not torch.version.hip", False),
    ('getattr(torch.version, "hip") is not None', False),
    ('getattr(torch.version, "cuda", None) is not None', False),
    ("other.version.hip is not None", False),
    ("torch.version.hip is not None and x", False),
]


@pytest.mark.parametrize("expr, expected", EXPRESSIONS)
def test_one_exact_rocm_test_for_both_trees(expr, expected):
    names = {"torch", "t"}
    assert means_rocm_build(cst.parse_expression(expr), names) is expected
    assert _bindings.means_rocm_build(ast.parse(expr, mode="eval").body, names) is expected
    assert means_rocm_build(cst.parse_expression(expr), set()) is False


def test_the_engine_reuses_the_files_own_test():
    from rocmport.config import Settings
    from rocmport.fixing import fix_text
    from rocmport.registry import visitor_rules

    code = "import torch\n\nIS_ROCM = torch.version.hip is not None\n\nmodel = torch.compile(net, mode=\"reduce-overhead\")\n"
    rules = visitor_rules()
    fixed = fix_text(code, "train.py", Settings(), rules, frozenset(r.CODE for r in rules))[0]
    assert "if IS_ROCM else" in fixed and "is_rocm" not in fixed and fixed.count("IS_ROCM =") == 1


ROOT = Path(__file__).resolve().parent.parent


def test_the_resolver_is_the_one_place():
    # the Triton analysis and the prefilter's binder call the resolver instead of a copy
    from rocmport.analysis import regions as _regions
    from rocmport.analysis import triton as _triton

    assert _triton.ScopeBindings is ScopeBindings
    assert _regions.ScopeBindings is ScopeBindings  # its names: tests/test_regions_events.py
    assert _prescan.import_binding is import_binding and _prescan.from_import_binding is from_import_binding
    assert _resolve.means_rocm_build is means_rocm_build
    # the project index and the prefilter use the same import bindings, and nothing else
    # in the analyses spells out what an import binds
    assert _index.module_imports is _bindings.module_imports and _index.means_rocm_build is _bindings.means_rocm_build
    for module in sorted(ROOT.joinpath("rocmport").rglob("*.py")):
        if module.name != "bindings.py":
            text = module.read_text(encoding="utf-8")
            assert not re.search(r"\.asname or \w+\.name", text), module.name


@pytest.mark.parametrize("source", ["'a'", '"""x\ny"""', "r'a\\d'", "u'\u00e9'", "'a\\nb'", "'''a\r\nb'''", "''",
                                    'R"x"', "U'''q'''", "'\\x41'", "b'x'", "f'x'"])
def test_a_string_literal_reads_as_python_reads_it(source):
    from rocmport.analysis.syntax import literal_string

    node = cst.parse_expression(source)
    expected = node.evaluated_value if not node.prefix.lower().strip("ru") else None
    assert literal_string(node) == expected


def test_only_plain_assignments_are_assigned_values():
    module = cst.parse_module("a, *rest = f()\n(w := 1)\nb: dict = {}\nc = d = []\nfor e in x:\n    pass\n")
    scopes = ScopeBindings(module, MetadataWrapper(module, unsafe_skip_copy=True).resolve(ParentNodeProvider).get)
    assigned = scopes.assigned(module)
    assert sorted(assigned) == ["b", "c", "d"]  # not ``*rest`` of an unpacking, ``w :=`` or a loop's ``e``


class _Reader:
    """What ``_resolve._accesses`` asks of a rule: metadata and the context's shared store."""

    def __init__(self, module: cst.Module):
        self.wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
        self.context = self
        self._shared = {}

    def get_metadata(self, provider, node, default=None):
        return self.wrapper.resolve(provider).get(node, default)

    def shared(self, key, factory):
        if key not in self._shared:
            self._shared[key] = factory(self)
        return self._shared[key]


_SCOPES = '''
import torch
G = {}
opts = {"max_autotune": True}


def f(a, b=G):
    global G
    local = dict(a=1)
    local["k"] = a
    G = local
    seen = [x for x in a if x]

    def inner():
        nonlocal local
        local = {}
        return local, opts, seen, print

    return inner


class C:
    attr = {"k": 1}
    other = attr

    def m(self, attr=attr):
        options = {"triton.cudagraphs": True}
        options.update(x=1)
        return torch.compile(self, options=options), attr, C
'''


@pytest.mark.parametrize("source", [_SCOPES] + sorted(
    path.read_text() for path in (Path(_resolve.__file__).parent).glob("*.py")))
def test_a_names_accesses_from_its_statement_are_the_whole_modules(source):
    """``_accesses`` of a name bound in a function or class reads ScopeProvider's analysis of
    the top-level statement around it: the same accesses and assignments as the whole
    module's, and nothing where a referent is the module's or a builtin."""
    module = cst.parse_module(source)
    reader = _Reader(module)
    local_answers = 0
    for node in _names(module, None):
        local = _resolve._local_accesses(reader, node)
        if local is None:
            continue
        local_answers += 1
        scope = reader.get_metadata(_resolve.ScopeProvider, node)
        whole = list(scope.accesses[node])

        def key(accesses):
            return sorted((id(a.node), sorted(id(getattr(r, "node", r)) for r in a.referents))
                          for a in accesses)
        assert key(local) == key(whole), node.value
    assert local_answers or "\ndef " not in source and "\n    def " not in source
