"""ROC706 fp8-max-constant: 448 hard-coded as the fp8 maximum: it is 240 for MI300's fnuz format.

The rule's documentation is its class's (`rocmport rule ROC706` prints it).
"""

from __future__ import annotations

import re
from typing import List, Optional

import libcst as cst

from rocmport.analysis import gates
from rocmport.analysis.needs import Number
from rocmport.analysis.platforms import CUDA
from rocmport.analysis.syntax import dotted_name, mentions_rocm
from rocmport.findings import Applicability, Fix
from rocmport.rules.base import Case

from .common import (
    E4M3FN,
    Fp8Rule,
    facts_doc,
    header_of,
    is_none,
    mentions,
    statement_of,
    walk,
)

_FP8_WORD = re.compile(r"(?i)fp8|float8|e4m3|f8e4|f8_e4")
_FP8_MAX_LITERAL = re.compile(r"448(?:\.0*)?")
# A name that may hold a maximum or a scale: not ``D_NOPE``, ``image_size``, ``hidden``
_MAX_WORD = re.compile(r"(?i)max|min|fp8|float8|e4m3|f8|range|limit|clip|clamp|bound|scale|val|lim|sat|fmt|dtype")


class Fp8MaxConstant(Fp8Rule):
    CODE = "ROC706"
    NAME = "fp8-max-constant"
    SUMMARY = "448 hard-coded as the fp8 maximum: it is 240 for MI300's fnuz format."
    # Only ``visit_Integer`` / ``visit_Float`` report, on a literal that spells 448
    # (``_FP8_MAX_LITERAL``); the dtype it reads is its statement's, or a name's value in the
    # same function or at module level.
    NEEDS = Number(448)
    LOCAL = True
    BY_FILE_NAME = False
    FIX_APPLICABILITY = Applicability.SAFE
    WHAT = """
        The literal `448` (or `448.0`) in a statement about fp8: one that names fp8 in an
        identifier (`fp8`, `float8`, `e4m3`: `FP8_MAX = 448.0`, `x.clamp(-448, 448).to(fp8_dtype)`,
        `fp8_max=448`). Not reported: 448 elsewhere (an image size, a head dimension such as
        `D_NOPE=448` in a call about fp8), in strings or comments, in statements that already
        name the fnuz format or the architecture, 448 already chosen for e4m3fn only
        (`448.0 if dtype == torch.float8_e4m3fn else 57344.0`, `if dtype is
        torch.float8_e4m3fn: fp8_max = 448.0`: exactly right on every GPU, so no fix either),
        code for NVIDIA GPUs only (as ROC705 reads it), and under a ROCm test. A file's name
        decides nothing.
        """
    WHY = """
        448 is the maximum of `float8_e4m3fn`. MI300 (gfx942) uses `float8_e4m3fnuz`, whose
        maximum is 240: scaling to 448 overflows it, giving NaNs or saturated values (10
        threads, e.g. sglang#39628, DiffSynth-Studio#1528).

""" + facts_doc("fp8") + """
        """
    EXAMPLE = """
        fp8_dtype = torch.float8_e4m3fnuz if uses_fnuz() else torch.float8_e4m3fn
        y = (x / scale).clamp(-448.0, 448.0).to(fp8_dtype)
        """
    FIXED_EXAMPLE = """
        fp8_dtype = torch.float8_e4m3fnuz if uses_fnuz() else torch.float8_e4m3fn
        y = (x / scale).clamp(-torch.finfo(fp8_dtype).max, torch.finfo(fp8_dtype).max).to(fp8_dtype)
        """
    FIX = """
        Safe when the statement names the dtype and that dtype is `float8_e4m3fn` on NVIDIA:
        `torch.float8_e4m3fn` itself, or a name whose every assignment in the file is
        `torch.float8_e4m3fn` or a conditional on ROCm or on an AMD architecture whose NVIDIA
        arm is (`torch.float8_e4m3fnuz if uses_fnuz() else torch.float8_e4m3fn`; a vendor test
        there is ROC711's finding, the maximum follows the dtype either way). `448.0` becomes
        `torch.finfo(dtype).max` and `448` becomes `int(torch.finfo(dtype).max)`: on NVIDIA
        exactly 448.0 / 448 as before; with an fnuz dtype, 240. Not inside a Triton kernel
        (`torch.finfo` is not available there). Otherwise display-only: use
        `torch.finfo(dtype).max` for the dtype in use.
        """
    VALID = (
        Case("""
            image_size = 448
            """),
        Case("""
            import torch
            FP8_MAX = torch.finfo(torch.float8_e4m3fn).max
            """),
        Case("""
            import torch
            FP8_MAX = 240.0 if is_rocm else 448.0
            """),
        Case("""
            import torch
            # FP8_MAX = 448.0
            s = 'fp8 max 448'
            """),
        Case("""
            import torch
            fp8_max = 240.0 if 'gfx942' in arch else 448.0
            """),
        Case("""
            import torch
            resize(img, 448).to(torch.float32)
            """),
        # 448 already chosen for e4m3fn: right on every GPU, and no fix
        Case("""
            import torch
            def fp8_max(fp8_type):
                return 448.0 if fp8_type == torch.float8_e4m3fn else 57344.0
            def limit(fp8_dtype):
                if fp8_dtype is torch.float8_e4m3fn:
                    fp8_max = 448.0
                return fp8_max
            """),
        # a head dimension in a call about fp8; code for NVIDIA GPUs only
        Case("""
            import torch
            flatten_kv(fp8_nope_ptr, fp8_scale_ptr, D_NOPE=448, D_ROPE=64)
            def quant_sm90(x):
                return x.clamp(-448.0, 448.0).to(torch.float8_e4m3fn)
            """),
    )
    INVALID = (
        Case(
            """
            import torch
            y = x.clamp(-448.0, 448.0).to(torch.float8_e4m3fn)
            """,
            expected="""
            import torch
            y = x.clamp(-torch.finfo(torch.float8_e4m3fn).max, torch.finfo(torch.float8_e4m3fn).max).to(torch.float8_e4m3fn)
            """,
            line=2,
            column=14,
            message=(
                "448 is the maximum of float8_e4m3fn only: MI300 (gfx942) uses float8_e4m3fnuz, whose maximum is 240"
            ),
        ),
        Case(
            """
            import torch
            fp8 = torch.float8_e4m3fnuz if is_rocm else torch.float8_e4m3fn
            y = torch.clamp(x, max=448).to(fp8)
            """,
            expected="""
            import torch
            fp8 = torch.float8_e4m3fnuz if is_rocm else torch.float8_e4m3fn
            y = torch.clamp(x, max=int(torch.finfo(fp8).max)).to(fp8)
            """,
            line=3,
            column=24,
            message=(
                "448 is the maximum of float8_e4m3fn only: MI300 (gfx942) uses float8_e4m3fnuz, whose maximum is 240"
            ),
        ),
        Case(
            """
            import torch
            FP8_E4M3_MAX = 448.0
            """,
            line=2,
            column=16,
            message=(
                "448 is the maximum of float8_e4m3fn only: MI300 (gfx942) uses float8_e4m3fnuz, whose maximum is 240"
            ),
        ),
        Case(
            """
            import torch
            scale = amax / 448.0  # fp8 e4m3
            q = (x / scale).to(fp8_dtype)
            fp8_scale = amax / 448.0
            """,
            line=4,
            column=20,
            message=(
                "448 is the maximum of float8_e4m3fn only: MI300 (gfx942) uses float8_e4m3fnuz, whose maximum is 240"
            ),
        ),
        Case(
            """
            import triton
            import triton.language as tl

            @triton.jit
            def k(x):
                return tl.clamp(x, -448.0, 448.0).to(tl.float8e4nv)
            """,
            line=6,
            column=25,
            message=(
                "448 is the maximum of float8_e4m3fn only: MI300 (gfx942) uses float8_e4m3fnuz, whose maximum is 240"
            ),
        ),
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
        if self.gated(node) or self.fnuz_aware(node, statement) or gates.of(self.context).nvidia_only(node):
            return
        if self._chosen_per_format(node) or self._not_a_maximum(node):
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

    def _chosen_per_format(self, node: cst.CSTNode) -> bool:
        """448 already chosen for float8_e4m3fn: ``448.0 if dtype == torch.float8_e4m3fn else
        57344.0``, ``if dtype is torch.float8_e4m3fn: fp8_max = 448.0``. Exactly right on every
        GPU (the fnuz dtype takes the other side), so neither a finding nor a fix."""
        child = node
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, (cst.If, cst.IfExp)) and child is not ancestor.test:
                sign = self._e4m3fn_test(ancestor.test)
                if sign is not None and (child is ancestor.body) == sign:
                    return True
            if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef)):
                return False
            child = ancestor
        return False

    def _e4m3fn_test(self, test: cst.CSTNode) -> Optional[bool]:
        """True for ``x == torch.float8_e4m3fn`` / ``is`` / ``in (...)``, False for ``!=`` /
        ``is not``; None for any other test."""
        if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
            return None
        target = test.comparisons[0]
        operands = [test.left, target.comparator]
        if not any(self.is_name(n, E4M3FN) for o in operands for n in walk(o)
                   if isinstance(n, (cst.Attribute, cst.Name))):
            return None
        if isinstance(target.operator, (cst.Equal, cst.Is, cst.In)):
            return True
        if isinstance(target.operator, (cst.NotEqual, cst.IsNot, cst.NotIn)):
            return False
        return None

    def _not_a_maximum(self, node: cst.CSTNode) -> bool:
        """448 bound to a name that says it is something else: ``D_NOPE=448`` (a head
        dimension) in a call about fp8, ``image_size = 448``."""
        parent = self.parent(node)
        name = None
        if isinstance(parent, cst.Arg) and parent.keyword is not None:
            name = parent.keyword.value
        elif isinstance(parent, (cst.Assign, cst.AnnAssign)):
            targets = [t.target for t in parent.targets] if isinstance(parent, cst.Assign) else [parent.target]
            names = [dotted_name(t) for t in targets]
            name = names[0] if len(names) == 1 else None
        elif isinstance(parent, cst.Param):
            name = parent.name.value
        return name is not None and not _MAX_WORD.search(name)

    def _known_dtype(self, header: cst.CSTNode) -> Optional[cst.CSTNode]:
        """The one dtype expression of the statement that is float8_e4m3fn on NVIDIA (not one
        that a comparison only inspects)."""
        found: List[cst.CSTNode] = []
        compared = {id(n) for c in walk(header) if isinstance(c, cst.Comparison) for n in walk(c)}
        for n in walk(header):
            if id(n) in compared:
                continue
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
            test = gates.of(self.context).test(value.test)  # `is_rocm`, `uses_fnuz()`, `"gfx94" in arch`
            polarity = _rocm_polarity(value.test, self.context.gate_name)
            if CUDA not in test.true or polarity is True:
                nvidia = value.orelse
            elif CUDA not in test.false or polarity is False:
                nvidia = value.body
            else:
                return False
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
