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

from .common import PRE, REACH, GraphBreakRule


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
        Case(PRE + "def f(x):\n    print(x)\n"),
        Case(PRE + "@torch.compile\ndef f(x):\n    if not torch.compiler.is_compiling():\n        print(x)\n"
             "    return x\n"),
        Case(PRE + "import debug_print\n@torch.compile\ndef f(x):\n    debug_print.print_tensor(x)\n"),
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
        Case("""
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
            """, line=14),
        Case(PRE + "@torch.compile\ndef f(x):\n    print('step')\n    return x\n"),
        Case(PRE + "import logging\nlogger = logging.getLogger(__name__)\n"
             "def f(x):\n    logger.info('x')\n    return x\nf = torch.compile(f)\n"),
    )

    def on_event(self, event: RegionEvent) -> None:
        if isinstance(event, (PrintCall, LoggingCall)):
            what = ("`print()`" if isinstance(event, PrintCall)
                    else f"logging call `{self.found.short(event.node.func)}()`")
            self.hazard(event.node, f"{what} breaks the graph {self.where(event)}: move it out of the compiled"
                        " code, or guard it with `if not torch.compiler.is_compiling():`")
