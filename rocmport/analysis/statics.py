"""What an expression is by default: when no environment variable is set and a lookup finds
nothing, ``os.environ.get("X", "default")`` is ``"default"``. Facts, never findings.

``default_value(expr, names)`` reads a LibCST expression: a literal; ``os.environ.get(K[, D])``,
``os.getenv(K[, D])`` and ``<mapping>.get(K, D)`` (``D``, or None without one);
``os.environ[K]`` (unknown: it raises when unset); ``K in os.environ`` (False);
``==`` / ``!=`` / ``not`` / ``bool()`` / ``int()`` / ``str()`` / ``.lower()`` / ``.upper()`` /
``.strip()`` of what it knows; and a conditional expression whose test it knows. ``names``
are the qualified names of a node (a rule's resolver), to tell ``os.environ`` and ``os.getenv``
from look-alikes.
"""

from __future__ import annotations

from typing import Callable, Iterable, Tuple

import libcst as cst

from .syntax import literal_string

UNKNOWN = (False, None)
ENV_GET = frozenset({"os.environ.get", "os.getenv", "os.environ.setdefault"})
ENVIRON = frozenset({"os.environ"})
_TEXT_METHODS = ("lower", "upper", "strip", "casefold")


def default_value(expr: cst.BaseExpression, names: Callable[[cst.CSTNode], Iterable[str]],
                  depth: int = 0) -> Tuple[bool, object]:
    """(True, value) when ``expr`` has a known value while no environment variable is set and
    every ``.get`` misses, else (False, None)."""
    if depth > 8:
        return UNKNOWN
    text = literal_string(expr)
    if text is not None:
        return True, text
    if isinstance(expr, cst.Integer):
        return True, int(expr.value)
    if isinstance(expr, cst.Name) and expr.value in ("True", "False", "None"):
        return True, {"True": True, "False": False, "None": None}[expr.value]
    if isinstance(expr, cst.Call):
        return _call(expr, names, depth)
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
        known, value = default_value(expr.expression, names, depth + 1)
        return (True, not value) if known else UNKNOWN
    if isinstance(expr, cst.Comparison) and len(expr.comparisons) == 1:
        target = expr.comparisons[0]
        if isinstance(target.operator, (cst.In, cst.NotIn)) and set(names(target.comparator)) & ENVIRON:
            return True, isinstance(target.operator, cst.NotIn)  # nothing is set
        left, right = default_value(expr.left, names, depth + 1), default_value(target.comparator, names, depth + 1)
        if left[0] and right[0]:
            if isinstance(target.operator, (cst.Equal, cst.Is)):
                return True, left[1] == right[1]
            if isinstance(target.operator, (cst.NotEqual, cst.IsNot)):
                return True, left[1] != right[1]
        return UNKNOWN
    if isinstance(expr, cst.IfExp):
        known, test = default_value(expr.test, names, depth + 1)
        if known:
            return default_value(expr.body if test else expr.orelse, names, depth + 1)
    return UNKNOWN


def _call(call: cst.Call, names, depth: int) -> Tuple[bool, object]:
    func = call.func
    positional = [a for a in call.args if a.keyword is None and not a.star]
    default = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "default"), None)
    if isinstance(func, cst.Attribute) and func.attr.value == "get" or set(names(func)) & ENV_GET:
        if len(call.args) != len(positional) + (default is not None) or not 1 <= len(positional) <= 2:
            return UNKNOWN  # a ** splat, an odd keyword
        if len(positional) == 2:
            default = positional[1].value
        if default is None:
            return True, None
        return default_value(default, names, depth + 1)
    if isinstance(func, cst.Name) and func.value in ("bool", "int", "str", "float") and len(positional) == 1 \
            and len(call.args) == 1:
        known, value = default_value(positional[0].value, names, depth + 1)
        if not known:
            return UNKNOWN
        try:
            return True, {"bool": bool, "int": int, "str": str, "float": float}[func.value](value)
        except (TypeError, ValueError):
            return UNKNOWN
    if isinstance(func, cst.Attribute) and func.attr.value in _TEXT_METHODS and not call.args:
        known, value = default_value(func.value, names, depth + 1)
        if known and isinstance(value, str):
            return True, getattr(value, func.attr.value)()
    return UNKNOWN
