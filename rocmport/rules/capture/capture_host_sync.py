"""ROC301 capture-host-sync: A host synchronization inside a CUDA-graph capture (directly or through the calls it makes).

The rule's documentation is its class's (`rocmport rule ROC301` prints it).
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from rocmport.analysis.events import (
    CopyToHost,
    DeviceSynchronize,
    PrintCall,
    RegionEvent,
    ScalarRead,
    StreamSynchronize,
    TensorBranch,
    TensorFormatted,
    TensorToPython,
)
from rocmport.findings import Applicability, Fix
from rocmport.rules.base import Case

from .common import CaptureRule


class CaptureHostSync(CaptureRule):
    CODE = "ROC301"
    NAME = "capture-host-sync"
    SUMMARY = "A host synchronization inside a CUDA-graph capture (directly or through the calls it makes)."
    WHAT = """
        Inside a CUDA-graph capture, or in a function or method of the same file that the
        captured code calls (directly, through `self.method()`, or through an instance of a
        class defined in the file, via its `__call__` / `forward`, transitively): `.item()`,
        `.tolist()`, `.numpy()`, `.cpu()`, `.to("cpu")`, `torch.cuda.synchronize()`, stream
        or event `.synchronize()`, `print` of a tensor, an f-string that formats a tensor,
        `float()` / `int()` / `bool()` of a tensor, and `if` / `while` on a tensor value.

        Captures are `with torch.cuda.graph(g, ...)` in every spelling (aliases,
        `torch.cuda.graphs.graph`, several context managers in one `with`, nested blocks), the
        straight-line code between `g.capture_begin()` and `g.capture_end()` in one block, and
        the callables handed to `torch.cuda.make_graphed_callables`. The message names the
        capture's line and the call chain, e.g. "inside the capture begun at line 40, via
        step() → norm()". Code guarded by `torch.cuda.is_current_stream_capturing()` is
        followed only on the side that runs during capture; `with torch.cuda.stream(s):`
        blocks are not captures.
        """
    WHY = """
        A capture records GPU work; it cannot wait for the GPU or copy results to the host.
        On CUDA such a call fails with cudaErrorStreamCaptureInvalidated (or Unsupported). On
        ROCm before 7.14 the error can be swallowed silently and the graph that results is
        corrupt: replays compute wrong values without any error (pytorch#155684).
        """
    EXAMPLE = """
        with torch.cuda.graph(g):
            out = model(static_x)
            torch.cuda.synchronize()
        """
    FIXED_EXAMPLE = """
        with torch.cuda.graph(g):
            out = model(static_x)
        torch.cuda.synchronize()
        """
    FIX = """
        Safe for one case: a `torch.cuda.synchronize()` that is the last statement of a
        capture `with` block moves to just after the block (the statement is dedented to the
        `with`'s indentation, comments and line endings kept). Synchronizing after the
        capture is what the code can have meant; nothing captured depends on it.

        Everything else is display-only, with the remedy in the message: keep values on the
        device (`.item()` and friends), read results after the replay, print outside the
        captured code, use `torch.where` instead of a Python branch on a tensor.
        """
    FIX_APPLICABILITY = Applicability.SAFE
    VALID = (
        Case("""
            import torch
            def f(g, x):
                with torch.cuda.graph(g):
                    y = x * 2
                torch.cuda.synchronize()
                return y.item()
            """),
        Case("""
            import torch
            import networkx as nx
            graph = nx.Graph()
            for k, v in d.items():
                print(k, v)
            """),
        Case("""
            import torch
            def f(x):
                return x.sum().item()
            """),
        Case("""
            import torch
            def f(s, x):
                with torch.cuda.stream(s):
                    y = x * 2
                    s.synchronize()
            """),
        Case("""
            import torch
            def f(g, x):
                for _ in range(3):
                    y = x * 2
                    print(y.item())
                with torch.cuda.graph(g):
                    y = x * 2
            """),
        Case("""
            import torch
            import debug_print
            def f(g, x):
                with torch.cuda.graph(g):
                    debug_print.print_tensor(x)
            """),
        Case("""
            import torch
            def h(x):
                if torch.cuda.is_current_stream_capturing():
                    return x * 2
                return x.item()
            def f(g, x):
                with torch.cuda.graph(g):
                    y = h(x)
            """),
        Case("""
            import torch
            import tensorflow as tf
            def f(x):
                with tf.Graph().as_default() as graph:
                    y = x.numpy()
            """),
        Case("""
            import torch
            def f(g, d):
                with torch.cuda.graph(g):
                    for k, v in d.items():
                        print(k)
            """),
    )
    INVALID = (
        Case(
            """
            import torch
            def f(g, x):
                with torch.cuda.graph(g):
                    y = x * 2
                    torch.cuda.synchronize()
            """,
            expected="""
            import torch
            def f(g, x):
                with torch.cuda.graph(g):
                    y = x * 2
                torch.cuda.synchronize()
            """,
            line=5,
            column=9,
            message=(
                "`torch.cuda.synchronize()` inside the capture begun at line 3; a host synchronization invalidates "
                "the capture on CUDA and can be swallowed silently on ROCm before 7.14, leaving a corrupt graph: "
                "move it to just after the `with` block"
            ),
        ),
        Case(
            """
            import torch
            def f(g, x):
                with torch.cuda.graph(g, capture_error_mode='global'):
                    x.item()
            """,
            line=4,
            column=9,
            message=(
                "`.item()` copies a tensor to the host inside the capture begun at line 3; a host synchronization "
                "invalidates the capture on CUDA and can be swallowed silently on ROCm before 7.14, leaving a "
                "corrupt graph: keep the value on the device, or read it after the capture"
            ),
        ),
        Case(
            """
            import torch
            def norm(x):
                return x / x.sum().item()
            def step(x):
                return norm(x)
            def f(g, x):
                with torch.cuda.graph(g):
                    y = step(x)
            """,
            line=3,
            column=16,
            message=(
                "`.item()` copies a tensor to the host inside the capture begun at line 7, via step() → norm(); a "
                "host synchronization invalidates the capture on CUDA and can be swallowed silently on ROCm before "
                "7.14, leaving a corrupt graph: keep the value on the device, or read it after the capture"
            ),
        ),
        Case(
            """
            import torch
            class M(torch.nn.Module):
                def forward(self, x):
                    print(x.sum())
                    return x
            m = M()
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                y = m(x)
            """,
            line=4,
            column=9,
            message=(
                "printing a tensor copies it to the host inside the capture begun at line 8, via M.forward(); a host "
                "synchronization invalidates the capture on CUDA and can be swallowed silently on ROCm before 7.14, "
                "leaving a corrupt graph: print outside the captured code"
            ),
        ),
        Case(
            """
            import torch
            def f(g, x: torch.Tensor):
                g.capture_begin()
                if x:
                    y = x + 1
                g.capture_end()
            """,
            line=4,
            column=8,
            message=(
                "`if` on a tensor value reads it on the host inside the capture begun at line 3; a host "
                "synchronization invalidates the capture on CUDA and can be swallowed silently on ROCm before 7.14, "
                "leaving a corrupt graph: use `torch.where`, or decide before the capture"
            ),
        ),
    )
    INVALIDATES = ("a host synchronization invalidates the capture on CUDA and can be swallowed"
                   " silently on ROCm before 7.14, leaving a corrupt graph")

    def on_event(self, event: RegionEvent) -> None:
        node, where, invalid = event.node, self.where(event), self.INVALIDATES
        if isinstance(event, ScalarRead):
            self.hazard(node, f"`.{event.method}()` copies a tensor to the host {where}; {invalid}:"
                        " keep the value on the device, or read it after the capture")
        elif isinstance(event, CopyToHost):
            what = ".cpu()" if event.device is None else f".to({self.found.short(event.device, 20)})"
            self.hazard(node, f"`{what}` copies a tensor to the host {where}; {invalid}:"
                        " move the copy out of the captured code")
        elif isinstance(event, DeviceSynchronize):
            stmt = None if event.via else event.region.trailing_syncs.get(id(node))
            fix = self._sync_fix(event.region.with_node, stmt) if stmt is not None else None
            remedy = ("move it to just after the `with` block" if fix is not None
                      else "synchronize before or after the capture instead")
            self.hazard(node, f"`torch.cuda.synchronize()` {where}; {invalid}: {remedy}",
                        fix or Fix(Applicability.DISPLAY_ONLY, "Synchronize before or after the capture"))
        elif isinstance(event, StreamSynchronize):
            self.hazard(node, f"`{self.found.short(node.func)}()` waits on the host {where}; {invalid}:"
                        " synchronize before or after the capture instead")
        elif isinstance(event, PrintCall) and event.of_tensor:
            self.hazard(node, f"printing a tensor copies it to the host {where}; {invalid}:"
                        " print outside the captured code")
        elif isinstance(event, TensorFormatted):
            self.hazard(node, f"formatting a tensor in an f-string copies it to the host {where};"
                        f" {invalid}: format it outside the captured code")
        elif isinstance(event, TensorToPython):
            self.hazard(node, f"`{event.builtin}()` of a tensor copies it to the host {where}; {invalid}:"
                        " keep the value on the device")
        elif isinstance(event, TensorBranch):
            self.hazard(node, f"`{event.keyword}` on a tensor value reads it on the host {where};"
                        f" {invalid}: use `torch.where`, or decide before the capture")

    def _sync_fix(self, with_node: cst.With, stmt: cst.CSTNode) -> Optional[Fix]:
        """Dedent the block's last statement, ``torch.cuda.synchronize()``, to the ``with``'s
        own indentation: it then runs just after the block. One edit, on one line."""
        ctx, found = self.context, self.found
        stmt_start, with_start = found.offset(stmt), found.offset(with_node)
        line_start = ctx.text.rfind("\n", 0, stmt_start) + 1
        line_start = max(line_start, ctx.text.rfind("\r", 0, stmt_start) + 1)
        with_line = max(ctx.text.rfind("\n", 0, with_start), ctx.text.rfind("\r", 0, with_start)) + 1
        indent = ctx.text[with_line:with_start]
        if indent.strip(" \t") or ctx.text[line_start:stmt_start].strip(" \t"):
            return None
        return Fix(Applicability.SAFE, "Move `torch.cuda.synchronize()` to just after the capture block",
                   (ctx.edit(line_start, stmt_start, indent),))
