"""Small questions about LibCST nodes that rules and analyses share: a literal string's value,
a dotted name, a keyword argument, whether an expression tests for a ROCm build.
"""

from __future__ import annotations

import re
from typing import Optional

import libcst as cst

from . import walk as _walk

# ----------------------------------------------------------------------------------------
# Helpers shared by rule families
# ----------------------------------------------------------------------------------------

ROCM_WORD = re.compile(r"(?i)(?:^|_)(?:rocm|hip|amd)(?:_|$|\d)")


def mentions_rocm(node: cst.CSTNode, gate_name: str = "is_rocm") -> bool:
    """True when an expression tests for a ROCm build: ``torch.version.hip``, a name such
    as ``is_rocm`` / ``IS_HIP`` / ``is_hip()`` / ``on_amd``, or rocmport's own gate."""
    found = False
    gate_word = gate_name.partition("(")[0].rpartition(".")[2]  # "utils.is_rocm()": is_rocm

    class _Finder(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> bool:
            nonlocal found
            if n.value == gate_word or ROCM_WORD.search(n.value):
                found = True
            return False

        def visit_SimpleString(self, n: cst.SimpleString) -> bool:
            return False

    _walk.visit(node, _Finder())
    return found


def literal_string(node: cst.CSTNode) -> Optional[str]:
    """The value of a plain (non-f, non-bytes) string literal, else None."""
    if isinstance(node, cst.SimpleString):
        prefix = node.prefix.lower()
        if "b" in prefix or "f" in prefix:
            return None
        raw = node.raw_value
        if "\\" not in raw and "\r" not in raw:  # nothing to unescape (a CR would read as a newline)
            return raw
        try:
            value = node.evaluated_value
        except Exception:  # pragma: no cover - malformed escape
            return None
        return value if isinstance(value, str) else None
    if isinstance(node, cst.ConcatenatedString):
        left, right = literal_string(node.left), literal_string(node.right)
        if left is None or right is None:
            return None
        return left + right
    return None


def dotted_name(node: cst.CSTNode) -> Optional[str]:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = dotted_name(node.value)
        return None if base is None else f"{base}.{node.attr.value}"
    return None


def keyword(call: cst.Call, name: str) -> Optional[cst.Arg]:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    return None


# ----------------------------------------------------------------------------------------
# Fix text: a value gated on the ROCm test, as the project's linters want it written
# ----------------------------------------------------------------------------------------

def negated_gate(gate: str) -> str:
    """The ROCm test ``gate`` negated, in the form its own spelling takes: ``not is_rocm``,
    ``not utils.is_rocm()``, ``torch.version.hip is None`` for ``torch.version.hip is not
    None`` (no ``not (a is not b)``, which ruff's SIM201/E714 family flags)."""
    if gate.endswith(" is not None"):
        return gate[: -len(" is not None")] + " is None"
    if gate.endswith(" is None"):
        return gate[: -len(" is None")] + " is not None"
    return f"not {gate}"


def gated_text(rocm: str, gate: str, original: str) -> str:
    """``<rocm> if <gate> else <original>``, except where a linter would rewrite it: a
    boolean chosen by the test itself is the test (ruff's SIM211 ``False if g else True`` ->
    ``not g``; SIM210 ``True if g else False`` -> ``g``; every ROCm test rocmport uses is a
    bool). The text is an expression of the same precedence as a conditional expression or
    tighter (``not``, a comparison): where the caller parenthesises the one, it does the
    other."""
    if rocm == "False" and original == "True":
        return negated_gate(gate)
    if rocm == "True" and original == "False":
        return gate
    return f"{rocm} if {gate} else {original}"
