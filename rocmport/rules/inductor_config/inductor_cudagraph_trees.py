"""ROC202 inductor-cudagraph-trees: torch._inductor.config.triton.cudagraph_trees turned on.

The rule's documentation is its class's (`rocmport rule ROC202` prints it).
"""

from __future__ import annotations

from rocmport.findings import Applicability
from rocmport.rules.base import Case

from .common import InductorSetting, setting, what


class TritonCudagraphTrees(InductorSetting):
    CODE = "ROC202"
    NAME = "inductor-cudagraph-trees"
    KEYS = ("triton.cudagraph_trees",)
    NEEDS = setting(*KEYS)
    TRIGGERS = ("cudagraph_trees",)
    WHAT_IT_DOES = "is turned on: inductor's CUDA-graph trees hang or slow down on ROCm"
    SUMMARY = "torch._inductor.config.triton.cudagraph_trees turned on."
    WHAT = what("`triton.cudagraph_trees` set to a value that is not False.") + """
        `triton.cudagraph_trees = False` is not a finding, and it is not a mitigation either:
        it selects the older CUDA-graph implementation and does not turn CUDA graphs off.
        """
    WHY = """
        CUDA-graph trees are the implementation of inductor's CUDA graphs (`triton.cudagraphs`
        or `mode="reduce-overhead"`); setting them explicitly says that the code relies on
        CUDA graphs, which hang or slow down on ROCm (see ROC201). The 2.13 default is True.
        """
    EXAMPLE = """
        torch._inductor.config.triton.cudagraph_trees = True
        """
    FIXED_EXAMPLE = """
        torch._inductor.config.triton.cudagraph_trees = not is_rocm
        """
    FIX = """
        Safe. `False if is_rocm else <value>` (`not is_rocm` for a literal `True`): unchanged on NVIDIA. Note that this alone does
        not turn CUDA graphs off on ROCm: the compile mode (ROC101/ROC102) and
        `triton.cudagraphs` (ROC201) decide that.
        """
    FIX_APPLICABILITY = Applicability.SAFE
    VALID = (
        Case("""
            import torch
            torch._inductor.config.triton.cudagraph_trees = False
            """),
        Case("""
            import torch
            print(torch._inductor.config.triton.cudagraph_trees)
            """),
    )
    INVALID = (
        Case(
            """
            import torch
            torch._inductor.config.triton.cudagraph_trees = True
            """,
            expected="""
            import torch

            {PRELUDE}

            torch._inductor.config.triton.cudagraph_trees = not is_rocm
            """,
            line=2,
            column=49,
            message="triton.cudagraph_trees is turned on: inductor's CUDA-graph trees hang or slow down on ROCm",
        ),
        Case(
            """
            import torch._inductor.config as c
            setattr(c.triton, "cudagraph_trees", True)
            """,
            expected="""
            import torch
            import torch._inductor.config as c

            is_rocm = getattr(torch.version, "hip", None) is not None

            setattr(c.triton, "cudagraph_trees", not is_rocm)
            """,
            line=2,
            column=38,
            message="triton.cudagraph_trees is turned on: inductor's CUDA-graph trees hang or slow down on ROCm",
        ),
    )
