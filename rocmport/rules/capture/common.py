"""Shared by the rules of the capture family."""

from __future__ import annotations

from typing import Optional

import libcst as cst
from libcst.metadata import ParentNodeProvider, PositionProvider, QualifiedNameProvider

from rocmport.analysis import regions as _regions
from rocmport.analysis.events import (
    RegionEvent,
)
from rocmport.analysis.needs import Attribute, Call
from rocmport.findings import Applicability, Fix
from rocmport.rules.base import Rule


class CaptureRule(_regions.RegionRule, Rule):
    """Turns the events that the shared region analysis met in captures into findings: each
    rule's ``on_event`` reports the events it cares about through ``hazard``."""

    METADATA_DEPENDENCIES = (PositionProvider, ParentNodeProvider, QualifiedNameProvider)
    # A capture region needs a call of torch.cuda.graph (in a `with`), of
    # make_graphed_callables, or of `.capture_begin()` (``_regions._Collector``).
    NEEDS = Attribute("capture_begin") | Call(*_regions.GRAPH_CM_NAMES, *_regions.GRAPHED_CALLABLES_NAMES)
    FIX_APPLICABILITY = Applicability.DISPLAY_ONLY
    REGION = "in_capture"

    def hazard(self, node: cst.CSTNode, message: str, fix: Optional[Fix] = None,
               start: Optional[cst.CSTNode] = None) -> None:
        """Report ``node`` once (the first event of a node names the shortest chain); from
        ``start`` to ``node`` when the fix rewrites lines before it."""
        if id(node) in self._reported:
            return
        self._reported.add(id(node))
        if start is None:
            self.report(node, message, fix=fix or Fix(Applicability.DISPLAY_ONLY, self.SUMMARY))
        else:
            self.report(start, message, fix=fix, end_node=node)

    @staticmethod
    def where(event: RegionEvent) -> str:
        """``inside the capture begun at line 40, via step() → norm()``."""
        region = event.region
        if region.origin == "make_graphed_callables":
            text = f"inside the capture by make_graphed_callables at line {region.line}"
        else:
            text = f"inside the capture begun at line {region.line}"
        return text + (", via " + " → ".join(f"{s.label}()" for s in event.via) if event.via else "")


PRE = "import torch\n"
