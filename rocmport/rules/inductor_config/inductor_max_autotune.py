"""ROC203 inductor-max-autotune: max_autotune, max_autotune_pointwise or max_autotune_gemm turned on.

The rule's documentation is its class's (`rocmport rule ROC203` prints it).
"""

from __future__ import annotations

from rocmport.findings import Applicability
from rocmport.rules.base import Case

from .common import InductorSetting, setting, what


class MaxAutotune(InductorSetting):
    CODE = "ROC203"
    NAME = "inductor-max-autotune"
    KEYS = ("max_autotune", "max_autotune_pointwise", "max_autotune_gemm")
    NEEDS = setting(*KEYS)
    TRIGGERS = ("max_autotune",)
    WHAT_IT_DOES = "turns on exhaustive autotuning, which is slow and fragile on ROCm"
    SUMMARY = "max_autotune, max_autotune_pointwise or max_autotune_gemm turned on."
    WHAT = what("`max_autotune`, `max_autotune_pointwise` or `max_autotune_gemm` set to a value "
                 "that is not False.")
    WHY = """
        Max-autotune benchmarks many Triton templates per kernel. On ROCm many of them fail
        to compile or time out, compilation takes far longer, and the chosen kernels are often
        no faster than the default ones; it is the second most common reason that ported code
        hangs or slows down.
        """
    EXAMPLE = """
        torch_compile_options = {"epilogue_fusion": True, "max_autotune": True}
        f = torch.compile(f, options=torch_compile_options)
        """
    FIXED_EXAMPLE = """
        torch_compile_options = {"epilogue_fusion": True, "max_autotune": not is_rocm}
        f = torch.compile(f, options=torch_compile_options)
        """
    FIX = """
        Safe. `False if is_rocm else <value>` (`not is_rocm` for a literal `True`): unchanged on NVIDIA; on ROCm the default
        kernels. Turn the rule off where max-autotune works for you (`ignore = ["ROC203"]`).
        """
    FIX_APPLICABILITY = Applicability.SAFE
    VALID = (
        Case("""
            import torch
            torch._inductor.config.max_autotune = False
            """),
        Case("""
            import torch
            opts = {"max_autotune": False}
            f = torch.compile(g, options=opts)
            """),
        Case("""
            my_config.max_autotune = True
            """),
        Case("""
            import torch
            torch._inductor.config.coordinate_descent_tuning = True
            """),
        Case("""
            import torch
            settings = {"max_autotune": True}
            """),
        Case("""
            import torch
            torch._inductor.config.max_autotune = not is_rocm
            """),
    )
    INVALID = (
        Case(
            """
            import torch
            opts = {"max_autotune": True, "triton.cudagraphs": False}
            f = torch.compile(g, options=opts)
            """,
            expected="""
            import torch

            {PRELUDE}

            opts = {"max_autotune": not is_rocm, "triton.cudagraphs": False}
            f = torch.compile(g, options=opts)
            """,
            line=2,
            column=25,
            message="max_autotune turns on exhaustive autotuning, which is slow and fragile on ROCm",
        ),
        Case(
            """
            import torch
            with torch._inductor.config.patch(max_autotune=True, max_autotune_gemm=True):
                pass
            """,
            expected="""
            import torch

            {PRELUDE}

            with torch._inductor.config.patch(max_autotune=not is_rocm, max_autotune_gemm=not is_rocm):
                pass
            """,
            line=2,
            column=48,
            message="max_autotune turns on exhaustive autotuning, which is slow and fragile on ROCm",
        ),
        Case(
            """
            import torch
            cfg = torch._inductor.config
            cfg.max_autotune_pointwise = True
            """,
            expected="""
            import torch

            {PRELUDE}

            cfg = torch._inductor.config
            cfg.max_autotune_pointwise = not is_rocm
            """,
            line=3,
            column=30,
            message="max_autotune_pointwise turns on exhaustive autotuning, which is slow and fragile on ROCm",
        ),
    )
