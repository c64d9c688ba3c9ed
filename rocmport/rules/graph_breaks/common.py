"""Shared by the rules of the graph_breaks family."""

from __future__ import annotations

import ast

import libcst as cst
from libcst.metadata import ParentNodeProvider, PositionProvider, QualifiedNameProvider

from rocmport.analysis import regions as _regions
from rocmport.analysis.bindings import dotted
from rocmport.analysis.events import (
    RegionEvent,
)
from rocmport.analysis.names import COMPILE_NAMES
from rocmport.analysis.needs import Call, Decorator, Identifier, Import
from rocmport.findings import Applicability, Fix
from rocmport.rules.base import Rule


class GraphBreakRule(_regions.RegionRule, Rule):
    METADATA_DEPENDENCIES = (PositionProvider, ParentNodeProvider, QualifiedNameProvider)
    # torch.compile or torch.compiler.compile, as a decorator or a call (its first positional
    # argument: ``_regions.RegionAnalysis._mark_compiled``), or a project helper that compiles
    # (``support_compile``, ``maybe_compile(model)``): of this module or another, so the need
    # is a name that spells ``compile``, in a module that imports torch (what is compiled is
    # a function on tensors or a ``torch.nn.Module``)
    NEEDS = (Decorator(*COMPILE_NAMES) | Call(*COMPILE_NAMES, positional=True)
             | Identifier("compile", part=True) & Import("torch"))
    FIX_APPLICABILITY = Applicability.DISPLAY_ONLY
    REGION = "in_compiled"

    @classmethod
    def may_match(cls, facts) -> bool:
        # Hand-written (tests/test_prescan.py HAND_WRITTEN_MAY_MATCH): a name that spells
        # ``compile`` is everywhere in the torch package; only a decorator or helper that
        # the index says compiles (``effects.ModuleFacts.compilers``) makes compiled code.
        if facts.decorated_with(COMPILE_NAMES) or any(
                call.args and not isinstance(call.args[0], ast.Starred) for call in facts.calls_to(COMPILE_NAMES)):
            return True
        return cls.NEEDS.holds(facts) and project_compiles(facts)

    def hazard(self, node: cst.CSTNode, message: str) -> None:
        """Report ``node`` once: the first event of a node names the shortest chain."""
        if id(node) not in self._reported:
            self._reported.add(id(node))
            self.report(node, message, fix=Fix(Applicability.DISPLAY_ONLY, self.SUMMARY))

    @staticmethod
    def where(event: RegionEvent) -> str:
        """``inside `Model.forward`, compiled at line 40, via step() → norm()``."""
        text = f"inside `{event.region.compiled_label}`, compiled at line {event.region.line}"
        return text + (", via " + " → ".join(f"{s.label}()" for s in event.via) if event.via else "")


def project_compiles(facts) -> bool:
    """Could a decorator of the file, or a call whose callee spells ``compile``, be a project
    function (of this module or, through the index, another) that compiles what it is
    given?"""
    memo = facts.memo.get("graph_breaks:project_compiles")
    if memo is not None:
        return memo
    found = False
    tree = facts.tree
    if tree is not None:
        candidates = []
        for decorators in facts.decorators.values():
            candidates.extend(d.func if isinstance(d, ast.Call) else d for d in decorators)
        for node in facts.nodes(ast.ClassDef):
            candidates.extend(d.func if isinstance(d, ast.Call) else d for d in node.decorator_list)
        for key, calls in facts.calls.items():
            if "compile" in key.lower() and key not in ("compile", "re"):
                candidates.extend(c.func for c in calls if c.args)
            for call in calls:  # make_compiler(...)(fn)
                if isinstance(call.func, ast.Call) and call.args:
                    candidates.append(call.func.func)
        if candidates:
            from rocmport.analysis.effects import ModuleFacts
            from rocmport.analysis.index import ProjectIndex

            index = facts.index if facts.index is not None else ProjectIndex([facts.path] if facts.path else [])
            name = (index.module_name(facts.path) if facts.path else None) or "__main__"
            own = ModuleFacts(name, tree, lambda module, level: index.absolute(name, module, level), index.effects,
                              index.compiler)
            for func in candidates:
                spelled = dotted(func)
                if spelled is None:
                    continue
                root, _, rest = spelled.partition(".")
                if not rest and root not in own.imports:
                    kind = own.compiler(root)
                else:
                    full = own.resolve(func)
                    kind = index.compiler(full) if full and full.split(".", 1)[0] not in ("torch", "functools") \
                        else None
                if kind is not None:
                    found = True
                    break
    facts.memo["graph_breaks:project_compiles"] = found
    return found


PRE = "import torch\n"
REACH = """
        Compiled code is a function decorated with `@torch.compile` (or `@torch.compile(...)`),
        a function compiled by assignment (`f = torch.compile(f)`), a method compiled in place
        (`self.forward = torch.compile(self.forward)`: that class's method only), and the
        `forward` (or `__call__`) of a class of the file whose instance is compiled
        (`model = torch.compile(Model())`, `self.net = torch.compile(self.net)`). The analysis
        follows calls to functions and methods of the same file, through `self.method()` and
        instances of classes defined in the file, transitively; it does not enter code under
        `@torch.compiler.disable` / `torch._dynamo.disable` (an eager island), and follows only
        the compiled side of an `if torch.compiler.is_compiling():` guard. The message names
        the compiled function, the line where it is compiled and the call chain.

        Compiled code also includes what a project decorator or helper compiles, in this
        module or another one (found through the project index): a function or class
        decorated with a decorator that compiles the function, or the class's `forward`
        (`@support_compile`, `@compile_forward(dynamic=False)`), and what a helper that
        compiles its argument is given (`maybe_compile(model)`, `CompiledWrapper(Model())`,
        `model.forward = torch.compile(model.forward)` inside `maybe_compile`). Such a
        helper is recognised when it calls something named `*compile*` (torch.compile, a
        `functools.partial` of it, another such helper), and the file that uses it must
        spell `compile` in a name (the helper's, an import's; a comment or a string does not
        count).
        """
