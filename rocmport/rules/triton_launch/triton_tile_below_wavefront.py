"""ROC502 triton-tile-below-wavefront: A multi-dimensional Triton tile with fewer than 64 elements.

The rule's documentation is its class's (`rocmport rule ROC502` prints it).
"""

from __future__ import annotations

from typing import List, Optional

import libcst as cst

from rocmport.analysis.triton import (
    TritonAnalysis,
)
from rocmport.findings import Applicability, Fix
from rocmport.rules.base import Case

from .common import WAVEFRONT, TritonRule

_GEMM_HEAD = (
    "import triton\nimport triton.language as tl\n\n"
    "@triton.jit\ndef mm(a, b, c, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):\n"
    "    rm = tl.arange(0, BLOCK_M)\n    rn = tl.arange(0, BLOCK_N)\n"
    "    x = tl.load(a + rm[:, None] * BLOCK_N + rn[None, :])\n"
    "    tl.store(c + rm[:, None] * BLOCK_N + rn[None, :], x)\n\n"
)


class TritonSmallTile(TritonRule):
    CODE = "ROC502"
    NAME = "triton-tile-below-wavefront"
    SUMMARY = "A multi-dimensional Triton tile with fewer than 64 elements."
    WHAT = """
        A kernel whose `tl.arange` extents are two or more block dimensions, given values
        (by an autotune `triton.Config`, a launch, constants or `tl.constexpr` defaults) whose
        product is below 64. Dimensions below 64 whose product is 64 or more are fine (AMD's
        own tuned GEMM configs use BLOCK_K of 16 and 32). A dimension whose value is known
        only at run time (e.g. `triton.next_power_of_2(n)`) means no finding.
        """
    WHY = """
        A tile of fewer than 64 elements cannot fill one 64-lane AMD wavefront: lanes idle or
        hold replicated elements on every program.
        """
    EXAMPLE = _GEMM_HEAD + "def run(a, b, c):\n    mm[(1,)](a, b, c, BLOCK_M=4, BLOCK_N=8)\n"
    FIX = """
        Display-only. Grow the tile on ROCm (e.g. `BLOCK_M=8 if is_rocm else 4`) where the
        kernel's masks, grid and shared-memory budget allow it; rocmport cannot check them for
        a multi-dimensional tile.
        """
    FIX_APPLICABILITY = Applicability.DISPLAY_ONLY
    VALID = (
        Case("""
            import triton
            import triton.language as tl

            @triton.jit
            def mm(a, b, c, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
                rm = tl.arange(0, BLOCK_M)
                rn = tl.arange(0, BLOCK_N)
                x = tl.load(a + rm[:, None] * BLOCK_N + rn[None, :])
                tl.store(c + rm[:, None] * BLOCK_N + rn[None, :], x)

            def run(a, b, c):
                mm[(1,)](a, b, c, BLOCK_M=32, BLOCK_N=16)
            """),
        Case("""
            import triton
            import triton.language as tl

            @triton.jit
            def mm(a, b, c, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
                rm = tl.arange(0, BLOCK_M)
                rn = tl.arange(0, BLOCK_N)
                x = tl.load(a + rm[:, None] * BLOCK_N + rn[None, :])
                tl.store(c + rm[:, None] * BLOCK_N + rn[None, :], x)

            def run(a, b, c, n):
                mm[(1,)](a, b, c, BLOCK_M=4, BLOCK_N=triton.next_power_of_2(n))
            """),
        Case("""
            import triton
            import triton.language as tl

            @triton.autotune(configs=[triton.Config({'BLOCK_M': 64, 'BLOCK_N': 16})], key=[])
            @triton.jit
            def mm(a, b, c, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
                rm = tl.arange(0, BLOCK_M)
                rn = tl.arange(0, BLOCK_N)
                x = tl.load(a + rm[:, None] * BLOCK_N + rn[None, :])
                tl.store(c + rm[:, None] * BLOCK_N + rn[None, :], x)

            """),
        Case("""
            import triton
            import triton.language as tl

            @triton.jit
            def mm(a, b, c, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
                rm = tl.arange(0, BLOCK_M)
                rn = tl.arange(0, BLOCK_N)
                x = tl.load(a + rm[:, None] * BLOCK_N + rn[None, :])
                tl.store(c + rm[:, None] * BLOCK_N + rn[None, :], x)

            def run(a, b, c):
                mm[(1,)](a, b, c, BLOCK_M=16 if is_rocm else 4, BLOCK_N=8)
            """),
    )
    INVALID = (
        Case(
            """
            import triton
            import triton.language as tl

            @triton.jit
            def mm(a, b, c, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
                rm = tl.arange(0, BLOCK_M)
                rn = tl.arange(0, BLOCK_N)
                x = tl.load(a + rm[:, None] * BLOCK_N + rn[None, :])
                tl.store(c + rm[:, None] * BLOCK_N + rn[None, :], x)

            def run(a, b, c):
                mm[(1,)](a, b, c, BLOCK_M=4, BLOCK_N=8)
            """,
            line=12,
            column=5,
            message=(
                "`mm` tile 4 x 8 has 32 elements, fewer than one 64-lane AMD wavefront: lanes idle on every program; "
                "grow it on ROCm"
            ),
        ),
        Case(
            """
            import triton
            import triton.language as tl

            @triton.autotune(configs=[triton.Config({'BLOCK_M': 2, 'BLOCK_N': 16})], key=[])
            @triton.jit
            def mm(a, b, c, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
                rm = tl.arange(0, BLOCK_M)
                rn = tl.arange(0, BLOCK_N)
                x = tl.load(a + rm[:, None] * BLOCK_N + rn[None, :])
                tl.store(c + rm[:, None] * BLOCK_N + rn[None, :], x)

            """,
            line=4,
            column=27,
            message=(
                "`mm` tile 2 x 16 has 32 elements, fewer than one 64-lane AMD wavefront: lanes idle on every "
                "program; grow it on ROCm"
            ),
        ),
    )

    def check(self, a: TritonAnalysis) -> None:
        for kernel in a.kernels.values():
            if len(kernel.dims) < 2 or kernel.unknown_extent or self.skipped(a, kernel.func):
                continue
            sources: List[Optional[cst.CSTNode]] = list(kernel.configs)
            if not kernel.configs:
                sources += [l.call for l in kernel.launches]
            if not sources:
                sources = [None]
            for source in sources:
                values = []
                for dim in kernel.dims:
                    values.append(dim if isinstance(dim, int) else a.value_of(kernel, dim, source))
                if any(v is None for v in values):
                    continue
                product = 1
                for v in values:
                    product *= v
                if product >= WAVEFRONT or product <= 0:
                    continue
                node = source if source is not None else kernel.func.name
                if self.skipped(a, node):
                    continue
                shape = " x ".join(str(v) for v in values)
                self.report(node, f"`{kernel.name}` tile {shape} has {product} elements, fewer than one 64-lane"
                                  " AMD wavefront: lanes idle on every program; grow it on ROCm",
                            fix=Fix(Applicability.DISPLAY_ONLY, "Use a tile of at least 64 elements on ROCm"))
