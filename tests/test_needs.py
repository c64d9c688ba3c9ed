"""A rule's ``NEEDS`` (``rocmport.analysis.needs``) and what is derived from it: the text
prefilter (``triggers``, ``words``), the answer on CPython's tree (``holds``) and the words a
lint keeps definitions for (``spelled``). Each must be conservative: wherever LibCST's
provider names a node the need names, the file passes them all."""

from __future__ import annotations

import ast

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, QualifiedNameProvider
from libcst.metadata.base_provider import LazyValue

from rocmport.analysis import needs as _needs
from rocmport.analysis.needs import (
    AllOf,
    AnyOf,
    Attribute,
    Call,
    Decorator,
    DictKey,
    Identifier,
    Import,
    Key,
    Keyword,
    Name,
    Number,
    String,
    Under,
)
from rocmport.analysis.prescan import Facts
from rocmport.registry import holds_word
from rocmport.rules.base import Rule


def facts_of(source: str) -> Facts:
    return Facts.of(ast.parse(source))


def passes_text(need, source: str) -> bool:
    triggers, words = need.triggers(), need.words()
    seen: dict = {}
    return (not triggers or any(t in source for t in triggers)) and \
        all(any(holds_word(source, w, seen) for w in group) for group in words)


def provider_names(source: str):
    """Every qualified name LibCST's provider gives a node of ``source``, and the names of
    the nodes that are called or are decorators."""
    wrapper = MetadataWrapper(cst.parse_module(source))
    lazy = wrapper.resolve(QualifiedNameProvider)
    names = {node: (value() if isinstance(value, LazyValue) else value) for node, value in lazy.items()}
    called, decorated, referenced = set(), set(), set()
    for found in names.values():
        referenced |= {q.name for q in found}

    class Calls(cst.CSTVisitor):
        def visit_Call(self, call: cst.Call) -> None:
            called.update(q.name for q in names.get(call.func, ()))

        def visit_Decorator(self, decorator: cst.Decorator) -> None:
            target = decorator.decorator.func if isinstance(decorator.decorator, cst.Call) else decorator.decorator
            decorated.update(q.name for q in names.get(target, ()))

    wrapper.module.visit(Calls())
    return referenced, called, decorated


SPELLINGS = [
    "import torch\ntorch.cuda.get_device_capability()\n",
    "import torch as t\nt.cuda.get_device_capability(0)\n",
    "import torch.cuda as tc\ntc.get_device_capability()\n",
    "from torch.cuda import get_device_capability as cap\ncap()\n",
    "from torch import cuda\ncuda.get_device_capability()\n",
    "def f():\n    import torch\n    return torch.cuda.get_device_capability()\n",
    "import torch\nx = torch.cuda.get_device_capability\n",
]


@pytest.mark.parametrize("source", SPELLINGS)
def test_a_name_call_or_reference_in_any_spelling_passes_every_prefilter(source):
    wanted = "torch.cuda.get_device_capability"
    referenced, called, _ = provider_names(source)
    facts = facts_of(source)
    assert wanted in referenced
    for need in (Name(wanted), Call(wanted) if wanted in called else Name(wanted)):
        assert passes_text(need, source) and need.holds(facts), need
        assert "get_device_capability" in need.spelled(facts) or "cap" in need.spelled(facts)


@pytest.mark.parametrize("need,source", [
    (Call("torch.cuda.get_device_capability"), "import re\nre.get_device_capability()\n"),
    (Call("torch.cuda.get_device_capability"), "import torch\nx = torch.cuda.get_device_capability\n"),
    (Name("torch.version.hip"), "version = 1\nprint(version.hip)\n"),
    (Decorator("triton.jit"), "import triton\ntriton.jit(f)\n"),
    (Import("pynvml"), "import pynvml_utils\n"),
    (Import("pynvml"), "from .pynvml import x\n"),
    (Keyword("mode"), "f(model=1)\n"),
    (Attribute("num_warps"), "num_warps = 4\n"),
    (String("nvidia-smi"), "x = 'nvidia'\n"),
    (Import("triton.language.extra.cuda.libdevice"), "from triton.language.extra import libdevice\n"),
    (Under("os"), "import osx\nosx.environ['A'] = '1'\n"),
    (Under("os"), "from . import os\nos.environ['A'] = '1'\n"),
    (Key("K"), "v = m['K']\nm.get('K')\nx = 'K'\n"),
    (DictKey("K"), "m['K'] = 1\nf(K=1)\nm.setdefault('K', 1)\n"),
    (Number(448), "x = '448'\ny = 4480 + 448j + 0.448\n# 448\n"),
    (Number(1), "x = True\n"),
    (String("tf32", whole=True), "x = 'tf32x3'\n"),
    (String("tf32", whole=True), "x = 'TF32'\n"),
    (Attribute("num_warps", assigned=True), "n = c.num_warps\ndel c.num_warps\n"),
    (Keyword("num_warps", subscripted=True), "f(num_warps=4)\ntriton.Config({}, num_warps=4)\n"),
    (Call("torch.compile", positional=True), "import torch\ntorch.compile(*a, **k)\ntorch.compile(mode='max-autotune')\n"),
    (Identifier("get_device_name"), "# get_device_name()\nx = 'get_device_name'\nget_device_names()\n"),
    (Identifier("compile", part=True), "# maybe_compile(model)\nx = 'support_compile'\nf(model)\n"),
])
def test_near_misses_do_not_hold(need, source):
    assert not need.holds(facts_of(source))


@pytest.mark.parametrize("need,source", [
    (Decorator("triton.jit"), "import triton\n@triton.jit\ndef k(x):\n    pass\n"),
    (Decorator("triton.autotune"), "from triton import autotune as at\n@at(configs=[], key=[])\ndef k(x):\n    pass\n"),
    (Import("pynvml"), "import pynvml\n"),
    (Import("pynvml"), "def f():\n    from pynvml.smi import nvidia_smi\n"),
    (Import("cuda.bindings"), "import cuda.bindings.driver as drv\n"),
    (Keyword("mode"), "f(mode=1)\n"),
    (Attribute("num_warps"), "c.num_warps = 4\n"),
    (String("nvidia-smi"), "subprocess.run(['nvidia-smi', '-L'])\n"),
    (String("nvidia-smi"), "cmd = f'nvidia-smi {x}'\n"),
    (String("reduce-overhead") & Keyword("mode"), "f(mode='reduce-' 'overhead')\n"),
    (Import("triton.language.extra.cuda.libdevice"), "from triton.language.extra.cuda import (exp, libdevice)\n"),
    (Import("triton.language.extra.cuda.libdevice"), "import triton.language.extra.cuda.libdevice.x as y\n"),
    (Under("os"), "import os\nos.environ['A'] = '1'\n"),
    (Under("os"), "from os import putenv as p\np('A', '1')\n"),
    (Under("os"), "import os.path\nprint(os.path.sep)\n"),
    (Key("K") & Under("os"), "import os\nos.environ['K'] = '1'\n"),
    (Key("K") & Under("os"), "import os\nos.environ['K'] += '1'\n"),
    (Key("K") & Under("os"), "import os\nos.environ.update({'K': '1'})\n"),
    (Key("K") & Under("os"), "import os\nos.environ.update(K='1')\n"),
    (Key("K") & Under("os"), "import os\nos.environ.setdefault('K', '1')\n"),
    (Key("K") & Under("os"), "import os\nos.environ.__setitem__('K', '1')\n"),
    (DictKey("K") & Keyword("x"), "f(x={'K': 1})\n"),
    (Number(448), "y = x.clamp(-448.0, 448.)\n"),
    (Number(448), "FP8_MAX = 448\n"),
    (String("tf32", "tf32x3", whole=True, any_case=True) & Keyword("input_precision"),
     "tl.dot(a, b, input_precision='TF32x3')\n"),
    (Attribute("num_warps", assigned=True), "c.num_warps = 4\n"),
    (Attribute("num_warps", assigned=True), "c.num_warps += 4\n"),
    (Attribute("num_warps", assigned=True), "c.num_warps: int = 4\n"),
    (Keyword("num_warps", subscripted=True), "kernel[grid](x, num_warps=8)\n"),
    (Call("torch.compile", positional=True), "import torch\ng = torch.compile(f, mode='max-autotune')\n"),
    (Call("torch.cuda.synchronize"), "from torch import cuda as c\nc.synchronize()\n"),
    (Call("torch.cuda.synchronize"), "import torch.cuda\ntorch.cuda.synchronize()\n"),
    (Attribute("capture_begin") | Call("torch.cuda.graph"), "g.capture_begin()\n"),
    (Identifier("get_device_name"), "from .util import get_device_name\nNAME = get_device_name()\n"),
    (Identifier("get_device_name"), "NAME = platform.get_device_name(0)\n"),
    (Identifier("get_device_name"), "from .util import get_device_name as gdn\n"),
    (Identifier("get_device_name"), "def get_device_name():\n    pass\n"),
    (Identifier("compile", part=True), "from .c import support_torch_compile\n@support_torch_compile\nclass M:\n    pass\n"),
    (Identifier("compile", part=True), "model = utils.maybe_compile(model)\n"),
    (Identifier("compile", part=True), "import pkg.compile_helpers as ch\n"),
    (Attribute("capture_begin") | Call("torch.cuda.graph"), "from torch.cuda import graph as G\nwith G(g):\n    pass\n"),
])
def test_what_a_need_names_holds_and_passes_the_text(need, source):
    assert need.holds(facts_of(source))
    assert passes_text(need, source)


def test_an_identifier_part_is_text_but_no_whole_word():
    need = Identifier("compile", part=True)
    assert need.triggers() == ("compile",) and need.words() == ()
    assert Identifier("get_device_name").words() == (("get_device_name",),)
    source = "from .c import support_torch_compile\nx = maybe_compile(y)\n"
    assert need.spelled(facts_of(source)) == {"support_torch_compile", "maybe_compile"}
    with pytest.raises(ValueError):
        Identifier("torch.compile")


def test_combinations():
    a, b = Import("pynvml"), Call("torch.cuda.get_device_capability")
    either, both = a | b, a & b
    assert isinstance(either, AnyOf) and isinstance(both, AllOf)
    only_a = "import pynvml\n"
    assert either.holds(facts_of(only_a)) and not both.holds(facts_of(only_a))
    assert passes_text(either, only_a) and not passes_text(both, only_a)
    assert set(either.triggers()) == {"pynvml", "get_device_capability"}
    # nested combinations flatten
    assert len((a | b | Keyword("x")).needs) == 3 and len((a & b & Keyword("x")).needs) == 3


def test_a_string_gives_no_text_trigger_so_a_rule_must_pair_it():
    assert String("reduce-overhead").triggers() == ()
    assert (Call("torch.compile") & String("reduce-overhead")).triggers() == ("compile",)
    assert (Call("torch.compile") | String("reduce-overhead")).triggers() == ()
    with pytest.raises(TypeError, match="no word"):
        type("Loose", (Rule,), {"NEEDS": String("reduce-overhead")})


def test_a_rule_derives_its_prefilters_from_its_needs():
    class Probe(Rule):
        CODE = "ROC999"
        NEEDS = Import("pynvml") | Call("torch.cuda.get_device_capability")
        LOCAL = True

    class Wider(Probe):  # inherits NEEDS and what was derived from it
        pass

    class Own(Probe):
        NEEDS = Keyword("mode")

    assert Probe.TRIGGERS == ("get_device_capability", "pynvml") == Wider.TRIGGERS
    assert Own.TRIGGERS == ("mode",)
    assert Probe.may_match(facts_of("import pynvml\n")) and not Probe.may_match(facts_of("import os\n"))
    assert Probe.reach(facts_of("import pynvml\n")) >= {"pynvml"}
    assert Rule.may_match(facts_of("x = 1\n")) and Rule.reach(facts_of("x = 1\n")) is None


def test_every_part_of_a_qualified_name_is_a_word_of_the_text():
    """The text prefilter of a name asks for each of its parts as a whole word: LibCST's
    provider builds a name from the binding of its first part (an import, which spells the
    module path) and the attributes after it. Checked on every name the provider gives a
    node of a set of sources, builtins and names of local scopes aside."""
    from tests.test_prescan import FOUND

    sources = SPELLINGS + [source for source, _ in FOUND] + [
        "import a.b.c as d\nd.e.f\nfrom x.y import z as w\nw.v\nclass K:\n    class L:\n        m = 1\nK.L.m\n",
        "from torch import cuda\nimport torch.cuda.graphs\ncuda.graph\ntorch.cuda.graphs.graph\n",
    ]
    checked = 0
    for source in sources:
        referenced, _, _ = provider_names(source)
        seen: dict = {}
        for name in referenced:
            if name.startswith("builtins.") or "<" in name or name.startswith("."):
                continue
            need = Name(name)
            assert passes_text(need, source), (name, source)
            assert all(any(holds_word(source, w, seen) for w in group) for group in need.words())
            checked += 1
    assert checked > 100, checked


def test_many_names_with_a_common_part_trigger_on_it():
    from rocmport.analysis.triton import LIBDEVICE_WITHOUT_HIP_NAMES

    need = Call(*LIBDEVICE_WITHOUT_HIP_NAMES)
    assert need.triggers() == ("libdevice",)  # one search, not 138
    assert ("libdevice",) in need.words() and ("triton",) in need.words()
    assert Call("a.x", "b.y").triggers() == ("x", "y")  # nothing in common: the last parts


def test_a_builtin_cannot_be_named():
    with pytest.raises(ValueError, match="builtin"):
        Call("builtins.setattr")


def test_the_words_of_alternatives_are_what_each_alternative_holds():
    """``(a1 and a2) or (b1 and b2)``: a group of words from each alternative, every pairing."""
    need = Attribute("capture_begin") | Call("torch.cuda.graph", "torch.cuda.make_graphed_callables")
    assert set(need.words()) == {("capture_begin", "cuda"), ("capture_begin", "torch"),
                                 ("capture_begin", "graph", "make_graphed_callables")}
    # a group implied by a smaller one goes
    assert (Keyword("a") & Keyword("a", "b")).words() == (("a",),)
    # many alternatives' triggers: a small group of words they all hold is the trigger
    kernels = Decorator("triton.jit", "triton.autotune", "triton.heuristics") | Call("triton.Config")
    assert kernels.triggers() == ("triton",)
    assert (kernels | Keyword("num_warps")).triggers() == ("num_warps", "triton")


def test_a_need_reads_what_it_asks_once_per_file():
    facts = facts_of("x = {'K': 1}\nf(mode='m', **kw)\nm['S'] = 2\ny = 448\n")
    assert _needs.keys(facts) == {"K", "mode", "S"}
    assert _needs.dict_keys(facts) == {"K"} and _needs.stored_keys(facts) == {"S"}
    assert _needs.strings(facts) is _needs.strings(facts)  # memoised in facts.memo
    assert "needs:strings" in facts.memo and _needs.numbers(facts) >= {448, 1, 2}


def test_the_prefilter_facts_hold_no_family_field():
    """``Facts`` is the name index every qualified-name question reads; what one rule family
    asks is computed from ``facts.nodes`` on first use (this module's helpers, ``facts.memo``)."""
    from rocmport.analysis.prescan import Facts

    assert set(Facts.__slots__) == {"bindings", "names", "attributes", "calls", "decorators", "other_bindings",
                                    "class_paths", "tree", "by_type", "_kinds", "_imports", "_module_imports",
                                    "index", "path", "memo"}
