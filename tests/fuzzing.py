"""Shared by ``tests/test_properties.py`` (a modest CI budget) and ``benchmarks/fuzz.py``
(long runs): hypothesis strategies for generated modules, generated modules with hazard
snippets spliced in, and one checker that sorts any failure into a category.

The properties (issue 8): ``lint`` and ``fix`` never raise and never report an internal
error; the fixed output parses (with CPython's compiler too, when the input compiled); a
second ``fix`` changes nothing; every byte outside the fixed spans is kept
(``tests.harness.assert_fix_properties``).
"""

from __future__ import annotations

import ast
import traceback
from dataclasses import dataclass
from typing import List, Optional, Tuple

import hypothesmith
import libcst as cst
from hypothesis import strategies as st

from rocmport.inputs import check_bytes
from rocmport.prelude import PreludeOptions
from rocmport.source import SourceError, SourceText

from .harness import assert_fix_properties, settings, split_lines

# One or more hazards of every rule family, each a self-contained piece of module code.
SNIPPETS: List[Tuple[str, str]] = [
    # ROC1xx compile modes
    ("compile_modes", 'import torch\nf = torch.compile(g, mode="reduce-overhead")\n'),
    ("compile_modes", 'import torch\n@torch.compile(mode="max-autotune", fullgraph=True)\ndef step(x):\n'
                      '    return x + 1\n'),
    ("compile_modes", 'import torch as th\nfrom functools import partial\nc = partial(th.compile, mode="reduce-overhead")\n'
                      'm = model.compile(mode="max-autotune")\n'),
    ("compile_modes", 'import torch\ndef build(model, cfg):\n    return torch.compile(model, mode=cfg.compile_mode)\n'),
    ("compile_modes", 'import torch\nf = torch.compile(g, options={"triton.cudagraphs": True})\n'),
    ("compile_modes", 'from dataclasses import dataclass\n@dataclass\nclass C:\n    compile_mode: str = "reduce-overhead"\n'),
    # ROC2xx inductor configuration
    ("inductor_config", 'import torch\ntorch._inductor.config.triton.cudagraphs = True\n'),
    ("inductor_config", 'from torch._inductor import config\nconfig.memory_planning = True\n'
                        'config.max_autotune_gemm_backends = "triton,aten"\n'),
    ("inductor_config", 'import torch._inductor.config as ic\nic.triton.cudagraph_trees = True\n'
                        'opts = {"max_autotune": True}\nf = torch.compile(g, options=opts)\n'),
    # ROC6xx environment variables
    ("env_vars", 'import os\nos.environ["TORCHINDUCTOR_MAX_AUTOTUNE"] = "1"\n'),
    ("env_vars", 'import os\nimport subprocess\nsubprocess.run(cmd, env={**os.environ, "TORCHINDUCTOR_CUDAGRAPHS": "1"})\n'),
    ("env_vars", 'import os\nimport torch._inductor.config\nos.environ["TORCHINDUCTOR_CUDAGRAPHS"] = "0"\n'
                 'os.environ.update({"TORCHINDUCTOR_MAX_AUTOTUNE_GEMM_BACKENDS": "TRITON,ATEN"})\n'),
    # ROC3xx capture blocks
    ("capture", 'import torch\ndef f(g, x):\n    with torch.cuda.graph(g):\n        y = x * 2\n'
                '        torch.cuda.synchronize()\n        idx = torch.nonzero(x)\n'),
    ("capture", 'import torch\ndef f(g, x):\n    with torch.cuda.graph(g):\n        s = torch.cuda.get_rng_state()\n'
                '        t = torch.tensor([0.5], device="cuda")\n'),
    ("capture", 'import torch\ndef run(f, g, x):\n    cf = torch.compile(f)\n    with torch.cuda.graph(g):\n'
                '        y = cf(x)\n'),
    # ROC4xx compiled functions (graph breaks)
    ("compiled_functions", 'import torch\n@torch.compile\ndef f(x):\n    print("step")\n'
                           '    if x.sum() > 0:\n        return x.sum().item()\n    return -x\n'),
    ("compiled_functions", 'import torch\nclass M(torch.nn.Module):\n    def forward(self, x):\n'
                           '        return x.max().item()\nm = torch.compile(M())\n'),
    # ROC5xx Triton kernels
    ("triton", 'import torch\nimport triton\nimport triton.language as tl\n\n@triton.jit\n'
               'def add_one(x_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):\n'
               '    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)\n    mask = offs < n\n'
               '    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1, mask=mask)\n\n'
               'def f(x, o, n):\n    add_one[(triton.cdiv(n, 32),)](x, o, n, BLOCK_SIZE=32)\n'),
    ("triton", 'import triton\ncfg = triton.Config({"BLOCK": 4096}, num_warps=32)\n'),
    ("triton", 'import triton\nimport triton.language as tl\n@triton.jit\ndef k(o, p, B: tl.constexpr):\n'
               '    acc = tl.zeros((B,), dtype=tl.float16)\n    acc += 1\n    x = tl.load(p)\n'
               '    tl.store(o, acc + 1.0 / (1.0 + tl.exp(-x)))\n'),
]
FAMILIES = sorted({family for family, _ in SNIPPETS})


def _rule_cases() -> List[str]:
    from rocmport.registry import visitor_rules

    return [case.code for rule in visitor_rules() for case in rule.INVALID]


def all_snippets() -> List[str]:
    """The family snippets above, then every rule's own INVALID cases."""
    return [code for _, code in SNIPPETS] + _rule_cases()


# ------------------------------------------------------------------------------------------
# Strategies
# ------------------------------------------------------------------------------------------

_GENERATED: Optional[st.SearchStrategy[str]] = None


def generated_modules() -> st.SearchStrategy[str]:
    """Whole modules from hypothesmith: by grammar (odd but valid) and by LibCST node.
    Built once: ``from_grammar()`` builds a Lark parser, seconds each time."""
    global _GENERATED
    if _GENERATED is None:
        _GENERATED = st.one_of(hypothesmith.from_grammar(), hypothesmith.from_node())
    return _GENERATED


def _top_level_starts(source: str) -> List[int]:
    """0-based line indices where a top-level statement (with its decorators) starts."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    starts = set()
    for node in tree.body:
        line = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        starts.add(line - 1)
    return sorted(starts)


def _indent(snippet: str, prefix: str) -> str:
    return "".join(prefix + line if line.strip() else line for line in snippet.splitlines(keepends=True))


WRAPPERS = {
    "top": lambda s, ind: s,
    "def": lambda s, ind: "def _fuzz_wrapper():\n" + _indent(s, ind),
    "class": lambda s, ind: "class _FuzzWrapper:\n" + _indent(s, ind),
    "if": lambda s, ind: "if _fuzz_flag:\n" + _indent(s, ind) + "else:\n" + ind + "pass\n",
    "try": lambda s, ind: "try:\n" + _indent(s, ind) + "except Exception:\n" + ind + "pass\n",
}


@st.composite
def spliced_modules(draw, snippets: Optional[List[str]] = None) -> str:
    """A generated module with one to three hazard snippets spliced in at top-level
    statement boundaries, optionally wrapped in a block, with a random indent."""
    base = draw(generated_modules())
    if base and not base.endswith(("\n", "\r")):
        base += "\n"
    pool = snippets or all_snippets()
    lines = base.splitlines(keepends=True)
    starts = _top_level_starts(base)
    # never before a __future__ import: it must stay first
    future_end = 0
    for i, line in enumerate(lines):
        if line.lstrip().startswith("from __future__"):
            future_end = i + 1
    positions = sorted({p for p in starts if p >= future_end} | {len(lines)})
    inserts = draw(st.lists(st.tuples(st.sampled_from(positions), st.sampled_from(pool),
                                      st.sampled_from(sorted(WRAPPERS)), st.sampled_from(["    ", "\t", "  "])),
                            min_size=1, max_size=3))
    for position, snippet, wrapper, indent in sorted(inserts, key=lambda t: -t[0]):
        lines[position:position] = [WRAPPERS[wrapper](snippet, indent)]
    return "".join(lines)


@st.composite
def encoded(draw, sources: st.SearchStrategy[str]) -> bytes:
    """Source text as bytes, with the line endings, BOM or form feeds a real file may have."""
    text = draw(sources)
    newline = draw(st.sampled_from(["\n", "\n", "\r\n", "\r"]))
    if newline != "\n":
        text = text.replace("\r\n", "\n").replace("\n", newline)
    if draw(st.booleans()) and draw(st.booleans()):  # a form feed at the start of a line
        lines = text.splitlines(keepends=True)
        if lines:
            i = draw(st.integers(0, len(lines) - 1))
            if not lines[i][:1].isspace():
                lines[i] = "\x0c" + lines[i]
            text = "".join(lines)
    data = text.encode("utf-8", "surrogatepass")
    if draw(st.integers(0, 7)) == 0:
        data = b"\xef\xbb\xbf" + data
    return data


# ------------------------------------------------------------------------------------------
# The checker
# ------------------------------------------------------------------------------------------

CATEGORIES = ("crash", "non-parsing", "non-idempotent", "byte-preservation", "fix-not-applied")


@dataclass
class Failure:
    category: str
    detail: str


def _compiles(data: bytes) -> bool:
    try:
        text = SourceText.from_bytes(data).text
        compile(text, "<fuzz>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
        return True
    except (SourceError, SyntaxError, ValueError, RecursionError, MemoryError):
        return False


# The default prelude is about 5 kB of generated code that every re-analysis of a fixed
# file visits; "slim" (no inductor set-up, no RNG patch) makes a check about five times
# faster and exercises the same fixes, so long runs use it for most examples.
PRELUDES = {"default": PreludeOptions(), "slim": PreludeOptions(rng_patch=False, inductor_setup=False)}


def check(data: bytes, path: str = "fuzz_module.py", prelude: str = "default") -> Optional[Failure]:
    """None when every property holds; else the first failure, categorised."""
    kw = {"prelude": PRELUDES[prelude]}
    # assert_fix_properties lints, fixes and fixes again; an internal error fails its asserts
    try:
        fixed = assert_fix_properties(data, path=path, **kw).fixed
    except AssertionError as exc:
        message = str(exc)
        if "second fix changed" in message:
            return Failure("non-idempotent", message)
        if "missing or changed" in message or message == "":
            return Failure("byte-preservation", message or "the BOM was lost")
        if "fixable findings but nothing changed" in message:
            return Failure("fix-not-applied", message)
        return Failure("crash", message)
    except cst.ParserSyntaxError as exc:
        return Failure("non-parsing", f"fixed output does not parse: {exc}")
    except BaseException as exc:  # noqa: BLE001
        if isinstance(exc, KeyboardInterrupt):
            raise
        return Failure("crash", f"fix raised {type(exc).__name__}: {exc}\n{traceback.format_exc(limit=8)}")
    if fixed is not None and _compiles(data) and not _compiles(fixed):
        return Failure("non-parsing", "the input compiled with CPython, the fixed output does not")
    return None
