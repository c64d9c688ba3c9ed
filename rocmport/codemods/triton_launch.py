"""ROC5xx: Triton launch and tile parameters that fit NVIDIA's 32-lane warps, not AMD's
64-lane wavefronts.

A kernel is a function decorated with ``triton.jit`` / ``triton.autotune`` /
``triton.heuristics`` in any spelling; its block sizes are ``tl.constexpr`` parameters used
as ``tl.arange`` extents. The per-file analysis lives in :mod:`rocmport.codemods._triton` and is
computed once for all these rules.
"""

from __future__ import annotations

import ast
import re
from typing import Dict, FrozenSet, List, Optional, Set, Tuple

import libcst as cst
from libcst.metadata import ParentNodeProvider, PositionProvider, QualifiedNameProvider

from rocmport.findings import Applicability, Fix

from . import _walk
from ._triton import (AMD_ONLY_OPTIONS, CLAMPS, CONFIG_NAMES, CUDA_LIBDEVICE, DOT, EXP_NAMES, HALF_DTYPES, INLINE_ASM,
                      KERNEL_DECORATORS, LIBDEVICE_PORTABLE, LIBDEVICE_WITHOUT_HIP_NAMES, TL, ZEROS, Kernel, Site,
                      TritonAnalysis, analysis, int_value, names_in, next_pow2_at_least_64)
from .base import _ROCM_WORD, Case, Rule, SpanError, dotted_name, keyword, literal_string

WAVEFRONT = 64
MAX_WARPS = 16
_TRIGGERS = ("triton",)


class _TritonRule(Rule):
    METADATA_DEPENDENCIES = (PositionProvider, ParentNodeProvider, QualifiedNameProvider)
    TRIGGERS = _TRIGGERS

    @classmethod
    def may_match(cls, facts) -> bool:
        # Kernels need a triton.jit / autotune / heuristics decorator, configs a
        # triton.Config call (``TritonAnalysis._collect``); ROC503 also reads num_warps=
        # of any ``kernel[grid](...)`` launch.
        return (facts.decorated_with(KERNEL_DECORATORS) or any(facts.calls_to(CONFIG_NAMES))
                or (cls is TritonNumWarps and "num_warps" in facts.subscript_call_keywords))

    def visit_Module(self, node: cst.Module) -> None:
        a = analysis(self.context)
        if a.foreign_file or not a.kernels and not a.configs and not a.subscript_calls:
            return
        self.check(a)

    def check(self, a: TritonAnalysis) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def skipped(self, a: TritonAnalysis, *nodes: Optional[cst.CSTNode]) -> bool:
        """Already gated on ROCm, or code for another accelerator."""
        for node in nodes:
            if node is None:
                continue
            if self.in_rocm_branch(node) or a.in_foreign_branch(node):
                return True
        return False

    def gated(self, node: cst.CSTNode, rocm_value: int) -> str:
        text = f"{rocm_value} if {self.context.gate_name} else {self.context.source(node)}"
        parent = self.parent(node)
        if isinstance(parent, (cst.Arg, cst.DictElement, cst.Assign, cst.AnnAssign, cst.Param)):
            return text
        return f"({text})"


# ------------------------------------------------------------------------------------------
# ROC501
# ------------------------------------------------------------------------------------------

_MASKED_KERNEL = (
    "import torch\nimport triton\nimport triton.language as tl\n\n"
    "@triton.jit\ndef add_one(x_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):\n"
    "    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)\n"
    "    mask = offs < n\n"
    "    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1, mask=mask)\n\n"
)


class TritonBlockSize(_TritonRule):
    CODE = "ROC501"
    NAME = "triton-block-not-wavefront-multiple"
    SUMMARY = "A 1-D Triton block that is not a multiple of AMD's 64-lane wavefront."
    WHAT = """
        The value of a kernel's 1-D block: a `tl.constexpr` parameter that is the only extent
        of `tl.arange` in the kernel (typically `BLOCK_SIZE`), when the value is a known integer
        that is not a multiple of 64. Values are followed from launch keywords
        (`kernel[grid](..., BLOCK_SIZE=32)`) and positional arguments, from `triton.Config`
        dicts in the kernel's autotune configs (a literal list, a module constant, a list
        built by a function of the same file), from `tl.constexpr` defaults, and from module or
        function constants handed to a launch (`BLOCK = 32 ... BLOCK_SIZE=BLOCK`). Values in
        ROCm-only branches, already gated values (`64 if is_rocm else 32`), multiples of 64,
        constants that never reach a Triton kernel, and code for other accelerators (an
        Ascend/NPU path or an `is_npu()` branch) are not findings.
        """
    WHY = """
        AMD GPUs execute 64-lane wavefronts; NVIDIA's warps have 32 lanes. A block of 32
        elements fills one NVIDIA warp but only half of an AMD wavefront: the other lanes hold
        replicated data on every program, so the kernel runs at half throughput or worse.
        """
    EXAMPLE = _MASKED_KERNEL + (
        "BLOCK = 32\n\n"
        "def add(x):\n"
        "    out = torch.empty_like(x)\n"
        "    add_one[(triton.cdiv(x.numel(), BLOCK),)](x, out, x.numel(), BLOCK_SIZE=BLOCK)\n"
        "    return out\n")
    FIXED_EXAMPLE = _MASKED_KERNEL + (
        "BLOCK = 64 if is_rocm else 32\n\n"
        "def add(x):\n"
        "    out = torch.empty_like(x)\n"
        "    add_one[(triton.cdiv(x.numel(), BLOCK),)](x, out, x.numel(), BLOCK_SIZE=BLOCK)\n"
        "    return out\n")
    FIX = """
        The value becomes `<P> if is_rocm else <value>`, where P is the next power of two that
        is at least 64 and at least the value (`tl.arange` needs a power of two): on NVIDIA
        the expression evaluates to the original value.

        Safe only when both hold: (a) every use of the value is rewritten together: the
        constant's definition is rewritten and the grid uses the same name
        (`triton.cdiv(n, BLOCK)`), or the launch literal and the same literal in the grid are
        rewritten in one fix, or the grid is a function that reads the block from its
        `META` argument (autotune configs); and (b) the kernel masks every load and store
        that the block indexes (`mask=` depending on the block's offsets, or
        `boundary_check`), stores no value computed from the block size, and neither sums
        over the block (a larger block changes the order of float additions) nor uses
        atomics. Otherwise the fix is unsafe: applied only with `--unsafe-fixes`, since a
        larger block can read or write out of range, or change how many programs the grid
        launches. `tl.constexpr` defaults, configs passed through a helper rocmport cannot
        see into, and grids that do not follow the value are unsafe for that reason.
        """
    FIX_APPLICABILITY = Applicability.SAFE
    VALID = (
        Case(_MASKED_KERNEL + "def f(x, o, n):\n    add_one[(triton.cdiv(n, 64),)](x, o, n, BLOCK_SIZE=64)\n"),
        Case(_MASKED_KERNEL + "def f(x, o, n):\n    add_one[(triton.cdiv(n, 256),)](x, o, n, BLOCK_SIZE=256)\n"),
        Case(_MASKED_KERNEL + "def f(x, o, n):\n    b = 64 if is_rocm else 32\n"
             "    add_one[(triton.cdiv(n, b),)](x, o, n, BLOCK_SIZE=b)\n"),
        Case(_MASKED_KERNEL + "def f(x, o, n):\n    add_one[(triton.cdiv(n, 64 if is_rocm else 32),)]"
             "(x, o, n, BLOCK_SIZE=64 if is_rocm else 32)\n"),
        Case(_MASKED_KERNEL + "def f(x, o, n):\n    if torch.version.hip:\n"
             "        add_one[(triton.cdiv(n, 32),)](x, o, n, BLOCK_SIZE=32)\n"),
        Case("import triton\nMXFP4_BLOCK_SIZE = 32\ndef pack(x):\n    return x.view(-1, MXFP4_BLOCK_SIZE)\n"),
        Case("import triton\nfrom torch.nn.attention.flex_attention import create_block_mask\n"
             "m = create_block_mask(fn, 1, 1, 128, 128, BLOCK_SIZE=32)\n"),
        Case(_MASKED_KERNEL + "def f(x, o, n):\n    if is_npu():\n"
             "        add_one[(triton.cdiv(n, 32),)](x, o, n, BLOCK_SIZE=32)\n"),
        Case(_MASKED_KERNEL + "def f(x, o, n, b):\n    add_one[(triton.cdiv(n, b),)](x, o, n, BLOCK_SIZE=b)\n"),
    )
    INVALID = (
        Case(_MASKED_KERNEL + "def f(x, o, n):\n    add_one[(triton.cdiv(n, 32),)](x, o, n, BLOCK_SIZE=32)\n",
             _MASKED_KERNEL.replace("as tl\n", "as tl\n\n{PRELUDE}\n", 1)
             + "def f(x, o, n):\n    add_one[(triton.cdiv(n, 64 if is_rocm else 32),)]"
               "(x, o, n, BLOCK_SIZE=64 if is_rocm else 32)\n"),
        Case("import torch\nimport triton\nimport triton.language as tl\n\n"
             "@triton.jit\ndef k(x_ptr, BLOCK: tl.constexpr = 16):\n"
             "    offs = tl.arange(0, BLOCK)\n    tl.store(x_ptr + offs, 0.0)\n"),
    )

    def check(self, a: TritonAnalysis) -> None:
        by_node: Dict[int, List[Site]] = {}
        order: List[cst.Integer] = []
        for kernel in a.kernels.values():
            param = kernel.one_d
            if param is None or self.skipped(a, kernel.func):
                continue
            for site in a.sites(kernel, param):
                if site.value is None or site.value <= 0 or site.value % WAVEFRONT == 0:
                    continue
                if self.skipped(a, site.node, site.via):
                    continue
                if id(site.node) not in by_node:
                    order.append(site.node)
                by_node.setdefault(id(site.node), []).append(site)
        for node in order:
            self._report(a, node, by_node[id(node)])

    def _report(self, a: TritonAnalysis, node: cst.Integer, sites: List[Site]) -> None:
        value = sites[0].value
        rocm = next_pow2_at_least_64(value)
        extra: List[cst.Integer] = []
        problems: List[str] = []
        for site in sites:
            problem = a.mask_problem(site.kernel, site.param)
            if problem:
                problems.append(f"`{site.kernel.name}`: {problem}")
            problems.extend(self._use_problems(a, site, extra))
        seen: Set[int] = {id(node)}
        edits = [self.context.replace(node, self.gated(node, rocm))]
        for literal in extra:
            if id(literal) not in seen and not self.in_rocm_branch(literal):
                seen.add(id(literal))
                edits.append(self.context.replace(literal, self.gated(literal, rocm)))
        params = sorted({s.param for s in sites})
        kernels = sorted({s.kernel.name for s in sites})
        name = sites[0].const_name
        what = f"{name} = {value}" if name else f"{params[0]}={value}"
        message = (f"{what} is a 1-D Triton block of `{'`, `'.join(kernels)}` that is not a multiple of 64:"
                   f" AMD wavefronts have 64 lanes, so lanes idle on every program; use {rocm} on ROCm")
        if problems:
            message += f" (fix unsafe: {problems[0]})"
            applicability = Applicability.UNSAFE
        else:
            applicability = Applicability.SAFE
        self.report(node, message, fix=Fix(applicability, f"Use a block of {rocm} on ROCm", tuple(edits), ("gate",)))

    def _use_problems(self, a: TritonAnalysis, site: Site, extra: List[cst.Integer]) -> List[str]:
        kernel, param = site.kernel, site.param
        if site.kind == "default":
            return [f"the default of {param} is used by launches whose grid rocmport cannot rewrite with it"]
        problems: List[str] = []
        if site.const_name is not None or site.kind == "launch":
            if site.kind == "launch" or site.via is not None and not a.call_is(site.via, CONFIG_NAMES):
                launches = [l for l in kernel.launches if l.call is site.via]
                if site.const_name is not None:
                    # every launch that uses the constant
                    launches = [l for l in kernel.launches
                                if isinstance(l.args.get(param), cst.Name)
                                and l.args[param].value == site.const_name
                                and a.constant(l.args[param])[0] is site.node]
                for launch in launches:
                    ok, literals, reason = a.grid_plan(launch, param, site)
                    if not ok:
                        problems.append(f"`{kernel.name}` launch: {reason}")
                    extra.extend(literals)
                return problems
        # an autotune config value (literal or constant)
        if kernel.configs_wrapped:
            problems.append("the configs go through a helper rocmport cannot see into")
        for launch in kernel.launches:
            ok, _, reason = a.grid_plan(launch, param, site)
            if not ok:
                problems.append(f"`{kernel.name}` launch: {reason}")
        return problems


# ------------------------------------------------------------------------------------------
# ROC502
# ------------------------------------------------------------------------------------------

_GEMM_HEAD = (
    "import triton\nimport triton.language as tl\n\n"
    "@triton.jit\ndef mm(a, b, c, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):\n"
    "    rm = tl.arange(0, BLOCK_M)\n    rn = tl.arange(0, BLOCK_N)\n"
    "    x = tl.load(a + rm[:, None] * BLOCK_N + rn[None, :])\n"
    "    tl.store(c + rm[:, None] * BLOCK_N + rn[None, :], x)\n\n"
)


class TritonSmallTile(_TritonRule):
    CODE = "ROC502"
    NAME = "triton-tile-below-wavefront"
    SUMMARY = "A multi-dimensional Triton tile with fewer than 64 elements."
    WHAT = """
        A kernel whose `tl.arange` extents are two or more block dimensions, given values
        (by an autotune `triton.Config`, a launch, constants or `tl.constexpr` defaults) whose
        product is below 64. Dimensions below 64 whose product is 64 or more are fine (AMD's
        own tuned GEMM configs use BLOCK_K of 16 and 32). A dimension whose value is known
        only at run time (e.g. `triton.next_power_of_2(n)`) means no finding.
        """
    WHY = """
        A tile of fewer than 64 elements cannot fill one 64-lane AMD wavefront: lanes idle or
        hold replicated elements on every program.
        """
    EXAMPLE = _GEMM_HEAD + "def run(a, b, c):\n    mm[(1,)](a, b, c, BLOCK_M=4, BLOCK_N=8)\n"
    FIX = """
        Display-only. Grow the tile on ROCm (e.g. `BLOCK_M=8 if is_rocm else 4`) where the
        kernel's masks, grid and shared-memory budget allow it; rocmport cannot check them for
        a multi-dimensional tile.
        """
    FIX_APPLICABILITY = Applicability.DISPLAY_ONLY
    VALID = (
        Case(_GEMM_HEAD + "def run(a, b, c):\n    mm[(1,)](a, b, c, BLOCK_M=32, BLOCK_N=16)\n"),
        Case(_GEMM_HEAD + "def run(a, b, c, n):\n    mm[(1,)](a, b, c, BLOCK_M=4, BLOCK_N=triton.next_power_of_2(n))\n"),
        Case(_GEMM_HEAD.replace("@triton.jit", "@triton.autotune(configs=[triton.Config({'BLOCK_M': 64, 'BLOCK_N': 16})],"
                                " key=[])\n@triton.jit")),
        Case(_GEMM_HEAD + "def run(a, b, c):\n    mm[(1,)](a, b, c, BLOCK_M=16 if is_rocm else 4, BLOCK_N=8)\n"),
    )
    INVALID = (
        Case(_GEMM_HEAD + "def run(a, b, c):\n    mm[(1,)](a, b, c, BLOCK_M=4, BLOCK_N=8)\n"),
        Case(_GEMM_HEAD.replace("@triton.jit", "@triton.autotune(configs=[triton.Config({'BLOCK_M': 2, 'BLOCK_N': 16})],"
                                " key=[])\n@triton.jit")),
    )

    def check(self, a: TritonAnalysis) -> None:
        for kernel in a.kernels.values():
            if len(kernel.dims) < 2 or kernel.unknown_extent or self.skipped(a, kernel.func):
                continue
            sources: List[Optional[cst.CSTNode]] = list(kernel.configs)
            if not kernel.configs:
                sources += [l.call for l in kernel.launches]
            if not sources:
                sources = [None]
            for source in sources:
                values = []
                for dim in kernel.dims:
                    values.append(dim if isinstance(dim, int) else a.value_of(kernel, dim, source))
                if any(v is None for v in values):
                    continue
                product = 1
                for v in values:
                    product *= v
                if product >= WAVEFRONT or product <= 0:
                    continue
                node = source if source is not None else kernel.func.name
                if self.skipped(a, node) or self._gated_source(kernel, source):
                    continue
                shape = " x ".join(str(v) for v in values)
                self.report(node, f"`{kernel.name}` tile {shape} has {product} elements, fewer than one 64-lane"
                                  " AMD wavefront: lanes idle on every program; grow it on ROCm",
                            fix=Fix(Applicability.DISPLAY_ONLY, "Use a tile of at least 64 elements on ROCm"))

    def _gated_source(self, kernel: Kernel, source: Optional[cst.CSTNode]) -> bool:
        return False


# ------------------------------------------------------------------------------------------
# ROC503
# ------------------------------------------------------------------------------------------

class TritonNumWarps(_TritonRule):
    CODE = "ROC503"
    NAME = "triton-num-warps-above-16"
    SUMMARY = "num_warps above 16: more than 1024 threads per workgroup on AMD."
    TRIGGERS = ("triton", "num_warps")  # a launch of an imported kernel need not say "triton"
    WHAT = """
        `num_warps=` above 16 in a Triton launch (`kernel[grid](..., num_warps=32)`) or a
        `triton.Config(..., num_warps=32)`, given as a literal or a constant.
        """
    WHY = """
        On AMD a warp is a 64-lane wavefront and a workgroup holds at most 1024 threads, so
        `num_warps` above 16 fails to launch. NVIDIA allows 32 warps of 32 threads.
        """
    EXAMPLE = """
        import triton
        cfg = triton.Config({"BLOCK": 4096}, num_warps=32)
        """
    FIXED_EXAMPLE = """
        import triton
        cfg = triton.Config({"BLOCK": 4096}, num_warps=16 if is_rocm else 32)
        """
    FIX = """
        Safe: the value becomes `16 if is_rocm else <value>`, unchanged on NVIDIA. The number
        of warps changes speed, not results. A constant that is used for anything other than
        `num_warps=` is rewritten only with `--unsafe-fixes`.
        """
    FIX_APPLICABILITY = Applicability.SAFE
    VALID = (
        Case('import triton\ncfg = triton.Config({"BLOCK": 1024}, num_warps=16)\n'),
        Case('import triton\ncfg = triton.Config({"BLOCK": 1024}, num_warps=16 if is_rocm else 32)\n'),
        Case('import triton\nimport torch\nif torch.version.hip is None:\n    W = 32\nelse:\n    W = 16\n'),
        Case('import triton\ndef f(x):\n    return launch(x, num_warps=32)\n'),
    )
    INVALID = (
        Case('import triton\ncfg = triton.Config({"BLOCK": 4096}, num_warps=32)\n',
             'import torch\nimport triton\n\nis_rocm = getattr(torch.version, "hip", None) is not None\n\ncfg = triton.Config({"BLOCK": 4096}, num_warps=16 if is_rocm else 32)\n'),
        Case("import triton\nimport triton.language as tl\n@triton.jit\ndef k(x, B: tl.constexpr):\n    pass\n"
             "W = 32\ndef f(x):\n    k[(1,)](x, B=1024, num_warps=W)\n",
             'import torch\nimport triton\nimport triton.language as tl\n\nis_rocm = getattr(torch.version, "hip", None) is not None\n\n@triton.jit\ndef k(x, B: tl.constexpr):\n    pass\nW = 16 if is_rocm else 32\ndef f(x):\n    k[(1,)](x, B=1024, num_warps=W)\n'),
    )

    def check(self, a: TritonAnalysis) -> None:
        seen: Set[int] = set()
        calls = list(a.configs) + [c for c in a.subscript_calls]
        for call in calls:
            arg = keyword(call, "num_warps")
            if arg is None and a.call_is(call, CONFIG_NAMES):
                positional = [x for x in call.args if x.keyword is None]
                arg = positional[1] if len(positional) > 1 else None
            if arg is None or self.skipped(a, call, arg.value):
                continue
            node, name = a.constant(arg.value)
            value = int_value(node)
            if value is None or value <= MAX_WARPS or id(node) in seen or self.skipped(a, node):
                continue
            seen.add(id(node))
            applicability = Applicability.SAFE
            if name is not None and not self._only_num_warps(a, name):
                applicability = Applicability.UNSAFE
            what = f"{name} = {value}" if name else f"num_warps={value}"
            self.report(node, f"{what} launches {value * 64} threads per workgroup on AMD (64-lane warps),"
                              " above the limit of 1024: the kernel fails to launch; cap it at 16 on ROCm",
                        fix=Fix(applicability, "Cap num_warps at 16 on ROCm",
                                (self.context.replace(node, self.gated(node, MAX_WARPS)),), ("gate",)))

    def _only_num_warps(self, a: TritonAnalysis, name: str) -> bool:
        import re

        text = self.context.text
        uses = len(re.findall(rf"(?<![\w.]){re.escape(name)}(?!\w)", text))
        warps = len(re.findall(rf"\bnum_warps\s*=\s*{re.escape(name)}(?!\w)", text))
        return uses == warps + 1


# ------------------------------------------------------------------------------------------
# ROC504
# ------------------------------------------------------------------------------------------

class TritonHalfAccumulator(_TritonRule):
    CODE = "ROC504"
    NAME = "triton-half-precision-accumulator"
    SUMMARY = "An fp16/bf16 accumulator in a Triton kernel."
    WHAT = """
        An accumulator created in half precision (`acc = tl.zeros(..., dtype=tl.float16)` or
        `tl.bfloat16`, also `tl.full`) inside a kernel and then accumulated into (`acc += ...`,
        `acc = acc + ...`, `acc = tl.dot(a, b, acc)`).
        """
    WHY = """
        AMD's matrix cores (MFMA) accumulate in fp32; a half-precision accumulator forces
        extra conversions and loses precision over long reductions, and results differ from
        NVIDIA's more than rounding explains.
        """
    EXAMPLE = """
        import triton
        import triton.language as tl

        @triton.jit
        def k(a_ptr, out_ptr, N: tl.constexpr, BLOCK: tl.constexpr):
            acc = tl.zeros((BLOCK,), dtype=tl.float16)
            for i in range(N):
                acc += tl.load(a_ptr + i * BLOCK + tl.arange(0, BLOCK))
            tl.store(out_ptr + tl.arange(0, BLOCK), acc)
        """
    FIX = """
        Display-only: create the accumulator in `tl.float32` and convert once at the end
        (`acc.to(tl.float16)`). This changes numerics, so rocmport never applies it.
        """
    FIX_APPLICABILITY = Applicability.DISPLAY_ONLY
    VALID = (
        Case("import triton\nimport triton.language as tl\n@triton.jit\ndef k(o, B: tl.constexpr):\n"
             "    acc = tl.zeros((B,), dtype=tl.float32)\n    acc += 1\n    tl.store(o, acc)\n"),
        Case("import triton\nimport triton.language as tl\n@triton.jit\ndef k(o, B: tl.constexpr):\n"
             "    z = tl.zeros((B,), dtype=tl.float16)\n    tl.store(o, z)\n"),
        Case("import torch\nimport triton\nacc = torch.zeros(4, dtype=torch.float16)\nacc += 1\n"),
    )
    INVALID = (
        Case("import triton\nimport triton.language as tl\n@triton.jit\ndef k(o, B: tl.constexpr):\n"
             "    acc = tl.zeros((B,), dtype=tl.float16)\n    acc += 1\n    tl.store(o, acc)\n"),
        Case("import triton\nimport triton.language as tl\n@triton.jit\ndef k(a, b, o, B: tl.constexpr):\n"
             "    acc = tl.zeros((B, B), tl.bfloat16)\n    acc = tl.dot(a, b, acc)\n    tl.store(o, acc)\n"),
    )

    def check(self, a: TritonAnalysis) -> None:
        for kernel in a.kernels.values():
            if self.skipped(a, kernel.func):
                continue
            creations: Dict[str, cst.Call] = {}
            accumulated: Set[str] = set()
            rule = self

            class _V(cst.CSTVisitor):
                def visit_Assign(self, n: cst.Assign) -> None:
                    if len(n.targets) != 1 or not isinstance(n.targets[0].target, cst.Name):
                        return
                    name = n.targets[0].target.value
                    value = n.value
                    if a.call_is(value, ZEROS) and rule._half(a, value):
                        creations.setdefault(name, value)
                    elif isinstance(value, cst.BinaryOperation) and name in names_in(value):
                        accumulated.add(name)
                    elif a.call_is(value, DOT):
                        acc = keyword(value, "acc")
                        positional = [x for x in value.args if x.keyword is None]
                        acc = acc.value if acc is not None else (positional[2].value if len(positional) > 2 else None)
                        if isinstance(acc, cst.Name) and acc.value == name:
                            accumulated.add(name)

                def visit_AugAssign(self, n: cst.AugAssign) -> None:
                    if isinstance(n.target, cst.Name):
                        accumulated.add(n.target.value)

            _walk.visit(kernel.func.body, _V())
            for name, call in creations.items():
                if name in accumulated and not self.skipped(a, call):
                    self.report(call, f"`{name}` accumulates in half precision; on AMD accumulate in"
                                      " tl.float32 and convert once at the end",
                                fix=Fix(Applicability.DISPLAY_ONLY, "Accumulate in tl.float32"))

    def _half(self, a: TritonAnalysis, call: cst.Call) -> bool:
        dtype = keyword(call, "dtype")
        positional = [x for x in call.args if x.keyword is None]
        index = 2 if a.call_is(call, {"triton.language.full"}) else 1
        expr = dtype.value if dtype is not None else (positional[index].value if len(positional) > index else None)
        if expr is None:
            return False
        if a.is_(expr, HALF_DTYPES):
            return True
        return False


# ------------------------------------------------------------------------------------------
# ROC505
# ------------------------------------------------------------------------------------------

class TritonUnclampedExp(_TritonRule):
    CODE = "ROC505"
    NAME = "triton-unclamped-exp-activation"
    SUMMARY = "A hand-built tanh (a ratio of tl.exp terms) without a clamp of its input."
    WHAT = """
        A division whose denominator adds to (or subtracts from) a `tl.exp` / `tl.exp2` of a
        kernel value and whose numerator holds one too, as in `(e - 1) / (e + 1)` with
        `e = tl.exp(2 * x)`, when the exponent is not bounded first (`tl.clamp`,
        `tl.minimum`/`tl.maximum`, `tl.where`, or the `-tl.abs(x)` form). Not flagged:
        sigmoid and SiLU (`1 / (1 + tl.exp(-x))`, `x / (1 + tl.exp(-x))`): an infinite
        denominator gives 0 there, never NaN, and a clamp would change their result.
        """
    WHY = """
        `tl.exp` overflows to inf above about 88 in fp32 (11 in fp16); `inf / inf` gives NaN.
        AMD's fast exp paths reach inf and flush denormals differently from NVIDIA's, so
        inputs that happened to work on NVIDIA produce NaN on ROCm.
        """
    EXAMPLE = """
        import triton
        import triton.language as tl

        @triton.jit
        def tanh_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            x = tl.load(x_ptr + offs)
            e = tl.exp(2 * x)
            tl.store(out_ptr + offs, (e - 1) / (e + 1))
        """
    FIX = """
        Display-only: clamp the input to [-10, 10] first (`x = tl.clamp(x, -10.0, 10.0)`;
        tanh and sigmoid are saturated there), or use `tl.sigmoid` / libdevice's `tanh`.
        It changes numerics slightly, so rocmport never applies it.
        """
    FIX_APPLICABILITY = Applicability.DISPLAY_ONLY
    VALID = (
        Case("import triton\nimport triton.language as tl\n@triton.jit\ndef k(p):\n    x = tl.load(p)\n"
             "    x = tl.clamp(x, -10.0, 10.0)\n    e = tl.exp(2 * x)\n    tl.store(p, (e - 1) / (e + 1))\n"),
        Case("import triton\nimport triton.language as tl\n@triton.jit\ndef k(p):\n    x = tl.load(p)\n"
             "    m = tl.max(x, 0)\n    e = tl.exp(x - m)\n    tl.store(p, e / tl.sum(e, 0))\n"),
        Case("import triton\nimport triton.language as tl\n@triton.jit\ndef k(p):\n    x = tl.load(p)\n"
             "    tl.store(p, 1 / (1 + tl.exp(-tl.abs(x))))\n"),
        Case("import math\nimport triton\ndef f(x):\n    return 1 / (1 + math.exp(-x))\n"),
        Case("import triton\nimport triton.language as tl\n@triton.jit\ndef k(p):\n    x = tl.load(p)\n"
             "    tl.store(p, 1.0 / (1.0 + tl.exp(-x)))\n"),
        Case("import triton\nimport triton.language as tl\n@triton.jit\ndef k(p):\n    x = tl.load(p)\n"
             "    tl.store(p, x / (1 + tl.exp(-x)))\n"),
    )
    INVALID = (
        Case("import triton\nimport triton.language as tl\n@triton.jit\ndef k(p):\n    x = tl.load(p)\n"
             "    tl.store(p, (tl.exp(x) - tl.exp(-x)) / (tl.exp(x) + tl.exp(-x)))\n"),
        Case("import triton\nimport triton.language as tl\n@triton.jit\ndef k(p):\n    x = tl.load(p)\n"
             "    e = tl.exp(2 * x)\n    tl.store(p, (e - 1) / (e + 1))\n"),
    )

    def check(self, a: TritonAnalysis) -> None:
        for kernel in a.kernels.values():
            if self.skipped(a, kernel.func):
                continue
            assigned: Dict[str, List[cst.BaseExpression]] = {}
            divisions: List[cst.BinaryOperation] = []

            class _V(cst.CSTVisitor):
                def visit_Assign(self, n: cst.Assign) -> None:
                    for t in n.targets:
                        if isinstance(t.target, cst.Name):
                            assigned.setdefault(t.target.value, []).append(n.value)

                def visit_AnnAssign(self, n: cst.AnnAssign) -> None:
                    if isinstance(n.target, cst.Name) and n.value is not None:
                        assigned.setdefault(n.target.value, []).append(n.value)

                def visit_BinaryOperation(self, n: cst.BinaryOperation) -> None:
                    if isinstance(n.operator, cst.Divide):
                        divisions.append(n)

            _walk.visit(kernel.func.body, _V())
            for div in divisions:
                exps = self._exp_in_sum(a, div.right, assigned)
                if not exps or not self._exp_calls(a, div.left, assigned):
                    continue  # no exp above the line: sigmoid, SiLU (an inf below gives 0, not NaN)
                if all(self._clamped(a, e.args[0].value if e.args else e, assigned, 0) for e in exps):
                    continue
                if self.skipped(a, div):
                    continue
                self.report(div, "hand-built tanh/sigmoid on tl.exp with no clamp of its input: exp overflows to"
                                 " inf and inf/inf is NaN; clamp the input to [-10, 10] first",
                            fix=Fix(Applicability.DISPLAY_ONLY, "Clamp the input to [-10, 10], or use tl.sigmoid"))

    def _exp_calls(self, a: TritonAnalysis, expr: cst.CSTNode, assigned, depth: int = 0) -> List[cst.Call]:
        found: List[cst.Call] = []
        rule = self

        class _V(cst.CSTVisitor):
            def visit_Call(self, n: cst.Call) -> Optional[bool]:
                if a.call_is(n, EXP_NAMES):
                    found.append(n)
                    return False
                return None

            def visit_Name(self, n: cst.Name) -> None:
                if depth < 2:
                    for value in assigned.get(n.value, ()):
                        if a.call_is(value, EXP_NAMES):
                            found.append(value)

        _walk.visit(expr, _V())
        del rule
        return found

    def _exp_in_sum(self, a: TritonAnalysis, denominator: cst.BaseExpression, assigned) -> List[cst.Call]:
        """exp calls that are an operand of a + or - inside the denominator."""
        found: List[cst.Call] = []
        sums: List[cst.BinaryOperation] = []

        class _V(cst.CSTVisitor):
            def visit_BinaryOperation(self, n: cst.BinaryOperation) -> None:
                if isinstance(n.operator, (cst.Add, cst.Subtract)):
                    sums.append(n)

            def visit_Call(self, n: cst.Call) -> bool:
                return False  # tl.sum(e) and the like are not a hand-built activation

        _walk.visit(denominator, _V())
        for s in sums:
            for side in (s.left, s.right):
                if isinstance(side, (cst.Call, cst.Name)):
                    found.extend(self._exp_calls(a, side, assigned))
        return found

    def _clamped(self, a: TritonAnalysis, expr: cst.CSTNode, assigned, depth: int) -> bool:
        bounded = False

        class _V(cst.CSTVisitor):
            def visit_Call(self, n: cst.Call) -> None:
                nonlocal bounded
                if a.call_is(n, CLAMPS):
                    bounded = True

        _walk.visit(expr, _V())
        if bounded or depth > 3:
            return bounded
        for name in names_in(expr):
            for value in assigned.get(name, ()):
                if self._clamped(a, value, assigned, depth + 1):
                    return True
        return False


# ------------------------------------------------------------------------------------------
# Shared by ROC506 and ROC511: values handed to a Triton launch or a triton.Config
# ------------------------------------------------------------------------------------------

def _only_keyword(text: str, name: str, word: str) -> bool:
    """True when the constant ``name`` is used only as ``word=name`` (its definition aside)."""
    import re

    uses = len(re.findall(rf"(?<![\w.]){re.escape(name)}(?!\w)", text))
    keywords = len(re.findall(rf"\b{word}\s*=\s*{re.escape(name)}(?!\w)", text))
    return uses == keywords + 1


def _in_rocm_named_assignment(rule: Rule, node: cst.CSTNode) -> bool:
    """``HIP_CONFIGS = [triton.Config(...)]``: a value bound to a name that says it is for ROCm."""
    for ancestor in rule.ancestors(node):
        if isinstance(ancestor, (cst.Assign, cst.AnnAssign)):
            targets = ancestor.targets if isinstance(ancestor, cst.Assign) else [ancestor]
            for target in targets:
                name = dotted_name(target.target)
                if name and _ROCM_WORD.search(name.rsplit(".", 1)[-1]):
                    return True
        if isinstance(ancestor, cst.SimpleStatementLine):
            return False
    return False


# ------------------------------------------------------------------------------------------
# ROC506
# ------------------------------------------------------------------------------------------

_STAGES_KERNEL = (
    "import triton\nimport triton.language as tl\n\n"
    "@triton.jit\ndef scale(x_ptr, n, BLOCK: tl.constexpr):\n"
    "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
    "    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)\n\n"
)


class TritonNumStagesZero(_TritonRule):
    CODE = "ROC506"
    NAME = "triton-num-stages-zero"
    SUMMARY = "num_stages=0 in a Triton config or launch: no longer a pipelining mode on AMD."
    TRIGGERS = ("num_stages", "Config")
    WHAT = """
        `num_stages=0` in a `triton.Config(...)` (keyword or third positional argument) or a
        kernel launch (`kernel[grid](..., num_stages=0)`), given as a literal or as a module or
        function constant.
        """
    WHY = """
        AMD-tuned Triton code used `num_stages=0` to select the AMD backend's old
        stream-pipelining scheme. Triton's AMD backend no longer has it: 0 now trips an
        assertion in the pipeliner or silently compiles the loop without software pipelining,
        a large slowdown for GEMM and attention kernels (triton-lang/triton#4845,
        ROCm/triton#653, ROCm/aiter#3808). The AMD backend's own default is 2
        (`triton/backends/amd/compiler.py`, Triton 3.9).
        """
    EXAMPLE = """
        import triton
        cfg = triton.Config({"BLOCK_M": 128, "BLOCK_N": 128}, num_warps=8, num_stages=0)
        """
    FIXED_EXAMPLE = """
        import triton
        cfg = triton.Config({"BLOCK_M": 128, "BLOCK_N": 128}, num_warps=8, num_stages=2 if is_rocm else 0)
        """
    FIX = """
        Safe: the value becomes `2 if is_rocm else 0`, unchanged on NVIDIA. The number of
        pipeline stages changes speed and shared-memory use, not results. A constant that is
        used for anything other than `num_stages=` is rewritten only with `--unsafe-fixes`.
        """
    FIX_APPLICABILITY = Applicability.SAFE
    VALID = (
        Case('import triton\ncfg = triton.Config({"BLOCK": 64}, num_warps=4, num_stages=2)\n'),
        Case('import triton\ncfg = triton.Config({"BLOCK": 64}, num_warps=4, num_stages=2 if is_rocm else 0)\n'),
        Case('import triton\nimport torch\nif torch.version.hip:\n'
             '    cfg = triton.Config({"BLOCK": 64}, num_stages=0)\n'),
        Case('import triton\nHIP_CONFIGS = [triton.Config({"BLOCK": 64}, num_stages=0)]\n'),
        Case('import triton\n# triton.Config({"BLOCK": 64}, num_stages=0)\ndoc = "use num_stages=0 on AMD"\n'),
        Case('import triton\ndef f(x):\n    return helper(x, num_stages=0)\n'),
        Case('import triton\nimport triton.language as tl\n@triton.jit\ndef k(x, n):\n'
             '    for i in tl.range(0, n, num_stages=0):\n        pass\n'),
    )
    INVALID = (
        Case('import triton\ncfg = triton.Config({"BLOCK": 64}, num_warps=4, num_stages=0)\n',
             'import torch\nimport triton\n\nis_rocm = getattr(torch.version, "hip", None) is not None\n\ncfg = triton.Config({"BLOCK": 64}, num_warps=4, num_stages=2 if is_rocm else 0)\n'),
        Case('import triton\ncfg = triton.Config({"BLOCK": 64}, 4, 0)\n',
             'import torch\nimport triton\n\nis_rocm = getattr(torch.version, "hip", None) is not None\n\ncfg = triton.Config({"BLOCK": 64}, 4, 2 if is_rocm else 0)\n'),
        Case(_STAGES_KERNEL + "STAGES = 0\ndef f(x, n):\n    scale[(1,)](x, n, BLOCK=64, num_stages=STAGES)\n",
             _STAGES_KERNEL.replace("import triton\n", "import torch\nimport triton\n", 1).replace("as tl\n", "as tl\n\n{PRELUDE}\n", 1)
             + "STAGES = 2 if is_rocm else 0\ndef f(x, n):\n    scale[(1,)](x, n, BLOCK=64, num_stages=STAGES)\n"),
    )

    @classmethod
    def may_match(cls, facts) -> bool:
        return any(facts.calls_to(CONFIG_NAMES)) or "num_stages" in facts.subscript_call_keywords

    def check(self, a: TritonAnalysis) -> None:
        seen: Set[int] = set()
        for call in list(a.configs) + list(a.subscript_calls):
            arg = keyword(call, "num_stages")
            if arg is None and a.call_is(call, CONFIG_NAMES):
                positional = [x for x in call.args if x.keyword is None and not x.star]
                arg = positional[2] if len(positional) > 2 else None
            if arg is None or self.skipped(a, call, arg.value) or _in_rocm_named_assignment(self, call):
                continue
            node, name = a.constant(arg.value)
            if int_value(node) != 0 or id(node) in seen or self.skipped(a, node):
                continue
            seen.add(id(node))
            applicability = Applicability.SAFE
            if name is not None and not _only_keyword(self.context.text, name, "num_stages"):
                applicability = Applicability.UNSAFE
            what = f"{name} = 0 (num_stages)" if name else "num_stages=0"
            self.report(node, f"{what} once selected stream-pipelining on AMD; Triton's AMD backend now asserts or"
                              " compiles without software pipelining; use 2 (the AMD default) on ROCm",
                        fix=Fix(applicability, "Use num_stages=2 on ROCm",
                                (self.context.replace(node, self.gated(node, 2)),), ("gate",)))


# ------------------------------------------------------------------------------------------
# ROC507 / ROC508 / ROC509: device code that only NVIDIA compiles
# ------------------------------------------------------------------------------------------

class _TritonNameRule(Rule):
    """A rule that looks at names (imports, attributes, calls) rather than the kernels."""

    METADATA_DEPENDENCIES = (PositionProvider, ParentNodeProvider, QualifiedNameProvider)
    TRIGGERS = _TRIGGERS

    def qnames(self, node: cst.CSTNode, names) -> Set[str]:
        if not self.context.may_resolve(node, names):
            return set()
        return {q.name for q in self.context.qualified_names(node)} & names

    def foreign(self, node: cst.CSTNode) -> bool:
        a = analysis(self.context)
        return a.foreign_file or self.in_rocm_branch(node) or a.in_foreign_branch(node)


class TritonCudaLibdevice(_TritonNameRule):
    CODE = "ROC507"
    NAME = "triton-cuda-libdevice"
    SUMMARY = "triton.language.extra.cuda.libdevice: NVIDIA's libdevice, absent on ROCm."
    TRIGGERS = ("libdevice",)
    WHAT = """
        An import of `triton.language.extra.cuda.libdevice` (`from triton.language.extra.cuda
        import libdevice`, `import triton.language.extra.cuda.libdevice as ld`, `from
        triton.language.extra.cuda.libdevice import fast_expf`) or a use of it through
        attributes (`tl.extra.cuda.libdevice.exp(x)`). Not findings: imports in a ROCm-only
        branch, fallbacks (in an `except` handler, or in the other arm of an `if` that imports
        the backend-neutral module), and the backend-neutral `triton.language.extra.libdevice`
        itself.
        """
    WHY = """
        The module wraps NVIDIA's libdevice (`__nv_*` functions): kernels that call it do not
        compile for AMD GPUs (triton-lang/triton#3825, state-spaces/mamba#1018). From Triton 3.0
        `triton.language.extra.libdevice` is the same API for every backend: each backend maps
        it to its own library (`get_module_map` in `triton/backends/amd/compiler.py` maps it to
        `triton.language.extra.hip.libdevice`).
        """
    EXAMPLE = """
        from triton.language.extra.cuda import libdevice
        """
    FIX = """
        Display-only: import `from triton.language.extra import libdevice` instead (Triton 3.0
        or later; older Triton has only the per-backend modules, so rocmport does not rewrite
        the import). Functions with no HIP counterpart are reported separately (ROC508).
        """
    FIX_APPLICABILITY = Applicability.DISPLAY_ONLY
    VALID = (
        Case("from triton.language.extra import libdevice\n"),
        Case("import triton.language as tl\nx = tl.extra.libdevice.exp\n"),
        Case("import torch\nif torch.version.hip:\n    from triton.language.extra.hip import libdevice\n"
             "else:\n    from triton.language.extra.cuda import libdevice\n"),
        Case('import triton\n"""Uses triton.language.extra.cuda.libdevice on NVIDIA."""\n'
             "# from triton.language.extra.cuda import libdevice\n"),
        Case("import triton\nfrom mypkg.cuda import libdevice\n"),
        Case("try:\n    from triton.language.extra import libdevice\nexcept ImportError:\n"
             "    from triton.language.extra.cuda import libdevice\n"),
        Case("import triton\nif triton.__version__ >= '3.0':\n    from triton.language.extra import libdevice\n"
             "else:\n    from triton.language.extra.cuda import libdevice\n"),
    )
    INVALID = (
        Case("from triton.language.extra.cuda import libdevice\n"),
        Case("import triton.language.extra.cuda.libdevice as ld\n"),
        Case("import triton.language as tl\nimport triton\n@triton.jit\ndef k(p):\n"
             "    tl.store(p, tl.extra.cuda.libdevice.tanh(tl.load(p)))\n"),
        Case("from triton.language.extra.cuda.libdevice import fast_expf\n"),
        # tried first, the CUDA module is what ROCm gets too (Triton wheels ship both)
        Case("try:\n    from triton.language.extra.cuda import libdevice\nexcept ImportError:\n"
             "    from triton.language.extra import libdevice\n"),
    )

    @classmethod
    def may_match(cls, facts) -> bool:
        """What ``visit_Import``, ``visit_ImportFrom`` and ``visit_Attribute`` report, on
        CPython's tree: an import of the CUDA module (or from it, or of ``libdevice`` from
        ``triton.language.extra.cuda``), or a ``.libdevice`` attribute that may resolve to it."""
        if facts.tree is None:
            return True
        for node in facts.nodes(ast.Import):
            if any(a.name == CUDA_LIBDEVICE or a.name.startswith(CUDA_LIBDEVICE + ".") for a in node.names):
                return True
        for node in facts.nodes(ast.ImportFrom):
            module = node.module
            if node.level or module is None:
                continue
            if module == CUDA_LIBDEVICE or module.startswith(CUDA_LIBDEVICE + "."):
                return True
            if module == "triton.language.extra.cuda" and any(a.name == "libdevice" for a in node.names):
                return True
        return any(facts.may_be(n, {CUDA_LIBDEVICE}) for n in facts.attributes.get("libdevice", ()))

    def __init__(self, context):
        super().__init__(context)
        self._in_import = 0

    def _flag(self, node: cst.CSTNode, how: str) -> None:
        if self.foreign(node) or self._fallback(node):
            return
        self.report(node, f"{how} NVIDIA's libdevice (triton.language.extra.cuda.libdevice), which AMD GPUs do not"
                          " have: the kernels that call it fail to compile on ROCm; import"
                          " `from triton.language.extra import libdevice` (Triton >= 3.0 maps it per backend)",
                    fix=Fix(Applicability.DISPLAY_ONLY, "Use triton.language.extra.libdevice"))

    def _fallback(self, node: cst.CSTNode) -> bool:
        """An import that runs only when the backend-neutral one is not there: in an ``except``
        handler, or in one arm of an ``if`` whose other arm imports the neutral module."""
        child = node
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, cst.ExceptHandler):
                return True
            if isinstance(ancestor, cst.If) and child is not ancestor.test:
                other = ancestor.orelse if child is ancestor.body else ancestor.body
                if other is not None and _NEUTRAL_IMPORT.search(self.context.module.code_for_node(other)):
                    return True
            child = ancestor
        return False

    def visit_Import(self, node: cst.Import) -> None:
        self._in_import += 1
        for alias in node.names:
            name = dotted_name(alias.name) or ""
            if name == CUDA_LIBDEVICE or name.startswith(CUDA_LIBDEVICE + "."):
                self._flag(node, "this imports")
                return

    def leave_Import(self, node: cst.Import) -> None:
        self._in_import -= 1

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        self._in_import += 1
        if node.relative or node.module is None:
            return
        module = dotted_name(node.module) or ""
        if module == CUDA_LIBDEVICE or module.startswith(CUDA_LIBDEVICE + "."):
            self._flag(node, "this imports from")
        elif module == "triton.language.extra.cuda" and not isinstance(node.names, cst.ImportStar):
            if any(isinstance(a.name, cst.Name) and a.name.value == "libdevice" for a in node.names):
                self._flag(node, "this imports")

    def leave_ImportFrom(self, node: cst.ImportFrom) -> None:
        self._in_import -= 1

    def visit_Attribute(self, node: cst.Attribute) -> Optional[bool]:
        if self._in_import or node.attr.value != "libdevice":
            return None
        if self.qnames(node, {CUDA_LIBDEVICE}):
            self._flag(node, "this uses")
            return False
        return None


_NEUTRAL_IMPORT = re.compile(r"triton\.language\.extra\s+import\s+[^\n]*\blibdevice\b|triton\.language\.extra\.libdevice\b")


class TritonLibdeviceWithoutHip(_TritonNameRule):
    CODE = "ROC508"
    NAME = "triton-libdevice-without-hip"
    SUMMARY = "A libdevice function that Triton's AMD libdevice does not have."
    TRIGGERS = ("libdevice",)
    WHAT = """
        A call of a libdevice function, through `triton.language.extra.libdevice` or
        `triton.language.extra.cuda.libdevice` in any spelling, that
        `triton/language/extra/hip/libdevice.py` does not define. Triton 3.9's CUDA libdevice
        has 197 functions, its HIP libdevice 59; the 139 missing ones are the explicitly
        rounded arithmetic (`add_rn`, `div_rz`, `fma_rn`, `sqrt_rn`, `rcp_rn`, ...), the
        conversions and bit casts (`float2int_rn`, `float_as_int`, `double2hiint`, ...), the
        `fast_*f` intrinsics other than `fast_expf`/`fast_dividef`/`fast_tanhf`, and functions
        such as `byte_perm`, `brev`, `mulhi`, `saturatef`, `exp10`, `cbrt`, `sinpi`, `cospi`,
        `normcdf`, `tgamma`, `jn`, `yn`.
        """
    WHY = """
        On AMD, `triton.language.extra.libdevice` resolves to the HIP module, which lacks these
        names: the kernel fails to compile on ROCm (and the CUDA module is NVIDIA-only anyway,
        see ROC507).
        """
    EXAMPLE = """
        import triton
        import triton.language as tl
        from triton.language.extra import libdevice

        @triton.jit
        def k(p):
            tl.store(p, libdevice.rsqrt_rn(tl.load(p)))
        """
    FIX = """
        Display-only: use a `triton.language` operation where one exists (`tl.sqrt_rn`,
        `tl.div_rn`, `tl.fma`, `x.to(tl.int32, bitcast=True)` for `float_as_int`, `tl.clamp`
        for `saturatef`), or keep the call in a branch on a `tl.constexpr` that is False on
        ROCm. The replacements round differently in corner cases, so rocmport does not apply
        them.
        """
    FIX_APPLICABILITY = Applicability.DISPLAY_ONLY
    VALID = (
        Case("import triton\nimport triton.language as tl\nfrom triton.language.extra import libdevice\n"
             "@triton.jit\ndef k(p):\n    tl.store(p, libdevice.tanh(tl.load(p)))\n"),
        Case("import triton\nimport triton.language as tl\n@triton.jit\ndef k(p):\n"
             "    tl.store(p, tl.sqrt_rn(tl.load(p)))\n"),
        Case("import triton\nimport numpy as np\ndef f(x):\n    return np.cbrt(x)\n"),
        Case("import triton\nimport triton.language as tl\nfrom triton.language.extra import libdevice\n"
             "@triton.jit\ndef k(p, IS_HIP: tl.constexpr):\n    x = tl.load(p)\n"
             "    if IS_HIP:\n        y = tl.sqrt(x)\n    else:\n        y = libdevice.sqrt_rn(x)\n    tl.store(p, y)\n"),
    )
    INVALID = (
        Case("import triton\nimport triton.language as tl\nfrom triton.language.extra import libdevice\n"
             "@triton.jit\ndef k(p):\n    tl.store(p, libdevice.rsqrt_rn(tl.load(p)))\n"),
        Case("import triton\nimport triton.language as tl\n@triton.jit\ndef k(p):\n"
             "    tl.store(p, tl.extra.cuda.libdevice.float_as_int(tl.load(p)))\n"),
        Case("import triton\nfrom triton.language.extra.libdevice import byte_perm\n"
             "@triton.jit\ndef k(p):\n    x = byte_perm(p, p, p)\n"),
    )

    @classmethod
    def may_match(cls, facts) -> bool:
        return any(facts.calls_to(LIBDEVICE_WITHOUT_HIP_NAMES))

    def visit_Call(self, node: cst.Call) -> None:
        found = self.qnames(node.func, LIBDEVICE_WITHOUT_HIP_NAMES)
        if not found or self.foreign(node):
            return
        function = sorted(found)[0].rsplit(".", 1)[-1]
        portable = LIBDEVICE_PORTABLE.get(function)
        hint = f"use {portable}" if portable else "use a triton.language operation or a ROCm branch"
        self.report(node.func, f"libdevice.{function} has no HIP counterpart (Triton's AMD libdevice lacks it): the"
                               f" kernel fails to compile on ROCm; {hint}",
                    fix=Fix(Applicability.DISPLAY_ONLY, hint[0].upper() + hint[1:]))


_AMD_ASM = re.compile(r"^\s*(?:v_|s_|ds_|global_|buffer_|flat_|scratch_)")


class TritonInlinePtx(_TritonNameRule):
    CODE = "ROC509"
    NAME = "triton-inline-ptx"
    SUMMARY = "tl.inline_asm_elementwise with NVIDIA PTX: does not assemble for AMD GPUs."
    TRIGGERS = ("inline_asm_elementwise",)
    WHAT = """
        A call of `tl.inline_asm_elementwise(...)` outside a ROCm branch, unless its assembly is
        recognisably AMD GCN (`v_...`, `s_...`, `ds_...`, `global_...`).
        """
    WHY = """
        The assembly string is handed to the backend's assembler unchanged; PTX written for
        NVIDIA (`cvt.rn.f16x2.f32`, `lop3.b32`, `mov.b32`) is not AMD GCN, so the kernel fails
        to compile on ROCm (triton-lang/triton#3825 and others).
        """
    EXAMPLE = """
        import triton
        import triton.language as tl

        @triton.jit
        def k(p):
            x = tl.load(p)
            y = tl.inline_asm_elementwise("cvt.rn.f16.f32 $0, $1;", "=h,r", [x], dtype=tl.float16,
                                          is_pure=True, pack=1)
            tl.store(p, y)
        """
    FIX = """
        Display-only: use the `triton.language` operation the assembly implements (often a
        cast, `tl.fma`, `tl.umulhi`) or put the assembly behind a `tl.constexpr` flag that is
        False on ROCm, with a portable branch.
        """
    FIX_APPLICABILITY = Applicability.DISPLAY_ONLY
    VALID = (
        Case("import triton\nimport triton.language as tl\n@triton.jit\ndef k(p):\n"
             "    x = tl.inline_asm_elementwise('v_cvt_f16_f32 $0, $1', '=v,v', [tl.load(p)], dtype=tl.float16,"
             " is_pure=True, pack=1)\n"),
        Case("import triton\nimport triton.language as tl\n@triton.jit\ndef k(p, IS_HIP: tl.constexpr):\n"
             "    x = tl.load(p)\n    if IS_HIP:\n        y = x.to(tl.float16)\n    else:\n"
             "        y = tl.inline_asm_elementwise('cvt.rn.f16.f32 $0, $1;', '=h,r', [x], dtype=tl.float16,"
             " is_pure=True, pack=1)\n    tl.store(p, y)\n"),
        Case('import triton\ndoc = "tl.inline_asm_elementwise(ptx) is NVIDIA-only"\n'),
    )
    INVALID = (
        Case("import triton\nimport triton.language as tl\n@triton.jit\ndef k(p):\n"
             "    y = tl.inline_asm_elementwise('cvt.rn.f16.f32 $0, $1;', '=h,r', [tl.load(p)], dtype=tl.float16,"
             " is_pure=True, pack=1)\n"),
        Case("import triton\nfrom triton.language import inline_asm_elementwise as asm\n@triton.jit\ndef k(p):\n"
             "    y = asm(ASM, '=r,r', [p], dtype=tl.int32, is_pure=True, pack=1)\n"),
    )

    @classmethod
    def may_match(cls, facts) -> bool:
        return any(facts.calls_to(INLINE_ASM))

    def visit_Call(self, node: cst.Call) -> None:
        if not self.qnames(node.func, INLINE_ASM) or self.foreign(node):
            return
        asm = keyword(node, "asm")
        if asm is None and node.args and node.args[0].keyword is None:
            asm = node.args[0]
        text = literal_string(asm.value) if asm is not None else None
        if text is not None and _AMD_ASM.match(text):
            return
        self.report(node, "inline assembly in a Triton kernel is passed to the backend's assembler as is: NVIDIA PTX"
                          " does not assemble for AMD GPUs; use the triton.language operation it implements, or a"
                          " tl.constexpr branch that is False on ROCm",
                    fix=Fix(Applicability.DISPLAY_ONLY, "Use a triton.language operation on ROCm"))


# ------------------------------------------------------------------------------------------
# ROC510
# ------------------------------------------------------------------------------------------

_TF32 = {"tf32": "_ROCMPORT_DOT_TF32", "tf32x3": "_ROCMPORT_DOT_TF32X3"}
_DOT_HEAD = (
    "import triton\nimport triton.language as tl\n\n\n"
    "@triton.jit\ndef mm(a, b, c, N: tl.constexpr):\n"
    "    offs = tl.arange(0, N)[:, None] * N + tl.arange(0, N)[None, :]\n"
)


class TritonDotTf32(_TritonRule):
    CODE = "ROC510"
    NAME = "triton-dot-tf32"
    SUMMARY = 'tl.dot(..., input_precision="tf32"): a compile error on AMD GPUs other than gfx942.'
    TRIGGERS = ("dot",)
    WHAT = """
        `tl.dot(..., input_precision="tf32")` or `"tf32x3"` (a string literal, any case) in a
        Triton kernel or `@triton.jit` helper. `allow_tf32=True` is not a finding: from Triton
        3.0, `tl.dot` turns it into "tf32" only where the backend lists "tf32" among its dot
        precisions and into "ieee" elsewhere (`triton/language/core.py`), so it compiles on
        every AMD GPU (computing in full fp32 there).
        """
    WHY = """
        Triton's AMD backend accepts the dot input precisions "ieee", "bf16x3" and "bf16x6",
        plus "tf32" on gfx942 (MI300) only (`HIPOptions.allowed_dot_input_precisions`, Triton
        3.9); anything else fails the assertion in `_str_to_dot_input_precision` and the kernel
        does not compile (NVlabs/Sana#508). Checked by compiling the same kernel with
        `triton.compile` for gfx90a (fails), gfx942 and sm_90 (compile).
        """
    EXAMPLE = _DOT_HEAD + (
        "    x = tl.dot(tl.load(a + offs), tl.load(b + offs), input_precision=\"tf32\")\n"
        "    tl.store(c + offs, x)\n")
    FIXED_EXAMPLE = _DOT_HEAD.replace("\n\n\n@", "\n\n\n_ROCMPORT_DOT_TF32 = tl.constexpr(\"ieee\" if is_rocm else"
                                       " \"tf32\")\n\n\n@") + (
        "    x = tl.dot(tl.load(a + offs), tl.load(b + offs), input_precision=_ROCMPORT_DOT_TF32)\n"
        "    tl.store(c + offs, x)\n")
    FIX = """
        Safe: a module constant `_ROCMPORT_DOT_TF32 = tl.constexpr("ieee" if is_rocm else
        "tf32")` is added above the first kernel that needs it and the literal becomes that
        name. A kernel cannot read the plain `is_rocm` flag (Triton only lets kernels read
        globals that are `tl.constexpr`), so the choice is made once, at import, and the
        kernel reads the constant. On NVIDIA the kernel compiles with exactly the original
        "tf32"; on ROCm with "ieee", which every AMD GPU accepts (full fp32 precision, slower
        than tf32 on gfx942). On an H100 (Triton 3.6) the kernel reading the constant gave
        output bit-identical to the kernel with the literal, with the same TTGIR. No fix
        where the kernel is nested in a function or the file binds no `triton.language` name
        at module level.
        """
    FIX_APPLICABILITY = Applicability.SAFE
    VALID = (
        Case(_DOT_HEAD + "    tl.store(c + offs, tl.dot(tl.load(a + offs), tl.load(b + offs), input_precision=\"ieee\"))\n"),
        Case(_DOT_HEAD + "    tl.store(c + offs, tl.dot(tl.load(a + offs), tl.load(b + offs), allow_tf32=True))\n"),
        Case(_DOT_HEAD + "    tl.store(c + offs, tl.dot(tl.load(a + offs), tl.load(b + offs), input_precision=P))\n"),
        Case("import triton\nimport triton.language as tl\nP = tl.constexpr('ieee' if is_rocm else 'tf32')\n"
             + _DOT_HEAD.split("\n\n\n", 1)[1]
             + "    tl.store(c + offs, tl.dot(tl.load(a + offs), tl.load(b + offs), input_precision=P))\n"),
        Case("import torch\nimport triton\nx = torch.ops.aten.mm(a, b)\nnote = 'input_precision=\"tf32\"'\n"),
        Case("import triton\nimport numpy as np\ndef f(a, b):\n    return np.dot(a, b, input_precision='tf32')\n"),
    )
    INVALID = (
        Case(EXAMPLE, _DOT_HEAD.replace("import triton\n", "import torch\nimport triton\n", 1).replace(
            "as tl\n", "as tl\n\n{PRELUDE}\n", 1).replace(
            "\n\n\n@", "\n\n\n_ROCMPORT_DOT_TF32 = tl.constexpr(\"ieee\" if is_rocm else \"tf32\")\n\n\n@")
            + "    x = tl.dot(tl.load(a + offs), tl.load(b + offs), input_precision=_ROCMPORT_DOT_TF32)\n"
              "    tl.store(c + offs, x)\n"),
        Case(_DOT_HEAD + "    acc = tl.dot(tl.load(a + offs), tl.load(b + offs), None, 'tf32x3')\n"
                         "    tl.store(c + offs, acc)\n"),
    )

    @classmethod
    def may_match(cls, facts) -> bool:
        return facts.decorated_with(KERNEL_DECORATORS) and any(s.lower() in _TF32 for s in facts.strings)

    def check(self, a: TritonAnalysis) -> None:
        found: List[Tuple[Kernel, cst.Call, cst.BaseExpression, str]] = []
        for kernel in a.kernels.values():
            if self.skipped(a, kernel.func):
                continue
            rule = self

            class _V(cst.CSTVisitor):
                def visit_Call(self, n: cst.Call) -> None:
                    if not a.call_is(n, DOT):
                        return
                    arg = keyword(n, "input_precision")
                    if arg is None:
                        positional = [x for x in n.args if x.keyword is None and not x.star]
                        arg = positional[3] if len(positional) > 3 else None
                    value = literal_string(arg.value) if arg is not None else None
                    if value is not None and value.lower() in _TF32 and not rule.skipped(a, n):
                        found.append((kernel, n, arg.value, value.lower()))

            _walk.visit(kernel.func.body, _V())
        first: Dict[str, cst.FunctionDef] = {}
        for kernel, _, _, value in found:  # the first kernel in the file that needs each constant
            current = first.get(value)
            if current is None or self._line_start(kernel.func) < self._line_start(current):
                first[value] = kernel.func
        for kernel, call, literal, value in found:
            fix = self._fix(a, kernel, literal, value, first[value])
            self.report(literal, f'input_precision="{value}" is not accepted by Triton\'s AMD backend (it allows "ieee",'
                                 ' "bf16x3", "bf16x6", and "tf32" on gfx942 only): the kernel fails to compile on ROCm;'
                                 ' use "ieee" there', fix=fix)

    def _fix(self, a: TritonAnalysis, kernel: Kernel, literal: cst.BaseExpression, value: str,
             anchor: cst.FunctionDef) -> Optional[Fix]:
        module = self.context.module
        if not any(stmt is kernel.func for stmt in module.body) or not any(stmt is anchor for stmt in module.body):
            return None
        language = self._language_name()
        if language is None:
            return None
        name = _TF32[value]
        try:
            edits = [self.context.replace(literal, name)]
        except SpanError:
            return None
        if not a.bindings(module).get(name):
            nl = self.context.newline()
            definition = (f"{name} = {language}.constexpr(\"ieee\" if {self.context.gate_name} else"
                          f" {self.context.source(literal)}){nl}{nl}{nl}")
            start = self._line_start(anchor)
            edits.insert(0, self.context.edit(start, start, definition))
        return Fix(Applicability.SAFE, 'Use input_precision="ieee" on ROCm', tuple(edits), ("gate",))

    def _line_start(self, func: cst.FunctionDef) -> int:
        """Where a module-level function starts: its first decorator (or ``def``), or the
        comment lines right above it."""
        first = func.decorators[0] if func.decorators else func
        row = self.context.position(first).start.line
        lines, text = self.context.lines, self.context.text
        while row > 1:  # the comment lines right above the function belong to it
            start, stop = lines.line_span(row - 1)
            above = text[start:stop].strip()
            if not above.startswith("#") or above.startswith(("# <<<", "# >>>")):
                break
            row -= 1
        return lines.offset(row, 0)

    def _language_name(self) -> Optional[str]:
        facts = self.context.facts
        if facts is None:
            return None
        kinds = facts.binding_kinds()
        imports = facts.binding_kinds_imports()
        for name, bound in sorted(imports.items()):
            if bound == {"triton.language"} and kinds.get(name) == {"import"}:
                return name
        if imports.get("triton") == {"triton"} and kinds.get("triton") == {"import"}:
            return "triton.language"
        return None


# ------------------------------------------------------------------------------------------
# ROC511
# ------------------------------------------------------------------------------------------

_AMD_PATH = re.compile(r"(?i)(?:^|[/_.-])(?:rocm|hip|amd|aiter)(?:[/_.-]|$)")


class TritonAmdOnlyOptions(_TritonRule):
    CODE = "ROC511"
    NAME = "triton-amd-only-options"
    SUMMARY = "waves_per_eu / matrix_instr_nonkdim / kpack passed on every platform: KeyError on NVIDIA."
    TRIGGERS = AMD_ONLY_OPTIONS
    WHAT = """
        The AMD-only Triton options `waves_per_eu`, `matrix_instr_nonkdim` and `kpack` as keys
        of a `triton.Config({...})` dict or as keywords of a kernel launch
        (`kernel[grid](..., waves_per_eu=2)`), outside a ROCm branch, outside config lists
        whose name says they are for ROCm (`HIP_CONFIGS = [...]`) and outside files whose path
        says they are for AMD only (`ops/rocm/gemm.py`, `hip_kernels.py`, AMD's `aiter`).
        """
    WHY = """
        Only Triton's AMD backend knows these options (`HIPOptions` in
        `triton/backends/amd/compiler.py`). Code tuned on MI200/MI300 often passes them
        unconditionally, and on NVIDIA Triton 3.9 raises KeyError for them (pytorch#185599,
        triton-lang/triton#7518): the AMD tuning breaks the NVIDIA path of the same code. Seen
        on an H100 with Triton 3.6: `KeyError: 'Keyword argument waves_per_eu was specified but
        unrecognised'`, for a config dict entry and for a launch keyword alike; the fixed
        forms ran and gave the right results.
        """
    EXAMPLE = """
        import triton
        cfg = triton.Config({"BLOCK_M": 128, "waves_per_eu": 2}, num_warps=8)
        """
    FIXED_EXAMPLE = """
        import triton
        cfg = triton.Config({"BLOCK_M": 128, **({"waves_per_eu": 2} if is_rocm else {})}, num_warps=8)
        """
    FIX = """
        Safe: each option becomes a dict spread that holds it on ROCm and nothing on NVIDIA
        (`**({"waves_per_eu": 2} if is_rocm else {})`), in the config dict or in the launch's
        keywords. On ROCm the kernel gets exactly the original options; on NVIDIA it gets
        none of them, as if they had never been written. No fix for a launch where a
        positional `*args` follows the option (a `**` spread cannot precede it).
        """
    FIX_APPLICABILITY = Applicability.SAFE
    VALID = (
        Case('import triton\ncfg = triton.Config({"BLOCK": 64, **({"waves_per_eu": 2} if is_rocm else {})})\n'),
        Case('import triton\nimport torch\nif torch.version.hip:\n    cfg = triton.Config({"BLOCK": 64, "kpack": 2})\n'),
        Case('import triton\nHIP_CONFIGS = [triton.Config({"BLOCK": 64, "waves_per_eu": 2})]\n'),
        Case('import triton\ndef get_hip_autotune_config():\n    return [triton.Config({"BLOCK": 64, "kpack": 2})]\n'),
        Case('import triton\n# triton.Config({"waves_per_eu": 2})\nopts = {"waves_per_eu": 2}\n'),
        Case('import triton\ndef f(x):\n    return launch(x, waves_per_eu=2)\n'),
    )
    INVALID = (
        Case('import triton\ncfg = triton.Config({"BLOCK_M": 128, "waves_per_eu": 2}, num_warps=8)\n',
             'import torch\nimport triton\n\nis_rocm = getattr(torch.version, "hip", None) is not None\n\ncfg = triton.Config({"BLOCK_M": 128, **({"waves_per_eu": 2} if is_rocm else {})}, num_warps=8)\n'),
        Case(_STAGES_KERNEL + "def f(x, n):\n    scale[(1,)](x, n, BLOCK=64, matrix_instr_nonkdim=16, num_warps=4)\n",
             _STAGES_KERNEL.replace("import triton\n", "import torch\nimport triton\n", 1).replace("as tl\n", "as tl\n\n{PRELUDE}\n", 1)
             + "def f(x, n):\n    scale[(1,)](x, n, BLOCK=64, **({\"matrix_instr_nonkdim\": 16} if is_rocm else {}),"
               " num_warps=4)\n"),
    )

    @classmethod
    def may_match(cls, facts) -> bool:
        return (bool(facts.dict_keys & set(AMD_ONLY_OPTIONS)) and any(facts.calls_to(CONFIG_NAMES))
                or bool(facts.subscript_call_keywords & set(AMD_ONLY_OPTIONS)))

    def check(self, a: TritonAnalysis) -> None:
        if _AMD_PATH.search(self.context.path.replace("\\", "/")):
            return  # code for AMD GPUs only (a `rocm/` or `hip_` module, AMD's aiter): NVIDIA never runs it
        gate = self.context.gate_name
        for config in a.configs:
            d = a.config_dict(config)
            if d is None or self.skipped(a, config) or _in_rocm_named_assignment(self, config):
                continue
            for element in d.elements:
                if not isinstance(element, cst.DictElement):
                    continue
                option = literal_string(element.key)
                if option not in AMD_ONLY_OPTIONS or self.skipped(a, element):
                    continue
                text = f"**({{{self.context.source(element.key)}: {self.context.source(element.value)}}} if {gate} else {{}})"
                self._report(element.key, option, "a triton.Config", self._edit(element.key, element.value, text),
                             element.value)
        for call in a.subscript_calls:
            if self.skipped(a, call):
                continue
            for index, arg in enumerate(call.args):
                if arg.keyword is None or arg.keyword.value not in AMD_ONLY_OPTIONS:
                    continue
                later_positional = any(x.keyword is None and x.star != "**" for x in call.args[index + 1:])
                text = f"**({{\"{arg.keyword.value}\": {self.context.source(arg.value)}}} if {gate} else {{}})"
                edit = None if later_positional else self._edit(arg.keyword, arg.value, text)
                self._report(arg.keyword, arg.keyword.value, "a kernel launch", edit, arg.value)

    def _edit(self, first: cst.CSTNode, last: cst.CSTNode, text: str):
        try:
            return self.context.edit(self.context.span(first)[0], self.context.span(last)[1], text)
        except SpanError:  # a source rocmport cannot place an edit in: the finding stays, without a fix
            return None

    def _report(self, node: cst.CSTNode, option: str, where: str, edit, end_node=None) -> None:
        fix = Fix(Applicability.SAFE, f"Pass {option} on ROCm only", (edit,), ("gate",)) if edit is not None else \
            Fix(Applicability.DISPLAY_ONLY, f"Pass {option} on ROCm only")
        self.report(node, f"{option} in {where} is an AMD-only Triton option: Triton raises KeyError for it on NVIDIA;"
                          " pass it on ROCm only", fix=fix, end_node=end_node)


# ------------------------------------------------------------------------------------------
# ROC512
# ------------------------------------------------------------------------------------------

_WARP_NAME = re.compile(r"(?i)^_?(?:warp_?size|threads_per_warp)$")


def _ast_32(node, call: bool = True) -> bool:
    """CPython's tree of what ``int_value(...) == 32`` (``call``: or ``_is_32``) may accept:
    the literal 32, or a call whose one argument (a keyword's or a starred one's value
    too) is it."""
    if type(node) is ast.Constant:
        return type(node.value) is int and node.value == 32
    if call and type(node) is ast.Call and len(node.args) + len(node.keywords) == 1:
        arg = node.args[0] if node.args else node.keywords[0].value
        return _ast_32(arg.value if type(arg) is ast.Starred else arg, call=False)
    return False


class TritonWarpSize32(_TritonRule):
    CODE = "ROC512"
    NAME = "triton-warp-size-32"
    SUMMARY = "A warp size of 32 in arithmetic: AMD's CDNA wavefronts have 64 lanes."
    TRIGGERS = ("warp", "WARP", "Warp")
    WHAT = """
        `num_warps * 32` or `32 * num_warps` (also `config.num_warps * 32`), and a warp-size
        constant set to 32: `WARP_SIZE = 32`, `WARP_SIZE = tl.constexpr(32)`,
        `WARP_SIZE: tl.constexpr = 32` (a kernel parameter's default too; names such as
        `WARP_SIZE`, `warpsize`, `THREADS_PER_WARP`), in a file that uses Triton. Values
        chosen per platform (`64 if is_rocm else 32`) and code in ROCm branches are not
        findings.
        """
    WHY = """
        A Triton warp is a hardware wavefront: 32 lanes on NVIDIA and on AMD's RDNA GPUs
        (gfx10 and later), 64 on CDNA (MI100 to MI350, gfx9). Thread counts and per-lane
        tiling computed with 32 are wrong by half on CDNA: under-sized buffers, lanes that do
        no work, or wrong results where the value sizes a reduction.
        """
    EXAMPLE = """
        import triton

        def threads(num_warps):
            return num_warps * 32
        """
    FIX = """
        Display-only: take the device's warp size instead of 32
        (`torch.cuda.get_device_properties(device).warp_size` on torch 2.x with ROCm and
        CUDA, or `triton.runtime.driver.active.get_current_target().warp_size`). rocmport
        cannot tell which GPU the code runs on, so it does not pick 64.
        """
    FIX_APPLICABILITY = Applicability.DISPLAY_ONLY
    VALID = (
        Case("import triton\ndef threads(num_warps):\n    return num_warps * 64\n"),
        Case("import triton\nWARP_SIZE = 64 if is_rocm else 32\n"),
        Case("import triton\ndef f(num_warps, warp_size):\n    return num_warps * warp_size\n"),
        Case("import triton\nBLOCK_SIZE = 32\nx = rows * 32\n"),
        Case('import triton\n# threads = num_warps * 32\ns = "num_warps * 32"\n'),
        Case("import triton\nimport torch\nif torch.version.hip:\n    WARP_SIZE = 32\n"),
    )
    INVALID = (
        Case("import triton\ndef threads(num_warps):\n    return num_warps * 32\n"),
        Case("import triton\nimport triton.language as tl\nWARP_SIZE = tl.constexpr(32)\n"),
        Case("import triton\nimport triton.language as tl\n@triton.jit\ndef k(p, WARP_SIZE: tl.constexpr = 32):\n"
             "    pass\n"),
        Case("import triton\ndef f(cfg):\n    return 32 * cfg.num_warps\n"),
    )

    @classmethod
    def may_match(cls, facts) -> bool:
        """``visit_Module`` reports only the shapes of its ``_V``: a product of a literal 32
        and ``num_warps`` (a name or an attribute), and a warp-size name assigned, or given
        as a parameter default, a literal 32 or a one-argument call of one. The same shapes
        on CPython's tree (the call may be any), in a file that imports Triton."""
        names = facts.names | facts.other_bindings | set(facts.attributes)
        imports_triton = any(n == "triton" or n.startswith("triton.") for b in facts.bindings.values() for n in b)
        if not (imports_triton and ("num_warps" in names or any(_WARP_NAME.match(n) for n in names))):
            return False
        if facts.tree is None:
            return True
        for node in facts.nodes(ast.BinOp):
            if type(node.op) is ast.Mult:
                for this, other in ((node.left, node.right), (node.right, node.left)):
                    if _ast_32(this, call=False) and (
                            type(other) is ast.Name and other.id == "num_warps"
                            or type(other) is ast.Attribute and other.attr == "num_warps"):
                        return True
        for node in facts.nodes(ast.Assign, ast.AnnAssign):
            targets = node.targets if type(node) is ast.Assign else (node.target,)
            if _ast_32(node.value) and any(type(t) is ast.Name and _WARP_NAME.match(t.id) for t in targets):
                return True
        for node in facts.nodes(ast.arguments):
            positional = node.posonlyargs + node.args
            pairs = list(zip(positional[len(positional) - len(node.defaults):], node.defaults))
            pairs += zip(node.kwonlyargs, node.kw_defaults)  # None where one has no default
            if any(d is not None and _WARP_NAME.match(p.arg) and _ast_32(d) for p, d in pairs):
                return True
        return False

    @classmethod
    def reach(cls, facts) -> Optional[FrozenSet[str]]:
        """It reports a product with ``num_warps``, an assignment to a warp-size name or a
        parameter so named; the rest it reads is the node's ancestors (ROCm and foreign
        branches) and the names imports bind (``tl.constexpr``)."""
        names = facts.names | facts.other_bindings | set(facts.attributes)
        return frozenset({"num_warps"} | {name for name in names if _WARP_NAME.match(name)})

    def visit_Module(self, node: cst.Module) -> None:
        a = analysis(self.context)
        if a.foreign_file:
            return
        rule = self
        found: List[Tuple[cst.CSTNode, str]] = []

        class _V(cst.CSTVisitor):
            def visit_BinaryOperation(self, n: cst.BinaryOperation) -> None:
                if not isinstance(n.operator, cst.Multiply):
                    return
                for this, other in ((n.left, n.right), (n.right, n.left)):
                    if int_value(this) == 32 and rule._is_num_warps(other):
                        found.append((n, "num_warps * 32 counts 32 threads per warp"))
                        return

            def visit_Assign(self, n: cst.Assign) -> None:
                for target in n.targets:
                    if isinstance(target.target, cst.Name) and _WARP_NAME.match(target.target.value) \
                            and rule._is_32(a, n.value):
                        found.append((n.value, f"{target.target.value} = 32"))

            def visit_AnnAssign(self, n: cst.AnnAssign) -> None:
                if isinstance(n.target, cst.Name) and _WARP_NAME.match(n.target.value) and n.value is not None \
                        and rule._is_32(a, n.value):
                    found.append((n.value, f"{n.target.value} = 32"))

            def visit_Param(self, n: cst.Param) -> None:
                if _WARP_NAME.match(n.name.value) and n.default is not None and rule._is_32(a, n.default):
                    found.append((n.default, f"{n.name.value} = 32"))

        _walk.visit(node, _V())
        for where, what in found:
            if self.skipped(a, where):
                continue
            self.report(where, f"{what}: a Triton warp is a 64-lane wavefront on AMD CDNA GPUs (MI200/MI300), 32"
                               " lanes on NVIDIA and RDNA; use the device's warp size",
                        fix=Fix(Applicability.DISPLAY_ONLY, "Use the device's warp size"))

    @staticmethod
    def _is_num_warps(node: cst.CSTNode) -> bool:
        if isinstance(node, cst.Name):
            return node.value == "num_warps"
        return isinstance(node, cst.Attribute) and node.attr.value == "num_warps"

    @staticmethod
    def _is_32(a: TritonAnalysis, node: cst.CSTNode) -> bool:
        if int_value(node) == 32:
            return True
        return (isinstance(node, cst.Call) and len(node.args) == 1 and int_value(node.args[0].value) == 32
                and a.is_(node.func, {TL + "constexpr", TL + "core.constexpr"}))


RULES = [TritonBlockSize, TritonSmallTile, TritonNumWarps, TritonHalfAccumulator, TritonUnclampedExp,
         TritonNumStagesZero, TritonCudaLibdevice, TritonLibdeviceWithoutHip, TritonInlinePtx, TritonDotTf32,
         TritonAmdOnlyOptions, TritonWarpSize32]
