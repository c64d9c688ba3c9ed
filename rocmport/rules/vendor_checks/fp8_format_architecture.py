"""ROC705 fp8-format-architecture: `torch.float8_e4m3fn` / `tl.float8e4nv` hard-coded: MI300 uses the fnuz format.

The rule's documentation is its class's (`rocmport rule ROC705` prints it).
"""

from __future__ import annotations

from typing import Set

import libcst as cst

from rocmport.analysis.needs import Name
from rocmport.analysis.prescan import PREFILTER
from rocmport.analysis.syntax import dotted_name
from rocmport.findings import Applicability
from rocmport.rules.base import Case

from .common import E4M3FN, PRE, Fp8Rule, arch_doc, facts_doc, statement_of

TL_E4M3NV = frozenset({"triton.language.float8e4nv"})


class Fp8FormatIsArchitectureDependent(Fp8Rule):
    CODE = "ROC705"
    NAME = "fp8-format-architecture"
    SUMMARY = "`torch.float8_e4m3fn` / `tl.float8e4nv` hard-coded: MI300 uses the fnuz format."
    NEEDS = Name(*E4M3FN, *TL_E4M3NV)  # a reference to the format, read with its statement and the tests around it
    LOCAL = True
    FIX_APPLICABILITY = Applicability.DISPLAY_ONLY
    WHAT = """
        `torch.float8_e4m3fn` or Triton's `tl.float8e4nv` chosen as a dtype (assigned, passed,
        converted to). Not reported: comparisons that only inspect a dtype
        (`x.dtype == torch.float8_e4m3fn`), statements that also name the fnuz format or the
        architecture (`(torch.float8_e4m3fn, torch.float8_e4m3fnuz)`,
        `... if "gfx942" in arch else ...`), code under a ROCm test, strings and comments.
        """
    WHY = """
        fp8 on AMD depends on the architecture: MI300 (gfx942) computes in
        `float8_e4m3fnuz` (max 240, `tl.float8e4b8` in Triton), so e4m3fn tensors fail in
        hipBLASLt's scaled GEMMs or give wrong scales there, while MI350 and RDNA4 use
        e4m3fn like NVIDIA (10 threads, e.g. sglang#39628, DiffSynth-Studio#1528).

""" + facts_doc("fp8") + """

""" + arch_doc() + """
        """
    EXAMPLE = """
        x_fp8 = x.to(torch.float8_e4m3fn)
        """
    FIX = """
        Display-only: the right format depends on the GPU, not on ROCm alone. Choose it once,
        from the architecture, e.g.
        `torch.float8_e4m3fnuz if "gfx942" in torch.cuda.get_device_properties(0).gcnArchName
        else torch.float8_e4m3fn`, and derive maxima from it with `torch.finfo(dtype).max`.
        """
    VALID = (
        Case(PRE + "FP8 = (torch.float8_e4m3fn, torch.float8_e4m3fnuz)\n"),
        Case(PRE + "if x.dtype == torch.float8_e4m3fn:\n    pass\n"),
        Case(PRE + "dtype = torch.float8_e4m3fnuz if is_rocm else torch.float8_e4m3fn\n"),
        Case(PRE + "arch = torch.cuda.get_device_properties(0).gcnArchName\n"
             "dtype = torch.float8_e4m3fnuz if 'gfx942' in arch else torch.float8_e4m3fn\n"),
        Case(PRE + "# use torch.float8_e4m3fn\nname = 'torch.float8_e4m3fn'\n"),
        Case(PRE + "dtype = torch.float8_e5m2\n"),
    )
    INVALID = (
        Case(PRE + "y = x.to(torch.float8_e4m3fn)\n"),
        Case("import triton.language as tl\n\ndef k(x):\n    return x.to(tl.float8e4nv)\n"),
        Case("from torch import float8_e4m3fn as F8\nFP8_DTYPE = F8\n"),
    )

    @classmethod
    def may_match(cls, facts) -> bool:
        """``_check`` reports a reference that is not compared (an operand of a comparison,
        or an element of a tuple, list or set that is one, is skipped). On CPython's tree:
        an attribute named like a format that may resolve to one, or a name that may, when
        neither is such an operand. A name that may resolve to one but is also bound some
        other way, or an import from a module spelled with the format, decides nothing."""
        wanted = E4M3FN | TL_E4M3NV
        if not facts.may_reference(wanted):
            return False
        if facts.tree is None:
            return True
        import ast

        compared: Set[int] = set()

        def mark(node) -> None:
            compared.add(id(node))
            if type(node) in (ast.Tuple, ast.List, ast.Set):
                for element in node.elts:
                    mark(element)

        for node in facts.nodes(ast.Compare):
            for operand in (node.left, *node.comparators):
                mark(operand)
        lasts = {name.rsplit(".", 1)[-1] for name in wanted}
        for last in lasts:
            for node in facts.attributes.get(last, ()):
                if id(node) not in compared and facts.may_be(node, wanted):
                    return True
        if any(lasts & set((node.module or "").split(".")) for node in facts.nodes(ast.ImportFrom)):
            return True
        names = {name for name in facts.names if not facts.roots(name).isdisjoint(wanted)}
        if not names:
            return False
        if names & facts.other_bindings:
            return True
        roots = {id(node.value) for node in facts.nodes(ast.Attribute)}  # skipped by ``visit_Name``
        return any(node.id in names and id(node) not in compared and id(node) not in roots
                   for node in facts.nodes(ast.Name))

    def __init__(self, context):
        super().__init__(context)
        self._lines: Set[int] = set()
        facts = context.facts
        wanted = E4M3FN | TL_E4M3NV
        # a bare name is the format only where an import binds it to it (None: ask each)
        self._names = None if facts is None or not PREFILTER["enabled"] else {
            name for name, bound in facts.bindings.items() if not bound.isdisjoint(wanted)}

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value in ("float8_e4m3fn", "float8e4nv"):
            self._check(node)

    def visit_Name(self, node: cst.Name) -> None:
        if self._names is not None and node.value not in self._names:
            return
        parent = self.parent(node)
        if isinstance(parent, (cst.Attribute, cst.ImportAlias, cst.AsName)) or isinstance(parent, cst.Arg) and \
                parent.keyword is node:
            return
        if isinstance(parent, cst.AssignTarget):
            return
        self._check(node)

    def _check(self, node: cst.CSTNode) -> None:
        if not self.is_name(node, E4M3FN | TL_E4M3NV):
            return
        parent = self.parent(node)
        while isinstance(parent, (cst.Element, cst.Tuple, cst.List, cst.Set)):
            parent = self.parent(parent)  # `dtype in (torch.float8_e4m3fn, ...)`
        if isinstance(parent, (cst.Comparison, cst.ComparisonTarget)):
            return
        statement = statement_of(self, node)
        key = id(statement) if statement is not None else id(node)
        if key in self._lines:  # reported once per statement (asked first: a large table has many)
            return
        if self.gated(node) or self.fnuz_aware(node, statement):
            return
        self._lines.add(key)
        triton = "float8e4nv" in (dotted_name(node) or "") or self.is_name(node, TL_E4M3NV)
        fnuz = "tl.float8e4b8" if triton else "torch.float8_e4m3fnuz"
        self.display_only(node, f"MI300 (gfx942) uses the fnuz fp8 format ({fnuz}, max 240), not this one; "
                                "MI350 and RDNA4 use it: the format depends on the GPU architecture",
                          "Choose the fp8 dtype from gcnArchName (fnuz on gfx942) and derive its maximum "
                          "with torch.finfo(dtype).max")
