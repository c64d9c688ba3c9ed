"""ROC103 compile-options-cudagraphs: torch.compile(options={"triton.cudagraphs": True}) turns CUDA graphs on.

The rule's documentation is its class's (`rocmport rule ROC103` prints it).
"""

from __future__ import annotations

from typing import Iterator, List, Set

import libcst as cst

from rocmport.analysis import walk as _walk
from rocmport.analysis.resolve import function_summary
from rocmport.analysis.syntax import gated_text, literal_string, mentions_rocm
from rocmport.findings import Applicability, Fix
from rocmport.rules.base import Case

from .common import CompileCalls, params


class CudagraphsOption(CompileCalls):
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
        opts = {"triton.cudagraphs": not is_rocm, "max_autotune": False}
        step = torch.compile(step, options=opts)
        """
    FIX = """
        Safe. The value becomes `False if is_rocm else <value>` (`not is_rocm` for a literal `True`): unchanged on NVIDIA. The
        other keys, and the call, stay as they are (rocmport never adds `options=` beside
        `mode=`: torch raises when both are given).
        """
    FIX_APPLICABILITY = Applicability.SAFE
    VALID = (
        Case("""
            import torch
            f = torch.compile(g, options={"triton.cudagraphs": False})
            """),
        Case("""
            import torch
            f = torch.compile(g, options={"max_autotune": True})
            """),
        Case("""
            import torch
            opts = {"triton.cudagraphs": True}
            """),
    )
    INVALID = (
        Case(
            """
            import torch
            f = torch.compile(g, options={"triton.cudagraphs": True})
            """,
            expected="""
            import torch

            {PRELUDE}

            f = torch.compile(g, options={"triton.cudagraphs": not is_rocm})
            """,
            line=2,
            column=52,
            message='"triton.cudagraphs" in options= turns on CUDA graphs, which hang or slow down on ROCm',
        ),
        Case(
            """
            import torch
            def build(g):
                opts = {"epilogue_fusion": True}
                opts["triton.cudagraphs"] = True
                return torch.compile(g, options=opts)
            """,
            expected="""
            import torch

            {PRELUDE}

            def build(g):
                opts = {"epilogue_fusion": True}
                opts["triton.cudagraphs"] = not is_rocm
                return torch.compile(g, options=opts)
            """,
            line=4,
            column=33,
            message='"triton.cudagraphs" in options= turns on CUDA graphs, which hang or slow down on ROCm',
        ),
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
        self._report_flags([param.default for param in params(node)
                            if summary.flows.get(param.name.value) == "cudagraphs"
                            and isinstance(param.default, (cst.Name, cst.Integer))])  # True, 1: literals only

    def _report_flags(self, flags) -> None:
        for target in flags:
            if id(target) in self._seen or self.in_rocm_branch(target) or self.in_cpu_branch(target):
                continue
            if isinstance(target, cst.IfExp) and mentions_rocm(target.test, self.context.gate_name):
                continue
            if not isinstance(target, (cst.Name, cst.Integer)) and mentions_rocm(target, self.context.gate_name):
                continue  # the test itself: `not is_rocm` (its fix of a literal True)
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
            text = gated_text("False", self.context.gate_name, original)
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
