"""Qualified names: helpers on QualifiedNameProvider shared by rule families, and the
answers that follow from a file's import table alone (``import_names``), which spare most
files the provider."""

from __future__ import annotations

import builtins
import functools
from typing import TYPE_CHECKING, Any, List, Optional, Set, Tuple

import libcst as cst
from libcst.metadata import QualifiedName, QualifiedNameSource

if TYPE_CHECKING:  # pragma: no cover
    from .prescan import Facts


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

# torch.compile's own parameters: nn.Module.compile hands its keywords to it, so a ``.compile``
# call with any other keyword (Keras-style ``optimizer=``, ``loss=``) is another library's.
TORCH_COMPILE_KEYWORDS = frozenset({"model", "fullgraph", "dynamic", "backend", "mode", "options", "disable"})
_MODULE_BASES = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module"})


def is_module_compile_call(rule, call: cst.Call) -> bool:
    """``model.compile(...)`` that is ``nn.Module.compile``: ``is_module_compile_method``, and
    neither a keyword torch.compile does not take (``Trainer().compile(optimizer="adam")``)
    nor a receiver made from a class of this file that is no ``nn.Module`` (its bases, followed
    through the file's classes, never reach ``torch.nn.Module``; a base from elsewhere may)."""
    if not is_module_compile_method(rule, call.func):
        return False
    if any(a.keyword is not None and a.keyword.value not in TORCH_COMPILE_KEYWORDS for a in call.args):
        return False
    cls = _receiver_class(rule, call.func.value)
    return cls is None or _may_be_module(rule, cls, 0)


def _module_classes(rule) -> dict:
    return rule.context.shared("names:module-classes", lambda ctx: {
        stmt.name.value: stmt for stmt in ctx.module.body if isinstance(stmt, cst.ClassDef)})


def _receiver_class(rule, receiver: cst.BaseExpression) -> Optional[cst.ClassDef]:
    """The class of this file that ``receiver`` is an instance of: ``Trainer()``, or a name
    assigned only ``Trainer(...)`` in the function (or module) that reads it."""
    classes = _module_classes(rule)
    if isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Name):
        return classes.get(receiver.func.value)
    if not isinstance(receiver, cst.Name):
        return None
    scope = rule.context.module
    for ancestor in rule.ancestors(receiver):
        if isinstance(ancestor, cst.FunctionDef):
            scope = ancestor
            break
    found = None
    stack = [scope.body]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)) and node is not scope:
            continue
        if isinstance(node, (cst.Assign, cst.AnnAssign, cst.AugAssign)):
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
            if any(isinstance(t, cst.Name) and t.value == receiver.value for t in targets):
                value = getattr(node, "value", None)
                if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Name)
                        and value.func.value in classes) or (found is not None and found != value.func.value):
                    return None
                found = value.func.value
        stack.extend(node.children if not isinstance(node, (list, tuple)) else node)
    return classes.get(found) if found is not None else None


def _may_be_module(rule, cls: cst.ClassDef, depth: int) -> bool:
    if depth > 8:
        return True
    classes = _module_classes(rule)
    for base in cls.bases:
        if base.keyword is not None:
            continue
        value = base.value
        if isinstance(value, cst.Name) and value.value in classes and classes[value.value] is not cls:
            if _may_be_module(rule, classes[value.value], depth + 1):
                return True
            continue
        names = {q.name for q in rule.context.qualified_names(value)}
        if names & _MODULE_BASES or not names or not all(n.startswith("builtins.") for n in names):
            return True  # nn.Module, or a base from elsewhere that may be one
    return False


def import_names(node: cst.CSTNode, facts: "Facts", scopes: Any = None) -> Optional[Set[QualifiedName]]:
    """QualifiedNameProvider's answer for a dotted name that is read (not a name an import
    or a ``global`` statement binds), computed from the file's bindings (``Facts``) where
    they decide it; None where the provider must be asked. Decided: a root bound only by
    imports that agree (every binding in sight gives the same names), only at module level
    (its own name), only in functions or classes (names no rule looks for: none), or by
    nothing (a builtin, or no name). A root bound in several ways is decided by the scopes
    around the read (``scopes``, a ``_resolve.ScopeBindings``) where they can tell.
    ``tests/test_prescan.py`` compares both on a corpus."""
    if isinstance(node, (cst.Decorator, cst.FunctionDef, cst.ClassDef)):
        return None
    root, tail = _root_and_tail(node)
    if not isinstance(root, cst.Name):
        # ``(a - b).abs``: the provider spells the root "None", a builtin
        return {QualifiedName("builtins.None", QualifiedNameSource.BUILTIN)} if tail else set()
    name = root.value
    kinds = facts.binding_kinds().get(name)
    if not kinds:  # a builtin is named without the attributes after it
        return _module_names(name, tail, set(), facts)
    if kinds <= {"import", "inner import"}:
        imported = facts.binding_kinds_imports()[name]
        # every import in sight gives the same name (an import inside another function
        # than the reader's is not in sight: a NameError at run time, ignored)
        if kinds == {"import"} or len(imported) == 1:
            return {QualifiedName(full + tail, QualifiedNameSource.IMPORT) for full in imported}
    elif kinds == {"module"}:
        return _module_names(name, tail, kinds, facts)
    elif kinds <= {"function", "class"} and name not in _BUILTINS and not _ROOT_CLASSES & facts.class_roots():
        # Only names of a function's scope ("f.<locals>.x") or of a class ("A.x"), or none
        # where it is not bound: no rule looks for such a name (unless a class is named
        # like a module the rules know), so none is as good, and spares the provider.
        return set()
    if scopes is None or "other" in kinds:
        return None
    meaning = scopes.meaning(name, node, classes_bind="class" in kinds)
    if meaning is None:
        return None
    where, imported = meaning
    if where == "imports":
        return {QualifiedName(full + tail, QualifiedNameSource.IMPORT) for full in imported}
    if where == "local":
        # "f.<locals>.x": no rule looks for such a name. A builtin's name is left to the
        # provider, which reads it as the builtin before the local binding.
        return set() if name not in _BUILTINS else None
    return _module_names(name, tail, kinds & {"import", "module"}, facts)


def _module_names(name: str, tail: str, kinds: Set[str], facts: "Facts") -> Optional[Set[QualifiedName]]:
    """The provider's answer for ``name`` bound at module level in the ``kinds`` of ways
    ("import", "module"), or not at all there (a builtin, or nothing)."""
    if not kinds:  # a builtin is named without the attributes after it
        return {QualifiedName("builtins." + name, QualifiedNameSource.BUILTIN)} if name in _BUILTINS else set()
    if kinds == {"import"}:
        return {QualifiedName(full + tail, QualifiedNameSource.IMPORT) for full in facts.module_imports()[name]}
    if kinds == {"module"}:
        return {QualifiedName(name + tail, QualifiedNameSource.LOCAL)}
    return None


_ROOT_CLASSES = frozenset({"torch", "triton", "os", "subprocess", "asyncio", "functools", "transformers",
                           "builtins", "copy", "logging"})


# What LibCST's BuiltinScope holds: ``hasattr(builtins, name)``, which also answers for the
# module object's own attributes (``__dict__``, ``__class__``, ``__annotations__``).
_BUILTINS = frozenset(dir(builtins)) | frozenset(name for name in dir(type(builtins)) if hasattr(builtins, name))


def possible_names(node: cst.CSTNode, facts: "Facts"):
    """What ``node`` could resolve to under the file's import ``bindings``: its dotted name
    as ``libcst.helpers.get_full_name_for_node`` builds it, with the first part replaced by
    each qualified name an import binds to it (``_prescan`` gives the reasons)."""
    if isinstance(node, cst.Decorator):
        node = node.decorator
    root, tail = _root_and_tail(node)
    if not isinstance(root, cst.Name):
        return set()
    return facts.roots(root.value).with_tail(tail)


def _root_and_tail(node: cst.CSTNode) -> Tuple[cst.CSTNode, str]:
    """The root of a dotted name and the attributes after it, as
    ``libcst.helpers.get_full_name_for_node`` reads them (through attributes, the callee of a
    call, the value of a subscript): ``torch.cuda[0].graph(g)`` -> (``torch``, ".cuda.graph")."""
    rest: List[str] = []
    while True:
        if isinstance(node, cst.Attribute):
            rest.append(node.attr.value)
            node = node.value
        elif isinstance(node, cst.Call):
            node = node.func
        elif isinstance(node, cst.Subscript):
            node = node.value
        else:
            return node, "".join("." + part for part in reversed(rest))


@functools.lru_cache(maxsize=512)
def name_parts(names: frozenset):
    """(last components, all components) of dotted qualified names."""
    return (frozenset(n.rsplit(".", 1)[-1] for n in names),
            frozenset(part for n in names for part in n.split(".")))
