"""What the region analysis (``_regions``) finds in captured and compiled code: typed facts.

Each event is one fact about one node: what the code does (reads a scalar, prints a tensor,
makes a stream, ...), in which region it runs (:attr:`RegionEvent.region`: a CUDA-graph
capture or a compiled function) and through which calls the region reaches it
(:attr:`RegionEvent.via`, outermost first; empty when the node sits in the region's own
code). An event names no rule and carries no message: each capture rule (``capture.py``) and
graph-break rule (``graph_breaks.py``) picks the events it reports and writes its own
message and fix. The same fact can matter to both families: ``.item()`` is a host sync in a
capture and a graph break in compiled code.

``RegionAnalysis.events`` lists them in the order the regions are walked (regions by line, each
one breadth first through its calls), so that the first event of a node names the shortest
chain of the first region that reaches it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional, Tuple

import libcst as cst

if TYPE_CHECKING:  # pragma: no cover
    from .regions import Region, Scope


@dataclass(frozen=True, eq=False)
class RegionEvent:
    """A fact met in a region. The scan of a function builds it without a region; the walk
    of each region that reaches the function adds ``region`` and ``via``."""

    node: cst.CSTNode
    region: Optional["Region"] = None
    via: Tuple["Scope", ...] = ()  # the functions called on the way, outermost first

    @property
    def in_capture(self) -> bool:
        return self.region is not None and self.region.kind == "capture"

    @property
    def in_compiled(self) -> bool:
        return self.region is not None and self.region.kind == "compiled"


# -- host reads and synchronizations ----------------------------------------------------------

@dataclass(frozen=True, eq=False)
class ScalarRead(RegionEvent):
    """``t.item()``, ``t.tolist()`` or ``t.numpy()`` (no arguments)."""

    method: str = ""  # "item", "tolist" or "numpy"


@dataclass(frozen=True, eq=False)
class CopyToHost(RegionEvent):
    """``t.cpu()`` or ``t.to(<a CPU device>)``."""

    device: Optional[cst.BaseExpression] = None  # the device argument of ``.to``; None for ``.cpu()``


@dataclass(frozen=True, eq=False)
class DeviceSynchronize(RegionEvent):
    """``torch.cuda.synchronize()``, any spelling. ``Region.trailing_syncs`` tells whether it
    is one of the statements that end a capture ``with`` block."""


@dataclass(frozen=True, eq=False)
class StreamSynchronize(RegionEvent):
    """``<something>.synchronize()`` other than ``torch.cuda.synchronize``: a stream or event."""


@dataclass(frozen=True, eq=False)
class TensorBranch(RegionEvent):
    """An ``if`` or ``while`` whose test is a tensor value; ``node`` is the test."""

    keyword: str = "if"  # "if" or "while"


@dataclass(frozen=True, eq=False)
class TensorToPython(RegionEvent):
    """``float(t)``, ``int(t)``, ``bool(t)`` or ``complex(t)`` of a tensor."""

    builtin: str = ""


@dataclass(frozen=True, eq=False)
class TensorFormatted(RegionEvent):
    """An f-string that formats a tensor (not one that is an argument of ``print``)."""


# -- output ------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class PrintCall(RegionEvent):
    """The built-in ``print``."""

    of_tensor: bool = False  # an argument is a tensor, or an f-string that formats one


@dataclass(frozen=True, eq=False)
class LoggingCall(RegionEvent):
    """A logging call: ``logging.info(...)``, ``logger.warning(...)`` on a logger that the
    file does not silence."""


# -- shapes --------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class DataDependentShape(RegionEvent):
    """An operation whose output shape depends on the data: ``torch.nonzero(x)`` (``op`` is
    the qualified name), ``x.unique()`` (``op`` is the method name, ``method`` True),
    one-argument ``torch.where``, ``repeat_interleave`` with a repeat count that may be a
    tensor (``regions._count_like``) and no ``output_size=``."""

    op: str = ""
    method: bool = False


@dataclass(frozen=True, eq=False)
class BooleanMaskIndex(RegionEvent):
    """``x[mask]`` read (not stored to) with a boolean mask; ``size_read`` when its size then
    reaches Python (``.numel()``, ``.size()``, ``.shape``, ``len()``) in the same function."""

    size_read: bool = False


# -- random state, copies, streams, compiled callables ----------------------------------------

@dataclass(frozen=True, eq=False)
class RngStateCall(RegionEvent):
    """A call that reads or changes a generator's state: ``name`` is its qualified name
    (``torch.cuda.manual_seed``, ``torch.Generator.get_state`` for a CUDA generator's
    method), ``op`` is "get", "set" or "seed"."""

    name: str = ""
    op: str = ""


@dataclass(frozen=True, eq=False)
class HostToDeviceCopy(RegionEvent):
    """A host-to-device copy: ``torch.tensor(data, device="cuda")`` (``from_python_data``), or
    ``.cuda()`` / ``.to(<a GPU device>)`` of a tensor made on the CPU."""

    from_python_data: bool = False


@dataclass(frozen=True, eq=False)
class PinMemory(RegionEvent):
    """``t.pin_memory()``."""


@dataclass(frozen=True, eq=False)
class StreamCreated(RegionEvent):
    """``torch.cuda.Stream(...)``."""


@dataclass(frozen=True, eq=False)
class StreamEntered(RegionEvent):
    """``torch.cuda.stream(s)``; ``stream`` is the source text of ``s``."""

    stream: str = ""


@dataclass(frozen=True, eq=False)
class CompiledCall(RegionEvent):
    """A call of a compiled callable (``torch.compile`` at ``compiled_line``) met in a
    capture; ``warmed_up`` when the function that holds the capture called it (or the
    chain's first function) before the capture begins."""

    compiled_line: int = 0
    warmed_up: bool = False


# -- calls Dynamo cannot trace -------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class UntraceableCall(RegionEvent):
    """A call that Dynamo cannot trace: ``kind`` is "ctypes" (a foreign function), "subprocess"
    (a process: ``subprocess``, ``os.system``), "nvml" (``pynvml``), "amdsmi", "non-tensor" (a
    ``torch.*`` function returning a non-tensor, ``torch.cuda.device_count``) or
    "triton-driver" (``triton.runtime.driver.active.get_current_target``); ``what`` is its
    qualified name. When ``through`` is set, ``node`` calls a function of another module
    (``through`` as spelled here) whose body makes the call, at ``line`` of ``module``;
    ``cached`` when that function is ``functools.lru_cache``/``cache``-decorated."""

    kind: str = ""
    what: str = ""
    through: str = ""
    module: str = ""
    line: int = 0
    cached: bool = False
