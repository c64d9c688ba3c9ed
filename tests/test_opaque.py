"""Definitions left unparsed by a lint (``rocmport/analysis/opaque.py``): the tree's code is
the text byte for byte, positions are a whole parse's, only definitions that no rule of the
file reads go, and the findings (fixes included) are those of a whole parse."""

from __future__ import annotations

import ast
import json

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from rocmport import linting
from rocmport.analysis import opaque as _opaque
from rocmport.analysis.metadata import STATS
from rocmport.config import Settings
from rocmport.output import finding_dict
from rocmport.registry import visitor_rules
from rocmport.source import LineIndex

LAYOUTS = {
    "decorated, comments, deeper comment after": (
        "import torch\n# above\n\n@decorator(\n    1)  # c\ndef f(x):\n    return x  # tail\n"
        "        # deeper, after the body\n\nX = torch.float8_e4m3fn\n"),
    "methods of a kept class": (
        "import torch\n\nclass A:\n    \"\"\"doc\"\"\"\n\n    def m(self):\n        return torch.float8_e4m3fn\n\n"
        "    @property\n    def n(self):  # n\n        pass\n    # class footer\n\n    def o(self):\n"
        "        return 2\n"),
    "the only statement of a class body": "class A:\n    def m(self):\n        return 1\n",
    "crlf and no final newline": "import torch\r\n\r\ndef f():\r\n    return 1\r\n\r\ndef g():\r\n    pass",
    "tabs": "def f():\n\treturn 1\n\nclass B:\n\tdef m(self):\n\t\treturn 2\n\tY = 3\n",
    "async and a nested class": (
        "async def f():\n    await g()\n\nclass A:\n    class B:\n        def m(self):\n            pass\n"
        "        Z = torch.float8_e4m3fn\n"),
}


def _holes(text, words=("float8_e4m3fn",), bound=("torch",)):
    tree = ast.parse(text)
    return _opaque.holes(text, LineIndex(text), tree, words, bound,
                         [n for n in ast.walk(tree) if isinstance(n, _opaque.BINDS_ELSEWHERE)])


def _partial(text, found):
    module = _opaque.restore(cst.parse_module(_opaque.reduce(text, found)), text, found)
    assert module is not None
    return module


@pytest.mark.parametrize("text", LAYOUTS.values(), ids=list(LAYOUTS))
def test_the_tree_is_the_text_and_positions_are_a_whole_parse(text):
    found = _holes(text)
    assert found
    module = _partial(text, found)
    assert module.code == text
    assert module.deep_clone().code == text
    whole = MetadataWrapper(cst.parse_module(text)).resolve(PositionProvider)
    part = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)

    def names(positions):
        return sorted((node.value, (r.start.line, r.start.column, r.end.line, r.end.column))
                      for node, r in positions.items() if isinstance(node, cst.Name))

    hidden = [(h.start, h.end) for h in found]
    starts = LineIndex(text)
    kept = [n for n in names(whole)
            if not any(a <= starts.offset(n[1][0], n[1][1]) < b for a, b in hidden)]
    assert names(part) == kept  # every node left has the position a whole parse gives it
    opaque = [node for node in part if isinstance(node, _opaque.Opaque)]
    assert len(opaque) == len(found)


def test_which_definitions_go():
    text = ("import torch\nfrom torch import float8_e4m3fn as F8\n\n"
            "def reads_the_alias():\n    return F8\n\n"
            "def reads_nothing():\n    return 1\n\n"
            "def torch_named():\n    pass\n\n"
            "def declares():\n    global X\n    X = 1\n\n"
            "def global_name():\n    return get_global_rank()  # not a declaration\n\n"
            "def walrus():\n    return (y := 2)\n\n"
            "def continued():\n    return 1 + \\\n        2 \\\n\n"
            "class Holds:\n    def reads(self):\n        return torch.float8_e4m3fn\n\n    def not_this(self):\n"
            "        return 3\n")
    facts_words = {"float8_e4m3fn", "F8"}
    found = _holes(text, facts_words, {"torch", "F8", "torch_named"})
    gone = {text[h.start:h.end].split("(")[0].split()[-1] for h in found}
    assert gone == {"reads_nothing", "global_name", "not_this"}


def test_nothing_goes_where_lines_may_be_counted_otherwise_or_the_placeholder_is_taken():
    assert _holes("def f():\r    return 1\rx = 1\r") == []  # a lone CR
    assert _holes("\x0cdef f():\n    return 1\n") == []  # LibCST drops a form feed before a statement
    assert _holes("_rocmport_opaque_0 = 1\n\ndef f():\n    return 1\n") == []


# -- the engine -----------------------------------------------------------------------------

def _lint(text: str, partial: bool):
    settings = Settings()
    enabled, rules = linting.select_rules(settings, "m.py")
    analysis = linting.analyze(text, "m.py", settings, rules, enabled, partial=partial)
    return [json.dumps(finding_dict(f), sort_keys=True) for f in analysis.findings]


NEAR_MISSES = {
    # ROC705 through an import alias, in a function and a method; a class attribute; the
    # rest of the class goes
    "fp8 alias": ("import torch\nfrom torch import float8_e4m3fn as F8\n\n\ndef cast(x):\n    return x.to(F8)\n\n\n"
                  "def other(x):\n    return x + 1\n\n\nclass Q:\n    DTYPE = torch.float8_e4m3fn\n\n"
                  "    def scale(self):\n        return 2\n"),
    # ROC702 through a name assigned at module level, read in a function that says nothing
    # of the capability
    "capability name": ("import torch\n\ncap = torch.cuda.get_device_capability()\n\n\ndef pick():\n"
                        "    if cap >= (9, 0):\n        return use_fa3()\n    return None\n\n\n"
                        "def unrelated():\n    return 0\n"),
    # ROC702 through names a function binds itself: the function spells the capability;
    # a name it binds ("_") says nothing of other functions
    "capability local": ("import torch\n\n\ndef sm90():\n    major, _ = torch.cuda.get_device_capability()\n"
                         "    ok = major >= 9\n    return ok\n\n\ndef other(args):\n    for _ in args:\n"
                         "        pass\n    return args\n"),
    # ROC701: the hip test beside it is in a function (kept for "hip")
    "hip beside": ("import torch\n\nIS_CUDA = torch.version.cuda is not None\n\n\ndef rocm():\n"
                   "    return torch.version.hip is not None\n\n\ndef plain():\n    return 1\n"),
    # a method named like an import would change what a class-level read means
    "a method named like an import": ("import torch\n\n\nclass A:\n    def torch(self):\n        return 1\n\n"
                                      "    X = torch.float8_e4m3fn\n\n\ndef plain():\n    return 1\n"),
    # a function that binds a module name stays (the provider, where it is asked, sees it)
    "global": ("import torch\n\n\ndef setup():\n    global tc\n    import torch.cuda as tc\n\n\n"
               "if tc.get_device_capability() >= (9, 0):\n    use_fa3()\n\n\ndef plain():\n    return 1\n"),
    # ROC706 (fixable) beside definitions that go
    "448": ("import torch\n\n\ndef helper():\n    return 1\n\n\nFP8_MAX = 448.0  # float8_e4m3fn\n"
            "x = y.clamp(-448, 448).to(torch.float8_e4m3fn)\n"),
    # ROC20x through a module-level alias of the config, and a dict filled in one function
    # whose flow starts at an "options" key in another
    "config alias": ("import torch._inductor.config\n\ncfg = torch._inductor.config\nOPTS = {}\n\n\n"
                     "def tune():\n    cfg.max_autotune = True\n\n\ndef enable():\n"
                     "    OPTS['max_autotune_gemm'] = True\n\n\ndef plan(fn):\n    return {'options': OPTS, 'fn': fn}\n\n\n"
                     "def other():\n    return OPTS\n"),
    # ROC512 in a function, a method's parameter and a module-level constant
    "warp": ("import triton\n\nWARPSIZE = 32\n\n\ndef threads(num_warps):\n    return num_warps * 32\n\n\n"
             "class K:\n    def launch(self, threads_per_warp=32):\n        return 1\n\n    def other(self):\n"
             "        return 2\n\n\ndef helper():\n    return 3\n"),
    # ROC703 through a command held by a module-level name
    "nvidia-smi name": ("import subprocess\n\nCMD = ['nvidia-smi', '-L']\n\n\ndef gpus():\n"
                        "    return subprocess.run(CMD)\n\n\ndef other():\n    return 2\n"),
}


@pytest.mark.parametrize("text", NEAR_MISSES.values(), ids=list(NEAR_MISSES))
def test_a_lint_without_the_definitions_finds_what_a_whole_parse_finds(text):
    before = STATS["parse:opaque"]
    assert _lint(text, partial=True) == _lint(text, partial=False)
    assert STATS["parse:opaque"] > before  # something did go


def test_every_rule_case_is_found_alike_without_the_definitions():
    for rule in visitor_rules():
        for case in tuple(rule.VALID) + tuple(rule.INVALID):
            assert _lint(case.code, partial=True) == _lint(case.code, partial=False), (rule.CODE, case.code)


def test_a_rule_that_reads_any_definition_keeps_them_all():
    text = ('import torch\n\n\ndef helper(x):\n    return x.item()\n\n\n@torch.compile\ndef step(x):\n'
            '    return helper(x)\n\n\nY = torch.float8_e4m3fn\n')
    before = STATS["parse:opaque"]
    findings = _lint(text, partial=True)
    assert STATS["parse:opaque"] == before  # ROC40x follows calls: nothing goes
    assert any('"ROC40' in f for f in findings) and findings == _lint(text, partial=False)
