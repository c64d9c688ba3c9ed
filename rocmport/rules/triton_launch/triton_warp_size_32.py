"""ROC512 triton-warp-size-32: A warp size of 32 in arithmetic: AMD's CDNA wavefronts have 64 lanes.

The rule's documentation is its class's (`rocmport rule ROC512` prints it).
"""

from __future__ import annotations

import ast
import re
from typing import FrozenSet, List, Optional, Tuple

import libcst as cst

from rocmport.analysis import walk as _walk
from rocmport.analysis.needs import Import
from rocmport.analysis.triton import (
    TL,
    TritonAnalysis,
    analysis,
    int_value,
)
from rocmport.findings import Applicability, Fix
from rocmport.rules.base import Case

from .common import TritonRule

_WARP_NAME = re.compile(r"(?i)^_?(?:warp_?size|threads_per_warp)$")


def _ast_32(node, call: bool = True) -> bool:
    """CPython's tree of what ``int_value(...) == 32`` (``call``: or ``_is_32``) may accept:
    the literal 32, or a call whose one argument (a keyword's or a starred one's value
    too) is it."""
    if type(node) is ast.Constant:
        return type(node.value) is int and node.value == 32
    if call and type(node) is ast.Call and len(node.args) + len(node.keywords) == 1:
        arg = node.args[0] if node.args else node.keywords[0].value
        return _ast_32(arg.value if type(arg) is ast.Starred else arg, call=False)
    return False


class TritonWarpSize32(TritonRule):
    CODE = "ROC512"
    NAME = "triton-warp-size-32"
    SUMMARY = "A warp size of 32 in arithmetic: AMD's CDNA wavefronts have 64 lanes."
    TRIGGERS = ("warp", "WARP", "Warp")  # num_warps, or a name _WARP_NAME matches
    NEEDS = Import("triton")  # and the shapes of ``may_match``, which no need says
    WHAT = """
        `num_warps * 32` or `32 * num_warps` (also `config.num_warps * 32`), and a warp-size
        constant set to 32: `WARP_SIZE = 32`, `WARP_SIZE = tl.constexpr(32)`,
        `WARP_SIZE: tl.constexpr = 32` (a kernel parameter's default too; names such as
        `WARP_SIZE`, `warpsize`, `THREADS_PER_WARP`), in a file that uses Triton. Values
        chosen per platform (`64 if is_rocm else 32`) and code in ROCm branches are not
        findings.
        """
    WHY = """
        A Triton warp is a hardware wavefront: 32 lanes on NVIDIA and on AMD's RDNA GPUs
        (gfx10 and later), 64 on CDNA (MI100 to MI350, gfx9). Thread counts and per-lane
        tiling computed with 32 are wrong by half on CDNA: under-sized buffers, lanes that do
        no work, or wrong results where the value sizes a reduction.
        """
    EXAMPLE = """
        import triton

        def threads(num_warps):
            return num_warps * 32
        """
    FIX = """
        Display-only: take the device's warp size instead of 32
        (`torch.cuda.get_device_properties(device).warp_size` on torch 2.x with ROCm and
        CUDA, or `triton.runtime.driver.active.get_current_target().warp_size`). rocmport
        cannot tell which GPU the code runs on, so it does not pick 64.
        """
    FIX_APPLICABILITY = Applicability.DISPLAY_ONLY
    VALID = (
        Case("""
            import triton
            def threads(num_warps):
                return num_warps * 64
            """),
        Case("""
            import triton
            WARP_SIZE = 64 if is_rocm else 32
            """),
        Case("""
            import triton
            def f(num_warps, warp_size):
                return num_warps * warp_size
            """),
        Case("""
            import triton
            BLOCK_SIZE = 32
            x = rows * 32
            """),
        Case("""
            import triton
            # threads = num_warps * 32
            s = "num_warps * 32"
            """),
        Case("""
            import triton
            import torch
            if torch.version.hip:
                WARP_SIZE = 32
            """),
    )
    INVALID = (
        Case(
            """
            import triton
            def threads(num_warps):
                return num_warps * 32
            """,
            line=3,
            column=12,
            message=(
                "num_warps * 32 counts 32 threads per warp: a Triton warp is a 64-lane wavefront on AMD CDNA GPUs "
                "(MI200/MI300), 32 lanes on NVIDIA and RDNA; use the device's warp size"
            ),
        ),
        Case(
            """
            import triton
            import triton.language as tl
            WARP_SIZE = tl.constexpr(32)
            """,
            line=3,
            column=13,
            message=(
                "WARP_SIZE = 32: a Triton warp is a 64-lane wavefront on AMD CDNA GPUs (MI200/MI300), 32 lanes on "
                "NVIDIA and RDNA; use the device's warp size"
            ),
        ),
        Case(
            """
            import triton
            import triton.language as tl
            @triton.jit
            def k(p, WARP_SIZE: tl.constexpr = 32):
                pass
            """,
            line=4,
            column=36,
            message=(
                "WARP_SIZE = 32: a Triton warp is a 64-lane wavefront on AMD CDNA GPUs (MI200/MI300), 32 lanes on "
                "NVIDIA and RDNA; use the device's warp size"
            ),
        ),
        Case(
            """
            import triton
            def f(cfg):
                return 32 * cfg.num_warps
            """,
            line=3,
            column=12,
            message=(
                "num_warps * 32 counts 32 threads per warp: a Triton warp is a 64-lane wavefront on AMD CDNA GPUs "
                "(MI200/MI300), 32 lanes on NVIDIA and RDNA; use the device's warp size"
            ),
        ),
    )

    @classmethod
    def may_match(cls, facts) -> bool:
        """``visit_Module`` reports only the shapes of its ``_V``: a product of a literal 32
        and ``num_warps`` (a name or an attribute), and a warp-size name assigned, or given
        as a parameter default, a literal 32 or a one-argument call of one. The same shapes
        on CPython's tree (the call may be any), in a file that imports Triton."""
        names = facts.names | facts.other_bindings | set(facts.attributes)
        imports_triton = any(n == "triton" or n.startswith("triton.") for b in facts.bindings.values() for n in b)
        if not (imports_triton and ("num_warps" in names or any(_WARP_NAME.match(n) for n in names))):
            return False
        if facts.tree is None:
            return True
        for node in facts.nodes(ast.BinOp):
            if type(node.op) is ast.Mult:
                for this, other in ((node.left, node.right), (node.right, node.left)):
                    if _ast_32(this, call=False) and (
                            type(other) is ast.Name and other.id == "num_warps"
                            or type(other) is ast.Attribute and other.attr == "num_warps"):
                        return True
        for node in facts.nodes(ast.Assign, ast.AnnAssign):
            targets = node.targets if type(node) is ast.Assign else (node.target,)
            if _ast_32(node.value) and any(type(t) is ast.Name and _WARP_NAME.match(t.id) for t in targets):
                return True
        for node in facts.nodes(ast.arguments):
            positional = node.posonlyargs + node.args
            pairs = list(zip(positional[len(positional) - len(node.defaults):], node.defaults))
            pairs += zip(node.kwonlyargs, node.kw_defaults)  # None where one has no default
            if any(d is not None and _WARP_NAME.match(p.arg) and _ast_32(d) for p, d in pairs):
                return True
        return False

    @classmethod
    def reach(cls, facts) -> Optional[FrozenSet[str]]:
        """It reports a product with ``num_warps``, an assignment to a warp-size name or a
        parameter so named; the rest it reads is the node's ancestors (ROCm and foreign
        branches) and the names imports bind (``tl.constexpr``)."""
        names = facts.names | facts.other_bindings | set(facts.attributes)
        return frozenset({"num_warps"} | {name for name in names if _WARP_NAME.match(name)})

    def visit_Module(self, node: cst.Module) -> None:
        a = analysis(self.context)
        if a.foreign_file:
            return
        rule = self
        found: List[Tuple[cst.CSTNode, str]] = []

        class _V(cst.CSTVisitor):
            def visit_BinaryOperation(self, n: cst.BinaryOperation) -> None:
                if not isinstance(n.operator, cst.Multiply):
                    return
                for this, other in ((n.left, n.right), (n.right, n.left)):
                    if int_value(this) == 32 and rule._is_num_warps(other):
                        found.append((n, "num_warps * 32 counts 32 threads per warp"))
                        return

            def visit_Assign(self, n: cst.Assign) -> None:
                for target in n.targets:
                    if isinstance(target.target, cst.Name) and _WARP_NAME.match(target.target.value) \
                            and rule._is_32(a, n.value):
                        found.append((n.value, f"{target.target.value} = 32"))

            def visit_AnnAssign(self, n: cst.AnnAssign) -> None:
                if isinstance(n.target, cst.Name) and _WARP_NAME.match(n.target.value) and n.value is not None \
                        and rule._is_32(a, n.value):
                    found.append((n.value, f"{n.target.value} = 32"))

            def visit_Param(self, n: cst.Param) -> None:
                if _WARP_NAME.match(n.name.value) and n.default is not None and rule._is_32(a, n.default):
                    found.append((n.default, f"{n.name.value} = 32"))

        _walk.visit(node, _V())
        for where, what in found:
            if self.skipped(a, where):
                continue
            self.report(where, f"{what}: a Triton warp is a 64-lane wavefront on AMD CDNA GPUs (MI200/MI300), 32"
                               " lanes on NVIDIA and RDNA; use the device's warp size",
                        fix=Fix(Applicability.DISPLAY_ONLY, "Use the device's warp size"))

    @staticmethod
    def _is_num_warps(node: cst.CSTNode) -> bool:
        if isinstance(node, cst.Name):
            return node.value == "num_warps"
        return isinstance(node, cst.Attribute) and node.attr.value == "num_warps"

    @staticmethod
    def _is_32(a: TritonAnalysis, node: cst.CSTNode) -> bool:
        if int_value(node) == 32:
            return True
        return (isinstance(node, cst.Call) and len(node.args) == 1 and int_value(node.args[0].value) == 32
                and a.is_(node.func, {TL + "constexpr", TL + "core.constexpr"}))
