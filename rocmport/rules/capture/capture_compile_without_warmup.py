"""ROC304 capture-compile-without-warmup: A torch.compile'd callable called inside a capture without being called before it.

The rule's documentation is its class's (`rocmport rule ROC304` prints it).
"""

from __future__ import annotations

from rocmport.analysis.events import (
    CompiledCall,
    RegionEvent,
)
from rocmport.rules.base import Case

from .common import CaptureRule


class CaptureCompileWithoutWarmup(CaptureRule):
    CODE = "ROC304"
    NAME = "capture-compile-without-warmup"
    SUMMARY = "A torch.compile'd callable called inside a capture without being called before it."
    WHAT = """
        A callable compiled with `torch.compile` (a name or `self.` attribute bound to
        `torch.compile(...)`, a function decorated with `@torch.compile`, an inline
        `torch.compile(f)(x)`) called in captured code, or in what the captured code calls,
        when the function that holds the capture does not call it (or the first function
        of the chain) before the capture begins.
        """
    WHY = """
        The first call of a compiled callable compiles it. Compiling an inductor graph during
        capture fails on CUDA (pytorch#185074), and before ROCm 7.14 errors during capture can
        be swallowed silently, giving a corrupt graph (pytorch#155684).
        """
    EXAMPLE = """
        step = torch.compile(step)
        with torch.cuda.graph(g):
            out = step(static_x)
        """
    FIX = """
        Display-only: call the compiled callable a few times before the capture (a warm-up
        loop, ideally on a side stream as the CUDA-graph docs show); then capture.
        """
    VALID = (
        Case("""
            import torch
            def run(f, g, x):
                cf = torch.compile(f)
                for _ in range(3):
                    cf(x)
                with torch.cuda.graph(g):
                    y = cf(x)
            """),
        Case("""
            import torch
            def run(f, g, x):
                cf = torch.compiler.disable(f)
                with torch.cuda.graph(g):
                    y = cf(x)
            """),
    )
    INVALID = (
        Case(
            """
            import torch
            def run(f, g, x):
                cf = torch.compile(f)
                with torch.cuda.graph(g):
                    y = cf(x)
            """,
            line=5,
            column=13,
            message=(
                "`cf` is compiled (torch.compile at line 3) and first called inside the capture begun at line 4: "
                "compiling during capture fails on CUDA and can corrupt the graph silently on ROCm; call it once "
                "before the capture (warm-up, e.g. on a side stream)"
            ),
        ),
        Case(
            """
            import torch
            @torch.compile
            def step(x):
                return x * 2
            def run(g, x):
                with torch.cuda.graph(g):
                    y = step(x)
            """,
            line=7,
            column=13,
            message=(
                "`step` is compiled (torch.compile at line 2) and first called inside the capture begun at line 6: "
                "compiling during capture fails on CUDA and can corrupt the graph silently on ROCm; call it once "
                "before the capture (warm-up, e.g. on a side stream)"
            ),
        ),
    )

    def on_event(self, event: RegionEvent) -> None:
        if isinstance(event, CompiledCall) and not event.warmed_up:
            self.hazard(event.node, f"`{self.found.short(event.node.func)}` is compiled (torch.compile at line"
                        f" {event.compiled_line}) and first called {self.where(event)}: compiling during capture"
                        " fails on CUDA and can corrupt the graph silently on ROCm; call it once before the"
                        " capture (warm-up, e.g. on a side stream)")
