"""ROC403 compiled-tensor-branch: Python `if` / `while` on a tensor value in compiled code breaks the graph.

The rule's documentation is its class's (`rocmport rule ROC403` prints it).
"""

from __future__ import annotations

from rocmport.analysis.events import (
    RegionEvent,
    TensorBranch,
)
from rocmport.rules.base import Case

from .common import REACH, GraphBreakRule


class CompiledTensorBranch(GraphBreakRule):
    CODE = "ROC403"
    NAME = "compiled-tensor-branch"
    SUMMARY = "Python `if` / `while` on a tensor value in compiled code breaks the graph."
    WHAT = """
        An `if` or `while` whose test is a tensor value (`if x.sum() > 0:`, `if mask.any():`,
        `if t:` on a parameter annotated `Tensor`) in compiled code. Tests on shapes, sizes,
        `None` and other Python values are not flagged.
        """ + REACH
    WHY = """
        Dynamo cannot decide the branch without the tensor's value: it breaks the graph
        (data-dependent control flow) and reads the value on the host, a synchronization.
        """
    EXAMPLE = """
        @torch.compile
        def f(x):
            if x.sum() > 0:
                return x
            return -x
        """
    FIX = """
        Display-only: `torch.where(cond, a, b)` for values, `torch.cond` for branches, or decide
        the branch before the compiled call.
        """
    VALID = (
        Case("""
            import torch
            @torch.compile
            def f(x, k=None):
                if k is not None and x.shape[0] > 1:
                    return x
                return -x
            """),
        Case("""
            import torch
            def f(x):
                if x.sum() > 0:
                    return x
                return -x
            """),
    )
    INVALID = (
        Case(
            """
            import torch
            @torch.compile
            def f(x):
                if x.sum() > 0:
                    return x
                return -x
            """,
            line=4,
            column=8,
            message=(
                "`if` on a tensor value breaks the graph inside `f`, compiled at line 2 (data-dependent control "
                "flow): use `torch.where` or `torch.cond`, or decide before the compiled call"
            ),
        ),
        Case(
            """
            import torch
            class M(torch.nn.Module):
                def __init__(self):
                    super().__init__()
                    self.forward = torch.compile(self.forward)
                def forward(self, x: torch.Tensor):
                    while x:
                        x = x - 1
                    return x
            """,
            line=7,
            column=15,
            message=(
                "`while` on a tensor value breaks the graph inside `M.forward`, compiled at line 5 (data-dependent "
                "control flow): use `torch.where` or `torch.cond`, or decide before the compiled call"
            ),
        ),
    )

    def on_event(self, event: RegionEvent) -> None:
        if isinstance(event, TensorBranch):
            self.hazard(event.node, f"`{event.keyword}` on a tensor value breaks the graph {self.where(event)}"
                        " (data-dependent control flow): use `torch.where` or `torch.cond`, or decide before"
                        " the compiled call")
