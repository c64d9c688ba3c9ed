"""Name resolution helpers shared by rule families (built on QualifiedNameProvider)."""

from __future__ import annotations

from typing import Set

import libcst as cst
from libcst.metadata import QualifiedNameSource


COMPILE_NAMES = frozenset({"torch.compile", "torch.compiler.compile"})
PARTIAL_NAMES = frozenset({"functools.partial"})
# transformers' CompileConfig(mode=...) is handed to torch.compile by generate().
COMPILE_CONFIG_NAMES = frozenset({
    "transformers.CompileConfig",
    "transformers.generation.CompileConfig",
    "transformers.generation.configuration_utils.CompileConfig",
})


_LAST = COMPILE_NAMES | PARTIAL_NAMES | COMPILE_CONFIG_NAMES


def qualified_names(rule: cst.BatchableCSTVisitor, node: cst.CSTNode, last=None) -> Set[str]:
    """Qualified names of ``node``. With ``last``, resolved only when ``node`` could end in
    one of those qualified names (a cheap gate that spares most files the provider)."""
    if last is not None and not rule.context.may_resolve(node, last):
        return set()
    return {q.name for q in rule.context.qualified_names(node)}


def imported_names(rule: cst.BatchableCSTVisitor, node: cst.CSTNode) -> Set[str]:
    return {q.name for q in rule.context.qualified_names(node) if q.source is QualifiedNameSource.IMPORT}


def is_torch_compile(rule, func: cst.BaseExpression) -> bool:
    return bool(qualified_names(rule, func, _LAST) & COMPILE_NAMES)


def is_module_compile_method(rule, func: cst.BaseExpression) -> bool:
    """``model.compile(...)`` (nn.Module.compile): a ``.compile`` attribute whose receiver is
    not an imported module such as ``re`` or ``regex``."""
    if not isinstance(func, cst.Attribute) or func.attr.value != "compile":
        return False
    names = qualified_names(rule, func, _LAST)
    if names & COMPILE_NAMES:
        return False
    imported = imported_names(rule, func)
    return not imported
