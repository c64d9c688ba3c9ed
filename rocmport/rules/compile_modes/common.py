"""Shared by the rules of the compile_modes family."""

from __future__ import annotations

import ast
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
from rocmport.analysis.resolve import (
    call_arguments,
    callee_summary,
    dict_flow,
    function_summary,
)
from rocmport.analysis.syntax import dotted_name, keyword, literal_string
from rocmport.findings import Applicability, Fix
from rocmport.rules.base import Rule

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
        if not isinstance(parent, (cst.Arg, cst.DictElement, cst.Param)):
            text = f"({text})"
        return Fix(Applicability.SAFE, message, (self.context.replace(node, text),), ("gate",))


class LiteralMode(CompileCalls):
    MODE = ""

    def check_call(self, call: cst.Call, kind: str) -> None:
        for value in self.mode_values(call):
            if value is None:
                continue
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
                rocm = ROCM_MODES[self.MODE]
                self.report(
                    param.default,
                    f'the default mode="{self.MODE}" of `{param.name.value}` reaches torch.compile and turns on'
                    f' CUDA graphs, which hang or slow down on ROCm' + self._advice(param.default, rocm),
                    fix=self.gated_literal_fix(param.default, rocm, f'Use mode="{rocm}" on ROCm'),
                )


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
