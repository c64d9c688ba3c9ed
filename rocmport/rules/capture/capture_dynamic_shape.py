"""ROC302 capture-dynamic-shape: An operation with a data-dependent output shape inside a CUDA-graph capture.

The rule's documentation is its class's (`rocmport rule ROC302` prints it).
"""

from __future__ import annotations

from rocmport.analysis.events import (
    BooleanMaskIndex,
    DataDependentShape,
    RegionEvent,
)
from rocmport.rules.base import Case

from .common import CaptureRule


class CaptureDynamicShape(CaptureRule):
    CODE = "ROC302"
    NAME = "capture-dynamic-shape"
    SUMMARY = "An operation with a data-dependent output shape inside a CUDA-graph capture."
    WHAT = """
        In captured code (and what it calls, as for ROC301): `torch.nonzero` / `.nonzero()`,
        `torch.argwhere`, one-argument `torch.where`, `masked_select`, boolean-mask indexing
        (`x[x > 0]`, `x[mask]` with a mask built from a comparison), `torch.unique` /
        `unique_consecutive`, and `repeat_interleave` with tensor repeats and no
        `output_size=`. Slicing and integer indexing are not flagged, nor stores through a
        mask (`x[mask] = 0`).
        """
    WHY = """
        The output size depends on the data, so torch reads it on the host: a synchronization
        that invalidates the capture (silently corrupting it on ROCm before 7.14). Even where
        capture succeeds, a replay reuses the shapes of the capture.
        """
    EXAMPLE = """
        with torch.cuda.graph(g):
            idx = torch.nonzero(mask)
        """
    FIX = """
        Display-only: pad to a fixed shape (`torch.where(mask, x, 0)`, `masked_fill`, a fixed
        `size=`), pass `output_size=` to `repeat_interleave`, or compute the dynamic part
        outside the capture.
        """
    VALID = (
        Case("""
            import torch
            def f(g, x):
                with torch.cuda.graph(g):
                    y = x[1:3]
                    z = x[:, 0]
            """),
        Case("""
            import torch
            def f(g, x, mask):
                with torch.cuda.graph(g):
                    y = torch.where(mask, x, 0)
            """),
        Case("""
            import torch
            def f(g, x):
                with torch.cuda.graph(g):
                    y = x.repeat_interleave(2)
            """),
        Case("""
            import torch
            def f(x):
                return torch.nonzero(x)
            """),
        Case("""
            import torch
            def f(g, x):
                with torch.cuda.graph(g):
                    x[x > 0] = 0
            """),
    )
    INVALID = (
        Case(
            """
            import torch
            def f(g, x):
                with torch.cuda.graph(g):
                    idx = torch.nonzero(x)
            """,
            line=4,
            column=15,
            message=(
                "`torch.nonzero()` has a data-dependent output shape inside the capture begun at line 3; its size is "
                "read on the host, and a replay reuses the shape of the capture: pad to a fixed shape "
                "(`torch.where(mask, x, 0)`, or a fixed `size=`), or move it out of the capture"
            ),
        ),
        Case(
            """
            import torch
            def f(g, x):
                with torch.cuda.graph(g):
                    y = x[x > 0]
            """,
            line=4,
            column=13,
            message=(
                "boolean-mask indexing `x[x > 0]` has a data-dependent output shape inside the capture begun at line "
                "3; its size is read on the host, and a replay reuses the shape of the capture: pad to a fixed shape "
                "with `torch.where(mask, x, 0)` or `masked_fill`"
            ),
        ),
        Case(
            """
            import torch
            def f(g, x, r):
                with torch.cuda.graph(g):
                    y = torch.repeat_interleave(x, r)
            """,
            line=4,
            column=13,
            message=(
                "`torch.repeat_interleave()` has a data-dependent output shape inside the capture begun at line 3; "
                "its size is read on the host, and a replay reuses the shape of the capture: pass `output_size=` so "
                "the shape is known without reading the data"
            ),
        ),
        Case(
            """
            import torch
            def f(g, x):
                with torch.cuda.graph(g):
                    y = x.unique()
            """,
            line=4,
            column=13,
            message=(
                "`.unique()` has a data-dependent output shape inside the capture begun at line 3; its size is read "
                "on the host, and a replay reuses the shape of the capture: compute it before the capture, or keep a "
                "fixed-size result"
            ),
        ),
    )

    def on_event(self, event: RegionEvent) -> None:
        where = self.where(event)
        if isinstance(event, DataDependentShape):
            label = f".{event.op}()" if event.method else f"{event.op}()"
            if "repeat_interleave" in label:
                remedy = "pass `output_size=` so the shape is known without reading the data"
            elif "unique" in label:
                remedy = "compute it before the capture, or keep a fixed-size result"
            else:
                remedy = ("pad to a fixed shape (`torch.where(mask, x, 0)`, or a fixed `size=`),"
                          " or move it out of the capture")
            self.hazard(event.node, f"`{label}` has a data-dependent output shape {where}; its size is read on"
                        f" the host, and a replay reuses the shape of the capture: {remedy}")
        elif isinstance(event, BooleanMaskIndex):
            self.hazard(event.node, f"boolean-mask indexing `{self.found.short(event.node)}` has a data-dependent"
                        f" output shape {where}; its size is read on the host, and a replay reuses the shape of"
                        " the capture: pad to a fixed shape with `torch.where(mask, x, 0)` or `masked_fill`")
