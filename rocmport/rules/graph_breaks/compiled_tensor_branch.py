"""ROC403 compiled-tensor-branch: Python `if` / `while` on a tensor value in compiled code breaks the graph.

The rule's documentation is its class's (`rocmport rule ROC403` prints it).
"""

from __future__ import annotations

from rocmport.analysis.events import (
    RegionEvent,
    TensorBranch,
)
from rocmport.rules.base import Case

from .common import PRE, REACH, GraphBreakRule


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
        Case(PRE + "@torch.compile\ndef f(x, k=None):\n    if k is not None and x.shape[0] > 1:\n"
             "        return x\n    return -x\n"),
        Case(PRE + "def f(x):\n    if x.sum() > 0:\n        return x\n    return -x\n"),
    )
    INVALID = (
        Case(PRE + "@torch.compile\ndef f(x):\n    if x.sum() > 0:\n        return x\n    return -x\n"),
        Case(PRE + "class M(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
             "        self.forward = torch.compile(self.forward)\n"
             "    def forward(self, x: torch.Tensor):\n        while x:\n            x = x - 1\n        return x\n"),
    )

    def on_event(self, event: RegionEvent) -> None:
        if isinstance(event, TensorBranch):
            self.hazard(event.node, f"`{event.keyword}` on a tensor value breaks the graph {self.where(event)}"
                        " (data-dependent control flow): use `torch.where` or `torch.cond`, or decide before"
                        " the compiled call")
