"""ROC104 compile-mode-not-literal: torch.compile(mode=<expression>) may be a CUDA-graph mode at run time.

The rule's documentation is its class's (`rocmport rule ROC104` prints it).
"""

from __future__ import annotations

import libcst as cst

from rocmport.analysis.resolve import assigned_values, constant_value, function_summary
from rocmport.analysis.statics import default_value
from rocmport.analysis.syntax import literal_string
from rocmport.findings import Applicability, Fix
from rocmport.prelude import MODE_MAPPER
from rocmport.rules.base import Case

from .common import ROCM_MODES, CompileCalls


class NonLiteralMode(CompileCalls):
    CODE = "ROC104"
    NAME = "compile-mode-not-literal"
    SUMMARY = "torch.compile(mode=<expression>) may be a CUDA-graph mode at run time."
    WHAT = """
        A `mode=` given by an expression that is not a literal: a variable, an attribute, a
        config field, a parameter, a call. Its value is only known at run time, and config
        defaults such as `compile_mode: str = "reduce-overhead"` are common. Not reported: a
        value whose default turns no CUDA graphs on, which is what runs unless a user asks
        for more: `os.environ.get("MODE", "max-autotune-no-cudagraphs")`, `os.getenv("MODE")`,
        `cfg.get("mode", "default")`, or a name assigned only such values (a default that is a
        CUDA-graph mode is reported).
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
        Case("""
            import torch
            f = torch.compile(g, mode=None)
            """),
        Case("""
            import torch
            f = torch.compile(g, mode=rocmport_compile_mode(cfg.mode))
            """),
        Case("""
            import torch
            is_rocm = torch.version.hip is not None
            f = torch.compile(g, mode={"reduce-overhead": "default"}.get(m, m) if is_rocm else m)
            """),
        Case("""
            import torch
            f = torch.compile(g, mode="default" if fast else "max-autotune-no-cudagraphs")
            """),
        Case("""
            import torch
            f = torch.compile(g, mode=m) if not is_rocm else g
            """),
        # a default that turns no CUDA graphs on: what runs unless the user asks for more
        Case("""
            import os
            import torch

            model = torch.compile(model, mode=os.environ.get("COMPILE_MODE", "max-autotune-no-cudagraphs"))
            """),
        Case("""
            import os
            import torch

            def build(model, cfg):
                mode = cfg.get("compile_mode", "default")
                return torch.compile(model, mode=mode), torch.compile(model, mode=os.getenv("MODE"))
            """),
    )
    INVALID = (
        # near misses of a safe default: a default that is a CUDA-graph mode, an environment
        # variable read without a default through os.environ[...] (it raises when unset: no default)
        Case(
            """
            import os
            import torch

            model = torch.compile(model, mode=os.environ.get("COMPILE_MODE", "reduce-overhead"))
            """,
            line=4,
            column=35,
            message=(
                'mode=os.environ.get("COMPILE_MODE", "reduc... is decided at run time; if it is "reduce-overhead" or '
                '"max-autotune", inductor uses CUDA graphs, which hang or slow down on ROCm'
            ),
        ),
        Case(
            """
            import os
            import torch

            model = torch.compile(model, mode=os.environ["COMPILE_MODE"])
            """,
            line=4,
            column=35,
            message=(
                'mode=os.environ["COMPILE_MODE"] is decided at run time; if it is "reduce-overhead" or '
                '"max-autotune", inductor uses CUDA graphs, which hang or slow down on ROCm'
            ),
        ),
        Case(
            """
            import torch
            def build(model, cfg):
                return torch.compile(model, mode=cfg.compile_mode)
            """,
            expected="""
            import torch

            is_rocm = getattr(torch.version, "hip", None) is not None

            def build(model, cfg):
                return torch.compile(model, mode={"reduce-overhead": "default", "max-autotune": "max-autotune-no-cudagraphs"}.get(cfg.compile_mode, cfg.compile_mode) if is_rocm else cfg.compile_mode)
            """,
            line=3,
            column=38,
            message=(
                'mode=cfg.compile_mode is decided at run time; if it is "reduce-overhead" or "max-autotune", '
                'inductor uses CUDA graphs, which hang or slow down on ROCm'
            ),
        ),
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
        if ok:
            return value is None or (isinstance(value, str) and value not in ROCM_MODES)
        # what it is by default: `os.environ.get("MODE", "max-autotune-no-cudagraphs")`, a
        # `cfg.get("mode", "default")`, or a name assigned only such values
        values = [leaf]
        if isinstance(leaf, cst.Name):
            values = assigned_values(self, leaf) or [leaf]
        for value in values:
            known, default = default_value(value, self._names)
            if not known or not (default is None or (isinstance(default, str) and default not in ROCM_MODES)):
                return False
        return True

    def _names(self, node: cst.CSTNode):
        return {q.name for q in self.context.qualified_names(node)}


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
