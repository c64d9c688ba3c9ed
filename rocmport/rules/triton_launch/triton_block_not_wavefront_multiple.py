"""ROC501 triton-block-not-wavefront-multiple: A 1-D Triton block that is not a multiple of AMD's 64-lane wavefront.

The rule's documentation is its class's (`rocmport rule ROC501` prints it).
"""

from __future__ import annotations

from typing import Dict, List, Set

import libcst as cst

from rocmport.analysis.triton import (
    CONFIG_NAMES,
    Site,
    TritonAnalysis,
    next_pow2_at_least_64,
)
from rocmport.findings import Applicability, Fix
from rocmport.rules.base import Case

from .common import WAVEFRONT, TritonRule

_MASKED_KERNEL = (
    "import torch\nimport triton\nimport triton.language as tl\n\n"
    "@triton.jit\ndef add_one(x_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):\n"
    "    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)\n"
    "    mask = offs < n\n"
    "    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1, mask=mask)\n\n"
)


class TritonBlockSize(TritonRule):
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
        Case("""
            import torch
            import triton
            import triton.language as tl

            @triton.jit
            def add_one(x_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
                offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
                mask = offs < n
                tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1, mask=mask)

            def f(x, o, n):
                add_one[(triton.cdiv(n, 64),)](x, o, n, BLOCK_SIZE=64)
            """),
        Case("""
            import torch
            import triton
            import triton.language as tl

            @triton.jit
            def add_one(x_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
                offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
                mask = offs < n
                tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1, mask=mask)

            def f(x, o, n):
                add_one[(triton.cdiv(n, 256),)](x, o, n, BLOCK_SIZE=256)
            """),
        Case("""
            import torch
            import triton
            import triton.language as tl

            @triton.jit
            def add_one(x_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
                offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
                mask = offs < n
                tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1, mask=mask)

            def f(x, o, n):
                b = 64 if is_rocm else 32
                add_one[(triton.cdiv(n, b),)](x, o, n, BLOCK_SIZE=b)
            """),
        Case("""
            import torch
            import triton
            import triton.language as tl

            @triton.jit
            def add_one(x_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
                offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
                mask = offs < n
                tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1, mask=mask)

            def f(x, o, n):
                add_one[(triton.cdiv(n, 64 if is_rocm else 32),)](x, o, n, BLOCK_SIZE=64 if is_rocm else 32)
            """),
        Case("""
            import torch
            import triton
            import triton.language as tl

            @triton.jit
            def add_one(x_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
                offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
                mask = offs < n
                tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1, mask=mask)

            def f(x, o, n):
                if torch.version.hip:
                    add_one[(triton.cdiv(n, 32),)](x, o, n, BLOCK_SIZE=32)
            """),
        Case("""
            import triton
            MXFP4_BLOCK_SIZE = 32
            def pack(x):
                return x.view(-1, MXFP4_BLOCK_SIZE)
            """),
        Case("""
            import triton
            from torch.nn.attention.flex_attention import create_block_mask
            m = create_block_mask(fn, 1, 1, 128, 128, BLOCK_SIZE=32)
            """),
        Case("""
            import torch
            import triton
            import triton.language as tl

            @triton.jit
            def add_one(x_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
                offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
                mask = offs < n
                tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1, mask=mask)

            def f(x, o, n):
                if is_npu():
                    add_one[(triton.cdiv(n, 32),)](x, o, n, BLOCK_SIZE=32)
            """),
        Case("""
            import torch
            import triton
            import triton.language as tl

            @triton.jit
            def add_one(x_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
                offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
                mask = offs < n
                tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1, mask=mask)

            def f(x, o, n, b):
                add_one[(triton.cdiv(n, b),)](x, o, n, BLOCK_SIZE=b)
            """),
    )
    INVALID = (
        Case(
            """
            import torch
            import triton
            import triton.language as tl

            @triton.jit
            def add_one(x_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
                offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
                mask = offs < n
                tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1, mask=mask)

            def f(x, o, n):
                add_one[(triton.cdiv(n, 32),)](x, o, n, BLOCK_SIZE=32)
            """,
            expected="""
            import torch
            import triton
            import triton.language as tl

            {PRELUDE}

            @triton.jit
            def add_one(x_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
                offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
                mask = offs < n
                tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1, mask=mask)

            def f(x, o, n):
                add_one[(triton.cdiv(n, 64 if is_rocm else 32),)](x, o, n, BLOCK_SIZE=64 if is_rocm else 32)
            """,
            line=12,
            column=56,
            message=(
                "BLOCK_SIZE=32 is a 1-D Triton block of `add_one` that is not a multiple of 64: AMD wavefronts have "
                "64 lanes, so lanes idle on every program; use 64 on ROCm"
            ),
        ),
        Case(
            """
            import torch
            import triton
            import triton.language as tl

            @triton.jit
            def k(x_ptr, BLOCK: tl.constexpr = 16):
                offs = tl.arange(0, BLOCK)
                tl.store(x_ptr + offs, 0.0)
            """,
            line=6,
            column=36,
            message=(
                "BLOCK=16 is a 1-D Triton block of `k` that is not a multiple of 64: AMD wavefronts have 64 lanes, "
                "so lanes idle on every program; use 64 on ROCm (fix unsafe: `k`: a store indexed by BLOCK has no "
                "mask, so a larger block reads or writes out of range)"
            ),
        ),
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
