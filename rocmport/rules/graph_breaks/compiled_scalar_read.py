"""ROC401 compiled-scalar-read: `.item()`, `.tolist()` or `.numpy()` in compiled code breaks the graph.

The rule's documentation is its class's (`rocmport rule ROC401` prints it).
"""

from __future__ import annotations

from rocmport.analysis.events import (
    RegionEvent,
    ScalarRead,
)
from rocmport.rules.base import Case

from .common import REACH, GraphBreakRule


class CompiledScalarRead(GraphBreakRule):
    CODE = "ROC401"
    NAME = "compiled-scalar-read"
    SUMMARY = "`.item()`, `.tolist()` or `.numpy()` in compiled code breaks the graph."
    WHAT = """
        `.item()`, `.tolist()` and `.numpy()` in compiled code. `.item()` and `.tolist()` are
        not reported when the file turns `capture_scalar_outputs` on.
        """ + REACH
    WHY = """
        Dynamo cannot trace a tensor's value into Python: it breaks the graph, runs the rest
        eagerly and synchronizes with the device. With a CUDA-graph mode a break also splits
        the captured graphs, which is where ROCm's HIP graphs are slowest and least tested.
        """
    EXAMPLE = """
        @torch.compile
        def step(x):
            scale = x.abs().max().item()
            return x / scale
        """
    FIX = """
        Display-only: keep the value a tensor (`x / x.abs().max()`), move the read out of the
        compiled function, or set `torch._dynamo.config.capture_scalar_outputs = True` for
        `.item()`.
        """
    VALID = (
        Case("""
            import torch
            def f(x):
                return x.item()
            """),
        Case("""
            import torch
            import torch._dynamo
            torch._dynamo.config.capture_scalar_outputs = True
            @torch.compile
            def f(x):
                return x.sum().item()
            """),
        Case("""
            import torch
            @torch.compile
            def f(d):
                return [k for k, v in d.items()]
            """),
        Case("""
            import torch
            @torch.compiler.disable
            def f(x):
                return x.item()
            """),
        Case("""
            import torch
            @torch.compiler.disable
            def h(x):
                return x.item()
            @torch.compile
            def f(x):
                return h(x)
            """),
        # a branch decided before the compiled call: taken only where the function is not compiled
        Case("""
            import torch

            def decode(model, x, model_type):
                if model_type == "mamba":
                    steps = x.sum().item()
                return model(x)

            def generate(model, x, model_type):
                step = decode
                if model_type != "mamba":
                    step = torch.compile(decode)
                return step(model, x, model_type)
            """),
        Case("""
            import torch

            class Runner:
                def __init__(self, model):
                    if not isinstance(model, MambaModel):
                        self.fn = torch.compile(self.step)

                def step(self, model, x):
                    if isinstance(model, MambaModel):
                        return x.sum().item()
                    return model(x)
            """),
    )
    INVALID = (
        # near miss: the branch is another decision than the one the compile call makes
        Case(
            """
            import torch

            def decode(model, x, model_type):
                if isinstance(model, MambaModel):
                    steps = x.sum().item()
                return model(x)

            def generate(model, x, model_type):
                step = decode
                if model_type != "mamba":
                    step = torch.compile(decode)
                return step(model, x, model_type)
            """,
            line=5,
            column=17,
            message=(
                "`.item()` breaks the graph inside `decode`, compiled at line 11: keep it a tensor, or set "
                "`torch._dynamo.config.capture_scalar_outputs = True`"
            ),
        ),
        Case(
            """
            import torch
            @torch.compile
            def f(x):
                return x.sum().item()
            """,
            line=4,
            column=12,
            message=(
                "`.item()` breaks the graph inside `f`, compiled at line 2: keep it a tensor, or set "
                "`torch._dynamo.config.capture_scalar_outputs = True`"
            ),
        ),
        Case(
            """
            import torch
            def h(x):
                return x.tolist()
            @torch.compile(fullgraph=True)
            def f(x):
                return h(x)
            """,
            line=3,
            column=12,
            message=(
                "`.tolist()` breaks the graph inside `f`, compiled at line 4, via h(): keep it a tensor, or set "
                "`torch._dynamo.config.capture_scalar_outputs = True`"
            ),
        ),
        Case(
            """
            import torch
            class M(torch.nn.Module):
                def forward(self, x):
                    return x.numpy()
            model = torch.compile(M())
            """,
            line=4,
            column=16,
            message=(
                "`.numpy()` breaks the graph inside `M.forward`, compiled at line 5: keep it a tensor, or move it "
                "out of the compiled code"
            ),
        ),
    )

    def on_event(self, event: RegionEvent) -> None:
        if isinstance(event, ScalarRead):
            if event.method in ("item", "tolist") and self.found.capture_scalars:
                return
            remedy = ("keep it a tensor, or set `torch._dynamo.config.capture_scalar_outputs = True`"
                      if event.method in ("item", "tolist") else "keep it a tensor, or move it out of the compiled code")
            self.hazard(event.node, f"`.{event.method}()` breaks the graph {self.where(event)}: {remedy}")
