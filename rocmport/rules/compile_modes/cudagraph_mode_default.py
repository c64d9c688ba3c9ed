"""ROC105 cudagraph-mode-default: A CUDA-graph compile mode stored as a default value (a config field, a parameter default).

The rule's documentation is its class's (`rocmport rule ROC105` prints it).
"""

from __future__ import annotations

import re
from typing import List, Optional, Tuple

import libcst as cst
from libcst.metadata import ParentNodeProvider, PositionProvider

from rocmport.analysis.names import is_module_compile_call, is_torch_compile
from rocmport.analysis.needs import String
from rocmport.analysis.resolve import function_summary
from rocmport.analysis.syntax import keyword, literal_string, mentions_rocm
from rocmport.findings import Applicability, Fix
from rocmport.rules.base import Case, Rule

from .common import ROCM_MODES

MODE_MAPPER = "rocmport_compile_mode"  # the prelude's mapper (ROC104's older fix)


def _reads(expr: cst.CSTNode, name: str) -> bool:
    """Does ``expr`` read ``name``: as a name, an attribute, a string key (``cfg["name"]``,
    ``cfg.get("name")``)?"""
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Name) and node.value == name:
            return True
        if isinstance(node, cst.SimpleString) and literal_string(node) == name:
            return True
        stack.extend(node.children)
    return False


class ModeDefault(Rule):
    CODE = "ROC105"
    NAME = "cudagraph-mode-default"
    SUMMARY = "A CUDA-graph compile mode stored as a default value (a config field, a parameter default)."
    WHAT = """
        The literal "reduce-overhead" or "max-autotune" stored where a compile mode is kept
        for later: a class attribute or dataclass field, an attribute assignment, a
        module-level constant, a parameter default or a config-dict value whose name contains
        "mode". Not flagged: a local variable or a parameter that the same code hands to
        `torch.compile(mode=...)` (ROC104 fixes that call), the text in strings, comments,
        docstrings, lists of choices or comparisons, and a value whose every reader in the
        file is a compile call that already maps it on ROCm (`mode={...}.get(m, m) if is_rocm
        else m`, ROC104's fix, or runs only off ROCm): the hazard is fixed where the value is
        used, so the finding goes with it.
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
    TRIGGERS = ("reduce-overhead", "max-autotune")  # the literal: NEEDS gives no word for a string
    NEEDS = String(*ROCM_MODES, whole=True)  # visit_SimpleString: the literal itself
    METADATA_DEPENDENCIES = (PositionProvider, ParentNodeProvider)

    VALID = (
        # findings follow fixes: every compile call that reads the value gates it on ROCm
        Case("""
            import torch
            from dataclasses import dataclass

            is_rocm = getattr(torch.version, "hip", None) is not None

            @dataclass
            class PolicyConfig:
                compile_mode: str = "reduce-overhead"

            def build(model, cfg):
                return torch.compile(model, mode={"reduce-overhead": "default"}.get(
                    cfg.compile_mode, cfg.compile_mode) if is_rocm else cfg.compile_mode)
            """),
        Case("""
            import torch
            def f(m):
                mode = "reduce-overhead"
                return torch.compile(m, mode=mode)
            """),
        Case("""
            import torch
            def build(m, compile_mode="max-autotune"):
                return torch.compile(m, mode=compile_mode)
            """),
        Case("""
            x = "max-autotune-no-cudagraphs"
            MODE = x
            """),
        Case("""
            if mode == "reduce-overhead":
                pass
            """),
        Case("""
            def test_kwargs(kw):
                assert kw == {"backend": "inductor", "mode": "reduce-overhead"}
            """),
        Case("""
            def test_kwargs(kw):
                assert {"compile_mode": "max-autotune"} != kw
            """),
    )
    INVALID = (
        # near miss of a gated reader: one reader gated, another not
        Case(
            """
            import torch
            from dataclasses import dataclass

            is_rocm = getattr(torch.version, "hip", None) is not None

            @dataclass
            class PolicyConfig:
                compile_mode: str = "reduce-overhead"

            def build(model, cfg):
                fast = torch.compile(model, mode={"reduce-overhead": "default"}.get(
                    cfg.compile_mode, cfg.compile_mode) if is_rocm else cfg.compile_mode)
                slow = torch.compile(model.decoder, mode=cfg.compile_mode)
                return fast, slow
            """,
            line=8,
            column=25,
            message=(
                '"reduce-overhead" is stored as a class attribute `compile_mode`; where it reaches torch.compile it '
                'turns on CUDA graphs, which hang or slow down on ROCm: gate it at the compile call'
            ),
        ),
        Case(
            """
            from dataclasses import dataclass
            @dataclass
            class C:
                compile_mode: str = "reduce-overhead"
            """,
            line=4,
            column=25,
            message=(
                '"reduce-overhead" is stored as a class attribute `compile_mode`; where it reaches torch.compile it '
                'turns on CUDA graphs, which hang or slow down on ROCm: gate it at the compile call'
            ),
        ),
        Case(
            """
            def build(m, mode="max-autotune"):
                return m
            """,
            line=1,
            column=19,
            message=(
                '"max-autotune" is stored as the default of parameter `mode`; where it reaches torch.compile it '
                'turns on CUDA graphs, which hang or slow down on ROCm: gate it at the compile call'
            ),
        ),
        Case(
            """
            CFG = {"compile_mode": "reduce-overhead"}
            """,
            line=1,
            column=24,
            message=(
                '"reduce-overhead" is stored as the config value "compile_mode"; where it reaches torch.compile it '
                'turns on CUDA graphs, which hang or slow down on ROCm: gate it at the compile call'
            ),
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        self._stored: List[Tuple[cst.SimpleString, str, str, str]] = []  # node, value, where, name
        self._consumers: List[Tuple[cst.Call, cst.BaseExpression]] = []  # compile calls and their mode

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        value = literal_string(node)
        if value not in ROCM_MODES:
            return
        where = self._stored_as(node)
        if where is None or self.in_rocm_branch(node):
            return
        self._stored.append((node, value, where, where.split("`")[1] if "`" in where else where.split('"')[1]))

    def visit_Call(self, node: cst.Call) -> None:
        mode = keyword(node, "mode")
        if mode is not None and (
                is_torch_compile(self, node.func) or is_module_compile_call(self, node)):
            self._consumers.append((node, mode.value))

    def leave_Module(self, original_node: cst.Module) -> None:
        for node, value, where, name in self._stored:
            if self._gated_downstream(name):
                continue  # every compile call of the file that reads it gates it on ROCm: fixed there
            self.report(
                node,
                f'"{value}" is stored as {where}; where it reaches torch.compile it turns on CUDA graphs,'
                " which hang or slow down on ROCm: gate it at the compile call",
                fix=Fix(Applicability.DISPLAY_ONLY, "Gate the mode where it is handed to torch.compile"),
            )

    def _gated_downstream(self, name: str) -> bool:
        """Do the compile calls of this file that read ``name`` (``mode=cfg.compile_mode``,
        ``mode=compile_mode``, ``mode=cfg["compile_mode"]``) exist, and all map it on ROCm (the
        fix of ROC104: ``{...}.get(m, m) if is_rocm else m``, ``rocmport_compile_mode(m)``) or
        run only off ROCm? Then the hazard is fixed where the value is used."""
        readers = [(call, mode) for call, mode in self._consumers if _reads(mode, name)]
        return bool(readers) and all(self._gates(call, mode) for call, mode in readers)

    def _gates(self, call: cst.Call, mode: cst.BaseExpression) -> bool:
        if self.in_rocm_branch(call):
            return True
        if isinstance(mode, cst.IfExp) and mentions_rocm(mode.test, self.context.gate_name):
            return True
        return isinstance(mode, cst.Call) and isinstance(mode.func, cst.Name) and mode.func.value == MODE_MAPPER

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
