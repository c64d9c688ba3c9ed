"""Small data-flow helpers shared by the ROC2xx and ROC6xx rules (built on ScopeProvider).

They answer two questions about a ``Name`` that is read somewhere: which expressions were
assigned to it (``x = <value>`` in the scope the name resolves to), and where else the same
binding is read (to find ``x["key"] = value`` and ``x.update({...})`` that fill a dict).
Everything is best effort and bounded: an unknown answer is an empty list, never a guess.
"""

from __future__ import annotations

from typing import Iterator, List, Optional, Tuple

import libcst as cst
from libcst.metadata import ParentNodeProvider, ScopeProvider

from .base import literal_string


def _accesses(rule, name: cst.Name):
    scope = rule.get_metadata(ScopeProvider, name, None)
    if scope is None:
        return []
    try:
        return list(scope.accesses[name])
    except Exception:  # pragma: no cover - libcst raises for odd nodes
        return []


def _assignments(rule, name: cst.Name):
    out = []
    for access in _accesses(rule, name):
        for referent in access.referents:
            if hasattr(referent, "node") and referent not in out:
                out.append(referent)
    return out


def assigned_values(rule, name: cst.Name) -> List[cst.BaseExpression]:
    """Expressions bound to ``name`` by plain assignments (``name = value``,
    ``name: T = value``) of the binding(s) the read ``name`` refers to."""
    values: List[cst.BaseExpression] = []
    for assignment in _assignments(rule, name):
        node = assignment.node
        if not isinstance(node, cst.Name):
            continue
        parent = rule.get_metadata(ParentNodeProvider, node, None)
        if isinstance(parent, cst.AssignTarget):
            assign = rule.get_metadata(ParentNodeProvider, parent, None)
            if isinstance(assign, cst.Assign):
                values.append(assign.value)
        elif isinstance(parent, cst.AnnAssign) and parent.target is node and parent.value is not None:
            values.append(parent.value)
    return values


def binding_reads(rule, name: cst.Name) -> List[cst.Name]:
    """Every read of the binding(s) that ``name`` refers to (``name`` itself included)."""
    reads: List[cst.Name] = []
    for assignment in _assignments(rule, name):
        for access in getattr(assignment, "references", ()):
            node = access.node
            if isinstance(node, cst.Name) and node not in reads:
                reads.append(node)
    return reads


def string_subscript(node: cst.CSTNode) -> Optional[Tuple[cst.BaseExpression, str]]:
    """``(container, "key")`` for ``container["key"]``, else None."""
    if (isinstance(node, cst.Subscript) and len(node.slice) == 1
            and isinstance(node.slice[0].slice, cst.Index)):
        key = literal_string(node.slice[0].slice.value)
        if key is not None:
            return node.value, key
    return None


def dict_items(node: cst.BaseExpression) -> Iterator[Tuple[str, cst.BaseExpression]]:
    """``(key, value)`` for the literal-string keys of a dict display or ``dict(k=v)``."""
    if isinstance(node, cst.Dict):
        for element in node.elements:
            if isinstance(element, cst.DictElement):
                key = literal_string(element.key)
                if key is not None:
                    yield key, element.value
    elif isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "dict":
        for arg in node.args:
            if arg.keyword is not None:
                yield arg.keyword.value, arg.value
            elif arg.star == "**" and isinstance(arg.value, cst.Dict):
                yield from dict_items(arg.value)


def call_items(call: cst.Call) -> Iterator[Tuple[str, cst.BaseExpression]]:
    """``(key, value)`` handed to a mapping-style call such as ``d.update(...)`` or
    ``config.patch(...)``: a literal dict, keywords, a literal ``**{...}``."""
    for arg in call.args:
        if arg.keyword is not None:
            yield arg.keyword.value, arg.value
        elif arg.star == "**" and isinstance(arg.value, cst.Dict):
            yield from dict_items(arg.value)
        elif arg.star == "" and isinstance(arg.value, (cst.Dict, cst.Call)):
            yield from dict_items(arg.value)


def dict_flow(rule, value: cst.BaseExpression, depth: int = 0) -> Iterator[Tuple[str, cst.BaseExpression]]:
    """Keys and values that reach a dict expression: a dict display, ``dict(...)``, or a
    name bound to one, together with ``name["key"] = value`` and ``name.update(...)``."""
    if depth > 3:
        return
    if isinstance(value, (cst.Dict, cst.Call)):
        yield from dict_items(value)
        return
    if not isinstance(value, cst.Name):
        return
    for bound in assigned_values(rule, value):
        yield from dict_flow(rule, bound, depth + 1)
    for read in binding_reads(rule, value):
        parent = rule.get_metadata(ParentNodeProvider, read, None)
        grand = rule.get_metadata(ParentNodeProvider, parent, None) if parent is not None else None
        sub = string_subscript(parent) if parent is not None else None
        if sub is not None and sub[0] is read and isinstance(grand, cst.AssignTarget):
            assign = rule.get_metadata(ParentNodeProvider, grand, None)
            if isinstance(assign, cst.Assign):
                yield sub[1], assign.value
        elif (isinstance(parent, cst.Attribute) and parent.value is read and parent.attr.value == "update"
              and isinstance(grand, cst.Call) and grand.func is parent):
            yield from call_items(grand)


def paren(rule, node: cst.CSTNode, text: str) -> str:
    """``text`` in parentheses unless ``node`` is a whole assigned value, argument or dict
    value, where a conditional expression needs none."""
    parent = rule.get_metadata(ParentNodeProvider, node, None)
    if isinstance(parent, (cst.DictElement, cst.Assign, cst.AnnAssign, cst.Arg)):
        return text
    return f"({text})"


def operand(rule, node: cst.BaseExpression) -> str:
    """The source of ``node`` as the ``else`` arm of a conditional expression."""
    source = rule.context.source(node)
    if isinstance(node, (cst.Lambda, cst.NamedExpr, cst.Yield)) and not node.lpar:
        return f"({source})"
    return source


# ----------------------------------------------------------------------------------------
# The project index (rocmport.codemods._index), as rules see it from one file
# ----------------------------------------------------------------------------------------

def project_index(rule):
    """The project index of the run, or an index of this one file when it is linted alone."""
    ctx = rule.context
    if ctx.index is not None:
        return ctx.index
    from ._index import ProjectIndex

    return ctx.shared("own_index", lambda c: ProjectIndex([c.path]))


def module_name(rule) -> str:
    return rule.context.shared("module_name", lambda c: project_index(rule).module_name(c.path) or "__main__")


def own_summary(rule):
    """This file's summary, from its current text (a fix pass sees its own edits)."""
    ctx = rule.context

    def build(c):
        if c.facts is None or c.facts.tree is None:
            return None
        return project_index(rule).summary(module_name(rule), tree=c.facts.tree, path=c.path)

    return ctx.shared("own_summary", build)


def imported_as(rule, name: str) -> Optional[str]:
    """The absolute dotted name that a module-level import (the only binding of ``name``)
    binds to ``name``; relative imports resolved against this module."""
    facts = rule.context.facts
    if facts is None or facts.binding_kinds().get(name) != {"import"}:
        return None
    bound = facts.binding_kinds_imports().get(name, set())
    if len(bound) != 1:
        return None
    full = next(iter(bound))
    if full.startswith("."):
        level = len(full) - len(full.lstrip("."))
        base = project_index(rule).absolute(module_name(rule), None, level)
        rest = full[level:]
        if not base:
            return rest or None
        return f"{base}.{rest}" if rest else base
    return full


def callee_summary(rule, func: cst.BaseExpression):
    """The index's summary of the project function (or partial) a call's callee names: a
    module-level function or partial of this file, or one imported from the project
    (``wrap``, ``pkg.mod.wrap``, ``mod.wrap``); None otherwise."""
    from .base import dotted_name

    dotted = dotted_name(func)
    if dotted is None:
        return None
    root, _, rest = dotted.partition(".")
    facts = rule.context.facts
    if facts is None:
        return None
    kinds = facts.binding_kinds().get(root)
    if not rest and kinds == {"module"}:
        own = own_summary(rule)
        return own.functions.get(root) if own is not None else None
    full = imported_as(rule, root)
    if full is None:
        return None
    return project_index(rule).function(f"{full}.{rest}" if rest else full)


def constant_value(rule, node: cst.BaseExpression):
    """(True, value) when ``node`` names a literal constant of this module or of a project
    module (assigned once, at module level), else (False, None)."""
    from .base import dotted_name

    dotted = dotted_name(node)
    facts = rule.context.facts
    if dotted is None or facts is None:
        return False, None
    root, _, rest = dotted.partition(".")
    kinds = facts.binding_kinds().get(root)
    if not rest and kinds == {"module"}:
        own = own_summary(rule)
        if own is not None and root in own.constants:
            return True, own.constants[root]
        return False, None
    full = imported_as(rule, root)
    if full is None:
        return False, None
    found = project_index(rule).constant(f"{full}.{rest}" if rest else full)
    return (True, found[1]) if found is not None else (False, None)


def function_summary(rule, node: cst.FunctionDef):
    """This file's summary of a module-level function or a method of a module-level class."""
    own = own_summary(rule)
    if own is None:
        return None
    parent = rule.get_metadata(ParentNodeProvider, node, None)
    if isinstance(parent, cst.Module):
        found = own.functions.get(node.name.value)
        return found if found is not None and found.kind == "function" else None
    block = parent
    cls = rule.get_metadata(ParentNodeProvider, block, None) if block is not None else None
    if isinstance(cls, cst.ClassDef) and isinstance(rule.get_metadata(ParentNodeProvider, cls, None), cst.Module):
        return own.methods.get(f"{cls.name.value}.{node.name.value}")
    return None


def call_arguments(call: cst.Call, summary, target: str) -> Iterator[Tuple[cst.BaseExpression, Optional[str]]]:
    """(value, parameter) for the arguments of a call of a project function that reach
    ``target`` ("mode", "options", "cudagraphs"), also inside a literal ``**{...}``; the
    parameter is None for a keyword that the function takes through ``**kwargs``."""
    position = 0
    for arg in call.args:
        if arg.star == "*":
            break
        if arg.star == "**":
            if isinstance(arg.value, cst.Dict):
                for key, value in dict_items(arg.value):
                    if summary.target(key, None) == target:
                        yield value, (key if key in summary.keywords else None)
            continue
        if arg.keyword is not None:
            if summary.target(arg.keyword.value, None) == target:
                key = arg.keyword.value
                yield arg.value, (key if key in summary.keywords else None)
        else:
            if summary.target(None, position) == target:
                yield arg.value, summary.positional[position]
            position += 1
