"""ROC503 triton-num-warps-above-16: num_warps above 16: more than 1024 threads per workgroup on AMD.

The rule's documentation is its class's (`rocmport rule ROC503` prints it).
"""

from __future__ import annotations

from typing import Set

from rocmport.analysis.needs import Keyword
from rocmport.analysis.syntax import keyword
from rocmport.analysis.triton import (
    CONFIG_NAMES,
    TritonAnalysis,
    int_value,
)
from rocmport.findings import Applicability, Fix
from rocmport.rules.base import Case

from .common import KERNELS_OR_CONFIGS, TritonRule

MAX_WARPS = 16



class TritonNumWarps(TritonRule):
    CODE = "ROC503"
    NAME = "triton-num-warps-above-16"
    SUMMARY = "num_warps above 16: more than 1024 threads per workgroup on AMD."
    NEEDS = KERNELS_OR_CONFIGS | Keyword("num_warps", subscripted=True)  # or num_warps= of any launch
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
        Case("""
            import triton
            cfg = triton.Config({"BLOCK": 1024}, num_warps=16)
            """),
        Case("""
            import triton
            cfg = triton.Config({"BLOCK": 1024}, num_warps=16 if is_rocm else 32)
            """),
        Case("""
            import triton
            import torch
            if torch.version.hip is None:
                W = 32
            else:
                W = 16
            """),
        Case("""
            import triton
            def f(x):
                return launch(x, num_warps=32)
            """),
    )
    INVALID = (
        Case(
            """
            import triton
            cfg = triton.Config({"BLOCK": 4096}, num_warps=32)
            """,
            expected="""
            import torch
            import triton

            is_rocm = getattr(torch.version, "hip", None) is not None

            cfg = triton.Config({"BLOCK": 4096}, num_warps=16 if is_rocm else 32)
            """,
            line=2,
            column=48,
            message=(
                "num_warps=32 launches 2048 threads per workgroup on AMD (64-lane warps), above the limit of 1024: "
                "the kernel fails to launch; cap it at 16 on ROCm"
            ),
        ),
        Case(
            """
            import triton
            import triton.language as tl
            @triton.jit
            def k(x, B: tl.constexpr):
                pass
            W = 32
            def f(x):
                k[(1,)](x, B=1024, num_warps=W)
            """,
            expected="""
            import torch
            import triton
            import triton.language as tl

            is_rocm = getattr(torch.version, "hip", None) is not None

            @triton.jit
            def k(x, B: tl.constexpr):
                pass
            W = 16 if is_rocm else 32
            def f(x):
                k[(1,)](x, B=1024, num_warps=W)
            """,
            line=6,
            column=5,
            message=(
                "W = 32 launches 2048 threads per workgroup on AMD (64-lane warps), above the limit of 1024: the "
                "kernel fails to launch; cap it at 16 on ROCm"
            ),
        ),
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
