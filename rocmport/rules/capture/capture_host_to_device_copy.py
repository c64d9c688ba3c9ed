"""ROC305 capture-host-to-device-copy: A pageable host-to-device copy (or a pinned host allocation) inside a CUDA-graph capture.

The rule's documentation is its class's (`rocmport rule ROC305` prints it).
"""

from __future__ import annotations

from rocmport.analysis.events import (
    HostToDeviceCopy,
    PinMemory,
    RegionEvent,
)
from rocmport.rules.base import Case

from .common import CaptureRule


class CapturePageableCopy(CaptureRule):
    CODE = "ROC305"
    NAME = "capture-host-to-device-copy"
    SUMMARY = "A pageable host-to-device copy (or a pinned host allocation) inside a CUDA-graph capture."
    WHAT = """
        In captured code or what it calls: `torch.tensor(<python data>, device=<a GPU>)` (also
        `as_tensor`), `.cuda()` or `.to("cuda")` / `.to(device=...)` of a tensor known to be on
        the CPU (made in the same function by a torch factory without `device=`, by
        `torch.from_numpy` or `.cpu()`), and `.pin_memory()` (a cudaHostAlloc).
        """
    WHY = """
        A copy from pageable host memory is not capturable: it invalidates the capture on CUDA
        and can corrupt it silently on ROCm before 7.14. Where it does get recorded, each
        replay re-reads the host address of the capture, whose memory may have been freed
        and reused (wrong values, no error). Allocating pinned memory is not permitted while
        a stream captures.
        """
    EXAMPLE = """
        with torch.cuda.graph(g):
            scale = torch.tensor([0.5], device="cuda")
            y = x * scale
        """
    FIX = """
        Display-only: pre-allocate the device tensors (and any pinned buffers) before the
        capture, and update them in place (`copy_`) between replays.
        """
    VALID = (
        Case("""
            import torch
            def f(g, x):
                scale = torch.tensor([0.5], device='cuda')
                with torch.cuda.graph(g):
                    y = x * scale
            """),
        Case("""
            import torch
            def f(g, x):
                with torch.cuda.graph(g):
                    y = torch.zeros(3, device='cuda')
                    z = x.to('cuda')
            """),
    )
    INVALID = (
        Case(
            """
            import torch
            def f(g, x):
                with torch.cuda.graph(g):
                    s = torch.tensor([0.5], device='cuda')
            """,
            line=4,
            column=13,
            message=(
                "`torch.tensor([0.5], device='cuda')` builds a tensor from Python data on the host and copies it to "
                "the GPU (pageable) inside the capture begun at line 3; this invalidates the capture on CUDA and can "
                "corrupt it silently on ROCm: pre-allocate the device tensor before the capture and update it with "
                "`copy_` between replays"
            ),
        ),
        Case(
            """
            import torch
            def f(g, i):
                with torch.cuda.graph(g):
                    t = torch.tensor(i)
                    u = t.to(device='cuda', non_blocking=True)
            """,
            line=5,
            column=13,
            message=(
                "`t.to(device='cuda', non_blocking=True)` copies a CPU tensor to the GPU (a pageable host-to-device "
                "copy) inside the capture begun at line 3; this invalidates the capture on CUDA and can corrupt it "
                "silently on ROCm: pre-allocate the device tensor before the capture; a replay re-reads host memory "
                "that may be gone"
            ),
        ),
        Case(
            """
            import torch
            def f(g, x):
                with torch.cuda.graph(g):
                    x.pin_memory()
            """,
            line=4,
            column=9,
            message=(
                "`.pin_memory()` allocates pinned host memory (cudaHostAlloc) inside the capture begun at line 3, "
                "which is not permitted during capture: allocate pinned buffers before the capture"
            ),
        ),
    )

    def on_event(self, event: RegionEvent) -> None:
        where = self.where(event)
        if isinstance(event, HostToDeviceCopy):
            if event.from_python_data:
                what = "builds a tensor from Python data on the host and copies it to the GPU (pageable)"
                remedy = "pre-allocate the device tensor before the capture and update it with `copy_` between replays"
            else:
                what = "copies a CPU tensor to the GPU (a pageable host-to-device copy)"
                remedy = ("pre-allocate the device tensor before the capture; a replay re-reads host memory"
                          " that may be gone")
            self.hazard(event.node, f"`{self.found.short(event.node)}` {what} {where}; this invalidates the capture"
                        f" on CUDA and can corrupt it silently on ROCm: {remedy}")
        elif isinstance(event, PinMemory):
            self.hazard(event.node, f"`.pin_memory()` allocates pinned host memory (cudaHostAlloc) {where},"
                        " which is not permitted during capture: allocate pinned buffers before the capture")
