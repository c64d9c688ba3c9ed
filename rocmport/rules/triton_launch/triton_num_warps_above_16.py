"""ROC503 triton-num-warps-above-16: num_warps above 16: more than 1024 threads per workgroup on AMD.

The rule's documentation is its class's (`rocmport rule ROC503` prints it).
"""

from __future__ import annotations

import ast
from typing import FrozenSet, Optional, Set

import libcst as cst

from rocmport.analysis.needs import Import, Keyword, Number
from rocmport.analysis.syntax import keyword
from rocmport.analysis.triton import (
    CONFIG_NAMES,
    TritonAnalysis,
    analysis,
    int_value,
)
from rocmport.findings import Applicability, Fix
from rocmport.rules.base import Case

from .common import KERNELS_OR_CONFIGS, TritonRule

MAX_WARPS = 16



class TritonNumWarps(TritonRule):
    CODE = "ROC503"
    NAME = "triton-num-warps-above-16"
    SUMMARY = "num_warps above 16: more than 1024 threads per workgroup on AMD."
    # a kernel or config, num_warps= of any launch, or a helper of a Triton file that decides
    # num_warps for its callers (`num_warps = 32`: the values above 16 that Triton accepts)
    NEEDS = (KERNELS_OR_CONFIGS | Keyword("num_warps", subscripted=True)
             | (Import("triton") & Number(*(2 ** k for k in range(5, 11)))))
    WHAT = """
        `num_warps=` above 16 in a Triton launch (`kernel[grid](..., num_warps=32)`) or a
        `triton.Config(..., num_warps=32)`, given as a literal or a constant; and a helper
        of a Triton file that decides `num_warps` for its callers' launches and returns it
        (`num_warps = 32` in a `calculate_settings(n)` that returns `BLOCK_SIZE, num_warps`),
        reported there, where the value is decided, once for every launch.
        """
    WHY = """
        On AMD a warp is a 64-lane wavefront and a workgroup holds at most 1024 threads, so
        `num_warps` above 16 fails to launch. NVIDIA allows 32 warps of 32 threads.
        """
    EXAMPLE = """
        import triton
        cfg = triton.Config({"BLOCK": 4096}, num_warps=32)
        """
    FIXED_EXAMPLE = """
        import triton
        cfg = triton.Config({"BLOCK": 4096}, num_warps=16 if is_rocm else 32)
        """
    FIX = """
        Safe: the value becomes `16 if is_rocm else <value>`, unchanged on NVIDIA. The number
        of warps changes speed, not results. A constant that is used for anything other than
        `num_warps=` is rewritten only with `--unsafe-fixes`; so is a helper's value that the
        helper also computes with before returning it.
        """
    FIX_APPLICABILITY = Applicability.SAFE
    VALID = (
        Case("""
            import triton
            cfg = triton.Config({"BLOCK": 1024}, num_warps=16)
            """),
        Case("""
            import triton
            cfg = triton.Config({"BLOCK": 1024}, num_warps=16 if is_rocm else 32)
            """),
        Case("""
            import triton
            import torch
            if torch.version.hip is None:
                W = 32
            else:
                W = 16
            """),
        Case("""
            import triton
            def f(x):
                return launch(x, num_warps=32)
            """),
        # a helper's value already gated on ROCm, or decided only off ROCm
        Case("""
            import triton

            def calculate_settings(n):
                num_warps = 4
                if n >= 32768:
                    num_warps = 32 if not is_hip() else 16
                return n, num_warps
            """),
        Case("""
            import torch
            import triton

            def calculate_settings(n):
                num_warps = 4
                if torch.version.hip is not None:
                    num_warps = 16
                else:
                    num_warps = 32
                return n, num_warps
            """),
        # not returned (a local of the function), or no Triton in the file
        Case("""
            import triton

            def describe(n):
                num_warps = 32
                print(num_warps * n)
                return n
            """),
        Case("""
            def calculate_settings(n):
                num_warps = 32
                return n, num_warps
            """),
    )
    INVALID = (
        # the helper every launch takes its num_warps from: gated where it is decided
        Case(
            """
            import triton

            def calculate_settings(n):
                BLOCK_SIZE = triton.next_power_of_2(n)
                num_warps = 4
                if BLOCK_SIZE >= 32768:
                    num_warps = 32
                elif BLOCK_SIZE >= 8192:
                    num_warps = 16
                return BLOCK_SIZE, num_warps
            """,
            expected="""
            import torch
            import triton

            is_rocm = getattr(torch.version, "hip", None) is not None

            def calculate_settings(n):
                BLOCK_SIZE = triton.next_power_of_2(n)
                num_warps = 4
                if BLOCK_SIZE >= 32768:
                    num_warps = 16 if is_rocm else 32
                elif BLOCK_SIZE >= 8192:
                    num_warps = 16
                return BLOCK_SIZE, num_warps
            """,
            line=7,
            column=21,
            message=(
                "num_warps = 32 is returned by `calculate_settings` for its callers' Triton launches: 2048 threads "
                'per workgroup on AMD (64-lane warps), above the limit of 1024: the kernel fails to launch; cap it at'
                ' 16 on ROCm, here where it is decided'
            ),
        ),
        # near miss of a safe fix: the helper also computes with it (unsafe)
        Case(
            """
            import triton

            def settings(n):
                num_warps = 32
                threads = num_warps * 32
                return n // threads, num_warps
            """,
            line=4,
            column=17,
            message=(
                "num_warps = 32 is returned by `settings` for its callers' Triton launches: 2048 threads per "
                'workgroup on AMD (64-lane warps), above the limit of 1024: the kernel fails to launch; cap it at 16 '
                'on ROCm, here where it is decided'
            ),
        ),
        Case(
            """
            import triton
            cfg = triton.Config({"BLOCK": 4096}, num_warps=32)
            """,
            expected="""
            import torch
            import triton

            is_rocm = getattr(torch.version, "hip", None) is not None

            cfg = triton.Config({"BLOCK": 4096}, num_warps=16 if is_rocm else 32)
            """,
            line=2,
            column=48,
            message=(
                'num_warps=32 launches 2048 threads per workgroup on AMD (64-lane warps), above the limit of 1024: '
                'the kernel fails to launch; cap it at 16 on ROCm'
            ),
        ),
        Case(
            """
            import triton
            import triton.language as tl
            @triton.jit
            def k(x, B: tl.constexpr):
                pass
            W = 32
            def f(x):
                k[(1,)](x, B=1024, num_warps=W)
            """,
            expected="""
            import torch
            import triton
            import triton.language as tl

            is_rocm = getattr(torch.version, "hip", None) is not None

            @triton.jit
            def k(x, B: tl.constexpr):
                pass
            W = 16 if is_rocm else 32
            def f(x):
                k[(1,)](x, B=1024, num_warps=W)
            """,
            line=6,
            column=5,
            message=(
                'W = 32 launches 2048 threads per workgroup on AMD (64-lane warps), above the limit of 1024: the '
                'kernel fails to launch; cap it at 16 on ROCm'
            ),
        ),
    )

    @classmethod
    def may_match(cls, facts) -> bool:
        """A kernel, a config or a launch's num_warps= (``check``), or a function of a file that
        imports triton assigning a num_warps-named variable an integer above 16 (``visit_FunctionDef``,
        which reads only such an assignment): a file with triton, a parameter named num_warps
        and a 32 elsewhere is neither."""
        if not cls.NEEDS.holds(facts):
            return False
        if facts.tree is None or (KERNELS_OR_CONFIGS | Keyword("num_warps", subscripted=True)).holds(facts):
            return True
        for node in facts.nodes(ast.Assign, ast.AnnAssign):
            targets = node.targets if type(node) is ast.Assign else [node.target]
            value = node.value
            if any(type(t) is ast.Name and t.id.lower() == "num_warps" for t in targets) and \
                    type(value) is ast.Constant and type(value.value) is int and value.value > MAX_WARPS:
                return True
        return False

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        """A helper that decides num_warps for its callers' launches and returns it
        (``BLOCK_SIZE, num_warps = calculate_settings(n)``): the value is gated where it is
        decided, in the helper, once for every launch (also those in other modules)."""
        if "num_warps" not in self.context.text or not _imports_triton(self.context.facts):
            return
        helpers = _helper_names(self.context.facts)
        if helpers is not None and node.name.value not in helpers:
            return
        returned = _returned_names(node)
        for name in returned:
            if name.lower() != "num_warps":
                continue
            for target, value in _assignments(node, name):
                if not isinstance(value, cst.Integer) or int_value(value) is None or int_value(value) <= MAX_WARPS:
                    continue
                a = analysis(self.context)
                if id(value) in self._seen() or self.skipped(a, value):
                    continue
                self._seen().add(id(value))
                others = _other_loads(node, name)
                warps = int_value(value)
                self.report(
                    value,
                    f"{name} = {warps} is returned by `{node.name.value}` for its callers' Triton launches: {warps * 64}"
                    " threads per workgroup on AMD (64-lane warps), above the limit of 1024: the kernel fails to"
                    " launch; cap it at 16 on ROCm, here where it is decided",
                    fix=Fix(Applicability.UNSAFE if others else Applicability.SAFE,
                            "Cap num_warps at 16 on ROCm where the helper decides it",
                            (self.context.replace(value, self.gated(value, MAX_WARPS)),), ("gate",)))

    def _seen(self) -> Set[int]:
        return self.context.shared("roc503:seen", lambda c: set())

    def check(self, a: TritonAnalysis) -> None:
        seen: Set[int] = self._seen()
        calls = list(a.configs) + [c for c in a.subscript_calls]
        for call in calls:
            arg = keyword(call, "num_warps")
            if arg is None and a.call_is(call, CONFIG_NAMES):
                positional = [x for x in call.args if x.keyword is None]
                arg = positional[1] if len(positional) > 1 else None
            if arg is None or self.skipped(a, call, arg.value):
                continue
            node, name = a.constant(arg.value)
            value = int_value(node)
            if value is None or value <= MAX_WARPS or id(node) in seen or self.skipped(a, node):
                continue
            seen.add(id(node))
            applicability = Applicability.SAFE
            if name is not None and not self._only_num_warps(a, name):
                applicability = Applicability.UNSAFE
            what = f"{name} = {value}" if name else f"num_warps={value}"
            self.report(node, f"{what} launches {value * 64} threads per workgroup on AMD (64-lane warps),"
                              " above the limit of 1024: the kernel fails to launch; cap it at 16 on ROCm",
                        fix=Fix(applicability, "Cap num_warps at 16 on ROCm",
                                (self.context.replace(node, self.gated(node, MAX_WARPS)),), ("gate",)))

    def _only_num_warps(self, a: TritonAnalysis, name: str) -> bool:
        import re

        text = self.context.text
        uses = len(re.findall(rf"(?<![\w.]){re.escape(name)}(?!\w)", text))
        warps = len(re.findall(rf"\bnum_warps\s*=\s*{re.escape(name)}(?!\w)", text))
        return uses == warps + 1


def _imports_triton(facts) -> bool:
    if facts is None:
        return True
    return any(full == "triton" or full.startswith("triton.")
               for fulls in facts.binding_kinds_imports().values() for full in fulls)


def _helper_names(facts) -> Optional[FrozenSet[str]]:
    """The names of the functions that CPython's tree of the file shows returning a name
    spelled ``num_warps`` (in any case; a nested function's ``return`` counts for the one
    around it too): no other can be such a helper. None without the tree."""
    if facts is None or facts.tree is None:
        return None
    memo = facts.memo.get("roc503:helpers")
    if memo is None:
        lines = []
        for node in facts.nodes(ast.Return):
            if node.value is not None:
                values = node.value.elts if type(node.value) is ast.Tuple else [node.value]
                if any(type(v) is ast.Name and v.id.lower() == "num_warps" for v in values):
                    lines.append(node.lineno)
        memo = facts.memo["roc503:helpers"] = frozenset(
            fn.name for fn in facts.nodes(ast.FunctionDef, ast.AsyncFunctionDef) if lines
            and any(fn.lineno <= line <= (fn.end_lineno or fn.lineno) for line in lines))
    return memo


def _own_statements(function: cst.FunctionDef):
    """The nodes of ``function``'s body, not those of functions or classes nested in it."""
    stack = list(function.body.children)
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        stack.extend(node.children)


def _returned_names(function: cst.FunctionDef) -> Set[str]:
    names: Set[str] = set()
    for node in _own_statements(function):
        if isinstance(node, cst.Return) and node.value is not None:
            values = node.value.elements if isinstance(node.value, cst.Tuple) else [node.value]
            for value in values:
                value = getattr(value, "value", value)
                if isinstance(value, cst.Name):
                    names.add(value.value)
    return names


def _assignments(function: cst.FunctionDef, name: str):
    for node in _own_statements(function):
        if isinstance(node, cst.Assign) and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name) \
                and node.targets[0].target.value == name:
            yield node.targets[0].target, node.value
        elif isinstance(node, cst.AnnAssign) and isinstance(node.target, cst.Name) and node.target.value == name \
                and node.value is not None:
            yield node.target, node.value


def _other_loads(function: cst.FunctionDef, name: str) -> bool:
    """Is ``name`` read in ``function`` other than by its return statements (arithmetic on
    it would change on ROCm too)?"""
    returned = set()
    for node in _own_statements(function):
        if isinstance(node, cst.Return) and node.value is not None:
            values = node.value.elements if isinstance(node.value, cst.Tuple) else [node.value]
            returned.update(id(getattr(v, "value", v)) for v in values)
    targets = {id(t) for t, _ in _assignments(function, name)}
    for node in _own_statements(function):
        if isinstance(node, cst.Name) and node.value == name and id(node) not in returned and id(node) not in targets:
            return True
    return False
