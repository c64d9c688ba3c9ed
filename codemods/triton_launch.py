"""ROC5xx: Triton launch and tile parameters that fit NVIDIA's 32-lane warps, not AMD's
64-lane wavefronts.

A kernel is a function decorated with ``triton.jit`` / ``triton.autotune`` /
``triton.heuristics`` in any spelling; its block sizes are ``tl.constexpr`` parameters used
as ``tl.arange`` extents. The per-file analysis lives in :mod:`codemods._triton` and is
computed once for all these rules.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Set

import libcst as cst
from libcst.metadata import ParentNodeProvider, PositionProvider, QualifiedNameProvider

from rocmport.findings import Applicability, Fix

from ._triton import (CLAMPS, CONFIG_NAMES, DOT, EXP_NAMES, HALF_DTYPES, KERNEL_DECORATORS, ZEROS, Kernel, Site,
                      TritonAnalysis, analysis, int_value, names_in, next_pow2_at_least_64)
from .base import Case, Rule, keyword

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
             'import triton\n\n{PRELUDE}\n\ncfg = triton.Config({"BLOCK": 4096}, num_warps=16 if is_rocm else 32)\n'),
        Case("import triton\nimport triton.language as tl\n@triton.jit\ndef k(x, B: tl.constexpr):\n    pass\n"
             "W = 32\ndef f(x):\n    k[(1,)](x, B=1024, num_warps=W)\n",
             "import triton\nimport triton.language as tl\n\n{PRELUDE}\n\n@triton.jit\ndef k(x, B: tl.constexpr):\n    pass\n"
             "W = 16 if is_rocm else 32\ndef f(x):\n    k[(1,)](x, B=1024, num_warps=W)\n"),
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

            kernel.func.body.visit(_V())
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

            kernel.func.body.visit(_V())
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

        expr.visit(_V())
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

        denominator.visit(_V())
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

        expr.visit(_V())
        if bounded or depth > 3:
            return bounded
        for name in names_in(expr):
            for value in assigned.get(name, ()):
                if self._clamped(a, value, assigned, depth + 1):
                    return True
        return False


RULES = [TritonBlockSize, TritonSmallTile, TritonNumWarps, TritonHalfAccumulator, TritonUnclampedExp]


from . import _libcst_command  # noqa: E402 (`python -m libcst.tool codemod triton_launch.Command`)


class Command(_libcst_command.RocmportCommand):
    DESCRIPTION = "rocmport ROC5xx: Triton launch and tile parameters."
