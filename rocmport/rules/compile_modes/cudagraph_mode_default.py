"""ROC105 cudagraph-mode-default: A CUDA-graph compile mode stored as a default value (a config field, a parameter default).

The rule's documentation is its class's (`rocmport rule ROC105` prints it).
"""

from __future__ import annotations

import re
from typing import Optional

import libcst as cst
from libcst.metadata import ParentNodeProvider, PositionProvider

from rocmport.analysis.needs import String
from rocmport.analysis.resolve import function_summary
from rocmport.analysis.syntax import literal_string
from rocmport.findings import Applicability, Fix
from rocmport.rules.base import Case, Rule

from .common import ROCM_MODES


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
    TRIGGERS = ("reduce-overhead", "max-autotune")  # the literal: NEEDS gives no word for a string
    NEEDS = String(*ROCM_MODES, whole=True)  # visit_SimpleString: the literal itself
    METADATA_DEPENDENCIES = (PositionProvider, ParentNodeProvider)

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
