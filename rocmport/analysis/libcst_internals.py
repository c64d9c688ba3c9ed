"""The few LibCST internals rocmport builds on, in one place.

LibCST's public interface has no way to generate the positions of one statement, to stand a
placeholder node in for an unparsed definition, or to read a metadata value that is computed
on demand; these names do, and every use of them in rocmport goes through this module. They
exist, with the behaviour relied on, in the LibCST versions pyproject.toml allows (the range
the tests run against); tests/test_libcst_internals.py checks each one, so a LibCST release
that moves one fails there, by name, before anything else does.
"""

from __future__ import annotations

from libcst._nodes.internal import CodegenState, visit_required, visit_sequence
from libcst.metadata.base_provider import LazyValue
from libcst.metadata.position_provider import NEWLINE_RE, PositionProvidingCodegenState

__all__ = ["CodegenState", "LazyValue", "NEWLINE_RE", "PositionProvidingCodegenState", "visit_required",
           "visit_sequence"]
