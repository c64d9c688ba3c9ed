"""ROC402 compiled-print-or-log: `print()` or a logging call in compiled code breaks the graph.

The rule's documentation is its class's (`rocmport rule ROC402` prints it).
"""

from __future__ import annotations

from rocmport.analysis.events import (
    LoggingCall,
    PrintCall,
    RegionEvent,
)
from rocmport.rules.base import Case

from .common import REACH, GraphBreakRule


class CompiledPrint(GraphBreakRule):
    CODE = "ROC402"
    NAME = "compiled-print-or-log"
    SUMMARY = "`print()` or a logging call in compiled code breaks the graph."
    WHAT = """
        The built-in `print` and logging calls (`logging.info(...)`, `logger.warning(...)`
        on a `logging.getLogger()` logger or a name such as `logger` / `log`) in compiled code.
        Functions that merely contain "print" in their name (device-side printf kernels) are
        not Python's `print`.
        """ + REACH
    WHY = """
        Dynamo graph-breaks on `print` and on logging calls: the compiled function is split
        in pieces that run with eager Python in between, losing most of the speed-up (and,
        with CUDA graphs, splitting the captured graphs).
        """
    EXAMPLE = """
        @torch.compile
        def step(x):
            print("step", x.shape)
            return x * 2
        """
    FIX = """
        Display-only: move the print out of the compiled function, or guard it with
        `if not torch.compiler.is_compiling():`.
        """
    VALID = (
        Case("""
            import torch
            def f(x):
                print(x)
            """),
        Case("""
            import torch
            @torch.compile
            def f(x):
                if not torch.compiler.is_compiling():
                    print(x)
                return x
            """),
        Case("""
            import torch
            import debug_print
            @torch.compile
            def f(x):
                debug_print.print_tensor(x)
            """),
        # a logger that is a no-op object unless an environment variable is set
        Case("""
            import logging
            import os

            import torch

            class _NoOpLogger:
                def debug(self, *args, **kwargs):
                    pass

            class _Quiet:
                def __getattr__(self, name):
                    return lambda *args, **kwargs: None

            logger = logging.getLogger(__name__) if os.environ.get("MY_DEBUG") else _NoOpLogger()
            trace_log = logging.getLogger("t") if os.environ.get("TRACE", "0") == "1" else _Quiet()

            @torch.compile
            def step(x):
                logger.debug("x %s", x.shape)
                trace_log.info("step")
                return x * 2
            """),
    )
    INVALID = (
        # near miss: the no-op is the arm taken only when the variable is set
        Case(
            """
            import logging
            import os

            import torch

            class _Quiet:
                def __getattr__(self, name):
                    return lambda *args, **kwargs: None

            quiet_log = _Quiet() if os.environ.get("QUIET") else logging.getLogger("q")

            @torch.compile
            def step(x):
                quiet_log.info("step")
                return x * 2
            """,
            line=14,
            column=5,
            message=(
                "logging call `quiet_log.info()` breaks the graph inside `step`, compiled at line 12: move it out of "
                "the compiled code, or guard it with `if not torch.compiler.is_compiling():`"
            ),
        ),
        Case(
            """
            import torch
            @torch.compile
            def f(x):
                print('step')
                return x
            """,
            line=4,
            column=5,
            message=(
                "`print()` breaks the graph inside `f`, compiled at line 2: move it out of the compiled code, or "
                "guard it with `if not torch.compiler.is_compiling():`"
            ),
        ),
        Case(
            """
            import torch
            import logging
            logger = logging.getLogger(__name__)
            def f(x):
                logger.info('x')
                return x
            f = torch.compile(f)
            """,
            line=5,
            column=5,
            message=(
                "logging call `logger.info()` breaks the graph inside `f`, compiled at line 7: move it out of the "
                "compiled code, or guard it with `if not torch.compiler.is_compiling():`"
            ),
        ),
    )

    def on_event(self, event: RegionEvent) -> None:
        if isinstance(event, (PrintCall, LoggingCall)):
            what = ("`print()`" if isinstance(event, PrintCall)
                    else f"logging call `{self.found.short(event.node.func)}()`")
            self.hazard(event.node, f"{what} breaks the graph {self.where(event)}: move it out of the compiled"
                        " code, or guard it with `if not torch.compiler.is_compiling():`")
