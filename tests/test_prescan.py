"""The second prefilter (``rocmport.analysis.prescan`` and ``Rule.may_match``) only skips files that
cannot hold a finding: every spelling a rule knows is still found, with the shortcuts on and
off, and the near-misses it exists for are skipped before LibCST."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

from rocmport.analysis import prescan as _prescan
from rocmport.analysis.prescan import PREFILTER
from rocmport.config import Settings
from rocmport.inputs import check_bytes
from rocmport.registry import visitor_rules

# (source, a code it must report): spellings that reach a rule only through an import binding,
# a local import, a method, a decorator, a subscript or call in the chain, or a dict key.
FOUND = [
    ('import torch as t\nf = t.compile(g, mode="reduce-overhead")\n', "ROC101"),
    ('from torch import compile as c\nf = c(g, mode="max-autotune")\n', "ROC102"),
    ('def build(m):\n    import torch\n    return torch.compile(m, mode="reduce-overhead")\n', "ROC101"),
    ('import torch\nmodel.compile(mode="reduce-overhead")\n', "ROC101"),
    ('import functools\nimport torch\nc = functools.partial(torch.compile, mode="reduce-overhead")\n', "ROC101"),
    ('from functools import partial as p\nfrom torch import compile\nc = p(compile, mode="reduce-overhead")\n',
     "ROC101"),
    ('import torch\nf = torch.compile(g, mode=MODE)\n', "ROC104"),
    ('import torch\nf = torch.compile(g, options={"triton.cudagraphs": True})\n', "ROC103"),
    ('MODE = "reduce-overhead"\n', "ROC105"),
    ('import torch._inductor.config as ic\nic.triton.cudagraphs = True\n', "ROC201"),
    ('from torch._inductor import config\nconfig.max_autotune = True\n', "ROC203"),
    ('from torch._inductor.config import triton as t\nt.cudagraphs = True\n', "ROC201"),
    ('import torch\ncfg = torch._inductor.config\ncfg.max_autotune = True\n', "ROC203"),
    ('kwargs = {"options": {"max_autotune": True}}\n', "ROC203"),
    ('import torch\nsetattr(torch._inductor.config, "triton.cudagraphs", True)\n', "ROC201"),
    ('import builtins\nimport torch\nbuiltins.setattr(torch._inductor.config.triton, "cudagraphs", 1)\n', "ROC201"),
    ('import torch\nwith torch._inductor.config.patch(max_autotune=True):\n    pass\n', "ROC203"),
    ('import os\nos.environ["TORCHINDUCTOR_CUDAGRAPHS"] = "1"\n', "ROC602"),
    ('import os\nos.environ.update(TORCHINDUCTOR_MAX_AUTOTUNE="1")\n', "ROC601"),
    ('from os import environ as E\nE.setdefault("TORCHINDUCTOR_CUDAGRAPHS", "1")\n', "ROC602"),
    ('import subprocess\nsubprocess.run(c, env={"TORCHINDUCTOR_MAX_AUTOTUNE": "1"})\n', "ROC601"),
    ('import os\nimport subprocess\nenv = os.environ.copy()\nenv["TORCHINDUCTOR_MAX_AUTOTUNE_GEMM_BACKENDS"] = "TRITON"\n'
     'subprocess.run(c, env=env)\n', "ROC604"),
    ('import os\nimport torch._dynamo\nos.environ["TORCH_COMPILE_DEBUG"] = "1"\n', "ROC603"),
    ('import torch\nwith torch.cuda.graph(g):\n    y = x.item()\n', "ROC301"),
    ('import torch\nfrom torch.cuda import graph as G\nwith G(g):\n    torch.cuda.synchronize()\n', "ROC301"),
    ('import torch\nimport torch.cuda as tc\nwith tc.graph(g):\n    y = x.nonzero()\n', "ROC302"),
    ('import torch\ng.capture_begin()\ny = x.item()\ng.capture_end()\n', "ROC301"),
    ('import torch\ndef f(x):\n    return x.item()\ng = torch.cuda.make_graphed_callables(f, (x,))\n', "ROC301"),
    ('import torch\n@torch.compile\ndef f(x):\n    return x.item()\n', "ROC401"),
    ('import torch.version as tv\nif tv.cuda:\n    use_gpu()\n', "ROC701"),
    ('from torch import version\nn = version.cuda.split(".")\n', "ROC701"),
    ('from torch import compile as C\n@C\ndef f(x):\n    return x.item()\n', "ROC401"),
    ('from torch import compile as C\n@C(fullgraph=True)\nasync def f(x):\n    return x.item()\n', None),
    ('from torch import compile\ndef f(x):\n    print(x)\n    return x\nf = compile(f)\n', "ROC402"),
    ('import torch\n@torch.compile()\ndef f(x):\n    if x.sum() > 0:\n        return x\n    return -x\n', "ROC403"),
    ("import triton as tr\nimport triton.language as tl\n@tr.jit\ndef k(X, BLOCK: tl.constexpr):\n"
     "    o = tl.arange(0, BLOCK)\n    tl.store(X + o, tl.load(X + o))\n"
     "k[(1,)](x, BLOCK=32)\n", "ROC501"),
    ("from somewhere import kernel\nkernel[grid](x, num_warps=32)\n", "ROC503"),
    ("from triton import jit as J\nimport triton.language as tl\n@J\ndef k(X, BLOCK: tl.constexpr):\n"
     "    o = tl.arange(0, BLOCK)\n    tl.store(X + o, tl.load(X + o))\n"
     "k[(1,)](x, BLOCK=32)\n", "ROC501"),
    ("from triton import Config\nCONFIGS = [Config({'BLOCK': 64}, num_warps=32)]\n", None),
    # ROC511: an option's key joined from two literals (the text spells neither whole: the
    # rule's words are the config call's, not the key's)
    ("import triton\nCFG = [triton.Config({'waves_' 'per_eu': 2}, num_warps=4)]\n", "ROC511"),
    ("kernel[grid](x, matrix_instr_nonkdim=16)\n", "ROC511"),
    # ROC702 through a subscript, a name, .major of the properties, arithmetic, a tuple
    ("import torch\nuse_tma = torch.cuda.get_device_capability()[0] >= 9\n", "ROC702"),
    ("import torch\ncap = torch.cuda.get_device_capability()\nif cap >= (9, 0):\n    use_wgmma()\n", "ROC702"),
    ("from torch.cuda import get_device_properties as props\nif props(0).major == 9:\n    hopper()\n", "ROC702"),
    ("import torch\np = torch.cuda.get_device_properties(0)\nsm = p.major * 10 + p.minor\nif sm >= 90:\n"
     "    use_fa3()\n", "ROC702"),
    # ROC706: every spelling of the literal 448
    ("import torch\ny = x.clamp(-448.0, 448.).to(torch.float8_e4m3fn)\n", "ROC706"),
    ("FP8_E4M3_MAX = 448.000\n", "ROC706"),
    ("import torch\ny = torch.clamp(x, max=448).to(torch.float8_e4m3fn)\n", "ROC706"),
    ("import torch\nmajor, minor = torch.cuda.get_device_capability()\nif (major, minor) == (9, 0):\n"
     "    use_tma()\n", None),
    # ROC507: each import spelling of the CUDA libdevice, and a use through attributes
    ("import triton.language.extra.cuda.libdevice as ld\n", "ROC507"),
    ("from triton.language.extra.cuda.libdevice import fast_expf\n", "ROC507"),
    ("from triton.language.extra.cuda import (exp, libdevice)\n", "ROC507"),
    ("import triton.language as T\ny = T.extra.cuda.libdevice.tanh(x)\n", "ROC507"),
    # ROC512: 32 beside num_warps, a warp-size name given 32 (a constexpr call, a keyword,
    # a parameter default, a keyword-only one, a lambda's)
    ("import triton\ndef f(cfg):\n    return (32) * cfg.num_warps\n", "ROC512"),
    ("import triton\nimport triton.language as tl\nWARP_SIZE = tl.constexpr(value=0x20)\n", "ROC512"),
    ("import triton\nimport triton.language as tl\nWarpSize: tl.constexpr = 32\n", "ROC512"),
    ("import triton\ndef f(x, *, threads_per_warp=32):\n    return x\n", "ROC512"),
    ("import triton\ng = lambda n, warp_size=32: n // warp_size\n", "ROC512"),
    # ROC705: a reference that is not compared (an attribute of one, a bare import, a dict
    # value beside a comparison, a parameter named like the import)
    ("import torch\nsize = torch.float8_e4m3fn.itemsize if x == torch.float8_e4m3fn else 1\n", "ROC705"),
    ("from torch import float8_e4m3fn\nDTYPES = {'fp8': float8_e4m3fn}\nok = dtype in (float8_e4m3fn,)\n",
     "ROC705"),
    ("import triton.language as tl\ndef k(x):\n    return x.to(tl.float8e4nv) if x.dtype != tl.float8e4nv else x\n",
     "ROC705"),
    ("from torch import float8_e4m3fn\ndef f(float8_e4m3fn=float8_e4m3fn):\n    return float8_e4m3fn == 1\n", None),
    # ROC711: a format behind a vendor test: a branch, the else of a CUDA test, an and-chain,
    # an early exit, an assert, `not`, the module's own flag, a class's flag on self, a gate
    # imported from another module (which the file alone cannot read)
    ("import torch\nif torch.version.hip:\n    dtype = torch.float8_e4m3fnuz\n", "ROC711"),
    ("import torch\nif torch.version.cuda:\n    dtype = torch.float8_e4m3fn\nelse:\n"
     "    dtype = torch.float8_e4m3fnuz\n", "ROC711"),
    ("import torch\ndtype = torch.version.hip is not None and ready() and torch.float8_e4m3fnuz\n", "ROC711"),
    ("import torch\ndef pick():\n    if not torch.version.hip:\n        return None\n"
     "    return torch.float8_e4m3fnuz\n", "ROC711"),
    ("import torch\ndef pick():\n    assert torch.version.hip\n    return torch.float8_e4m3fnuz\n", "ROC711"),
    ("import torch\n_IS_HIP = torch.version.hip is not None\nx = torch.float8_e4m3fnuz if _IS_HIP else None\n",
     "ROC711"),
    ("import torch\nclass Q:\n    def __init__(self):\n        self.amd = torch.version.hip is not None\n"
     "    def dtype(self):\n        if self.amd:\n            return torch.float8_e4m3fnuz\n", "ROC711"),
    ("import torch\nfrom .utils import on_amd\nif on_amd:\n    dtype = torch.float8_e4m3fnuz\n", None),
    # ROC705: a reference beside no fnuz name; ROC503: a helper that returns its num_warps
    # (in a tuple; and an async def: the same with the prefilter off)
    ("import triton\ndef settings(n):\n    num_warps = 32\n    return n, num_warps\n", "ROC503"),
    ("import triton\nasync def settings(n):\n    num_warps = 32\n    return num_warps\n", None),
    # ROC701: every use _use names (a method, a subscript, a call, None tests, an ordering,
    # `in`, `+`, a test, `and`/`or`, `not`), through an alias of torch.version
    ("import torch\nmajor = torch.version.cuda.split('.')[0]\n", "ROC701"),
    ("import torch.version as V\nok = V.cuda[:2] == '12'\n", "ROC701"),
    ("import torch\nfrom packaging import version\nnew = version.parse(torch.version.cuda)\n", "ROC701"),
    ("import torch\nhas_gpu = torch.version.cuda is not None\n", "ROC701"),
    ("import torch\nnew = '11.8' <= torch.version.cuda\n", "ROC701"),
    ("import torch\nis_12 = '12' in torch.version.cuda\n", "ROC701"),
    ("import torch\ntag = 'cu' + torch.version.cuda\n", "ROC701"),
    ("import torch\nx = 1 if (torch.version.cuda) else 0\n", "ROC701"),
    ("import torch\nwhile torch.version.cuda and ready():\n    pass\n", "ROC701"),
    ("import torch\nif not torch.version.cuda:\n    use_cpu()\n", "ROC701"),
    # ROC20x in an options dict: a key, a dict() keyword, a subscript, an update
    ('import torch\nf = torch.compile(g, options={"max_autotune": True})\n', "ROC203"),
    ('import torch\nopts = dict(max_autotune=True)\nf = torch.compile(g, options=opts)\n', "ROC203"),
    ('import torch\nkw = {}\nkw["options"] = o = {}\no["max_autotune"] = True\nf = torch.compile(g, **kw)\n', None),
    ('import torch\nopts = {}\nopts.update(max_autotune=True)\nf = torch.compile(g, options=opts)\n', "ROC203"),
    # ROC703: NVML imports, and nvidia-smi in a list, an assigned name, an f-string, a concatenation
    ("import pynvml.smi as S\n", "ROC703"),
    ("from py3nvml import py3nvml\n", "ROC703"),
    ("import subprocess as sp\nout = sp.check_output(['/usr/bin/nvidia-smi', '-L'])\n", "ROC703"),
    ("import os\ncmd = f'nvidia-smi -i {i}'\nos.system(cmd)\n", "ROC703"),
    ("from subprocess import run\nrun('nvidia-smi' ' -q', shell=True)\n", "ROC703"),
    # ROC104: a parameter shadows the imported name: `model.compile` is a module's method there
    ("import mymodels as model\n\ndef f(model, m):\n    return model.compile(mode=m)\n", "ROC104"),
    # ROC201 through a name bound to the config, then to a part of it
    ("import torch\ncfg = torch._inductor.config\ntr = cfg.triton\ntr.cudagraphs = True\n", "ROC201"),
]

# Near-misses the prefilter is for: (source, the codes that must be skipped, a pattern).
# ROC105 looks at the bare literal, so a file that holds "reduce-overhead" always reaches it.
SKIPPED = [
    ('import re\np = re.compile("x", re.I)\n', "ROC10[1-46]"),
    ('import re\np = re.compile("x")\n', "ROC4"),
    ("def f(graph):\n    return graph.nodes\n", "ROC3"),
    ("def graph(x):\n    return x\nwith graph(g):\n    y = x.item()\n", "ROC3"),
    ('def compile(f, mode=None):\n    return f\ng = compile(h, mode="reduce-overhead")\n', "ROC10[1-46]"),
    ("from . import torch\n@torch.compile\ndef f(x):\n    return x.item()\n", "ROC4"),
    ('from torch import *\nf = compile(g, mode="reduce-overhead")\n', "ROC10[1-46]"),
    ("import numpy as np\nx = np.triton.jit\n", "ROC5"),
    ('"""with torch.cuda.graph(g): x.item()"""\nimport torch\n', "ROC3"),
    ('import torch\nif torch._inductor.config.max_autotune:\n    print("on")\n', "ROC2"),
    ('import os\nflag = os.environ.get("TORCHINDUCTOR_CUDAGRAPHS") == "1"\n', "ROC6"),
    ('import os\nos.environ["TORCHINDUCTOR_CACHE_DIR"] = "/tmp/c"\n', "ROC6"),
    # ROC702: the capability is read, but never compared with a literal generation
    ("import torch\ncap = torch.cuda.get_device_capability()\nprint(f'sm_{cap[0]}{cap[1]}', cap == other)\n",
     "ROC702"),
    ("import torch\nname = torch.cuda.get_device_properties(0).name\nif len(name) > 9:\n    pass\n", "ROC702"),
    # ROC706: 448 only in text, in another number or as an imaginary literal
    ('"""fp8 e4m3fn max is 448.0"""\nimport torch\nFP8_MAX = 4480  # not 448\nname = "fp8_448"\n', "ROC706"),
    ("import torch\nfp8_scale = 0.448 * x + 448j\n", "ROC706"),
    # ROC701: read, printed, compared with a string, or on the left of `in`
    ("import torch\nprint(f'CUDA {torch.version.cuda}', x=torch.version.cuda)\nis_121 = torch.version.cuda == '12.1'\n"
     "found = torch.version.cuda in versions\nv = torch.version.cuda\n", "ROC701"),
    ("import torch\nx = torch.cuda.is_available()\ny = torch.version.git_version\n", "ROC701"),
    # ROC20x: options dicts without an inductor key of the rule
    ('import torch\n# no cudagraphs here\nf = torch.compile(g, options={"trace.enabled": True})\n'
     'parser.add(options=["cudagraphs"])\n', "ROC201"),
    # ROC703: the words in a mapping, a docstring or a relative module; no process call
    ('"""Reads nvml counters; see nvidia-smi."""\nimport torch\nMAP = {"nvmlInit": "rsmi_init", "nvidia-smi": "rocm-smi"}\n'
     "from .pynvml import x\n", "ROC703"),
    # ROC705: every reference compared (directly, in a tuple, a list or a set, nested)
    ("import torch\nif x.dtype == torch.float8_e4m3fn or x.dtype in [torch.float8_e4m3fn, (torch.float8_e4m3fn,)]:\n"
     "    pass\nname = 'float8_e4m3fn'\n", "ROC705"),
    ("from torch import float8_e4m3fn\nis_fp8 = dtype in {float8_e4m3fn}\n", "ROC705"),
    # ROC705: the module names the fnuz format (it converts between the two) or a gfx9 target
    ("import torch\nw = w.to(torch.float8_e4m3fn)\nREF = torch.float8_e4m3fnuz\n", "ROC705"),
    ('import torch\nTARGET = "gfx942"\ndtype = torch.float8_e4m3fn\n', "ROC705"),
    # ROC711: formats with no vendor test in the file (a GPU test is true on both vendors; a
    # dtype comparison is no platform test)
    ("import torch\nif torch.cuda.is_available():\n    dtype = torch.float8_e4m3fnuz\n", "ROC711"),
    ("import torch\ndef f(x):\n    if x.dtype == torch.float8_e4m3fnuz:\n        return x.float()\n"
     "    return torch.float8_e4m3fn\n", "ROC711"),
    # ROC507: the word in names, strings and the neutral module
    ('import triton\nfrom triton.language.extra import libdevice\nops.libdevice("x")\nname = "libdevice"\n',
     "ROC507"),
    ("import triton\nfrom mypkg.cuda import libdevice\ny = libdevice.exp(x)\n", "ROC507"),
    # ROC512: warp names and 32, never in a reported shape
    ("import triton\nWARP_SIZE = 64\nn = num_warps * 4\nBLOCK = 32\n", "ROC512"),
    ("import triton\ndef f(x, warp_size=64, block=32):\n    return x * 32\nthreads = num_warps * 64\n", "ROC512"),
    ('import argparse\np = argparse.ArgumentParser()\np.add_argument("--compile-mode", choices=["reduce-overhead"])\n', "ROC10[1-46]"),
    # ROC10x: `.compile(**kw)` of a name only a module-level import above it binds: not a module
    ("import triton\n\ndef build(args, kw):\n    return triton.compile(*args, **kw)\n", "ROC10[1-46]"),
]


def _findings(source: str, settings: "Settings | None" = None):
    report = check_bytes(source.encode(), "t.py", settings or Settings())
    assert report.internal_error is None, report.internal_error
    return [(f.code, f.start.row, f.start.column, f.message) for f in report.findings]


@pytest.mark.parametrize("source,code", FOUND)
def test_every_spelling_is_still_found(source, code):
    with_filter = _findings(source)
    PREFILTER["enabled"] = False
    try:
        without = _findings(source)
    finally:
        PREFILTER["enabled"] = True
    assert with_filter == without
    if code is not None:
        assert code in {c for c, *_ in with_filter}, with_filter


@pytest.mark.parametrize("source,family", SKIPPED)
def test_near_misses_are_skipped_before_libcst(source, family):
    facts = _prescan.Facts.of(ast.parse(source))
    rules = [r for r in visitor_rules() if re.match(family, r.CODE)
             and (not r.TRIGGERS or any(t in source for t in r.TRIGGERS))]
    assert rules, "the near-miss must pass the text triggers, or it tests nothing"
    assert [r.CODE for r in rules if r.may_match(facts)] == []
    # and the rules, run anyway, agree that there is nothing to find
    PREFILTER["enabled"] = False
    try:
        assert not [c for c, *_ in _findings(source) if re.match(family, c)]
    finally:
        PREFILTER["enabled"] = True


# Rules' WORDS: (source, code) spellings that still pass, with every rule on
WORDS_FOUND = [
    ('import torch.cuda as tc\ntc.synchronize()\n', "ROC306"),
    ('from torch.cuda import synchronize as s\ns()\n', "ROC306"),
    ('import torch\nfrom torch.cuda import graph as G\nwith G(g):\n    y = x.item()\n', "ROC301"),
    ('from torch.cuda import make_graphed_callables as mgc\ndef f(x):\n    return x.item()\n'
     'g = mgc(f, (x,))\n', "ROC301"),
    ('from torch import compiler\n@compiler.compile\ndef f(x):\n    return x.item()\n', "ROC401"),
]
# and near misses that pass the TRIGGERS but not the WORDS: no CPython parse at all
WORDS_SKIPPED = [
    ("import torch\ngm = torch.fx.symbolic_trace(m)\nn = gm.graph_module\nnodes = list(gm.graph.nodes)\n", "ROC30"),
    ("import threading\nthreading.Event().synchronize()\n", "ROC306"),
    ("import sys\nprint(sys.version)\nx = t.cudagraph_version\n", "ROC701"),
    ("import re\nPATTERN = re.compile(r'x')\n", "ROC40"),
]
EVERY_RULE = Settings(extend_select=tuple(r.CODE for r in visitor_rules()))


@pytest.mark.parametrize("text", ["graph", "a.graph(", "graphs", "_graph", "x graph_", "\u00e9graph graph2", "xgraph",
                                  "graph\u00e9", "(graph)", "graph\n", "g.\\\n    graph", "# graph", "graph\u0301"])
def test_a_whole_word_is_what_the_regex_calls_one(text):
    from rocmport.registry import holds_word as _holds_word

    assert _holds_word(text, "graph", {}) == bool(re.search(r"\bgraph\b", text))


@pytest.mark.parametrize("text", ["graph", "a.graph(", "graphs", "_graph", "x graph_", "\u00e9graph graph2", "xgraph",
                                  "graph\u00e9", "(graph)", "graph\n", "g.\\\n    graph", "# graph", "graph\u0301"])
def test_the_word_runs_answer_as_the_whole_text(text):
    """The prefilter looks for a needle of word characters in the text's distinct runs of
    them (``registry.WordRuns``): the same answers as a search of the whole text, for
    substrings and whole words, with non-ASCII letters, surrogates and punctuation around."""
    from rocmport.registry import WordRuns, holds_word

    needles = ["graph", "raph", "graph2", "a.graph", "# graph", "graph\n", "x graph_", "\u00e9graph", "ph gr",
               "graph\u0301", "", " ", "\ud800", "2"]
    for extra in ("", "\ud800", " cuda-graph max-autotune\t\u00e9"):
        scan = WordRuns(text + extra)
        for needle in needles:
            assert scan.holds(needle) == (needle in text + extra), (text, extra, needle)
        for word in ("graph", "graph2", "cuda", "autotune", "max"):
            assert scan.holds_word(word, {}) == holds_word(text + extra, word, {}), (text, extra, word)


@pytest.mark.parametrize("source,code", WORDS_FOUND)
def test_every_spelling_passes_the_words(source, code):
    with_filter = _findings(source, EVERY_RULE)
    PREFILTER["enabled"] = False
    try:
        assert with_filter == _findings(source, EVERY_RULE)
    finally:
        PREFILTER["enabled"] = True
    assert code in {c for c, *_ in with_filter}, with_filter


@pytest.mark.parametrize("source,family", WORDS_SKIPPED)
def test_near_misses_of_the_words_are_skipped_before_any_parse(source, family, monkeypatch):
    from rocmport import parsing

    rules = [r for r in visitor_rules() if r.CODE.startswith(family)]
    assert all(r.WORDS for r in rules)
    assert any(any(t in source for t in r.TRIGGERS) for r in rules), "it must pass the TRIGGERS, or it tests nothing"
    parsed = []
    real = parsing.cpython_parse
    monkeypatch.setattr(parsing, "cpython_parse", lambda text: parsed.append(text) or real(text))
    settings = Settings(select=tuple(r.CODE for r in rules))
    assert _findings(source, settings) == [] and parsed == []
    PREFILTER["enabled"] = False  # the rules, run anyway, agree
    try:
        assert _findings(source, settings) == []
    finally:
        PREFILTER["enabled"] = True


def test_qualified_names_follow_the_provider():
    source = ("import torch\nimport torch.cuda as tc\nfrom torch.cuda import graph as G\n"
              "from . import rel\nx = torch.cuda[0].graph\ny = tc.graph(g).replay\nz = G\nw = local.graph\n")
    tree = ast.parse(source)
    facts = _prescan.Facts.of(tree)
    values = [stmt.value for stmt in tree.body if isinstance(stmt, ast.Assign)]
    assert [facts.qualified_names(v) for v in values] == [
        {"torch.cuda.graph"}, {"torch.cuda.graph.replay"}, {"torch.cuda.graph"}, set()]
    assert "rel" not in facts.bindings  # relative: the provider's name starts with "."
    assert facts.may_reference({"torch.cuda.graph"})
    assert not facts.may_reference({"torch.cuda.make_graphed_callables"})
    assert facts.may_reference_under("torch.cuda")
    assert not facts.may_reference_under("torch._inductor.config")


def test_a_file_cpython_cannot_parse_skips_the_prefilter():
    # Python 3.12 syntax on an older interpreter, or a syntax error: LibCST decides.
    tree, error = _prescan.parse("def f(:\n    pass\n")
    assert tree is None and isinstance(error, SyntaxError)
    assert _findings('import torch\nf = torch.compile(g, mode="reduce-overhead")\ndef f(:\n')[0][0] == "ROC001"


def compare_with_the_provider(text: str, label: str = "") -> "tuple[int, int]":
    """Ask ``import_names`` (with the scopes) for every dotted name read in ``text`` and
    compare each answer it gives with QualifiedNameProvider's, less the names of function
    scopes. Returns (answers, answers the scopes decided)."""
    import libcst as cst
    from libcst.metadata import MetadataWrapper, ParentNodeProvider, QualifiedNameProvider
    from libcst.metadata.base_provider import LazyValue

    from rocmport.analysis.names import import_names
    from rocmport.analysis.resolve import ScopeBindings

    tree, _ = _prescan.parse(text)
    try:
        module = cst.parse_module(text)
    except Exception:
        return 0, 0
    if tree is None:
        return 0, 0
    facts = _prescan.Facts.of(tree)
    classes = facts.class_roots()
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    provider = wrapper.resolve(QualifiedNameProvider)
    scopes = ScopeBindings(module, wrapper.resolve(ParentNodeProvider).get)
    skip = set()
    counts = [0, 0]

    def relevant(names):
        # names in a function's or comprehension's scope ("f.<locals>.x") and in a class
        # ("A.x"): no rule looks for one, and the table may leave them out
        return {q for q in names if "<" not in q.name and not ("." in q.name and q.name.split(".", 1)[0] in classes)}

    class Check(cst.CSTVisitor):
        def on_visit(self, node):
            if isinstance(node, (cst.Import, cst.ImportFrom, cst.Global, cst.Nonlocal)):
                return False  # the names these bind or declare are not reads: rules never ask
            if isinstance(node, cst.Attribute):
                skip.add(id(node.attr))  # ``.sum`` of ``x.sum``: a part, not a read
            elif isinstance(node, cst.Arg) and node.keyword is not None:
                skip.add(id(node.keyword))  # ``mode`` of ``mode=...``
            if id(node) in skip:
                return True
            if isinstance(node, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) and node in provider:
                fast = import_names(node, facts, scopes)
                if fast is not None:
                    value = provider[node]
                    value = value() if isinstance(value, LazyValue) else value
                    scoped = import_names(node, facts) is None  # decided by the scopes, not the table
                    assert relevant(fast) == relevant(value), (label, module.code_for_node(node)[:80], fast, value,
                                                               "scoped" if scoped else "table")
                    counts[0] += 1
                    counts[1] += scoped
            return True

    module.visit(Check())
    return counts[0], counts[1]


@pytest.mark.slow
def test_import_table_answers_like_the_provider():
    """For every dotted name read in a corpus that the import table answers (its root bound
    only by module-level imports, only at module level, only in functions, or by nothing),
    or that the scopes around the read decide, the answer is QualifiedNameProvider's, less
    the names of function scopes."""
    from tests.test_performance_features import corpus

    files = [p for p in corpus() if p.suffix == ".py" and p.stat().st_size < 60_000]
    answers = 0
    for path in files:
        answers += compare_with_the_provider(path.read_text(encoding="utf-8", errors="replace"), str(path))[0]
    assert answers > 1000, answers


# A name bound in several ways: each read is decided by the scopes around it.
SCOPES = """
import torch
import torch.cuda as tc
import numpy as np


def param(torch):
    return torch.compile(x)


def param_or_import(np=None):
    if np is None:
        import numpy as np
    return np.zeros


def local():
    torch = make()
    return torch.compile(x)


def shadows_a_builtin():
    print(str(torch))
    str = "s"
    return str


def inner_import():
    import triton as torch
    return torch.compile(x)


def reads_the_module():
    return torch.compile(x), [torch.cuda for torch2 in y]


def declared_global():
    global tc
    tc = None
    return tc.graph


def outer():
    tc = 1

    def inner():
        nonlocal tc
        return tc.graph

    def sees_outer():
        return tc.graph

    return inner, sees_outer


def annotated_only():
    np: int
    return np.zeros


def caught():
    try:
        pass
    except E as np:
        return np.zeros


def deleted():
    del np
    return np.zeros


def comprehension():
    return [torch.compile for torch in y], torch.compile(z)


def walrus():
    return [(np := 1) for _ in y], np.zeros


def defaults(a=torch.compile, b=lambda torch: torch.compile, c=lambda: torch.compile):
    return a, b, c


def matched(v):
    match v:
        case [np]:
            return np.zeros
        case {**torch}:
            return torch.compile


class Model:
    np = None
    z = np.zeros

    def forward(self):
        return np.zeros, torch.compile


first = [np.zeros for np in range(3)]
iterable = [x for x in np.arange(3)]


def binds_h():
    h = 1
    return h


table = {k: h for k in iterable if (h := k)}
"""


def test_reads_of_a_name_bound_several_ways_answer_like_the_provider():
    answers, scoped = compare_with_the_provider(SCOPES, "SCOPES")
    assert scoped >= 25, (answers, scoped)


DUNDERS = """
import os
import torch as __t
__x = os.path
a = __name__.upper()
b = __file__, __doc__, __builtins__, __debug__, __spec__.name, __loader__, __package__, __path__
c = __dict__, __annotations__, __import__("torch").compile, __build_class__


class A:
    __y = 1

    def m(self):
        return __class__.mro, __t.compile(m), __x.join, __y, super().x

    q = __qualname__, __module__, __t.cuda


def f():
    __t = None
    return __name__, __t
"""


def test_dunder_names_answer_like_the_provider_without_asking_it():
    """``__name__`` and the module object's own attributes (``__dict__``, ``__class__``) are
    builtins to LibCST (``hasattr(builtins, name)``), and it mangles no ``__x`` in a class."""
    import libcst as cst

    from rocmport.analysis.names import import_names

    answers, _ = compare_with_the_provider(DUNDERS, "DUNDERS")
    module = cst.parse_module(DUNDERS)
    reads = []

    class Reads(cst.CSTVisitor):  # names read: not attribute names, not what imports bind
        def visit_Name(self, node):
            reads.append(node)

        def visit_Attribute(self, node):
            node.value.visit(self)
            return False

        def visit_Import(self, node):
            return False

    module.visit(Reads())
    facts = _prescan.Facts.of(ast.parse(DUNDERS))
    dunders = [n for n in reads if n.value.startswith("__") and n.value != "__t"]  # __t: bound two ways
    assert dunders and all(import_names(n, facts) is not None for n in dunders)
    assert answers >= 40, answers


def test_a_name_bound_several_ways_needs_no_whole_module_scope_analysis():
    """``torch`` imported at module level and a parameter elsewhere (the shape of torch's
    common_utils, 4 s of LibCST's scope analysis): each read is decided by its own scopes,
    with the findings the provider gives."""
    from rocmport.analysis.metadata import STATS

    source = ("import torch\n\n\ndef helper(torch, g):\n    return torch.compile(g, mode='max-autotune')\n\n\n"
              "def real(g):\n    return torch.compile(g, mode='max-autotune')\n\n\n"
              "def inner(g):\n    import torch\n    return torch.compile(g, mode='reduce-overhead')\n")
    before = STATS.copy()
    found = _findings(source)
    assert not [key for key in STATS - before if key.startswith("resolve:")], STATS - before
    assert {("ROC102", 9), ("ROC101", 14)} <= {(code, row) for code, row, *_ in found}
    PREFILTER["enabled"] = False
    try:
        assert _findings(source) == found
    finally:
        PREFILTER["enabled"] = True


def test_names_answer_as_the_set_they_stand_for():
    """``Facts.roots``/``qualified_names`` answer without listing every class path (a file
    with thousands of classes made the prefilter quadratic); the answers are the listed set's."""
    import itertools

    from rocmport.analysis.prescan import Names

    paths = frozenset({"A", "A.B", "torch", "C.torch"})
    queries = ["x", "A.x", "A.B.x", "C.x", "torch.x", "torch.x.y", "x.y", "A.x.y", "torch.compile",
               "torch.compile.x", "C.torch.x", "A.B", ""]
    for bound, local, tail in itertools.product([frozenset(), frozenset({"torch", "torch.cuda"})],
                                                [None, "x", "compile"], ["", ".y", ".compile"]):
        names = Names(bound, local, paths).with_tail(tail)
        listed = set(Names(bound, local, paths, tail))
        assert names == listed and bool(names) == bool(listed)
        for q in queries:
            assert (q in names) == (q in listed), (bound, local, tail, q)
            assert names.any_under(q) == any(n == q or n.startswith(q + ".") for n in listed), (bound, local, tail, q)
        assert names & set(queries) == listed & set(queries)
        assert names.isdisjoint(queries) == listed.isdisjoint(queries)


def test_the_prefilter_walk_is_ast_walk_less_contexts_and_operators():
    """``_prescan.walk`` yields ``ast.walk``'s nodes in its order, less the leaves no
    prefilter reads (expression contexts, operators), and files each under its type."""
    leaves = (ast.expr_context, ast.operator, ast.unaryop, ast.boolop, ast.cmpop)
    sources = [p.read_text() for p in sorted((Path(__file__).resolve().parent.parent / "rocmport").rglob("*.py"))]
    sources.append("match x:\n    case {'a': [1, *r]} | P(y=2) as z if z:\n        pass\n"
                   "async def f(a, /, *b, c=1, **d):\n    global g\n    return [i async for i in a] @ -b\n")
    if sys.version_info >= (3, 12):
        sources.append("type Pair[T] = tuple[T, T]\n")  # the alias' name is a Name node
    for source in sources:
        tree = ast.parse(source)
        by_type: dict = {}
        ours = _prescan.walk(tree, by_type)
        assert ours == [n for n in ast.walk(tree) if not isinstance(n, leaves)]
        assert {k: v for k, v in by_type.items()} == {
            kind: [n for n in ours if type(n) is kind] for kind in {type(n) for n in ours}}


def test_the_binders_own_traversal_is_ast_node_visitors():
    """``_Binder`` looks its methods up once per node type and passes by the fields that hold
    no node it binds from: the same bindings as ``ast.NodeVisitor``'s traversal, on a file
    with every kind of binding and on rocmport's own sources."""
    import ast
    from pathlib import Path

    from rocmport.analysis import prescan as _prescan

    class Reference(_prescan._Binder):
        visit = ast.NodeVisitor.visit
        generic_visit = ast.NodeVisitor.generic_visit

    every_kind = (
        "import a.b as c\nfrom .d import e\nx: int = 1\n(y := 2)\nfor i, *j in k: pass\n"
        "with open(p) as (f, g): pass\ntry: pass\nexcept E as err: pass\n"
        "def h(a, /, b=lambda q: q, *c, d: T = [z for z in w], **kw):\n    global G\n    G = 1\n"
        "    def inner():\n        nonlocal a\n        import m\n    return {k2: v for k2, v in kw.items()}\n"
        "class C(Base, metaclass=M):\n    attr = 1\n    def method(self): self.x = [u async for u in aiter()]\n"
        "match s:\n    case [1, *rest]: pass\n    case {'k': v2, **others}: pass\n    case P(x=px) as whole: pass\n"
    )
    sources = [every_kind] + [path.read_text() for path in sorted(Path(_prescan.__file__).parent.glob("*.py"))]
    found = []
    for source in sources:
        tree = ast.parse(source)
        ours, reference = _prescan._Binder(), Reference()
        ours.visit(tree)
        reference.visit(tree)
        assert (ours.kinds, ours.imports, ours.module_imports) == \
            (reference.kinds, reference.imports, reference.module_imports)
        found.append(ours.kinds)
    assert {"c", "e", "x", "y", "i", "j", "f", "g", "err", "h", "G", "inner", "m", "C", "attr", "method", "rest",
            "v2", "others", "px", "whole", "z", "k2", "u"} <= set(found[0])


# -- hand-written prefilters (docs/performance.md, "Declared once") ---------------------------

def _own(rule, name: str):
    """The class at or above ``rule`` (below ``Rule``) that defines ``name``, or None when the
    rule uses the one derived from its ``NEEDS``."""
    from rocmport.rules.base import Rule

    for klass in rule.__mro__:
        if klass is Rule:
            return None
        if name in vars(klass):
            return klass
    return None


# Rules that keep a hand-written ``may_match``: each is narrower than its NEEDS on the torch
# package, where the files it spares would reach LibCST (benchmarks/bench.py, docs/performance.md).
# ROC503's helper path reads only a num_warps variable assigned a literal above 16: its NEEDS
# (triton imported and such a number) holds on any Triton file that says 32, and the rule, which
# follows launches, is not LOCAL, so the file would keep every definition (tests/test_opaque.py).
# ROC10x has no NEEDS: a call of a project function (the index) can hand torch.compile a mode.
# ROC401-405 (graph breaks) and ROC712 need a project function of another module (a helper
# that compiles, a wrapper that queries the device), which only the index can tell: their
# NEEDS is a name that spells one (``Identifier``), and the fast path asks the index.
HAND_WRITTEN_MAY_MATCH = {"ROC101", "ROC102", "ROC103", "ROC104", "ROC106", "ROC201", "ROC202", "ROC203", "ROC204",
                          "ROC205", "ROC401", "ROC402", "ROC403", "ROC404", "ROC405", "ROC503", "ROC512", "ROC701", "ROC702",
                          "ROC705", "ROC707", "ROC708", "ROC709", "ROC710", "ROC711", "ROC712"}
HAND_WRITTEN_REACH = {"ROC201", "ROC202", "ROC203", "ROC204", "ROC205", "ROC512", "ROC701", "ROC702", "ROC707", "ROC708",
                      "ROC709", "ROC710", "ROC712"}
# Rules whose findings depend on the project's other modules, which a need of one file cannot
# say: ROC707 and ROC708 (the project modules whose import runs CUDA-only code: their
# ``index_triggers`` give the words from the project index), ROC709 (platform predicates
# defined in other modules, and spellings no need expresses: any name holding "cuda", "hip").
CROSS_MODULE_WITHOUT_NEEDS = {"ROC707", "ROC708", "ROC709"}


def test_the_hand_written_prefilters_are_the_measured_ones():
    rules = visitor_rules()
    assert {r.CODE for r in rules if _own(r, "may_match")} == HAND_WRITTEN_MAY_MATCH
    assert {r.CODE for r in rules if _own(r, "reach")} == HAND_WRITTEN_REACH
    # and every other rule declares what it needs
    assert {r.CODE for r in rules if r.NEEDS is None} == {"ROC101", "ROC102", "ROC103", "ROC104", "ROC106"} \
        | CROSS_MODULE_WITHOUT_NEEDS


def _prescan_corpus(with_files: bool):
    """The sources of this module and every rule case; ``with_files``: and the prescan corpus
    (fixtures, examples, a sample of the torch package)."""
    texts = [source for source, _ in FOUND + SKIPPED + WORDS_FOUND + WORDS_SKIPPED]
    for rule in visitor_rules():
        texts += [case.code for case in tuple(rule.VALID) + tuple(rule.INVALID)]
    if with_files:
        from tests.test_performance_features import corpus

        texts += [p.read_text(encoding="utf-8", errors="replace") for p in corpus()]
    out = []
    for text in texts:
        tree, _ = _prescan.parse(text)
        if tree is not None:
            out.append((text, tree))
    return out


@pytest.mark.parametrize("with_files", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_a_hand_written_prefilter_answers_within_its_rules_needs(with_files):
    """Wherever a hand-written ``may_match`` lets a file through, the rule's declared NEEDS
    holds there too (and its text prefilter passes): the declaration is the outer bound that
    the fast path narrows, on every source of the prescan corpus."""
    from rocmport.registry import holds_word

    rules = [r for r in visitor_rules() if r.CODE in HAND_WRITTEN_MAY_MATCH and r.NEEDS is not None]
    corpus = _prescan_corpus(with_files)
    assert len(corpus) > (600 if with_files else 450)
    narrower = 0
    for text, tree in corpus:
        facts = _prescan.Facts.of(tree)
        seen: dict = {}
        for rule in rules:
            hand, derived = rule.may_match(facts), rule.NEEDS.holds(facts)
            assert derived or not hand, (rule.CODE, text[:200])
            if hand:
                words = rule.NEEDS.words()
                assert all(any(holds_word(text, w, seen) for w in group) for group in words), (rule.CODE, text[:200])
            narrower += derived and not hand
    assert narrower > 0  # the fast paths do spare files
