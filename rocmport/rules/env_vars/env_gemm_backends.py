"""ROC604 env-gemm-backends: TORCHINDUCTOR_MAX_AUTOTUNE_GEMM_BACKENDS including TRITON or CPP.

The rule's documentation is its class's (`rocmport rule ROC604` prints it).
"""

from __future__ import annotations

from rocmport.findings import Applicability
from rocmport.rules.base import Case

from .common import BACKEND_VARS, GatedValue, env_write, what


class GemmBackendsEnv(GatedValue):
    CODE = "ROC604"
    NAME = "env-gemm-backends"
    TRIGGERS = ("TORCHINDUCTOR_MAX_AUTOTUNE_GEMM_BACKENDS",)
    NEEDS = env_write(*BACKEND_VARS)
    SUMMARY = "TORCHINDUCTOR_MAX_AUTOTUNE_GEMM_BACKENDS including TRITON or CPP."
    WHAT = what("`TORCHINDUCTOR_MAX_AUTOTUNE_GEMM_BACKENDS` set to a value that includes TRITON or CPP "
                 "(inductor upper-cases it) or to a value only known at run time.")
    WHY = """
        With max-autotune on, inductor benchmarks Triton and C++ GEMM templates; on ROCm they
        often fail or lose to hipBLASLt (see ROC204). "ATEN" keeps the vendor GEMMs.
        """
    EXAMPLE = """
        os.environ.update({"TORCHINDUCTOR_MAX_AUTOTUNE_GEMM_BACKENDS": "TRITON,ATEN"})
        """
    FIXED_EXAMPLE = """
        os.environ.update({"TORCHINDUCTOR_MAX_AUTOTUNE_GEMM_BACKENDS": "ATEN" if is_rocm else "TRITON,ATEN"})
        """
    FIX = """
        Safe in Python: `"ATEN" if is_rocm else <value>`, unchanged on NVIDIA. Display-only in
        other files.
        """
    FIX_APPLICABILITY = Applicability.SAFE
    VALID = (
        Case("""
            import os
            os.environ["TORCHINDUCTOR_MAX_AUTOTUNE_GEMM_BACKENDS"] = "ATEN"
            """),
    )
    INVALID = (
        Case(
            """
            import os
            os.environ.update({"TORCHINDUCTOR_MAX_AUTOTUNE_GEMM_BACKENDS": "TRITON,ATEN"})
            """,
            expected="""
            import os

            import torch

            is_rocm = getattr(torch.version, "hip", None) is not None

            os.environ.update({"TORCHINDUCTOR_MAX_AUTOTUNE_GEMM_BACKENDS": "ATEN" if is_rocm else "TRITON,ATEN"})
            """,
            line=2,
            column=64,
            message=(
                'TORCHINDUCTOR_MAX_AUTOTUNE_GEMM_BACKENDS includes TRITON or CPP GEMM templates, which are slow or '
                'fail on ROCm; use "ATEN" there (set in os.environ)'
            ),
        ),
        Case(
            """
            import os
            os.environ.update(TORCHINDUCTOR_MAX_AUTOTUNE_GEMM_BACKENDS="cpp")
            """,
            expected="""
            import os

            import torch

            is_rocm = getattr(torch.version, "hip", None) is not None

            os.environ.update(TORCHINDUCTOR_MAX_AUTOTUNE_GEMM_BACKENDS="ATEN" if is_rocm else "cpp")
            """,
            line=2,
            column=60,
            message=(
                'TORCHINDUCTOR_MAX_AUTOTUNE_GEMM_BACKENDS includes TRITON or CPP GEMM templates, which are slow or '
                'fail on ROCm; use "ATEN" there (set in os.environ)'
            ),
        ),
    )
