"""ROC205 inductor-memory-planning: torch._inductor.config.memory_planning turned on.

The rule's documentation is its class's (`rocmport rule ROC205` prints it).
"""

from __future__ import annotations

from rocmport.findings import Applicability
from rocmport.rules.base import Case

from .common import InductorSetting, setting, what


class MemoryPlanning(InductorSetting):
    CODE = "ROC205"
    NAME = "inductor-memory-planning"
    KEYS = ("memory_planning",)
    NEEDS = setting(*KEYS)
    TRIGGERS = ("memory_planning",)
    WHAT_IT_DOES = "turns on inductor's memory planning, which has crashed and corrupted results on ROCm"
    SUMMARY = "torch._inductor.config.memory_planning turned on."
    WHAT = what("`memory_planning` set to a value that is not False (the name exists from torch 2.2).")
    WHY = """
        Memory planning lays out a compiled graph's buffers in one pool; it is experimental,
        off by default (2.13), and its pool allocation has crashed and given corrupt results
        with HIP's allocator. It is mostly used together with CUDA graphs.
        """
    EXAMPLE = """
        from torch._inductor import config
        config.memory_planning = True
        """
    FIXED_EXAMPLE = """
        from torch._inductor import config
        config.memory_planning = not is_rocm
        """
    FIX = """
        Safe. `False if is_rocm else <value>` (`not is_rocm` for a literal `True`): unchanged on NVIDIA.
        """
    FIX_APPLICABILITY = Applicability.SAFE
    VALID = (
        Case("""
            from torch._inductor import config
            config.memory_planning = False
            """),
        Case('''
            import torch
            """Set torch._inductor.config.memory_planning = True for speed."""
            '''),
    )
    INVALID = (
        Case(
            """
            from torch._inductor import config
            config.memory_planning = True
            """,
            expected="""
            import torch
            from torch._inductor import config

            is_rocm = getattr(torch.version, "hip", None) is not None

            config.memory_planning = not is_rocm
            """,
            line=2,
            column=26,
            message=(
                "memory_planning turns on inductor's memory planning, which has crashed and corrupted results on ROCm"
            ),
        ),
        Case(
            """
            import torch
            f = torch.compile(g, options={"memory_planning": True, "triton.cudagraphs": True})
            """,
            codes=("ROC205", "ROC103"),
            line=2,
            column=50,
            message=(
                "memory_planning turns on inductor's memory planning, which has crashed and corrupted results on ROCm"
            ),
        ),
    )
