"""ROC303 capture-rng-state: An RNG state call (get/set_rng_state, manual_seed, seed) inside a CUDA-graph capture.

The rule's documentation is its class's (`rocmport rule ROC303` prints it).
"""

from __future__ import annotations

from rocmport.analysis.events import (
    RegionEvent,
    RngStateCall,
)
from rocmport.rules.base import Case

from .common import CaptureRule


class CaptureRngState(CaptureRule):
    CODE = "ROC303"
    NAME = "capture-rng-state"
    SUMMARY = "An RNG state call (get/set_rng_state, manual_seed, seed) inside a CUDA-graph capture."
    WHAT = """
        `torch.cuda.get_rng_state`, `set_rng_state`, `manual_seed`, `manual_seed_all`, `seed`
        (and the `torch.` / `torch.random.` forms) in captured code or what it calls.
        """
    WHY = """
        Reading the CUDA generator's state during capture raises "Cannot call
        CUDAGeneratorImpl::current_seed during CUDA graph capture" before torch 2.10. Setting
        it happens once, on the host, when the graph is captured: replays do not re-seed. On
        ROCm before 7.14 the failure can be silent.
        """
    EXAMPLE = """
        with torch.cuda.graph(g):
            torch.cuda.manual_seed(0)
            y = torch.nn.functional.dropout(x, 0.1)
        """
    FIX = """
        Display-only: seed, save and restore RNG state before the capture. A graph records
        the default generator's offsets itself; register other generators with
        `graph.register_generator_state(gen)`.
        """
    VALID = (
        Case("""
            import torch
            def f(g, x):
                torch.cuda.manual_seed(0)
                with torch.cuda.graph(g):
                    y = x * 2
            """),
    )
    INVALID = (
        Case(
            """
            import torch
            def f(g, x):
                with torch.cuda.graph(g):
                    s = torch.cuda.get_rng_state()
            """,
            line=4,
            column=13,
            message=(
                "`torch.cuda.get_rng_state()` reads the generator state, which fails during capture before torch "
                "2.10 (inside the capture begun at line 3): seed and save or restore RNG state before the capture "
                "(extra generators: `graph.register_generator_state`)"
            ),
        ),
        Case(
            """
            import torch
            def f(g, x):
                with torch.cuda.graph(g):
                    torch.manual_seed(0)
            """,
            line=4,
            column=9,
            message=(
                "`torch.manual_seed()` changes the generator state once, when the graph is captured, not at each "
                "replay (inside the capture begun at line 3): seed and save or restore RNG state before the capture "
                "(extra generators: `graph.register_generator_state`)"
            ),
        ),
    )

    def on_event(self, event: RegionEvent) -> None:
        if isinstance(event, RngStateCall):
            short = event.name.replace("torch.cuda.random.", "torch.cuda.").replace("torch.random.", "torch.")
            what = ("reads the generator state, which fails during capture before torch 2.10" if event.op == "get"
                    else "changes the generator state once, when the graph is captured, not at each replay")
            self.hazard(event.node, f"`{short}()` {what} ({self.where(event)}): seed and save or restore RNG"
                        " state before the capture (extra generators: `graph.register_generator_state`)")
