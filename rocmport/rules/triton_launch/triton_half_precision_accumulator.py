"""ROC504 triton-half-precision-accumulator: An fp16/bf16 accumulator in a Triton kernel.

The rule's documentation is its class's (`rocmport rule ROC504` prints it).
"""

from __future__ import annotations

from typing import Dict, Set

import libcst as cst

from rocmport.analysis import walk as _walk
from rocmport.analysis.syntax import keyword
from rocmport.analysis.triton import (
    DOT,
    HALF_DTYPES,
    ZEROS,
    TritonAnalysis,
    names_in,
)
from rocmport.findings import Applicability, Fix
from rocmport.rules.base import Case

from .common import TritonRule


class TritonHalfAccumulator(TritonRule):
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
        Case("""
            import triton
            import triton.language as tl
            @triton.jit
            def k(o, B: tl.constexpr):
                acc = tl.zeros((B,), dtype=tl.float32)
                acc += 1
                tl.store(o, acc)
            """),
        Case("""
            import triton
            import triton.language as tl
            @triton.jit
            def k(o, B: tl.constexpr):
                z = tl.zeros((B,), dtype=tl.float16)
                tl.store(o, z)
            """),
        Case("""
            import torch
            import triton
            acc = torch.zeros(4, dtype=torch.float16)
            acc += 1
            """),
    )
    INVALID = (
        Case(
            """
            import triton
            import triton.language as tl
            @triton.jit
            def k(o, B: tl.constexpr):
                acc = tl.zeros((B,), dtype=tl.float16)
                acc += 1
                tl.store(o, acc)
            """,
            line=5,
            column=11,
            message="`acc` accumulates in half precision; on AMD accumulate in tl.float32 and convert once at the end",
        ),
        Case(
            """
            import triton
            import triton.language as tl
            @triton.jit
            def k(a, b, o, B: tl.constexpr):
                acc = tl.zeros((B, B), tl.bfloat16)
                acc = tl.dot(a, b, acc)
                tl.store(o, acc)
            """,
            line=5,
            column=11,
            message="`acc` accumulates in half precision; on AMD accumulate in tl.float32 and convert once at the end",
        ),
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
