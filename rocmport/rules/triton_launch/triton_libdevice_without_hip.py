"""ROC508 triton-libdevice-without-hip: A libdevice function that Triton's AMD libdevice does not have.

The rule's documentation is its class's (`rocmport rule ROC508` prints it).
"""

from __future__ import annotations

import libcst as cst

from rocmport.analysis.needs import Call
from rocmport.analysis.triton import (
    LIBDEVICE_PORTABLE,
    LIBDEVICE_WITHOUT_HIP_NAMES,
)
from rocmport.findings import Applicability, Fix
from rocmport.rules.base import Case

from .common import TritonNameRule


class TritonLibdeviceWithoutHip(TritonNameRule):
    CODE = "ROC508"
    NAME = "triton-libdevice-without-hip"
    SUMMARY = "A libdevice function that Triton's AMD libdevice does not have."
    NEEDS = Call(*LIBDEVICE_WITHOUT_HIP_NAMES)
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
        Case("""
            import triton
            import triton.language as tl
            from triton.language.extra import libdevice
            @triton.jit
            def k(p):
                tl.store(p, libdevice.tanh(tl.load(p)))
            """),
        Case("""
            import triton
            import triton.language as tl
            @triton.jit
            def k(p):
                tl.store(p, tl.sqrt_rn(tl.load(p)))
            """),
        Case("""
            import triton
            import numpy as np
            def f(x):
                return np.cbrt(x)
            """),
        Case("""
            import triton
            import triton.language as tl
            from triton.language.extra import libdevice
            @triton.jit
            def k(p, IS_HIP: tl.constexpr):
                x = tl.load(p)
                if IS_HIP:
                    y = tl.sqrt(x)
                else:
                    y = libdevice.sqrt_rn(x)
                tl.store(p, y)
            """),
    )
    INVALID = (
        Case(
            """
            import triton
            import triton.language as tl
            from triton.language.extra import libdevice
            @triton.jit
            def k(p):
                tl.store(p, libdevice.rsqrt_rn(tl.load(p)))
            """,
            line=6,
            column=17,
            message=(
                "libdevice.rsqrt_rn has no HIP counterpart (Triton's AMD libdevice lacks it): the kernel fails to "
                "compile on ROCm; use a triton.language operation or a ROCm branch"
            ),
        ),
        Case(
            """
            import triton
            import triton.language as tl
            @triton.jit
            def k(p):
                tl.store(p, tl.extra.cuda.libdevice.float_as_int(tl.load(p)))
            """,
            line=5,
            column=17,
            message=(
                "libdevice.float_as_int has no HIP counterpart (Triton's AMD libdevice lacks it): the kernel fails "
                "to compile on ROCm; use x.to(tl.int32, bitcast=True)"
            ),
        ),
        Case(
            """
            import triton
            from triton.language.extra.libdevice import byte_perm
            @triton.jit
            def k(p):
                x = byte_perm(p, p, p)
            """,
            line=5,
            column=9,
            message=(
                "libdevice.byte_perm has no HIP counterpart (Triton's AMD libdevice lacks it): the kernel fails to "
                "compile on ROCm; use a triton.language operation or a ROCm branch"
            ),
        ),
    )

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
