"""ROC602 env-cudagraphs: TORCHINDUCTOR_CUDAGRAPHS set to a true value.

The rule's documentation is its class's (`rocmport rule ROC602` prints it).
"""

from __future__ import annotations

from rocmport.findings import Applicability
from rocmport.rules.base import Case

from .common import CUDAGRAPH_VARS, GatedValue, env_write, what


class CudagraphsEnv(GatedValue):
    CODE = "ROC602"
    NAME = "env-cudagraphs"
    TRIGGERS = ("TORCHINDUCTOR_CUDAGRAPHS",)
    NEEDS = env_write(*CUDAGRAPH_VARS)
    SUMMARY = "TORCHINDUCTOR_CUDAGRAPHS set to a true value."
    WHAT = what("`TORCHINDUCTOR_CUDAGRAPHS` (it sets `triton.cudagraphs`) set to \"1\" or to a value "
                 "only known at run time.")
    WHY = """
        It turns on inductor's CUDA graphs for every compiled function in the process and in
        child processes; they hang or slow down on ROCm (see ROC201).
        """
    EXAMPLE = """
        subprocess.run(cmd, env={**os.environ, "TORCHINDUCTOR_CUDAGRAPHS": "1"})
        """
    FIXED_EXAMPLE = """
        subprocess.run(cmd, env={**os.environ, "TORCHINDUCTOR_CUDAGRAPHS": "0" if is_rocm else "1"})
        """
    FIX = """
        Safe in Python: `"0" if is_rocm else <value>`, unchanged on NVIDIA. Display-only in
        other files.
        """
    FIX_APPLICABILITY = Applicability.SAFE
    VALID = (
        Case("""
            import os
            os.environ["TORCHINDUCTOR_CUDAGRAPHS"] = "0"
            """),
        Case("""
            import os
            print("TORCHINDUCTOR_CUDAGRAPHS=1")
            """),
    )
    INVALID = (
        Case(
            """
            import os
            import subprocess
            subprocess.run(cmd, env={**os.environ, "TORCHINDUCTOR_CUDAGRAPHS": "1"})
            """,
            expected="""
            import os
            import subprocess

            import torch

            is_rocm = getattr(torch.version, "hip", None) is not None

            subprocess.run(cmd, env={**os.environ, "TORCHINDUCTOR_CUDAGRAPHS": "0" if is_rocm else "1"})
            """,
            line=3,
            column=68,
            message=(
                "TORCHINDUCTOR_CUDAGRAPHS turns on inductor's CUDA graphs, which hang or slow down on ROCm (set in a "
                "child process' environment)"
            ),
        ),
        Case(
            """
            import os as _os
            _os.putenv("TORCHINDUCTOR_CUDAGRAPHS", "1")
            """,
            expected="""
            import os as _os

            import torch

            is_rocm = getattr(torch.version, "hip", None) is not None

            _os.putenv("TORCHINDUCTOR_CUDAGRAPHS", "0" if is_rocm else "1")
            """,
            line=2,
            column=40,
            message=(
                "TORCHINDUCTOR_CUDAGRAPHS turns on inductor's CUDA graphs, which hang or slow down on ROCm (set in "
                "os.putenv)"
            ),
        ),
        Case(
            """
            import os
            def launch(cmd):
                env = os.environ.copy()
                env["TORCHINDUCTOR_CUDAGRAPHS"] = flag
                return env
            """,
            expected="""
            import os

            import torch

            is_rocm = getattr(torch.version, "hip", None) is not None

            def launch(cmd):
                env = os.environ.copy()
                env["TORCHINDUCTOR_CUDAGRAPHS"] = "0" if is_rocm else flag
                return env
            """,
            line=4,
            column=39,
            message=(
                "TORCHINDUCTOR_CUDAGRAPHS turns on inductor's CUDA graphs, which hang or slow down on ROCm (set in a "
                "child process' environment)"
            ),
        ),
    )
