"""ROC404 compiled-dynamic-shape: An operation whose output shape depends on the data (`nonzero`, `unique`, ...) in compiled code.

The rule's documentation is its class's (`rocmport rule ROC404` prints it).
"""

from __future__ import annotations

from rocmport.analysis.events import (
    BooleanMaskIndex,
    DataDependentShape,
    RegionEvent,
)
from rocmport.rules.base import Case

from .common import REACH, GraphBreakRule


class CompiledDynamicShape(GraphBreakRule):
    CODE = "ROC404"
    NAME = "compiled-dynamic-shape"
    SUMMARY = "An operation whose output shape depends on the data (`nonzero`, `unique`, ...) in compiled code."
    WHAT = """
        `torch.nonzero` / `.nonzero()`, `argwhere`, `masked_select`, `unique`,
        `unique_consecutive`, one-argument `torch.where`, `repeat_interleave` without
        `output_size=` whose repeat count may be a tensor (not an integer, nor a name spelled
        like a count such as `n_rep` or `self.num_heads // 2`), and boolean-mask indexing (`x[mask]`) whose size is then read
        (`.numel()`, `.size()`, `.shape`, `len()`), in compiled code.
        """ + REACH
    WHY = """
        The output's shape depends on the tensor's values. Unless
        `torch._dynamo.config.capture_dynamic_output_shape_ops` is on, dynamo breaks the graph
        there; otherwise the shape is a fresh symbol and reading it recompiles or breaks.
        Each break splits the compiled function (and, with a CUDA-graph mode, the captured
        graphs, where ROCm's HIP graphs are slowest and least tested).
        """
    EXAMPLE = """
        @torch.compile
        def route(x, scores):
            idx = scores.argmax(-1).nonzero()
            return x[idx]
        """
    FIX = """
        Display-only: keep a fixed shape (`torch.where(mask, x, 0)`, a fixed `size=` for
        `nonzero_static`/`unique`, `output_size=` for `repeat_interleave`), or move the
        operation out of the compiled code.
        """
    VALID = (
        Case("""
            import torch
            def f(x):
                return x.nonzero()
            """),
        Case("""
            import torch
            @torch.compile
            def f(x, mask):
                y = x[mask]
                return y * 2
            """),
        Case("""
            import torch
            @torch.compile
            def f(x):
                return x.repeat_interleave(2)
            """),
        Case("""
            import torch
            @torch.compile
            def f(x, mask):
                return torch.where(mask, x, 0)
            """),
    )
    INVALID = (
        Case(
            """
            import torch
            @torch.compile
            def f(x):
                return torch.nonzero(x)
            """,
            line=4,
            column=12,
            message=(
                "`torch.nonzero()` has a data-dependent shape inside `f`, compiled at line 2: dynamo breaks the "
                "graph there (or recompiles per shape); keep a fixed shape (`torch.where(mask, x, 0)`, a fixed "
                "`size=`) or move it out of the compiled code"
            ),
        ),
        Case(
            """
            import torch
            @torch.compile
            def f(x, mask: torch.Tensor):
                y = x[mask > 0]
                n = y.numel()
                return y, n
            """,
            line=4,
            column=9,
            message=(
                "`boolean-mask indexing whose size is then read` has a data-dependent shape inside `f`, compiled at "
                "line 2: dynamo breaks the graph there (or recompiles per shape); keep a fixed shape "
                "(`torch.where(mask, x, 0)`, a fixed `size=`) or move it out of the compiled code"
            ),
        ),
        Case(
            """
            import torch
            class M(torch.nn.Module):
                def forward(self, x):
                    return x.unique()
            model = torch.compile(M().cuda().eval())
            """,
            line=4,
            column=16,
            message=(
                "`.unique()` has a data-dependent shape inside `M.forward`, compiled at line 5: dynamo breaks the "
                "graph there (or recompiles per shape); keep a fixed shape (`torch.where(mask, x, 0)`, a fixed "
                "`size=`) or move it out of the compiled code"
            ),
        ),
    )

    def on_event(self, event: RegionEvent) -> None:
        if isinstance(event, DataDependentShape):
            label = f".{event.op}()" if event.method else f"{event.op}()"
        elif isinstance(event, BooleanMaskIndex) and event.size_read:
            label = "boolean-mask indexing whose size is then read"
        else:
            return
        self.hazard(event.node, f"`{label}` has a data-dependent shape {self.where(event)}: dynamo breaks the"
                    " graph there (or recompiles per shape); keep a fixed shape (`torch.where(mask, x, 0)`, a"
                    " fixed `size=`) or move it out of the compiled code")
