"""Shared by the rules of the triton_launch family."""

from __future__ import annotations

import ast
import re
from typing import Optional, Set

import libcst as cst
from libcst.metadata import ParentNodeProvider, PositionProvider, QualifiedNameProvider

from rocmport.analysis.needs import Call, Decorator
from rocmport.analysis.syntax import ROCM_WORD, dotted_name
from rocmport.analysis.triton import (
    CONFIG_NAMES,
    KERNEL_DECORATORS,
    TritonAnalysis,
    analysis,
)
from rocmport.rules.base import Rule

WAVEFRONT = 64
# Kernels need a triton.jit / autotune / heuristics decorator, configs a triton.Config call
# (``TritonAnalysis._collect``).
KERNELS_OR_CONFIGS = Decorator(*KERNEL_DECORATORS) | Call(*CONFIG_NAMES)


class TritonRule(Rule):
    METADATA_DEPENDENCIES = (PositionProvider, ParentNodeProvider, QualifiedNameProvider)
    NEEDS = KERNELS_OR_CONFIGS

    def visit_Module(self, node: cst.Module) -> None:
        a = analysis(self.context)
        if a.foreign_file or not a.kernels and not a.configs and not a.subscript_calls:
            return
        self.check(a)

    def check(self, a: TritonAnalysis) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def skipped(self, a: TritonAnalysis, *nodes: Optional[cst.CSTNode]) -> bool:
        """Already gated on ROCm, or code for another accelerator."""
        for node in nodes:
            if node is None:
                continue
            if self.in_rocm_branch(node) or a.in_foreign_branch(node):
                return True
        return False

    def gated(self, node: cst.CSTNode, rocm_value: int) -> str:
        text = f"{rocm_value} if {self.context.gate_name} else {self.context.source(node)}"
        parent = self.parent(node)
        if isinstance(parent, (cst.Arg, cst.DictElement, cst.Assign, cst.AnnAssign, cst.Param)):
            return text
        return f"({text})"


# Triton's NVIDIA-only TLX extension (warp specialisation, named barriers), and the folders a
# kernel library keeps for NVIDIA alone (``kernels/nvidia/``, ``backend/_nvidia/``, beside ``amd/``).
_NVIDIA_ONLY_IMPORTS = ("triton.language.extra.tlx",)
_NVIDIA_FOLDER = re.compile(r"(?i)(?:^|[/\\])_?nvidia[/\\]")


def nvidia_only_file(context) -> bool:
    """A file whose Triton code does not run on ROCm: it lives in a folder for NVIDIA alone, or
    imports TLX at module level."""
    if _NVIDIA_FOLDER.search(context.path or ""):
        return True
    tree = context.facts.tree if context.facts is not None else None
    for node in getattr(tree, "body", ()):
        if isinstance(node, ast.Import) and any(a.name.startswith(_NVIDIA_ONLY_IMPORTS) for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and node.module and not node.level and (
                node.module.startswith(_NVIDIA_ONLY_IMPORTS)
                or any(f"{node.module}.{a.name}".startswith(_NVIDIA_ONLY_IMPORTS) for a in node.names)):
            return True
    return False


def in_rocm_named_assignment(rule: Rule, node: cst.CSTNode) -> bool:
    """``HIP_CONFIGS = [triton.Config(...)]``: a value bound to a name that says it is for ROCm."""
    for ancestor in rule.ancestors(node):
        if isinstance(ancestor, (cst.Assign, cst.AnnAssign)):
            targets = ancestor.targets if isinstance(ancestor, cst.Assign) else [ancestor]
            for target in targets:
                name = dotted_name(target.target)
                if name and ROCM_WORD.search(name.rsplit(".", 1)[-1]):
                    return True
        if isinstance(ancestor, cst.SimpleStatementLine):
            return False
    return False



STAGES_KERNEL = (
    "import triton\nimport triton.language as tl\n\n"
    "@triton.jit\ndef scale(x_ptr, n, BLOCK: tl.constexpr):\n"
    "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
    "    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)\n\n"
)



class TritonNameRule(Rule):
    """A rule that looks at names (imports, attributes, calls) rather than the kernels."""

    METADATA_DEPENDENCIES = (PositionProvider, ParentNodeProvider, QualifiedNameProvider)

    def qnames(self, node: cst.CSTNode, names) -> Set[str]:
        if not self.context.may_resolve(node, names):
            return set()
        return {q.name for q in self.context.qualified_names(node)} & names

    def foreign(self, node: cst.CSTNode) -> bool:
        a = analysis(self.context)
        return a.foreign_file or self.in_rocm_branch(node) or a.in_foreign_branch(node)
