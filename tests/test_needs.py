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

from rocmport.analysis.needs import AllOf, AnyOf, Attribute, Call, Decorator, Import, Keyword, Name, String
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
])
def test_what_a_need_names_holds_and_passes_the_text(need, source):
    assert need.holds(facts_of(source))
    assert passes_text(need, source)


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
