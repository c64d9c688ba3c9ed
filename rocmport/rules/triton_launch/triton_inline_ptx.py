"""ROC509 triton-inline-ptx: tl.inline_asm_elementwise with NVIDIA PTX: does not assemble for AMD GPUs.

The rule's documentation is its class's (`rocmport rule ROC509` prints it).
"""

from __future__ import annotations

import re

import libcst as cst

from rocmport.analysis import gates
from rocmport.analysis.needs import Call
from rocmport.analysis.syntax import keyword, literal_string
from rocmport.analysis.triton import (
    INLINE_ASM,
)
from rocmport.findings import Applicability, Fix
from rocmport.rules.base import Case

from .common import TritonNameRule

_AMD_ASM = re.compile(r"^\s*(?:v_|s_|ds_|global_|buffer_|flat_|scratch_)")
# PTX that only NVIDIA's Blackwell GPUs run (sm_100a / sm_120a): the tcgen05 tensor-memory
# instructions and the FP4 / FP6 / UE8M0 conversions. A kernel holding it fails on every GPU
# before Blackwell, NVIDIA's own included, so its callers must already pick Blackwell (a
# capability of 10 or more, which AMD never reports: MI300 is (9, 4)).
_BLACKWELL_PTX = re.compile(r"\btcgen05\b|\.(?:e2m1x2|e2m3x2|e3m2x2|ue8m0x2)\b")


class TritonInlinePtx(TritonNameRule):
    CODE = "ROC509"
    NAME = "triton-inline-ptx"
    SUMMARY = "tl.inline_asm_elementwise with NVIDIA PTX: does not assemble for AMD GPUs."
    NEEDS = Call(*INLINE_ASM)
    WHAT = """
        A call of `tl.inline_asm_elementwise(...)` outside a ROCm branch, unless its assembly is
        recognisably AMD GCN (`v_...`, `s_...`, `ds_...`, `global_...`). Several assembly
        blocks in one kernel or helper are one finding (at the first), with the others as
        related locations: the decision is the function's.

        Not reported, because the kernel never runs on an AMD GPU:
        - assembly only NVIDIA's Blackwell GPUs run (`tcgen05.*`, the FP4 conversions
          `cvt.rn.satfinite.e2m1x2`, `ue8m0x2`): it fails on every GPU before Blackwell,
          NVIDIA's own included, so the code that calls the kernel already picks Blackwell
          (compute capability 10 or more, which no AMD GPU reports);
        - code for NVIDIA GPUs only (`gates.nvidia_only`): a kernel or function named for an
          NVIDIA-only feature (`nvfp4`, `sm100`, `tma`, `cutlass`), or a module that imports a
          package with no ROCm build (`triton.language.extra.tlx`, `tensorrt`): it does not
          load on ROCm.
        """
    WHY = """
        The assembly string is handed to the backend's assembler unchanged; PTX written for
        NVIDIA (`cvt.rn.f16x2.f32`, `lop3.b32`, `mov.b32`) is not AMD GCN, so the kernel fails
        to compile on ROCm: Triton's own tests run inline assembly on CUDA only ("test_inline_asm
        is only supported in CUDA", triton-lang/triton#11225).
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
        Case("""
            import triton
            import triton.language as tl

            @triton.jit
            def quantize_fp4(x):
                # FP4 conversion: Blackwell (sm_100a) only, its callers pick Blackwell
                return tl.inline_asm_elementwise(
                    asm="cvt.rn.satfinite.e2m1x2.f32 $0, $2, $1;", constraints="=r,r,r", args=[x, x],
                    dtype=tl.int8, is_pure=True, pack=1)
            """),
        Case("""
            import triton
            import triton.language as tl

            @triton.jit
            def _kernel_nvfp4_quantize(x):
                return tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [x], dtype=tl.int32,
                                                 is_pure=True, pack=1)
            """),
        Case("""
            import triton
            import triton.language as tl
            import triton.language.extra.tlx as tlx

            @triton.jit
            def spin(flag_ptr):
                ready = tl.inline_asm_elementwise("ld.acquire.gpu.global.b32 $0, [$1];", "=r,l", [flag_ptr],
                                                  dtype=tl.int32, is_pure=False, pack=1)
            """),
        Case("""
            import triton
            import triton.language as tl
            @triton.jit
            def k(p):
                x = tl.inline_asm_elementwise('v_cvt_f16_f32 $0, $1', '=v,v', [tl.load(p)], dtype=tl.float16, is_pure=True, pack=1)
            """),
        Case("""
            import triton
            import triton.language as tl
            @triton.jit
            def k(p, IS_HIP: tl.constexpr):
                x = tl.load(p)
                if IS_HIP:
                    y = x.to(tl.float16)
                else:
                    y = tl.inline_asm_elementwise('cvt.rn.f16.f32 $0, $1;', '=h,r', [x], dtype=tl.float16, is_pure=True, pack=1)
                tl.store(p, y)
            """),
        Case("""
            import triton
            doc = "tl.inline_asm_elementwise(ptx) is NVIDIA-only"
            """),
    )
    INVALID = (
        # two PTX blocks of one helper are one decision: one finding, the other a related location
        Case(
            """
            import triton
            import triton.language as tl

            @triton.jit
            def dequant(w, s, z, is_top: tl.constexpr):
                if is_top:
                    return tl.inline_asm_elementwise("lop3.b32 $0, $1, $2, $3, 0xea;", "=r,r,r,r", [w, s, z],
                                                     dtype=tl.int32, is_pure=True, pack=1)
                else:
                    return tl.inline_asm_elementwise("sub.f16x2 $0, $1, $2;", "=r,r,r", [w, s],
                                                     dtype=tl.int32, is_pure=True, pack=1)
            """,
            line=7,
            column=16,
            message=(
                "inline assembly in a Triton kernel is passed to the backend's assembler as is: NVIDIA PTX does not "
                "assemble for AMD GPUs; use the triton.language operation it implements, or a tl.constexpr branch "
                "that is False on ROCm (1 more place in this file follows from this decision: line 10)"
            ),
        ),
        # near the Blackwell-only words, but PTX that sm_80 and sm_90 run (and AMD does not)
        Case(
            """
            import triton
            import triton.language as tl

            @triton.jit
            def to_fp8(x):
                return tl.inline_asm_elementwise("cvt.rn.satfinite.e4m3x2.f32 $0, $2, $1;", "=h,r,r", [x, x],
                                                 dtype=tl.int16, is_pure=True, pack=1)
            """,
            line=6,
            column=12,
            message=(
                "inline assembly in a Triton kernel is passed to the backend's assembler as is: NVIDIA PTX does not "
                "assemble for AMD GPUs; use the triton.language operation it implements, or a tl.constexpr branch "
                "that is False on ROCm"
            ),
        ),
        Case(
            """
            import triton
            import triton.language as tl
            @triton.jit
            def k(p):
                y = tl.inline_asm_elementwise('cvt.rn.f16.f32 $0, $1;', '=h,r', [tl.load(p)], dtype=tl.float16, is_pure=True, pack=1)
            """,
            line=5,
            column=9,
            message=(
                "inline assembly in a Triton kernel is passed to the backend's assembler as is: NVIDIA PTX does not "
                "assemble for AMD GPUs; use the triton.language operation it implements, or a tl.constexpr branch "
                "that is False on ROCm"
            ),
        ),
        Case(
            """
            import triton
            from triton.language import inline_asm_elementwise as asm
            @triton.jit
            def k(p):
                y = asm(ASM, '=r,r', [p], dtype=tl.int32, is_pure=True, pack=1)
            """,
            line=5,
            column=9,
            message=(
                "inline assembly in a Triton kernel is passed to the backend's assembler as is: NVIDIA PTX does not "
                "assemble for AMD GPUs; use the triton.language operation it implements, or a tl.constexpr branch "
                "that is False on ROCm"
            ),
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if not self.qnames(node.func, INLINE_ASM) or self.foreign(node):
            return
        asm = keyword(node, "asm")
        if asm is None and node.args and node.args[0].keyword is None:
            asm = node.args[0]
        text = literal_string(asm.value) if asm is not None else None
        if text is not None and (_AMD_ASM.match(text) or _BLACKWELL_PTX.search(text)):
            return
        if gates.of(self.context).nvidia_only(node) is not None:
            return  # a kernel for NVIDIA GPUs only, or a module that does not load on ROCm
        function = next((a for a in self.ancestors(node) if isinstance(a, cst.FunctionDef)), None)
        self.report(node, "inline assembly in a Triton kernel is passed to the backend's assembler as is: NVIDIA PTX"
                          " does not assemble for AMD GPUs; use the triton.language operation it implements, or a"
                          " tl.constexpr branch that is False on ROCm",
                    fix=Fix(Applicability.DISPLAY_ONLY, "Use a triton.language operation on ROCm"),
                    decision=f"asm in {function.name.value}" if function is not None else None)
