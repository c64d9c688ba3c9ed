"""ROC204 inductor-gemm-backends: max_autotune_gemm_backends that includes TRITON or CPP.

The rule's documentation is its class's (`rocmport rule ROC204` prints it).
"""

from __future__ import annotations

import libcst as cst

from rocmport.analysis.syntax import literal_string
from rocmport.findings import Applicability
from rocmport.rules.base import Case

from .common import InductorSetting, falsy, setting, what


class GemmBackends(InductorSetting):
    CODE = "ROC204"
    NAME = "inductor-gemm-backends"
    KEYS = ("max_autotune_gemm_backends",)
    NEEDS = setting(*KEYS)
    TRIGGERS = ("max_autotune_gemm_backends",)
    ROCM_TEXT = '"ATEN"'
    WHAT_IT_DOES = "includes TRITON or CPP GEMM templates, which are slow or fail on ROCm; use \"ATEN\" there"
    SUMMARY = "max_autotune_gemm_backends that includes TRITON or CPP."
    WHAT = what("`max_autotune_gemm_backends` set to a string that includes TRITON or CPP (any case, "
                 "as inductor upper-cases it), or to a value only known at run time.")
    WHY = """
        With max-autotune on, inductor benchmarks Triton (and C++) GEMM templates against the
        vendor library. On ROCm the Triton GEMM templates often fail to compile or lose to
        hipBLASLt, and tuning them costs minutes per shape. "ATEN" keeps the vendor GEMMs.
        """
    EXAMPLE = """
        torch._inductor.config.max_autotune_gemm_backends = "TRITON,ATEN"
        """
    FIXED_EXAMPLE = """
        torch._inductor.config.max_autotune_gemm_backends = "ATEN" if is_rocm else "TRITON,ATEN"
        """
    FIX = """
        Safe. `"ATEN" if is_rocm else <value>`: unchanged on NVIDIA; on ROCm the vendor GEMMs.
        """
    FIX_APPLICABILITY = Applicability.SAFE
    VALID = (
        Case("""
            import torch
            torch._inductor.config.max_autotune_gemm_backends = "ATEN"
            """),
        Case("""
            import torch
            b = torch._inductor.config.max_autotune_gemm_backends
            """),
        Case("""
            import torch
            torch._inductor.config.max_autotune_gemm_backends = "ATEN" if is_rocm else "TRITON"
            """),
    )
    INVALID = (
        Case(
            """
            import torch
            torch._inductor.config.max_autotune_gemm_backends = 'triton,aten'
            """,
            expected="""
            import torch

            {PRELUDE}

            torch._inductor.config.max_autotune_gemm_backends = 'ATEN' if is_rocm else 'triton,aten'
            """,
            line=2,
            column=53,
            message=(
                'max_autotune_gemm_backends includes TRITON or CPP GEMM templates, which are slow or fail on ROCm; '
                'use "ATEN" there'
            ),
        ),
        Case(
            """
            from torch._inductor import config
            with config.patch("max_autotune_gemm_backends", "ATEN,CPP"):
                pass
            """,
            expected="""
            import torch
            from torch._inductor import config

            is_rocm = getattr(torch.version, "hip", None) is not None

            with config.patch("max_autotune_gemm_backends", "ATEN" if is_rocm else "ATEN,CPP"):
                pass
            """,
            line=2,
            column=49,
            message=(
                'max_autotune_gemm_backends includes TRITON or CPP GEMM templates, which are slow or fail on ROCm; '
                'use "ATEN" there'
            ),
        ),
    )

    def hazardous(self, key: str, value: cst.BaseExpression) -> bool:
        text = literal_string(value)
        if text is None:
            return not falsy(value)
        upper = text.upper()
        return "TRITON" in upper or "CPP" in upper
