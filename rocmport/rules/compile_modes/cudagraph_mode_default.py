"""ROC105 cudagraph-mode-default: A CUDA-graph compile mode stored as a default value (a config field, a parameter default).

The rule's documentation is its class's (`rocmport rule ROC105` prints it).
"""

from __future__ import annotations

import os
import re
from typing import List, Optional, Tuple

import libcst as cst
from libcst.metadata import ParentNodeProvider, PositionProvider

from rocmport.analysis.names import is_module_compile_call, is_torch_compile
from rocmport.analysis.needs import String
from rocmport.analysis.resolve import function_summary
from rocmport.analysis.syntax import dotted_name, keyword, literal_string, mentions_rocm
from rocmport.findings import Applicability, Fix
from rocmport.rules.base import Case, Rule

from .common import ROCM_MODES, found_readers, other_readers, parameter_source_fix, quote_of, source_fix

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
    SUMMARY = "A CUDA-graph compile mode stored as a default value (a config field, a constant, an option)."
    WHAT = """
        The literal "reduce-overhead" or "max-autotune" stored where a compile mode is kept
        for later: a class attribute or dataclass field (`field(default=...)` too), an
        attribute assignment, a module-level constant, an argparse option's default, a
        parameter default, a config-dict value or a test parameter
        (`@pytest.mark.parametrize("mode", ["max-autotune-no-cudagraphs", "reduce-overhead"])`,
        on a test or its class) whose name contains "mode" (where its CUDA-graph case would,
        without the graphs, be another case it runs, `["default", "reduce-overhead"]`, the test
        is one of CUDA graphs: reported, and left to the user). Not flagged: a
        local variable or a parameter that the same code hands to `torch.compile(mode=...)`
        (ROC104 or ROC101/ROC102 fix those), the text in strings, comments, docstrings,
        lists of choices or comparisons, a value already gated on ROCm, and a value whose
        every compile call in the file already maps it on ROCm (`mode={...}.get(m, m) if
        is_rocm else m`, or runs only off ROCm): the hazard is fixed where the value is used,
        so the finding goes with it.
        """
    WHY = """
        The value ends up in `torch.compile(mode=...)` somewhere else, often in another file,
        where it turns on CUDA graphs (see ROC101).
        """
    EXAMPLE = """
        @dataclass
        class PolicyConfig:
            compile_mode: str = "reduce-overhead"

        def build(model, cfg: PolicyConfig):
            return torch.compile(model, mode=cfg.compile_mode)
        """
    FIXED_EXAMPLE = """
        @dataclass
        class PolicyConfig:
            compile_mode: str = "default" if is_rocm else "reduce-overhead"

        def build(model, cfg: PolicyConfig):
            return torch.compile(model, mode=cfg.compile_mode)
        """
    FIX = """
        Where the value is decided, once: `"default" if is_rocm else "reduce-overhead"` at the
        stored literal, which covers every compile call that reads it, also those rocmport
        cannot see, and leaves those call sites unchanged (ROC104 does not map a mode that is
        decided, and gated, where it is stored). rocmport follows the value through the project
        (the files it checks, by the stored name: `cfg.compile_mode`, `cfg["compile_mode"]`,
        `args.compile_mode` of an `--compile-mode` option, a constant read by name or as
        `mod.NAME`, through a local name, a kwargs dict splatted into the compile call, another
        field it is stored into, or a project function that hands it to torch.compile; for a
        test parameter, its reads in the tests it parametrizes). Safe where every reader hands
        it to torch.compile's mode, or only logs or formats it (the log then shows the ROCm
        mode), tests its truth or compares it with None (a mode and its ROCm form are both
        non-empty strings); unsafe where it is also read for something else
        (compared, returned, passed on), which then sees the ROCm mode on ROCm too: the
        message names the place. On NVIDIA the value is the same. Display-only where no
        compile call of the project reads it (the value may reach one in a library), and for
        a parameter default or a dict under the bare key "mode". A value read from a
        configuration file, a saved configuration (a model hub) or the command line is the
        user's choice and is not changed; a configuration saved on ROCm records the ROCm mode.
        """
    FIX_APPLICABILITY = Applicability.SAFE
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
        # gated where it is decided (this rule's fix)
        Case("""
            import argparse
            import torch

            is_rocm = getattr(torch.version, "hip", None) is not None

            parser = argparse.ArgumentParser()
            parser.add_argument("--compile-mode", default="default" if is_rocm else "reduce-overhead")
            args = parser.parse_args()
            model = torch.compile(model, mode=args.compile_mode)
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
        # an option whose name says nothing of a mode, the mode among its choices
        Case("""
            import argparse
            parser = argparse.ArgumentParser()
            parser.add_argument("--backend", default="inductor", choices=["default", "reduce-overhead"])
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
        # the default every reader hands to torch.compile: gated where it is decided, once
        Case(
            """
            import torch
            from dataclasses import dataclass

            @dataclass
            class PolicyConfig:
                compile_mode: str = "max-autotune"

            class Policy(torch.nn.Module):
                def __init__(self, config: PolicyConfig):
                    super().__init__()
                    self.sample = torch.compile(self.sample, mode=config.compile_mode)
                    self.forward = torch.compile(self.forward, mode=config.compile_mode)
            """,
            expected="""
            import torch
            from dataclasses import dataclass

            is_rocm = getattr(torch.version, "hip", None) is not None

            @dataclass
            class PolicyConfig:
                compile_mode: str = "max-autotune-no-cudagraphs" if is_rocm else "max-autotune"

            class Policy(torch.nn.Module):
                def __init__(self, config: PolicyConfig):
                    super().__init__()
                    self.sample = torch.compile(self.sample, mode=config.compile_mode)
                    self.forward = torch.compile(self.forward, mode=config.compile_mode)
            """,
            line=6,
            column=25,
            message=(
                '"max-autotune" is stored as a class attribute `compile_mode`, the mode torch.compile gets at line 11'
                ' and 1 more: it turns on CUDA graphs, which hang or slow down on ROCm; gate it here, where it is '
                'decided'
            ),
        ),
        # near miss of a gated reader: one reader gated by hand, another not: the source is gated
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
                '"reduce-overhead" is stored as a class attribute `compile_mode`, the mode torch.compile gets at line'
                ' 12 and 1 more: it turns on CUDA graphs, which hang or slow down on ROCm; gate it here, where it is '
                'decided'
            ),
        ),
        # an argparse option, a dataclass field(default=...), a module constant
        Case(
            """
            import argparse
            import torch

            parser = argparse.ArgumentParser()
            parser.add_argument("--compile-mode", type=str, default="reduce-overhead")
            args = parser.parse_args()
            model = torch.compile(model, mode=args.compile_mode)
            """,
            expected="""
            import argparse
            import torch

            is_rocm = getattr(torch.version, "hip", None) is not None

            parser = argparse.ArgumentParser()
            parser.add_argument("--compile-mode", type=str, default="default" if is_rocm else "reduce-overhead")
            args = parser.parse_args()
            model = torch.compile(model, mode=args.compile_mode)
            """,
            line=5,
            column=57,
            message=(
                '"reduce-overhead" is stored as the default of the option `compile_mode`, the mode torch.compile gets'
                ' at line 7: it turns on CUDA graphs, which hang or slow down on ROCm; gate it here, where it is '
                'decided'
            ),
        ),
        Case(
            """
            import torch
            from dataclasses import dataclass, field

            @dataclass
            class TrainConfig:
                torch_compile_mode: str = field(default="max-autotune", metadata={"help": "the mode"})

            def setup(model, cfg: TrainConfig):
                kwargs = {"mode": cfg.torch_compile_mode, "dynamic": False}
                return torch.compile(model, **kwargs)
            """,
            expected="""
            import torch
            from dataclasses import dataclass, field

            is_rocm = getattr(torch.version, "hip", None) is not None

            @dataclass
            class TrainConfig:
                torch_compile_mode: str = field(default="max-autotune-no-cudagraphs" if is_rocm else "max-autotune", metadata={"help": "the mode"})

            def setup(model, cfg: TrainConfig):
                kwargs = {"mode": cfg.torch_compile_mode, "dynamic": False}
                return torch.compile(model, **kwargs)
            """,
            line=6,
            column=45,
            message=(
                '"max-autotune" is stored as a class attribute `torch_compile_mode`, the mode torch.compile gets at '
                'line 9: it turns on CUDA graphs, which hang or slow down on ROCm; gate it here, where it is decided'
            ),
        ),
        Case(
            """
            import logging
            import torch

            COMPILE_MODE = "reduce-overhead"

            def build(model):
                logging.info("compiling with %s", COMPILE_MODE)
                mode = COMPILE_MODE
                return torch.compile(model, mode=mode)
            """,
            expected="""
            import logging
            import torch

            is_rocm = getattr(torch.version, "hip", None) is not None

            COMPILE_MODE = "default" if is_rocm else "reduce-overhead"

            def build(model):
                logging.info("compiling with %s", COMPILE_MODE)
                mode = COMPILE_MODE
                return torch.compile(model, mode=mode)
            """,
            line=4,
            column=16,
            message=(
                '"reduce-overhead" is stored as a module constant `COMPILE_MODE`, the mode torch.compile gets at line'
                ' 8: it turns on CUDA graphs, which hang or slow down on ROCm; gate it here, where it is decided; it '
                'is also logged (line 7), which then shows "default" on ROCm'
            ),
        ),
        # near miss of a safe source fix: the value is also compared; gating it changes that
        # test on ROCm too (an unsafe fix, which names it)
        Case(
            """
            import torch

            class Runner:
                compile_mode = "reduce-overhead"

                def build(self, model):
                    if self.compile_mode == "reduce-overhead":
                        torch._dynamo.config.cache_size_limit = 64
                    return torch.compile(model, mode=self.compile_mode)
            """,
            line=4,
            column=20,
            message=(
                '"reduce-overhead" is stored as a class attribute `compile_mode`, the mode torch.compile gets at line'
                ' 9: it turns on CUDA graphs, which hang or slow down on ROCm; gate it here, where it is decided; it '
                'is also compared (line 7), which then sees "default" on ROCm'
            ),
        ),
        # a test parameter: the compile calls of every test method that takes it read it
        Case(
            """
            import pytest
            import torch

            @pytest.mark.parametrize("mode", ["max-autotune-no-cudagraphs", "reduce-overhead"])
            class TestCompiled:
                def test_add(self, mode):
                    f = torch.compile(lambda x: x + 1, mode=mode)
                    assert f(1) == 2

                def test_mul(self, mode):
                    g = torch.compile(lambda x: x * 2, mode=mode, fullgraph=mode is not None)
                    assert g(2) == 4
            """,
            expected="""
            import pytest
            import torch

            is_rocm = getattr(torch.version, "hip", None) is not None

            @pytest.mark.parametrize("mode", ["max-autotune-no-cudagraphs", "default" if is_rocm else "reduce-overhead"])
            class TestCompiled:
                def test_add(self, mode):
                    f = torch.compile(lambda x: x + 1, mode=mode)
                    assert f(1) == 2

                def test_mul(self, mode):
                    g = torch.compile(lambda x: x * 2, mode=mode, fullgraph=mode is not None)
                    assert g(2) == 4
            """,
            path="test_compiled.py",
            line=4,
            column=65,
            message=(
                '"reduce-overhead" is stored as a test parameter `mode`, the mode torch.compile gets at line 7 and 1 '
                'more: it turns on CUDA graphs, which hang or slow down on ROCm; gate it here, where it is decided'
            ),
        ),
        # no compile call reads it here: display-only
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
                '"max-autotune" is stored as the default of parameter `mode`; where it reaches torch.compile it turns'
                ' on CUDA graphs, which hang or slow down on ROCm: gate it at the compile call'
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
            found = self._decisions(node, name)
            applies = source_fix(self, found, _Literal()) if found is not None else None
            if applies is None:
                if where.startswith("a module constant") and re.search(
                        rf"\bmode\s*=\s*{re.escape(name)}\b", self.context.text):
                    continue  # a constant this file hands to a compile call: ROC104 maps it there
                self.report(
                    node,
                    f'"{value}" is stored as {where}; where it reaches torch.compile it turns on CUDA graphs,'
                    " which hang or slow down on ROCm: gate it at the compile call",
                    fix=Fix(Applicability.DISPLAY_ONLY, "Gate the mode where it is handed to torch.compile"),
                )
                continue
            others, modes = other_readers(self, found)
            shown = [r for r in found_readers(self, found) if r.kind == "shown"]
            rocm = ROCM_MODES[value]
            message = (f'"{value}" is stored as {where}, the mode torch.compile gets at {_places(self, modes)}: it turns'
                       " on CUDA graphs, which hang or slow down on ROCm; gate it here, where it is decided")
            if others:
                message += f'; it is also {others[0].what} ({_places(self, others)}), which then sees "{rocm}" on ROCm'
            elif shown:
                message += f'; it is also {shown[0].what} ({_places(self, shown)}), which then shows "{rocm}" on ROCm'
            self.report(node, message, fix=Fix(applies, f'Use "{rocm}" on ROCm where the mode is decided',
                                               (self.context.replace(node, self._gated(node, rocm)),), ("gate",)))

    def _decisions(self, node: cst.SimpleString, name: str):
        """The project's decisions of the name the literal is stored as: an attribute (a class
        attribute, a field, an attribute or key assignment, an argparse option), a module
        constant of this file, or a test parameter (the tests that read it)."""
        from rocmport.analysis import decisions
        from rocmport.analysis.resolve import module_name

        test = _parametrize_of(self, node)
        if test is not None:
            return parameter_source_fix(self, test[0], test[1])[1]
        owner = self._owner(node)
        parent = self.parent(node)
        if (isinstance(parent, (cst.Assign, cst.AnnAssign)) and isinstance(owner, cst.Module)
                and any(isinstance(t, cst.Name) for t in _targets(parent))):
            return decisions.constant(self.context, module_name(self), name)
        if isinstance(parent, cst.Param):
            return None
        return decisions.attribute(self.context, name)

    def _gated(self, node: cst.SimpleString, rocm: str) -> str:
        original = self.context.source(node)
        q = quote_of(original)
        text = f"{q}{rocm}{q} if {self.context.gate_name} else {original}"
        if not isinstance(self.parent(node), (cst.Arg, cst.DictElement, cst.Param, cst.Assign, cst.AnnAssign,
                                              cst.Element)):
            text = f"({text})"
        return text

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
                if isinstance(target, cst.Name) and isinstance(owner, cst.FunctionDef):
                    continue  # a local: the compile call that uses it is ROC104's
                if isinstance(owner, cst.ClassDef):
                    kind = "a class attribute"
                elif isinstance(target, cst.Name):
                    kind = "a module constant"
                else:
                    kind = "an attribute"  # self.compile_mode = ...
                return f"{kind} `{name}`"
        test = _parametrize_of(self, node)
        if test is not None:
            return f"a test parameter `{test[1]}`" if "mode" in test[1].lower() else None
        if isinstance(parent, cst.Arg) and parent.keyword is not None and parent.keyword.value == "default":
            call = self.parent(parent)
            if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) \
                    and call.func.attr.value == "add_argument":
                dest = _argparse_dest(call)
                if dest is not None and "mode" in dest.lower():
                    return f"the default of the option `{dest}`"
            if isinstance(call, cst.Call) and (dotted_name(call.func) or "").rpartition(".")[2] in ("field", "Field"):
                holder = self.parent(call)
                if isinstance(holder, (cst.Assign, cst.AnnAssign)) and isinstance(self._owner(holder), cst.ClassDef):
                    for target in _targets(holder):
                        if isinstance(target, cst.Name) and "mode" in target.value.lower():
                            return f"a class attribute `{target.value}`"
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


class _Literal:
    """A stored literal as ``source_fix`` asks about it: one ROC105 rewrites where it stands."""

    in_place = True


def _targets(stmt) -> List[cst.BaseExpression]:
    return [t.target for t in stmt.targets] if isinstance(stmt, cst.Assign) else [stmt.target]


def _argparse_dest(call: cst.Call) -> Optional[str]:
    """The destination of ``parser.add_argument(...)``: ``dest=``, else the first long option
    (``--compile-mode``: ``compile_mode``)."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "dest":
            return literal_string(arg.value)
    options = [literal_string(a.value) for a in call.args if a.keyword is None and literal_string(a.value)]
    longs = [o for o in options if o.startswith("--")]
    chosen = longs[0][2:] if longs else (options[0].lstrip("-") if options else None)
    return chosen.replace("-", "_") if chosen else None


def _places(rule, readers) -> str:
    """``line 12`` (``modeling.py:443`` in another file) and how many more lines, for a message."""
    lines = {(reader.path, reader.line) for reader in readers}
    if not lines:
        return ""
    # the nearest first: this file, then the files of the same directory, and so on up
    here = os.path.abspath(rule.context.path or "")
    first = min(readers, key=lambda r: (-len(os.path.commonpath([here, os.path.abspath(r.path)]))
                                        if os.path.isabs(here) else 0, r.path, r.line))
    here = rule.context.path and os.path.abspath(first.path) == os.path.abspath(rule.context.path)
    where = f"line {first.line}" if here else f"{_short(first.path)}:{first.line}"
    more = len(lines) - 1
    return where + (f" and {more} more" if more else "")


def _short(path: str) -> str:
    parts = path.replace("\\", "/").split("/")
    return "/".join(parts[-2:])


def _parametrize_of(rule, node: cst.CSTNode):
    """(the decorated function or class, the parameter's name) when ``node`` is one of the
    values ``@pytest.mark.parametrize("name", [...])`` gives a test parameter (the value for
    one name of several, in a tuple; or ``pytest.param(value, ...)``)."""
    child, current = node, rule.parent(node)
    position = None
    if isinstance(current, cst.Element) and isinstance(rule.parent(current), (cst.List, cst.Tuple)):
        container = rule.parent(current)
        outer = rule.parent(rule.parent(container))  # Element of the values list, or the Arg itself
        if isinstance(rule.parent(container), cst.Element) and isinstance(rule.parent(rule.parent(container)),
                                                                         (cst.List, cst.Tuple)):
            position = [e for e in container.elements].index(current)  # one name of several
            child, current = rule.parent(container), rule.parent(rule.parent(container))
        else:
            child, current = current, container
        del outer
    elif isinstance(current, cst.Arg) and isinstance(rule.parent(current), cst.Call) \
            and (dotted_name(rule.parent(current).func) or "").endswith(".param"):
        call = rule.parent(current)
        if call.args[0] is not current:
            return None
        element = rule.parent(call)
        if not (isinstance(element, cst.Element) and isinstance(rule.parent(element), (cst.List, cst.Tuple))):
            return None
        current = rule.parent(element)
        position = 0
    else:
        return None
    arg = rule.parent(current)
    call = rule.parent(arg) if isinstance(arg, cst.Arg) else None
    if not (isinstance(call, cst.Call) and (dotted_name(call.func) or "").endswith("parametrize")
            and len(call.args) >= 2 and call.args[1] is arg):
        return None
    decorator = rule.parent(call)
    holder = rule.parent(decorator) if isinstance(decorator, cst.Decorator) else None
    if not isinstance(holder, (cst.FunctionDef, cst.ClassDef)):
        return None
    names = [n.strip() for n in (literal_string(call.args[0].value) or "").split(",") if n.strip()]
    if not names or (position is None and len(names) != 1) or (position is not None and position >= len(names)):
        return None
    return holder, names[position or 0]
