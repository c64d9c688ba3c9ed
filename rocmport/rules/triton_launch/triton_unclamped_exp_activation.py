"""ROC505 triton-unclamped-exp-activation: A hand-built tanh (a ratio of tl.exp terms) without a clamp of its input.

The rule's documentation is its class's (`rocmport rule ROC505` prints it).
"""

from __future__ import annotations

from typing import Dict, List, Optional

import libcst as cst

from rocmport.analysis import walk as _walk
from rocmport.analysis.triton import (
    CLAMPS,
    EXP_NAMES,
    TritonAnalysis,
    names_in,
)
from rocmport.findings import Applicability, Fix
from rocmport.rules.base import Case

from .common import TritonRule


class TritonUnclampedExp(TritonRule):
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
        Case("""
            import triton
            import triton.language as tl
            @triton.jit
            def k(p):
                x = tl.load(p)
                x = tl.clamp(x, -10.0, 10.0)
                e = tl.exp(2 * x)
                tl.store(p, (e - 1) / (e + 1))
            """),
        Case("""
            import triton
            import triton.language as tl
            @triton.jit
            def k(p):
                x = tl.load(p)
                m = tl.max(x, 0)
                e = tl.exp(x - m)
                tl.store(p, e / tl.sum(e, 0))
            """),
        Case("""
            import triton
            import triton.language as tl
            @triton.jit
            def k(p):
                x = tl.load(p)
                tl.store(p, 1 / (1 + tl.exp(-tl.abs(x))))
            """),
        Case("""
            import math
            import triton
            def f(x):
                return 1 / (1 + math.exp(-x))
            """),
        Case("""
            import triton
            import triton.language as tl
            @triton.jit
            def k(p):
                x = tl.load(p)
                tl.store(p, 1.0 / (1.0 + tl.exp(-x)))
            """),
        Case("""
            import triton
            import triton.language as tl
            @triton.jit
            def k(p):
                x = tl.load(p)
                tl.store(p, x / (1 + tl.exp(-x)))
            """),
    )
    INVALID = (
        Case(
            """
            import triton
            import triton.language as tl
            @triton.jit
            def k(p):
                x = tl.load(p)
                tl.store(p, (tl.exp(x) - tl.exp(-x)) / (tl.exp(x) + tl.exp(-x)))
            """,
            line=6,
            column=17,
            message=(
                "hand-built tanh/sigmoid on tl.exp with no clamp of its input: exp overflows to inf and inf/inf is "
                "NaN; clamp the input to [-10, 10] first"
            ),
        ),
        Case(
            """
            import triton
            import triton.language as tl
            @triton.jit
            def k(p):
                x = tl.load(p)
                e = tl.exp(2 * x)
                tl.store(p, (e - 1) / (e + 1))
            """,
            line=7,
            column=17,
            message=(
                "hand-built tanh/sigmoid on tl.exp with no clamp of its input: exp overflows to inf and inf/inf is "
                "NaN; clamp the input to [-10, 10] first"
            ),
        ),
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
