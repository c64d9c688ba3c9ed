"""ROC306 device-wide-synchronize: torch.cuda.synchronize() waits for every stream; the current stream may be enough.

The rule's documentation is its class's (`rocmport rule ROC306` prints it).
"""

from __future__ import annotations

import libcst as cst
from libcst.metadata import ParentNodeProvider, PositionProvider, QualifiedNameProvider

from rocmport.analysis import regions as _regions
from rocmport.analysis.names import qualified_names
from rocmport.analysis.needs import Call
from rocmport.findings import Applicability, Fix
from rocmport.rules.base import Case, Rule


class SynchronizeAnywhere(Rule):
    CODE = "ROC306"
    NAME = "device-wide-synchronize"
    SUMMARY = "torch.cuda.synchronize() waits for every stream; the current stream may be enough."
    DEFAULT_ENABLED = False
    WHAT = """
        Every `torch.cuda.synchronize()` (any spelling), outside ROCm-only branches. Off by
        default: it is a performance hint, not a hazard.
        """
    WHY = """
        `torch.cuda.synchronize()` waits for all streams of the device, which is more
        expensive on ROCm (HIP) than on CUDA. When only the current stream's work matters,
        `torch.cuda.current_stream().synchronize()` is cheaper.
        """
    EXAMPLE = """
        torch.cuda.synchronize()
        elapsed = time.perf_counter() - start
        """
    FIX = """
        Display-only: `torch.cuda.current_stream().synchronize()` waits only for the current
        stream. The two differ when several streams are in use (timing side streams,
        NCCL), so rocmport never applies it.
        """
    FIX_APPLICABILITY = Applicability.DISPLAY_ONLY
    NEEDS = Call(*_regions.SYNC_NAMES)
    METADATA_DEPENDENCIES = (PositionProvider, ParentNodeProvider, QualifiedNameProvider)
    VALID = (
        Case("""
            import torch
            torch.cuda.current_stream().synchronize()
            """),
        Case("""
            import torch
            if torch.version.hip:
                torch.cuda.synchronize()
            """),
        Case("""
            import threading
            threading.Event().synchronize()
            """),
    )
    INVALID = (
        Case(
            """
            import torch
            torch.cuda.synchronize()
            """,
            line=2,
            column=1,
            message=(
                "`torch.cuda.synchronize()` waits for every stream of the device; when only the current stream "
                "matters, `torch.cuda.current_stream().synchronize()` is cheaper on ROCm"
            ),
        ),
        Case(
            """
            from torch.cuda import synchronize
            synchronize()
            """,
            line=2,
            column=1,
            message=(
                "`torch.cuda.synchronize()` waits for every stream of the device; when only the current stream "
                "matters, `torch.cuda.current_stream().synchronize()` is cheaper on ROCm"
            ),
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if qualified_names(self, node.func) & _regions.SYNC_NAMES and not self.in_rocm_branch(node):
            self.report(node, "`torch.cuda.synchronize()` waits for every stream of the device; when only the"
                        " current stream matters, `torch.cuda.current_stream().synchronize()` is cheaper on ROCm",
                        fix=Fix(Applicability.DISPLAY_ONLY,
                                "Use `torch.cuda.current_stream().synchronize()` if only the current stream matters"))
