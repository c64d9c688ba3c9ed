"""ROC104 compile-mode-not-literal: torch.compile(mode=<expression>) may be a CUDA-graph mode at run time.

The rule's documentation is its class's (`rocmport rule ROC104` prints it).
"""

from __future__ import annotations

import libcst as cst

from rocmport.analysis.resolve import assigned_values, constant_value, function_summary
from rocmport.analysis.statics import default_value
from rocmport.analysis.syntax import literal_string, mentions_rocm
from rocmport.findings import Applicability, Fix
from rocmport.prelude import MODE_MAPPER
from rocmport.rules.base import Case

from .common import (
    ROCM_MODES,
    CompileCalls,
    decided_by_parametrize,
    decided_elsewhere,
    hazards_reaching,
    mapped_inside,
    wrapper_of,
)


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
        CUDA-graph mode is reported). Nor a value the project decides where it stores it (a
        class attribute or dataclass field `cfg.compile_mode`, an argparse option
        `args.compile_mode`, a module constant, a key of a settings dict; followed through the
        files rocmport checks) when every place that decides it holds no CUDA-graph mode, is
        gated on ROCm, or holds one that ROC105 gates there: one gate where the value is
        decided covers every call that reads it, also those rocmport cannot see. A parameter
        of the project's own wrapper around torch.compile (`def compile_with_warmup(fn,
        mode=None)`) is decided by the wrapper's callers in the project: reported, and mapped
        there once, when one of them hands it a CUDA-graph mode or a value decided at run time
        (the callers are then left alone); not reported when none does.
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
        formatter wraps it. Where the mode is decided in the same function, by a local name
        assigned only string literals (or None) and read only as compile modes (or tested for
        truth, compared with None, shown), the literal is gated where it is assigned instead
        (`mode = "default" if is_rocm else "reduce-overhead"`), once; the calls stay.
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
        # decided where it is stored: a default that turns no CUDA graphs on, or one gated there
        Case("""
            import torch
            from dataclasses import dataclass

            @dataclass
            class RolloutConfig:
                torch_compile_mode: str = "default"

            def build(policy, cfg: RolloutConfig):
                return torch.compile(policy, mode=cfg.torch_compile_mode)
            """),
        Case("""
            import torch

            is_rocm = getattr(torch.version, "hip", None) is not None

            class Runner:
                compile_mode = "default" if is_rocm else "reduce-overhead"

                def build(self, model):
                    return torch.compile(model, mode=self.compile_mode)
            """),
    )
    INVALID = (
        # a local of the function decides it: gated where it is assigned, not at each call
        Case(
            """
            import torch

            def build(model, fast):
                mode = "reduce-overhead"
                if not fast:
                    mode = "default"
                return torch.compile(model, mode=mode), torch.compile(model.head, mode=mode)
            """,
            expected="""
            import torch

            is_rocm = getattr(torch.version, "hip", None) is not None

            def build(model, fast):
                mode = "default" if is_rocm else "reduce-overhead"
                if not fast:
                    mode = "default"
                return torch.compile(model, mode=mode), torch.compile(model.head, mode=mode)
            """,
            line=4,
            column=12,
            message=(
                '"reduce-overhead" is assigned to `mode`, the mode torch.compile gets at line 7: it turns on CUDA '
                'graphs, which hang or slow down on ROCm; gate it here, where it is decided'
            ),
        ),
        # near miss: the local is also compared; gating it would change that test on ROCm, so the
        # compile call maps it
        Case(
            """
            import torch

            def build(model):
                mode = "reduce-overhead"
                if mode == "reduce-overhead":
                    torch._dynamo.config.cache_size_limit = 64
                return torch.compile(model, mode=mode)
            """,
            line=7,
            column=38,
            message=(
                'mode=mode is decided at run time; if it is "reduce-overhead" or "max-autotune", inductor uses CUDA '
                'graphs, which hang or slow down on ROCm'
            ),
        ),
        # the project's own wrapper: mapped once, inside, for every caller that hands it a
        # CUDA-graph mode (ROC101 leaves those callers; a direct call beside it is its own)
        Case(
            """
            import torch

            def compile_with_warmup(fn, mode=None, warmup=1):
                compiled = torch.compile(fn, mode=mode)
                for _ in range(warmup):
                    compiled()
                return compiled

            step = compile_with_warmup(lambda: 1, mode="reduce-overhead")
            """,
            expected="""
            import torch

            is_rocm = getattr(torch.version, "hip", None) is not None

            def compile_with_warmup(fn, mode=None, warmup=1):
                compiled = torch.compile(fn, mode={"reduce-overhead": "default", "max-autotune": "max-autotune-no-cudagraphs"}.get(mode, mode) if is_rocm else mode)
                for _ in range(warmup):
                    compiled()
                return compiled

            step = compile_with_warmup(lambda: 1, mode="reduce-overhead")
            """,
            line=4,
            column=39,
            message=(
                'mode=mode is what the callers of `compile_with_warmup` hand it (snippet.py:9 "reduce-overhead"); '
                '"reduce-overhead" and "max-autotune" turn on CUDA graphs, which hang or slow down on ROCm: map it '
                'here, once for every caller'
            ),
        ),
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
                'mode=os.environ["COMPILE_MODE"] is decided at run time; if it is "reduce-overhead" or "max-'
                'autotune", inductor uses CUDA graphs, which hang or slow down on ROCm'
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
                'mode=cfg.compile_mode is decided at run time; if it is "reduce-overhead" or "max-autotune", inductor'
                ' uses CUDA graphs, which hang or slow down on ROCm'
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
            if kind == "wrapper" and mapped_inside(self, call, value):
                continue  # the project's wrapper maps the mode where it calls torch.compile
            for leaf in self.mode_leaves(value):
                if literal_string(leaf) is not None or self.in_rocm_branch(leaf) or self.in_cpu_branch(leaf):
                    continue
                if isinstance(leaf, cst.Name) and leaf.value == "None":
                    continue
                local = self._local_decision(leaf)
                if local is not None:
                    self._report_local(leaf, local)
                    continue
                wrapper = wrapper_of(self, leaf)
                hazards = hazards_reaching(self, *wrapper[:3]) if wrapper is not None else None
                if hazards is not None:  # the project's own wrapper: what its callers hand it decides
                    if not hazards:
                        continue  # no caller in the project hands it a CUDA-graph mode (the default: ROC101/ROC102)
                elif self._known_value(leaf):
                    continue
                if decided_elsewhere(self, leaf) or decided_by_parametrize(self, leaf):
                    continue  # decided (and gated by ROC105) where it is stored: one gate covers every reader
                if isinstance(leaf, cst.Call) and isinstance(leaf.func, cst.Name) and leaf.func.value == MODE_MAPPER:
                    continue
                source = self.context.source(leaf)
                shown = source if len(source) <= 40 else source[:37] + "..."
                message = (f"mode={shown} is decided at run time; if it is \"reduce-overhead\" or"
                           f" \"max-autotune\", inductor uses CUDA graphs, which hang or slow down on ROCm")
                if hazards:
                    more = f" and {len(hazards) - 1} more" if len(hazards) > 1 else ""
                    message = (f"mode={shown} is what the callers of `{wrapper[1]}` hand it ({hazards[0]}{more});"
                               f" \"reduce-overhead\" and \"max-autotune\" turn on CUDA graphs, which hang or slow"
                               f" down on ROCm: map it here, once for every caller")
                self.report(leaf, message, fix=self._mapped(leaf, source))

    def _local_decision(self, leaf: cst.BaseExpression):
        """(the CUDA-graph literals, the assignments' other values) where ``leaf`` is a local
        name of a function bound only by plain assignments of string literals, None or values
        already gated on ROCm, and every read of it is a compile call's mode (or only tested
        for truth, compared with None, shown): the mode is decided there, and gated there. None
        otherwise."""
        from rocmport.analysis.resolve import binding_reads, only_assigned

        if not isinstance(leaf, cst.Name) or self.parameter_of(leaf) is not None:
            return None
        facts = self.context.facts
        if facts is not None and facts.binding_kinds().get(leaf.value) == {"module"}:
            return None  # a module constant: ROC105's
        if not any(isinstance(a, cst.FunctionDef) for a in self.ancestors(leaf)):
            return None
        values = only_assigned(self, leaf)
        if not values:
            return None
        hazards = []
        for value in values:
            text = literal_string(value)
            if text in ROCM_MODES and not self.in_rocm_branch(value):
                hazards.append(value)
            elif text is None and not (isinstance(value, cst.Name) and value.value == "None") and not (
                    isinstance(value, cst.IfExp) and mentions_rocm(value.test, self.context.gate_name)):
                return None
        for read in binding_reads(self, leaf):
            arg = self.parent(read)
            call = self.parent(arg) if isinstance(arg, cst.Arg) else None
            if isinstance(arg, cst.Arg) and arg.keyword is not None and arg.keyword.value == "mode" \
                    and isinstance(call, cst.Call) and self.compile_call_kind(call) is not None:
                continue
            if not self._harmless(read):
                return None
        return hazards

    def _harmless(self, read: cst.Name) -> bool:
        """A read a ROCm form of the mode changes nothing for: a truth test, a comparison with
        None, a formatted or printed value."""
        parent = self.parent(read)
        if isinstance(parent, (cst.If, cst.While, cst.IfExp)) and getattr(parent, "test", None) is read:
            return True
        if isinstance(parent, cst.UnaryOperation) and isinstance(parent.operator, cst.Not):
            return True
        if isinstance(parent, cst.Comparison) and len(parent.comparisons) == 1:
            other = parent.comparisons[0].comparator if parent.left is read else parent.left
            return isinstance(other, cst.Name) and other.value == "None" and isinstance(
                parent.comparisons[0].operator, (cst.Is, cst.IsNot, cst.Equal, cst.NotEqual))
        return isinstance(parent, cst.FormattedStringExpression)

    def _report_local(self, leaf: cst.Name, hazards) -> None:
        """The mode decided by a local's assignment: reported once, at the literal, gated there."""
        seen = self.context.shared("roc104:locals", lambda c: set())
        for value in hazards:
            if id(value) in seen:
                continue
            seen.add(id(value))
            literal = literal_string(value)
            rocm = ROCM_MODES[literal]
            line = self.context.position(leaf).start.line
            self.report(
                value,
                f'"{literal}" is assigned to `{leaf.value}`, the mode torch.compile gets at line {line}: it turns on'
                f" CUDA graphs, which hang or slow down on ROCm; gate it here, where it is decided",
                fix=self.gated_literal_fix(value, rocm, f'Use mode="{rocm}" on ROCm where it is decided'),
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
