"""ROC201 inductor-triton-cudagraphs: torch._inductor.config.triton.cudagraphs turned on.

The rule's documentation is its class's (`rocmport rule ROC201` prints it).
"""

from __future__ import annotations

from rocmport.findings import Applicability
from rocmport.rules.base import Case

from .common import InductorSetting, setting, what


class TritonCudagraphs(InductorSetting):
    CODE = "ROC201"
    NAME = "inductor-triton-cudagraphs"
    KEYS = ("triton.cudagraphs",)
    NEEDS = setting(*KEYS)
    TRIGGERS = ("cudagraphs",)
    WHAT_IT_DOES = "turns on inductor's CUDA graphs, which hang or slow down on ROCm"
    SUMMARY = "torch._inductor.config.triton.cudagraphs turned on."
    WHAT = what("`triton.cudagraphs` set to a value that is not False.") + """
        In `torch.compile(options=...)` the key is ROC103's and is not reported again.
        """
    WHY = """
        `triton.cudagraphs` makes inductor capture and replay CUDA graphs (what
        `mode="reduce-overhead"` turns on). Inductor's CUDA graphs on ROCm (HIP graphs) have
        hung, crashed or run slower on the stacks most users have today (ROCm/clr#279,
        ROCm/hip#3887, pytorch#187715).
        """
    EXAMPLE = """
        import torch._inductor.config

        torch._inductor.config.triton.cudagraphs = True
        """
    FIXED_EXAMPLE = """
        import torch._inductor.config

        torch._inductor.config.triton.cudagraphs = not is_rocm
        """
    FIX = """
        Safe. The value becomes `False if is_rocm else <value>` (`not is_rocm` for a literal `True`): on NVIDIA the expression is
        the original value; on ROCm CUDA graphs stay off. `is_rocm` comes from the generated
        prelude. To keep the speed of CUDA graphs on ROCm, capture the compiled function
        manually (`torch.cuda.graph`). Turn the rule off on stacks where inductor's CUDA
        graphs work (`ignore = ["ROC201"]`).
        """
    FIX_APPLICABILITY = Applicability.SAFE
    VALID = (
        Case("""
            import torch
            torch._inductor.config.triton.cudagraphs = False
            """),
        Case("""
            import torch
            if torch._inductor.config.triton.cudagraphs:
                pass
            """),
        Case("""
            import torch
            x = torch._inductor.config.triton.cudagraphs
            """),
        Case("""
            import torch
            torch._inductor.config.triton.cudagraphs = not is_rocm
            """),
        Case("""
            import torch
            torch._inductor.config.triton.cudagraph_trees = False
            """),
        Case("""
            import torch
            f = torch.compile(g, options={"triton.cudagraphs": True})
            """),
        Case("""
            my_config.triton.cudagraphs = True
            """),
        Case("""
            import torch
            # torch._inductor.config.triton.cudagraphs = True
            """),
        Case("""
            import torch
            if not torch.version.hip:
                torch._inductor.config.triton.cudagraphs = True
            """),
    )
    INVALID = (
        Case(
            """
            import torch
            torch._inductor.config.triton.cudagraphs = True
            """,
            expected="""
            import torch

            {PRELUDE}

            torch._inductor.config.triton.cudagraphs = not is_rocm
            """,
            line=2,
            column=44,
            message="triton.cudagraphs turns on inductor's CUDA graphs, which hang or slow down on ROCm",
        ),
        Case(
            """
            from torch._inductor import config

            with config.patch({"triton.cudagraphs": True}):
                pass
            """,
            expected="""
            import torch
            from torch._inductor import config

            is_rocm = getattr(torch.version, "hip", None) is not None

            with config.patch({"triton.cudagraphs": not is_rocm}):
                pass
            """,
            line=3,
            column=41,
            message="triton.cudagraphs turns on inductor's CUDA graphs, which hang or slow down on ROCm",
        ),
        Case(
            """
            import torch._inductor.config as ic

            @ic.patch(**{"triton.cudagraphs": True})
            def f():
                pass
            """,
            expected="""
            import torch
            import torch._inductor.config as ic

            is_rocm = getattr(torch.version, "hip", None) is not None

            @ic.patch(**{"triton.cudagraphs": not is_rocm})
            def f():
                pass
            """,
            line=3,
            column=35,
            message="triton.cudagraphs turns on inductor's CUDA graphs, which hang or slow down on ROCm",
        ),
        Case(
            """
            def setup():
                from torch._inductor import config
                config.triton.cudagraphs = 1
            """,
            expected="""
            def setup():
                from torch._inductor import config
                import torch
                is_rocm = getattr(torch.version, "hip", None) is not None
                config.triton.cudagraphs = False if is_rocm else 1
            """,
            line=3,
            column=32,
            message="triton.cudagraphs turns on inductor's CUDA graphs, which hang or slow down on ROCm",
        ),
    )
