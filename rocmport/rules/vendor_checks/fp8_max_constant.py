"""ROC706 fp8-max-constant: 448 hard-coded as the fp8 maximum: it is 240 for MI300's fnuz format.

The rule's documentation is its class's (`rocmport rule ROC706` prints it).
"""

from __future__ import annotations

import re
from typing import List, Optional

import libcst as cst

from rocmport.analysis.needs import Number
from rocmport.analysis.syntax import mentions_rocm
from rocmport.findings import Applicability, Fix
from rocmport.rules.base import Case

from .common import E4M3FN, PRE, Fp8Rule, facts_doc, header_of, is_none, mentions, statement_of, walk

_FP8_WORD = re.compile(r"(?i)fp8|float8|e4m3|f8e4|f8_e4")
_FP8_MAX_LITERAL = re.compile(r"448(?:\.0*)?")


class Fp8MaxConstant(Fp8Rule):
    CODE = "ROC706"
    NAME = "fp8-max-constant"
    SUMMARY = "448 hard-coded as the fp8 maximum: it is 240 for MI300's fnuz format."
    # Only ``visit_Integer`` / ``visit_Float`` report, on a literal that spells 448
    # (``_FP8_MAX_LITERAL``); the dtype it reads is its statement's, or a name's value in the
    # same function or at module level.
    NEEDS = Number(448)
    LOCAL = True
    FIX_APPLICABILITY = Applicability.SAFE
    WHAT = """
        The literal `448` (or `448.0`) in a statement about fp8: one that names fp8 in an
        identifier (`fp8`, `float8`, `e4m3`: `FP8_MAX = 448.0`, `x.clamp(-448, 448).to(fp8_dtype)`,
        `fp8_max=448`). Not reported: 448 elsewhere (an image size), in strings or comments,
        in statements that already name the fnuz format or the architecture, and under a ROCm
        test.
        """
    WHY = """
        448 is the maximum of `float8_e4m3fn`. MI300 (gfx942) uses `float8_e4m3fnuz`, whose
        maximum is 240: scaling to 448 overflows it, giving NaNs or saturated values (10
        threads, e.g. sglang#39628, DiffSynth-Studio#1528).

""" + facts_doc("fp8") + """
        """
    EXAMPLE = """
        fp8_dtype = torch.float8_e4m3fnuz if is_rocm else torch.float8_e4m3fn
        y = (x / scale).clamp(-448.0, 448.0).to(fp8_dtype)
        """
    FIXED_EXAMPLE = """
        fp8_dtype = torch.float8_e4m3fnuz if is_rocm else torch.float8_e4m3fn
        y = (x / scale).clamp(-torch.finfo(fp8_dtype).max, torch.finfo(fp8_dtype).max).to(fp8_dtype)
        """
    FIX = """
        Safe when the statement names the dtype and that dtype is `float8_e4m3fn` on NVIDIA:
        `torch.float8_e4m3fn` itself, or a name whose every assignment in the file is
        `torch.float8_e4m3fn` or a ROCm conditional whose NVIDIA arm is
        (`torch.float8_e4m3fnuz if is_rocm else torch.float8_e4m3fn`). `448.0` becomes
        `torch.finfo(dtype).max` and `448` becomes `int(torch.finfo(dtype).max)`: on NVIDIA
        exactly 448.0 / 448 as before; with an fnuz dtype, 240. Not inside a Triton kernel
        (`torch.finfo` is not available there). Otherwise display-only: use
        `torch.finfo(dtype).max` for the dtype in use.
        """
    VALID = (
        Case("image_size = 448\n"),
        Case(PRE + "FP8_MAX = torch.finfo(torch.float8_e4m3fn).max\n"),
        Case(PRE + "FP8_MAX = 240.0 if is_rocm else 448.0\n"),
        Case(PRE + "# FP8_MAX = 448.0\ns = 'fp8 max 448'\n"),
        Case(PRE + "fp8_max = 240.0 if 'gfx942' in arch else 448.0\n"),
        Case(PRE + "resize(img, 448).to(torch.float32)\n"),
    )
    INVALID = (
        Case(PRE + "y = x.clamp(-448.0, 448.0).to(torch.float8_e4m3fn)\n",
             PRE + "y = x.clamp(-torch.finfo(torch.float8_e4m3fn).max, "
             "torch.finfo(torch.float8_e4m3fn).max).to(torch.float8_e4m3fn)\n"),
        Case(PRE + "fp8 = torch.float8_e4m3fnuz if is_rocm else torch.float8_e4m3fn\n"
             "y = torch.clamp(x, max=448).to(fp8)\n",
             PRE + "fp8 = torch.float8_e4m3fnuz if is_rocm else torch.float8_e4m3fn\n"
             "y = torch.clamp(x, max=int(torch.finfo(fp8).max)).to(fp8)\n"),
        Case(PRE + "FP8_E4M3_MAX = 448.0\n"),
        Case(PRE + "scale = amax / 448.0  # fp8 e4m3\nq = (x / scale).to(fp8_dtype)\nfp8_scale = amax / 448.0\n"),
        Case("import triton\nimport triton.language as tl\n\n@triton.jit\ndef k(x):\n"
             "    return tl.clamp(x, -448.0, 448.0).to(tl.float8e4nv)\n"),
    )

    def visit_Integer(self, node: cst.Integer) -> None:
        self._check(node)

    def visit_Float(self, node: cst.Float) -> None:
        self._check(node)

    def _check(self, node: cst.CSTNode) -> None:
        if not _FP8_MAX_LITERAL.fullmatch(node.value):
            return
        statement = statement_of(self, node)
        header = header_of(statement)
        if header is None or not mentions(header, _FP8_WORD, strings=False):
            return
        if self.gated(node) or self.fnuz_aware(node, statement):
            return
        message = ("448 is the maximum of float8_e4m3fn only: MI300 (gfx942) uses float8_e4m3fnuz, whose "
                   "maximum is 240")
        dtype = None if self.in_triton_kernel(node) else self._known_dtype(header)
        torch_name = self._torch_name(dtype) if dtype is not None else None
        if dtype is None or torch_name is None:
            self.display_only(node, message, "Use torch.finfo(dtype).max for the fp8 dtype in use")
            return
        text = f"{torch_name}.finfo({self.context.source(dtype)}).max"
        if isinstance(node, cst.Integer):
            text = f"int({text})"
        fix = Fix(Applicability.SAFE, "Take the maximum from the dtype", (self.context.replace(node, text),))
        self.report(node, message, fix=fix)

    def _known_dtype(self, header: cst.CSTNode) -> Optional[cst.CSTNode]:
        """The one dtype expression of the statement that is float8_e4m3fn on NVIDIA."""
        found: List[cst.CSTNode] = []
        for n in walk(header):
            if isinstance(n, cst.Attribute) and n.attr.value == "float8_e4m3fn" and self.is_name(n, E4M3FN):
                found.append(n)
            elif isinstance(n, cst.Name) and _FP8_WORD.search(n.value) and self._nvidia_e4m3fn(n):
                parent = self.parent(n)
                if not (isinstance(parent, cst.Attribute) and parent.attr is n):
                    found.append(n)
        sources = {self.context.source(f) for f in found}
        return found[0] if len(sources) == 1 else None

    def _nvidia_e4m3fn(self, name: cst.Name) -> bool:
        values = self.values(name)
        return bool(values) and all(self._e4m3fn_on_nvidia(v) for v in values)

    def _e4m3fn_on_nvidia(self, value: cst.CSTNode) -> bool:
        if isinstance(value, (cst.Attribute, cst.Name)):
            return self.is_name(value, E4M3FN)
        if isinstance(value, cst.IfExp):
            polarity = _rocm_polarity(value.test, self.context.gate_name)
            if polarity is None:
                return False
            nvidia = value.orelse if polarity else value.body
            return self._e4m3fn_on_nvidia(nvidia)
        return False

    def _torch_name(self, dtype: cst.CSTNode) -> Optional[str]:
        """How this file names the torch module: the root of ``torch.float8_e4m3fn`` as
        written, or a module-level ``import torch [as x]``."""
        if isinstance(dtype, cst.Attribute) and isinstance(dtype.value, cst.Name):
            return dtype.value.value
        facts = self.context.facts
        if facts is None:
            return None
        kinds, imports = facts.binding_kinds(), facts.binding_kinds_imports()
        candidates = sorted(n for n, full in imports.items() if full == {"torch"} and kinds.get(n) == {"import"})
        return "torch" if "torch" in candidates else (candidates[0] if candidates else None)


def _rocm_polarity(test: cst.CSTNode, gate: str) -> Optional[bool]:
    """True when ``test`` is true on ROCm (``is_rocm``, ``torch.version.hip``,
    ``torch.version.hip is not None``), False when it is true off ROCm (``not is_rocm``,
    ``... is None``), None when it cannot be told."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = _rocm_polarity(test.expression, gate)
        return None if inner is None else not inner
    if isinstance(test, cst.Name):
        return True if mentions_rocm(test, gate) else None
    if isinstance(test, cst.Attribute):
        return True if test.attr.value == "hip" or mentions_rocm(test.attr, gate) else None
    if isinstance(test, cst.Call) and not test.args:
        return _rocm_polarity(test.func, gate)
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and is_none(test.comparisons[0].comparator):
        inner = _rocm_polarity(test.left, gate)
        if inner is None:
            return None
        op = test.comparisons[0].operator
        return inner if isinstance(op, (cst.IsNot, cst.NotEqual)) else not inner
    return None
