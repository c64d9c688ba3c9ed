"""ROC509 triton-inline-ptx: tl.inline_asm_elementwise with NVIDIA PTX: does not assemble for AMD GPUs.

The rule's documentation is its class's (`rocmport rule ROC509` prints it).
"""

from __future__ import annotations

import re

import libcst as cst

from rocmport.analysis.needs import Call
from rocmport.analysis.syntax import keyword, literal_string
from rocmport.analysis.triton import (
    INLINE_ASM,
)
from rocmport.findings import Applicability, Fix
from rocmport.rules.base import Case

from .common import TritonNameRule

_AMD_ASM = re.compile(r"^\s*(?:v_|s_|ds_|global_|buffer_|flat_|scratch_)")


class TritonInlinePtx(TritonNameRule):
    CODE = "ROC509"
    NAME = "triton-inline-ptx"
    SUMMARY = "tl.inline_asm_elementwise with NVIDIA PTX: does not assemble for AMD GPUs."
    NEEDS = Call(*INLINE_ASM)
    WHAT = """
        A call of `tl.inline_asm_elementwise(...)` outside a ROCm branch, unless its assembly is
        recognisably AMD GCN (`v_...`, `s_...`, `ds_...`, `global_...`).
        """
    WHY = """
        The assembly string is handed to the backend's assembler unchanged; PTX written for
        NVIDIA (`cvt.rn.f16x2.f32`, `lop3.b32`, `mov.b32`) is not AMD GCN, so the kernel fails
        to compile on ROCm (triton-lang/triton#3825 and others).
        """
    EXAMPLE = """
        import triton
        import triton.language as tl

        @triton.jit
        def k(p):
            x = tl.load(p)
            y = tl.inline_asm_elementwise("cvt.rn.f16.f32 $0, $1;", "=h,r", [x], dtype=tl.float16,
                                          is_pure=True, pack=1)
            tl.store(p, y)
        """
    FIX = """
        Display-only: use the `triton.language` operation the assembly implements (often a
        cast, `tl.fma`, `tl.umulhi`) or put the assembly behind a `tl.constexpr` flag that is
        False on ROCm, with a portable branch.
        """
    FIX_APPLICABILITY = Applicability.DISPLAY_ONLY
    VALID = (
        Case("import triton\nimport triton.language as tl\n@triton.jit\ndef k(p):\n"
             "    x = tl.inline_asm_elementwise('v_cvt_f16_f32 $0, $1', '=v,v', [tl.load(p)], dtype=tl.float16,"
             " is_pure=True, pack=1)\n"),
        Case("import triton\nimport triton.language as tl\n@triton.jit\ndef k(p, IS_HIP: tl.constexpr):\n"
             "    x = tl.load(p)\n    if IS_HIP:\n        y = x.to(tl.float16)\n    else:\n"
             "        y = tl.inline_asm_elementwise('cvt.rn.f16.f32 $0, $1;', '=h,r', [x], dtype=tl.float16,"
             " is_pure=True, pack=1)\n    tl.store(p, y)\n"),
        Case('import triton\ndoc = "tl.inline_asm_elementwise(ptx) is NVIDIA-only"\n'),
    )
    INVALID = (
        Case("import triton\nimport triton.language as tl\n@triton.jit\ndef k(p):\n"
             "    y = tl.inline_asm_elementwise('cvt.rn.f16.f32 $0, $1;', '=h,r', [tl.load(p)], dtype=tl.float16,"
             " is_pure=True, pack=1)\n"),
        Case("import triton\nfrom triton.language import inline_asm_elementwise as asm\n@triton.jit\ndef k(p):\n"
             "    y = asm(ASM, '=r,r', [p], dtype=tl.int32, is_pure=True, pack=1)\n"),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if not self.qnames(node.func, INLINE_ASM) or self.foreign(node):
            return
        asm = keyword(node, "asm")
        if asm is None and node.args and node.args[0].keyword is None:
            asm = node.args[0]
        text = literal_string(asm.value) if asm is not None else None
        if text is not None and _AMD_ASM.match(text):
            return
        self.report(node, "inline assembly in a Triton kernel is passed to the backend's assembler as is: NVIDIA PTX"
                          " does not assemble for AMD GPUs; use the triton.language operation it implements, or a"
                          " tl.constexpr branch that is False on ROCm",
                    fix=Fix(Applicability.DISPLAY_ONLY, "Use a triton.language operation on ROCm"))
