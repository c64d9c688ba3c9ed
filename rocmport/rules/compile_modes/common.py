"""Shared by the rules of the compile_modes family."""

from __future__ import annotations

import ast
import os
import re
from typing import Dict, Iterator, List, Optional, Set

import libcst as cst
from libcst.metadata import ParentNodeProvider, PositionProvider, QualifiedNameProvider

from rocmport.analysis import gates
from rocmport.analysis import needs as _needs
from rocmport.analysis import walk as _walk
from rocmport.analysis.bindings import dotted as _dotted
from rocmport.analysis.bindings import import_bindings, top_level
from rocmport.analysis.names import (
    COMPILE_CONFIG_NAMES,
    COMPILE_NAMES,
    PARTIAL_NAMES,
    is_module_compile_call,
    is_torch_compile,
    qualified_names,
)
from rocmport.analysis.platforms import ROCM
from rocmport.analysis.resolve import (
    call_arguments,
    callee_summary,
    dict_flow,
    function_summary,
)
from rocmport.analysis.syntax import dotted_name, keyword, literal_string
from rocmport.analysis.testing import parametrize_cases
from rocmport.findings import Applicability, Fix
from rocmport.rules.base import Rule
from rocmport.source import read_regular

ROCM_MODES = {"reduce-overhead": "default", "max-autotune": "max-autotune-no-cudagraphs"}
_TRIGGERS = ("compile", "CompileConfig", "reduce-overhead", "max-autotune", "cudagraphs")
_COMPILE_LAST = COMPILE_NAMES | PARTIAL_NAMES | COMPILE_CONFIG_NAMES
LIST_MODE_OPTIONS = frozenset({"torch._inductor.list_mode_options"})


def _may_call_project_function(facts) -> bool:
    """Could a call of this file hand a CUDA-graph mode or option to torch.compile through a
    function of the project (the index)? Only with something to hand on: a CUDA-graph mode
    literal, or a call whose callee ``callee_summary`` may resolve (a module-level name of
    this file, or a function of the project that the index knows, imported) with mode=,
    options= or ** (where a dict of the file holds a mode or options), or with a keyword
    about CUDA graphs."""
    index = facts.index
    if index is None:
        return False
    if not _needs.strings(facts).isdisjoint(ROCM_MODES):
        return True
    splat_ok = not _needs.dict_keys(facts).isdisjoint(("mode", "options")) or not _needs.stored_keys(facts).isdisjoint(
        ("mode", "options"))
    calls = []
    for call in _keyword_calls(facts):
        if splat_ok or any(k.arg in ("mode", "options") for k in call.keywords):
            calls.append((call, False))  # else only ** splats, and no dict of the file holds a mode or options
    if any("cudagraph" in k for k in _needs.keywords(facts)):
        calls += [(call, True) for call in facts.nodes(ast.Call)
                  if any(k.arg is not None and "cudagraph" in k.arg for k in call.keywords)]
    importer = None
    imports = None
    for call, graph_keyword in calls:
        spelled = _dotted(call.func)
        if spelled is None:
            continue
        root, _, attributes = spelled.partition(".")
        if graph_keyword and not attributes and facts.binding_kinds().get(root) == {"module"}:
            return True  # a function of this file (its own summary)
        if imports is None:
            imports = _module_imports(facts)
        for full in imports.get(root, ()):
            if full.startswith("."):
                if importer is None:
                    importer = index.module_name(facts.path or "") or ""
                level = len(full) - len(full.lstrip("."))
                base = index.absolute(importer, None, level)
                rest = full[level:]
                full = f"{base}.{rest}" if base and rest else (base or rest)
            if full and index.function(f"{full}.{attributes}" if attributes else full) is not None:
                return True
    return False


def _keyword_calls(facts) -> List[ast.Call]:
    """The calls with mode=, options= or a ** splat (computed once per file)."""
    found = facts.memo.get("compile_modes:keyword_calls")
    if found is None:
        found = facts.memo["compile_modes:keyword_calls"] = []
        for call in facts.nodes(ast.Call):
            for k in call.keywords:
                arg = k.arg
                if arg is None or arg == "mode" or arg == "options":
                    found.append(call)
                    break
    return found


def _imported_receiver(facts, call: ast.Call) -> bool:
    """Is ``call`` (``x.compile(...)``) rooted in a name that only imports run at module level
    (and other module-level statements) bind, one of those imports above the call? Its
    receiver then has an import among its qualified names wherever the call is, so
    ``is_module_compile_method`` does not take it for ``nn.Module.compile``
    (``triton.compile(...)``)."""
    spelled = _dotted(call.func.value)
    if spelled is None:
        return False
    root = spelled.partition(".")[0]
    kinds = facts.binding_kinds().get(root, set())
    if "import" not in kinds or not kinds <= {"import", "module"}:
        return False
    first = facts.memo.get("compile_modes:import_lines")
    if first is None:
        first = facts.memo["compile_modes:import_lines"] = {}
        for stmt in top_level(getattr(facts.tree, "body", ())):
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                for name, _full in import_bindings(stmt):
                    first[name] = min(first.get(name, stmt.lineno), stmt.lineno)
    return first.get(root, call.lineno) < call.lineno


def _module_imports(facts) -> Dict[str, Set[str]]:
    """name -> what imports bind to it: the absolute ones (``Facts.bindings``) and the
    relative ones run at module level (keeping their dots)."""
    out = {name: set(fulls) for name, fulls in facts.bindings.items()}
    for stmt in top_level(getattr(facts.tree, "body", ())):
        if isinstance(stmt, ast.ImportFrom) and stmt.level:
            for name, full in import_bindings(stmt):
                out.setdefault(name, set()).add(full)
    return out


def _may_hand_on(call: cst.Call) -> bool:
    """Can a call of an imported function hand a CUDA-graph mode or option on: a keyword
    about modes, options or CUDA graphs, a ** splat, a CUDA-graph mode literal or a True?"""
    for arg in call.args:
        if arg.star == "**":
            return True
        if arg.keyword is not None:
            word = arg.keyword.value.lower()
            if "mode" in word or "option" in word or "cudagraph" in word:
                return True
        value = arg.value
        leaves = [value.body, value.orelse] if isinstance(value, cst.IfExp) else [value]
        for leaf in leaves:
            if literal_string(leaf) in ROCM_MODES or (isinstance(leaf, cst.Name) and leaf.value == "True"):
                return True
    return False


def quote_of(original: str) -> str:
    """The quote a string literal's source opens with (a gated literal keeps it)."""
    return _quote(original)


_CPU = "cpu"


def _device_test(test: cst.BaseExpression) -> Optional[bool]:
    """True when a test means "the device is the CPU", False when it means "the device is
    not the CPU" (a GPU), None otherwise."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = _device_test(test.expression)
        return None if inner is None else not inner
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        target = test.comparisons[0]
        sides = (test.left, target.comparator)
        if any(literal_string(side) == _CPU for side in sides):
            if isinstance(target.operator, (cst.Equal, cst.Is)):
                return True
            if isinstance(target.operator, (cst.NotEqual, cst.IsNot)):
                return False
            if isinstance(target.operator, cst.In) and literal_string(test.left) == _CPU:
                return True
            if isinstance(target.operator, cst.NotIn) and literal_string(test.left) == _CPU:
                return False
    if isinstance(test, cst.Call) and (dotted_name(test.func) or "").endswith("cuda.is_available") and not test.args:
        return False
    return None


def _quote(original: str) -> str:
    match = re.match(r"^[rRuU]*('''|\"\"\"|'|\")", original)
    return match.group(1) if match else '"'


class CompileCalls(Rule):
    """Finds every call that hands a mode to torch.compile, in every spelling."""

    METADATA_DEPENDENCIES = (PositionProvider, ParentNodeProvider, QualifiedNameProvider)
    TRIGGERS = _TRIGGERS

    def __init__(self, context):
        super().__init__(context)
        self._wrappers: Dict[cst.Call, object] = {}  # calls of project functions -> their summary

    @classmethod
    def may_match(cls, facts) -> bool:
        found = facts.memo.get("compile_modes:may_match")  # the same answer for every rule of the family
        if found is None:
            found = facts.memo["compile_modes:may_match"] = cls._may_match(facts)
        return found  # type: ignore[return-value]

    @staticmethod
    def _may_match(facts) -> bool:
        # visit_Call below: a call with mode=, options= or ** whose callee is a ``.compile``
        # attribute or may resolve to torch.compile, functools.partial or CompileConfig.
        # functools.partial counts only when its first argument may be torch.compile.
        for call in _keyword_calls(facts):
            func = call.func
            if isinstance(func, ast.Attribute) and func.attr == "compile" and not _imported_receiver(facts, call):
                return True
            names = facts.qualified_names(func)
            if not names.isdisjoint(COMPILE_NAMES) or not names.isdisjoint(COMPILE_CONFIG_NAMES):
                return True
            if (not names.isdisjoint(PARTIAL_NAMES) and call.args and not isinstance(call.args[0], ast.Starred)
                    and not facts.qualified_names(call.args[0]).isdisjoint(COMPILE_NAMES)):
                return True
        # a function or partial of this file that forwards to torch.compile (its compile call
        # is above), else one of the project's, imported (the index)
        return _may_call_project_function(facts)

    def compile_call_kind(self, call: cst.Call) -> Optional[str]:
        """"compile", "partial" or "config" when ``call`` hands a mode to torch.compile."""
        func = call.func
        if is_torch_compile(self, func) or is_module_compile_call(self, call):
            return "compile"
        names = qualified_names(self, func, _COMPILE_LAST)
        if names & PARTIAL_NAMES and call.args and call.args[0].keyword is None and call.args[0].star == "":
            if is_torch_compile(self, call.args[0].value):
                return "partial"
        if names & COMPILE_CONFIG_NAMES:
            return "config"
        return None

    def argument(self, call: cst.Call, name: str) -> Iterator[cst.BaseExpression]:
        """The value of keyword ``name``, also inside a literal ``**{"name": value}`` or a
        dict variable splatted with ``**kw`` (built in the same scope); for a call of a
        project function (the index), the arguments that reach its ``name``."""
        summary = self._wrappers.get(call)
        if summary is not None:
            for value, _param in call_arguments(call, summary, name):
                yield value
            if summary.kw_flows.get(name) != name:
                return
        else:
            arg = keyword(call, name)
            if arg is not None:
                yield arg.value
        for a in call.args:
            if a.star == "**" and isinstance(a.value, cst.Dict) and summary is None:
                for element in a.value.elements:
                    if isinstance(element, cst.DictElement) and literal_string(element.key) == name:
                        yield element.value
            elif a.star == "**" and isinstance(a.value, cst.Name) and self._file_has_key(name):
                for key, value in dict_flow(self, a.value):
                    if key == name:
                        yield value

    def wrapper_parameter(self, call: cst.Call, value: cst.BaseExpression):
        """(summary, parameter or None) when ``value`` is an argument of a call of a project
        function; None for a direct compile call."""
        summary = self._wrappers.get(call)
        if summary is None:
            return None
        for target in ("mode", "options", "cudagraphs"):
            for found, param in call_arguments(call, summary, target):
                if found is value:
                    return summary, param
        return summary, None

    def mode_values(self, call: cst.Call) -> Iterator[cst.BaseExpression]:
        """What reaches the mode: ``mode=``, and the mode of ``options=list_mode_options(m)``
        (inductor's own table for a mode: handed to options=, it turns CUDA graphs back on)."""
        yield from self.argument(call, "mode")
        for value in self.argument(call, "options"):
            if (isinstance(value, cst.Call) and value.args and value.args[0].star == ""
                    and (qualified_names(self, value.func, LIST_MODE_OPTIONS) & LIST_MODE_OPTIONS)):
                first = value.args[0]
                yield first.value if first.keyword is None or first.keyword.value == "mode" else None

    def visit_Call(self, node: cst.Call) -> None:
        # Every rule of this family needs mode= or options= (or a ** dict), or a call of a
        # project function that forwards one: skip other calls before resolving any name.
        kind = None
        if any(a.star == "**" or (a.keyword is not None and a.keyword.value in ("mode", "options"))
               for a in node.args):
            kind = self.compile_call_kind(node)
        if kind is None and node.args and (_may_hand_on(node) or self._local_callee(node.func)):
            summary = callee_summary(self, node.func)
            if summary is not None:
                self._wrappers[node] = summary
                kind = "wrapper"
        if kind is None or self.in_rocm_branch(node) or self._disabled(node):
            return
        self.check_call(node, kind)

    def _disabled(self, call: cst.Call) -> bool:
        """``torch.compile(..., disable=True)`` (or a constant flag that is True): nothing is
        compiled, whatever the mode."""
        arg = keyword(call, "disable")
        return arg is not None and not gates.of(self.context).test(arg.value).false


    def _file_has_key(self, name: str) -> bool:
        """Does some dict of the file hold the key ``name`` (a display or ``d["name"] = ``)?
        Spares following a ``**kw`` (a scope analysis) where no dict could hold it."""
        facts = self.context.facts
        return (facts is None or name in _needs.dict_keys(facts) or name in _needs.stored_keys(facts)
                or name in _needs.keywords(facts))

    def _local_callee(self, func: cst.BaseExpression) -> bool:
        """A bare name bound only at module level (a function or partial of this file)."""
        facts = self.context.facts
        return (isinstance(func, cst.Name) and facts is not None
                and facts.binding_kinds().get(func.value) == {"module"})

    def in_cpu_branch(self, node: cst.CSTNode) -> bool:
        """True when ``node`` is only evaluated where the device is the CPU (``if device ==
        "cpu":``, ``x if dev.type == "cpu" else y``): inductor captures no CUDA graph there."""
        child = node
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, (cst.If, cst.IfExp)) and child is not ancestor.test:
                meaning = _device_test(ancestor.test)
                if meaning is not None:
                    if child is ancestor.body:
                        return meaning
                    return not meaning
            elif isinstance(ancestor, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                return False
            child = ancestor
        return False

    def parameter_of(self, leaf: cst.BaseExpression):
        """(function, Param) when ``leaf`` is a parameter of an enclosing function that the
        function never rebinds, else None."""
        if not isinstance(leaf, cst.Name):
            return None
        for ancestor in self.ancestors(leaf):
            if isinstance(ancestor, cst.Lambda):
                return None
            if isinstance(ancestor, cst.FunctionDef):
                params = ancestor.params
                for param in (list(params.posonly_params) + list(params.params) + list(params.kwonly_params)):
                    if param.name.value == leaf.value:
                        return (None if _rebinds(ancestor, leaf.value) else (ancestor, param))
                if _rebinds(ancestor, leaf.value):
                    return None
        return None

    def check_call(self, call: cst.Call, kind: str) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def mode_leaves(self, value: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
        """Leaves of a mode expression: both arms of ``a if c else b``, else the value."""
        if isinstance(value, cst.IfExp):
            yield from self.mode_leaves(value.body)
            yield from self.mode_leaves(value.orelse)
        else:
            yield value

    def gated_literal_fix(self, node: cst.BaseExpression, rocm_value: str, message: str) -> Fix:
        original = self.context.source(node)
        q = _quote(original)
        text = f"{q}{rocm_value}{q} if {self.context.gate_name} else {original}"
        parent = self.parent(node)
        if not isinstance(parent, (cst.Arg, cst.DictElement, cst.Param, cst.Assign, cst.AnnAssign, cst.Element)):
            text = f"({text})"
        return Fix(Applicability.SAFE, message, (self.context.replace(node, text),), ("gate",))


class LiteralMode(CompileCalls):
    MODE = ""

    def check_call(self, call: cst.Call, kind: str) -> None:
        for value in self.mode_values(call):
            if value is None:
                continue
            if kind == "wrapper" and mapped_inside(self, call, value):
                continue  # the project's wrapper maps the mode where it calls torch.compile (ROC104)
            for leaf in self.mode_leaves(value):
                if literal_string(leaf) == self.MODE and not self.in_rocm_branch(leaf) \
                        and not self.in_cpu_branch(leaf):
                    rocm = ROCM_MODES[self.MODE]
                    self.report(
                        leaf,
                        f'mode="{self.MODE}" turns on CUDA graphs, which hang or slow down on ROCm'
                        + self._advice(leaf, rocm),
                        fix=self.gated_literal_fix(leaf, rocm, f'Use mode="{rocm}" on ROCm'),
                    )

    def _advice(self, node: cst.CSTNode, rocm: str) -> str:
        """The message's advice: the fix's own, unless the code is not a port (a test of CUDA
        graphs, NVIDIA-only code): the engine then says what to do instead, and the message
        says one thing."""
        return "" if self.not_a_port(node) is not None else f'; use "{rocm}" there'

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        """A parameter default that the function hands to torch.compile's mode (directly,
        through ``list_mode_options`` or through a project function): the value is there."""
        summary = function_summary(self, node)
        if summary is None:
            return
        for param in params(node):
            if (summary.flows.get(param.name.value) == "mode" and param.default is not None
                    and literal_string(param.default) == self.MODE and not self.in_rocm_branch(param.default)):
                if self._mapped_by_roc104(node, param):
                    continue  # callers hand CUDA-graph modes too: ROC104 maps them all inside, the default with them
                rocm = ROCM_MODES[self.MODE]
                self.report(
                    param.default,
                    f'the default mode="{self.MODE}" of `{param.name.value}` reaches torch.compile and turns on'
                    f' CUDA graphs, which hang or slow down on ROCm' + self._advice(param.default, rocm),
                    fix=self.gated_literal_fix(param.default, rocm, f'Use mode="{rocm}" on ROCm'),
                )


def _mapped_by_roc104_impl(rule, node: cst.FunctionDef, param: cst.Param) -> bool:
    from rocmport.analysis import decisions
    from rocmport.analysis.resolve import module_name

    if not isinstance(rule.parent(node), cst.Module):
        return False
    module = module_name(rule)
    if decisions.forwards(rule.context, module, node.name.value, param.name.value) is None:
        return False
    enabled_for = rule.context.options.extra.get("enabled_for")
    if enabled_for is not None and "ROC104" not in enabled_for(rule.context.path):
        return False
    return bool(hazards_reaching(rule, module, node.name.value, param.name.value))


LiteralMode._mapped_by_roc104 = _mapped_by_roc104_impl


def params(node: cst.FunctionDef) -> List[cst.Param]:
    p = node.params
    return list(p.posonly_params) + list(p.params) + list(p.kwonly_params)


def _rebinds(function: cst.FunctionDef, name: str) -> bool:
    """Does the body of ``function`` (nested functions included) bind ``name`` again?"""
    found = False

    class _Finder(cst.CSTVisitor):
        def _target(self, target) -> None:
            nonlocal found
            for sub in _names_in(target):
                if sub == name:
                    found = True

        def visit_AssignTarget(self, n: cst.AssignTarget) -> None:
            self._target(n.target)

        def visit_AnnAssign(self, n: cst.AnnAssign) -> None:
            if n.value is not None:
                self._target(n.target)

        def visit_AugAssign(self, n: cst.AugAssign) -> None:
            self._target(n.target)

        def visit_For(self, n: cst.For) -> None:
            self._target(n.target)

        def visit_AsName(self, n: cst.AsName) -> None:
            self._target(n.name)

        def visit_NamedExpr(self, n: cst.NamedExpr) -> None:
            self._target(n.target)

        def visit_Global(self, n: cst.Global) -> None:
            self._names(n.names)

        def visit_Nonlocal(self, n: cst.Nonlocal) -> None:
            self._names(n.names)

        def visit_Del(self, n: cst.Del) -> None:
            self._target(n.target)

        def _names(self, items) -> None:
            nonlocal found
            if any(item.name.value == name for item in items):
                found = True

    _walk.visit(function.body, _Finder())
    return found


def _names_in(target: cst.CSTNode) -> Iterator[str]:
    if isinstance(target, cst.Name):
        yield target.value
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from _names_in(element.value)
    elif isinstance(target, cst.StarredElement):
        yield from _names_in(target.value)


# ------------------------------------------------------------------------------------------
# Fix at the source (issue 29): a mode stored where it is decided, and read by compile calls
# ------------------------------------------------------------------------------------------

# The places ROC105 gates where they stand, when the name says they hold a mode
DECLARED = ("class attribute", "attribute", "dict value", "argparse default", "constant")


def _is_test_file(rule) -> bool:
    from rocmport.analysis import testing

    ctx = rule.context
    return ctx.shared("compile_modes:test_file", lambda c: bool(
        c.facts is not None and testing.is_test_module(c.facts.tree, c.path)))


def stored_decisions(rule, leaf: cst.BaseExpression, depth: int = 0):
    """The project's decisions of the stored value a mode expression reads (``cfg.compile_mode``,
    ``cfg["compile_mode"]``, ``cfg.get("compile_mode")``, a module constant of the project, a
    local assigned once from one of those), else None."""
    from rocmport.analysis import decisions
    from rocmport.analysis.resolve import (
        assigned_values,
        imported_as,
        module_name,
        string_subscript,
    )

    if isinstance(leaf, cst.Attribute):
        if _library_object(rule, leaf.value):
            return None  # an object of a library's class: the library decides its value
        return decisions.attribute(rule.context, leaf.attr.value)
    sub = string_subscript(leaf)
    if sub is not None:
        return decisions.attribute(rule.context, sub[1])
    if (isinstance(leaf, cst.Call) and isinstance(leaf.func, cst.Attribute) and leaf.func.attr.value == "get"
            and leaf.args and literal_string(leaf.args[0].value) is not None and leaf.args[0].keyword is None):
        return decisions.attribute(rule.context, literal_string(leaf.args[0].value))
    if isinstance(leaf, cst.Name):
        facts = rule.context.facts
        kinds = facts.binding_kinds().get(leaf.value) if facts is not None else None
        if kinds == {"module"}:  # bound at module level only: a constant of this file (gated or not)
            return decisions.constant(rule.context, module_name(rule), leaf.value)
        elif kinds == {"import"}:
            full = imported_as(rule, leaf.value)
            if full and "." in full:
                module, _, name = full.rpartition(".")
                return decisions.constant(rule.context, module, name)
        if depth == 0 and hasattr(rule, "parameter_of") and rule.parameter_of(leaf) is None:
            values = assigned_values(rule, leaf)
            if len(values) == 1 and isinstance(values[0], (cst.Attribute, cst.Subscript, cst.Call)):
                return stored_decisions(rule, values[0], depth + 1)
    return None


def _library_object(rule, receiver: cst.BaseExpression) -> bool:
    """Is ``receiver`` (the ``cfg`` of ``cfg.compile_mode``) known to be an object of a class
    that no project file defines: a parameter annotated with, or a name assigned a call of, a
    class imported from outside the project (``TrainingArguments``)? The project's own
    decisions of the attribute's name are then not the ones that count."""
    from rocmport.analysis.resolve import assigned_values, imported_as, project_index

    if not isinstance(receiver, cst.Name):
        return False
    classes = []
    found = rule.parameter_of(receiver) if hasattr(rule, "parameter_of") else None
    if found is not None and found[1].annotation is not None:
        classes.append(found[1].annotation.annotation)
    elif found is None:
        classes += [v.func for v in assigned_values(rule, receiver) if isinstance(v, cst.Call)]
    index = project_index(rule)
    for spelled in classes:
        name = dotted_name(spelled)
        if name is None:
            continue
        root = name.partition(".")[0]
        full = imported_as(rule, root)
        if full is None:
            continue  # defined in this file, or not an import
        full = full + name[len(root):]
        module = full
        while module and index.path_of(module) is None:
            module = module.rpartition(".")[0]
        if not module:
            return True  # imported from no project module
    return False


def _hazard(value) -> bool:
    return isinstance(value, str) and value in ROCM_MODES


def _clean(value) -> bool:
    return value is None or (isinstance(value, str) and value not in ROCM_MODES)


def source_fix(rule, decisions, place) -> Optional[Applicability]:
    """How ROC105's fix of the stored mode at ``place`` (a hazard literal) applies: SAFE where
    every reader of the value in the project hands it to torch.compile's mode (or only shows
    it), and one does; UNSAFE where some reader also uses it for something else; None where
    none is a mode (nothing proves the value reaches a compile call: display-only), where the
    name does not say it holds a mode, or the place is not one ROC105 rewrites."""
    if not place.in_place or "mode" not in decisions.name.lower():
        return None
    if decisions.kind == "attribute" and decisions.name.lower() == "mode":
        return None  # `.mode` and `["mode"]` are read everywhere for other things: no proof by name
    readers = found_readers(rule, decisions)
    if not any(r.kind == "mode" for r in readers):
        return None
    if all(r.kind in ("mode", "shown", "truth") for r in readers):
        return Applicability.SAFE
    return Applicability.UNSAFE


def found_readers(rule, decisions):
    """The readers of ``decisions``, "stored" ones followed (``decisions.resolved``), once."""
    from rocmport.analysis.decisions import resolved

    return rule.context.shared(f"compile_modes:readers:{id(decisions)}", lambda c: resolved(c, decisions))


def other_readers(rule, decisions):
    """(readers that are neither a mode nor shown, readers that are a mode)."""
    readers = found_readers(rule, decisions)
    return ([r for r in readers if r.kind not in ("mode", "shown", "truth")],
            [r for r in readers if r.kind == "mode"])


def _roc105_on(rule, place) -> bool:
    """Is ROC105 on for the file of ``place``, the place not in NVIDIA-only code, and its line
    not suppressed (``# noqa``, ``# rocmport: noqa``)?"""
    from rocmport.suppression import for_python

    enabled_for = rule.context.options.extra.get("enabled_for")
    if enabled_for is not None and "ROC105" not in enabled_for(place.path):
        return False
    if place.nvidia_only:
        return False
    if rule.context.path and place.path and os.path.abspath(place.path) == os.path.abspath(rule.context.path):
        text = rule.context.text
    else:
        try:
            text = read_regular(place.path).decode("utf-8", "replace")
        except OSError:
            return False
    return not for_python(text).suppresses("ROC105", place.line)


def decided_elsewhere(rule, leaf: cst.BaseExpression) -> bool:
    """Is the mode that ``leaf`` reads decided where it is stored, and safe there once ROC105
    has gated it: every place that decides it (a default, a constant, an assignment, a
    keyword; in a test module only for a compile call in a test) holds no CUDA-graph mode, is
    gated on ROCm, or holds a CUDA-graph literal that ROC105 rewrites in place (its fix
    applies: on for that file, not suppressed, safe or unsafe fixes asked for)? Then the call
    site is left alone: one gate where the value is decided also covers the calls rocmport
    cannot see."""
    found = stored_decisions(rule, leaf)
    if found is None:
        return False
    return _decided(rule, found, 0)


def _decided(rule, found, depth: int) -> bool:
    from rocmport.analysis import decisions

    in_test = _is_test_file(rule)
    places = [p for p in found.places if in_test or not p.test_module]
    if not any(p.kind in DECLARED and p.value.kind in ("literal", "gated", "constant") for p in places):
        return False  # nothing in the project decides it (a library's configuration, a file read)
    unsafe_ok = rule.context.options.unsafe_fixes
    for place in places:
        value = place.value
        if value.kind == "gated" or (value.kind == "literal" and _clean(value.value)):
            continue
        if value.kind == "literal" and _hazard(value.value):
            applies = source_fix(rule, found, place)
            if applies is not None and (applies is Applicability.SAFE or unsafe_ok) and _roc105_on(rule, place):
                continue
            return False
        if value.kind == "constant" and depth < 2:
            module, name, literal = value.value
            if _clean(literal):
                continue
            if _hazard(literal) and _decided(rule, decisions.constant(rule.context, module, name), depth + 1):
                continue
        return False
    return True


# ------------------------------------------------------------------------------------------
# The project's own wrapper around torch.compile (issue 29): the mode is gated once inside it
# ------------------------------------------------------------------------------------------

def wrapper_of(rule, leaf: cst.BaseExpression):
    """(module, function, parameter, its default) when ``leaf`` (a compile call's mode) is a
    parameter of a module-level project function that hands it to torch.compile's mode, else
    None."""
    from rocmport.analysis.resolve import function_summary, module_name

    found = rule.parameter_of(leaf) if hasattr(rule, "parameter_of") else None
    if found is None:
        return None
    function, param = found
    if not isinstance(rule.parent(function), cst.Module):
        return None  # a method or a nested function: its callers are not followed by name
    summary = function_summary(rule, function)
    if summary is None or summary.flows.get(param.name.value) != "mode":
        return None
    return module_name(rule), function.name.value, param.name.value, param.default


def hazards_reaching(rule, module: str, function: str, param: str, depth: int = 0) -> Optional[List[str]]:
    """Where a CUDA-graph mode (or a value rocmport cannot tell) reaches ``param`` of the
    project function ``module.function`` from its callers in the project ("a.py:3
    "reduce-overhead"", "b.py:9 a value decided at run time"); None where no file of the
    project calls it (its callers are elsewhere). A caller's value that is decided, and gated
    by ROC105, where it is stored, or a parameter of a calling function whose own callers hand
    no CUDA-graph mode, is none."""
    from rocmport.analysis import decisions

    calls = decisions.arguments(rule.context, module, function, param)
    if not calls:
        return None
    out: List[str] = []
    for arg in calls:
        where = f"{os.path.basename(arg.path)}:{arg.line}"
        value = arg.value
        if value.kind == "gated" or (value.kind == "literal" and _clean(value.value)):
            continue
        if value.kind == "literal":
            out.append(f'{where} "{value.value}"' if _hazard(value.value) else f"{where} {value.value!r}")
            continue
        if value.kind == "constant":
            mod, name, literal = value.value
            if _clean(literal) or (_hazard(literal) and _decided(rule, decisions.constant(rule.context, mod, name), 1)):
                continue
            out.append(f'{where} "{literal}"' if _hazard(literal) else f"{where} {name}")
            continue
        if arg.read is not None:
            stored = decisions.attribute(rule.context, arg.read[1])
            if _decided(rule, stored, 1):
                continue
            offered = next((p.value.value for p in stored.places
                            if p.value.kind == "literal" and _hazard(p.value.value)), None)
            if offered is not None:
                out.append(f'{where} `{arg.read[1]}`, which may be "{offered}"')
                continue
        if arg.param is not None and depth < 2:
            caller, name, default = arg.param
            inner = hazards_reaching(rule, arg.module, caller, name, depth + 1) if caller else None
            default_ok = default.kind == "gated" or (default.kind == "literal" and _clean(default.value))
            if default_ok and not inner:
                continue  # the caller's own parameter, off by default, and no caller of it hands one
            if default.kind == "literal" and _hazard(default.value):
                out.append(f'{where} "{default.value}", the default of `{caller or name}`')
            out.extend(inner or ())
            if default.kind != "literal" and default.kind != "gated" and inner is None:
                out.append(f"{where} a value decided at run time")
            continue
        out.append(f"{where} a value decided at run time")
    return out


def mapped_inside(rule, call: cst.Call, value: cst.BaseExpression) -> bool:
    """Does the project function that ``call`` calls hand the argument ``value`` unchanged to
    a compile call's mode, where ROC104 maps it (on for that file, the line not suppressed):
    one gate inside the wrapper covers this caller and every other?"""
    from rocmport.analysis import decisions
    from rocmport.suppression import for_python

    found = rule.wrapper_parameter(call, value) if hasattr(rule, "wrapper_parameter") else None
    if found is None or found[1] is None or found[0].kind != "function":
        return False
    summary, param = found
    inside = decisions.forwards(rule.context, summary.module, summary.name, param)
    if inside is None or not hazards_reaching(rule, summary.module, summary.name, param):
        return False  # no compile call to map inside, or ROC104 would not map it there
    path, line = inside
    enabled_for = rule.context.options.extra.get("enabled_for")
    if enabled_for is not None and "ROC104" not in enabled_for(path):
        return False
    if os.path.abspath(path) == os.path.abspath(rule.context.path or ""):
        text = rule.context.text
    else:
        try:
            text = read_regular(path).decode("utf-8", "replace")
        except OSError:
            return False
    return not for_python(text).suppresses("ROC104", line)


# ------------------------------------------------------------------------------------------
# A test's parameter (`@pytest.mark.parametrize("mode", [None, "reduce-overhead"])`): the
# values are decided at the decorator, once for every test method that reads them
# ------------------------------------------------------------------------------------------

def parametrize_values(rule, holder: cst.CSTNode, name: str) -> Optional[List[cst.BaseExpression]]:
    """The values ``@<...>.parametrize("name", [...])`` on ``holder`` (a function, or a class
    whose methods take the parameter) gives ``name``, from a literal list or tuple (a tuple
    of values per case where several names are parametrized; ``pytest.param(v, ...)``
    read as ``v``); None where there is no such decorator, or its values are not literal."""
    for decorator in getattr(holder, "decorators", ()):
        found = parametrize_cases(decorator.decorator)
        if found is None or name not in found[0]:
            continue
        names, cases = found
        if cases is None:
            return None
        position = names.index(name)
        if any(position >= len(items) for items in cases):
            return None
        return [items[position] for items in cases]
    return None


def parametrized(rule, leaf: cst.BaseExpression):
    """(values, the decorated function or class) when ``leaf`` is a test parameter without a
    default that a ``parametrize`` of its function, or of the class of its method, gives."""
    found = rule.parameter_of(leaf) if hasattr(rule, "parameter_of") else None
    if found is None or found[1].default is not None:
        return None
    function, param = found
    holders = [function]
    block = rule.parent(function)
    owner = rule.parent(block) if block is not None else None
    if isinstance(owner, cst.ClassDef):
        holders.append(owner)
    for holder in holders:
        values = parametrize_values(rule, holder, param.name.value)
        if values is not None:
            return values, holder
    return None


def parameter_source_fix(rule, holder: cst.CSTNode, name: str) -> Optional[Applicability]:
    """ROC105's fix of a CUDA-graph mode among the values of the test parameter ``name``:
    SAFE where every read of the parameter in the test(s) hands it to torch.compile's mode
    (or shows it), UNSAFE where one also uses it otherwise, None where none is a mode."""
    from rocmport.analysis import decisions

    if "mode" not in name.lower():
        return None, None
    line = rule.context.position(holder).start.line
    found = rule.context.shared(f"compile_modes:parameter:{line}:{name}",
                                lambda c: decisions.parameter(c, line, name))
    return source_fix(rule, found, _InPlace()), found


class _InPlace:
    in_place = True


def decided_by_parametrize(rule, leaf: cst.BaseExpression) -> bool:
    """Is ``leaf`` a test parameter whose every value is no CUDA-graph mode, is gated, or is
    one that ROC105 gates at the decorator (its fix applies, the line not suppressed)?"""
    from rocmport.suppression import for_python

    found = parametrized(rule, leaf)
    if found is None:
        return False
    values, holder = found
    hazards = [v for v in values if literal_string(v) in ROCM_MODES]
    for value in values:
        text = literal_string(value)
        if value in hazards:
            continue
        if text is not None or (isinstance(value, cst.Name) and value.value in ("None", "False", "True")):
            continue
        if isinstance(value, cst.IfExp):
            test = gates.of(rule.context).test(value.test)
            if (ROCM in test.true) != (ROCM in test.false):
                continue  # gated on ROCm
        return False
    if not hazards:
        return True
    enabled_for = rule.context.options.extra.get("enabled_for")
    if enabled_for is not None and "ROC105" not in enabled_for(rule.context.path):
        return False
    applies, _ = parameter_source_fix(rule, holder, rule.parameter_of(leaf)[1].name.value)
    if applies is None or (applies is Applicability.UNSAFE and not rule.context.options.unsafe_fixes):
        return False
    suppressions = for_python(rule.context.text)
    return not any(suppressions.suppresses("ROC105", rule.context.position(v).start.line) for v in hazards)
