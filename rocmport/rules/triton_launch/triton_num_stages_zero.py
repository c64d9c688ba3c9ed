"""ROC506 triton-num-stages-zero: num_stages=0 in a Triton config or launch: no longer a pipelining mode on AMD.

The rule's documentation is its class's (`rocmport rule ROC506` prints it).
"""

from __future__ import annotations

from typing import Set

from rocmport.analysis.needs import Call, Keyword
from rocmport.analysis.syntax import keyword
from rocmport.analysis.triton import (
    CONFIG_NAMES,
    TritonAnalysis,
    int_value,
)
from rocmport.findings import Applicability, Fix
from rocmport.rules.base import Case

from .common import TritonRule, in_rocm_named_assignment


def _only_keyword(text: str, name: str, word: str) -> bool:
    """True when the constant ``name`` is used only as ``word=name`` (its definition aside)."""
    import re

    uses = len(re.findall(rf"(?<![\w.]){re.escape(name)}(?!\w)", text))
    keywords = len(re.findall(rf"\b{word}\s*=\s*{re.escape(name)}(?!\w)", text))
    return uses == keywords + 1


class TritonNumStagesZero(TritonRule):
    CODE = "ROC506"
    NAME = "triton-num-stages-zero"
    SUMMARY = "num_stages=0 in a Triton config or launch: no longer a pipelining mode on AMD."
    NEEDS = Call(*CONFIG_NAMES) | Keyword("num_stages", subscripted=True)  # a config, or num_stages= of a launch
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
        ROCm/triton#653). The AMD backend's own default is 2
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
        Case("""
            import triton
            cfg = triton.Config({"BLOCK": 64}, num_warps=4, num_stages=2)
            """),
        Case("""
            import triton
            cfg = triton.Config({"BLOCK": 64}, num_warps=4, num_stages=2 if is_rocm else 0)
            """),
        Case("""
            import triton
            import torch
            if torch.version.hip:
                cfg = triton.Config({"BLOCK": 64}, num_stages=0)
            """),
        Case("""
            import triton
            HIP_CONFIGS = [triton.Config({"BLOCK": 64}, num_stages=0)]
            """),
        Case("""
            import triton
            # triton.Config({"BLOCK": 64}, num_stages=0)
            doc = "use num_stages=0 on AMD"
            """),
        Case("""
            import triton
            def f(x):
                return helper(x, num_stages=0)
            """),
        Case("""
            import triton
            import triton.language as tl
            @triton.jit
            def k(x, n):
                for i in tl.range(0, n, num_stages=0):
                    pass
            """),
    )
    INVALID = (
        Case(
            """
            import triton
            cfg = triton.Config({"BLOCK": 64}, num_warps=4, num_stages=0)
            """,
            expected="""
            import torch
            import triton

            is_rocm = getattr(torch.version, "hip", None) is not None

            cfg = triton.Config({"BLOCK": 64}, num_warps=4, num_stages=2 if is_rocm else 0)
            """,
            line=2,
            column=60,
            message=(
                "num_stages=0 once selected stream-pipelining on AMD; Triton's AMD backend now asserts or compiles "
                "without software pipelining; use 2 (the AMD default) on ROCm"
            ),
        ),
        Case(
            """
            import triton
            cfg = triton.Config({"BLOCK": 64}, 4, 0)
            """,
            expected="""
            import torch
            import triton

            is_rocm = getattr(torch.version, "hip", None) is not None

            cfg = triton.Config({"BLOCK": 64}, 4, 2 if is_rocm else 0)
            """,
            line=2,
            column=39,
            message=(
                "num_stages=0 once selected stream-pipelining on AMD; Triton's AMD backend now asserts or compiles "
                "without software pipelining; use 2 (the AMD default) on ROCm"
            ),
        ),
        Case(
            """
            import triton
            import triton.language as tl

            @triton.jit
            def scale(x_ptr, n, BLOCK: tl.constexpr):
                offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
                tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)

            STAGES = 0
            def f(x, n):
                scale[(1,)](x, n, BLOCK=64, num_stages=STAGES)
            """,
            expected="""
            import torch
            import triton
            import triton.language as tl

            {PRELUDE}

            @triton.jit
            def scale(x_ptr, n, BLOCK: tl.constexpr):
                offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
                tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)

            STAGES = 2 if is_rocm else 0
            def f(x, n):
                scale[(1,)](x, n, BLOCK=64, num_stages=STAGES)
            """,
            line=9,
            column=10,
            message=(
                "STAGES = 0 (num_stages) once selected stream-pipelining on AMD; Triton's AMD backend now asserts or "
                "compiles without software pipelining; use 2 (the AMD default) on ROCm"
            ),
        ),
    )

    def check(self, a: TritonAnalysis) -> None:
        seen: Set[int] = set()
        for call in list(a.configs) + list(a.subscript_calls):
            arg = keyword(call, "num_stages")
            if arg is None and a.call_is(call, CONFIG_NAMES):
                positional = [x for x in call.args if x.keyword is None and not x.star]
                arg = positional[2] if len(positional) > 2 else None
            if arg is None or self.skipped(a, call, arg.value) or in_rocm_named_assignment(self, call):
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
