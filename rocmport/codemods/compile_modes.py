"""ROC1xx: ``torch.compile`` modes that use CUDA graphs.

``mode="reduce-overhead"`` turns ``triton.cudagraphs`` on, and so does ``"max-autotune"``
(its no-graphs twin is ``"max-autotune-no-cudagraphs"``). A mode overrides global config, so
the call site itself must be rewritten; ``mode=`` and ``options=`` together raise, so a fix
never adds ``options=``.
"""

from __future__ import annotations

import ast
import re
from typing import Dict, Iterator, List, Optional, Set

import libcst as cst
from libcst.metadata import ParentNodeProvider, PositionProvider, QualifiedNameProvider

from rocmport.findings import Applicability, Fix

from . import _walk
from ._bindings import dotted as _dotted
from ._bindings import import_bindings, top_level
from ._torch import (COMPILE_CONFIG_NAMES, COMPILE_NAMES, PARTIAL_NAMES, is_module_compile_method,
                     is_torch_compile, qualified_names)
from ._resolve import call_arguments, callee_summary, constant_value, dict_flow, function_summary
from .base import Case, Rule, dotted_name, keyword, literal_string, mentions_rocm

ROCM_MODES = {"reduce-overhead": "default", "max-autotune": "max-autotune-no-cudagraphs"}
MODE_MAPPER = "rocmport_compile_mode"
GRAPH_HELPER = "rocmport_cudagraph"
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
    if not facts.strings.isdisjoint(ROCM_MODES):
        return True
    splat_ok = not facts.dict_keys.isdisjoint(("mode", "options")) or not facts.stored_keys.isdisjoint(
        ("mode", "options"))
    calls = []
    for call in facts.keyword_calls:
        if splat_ok or any(k.arg in ("mode", "options") for k in call.keywords):
            calls.append((call, False))  # else only ** splats, and no dict of the file holds a mode or options
    if any("cudagraph" in k for k in facts.keywords):
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


class _CompileCalls(Rule):
    """Finds every call that hands a mode to torch.compile, in every spelling."""

    METADATA_DEPENDENCIES = (PositionProvider, ParentNodeProvider, QualifiedNameProvider)
    TRIGGERS = _TRIGGERS

    def __init__(self, context):
        super().__init__(context)
        self._wrappers: Dict[cst.Call, object] = {}  # calls of project functions -> their summary

    @classmethod
    def may_match(cls, facts) -> bool:
        # visit_Call below: a call with mode=, options= or ** whose callee is a ``.compile``
        # attribute or may resolve to torch.compile, functools.partial or CompileConfig.
        # functools.partial counts only when its first argument may be torch.compile.
        for call in facts.keyword_calls:
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
        if is_torch_compile(self, func) or is_module_compile_method(self, func):
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
        if kind is None or self.in_rocm_branch(node):
            return
        self.check_call(node, kind)


    def _file_has_key(self, name: str) -> bool:
        """Does some dict of the file hold the key ``name`` (a display or ``d["name"] = ``)?
        Spares following a ``**kw`` (a scope analysis) where no dict could hold it."""
        facts = self.context.facts
        return facts is None or name in facts.dict_keys or name in facts.stored_keys or name in facts.keywords

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


class _LiteralMode(_CompileCalls):
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
                        f'mode="{self.MODE}" turns on CUDA graphs, which hang or slow down on ROCm;'
                        f' use "{rocm}" there',
                        fix=self.gated_literal_fix(leaf, rocm, f'Use mode="{rocm}" on ROCm'),
                    )

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        """A parameter default that the function hands to torch.compile's mode (directly,
        through ``list_mode_options`` or through a project function): the value is there."""
        summary = function_summary(self, node)
        if summary is None:
            return
        for param in _params(node):
            if (summary.flows.get(param.name.value) == "mode" and param.default is not None
                    and literal_string(param.default) == self.MODE and not self.in_rocm_branch(param.default)):
                rocm = ROCM_MODES[self.MODE]
                self.report(
                    param.default,
                    f'the default mode="{self.MODE}" of `{param.name.value}` reaches torch.compile and turns on'
                    f' CUDA graphs, which hang or slow down on ROCm; use "{rocm}" there',
                    fix=self.gated_literal_fix(param.default, rocm, f'Use mode="{rocm}" on ROCm'),
                )


def _params(node: cst.FunctionDef) -> List[cst.Param]:
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


class ReduceOverheadMode(_LiteralMode):
    CODE = "ROC101"
    NAME = "compile-reduce-overhead"
    MODE = "reduce-overhead"
    SUMMARY = 'torch.compile(mode="reduce-overhead") uses CUDA graphs.'
    WHAT = """
        A literal `mode="reduce-overhead"` handed to `torch.compile` in any spelling: a call,
        a decorator, `torch.compile(mode=...)(fn)`, an alias (`import torch as th`,
        `from torch import compile as tc`), `functools.partial(torch.compile, mode=...)`,
        `model.compile(mode=...)` (`nn.Module.compile`), a literal `**{"mode": ...}`, and
        transformers' `CompileConfig(mode=...)`.
        """
    WHY = """
        "reduce-overhead" sets `triton.cudagraphs=True`. Inductor's CUDA graphs on ROCm (HIP
        graphs) have hung, crashed or run slower on the stacks most users have today
        (ROCm/clr#279, ROCm/hip#3887, pytorch#187715). The mode overrides global config, so a
        prelude cannot switch it off: the call site must change.
        """
    EXAMPLE = """
        decode_one_token = torch.compile(decode_one_token, mode="reduce-overhead", fullgraph=True)
        """
    FIXED_EXAMPLE = """
        decode_one_token = torch.compile(decode_one_token, mode="default" if is_rocm else "reduce-overhead", fullgraph=True)
        """
    FIX = """
        Safe. The literal becomes `"default" if is_rocm else "reduce-overhead"`: on NVIDIA the
        expression evaluates to the original value, on ROCm to "default". `is_rocm` comes from
        the generated prelude (or a binding of the file's own that means the same). To keep
        the speed of CUDA graphs on ROCm, capture the compiled function manually
        (`torch.cuda.graph`), which HIP graphs support. Turn the rule off on stacks where
        inductor's CUDA graphs work (`ignore = ["ROC101"]`).
        """
    FIX_APPLICABILITY = Applicability.SAFE
    VALID = (
        Case('import torch\nf = torch.compile(g, mode="default")\n'),
        Case('import torch\nf = torch.compile(g, mode="max-autotune-no-cudagraphs")\n'),
        Case('import re\np = re.compile("reduce-overhead")\n'),
        Case('import torch\n# mode="reduce-overhead" is faster\nf = torch.compile(g)\n'),
        Case('import torch\n"""Use torch.compile(m, mode="reduce-overhead")."""\n'),
        Case('import argparse\np = argparse.ArgumentParser()\n'
             'p.add_argument("--mode", choices=["default", "reduce-overhead"], default="default")\n'),
        Case('import torch\nf = torch.compile(g, mode="default" if is_rocm else "reduce-overhead")\n'),
        Case('import torch\nif torch.version.hip:\n    f = torch.compile(g)\n'
             'else:\n    f = torch.compile(g, mode="reduce-overhead")\n'),
        Case('def compile(fn, mode):\n    return fn\nf = compile(g, mode="reduce-overhead")\n'),
    )
    INVALID = (
        Case('import torch\nf = torch.compile(g, mode="reduce-overhead")\n',
             'import torch\n\n{PRELUDE}\n\nf = torch.compile(g, mode="default" if is_rocm else "reduce-overhead")\n'),
        Case("import torch as th\n\n@th.compile(mode='reduce-overhead')\ndef f(x):\n    return x\n",
             'import torch as th\n\nis_rocm = getattr(th.version, "hip", None) is not None\n\n@th.compile(mode=\'default\' if is_rocm else \'reduce-overhead\')\ndef f(x):\n    return x\n'),
        Case('import functools\nimport torch\nc = functools.partial(torch.compile, mode="reduce-overhead")\n',
             'import functools\nimport torch\n\n{PRELUDE}\n\nc = functools.partial(torch.compile, mode="default" if is_rocm else "reduce-overhead")\n'),
        Case('from torch import compile as tc\nf = tc(mode="reduce-overhead")(g)\n',
             'import torch\nfrom torch import compile as tc\n\nis_rocm = getattr(torch.version, "hip", None) is not None\n\nf = tc(mode="default" if is_rocm else "reduce-overhead")(g)\n'),
        Case('import torch\nmodel.compile(mode="reduce-overhead")\n',
             'import torch\n\n{PRELUDE}\n\nmodel.compile(mode="default" if is_rocm else "reduce-overhead")\n'),
        Case('import torch\nf = torch.compile(g, **{"mode": "reduce-overhead"})\n',
             'import torch\n\n{PRELUDE}\n\nf = torch.compile(g, **{"mode": "default" if is_rocm else "reduce-overhead"})\n'),
    )


class MaxAutotuneMode(_LiteralMode):
    CODE = "ROC102"
    NAME = "compile-max-autotune"
    MODE = "max-autotune"
    SUMMARY = 'torch.compile(mode="max-autotune") also turns CUDA graphs on.'
    WHAT = """
        A literal `mode="max-autotune"` handed to `torch.compile`, in every spelling that
        ROC101 knows.
        """
    WHY = """
        "max-autotune" patches `max_autotune`, `coordinate_descent_tuning` and
        `triton.cudagraphs=True`: it captures CUDA graphs just like "reduce-overhead". Its
        twin "max-autotune-no-cudagraphs" keeps the autotuning without the graphs.
        """
    EXAMPLE = """
        self.image_encoder.forward = torch.compile(self.image_encoder.forward, mode="max-autotune", fullgraph=True)
        """
    FIXED_EXAMPLE = """
        self.image_encoder.forward = torch.compile(self.image_encoder.forward, mode="max-autotune-no-cudagraphs" if is_rocm else "max-autotune", fullgraph=True)
        """
    FIX = """
        Safe. `"max-autotune-no-cudagraphs" if is_rocm else "max-autotune"`: unchanged on
        NVIDIA; on ROCm the same autotuning, without CUDA graphs.
        """
    FIX_APPLICABILITY = Applicability.SAFE
    VALID = (
        Case('import torch\nf = torch.compile(g, mode="max-autotune-no-cudagraphs")\n'),
        Case('import torch\nMODES = ["max-autotune", "default"]\n'),
    )
    INVALID = (
        Case('import torch\nf = torch.compile(g,\n    mode="max-autotune",\n)\n',
             'import torch\n\n{PRELUDE}\n\nf = torch.compile(g,\n    mode="max-autotune-no-cudagraphs" if is_rocm else "max-autotune",\n)\n'),
        Case('import torch\nf = torch.compile(g, mode="max-autotune" if big else "default")\n',
             'import torch\n\n{PRELUDE}\n\nf = torch.compile(g, mode=("max-autotune-no-cudagraphs" if is_rocm else "max-autotune") if big else "default")\n'),
    )


class CudagraphsOption(_CompileCalls):
    CODE = "ROC103"
    NAME = "compile-options-cudagraphs"
    SUMMARY = 'torch.compile(options={"triton.cudagraphs": True}) turns CUDA graphs on.'
    WHAT = """
        An `options=` dict handed to `torch.compile` whose `"triton.cudagraphs"` key is not
        False: a literal dict, or a dict variable built in the same scope (`opts = {...}`,
        `opts["triton.cudagraphs"] = True`, `opts.update({...})`).
        """
    WHY = """
        `triton.cudagraphs` is what "reduce-overhead" turns on: CUDA graphs captured by
        inductor, which hang or slow down on ROCm. Options override global config.
        """
    EXAMPLE = """
        opts = {"triton.cudagraphs": True, "max_autotune": False}
        step = torch.compile(step, options=opts)
        """
    FIXED_EXAMPLE = """
        opts = {"triton.cudagraphs": False if is_rocm else True, "max_autotune": False}
        step = torch.compile(step, options=opts)
        """
    FIX = """
        Safe. The value becomes `False if is_rocm else <value>`: unchanged on NVIDIA. The
        other keys, and the call, stay as they are (rocmport never adds `options=` beside
        `mode=`: torch raises when both are given).
        """
    FIX_APPLICABILITY = Applicability.SAFE
    VALID = (
        Case('import torch\nf = torch.compile(g, options={"triton.cudagraphs": False})\n'),
        Case('import torch\nf = torch.compile(g, options={"max_autotune": True})\n'),
        Case('import torch\nopts = {"triton.cudagraphs": True}\n'),
    )
    INVALID = (
        Case('import torch\nf = torch.compile(g, options={"triton.cudagraphs": True})\n',
             'import torch\n\n{PRELUDE}\n\nf = torch.compile(g, options={"triton.cudagraphs": False if is_rocm else True})\n'),
        Case('import torch\ndef build(g):\n    opts = {"epilogue_fusion": True}\n    opts["triton.cudagraphs"] = True\n'
             '    return torch.compile(g, options=opts)\n',
             'import torch\n\n{PRELUDE}\n\ndef build(g):\n    opts = {"epilogue_fusion": True}\n    opts["triton.cudagraphs"] = False if is_rocm else True\n'
             '    return torch.compile(g, options=opts)\n'),
    )

    def __init__(self, context):
        super().__init__(context)
        self._seen: Set[int] = set()

    def check_call(self, call: cst.Call, kind: str) -> None:
        flags = list(self.argument(call, "cudagraphs")) if kind == "wrapper" else []
        for value in self.argument(call, "options"):
            flags.extend(self._cudagraph_values(call, value))
        self._report_flags(flags)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        """A parameter default that becomes "triton.cudagraphs" (of the options dict the
        function builds or hands to torch.compile, or of inductor's config): the value is there."""
        summary = function_summary(self, node)
        if summary is None:
            return
        self._report_flags([param.default for param in _params(node)
                            if summary.flows.get(param.name.value) == "cudagraphs"
                            and isinstance(param.default, (cst.Name, cst.Integer))])  # True, 1: literals only

    def _report_flags(self, flags) -> None:
        for target in flags:
            if id(target) in self._seen or self.in_rocm_branch(target) or self.in_cpu_branch(target):
                continue
            if isinstance(target, cst.IfExp) and mentions_rocm(target.test, self.context.gate_name):
                continue
            self._seen.add(id(target))
            if isinstance(target, cst.Name) and target.value in ("False", "None"):
                continue
            if isinstance(target, cst.Integer) and target.value in ("0",):
                continue
            if self._off_by_default(target):
                continue  # the callers' values are checked at their call sites
            if isinstance(self.parent(target), cst.Param) and not (
                    isinstance(target, cst.Integer) or (isinstance(target, cst.Name) and target.value == "True")):
                continue
            original = self.context.source(target)
            text = f"False if {self.context.gate_name} else {original}"
            if not isinstance(self.parent(target), (cst.DictElement, cst.Assign, cst.Arg, cst.Param)):
                text = f"({text})"
            self.report(
                target,
                '"triton.cudagraphs" in options= turns on CUDA graphs, which hang or slow down on ROCm',
                fix=Fix(Applicability.SAFE, 'Set "triton.cudagraphs" to False on ROCm',
                        (self.context.replace(target, text),), ("gate",)),
            )

    def _off_by_default(self, target: cst.BaseExpression) -> bool:
        """A parameter whose literal default is off and which the index follows to
        "triton.cudagraphs" (so a call that turns it on is reported where it does)."""
        found = self.parameter_of(target)
        if found is None or found[1].default is None:
            return False
        default = found[1].default
        if not ((isinstance(default, cst.Name) and default.value in ("False", "None"))
                or (isinstance(default, cst.Integer) and default.value == "0")):
            return False
        summary = function_summary(self, found[0])
        return summary is not None and summary.flows.get(found[1].name.value) == "cudagraphs"

    def _dict_values(self, d: cst.Dict) -> Iterator[cst.BaseExpression]:
        for element in d.elements:
            if isinstance(element, cst.DictElement) and literal_string(element.key) == "triton.cudagraphs":
                yield element.value

    def _cudagraph_values(self, call: cst.Call, value: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
        if isinstance(value, cst.Dict):
            yield from self._dict_values(value)
        elif isinstance(value, cst.Name):
            yield from self._scope_values(call, value.value)

    def _scope_values(self, call: cst.Call, name: str) -> Iterator[cst.BaseExpression]:
        """Values given to "triton.cudagraphs" in dict ``name`` built in the call's scope."""
        scope: cst.CSTNode = self.context.module
        for ancestor in self.ancestors(call):
            if isinstance(ancestor, (cst.FunctionDef, cst.Lambda)):
                scope = ancestor
                break
        found: List[cst.BaseExpression] = []
        rule = self

        class _Builder(cst.CSTVisitor):
            def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
                return node is scope

            def visit_ClassDef(self, node: cst.ClassDef) -> bool:
                return False

            def visit_Assign(self, node: cst.Assign) -> None:
                for target in node.targets:
                    t = target.target
                    if isinstance(t, cst.Name) and t.value == name and isinstance(node.value, cst.Dict):
                        found.extend(rule._dict_values(node.value))
                    if (isinstance(t, cst.Subscript) and isinstance(t.value, cst.Name) and t.value.value == name
                            and len(t.slice) == 1 and isinstance(t.slice[0].slice, cst.Index)
                            and literal_string(t.slice[0].slice.value) == "triton.cudagraphs"):
                        found.append(node.value)

            def visit_Call(self, node: cst.Call) -> None:
                f = node.func
                if (isinstance(f, cst.Attribute) and f.attr.value == "update" and isinstance(f.value, cst.Name)
                        and f.value.value == name and node.args and isinstance(node.args[0].value, cst.Dict)):
                    found.extend(rule._dict_values(node.args[0].value))

        _walk.visit(scope, _Builder())
        yield from found


class NonLiteralMode(_CompileCalls):
    CODE = "ROC104"
    NAME = "compile-mode-not-literal"
    SUMMARY = "torch.compile(mode=<expression>) may be a CUDA-graph mode at run time."
    WHAT = """
        A `mode=` given by an expression that is not a literal: a variable, an attribute, a
        config field, a parameter, a call. Its value is only known at run time, and config
        defaults such as `compile_mode: str = "reduce-overhead"` are common.
        """
    WHY = """
        When the value is "reduce-overhead" or "max-autotune", inductor captures CUDA graphs,
        which hang or slow down on ROCm (see ROC101).
        """
    EXAMPLE = """
        self.model = torch.compile(self.model, mode=config.compile_mode)
        """
    FIXED_EXAMPLE = """
        self.model = torch.compile(self.model, mode={"reduce-overhead": "default", "max-autotune": "max-autotune-no-cudagraphs"}.get(config.compile_mode, config.compile_mode) if is_rocm else config.compile_mode)
        """
    FIX = """
        The mode is mapped inline, one expression and no helper:
        `{"reduce-overhead": "default", "max-autotune": "max-autotune-no-cudagraphs"}.get(m, m)
        if is_rocm else m`. On NVIDIA the expression is evaluated once, as before, and passed
        unchanged. Safe where reading the expression has no effect (a name, an attribute, a
        constant subscript), since ROCm reads it twice; unsafe for anything else (a call).
        Where the repository formats with ruff or black, the statement is wrapped as its
        formatter wraps it.
        """
    FIX_APPLICABILITY = Applicability.SAFE
    VALID = (
        Case('import torch\nf = torch.compile(g, mode=None)\n'),
        Case('import torch\nf = torch.compile(g, mode=rocmport_compile_mode(cfg.mode))\n'),
        Case('import torch\nis_rocm = torch.version.hip is not None\n'
             'f = torch.compile(g, mode={"reduce-overhead": "default"}.get(m, m) if is_rocm else m)\n'),
        Case('import torch\nf = torch.compile(g, mode="default" if fast else "max-autotune-no-cudagraphs")\n'),
        Case('import torch\nf = torch.compile(g, mode=m) if not is_rocm else g\n'),
    )
    INVALID = (
        Case('import torch\ndef build(model, cfg):\n    return torch.compile(model, mode=cfg.compile_mode)\n',
             'import torch\n\nis_rocm = getattr(torch.version, "hip", None) is not None\n\ndef build(model, cfg):\n    return torch.compile(model, mode={"reduce-overhead": "default", "max-autotune": "max-autotune-no-cudagraphs"}.get(cfg.compile_mode, cfg.compile_mode) if is_rocm else cfg.compile_mode)\n'),
    )

    def check_call(self, call: cst.Call, kind: str) -> None:
        for value in self.mode_values(call):
            if value is None:
                continue
            wrapped = self.wrapper_parameter(call, value)
            if wrapped is not None and wrapped[1] is not None and wrapped[1] not in wrapped[0].defaults:
                continue  # the project function's own compile call reports its parameter
            for leaf in self.mode_leaves(value):
                if literal_string(leaf) is not None or self.in_rocm_branch(leaf) or self.in_cpu_branch(leaf):
                    continue
                if isinstance(leaf, cst.Name) and leaf.value == "None":
                    continue
                if self._known_value(leaf):
                    continue
                if isinstance(leaf, cst.Call) and isinstance(leaf.func, cst.Name) and leaf.func.value == MODE_MAPPER:
                    continue
                source = self.context.source(leaf)
                shown = source if len(source) <= 40 else source[:37] + "..."
                self.report(
                    leaf,
                    f"mode={shown} is decided at run time; if it is \"reduce-overhead\" or"
                    f" \"max-autotune\", inductor uses CUDA graphs, which hang or slow down on ROCm",
                    fix=self._mapped(leaf, source),
                )

    def _mapped(self, leaf: cst.BaseExpression, source: str) -> Fix:
        """``mode=m`` -> ``mode={...}.get(m, m) if is_rocm else m``: one expression, no helper.
        ``m`` is read twice on ROCm, so the fix is safe only where reading it has no effect
        (a name, an attribute or a constant subscript chain)."""
        q = getattr(self.context, "quote", '"')
        table = ", ".join(f"{q}{k}{q}: {q}{v}{q}" for k, v in ROCM_MODES.items())
        text = f"{{{table}}}.get({source}, {source}) if {self.context.gate_name} else {source}"
        if not isinstance(self.parent(leaf), (cst.Arg, cst.DictElement)):
            text = f"({text})"
        pure = _reads_without_effects(leaf)
        return Fix(Applicability.SAFE if pure else Applicability.UNSAFE, "Map the mode to its ROCm form at run time",
                   (self.context.replace(leaf, text),), ("gate",))

    def _known_value(self, leaf: cst.BaseExpression) -> bool:
        """Is the value of ``leaf`` known well enough that another finding (or none) covers
        it: a parameter with a literal default (clean: the callers' literals are checked at
        their call sites; a CUDA-graph mode: ROC101/ROC102 report the default), or a
        literal constant of the project that is no CUDA-graph mode."""
        found = self.parameter_of(leaf)
        if found is not None:
            function, param = found
            if param.default is None:
                return False
            hazard = False
            for default in self.mode_leaves(param.default):
                value = literal_string(default)
                if value is None and not (isinstance(default, cst.Name) and default.value == "None"):
                    return False
                if value in ROCM_MODES and not self.in_rocm_branch(default):
                    hazard = True
            if not hazard:
                return True
            summary = function_summary(self, function)
            return summary is not None and summary.flows.get(param.name.value) == "mode"
        ok, value = constant_value(self, leaf)
        return ok and (value is None or (isinstance(value, str) and value not in ROCM_MODES))


def _reads_without_effects(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.Name):
        return True
    if isinstance(node, cst.Attribute):
        return _reads_without_effects(node.value)
    if isinstance(node, cst.Subscript):
        return _reads_without_effects(node.value) and all(
            isinstance(e.slice, cst.Index) and isinstance(e.slice.value, (cst.SimpleString, cst.Integer))
            for e in node.slice)
    return False


class ReduceOverheadGraphHelper(_CompileCalls):
    CODE = "ROC106"
    NAME = "compile-reduce-overhead-graph-helper"
    SUMMARY = ('torch.compile(f, mode="reduce-overhead"): keep CUDA graphs on ROCm with a manual-capture'
               " helper (opt-in).")
    DEFAULT_ENABLED = False
    WHAT = """
        A function or module compiled with a literal `mode="reduce-overhead"`:
        `torch.compile(f, mode="reduce-overhead", ...)` (any alias, `model=` too),
        `torch.compile(mode="reduce-overhead")(f)` and the decorator
        `@torch.compile(mode="reduce-overhead")`, also when ROC101 has already gated the mode
        (`"default" if is_rocm else "reduce-overhead"`). Not flagged: a call already wrapped
        in `rocmport_cudagraph(...)` (or a decorator already under `@rocmport_cudagraph`),
        `model.compile(...)` (it compiles in place and returns nothing to wrap),
        `functools.partial(torch.compile, ...)` and `CompileConfig(...)` (the compiled
        callable is made elsewhere), and modes given by expressions (ROC104). Off by default:
        enable it with `--extend-select ROC106` and apply it with `--unsafe-fixes`.
        """
    WHY = """
        ROC101 makes the call safe on ROCm by compiling with "default", which gives up the
        CUDA graphs that made "reduce-overhead" fast: a launch-bound 12-layer MLP took 460
        us a call with "default" against 159 with "reduce-overhead" (H200, torch 2.11).
        Capturing and replaying the "default"-compiled callable by hand (HIP graphs) works on
        ROCm where inductor's own CUDA graphs do not reliably, and gave 160 us.
        """
    EXAMPLE = """
        decode_one_token = torch.compile(decode_one_token, mode="reduce-overhead", fullgraph=True)
        """
    FIXED_EXAMPLE = """
        decode_one_token = rocmport_cudagraph(torch.compile(decode_one_token, mode="default" if is_rocm else "reduce-overhead", fullgraph=True))
        """
    FIX = """
        Unsafe. The compiled callable is wrapped in the prelude's `rocmport_cudagraph(...)`
        (`@rocmport_cudagraph` above the decorator) and the mode is gated as ROC101 gates it;
        with ROC101 selected too, the result is the same. On NVIDIA `rocmport_cudagraph`
        returns the compiled callable itself, so that path is unchanged. On ROCm it returns a
        wrapper that warms up, captures one graph per input signature, copies inputs into
        static buffers and replays, falling back to the plain compiled call where a graph
        would be wrong (CPU or non-tensor inputs, autograd, in-place updates of inputs, a
        failed capture, too many signatures); outputs are cloned by default. Why unsafe: on
        ROCm the result is a wrapper, not the `OptimizedModule` (attributes are forwarded,
        `isinstance(..., nn.Module)` is False), and a graph freezes the Python state the
        function reads at capture (globals, flags, module attributes), as inductor's CUDA
        graphs would not.
        """
    FIX_APPLICABILITY = Applicability.UNSAFE
    VALID = (
        Case('import torch\nf = rocmport_cudagraph(torch.compile(g, mode="default" if is_rocm else "reduce-overhead"))\n'),
        Case('import torch\nmodel.compile(mode="reduce-overhead")\n'),
        Case('import functools\nimport torch\nc = functools.partial(torch.compile, mode="reduce-overhead")\n'),
        Case('import torch\nf = torch.compile(g, mode="max-autotune")\n'),
        Case('import torch\nf = torch.compile(g, mode=cfg.mode)\n'),
        Case('import torch\n\n@rocmport_cudagraph\n@torch.compile(mode="default" if is_rocm else "reduce-overhead")\n'
             'def f(x):\n    return x\n'),
        Case('import torch\nif torch.version.hip:\n    f = g\nelse:\n    f = torch.compile(g, mode="reduce-overhead")\n'),
    )
    INVALID = (
        Case('import torch\nf = torch.compile(g, mode="reduce-overhead")\n'),
        Case('import torch\nf = torch.compile(g, mode="default" if is_rocm else "reduce-overhead")\n'),
        Case('import torch\n\n@torch.compile(mode="reduce-overhead", fullgraph=True)\ndef f(x):\n    return x\n'),
        Case('from torch import compile as tc\nf = tc(mode="reduce-overhead")(g)\n'),
    )

    def check_call(self, call: cst.Call, kind: str) -> None:
        if not is_torch_compile(self, call.func):
            return
        leaves = [leaf for value in self.argument(call, "mode") for leaf in self.mode_leaves(value)
                  if literal_string(leaf) == "reduce-overhead"]
        if len(leaves) != 1:
            return
        leaf = leaves[0]
        gated = self.in_rocm_branch(leaf)
        if gated and not self._gated_by_rocm_fix(leaf):
            return  # a gated form of the user's own: leave it alone
        wrapped = self._wrap_edits(call)
        if wrapped is None:
            return
        node, edits = wrapped
        if not gated:
            edits.append(self.gated_literal_fix(leaf, "default", "").edits[0])
        self.report(
            node,
            'mode="reduce-overhead" becomes "default" on ROCm, which gives up its CUDA graphs;'
            f" `{GRAPH_HELPER}(...)` captures and replays them by hand there (opt-in)",
            fix=Fix(Applicability.UNSAFE, f'Compile with "default" on ROCm and wrap it in `{GRAPH_HELPER}`',
                    tuple(sorted(edits, key=lambda e: (e.start, e.end))), ("gate", "graph_helper")),
        )

    def _gated_by_rocm_fix(self, leaf: cst.BaseExpression) -> bool:
        """``"default" if <ROCm test> else "reduce-overhead"``: ROC101's own output."""
        parent = self.parent(leaf)
        return (isinstance(parent, cst.IfExp) and parent.orelse is leaf
                and literal_string(parent.body) == "default" and mentions_rocm(parent.test, self.context.gate_name))

    @staticmethod
    def _is_helper(node: cst.CSTNode) -> bool:
        if isinstance(node, cst.Call):
            node = node.func
        return isinstance(node, cst.Name) and node.value == GRAPH_HELPER

    def _wrap_edits(self, call: cst.Call):
        """(the node reported, edits that wrap the compiled callable), or None: nothing to
        wrap, or already wrapped."""
        has_target = keyword(call, "model") is not None or any(
            a.keyword is None and a.star == "" for a in call.args)
        target: cst.CSTNode = call
        if not has_target:
            parent = self.parent(call)
            if isinstance(parent, cst.Decorator):
                return self._decorator_edits(parent, call)
            if not (isinstance(parent, cst.Call) and parent.func is call and parent.args):
                return None  # a decorator factory kept for later: nothing to wrap here
            target = parent
        arg = self.parent(target)
        if isinstance(arg, cst.Arg) and self._is_helper(self.parent(arg)) and self.parent(arg).args[0] is arg:
            return None
        start, end = self.context.span(target)
        return target, [self.context.edit(start, start, f"{GRAPH_HELPER}("), self.context.edit(end, end, ")")]

    def _decorator_edits(self, decorator: cst.Decorator, call: cst.Call):
        func = self.parent(decorator)
        if not isinstance(func, cst.FunctionDef):
            return None
        index = next(i for i, d in enumerate(func.decorators) if d is decorator)
        if index > 0 and self._is_helper(func.decorators[index - 1].decorator):
            return None
        start, _ = self.context.span(call)
        text = self.context.text
        at = text.rfind("@", 0, start)
        line_start = self.context.lines.line_span(self.context.lines.position(at).row)[0]
        indent = text[line_start:at]
        if at < 0 or indent.strip() or text[at + 1:start].strip():
            return None
        return call, [self.context.edit(at, at, f"@{GRAPH_HELPER}{self.context.newline()}{indent}")]


class ModeDefault(Rule):
    CODE = "ROC105"
    NAME = "cudagraph-mode-default"
    SUMMARY = "A CUDA-graph compile mode stored as a default value (a config field, a parameter default)."
    WHAT = """
        The literal "reduce-overhead" or "max-autotune" stored where a compile mode is kept
        for later: a class attribute or dataclass field, an attribute assignment, a
        module-level constant, a parameter default or a config-dict value whose name contains
        "mode". Not flagged: a local variable or a parameter that the same code hands to
        `torch.compile(mode=...)` (ROC104 fixes that call), and the text in strings,
        comments, docstrings, lists of choices or comparisons.
        """
    WHY = """
        The value ends up in `torch.compile(mode=...)` somewhere else, often in another file,
        where it turns on CUDA graphs (see ROC101).
        """
    EXAMPLE = """
        @dataclass
        class PolicyConfig:
            compile_mode: str = "reduce-overhead"
        """
    FIX = """
        Display-only. Changing a default changes saved configurations (they are serialised,
        e.g. to a model hub), so rocmport does not rewrite it: gate the value where it is
        handed to `torch.compile` (rocmport fixes such call sites as ROC104), or use a
        ROCm-aware default such as `"default" if is_rocm else "reduce-overhead"`.
        """
    FIX_APPLICABILITY = Applicability.DISPLAY_ONLY
    TRIGGERS = ("reduce-overhead", "max-autotune")
    METADATA_DEPENDENCIES = (PositionProvider, ParentNodeProvider)

    @classmethod
    def may_match(cls, facts) -> bool:
        return not facts.strings.isdisjoint(ROCM_MODES)  # visit_SimpleString: the literal itself
    VALID = (
        Case('import torch\ndef f(m):\n    mode = "reduce-overhead"\n    return torch.compile(m, mode=mode)\n'),
        Case('import torch\ndef build(m, compile_mode="max-autotune"):\n    return torch.compile(m, mode=compile_mode)\n'),
        Case('x = "max-autotune-no-cudagraphs"\nMODE = x\n'),
        Case('if mode == "reduce-overhead":\n    pass\n'),
        Case('def test_kwargs(kw):\n    assert kw == {"backend": "inductor", "mode": "reduce-overhead"}\n'),
        Case('def test_kwargs(kw):\n    assert {"compile_mode": "max-autotune"} != kw\n'),
    )
    INVALID = (
        Case('from dataclasses import dataclass\n@dataclass\nclass C:\n    compile_mode: str = "reduce-overhead"\n'),
        Case('def build(m, mode="max-autotune"):\n    return m\n'),
        Case('CFG = {"compile_mode": "reduce-overhead"}\n'),
    )

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        value = literal_string(node)
        if value not in ROCM_MODES:
            return
        where = self._stored_as(node)
        if where is None or self.in_rocm_branch(node):
            return
        self.report(
            node,
            f'"{value}" is stored as {where}; where it reaches torch.compile it turns on CUDA graphs,'
            " which hang or slow down on ROCm: gate it at the compile call",
            fix=Fix(Applicability.DISPLAY_ONLY, "Gate the mode where it is handed to torch.compile"),
        )

    def _stored_as(self, node: cst.CSTNode) -> Optional[str]:
        parent = self.parent(node)
        text = self.context.text
        if isinstance(parent, (cst.Assign, cst.AnnAssign)) and parent.value is node:
            targets = [t.target for t in parent.targets] if isinstance(parent, cst.Assign) else [parent.target]
            for target in targets:
                name = target.attr.value if isinstance(target, cst.Attribute) else (
                    target.value if isinstance(target, cst.Name) else None)
                if name is None or "mode" not in name.lower():
                    continue
                owner = self._owner(parent)
                if isinstance(target, cst.Name):
                    if isinstance(owner, cst.FunctionDef):
                        continue  # a local: the compile call that uses it is ROC104's
                    if isinstance(owner, cst.Module) and re.search(rf"\bmode\s*=\s*{re.escape(name)}\b", text):
                        continue
                kind = "a class attribute" if isinstance(owner, cst.ClassDef) else "a default"
                return f"{kind} `{name}`"
        if isinstance(parent, cst.Param) and parent.default is node and "mode" in parent.name.value.lower():
            func = self._owner(parent)
            if isinstance(func, cst.FunctionDef) and re.search(
                    rf"\bmode\s*=\s*{re.escape(parent.name.value)}\b", self.context.source(func)):
                return None
            summary = function_summary(self, func) if isinstance(func, cst.FunctionDef) else None
            if summary is not None and summary.flows.get(parent.name.value) == "mode":
                return None  # it reaches torch.compile: ROC101/ROC102 report the default
            return f"the default of parameter `{parent.name.value}`"
        if isinstance(parent, cst.DictElement) and parent.value is node:
            if isinstance(self.parent(self.parent(parent)), (cst.Comparison, cst.ComparisonTarget)):
                return None  # a dict an assert compares with: nothing is stored
            key = literal_string(parent.key)
            if key and "mode" in key.lower() and key != "mode":
                return f'the config value "{key}"'
            if key == "mode":
                grand = self.parent(self.parent(parent))
                if isinstance(grand, cst.Arg) and grand.star == "**":
                    return None  # **{"mode": ...} in a call: ROC101/ROC102 handle compile calls
                if (isinstance(grand, cst.Assign) and len(grand.targets) == 1
                        and isinstance(grand.targets[0].target, cst.Name)
                        and re.search(rf"\*\*\s*{re.escape(grand.targets[0].target.value)}\b", text)):
                    return None  # kw = {"mode": ...} splatted into a call: ROC101/ROC102 follow it
                return 'the config value "mode"'
        return None

    def _owner(self, node: cst.CSTNode) -> cst.CSTNode:
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef, cst.Module)):
                return ancestor
        return self.context.module


RULES = [ReduceOverheadMode, MaxAutotuneMode, CudagraphsOption, NonLiteralMode, ModeDefault,
         ReduceOverheadGraphHelper]
