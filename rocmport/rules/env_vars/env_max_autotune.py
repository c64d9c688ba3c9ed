"""ROC601 env-max-autotune: TORCHINDUCTOR_MAX_AUTOTUNE (or _POINTWISE, _GEMM) set to a true value.

The rule's documentation is its class's (`rocmport rule ROC601` prints it).
"""

from __future__ import annotations

from rocmport.findings import Applicability
from rocmport.rules.base import Case

from .common import AUTOTUNE_VARS, GatedValue, env_write, what


class MaxAutotuneEnv(GatedValue):
    CODE = "ROC601"
    NAME = "env-max-autotune"
    TRIGGERS = ("TORCHINDUCTOR_MAX_AUTOTUNE",)
    NEEDS = env_write(*AUTOTUNE_VARS)
    SUMMARY = "TORCHINDUCTOR_MAX_AUTOTUNE (or _POINTWISE, _GEMM) set to a true value."
    WHAT = what("`TORCHINDUCTOR_MAX_AUTOTUNE`, `TORCHINDUCTOR_MAX_AUTOTUNE_POINTWISE` or "
                 "`TORCHINDUCTOR_MAX_AUTOTUNE_GEMM` set to \"1\" (inductor compares with \"1\"; \"0\", \"\" and "
                 "other strings leave it off) or to a value only known at run time.")
    WHY = """
        The variable turns on inductor's max-autotune for the whole process and for every
        child process that inherits the environment. On ROCm many Triton templates fail to
        compile or time out and compilation takes far longer (see ROC203).
        """
    EXAMPLE = """
        os.environ["TORCHINDUCTOR_MAX_AUTOTUNE"] = "1"
        """
    FIXED_EXAMPLE = """
        os.environ["TORCHINDUCTOR_MAX_AUTOTUNE"] = "0" if is_rocm else "1"
        """
    FIX = """
        Safe in Python: the value becomes `"0" if is_rocm else <value>`, unchanged on NVIDIA.
        In shell scripts, Dockerfiles, YAML and `.env` files: display-only (rocmport does not
        rewrite them); leave the variable unset for ROCm images and jobs.
        """
    FIX_APPLICABILITY = Applicability.SAFE
    VALID = (
        Case("""
            import os
            os.environ["TORCHINDUCTOR_MAX_AUTOTUNE"] = "0"
            """),
        Case("""
            import os
            os.environ["TORCHINDUCTOR_MAX_AUTOTUNE"] = ""
            """),
        Case("""
            import os
            x = os.environ["TORCHINDUCTOR_MAX_AUTOTUNE"]
            """),
        Case("""
            import os
            if os.environ.get("TORCHINDUCTOR_MAX_AUTOTUNE") == "1":
                pass
            """),
        Case("""
            settings = {}
            settings["TORCHINDUCTOR_MAX_AUTOTUNE"] = "1"
            """),
        Case("""
            import os
            # os.environ["TORCHINDUCTOR_MAX_AUTOTUNE"] = "1"
            """),
        Case("""
            import os
            os.environ["TORCHINDUCTOR_MAX_AUTOTUNE"] = "0" if is_rocm else "1"
            """),
    )
    INVALID = (
        Case(
            """
            import os
            os.environ["TORCHINDUCTOR_MAX_AUTOTUNE"] = "1"
            """,
            expected="""
            import os

            import torch

            is_rocm = getattr(torch.version, "hip", None) is not None

            os.environ["TORCHINDUCTOR_MAX_AUTOTUNE"] = "0" if is_rocm else "1"
            """,
            line=2,
            column=44,
            message=(
                "TORCHINDUCTOR_MAX_AUTOTUNE turns on max-autotune, which is slow and fragile on ROCm (set in "
                "os.environ)"
            ),
        ),
        Case(
            """
            from os import environ as env
            env.setdefault('TORCHINDUCTOR_MAX_AUTOTUNE_GEMM', '1')
            """,
            expected="""
            from os import environ as env

            import torch

            is_rocm = getattr(torch.version, "hip", None) is not None

            env.setdefault('TORCHINDUCTOR_MAX_AUTOTUNE_GEMM', '0' if is_rocm else '1')
            """,
            line=2,
            column=51,
            message=(
                "TORCHINDUCTOR_MAX_AUTOTUNE_GEMM turns on max-autotune, which is slow and fragile on ROCm (set in "
                "os.environ)"
            ),
        ),
        Case(
            """
            import os
            import subprocess
            subprocess.run(["python", "t.py"], env={**os.environ, "TORCHINDUCTOR_MAX_AUTOTUNE": "1"})
            """,
            line=3,
            column=85,
            message=(
                "TORCHINDUCTOR_MAX_AUTOTUNE turns on max-autotune, which is slow and fragile on ROCm (set in a child "
                "process' environment)"
            ),
        ),
    )
