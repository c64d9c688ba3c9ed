"""ROC603 env-set-after-inductor-import: An inductor environment variable set after torch._inductor was imported: no effect.

The rule's documentation is its class's (`rocmport rule ROC603` prints it).
"""

from __future__ import annotations

import re
from typing import List, Optional, Tuple

import libcst as cst

from rocmport.analysis import walk as _walk
from rocmport.analysis.names import COMPILE_NAMES, qualified_names
from rocmport.analysis.syntax import dotted_name
from rocmport.findings import Applicability, Fix
from rocmport.rules.base import Case

from .common import READ_AT_IMPORT, EnvRule, EnvWrite, env_write

# Modules whose import imports torch._inductor.config (checked on torch 2.13).
_INDUCTOR_IMPORTERS = re.compile(r"^torch\.(?:_inductor|_dynamo)(?:\.|$)")


class LateEnv(EnvRule):
    CODE = "ROC603"
    NAME = "env-set-after-inductor-import"
    TRIGGERS = ("TORCHINDUCTOR_", "TORCH_COMPILE_DEBUG")
    NEEDS = env_write(*READ_AT_IMPORT)
    SUMMARY = "An inductor environment variable set after torch._inductor was imported: no effect."
    WHAT = """
        An inductor environment variable that is read when `torch._inductor.config` is first
        imported (`TORCHINDUCTOR_MAX_AUTOTUNE*`, `_CUDAGRAPHS`, `_MAX_AUTOTUNE_GEMM_BACKENDS`,
        `_COORDINATE_DESCENT_TUNING`, `_MEMORY_PLANNING`, `_BENCHMARK_KERNEL`,
        `_MULTI_KERNEL`, `_SHAPE_PADDING`, `_FREEZING`, `TORCH_COMPILE_DEBUG`) set in this
        process' `os.environ` after the same module imported `torch._inductor`, or something
        that imports it (`torch._dynamo`), or ran `torch.compile`: at module level after such
        a statement, or in a function after such a statement of the function or of the module.
        Any value counts, a "0" meant as a ROCm mitigation included.
        """
    WHY = """
        Inductor reads these variables once, when its config module is first imported;
        setting them later does nothing in this process (only child processes see them). A
        mitigation such as `TORCHINDUCTOR_CUDAGRAPHS=0` set too late leaves CUDA graphs on.
        """
    EXAMPLE = """
        import torch._dynamo
        os.environ["TORCHINDUCTOR_CUDAGRAPHS"] = "0"
        """
    FIX = """
        Display-only: move the assignment above the first import of `torch._inductor` /
        `torch._dynamo` (or into the launch environment), or set
        `torch._inductor.config.<name>` instead (thread-local from torch 2.12).
        """
    FIX_APPLICABILITY = Applicability.DISPLAY_ONLY
    VALID = (
        Case("""
            import os
            os.environ["TORCHINDUCTOR_CUDAGRAPHS"] = "0"
            import torch._dynamo
            """),
        Case("""
            import os
            import torch
            os.environ["TORCHINDUCTOR_MAX_AUTOTUNE"] = "0"
            """),
        Case("""
            import torch._dynamo
            import subprocess
            subprocess.run(c, env={"TORCHINDUCTOR_MAX_AUTOTUNE": "0"})
            """),
        Case("""
            import os
            import torch._inductor.config
            os.environ["TORCHINDUCTOR_CACHE_DIR"] = "/tmp/c"
            """),
    )
    INVALID = (
        Case(
            """
            import os
            import torch._inductor.config
            os.environ["TORCHINDUCTOR_CUDAGRAPHS"] = "0"
            """,
            line=3,
            column=12,
            message=(
                "TORCHINDUCTOR_CUDAGRAPHS is set after `import torch._inductor.config` (line 2), which imports "
                "torch._inductor.config; inductor reads it only then, so this has no effect in this process; set it "
                "before line 2 or in the launch environment"
            ),
        ),
        Case(
            """
            import os
            from torch import _dynamo
            def setup():
                os.environ.setdefault("TORCHINDUCTOR_FREEZING", "1")
            """,
            line=4,
            column=27,
            message=(
                "TORCHINDUCTOR_FREEZING is set after `from torch import _dynamo` (line 2), which imports "
                "torch._inductor.config; inductor reads it only then, so this has no effect in this process; set it "
                "before line 2 or in the launch environment"
            ),
        ),
        Case(
            """
            import os
            import torch
            m = torch.compile(m)
            os.environ["TORCH_COMPILE_DEBUG"] = "1"
            """,
            line=4,
            column=12,
            message=(
                "TORCH_COMPILE_DEBUG is set after a torch.compile call (line 3), which imports "
                "torch._inductor.config; inductor reads it only then, so this has no effect in this process; set it "
                "before line 3 or in the launch environment"
            ),
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        self._events: List[Tuple[int, int, str, Optional[cst.CSTNode]]] = []  # (offset, row, what, function)

        rule = self

        class _Events(cst.CSTVisitor):
            def __init__(self):
                self.function: List[cst.CSTNode] = []

            def visit_FunctionDef(self, n):
                self.function.append(n)

            def leave_FunctionDef(self, n):
                self.function.pop()

            def visit_Lambda(self, n):
                return False

            def _add(self, n, what):
                start, _ = rule.context.span(n)
                owner = self.function[-1] if self.function else None
                rule._events.append((start, rule.context.lines.position(start).row, what, owner))

            def visit_Import(self, n):
                for alias in n.names:
                    name = dotted_name(alias.name) or ""
                    if _INDUCTOR_IMPORTERS.match(name):
                        self._add(n, f"`import {name}`")

            def visit_ImportFrom(self, n):
                if n.relative or n.module is None:
                    return
                module = dotted_name(n.module) or ""
                if _INDUCTOR_IMPORTERS.match(module):
                    self._add(n, f"`from {module} import ...`")
                elif module == "torch" and not isinstance(n.names, cst.ImportStar):
                    for alias in n.names:
                        if isinstance(alias.name, cst.Name) and alias.name.value in ("_dynamo", "_inductor"):
                            self._add(n, f"`from torch import {alias.name.value}`")

            def visit_Call(self, n):
                if qualified_names(rule, n.func, COMPILE_NAMES) & COMPILE_NAMES:
                    self._add(n, "a torch.compile call")

        _walk.visit(node, _Events())

    def consider(self, write: EnvWrite) -> None:
        if not write.live or write.var not in READ_AT_IMPORT or id(write.key_node) in self._seen:
            return
        self._seen.add(id(write.key_node))
        start, _ = self.context.span(write.anchor)
        function = None
        for ancestor in self.ancestors(write.anchor):
            if isinstance(ancestor, cst.FunctionDef):
                function = ancestor
                break
        for offset, row, what, owner in sorted(self._events, key=lambda e: e[0]):
            if offset >= start:
                break
            if owner is None or owner is function:
                self.report(
                    write.key_node,
                    f"{write.var} is set after {what} (line {row}), which imports torch._inductor.config; inductor"
                    f" reads it only then,"
                    f" so this has no effect in this process;"
                    f" set it before line {row} or in the launch environment",
                    fix=Fix(Applicability.DISPLAY_ONLY, f"Move it above line {row}"),
                )
                return
