"""ROC510 triton-dot-tf32: tl.dot(..., input_precision="tf32"): a compile error on AMD GPUs other than gfx942.

The rule's documentation is its class's (`rocmport rule ROC510` prints it).
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import libcst as cst

from rocmport.analysis import walk as _walk
from rocmport.analysis.needs import Call, Decorator, String
from rocmport.analysis.syntax import keyword, literal_string
from rocmport.analysis.triton import (
    DOT,
    KERNEL_DECORATORS,
    Kernel,
    TritonAnalysis,
)
from rocmport.findings import Applicability, Fix
from rocmport.rules.base import Case, SpanError

from .common import TritonRule

_TF32 = {"tf32": "_ROCMPORT_DOT_TF32", "tf32x3": "_ROCMPORT_DOT_TF32X3"}
_DOT_HEAD = (
    "import triton\nimport triton.language as tl\n\n\n"
    "@triton.jit\ndef mm(a, b, c, N: tl.constexpr):\n"
    "    offs = tl.arange(0, N)[:, None] * N + tl.arange(0, N)[None, :]\n"
)


class TritonDotTf32(TritonRule):
    CODE = "ROC510"
    NAME = "triton-dot-tf32"
    SUMMARY = 'tl.dot(..., input_precision="tf32"): a compile error on AMD GPUs other than gfx942.'
    NEEDS = Call(*DOT) & Decorator(*KERNEL_DECORATORS) & String(*_TF32, whole=True, any_case=True)
    WHAT = """
        `tl.dot(..., input_precision="tf32")` or `"tf32x3"` (a string literal, any case) in a
        Triton kernel or `@triton.jit` helper. `allow_tf32=True` is not a finding: from Triton
        3.0, `tl.dot` turns it into "tf32" only where the backend lists "tf32" among its dot
        precisions and into "ieee" elsewhere (`triton/language/core.py`), so it compiles on
        every AMD GPU (computing in full fp32 there).
        """
    WHY = """
        Triton's AMD backend accepts the dot input precisions "ieee", "bf16x3" and "bf16x6",
        plus "tf32" on gfx942 (MI300) only (`HIPOptions.allowed_dot_input_precisions`, Triton
        3.9); anything else fails the assertion in `_str_to_dot_input_precision` and the kernel
        does not compile (NVlabs/Sana#508). Checked by compiling the same kernel with
        `triton.compile` for gfx90a (fails), gfx942 and sm_90 (compile).
        """
    EXAMPLE = _DOT_HEAD + (
        "    x = tl.dot(tl.load(a + offs), tl.load(b + offs), input_precision=\"tf32\")\n"
        "    tl.store(c + offs, x)\n")
    FIXED_EXAMPLE = _DOT_HEAD.replace("\n\n\n@", "\n\n\n_ROCMPORT_DOT_TF32 = tl.constexpr(\"ieee\" if is_rocm else"
                                       " \"tf32\")\n\n\n@") + (
        "    x = tl.dot(tl.load(a + offs), tl.load(b + offs), input_precision=_ROCMPORT_DOT_TF32)\n"
        "    tl.store(c + offs, x)\n")
    FIX = """
        Safe: a module constant `_ROCMPORT_DOT_TF32 = tl.constexpr("ieee" if is_rocm else
        "tf32")` is added above the first kernel that needs it and the literal becomes that
        name. A kernel cannot read the plain `is_rocm` flag (Triton only lets kernels read
        globals that are `tl.constexpr`), so the choice is made once, at import, and the
        kernel reads the constant. On NVIDIA the kernel compiles with exactly the original
        "tf32"; on ROCm with "ieee", which every AMD GPU accepts (full fp32 precision, slower
        than tf32 on gfx942). On an H100 (Triton 3.6) the kernel reading the constant gave
        output bit-identical to the kernel with the literal, with the same TTGIR. No fix
        where the kernel is nested in a function or the file binds no `triton.language` name
        at module level.
        """
    FIX_APPLICABILITY = Applicability.SAFE
    VALID = (
        Case("""
            import triton
            import triton.language as tl


            @triton.jit
            def mm(a, b, c, N: tl.constexpr):
                offs = tl.arange(0, N)[:, None] * N + tl.arange(0, N)[None, :]
                tl.store(c + offs, tl.dot(tl.load(a + offs), tl.load(b + offs), input_precision="ieee"))
            """),
        Case("""
            import triton
            import triton.language as tl


            @triton.jit
            def mm(a, b, c, N: tl.constexpr):
                offs = tl.arange(0, N)[:, None] * N + tl.arange(0, N)[None, :]
                tl.store(c + offs, tl.dot(tl.load(a + offs), tl.load(b + offs), allow_tf32=True))
            """),
        Case("""
            import triton
            import triton.language as tl


            @triton.jit
            def mm(a, b, c, N: tl.constexpr):
                offs = tl.arange(0, N)[:, None] * N + tl.arange(0, N)[None, :]
                tl.store(c + offs, tl.dot(tl.load(a + offs), tl.load(b + offs), input_precision=P))
            """),
        Case("""
            import triton
            import triton.language as tl
            P = tl.constexpr('ieee' if is_rocm else 'tf32')
            @triton.jit
            def mm(a, b, c, N: tl.constexpr):
                offs = tl.arange(0, N)[:, None] * N + tl.arange(0, N)[None, :]
                tl.store(c + offs, tl.dot(tl.load(a + offs), tl.load(b + offs), input_precision=P))
            """),
        Case("""
            import torch
            import triton
            x = torch.ops.aten.mm(a, b)
            note = 'input_precision="tf32"'
            """),
        Case("""
            import triton
            import numpy as np
            def f(a, b):
                return np.dot(a, b, input_precision='tf32')
            """),
    )
    INVALID = (
        Case(
            """
            import triton
            import triton.language as tl


            @triton.jit
            def mm(a, b, c, N: tl.constexpr):
                offs = tl.arange(0, N)[:, None] * N + tl.arange(0, N)[None, :]
                x = tl.dot(tl.load(a + offs), tl.load(b + offs), input_precision="tf32")
                tl.store(c + offs, x)
            """,
            expected="""
            import torch
            import triton
            import triton.language as tl

            {PRELUDE}


            _ROCMPORT_DOT_TF32 = tl.constexpr("ieee" if is_rocm else "tf32")


            @triton.jit
            def mm(a, b, c, N: tl.constexpr):
                offs = tl.arange(0, N)[:, None] * N + tl.arange(0, N)[None, :]
                x = tl.dot(tl.load(a + offs), tl.load(b + offs), input_precision=_ROCMPORT_DOT_TF32)
                tl.store(c + offs, x)
            """,
            line=8,
            column=70,
            message=(
                'input_precision="tf32" is not accepted by Triton\'s AMD backend (it allows "ieee", "bf16x3", '
                '"bf16x6", and "tf32" on gfx942 only): the kernel fails to compile on ROCm; use "ieee" there'
            ),
        ),
        Case(
            """
            import triton
            import triton.language as tl


            @triton.jit
            def mm(a, b, c, N: tl.constexpr):
                offs = tl.arange(0, N)[:, None] * N + tl.arange(0, N)[None, :]
                acc = tl.dot(tl.load(a + offs), tl.load(b + offs), None, 'tf32x3')
                tl.store(c + offs, acc)
            """,
            line=8,
            column=62,
            message=(
                'input_precision="tf32x3" is not accepted by Triton\'s AMD backend (it allows "ieee", "bf16x3", '
                '"bf16x6", and "tf32" on gfx942 only): the kernel fails to compile on ROCm; use "ieee" there'
            ),
        ),
    )

    def check(self, a: TritonAnalysis) -> None:
        found: List[Tuple[Kernel, cst.Call, cst.BaseExpression, str]] = []
        for kernel in a.kernels.values():
            if self.skipped(a, kernel.func):
                continue
            rule = self

            class _V(cst.CSTVisitor):
                def visit_Call(self, n: cst.Call) -> None:
                    if not a.call_is(n, DOT):
                        return
                    arg = keyword(n, "input_precision")
                    if arg is None:
                        positional = [x for x in n.args if x.keyword is None and not x.star]
                        arg = positional[3] if len(positional) > 3 else None
                    value = literal_string(arg.value) if arg is not None else None
                    if value is not None and value.lower() in _TF32 and not rule.skipped(a, n):
                        found.append((kernel, n, arg.value, value.lower()))

            _walk.visit(kernel.func.body, _V())
        first: Dict[str, cst.FunctionDef] = {}
        for kernel, _, _, value in found:  # the first kernel in the file that needs each constant
            current = first.get(value)
            if current is None or self._line_start(kernel.func) < self._line_start(current):
                first[value] = kernel.func
        for kernel, call, literal, value in found:
            fix = self._fix(a, kernel, literal, value, first[value])
            self.report(literal, f'input_precision="{value}" is not accepted by Triton\'s AMD backend (it allows "ieee",'
                                 ' "bf16x3", "bf16x6", and "tf32" on gfx942 only): the kernel fails to compile on ROCm;'
                                 ' use "ieee" there', fix=fix)

    def _fix(self, a: TritonAnalysis, kernel: Kernel, literal: cst.BaseExpression, value: str,
             anchor: cst.FunctionDef) -> Optional[Fix]:
        module = self.context.module
        if not any(stmt is kernel.func for stmt in module.body) or not any(stmt is anchor for stmt in module.body):
            return None
        language = self._language_name()
        if language is None:
            return None
        name = _TF32[value]
        try:
            edits = [self.context.replace(literal, name)]
        except SpanError:
            return None
        if not a.bindings(module).get(name):
            nl = self.context.newline()
            definition = (f"{name} = {language}.constexpr(\"ieee\" if {self.context.gate_name} else"
                          f" {self.context.source(literal)}){nl}{nl}{nl}")
            start = self._line_start(anchor)
            edits.insert(0, self.context.edit(start, start, definition))
        return Fix(Applicability.SAFE, 'Use input_precision="ieee" on ROCm', tuple(edits), ("gate",))

    def _line_start(self, func: cst.FunctionDef) -> int:
        """Where a module-level function starts: its first decorator (or ``def``), or the
        comment lines right above it."""
        first = func.decorators[0] if func.decorators else func
        row = self.context.position(first).start.line
        lines, text = self.context.lines, self.context.text
        while row > 1:  # the comment lines right above the function belong to it
            start, stop = lines.line_span(row - 1)
            above = text[start:stop].strip()
            if not above.startswith("#") or above.startswith(("# <<<", "# >>>")):
                break
            row -= 1
        return lines.offset(row, 0)

    def _language_name(self) -> Optional[str]:
        facts = self.context.facts
        if facts is None:
            return None
        kinds = facts.binding_kinds()
        imports = facts.binding_kinds_imports()
        for name, bound in sorted(imports.items()):
            if bound == {"triton.language"} and kinds.get(name) == {"import"}:
                return name
        if imports.get("triton") == {"triton"} and kinds.get("triton") == {"import"}:
            return "triton.language"
        return None
