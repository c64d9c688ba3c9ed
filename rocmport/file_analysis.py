"""What one analysis of one text holds: its findings, LibCST's tree and metadata, and the
gate its fixes test.
"""


from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable, FrozenSet, List, Optional, Tuple

import libcst as cst

from rocmport.analysis.metadata import Metadata

from . import placement, prelude
from .findings import Finding
from .source import LineIndex

# ------------------------------------------------------------------------------------------
# One analysis of one text
# ------------------------------------------------------------------------------------------

@dataclass
class FileAnalysis:
    text: str
    findings: List[Finding]
    module: Optional[cst.Module] = None
    wrapper: Optional[Metadata] = None  # parents and positions on demand (MetadataWrapper's interface)
    lines: Optional[LineIndex] = None
    gate: str = prelude.DEFAULT_GATE
    gate_binding: Optional[Tuple[str, int]] = None  # the file's own gate binding statement
    block: Optional[prelude.Block] = None
    house: Optional[placement.HouseGate] = None  # the project's own ROCm test, when the gate is one
    spans: List[Tuple[cst.CSTNode, int, int]] = dataclasses.field(default_factory=list)  # statement_spans
    # _gate_bound: where the first module-level statement that binds the gate begins (-1: none)
    gate_at: Optional[int] = None
    # where the analysis left inert statements out (``parsing.reduced``): the words whose
    # statements another text of this file keeps (``inert.seed_words``), None: not a word
    reduce_words: Optional[Callable[[str], Optional[FrozenSet[str]]]] = None
