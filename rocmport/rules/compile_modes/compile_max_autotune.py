"""ROC102 compile-max-autotune: torch.compile(mode="max-autotune") also turns CUDA graphs on.

The rule's documentation is its class's (`rocmport rule ROC102` prints it).
"""

from __future__ import annotations

from rocmport.findings import Applicability
from rocmport.rules.base import Case

from .common import LiteralMode


class MaxAutotuneMode(LiteralMode):
    CODE = "ROC102"
    NAME = "compile-max-autotune"
    MODE = "max-autotune"
    SUMMARY = 'torch.compile(mode="max-autotune") also turns CUDA graphs on.'
    WHAT = """
        A literal `mode="max-autotune"` handed to `torch.compile`, in every spelling that
        ROC101 knows.
        """
    WHY = """
        "max-autotune" patches `max_autotune`, `coordinate_descent_tuning` and
        `triton.cudagraphs=True`: it captures CUDA graphs just like "reduce-overhead". Its
        twin "max-autotune-no-cudagraphs" keeps the autotuning without the graphs.
        """
    EXAMPLE = """
        self.image_encoder.forward = torch.compile(self.image_encoder.forward, mode="max-autotune", fullgraph=True)
        """
    FIXED_EXAMPLE = """
        self.image_encoder.forward = torch.compile(self.image_encoder.forward, mode="max-autotune-no-cudagraphs" if is_rocm else "max-autotune", fullgraph=True)
        """
    FIX = """
        Safe. `"max-autotune-no-cudagraphs" if is_rocm else "max-autotune"`: unchanged on
        NVIDIA; on ROCm the same autotuning, without CUDA graphs. A literal handed to the
        project's own wrapper around torch.compile is left where it is when ROC104 maps the
        mode once inside that wrapper (see ROC101).
        """
    FIX_APPLICABILITY = Applicability.SAFE
    VALID = (
        Case("""
            import torch
            f = torch.compile(g, mode="max-autotune-no-cudagraphs")
            """),
        Case("""
            import torch
            MODES = ["max-autotune", "default"]
            """),
        # not nn.Module.compile: a class of this file that is no nn.Module, a keyword
        # torch.compile does not take (it would raise)
        Case("""
            import torch

            class Trainer:
                def compile(self, optimizer, mode="default"):
                    self.optimizer, self.mode = optimizer, mode

            Trainer().compile(optimizer="adam", mode="max-autotune")
            trainer = Trainer()
            trainer.compile(mode="max-autotune")
            """),
        Case("""
            import torch

            model.compile(optimizer="adam", loss="mse", mode="max-autotune")
            """),
    )
    INVALID = (
        # near misses: an nn.Module subclass of this file (through another class), a module's
        # own compile
        Case(
            """
            import torch

            class Net(torch.nn.Module):
                pass

            class Big(Net):
                pass

            Big().compile(mode="max-autotune")
            """,
            line=9,
            column=20,
            message=(
                'mode="max-autotune" turns on CUDA graphs, which hang or slow down on ROCm; use '
                '"max-autotune-no-cudagraphs" there'
            ),
        ),
        Case(
            """
            import torch

            class Net(torch.nn.Module):
                def fast(self):
                    self.compile(mode="max-autotune")
            """,
            line=5,
            column=27,
            message=(
                'mode="max-autotune" turns on CUDA graphs, which hang or slow down on ROCm; use '
                '"max-autotune-no-cudagraphs" there'
            ),
        ),
        Case(
            """
            import torch
            f = torch.compile(g,
                mode="max-autotune",
            )
            """,
            expected="""
            import torch

            {PRELUDE}

            f = torch.compile(g,
                mode="max-autotune-no-cudagraphs" if is_rocm else "max-autotune",
            )
            """,
            line=3,
            column=10,
            message=(
                'mode="max-autotune" turns on CUDA graphs, which hang or slow down on ROCm; use '
                '"max-autotune-no-cudagraphs" there'
            ),
        ),
        Case(
            """
            import torch
            f = torch.compile(g, mode="max-autotune" if big else "default")
            """,
            expected="""
            import torch

            {PRELUDE}

            f = torch.compile(g, mode=("max-autotune-no-cudagraphs" if is_rocm else "max-autotune") if big else "default")
            """,
            line=2,
            column=27,
            message=(
                'mode="max-autotune" turns on CUDA graphs, which hang or slow down on ROCm; use '
                '"max-autotune-no-cudagraphs" there'
            ),
        ),
    )
