"""Shared by the rules of the graph_breaks family."""

from __future__ import annotations

import libcst as cst
from libcst.metadata import ParentNodeProvider, PositionProvider, QualifiedNameProvider

from rocmport.analysis import regions as _regions
from rocmport.analysis.events import (
    RegionEvent,
)
from rocmport.analysis.names import COMPILE_NAMES
from rocmport.analysis.needs import Call, Decorator
from rocmport.findings import Applicability, Fix
from rocmport.rules.base import Rule


class GraphBreakRule(_regions.RegionRule, Rule):
    METADATA_DEPENDENCIES = (PositionProvider, ParentNodeProvider, QualifiedNameProvider)
    # Compiled code is a function decorated with torch.compile, or the first positional
    # argument of a torch.compile call (``_regions.Analysis._mark_compiled``).
    NEEDS = Decorator(*COMPILE_NAMES) | Call(*COMPILE_NAMES, positional=True)
    FIX_APPLICABILITY = Applicability.DISPLAY_ONLY
    REGION = "in_compiled"

    def hazard(self, node: cst.CSTNode, message: str) -> None:
        """Report ``node`` once: the first event of a node names the shortest chain."""
        if id(node) not in self._reported:
            self._reported.add(id(node))
            self.report(node, message, fix=Fix(Applicability.DISPLAY_ONLY, self.SUMMARY))

    @staticmethod
    def where(event: RegionEvent) -> str:
        """``inside `Model.forward`, compiled at line 40, via step() → norm()``."""
        text = f"inside `{event.region.compiled_label}`, compiled at line {event.region.line}"
        return text + (", via " + " → ".join(f"{s.label}()" for s in event.via) if event.via else "")


PRE = "import torch\n"
REACH = """
        Compiled code is a function decorated with `@torch.compile` (or `@torch.compile(...)`),
        a function compiled by assignment (`f = torch.compile(f)`), a method compiled in place
        (`self.forward = torch.compile(self.forward)`: that class's method only), and the
        `forward` (or `__call__`) of a class of the file whose instance is compiled
        (`model = torch.compile(Model())`, `self.net = torch.compile(self.net)`). The analysis
        follows calls to functions and methods of the same file, through `self.method()` and
        instances of classes defined in the file, transitively; it does not enter code under
        `@torch.compiler.disable` / `torch._dynamo.disable` (an eager island), and follows only
        the compiled side of an `if torch.compiler.is_compiling():` guard. The message names
        the compiled function, the line where it is compiled and the call chain.
        """
