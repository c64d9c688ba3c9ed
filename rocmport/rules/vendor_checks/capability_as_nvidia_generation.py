"""ROC702 capability-as-nvidia-generation: A compute-capability comparison read as an NVIDIA generation; AMD GPUs report (9, x).

The rule's documentation is its class's (`rocmport rule ROC702` prints it).
"""

from __future__ import annotations

import re
from types import SimpleNamespace
from typing import FrozenSet, List, Optional, Set, Tuple

import libcst as cst

from rocmport.analysis import bindings
from rocmport.analysis.syntax import negated_gate
from rocmport.findings import Applicability, Fix
from rocmport.rules.base import Case

from .common import CAPABILITY, NVIDIA_ONLY, PROPERTIES, VendorRule, arch_doc, facts_doc, mentions, walk


def _raises(node: cst.CSTNode) -> bool:
    """A block (or statement) that raises: a rejection, not a feature."""
    return any(isinstance(n, cst.Raise) for n in walk(node))
_AMD_HAS = re.compile(r"(?i)fp8|float8|bf16|bfloat16|tf32|e4m3|e5m2")


def _literal_ints(node: cst.CSTNode) -> bool:
    """An int, a tuple of ints, or a list / tuple / set of those."""
    if isinstance(node, cst.Integer):
        return True
    if isinstance(node, cst.UnaryOperation) and isinstance(node.expression, cst.Integer):
        return True
    if isinstance(node, (cst.Tuple, cst.List, cst.Set)):
        return bool(node.elements) and all(_literal_ints(e.value) for e in node.elements)
    return False


def _ast_literal_ints(node) -> bool:
    """``_literal_ints`` on CPython's tree (a superset: any unary operator on an int)."""
    import ast

    kind = type(node)
    if kind is ast.Constant:
        return type(node.value) is int
    if kind is ast.UnaryOp:
        return type(node.operand) is ast.Constant and type(node.operand.value) is int
    if kind in (ast.Tuple, ast.List, ast.Set):
        return bool(node.elts) and all(_ast_literal_ints(e) for e in node.elts)
    return False


def _ast_capability(node, facts, names: Optional[Set[str]]) -> bool:
    """A superset of ``CapabilityAsNvidiaGeneration._capability`` on CPython's tree."""
    import ast

    kind = type(node)
    if kind is ast.Call:
        return facts.may_be(node.func, CAPABILITY)
    if kind is ast.Subscript:
        return _ast_capability(node.value, facts, names)
    if kind is ast.Attribute and node.attr in ("major", "minor"):
        value = node.value
        if type(value) is ast.Call:
            return facts.may_be(value.func, PROPERTIES)
        return type(value) is ast.Name and (names is None or value.id in names)
    if kind is ast.BinOp:
        return _ast_capability(node.left, facts, names) or _ast_capability(node.right, facts, names)
    if kind is ast.Name:
        return names is None or node.id in names
    return False


def _major(node: cst.CSTNode) -> Optional[int]:
    """The major version a literal threshold names: ``9`` for 9, (9, 0) and 90 (``sm`` style)."""
    if isinstance(node, cst.Integer):
        value = int(node.value.replace("_", ""), 0)
        return value // 10 if value >= 20 else value
    if isinstance(node, (cst.Tuple, cst.List, cst.Set)) and node.elements:
        return _major(node.elements[0].value)
    return None


def _names_a_generation(node: cst.Comparison) -> bool:
    """A threshold of Hopper or later (major 9 or more: ``>= (9, 0)``, ``== 9``, ``>= 90``),
    which AMD GPUs (9, x) meet or equal. Lower ones (``major >= 7`` for fp16, ``== 8`` for
    Ampere) answer "a recent GPU" or "not that one" on AMD, which is what the code expects."""
    operands = [node.left] + [c.comparator for c in node.comparisons]
    return any((_major(o) or 0) >= 9 for o in operands if _literal_ints(o))


def _capability_names(context) -> Optional[Set[str]]:
    """Names assigned from something that mentions get_device_capability /
    get_device_properties or another such name (None: unknown, the file's tree is missing)."""
    facts = context.facts
    if facts is None or facts.tree is None:
        return None
    if "roc702_capability_names" not in facts.memo:
        facts.memo["roc702_capability_names"] = _assigned_from_capability(facts)
    return facts.memo["roc702_capability_names"]


def _module_assigned(facts) -> Set[str]:
    """The names that assignments of the module's own statements bind (not in a function or
    a class: where ``values`` reads at module level), unpacking included."""
    import ast

    found = facts.memo.get("roc702_module_assigned")
    if found is None:
        found = set()
        stack = list(getattr(facts.tree, "body", ()))
        while stack:
            node = stack.pop()
            kind = type(node)
            if kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
                continue
            if kind is ast.Assign or kind is ast.AnnAssign:
                for target in node.targets if kind is ast.Assign else (node.target,):
                    found.update(n.id for n in bindings.walk(target) if type(n) is ast.Name)
                continue
            stack.extend(child for child in ast.iter_child_nodes(node)
                         if isinstance(child, (ast.stmt, ast.excepthandler)) or type(child).__name__ == "match_case")
        facts.memo["roc702_module_assigned"] = found
    return found


def _assigned_from_capability(facts) -> Set[str]:
    import ast

    assigns = []
    for node in facts.nodes(ast.Assign, ast.AnnAssign):
        if node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            bound = {n.id for t in targets for n in bindings.walk(t) if isinstance(n, ast.Name)}
            used = set()
            for n in bindings.walk(node.value):
                kind = type(n)
                if kind is ast.Name:
                    used.add(n.id)
                elif kind is ast.Attribute:
                    used.add(n.attr)
            assigns.append((bound, used))
    names: Set[str] = {"get_device_capability", "get_device_properties"}
    changed = True
    while changed:
        changed = False
        for bound, used in assigns:
            if used & names and not bound <= names:
                names |= bound
                changed = True
    return names


class CapabilityAsNvidiaGeneration(VendorRule):
    CODE = "ROC702"
    NAME = "capability-as-nvidia-generation"
    SUMMARY = "A compute-capability comparison read as an NVIDIA generation; AMD GPUs report (9, x)."
    TRIGGERS = ("capability", "get_device_properties")
    FIX_APPLICABILITY = Applicability.SAFE
    WHAT = """
        A comparison of `torch.cuda.get_device_capability()` with a number or a tuple of
        numbers: the call itself, its `[0]`, `.major` / `.minor` of
        `torch.cuda.get_device_properties()`, names assigned from them in the same scope
        (`major, minor = torch.cuda.get_device_capability()`, `cap = ...`) and arithmetic on
        them (`major * 10 + minor >= 90`), when the comparison names Hopper or later (a
        major of 9 or more: `>= (9, 0)`, `== 9`, `>= 90`, which MI200 equals and MI300 / MI350
        pass) or decides an NVIDIA-only feature or fp8 / bf16 / tf32. Lower thresholds that
        guard nothing of the kind (`major >= 7` for fp16, `== 8` for an Ampere-only kernel)
        are not findings: on AMD they answer "a recent GPU" or "not that one", as the code
        expects. Printing or logging the capability is not a finding, nor is a comparison
        already gated (`not is_rocm and ...`, under `if torch.version.cuda:` or
        `if not torch.version.hip:`, after `if torch.version.hip: return`) or in code for
        another accelerator (an `hpu` / `xpu` / `npu` path, function or branch).
        """
    WHY = """
        On ROCm `get_device_capability()` reports the gfx version, so comparisons written
        against NVIDIA generations pick Hopper-only (`>= (9, 0)`) or Ampere (`major >= 8`)
        paths on AMD: FA3, TMA, sm90 kernels, Hopper-tuned tiles (11 threads: torchtitan#3738
        and #4778, sglang#28486, vllm#40620).

""" + facts_doc("capability") + """

""" + arch_doc() + """
        """
    EXAMPLE = """
        if torch.cuda.get_device_capability() >= (9, 0):
            from flash_attn_interface import flash_attn_func
        """
    FIXED_EXAMPLE = """
        if not is_rocm and torch.cuda.get_device_capability() >= (9, 0):
            from flash_attn_interface import flash_attn_func
        """
    FIX = """
        Safe where the comparison guards an NVIDIA-only feature: FA3 (`flash_attn_interface`,
        `flash_attn_3`, `fa3`), TMA, wgmma, Hopper / Blackwell / `sm90`+ kernels, CUTLASS,
        DeepGEMM, FlashMLA, named in the guarded branch, in the rest of an `and` chain, in the
        name the result is assigned to (`use_fa3 = ...`) or in the name of the function that
        returns it (`def is_hopper(): return ...`), when the comparison says "this generation
        or later" (`>=`, `>`, `==`, `in`) and its branch does not raise. The comparison becomes
        `not is_rocm and <comparison>`: on NVIDIA `not False and x` is `x`; on ROCm the feature
        is off. A branch that also turns on something AMD has (bf16, fp8) is display-only, so
        that the gate cannot take it from AMD. A comparison that rejects GPUs (`< (10, 0)`,
        `!= (9, 0)`, a branch that raises) is display-only: gating it would let AMD through to
        the NVIDIA-only path. Elsewhere, notably for fp8 and bf16, which AMD GPUs have (a
        blanket gate lost
        fp8 on MI300, torchtitan#3760), it is display-only: test the feature
        (`torch.cuda.is_bf16_supported()`) or the architecture
        (`torch.cuda.get_device_properties(0).gcnArchName`) instead.
        """
    VALID = (
        Case("""
            import torch
            print(torch.cuda.get_device_capability())
            """),
        Case("""
            import torch
            if not is_rocm and torch.cuda.get_device_capability() >= (9, 0):
                import flash_attn_interface
            """),
        Case("""
            import torch
            if torch.version.hip is None:
                if torch.cuda.get_device_capability()[0] >= 9:
                    use_tma = True
            """),
        Case("""
            import torch
            if torch.version.cuda and torch.cuda.get_device_capability() >= (9, 0):
                use_fa3 = True
            """),
        Case("""
            import torch
            cap = torch.cuda.get_device_capability()
            logger.info('capability %s', cap)
            """),
        Case("""
            import mylib
            if mylib.get_device_capability() >= (9, 0):
                use_fa3 = True
            """),
        Case("""
            import torch
            # if torch.cuda.get_device_capability() >= (9, 0):
            s = 'get_device_capability() >= (9, 0)'
            """),
        Case("""
            import torch
            def fp16_ok():
                major, _ = torch.cuda.get_device_capability()
                return major >= 7
            """),
        Case("""
            import torch
            def fp6_kernel_ok():
                major, _ = torch.cuda.get_device_capability()
                if major != 8:
                    return False
                return True
            """),
        Case("""
            import torch
            def prefer_grouped():
                if torch.version.hip is not None or slow():
                    return False
                return torch.cuda.get_device_capability()[0] < 9
            """),
        Case("""
            import torch
            def hpu_fp8_range():
                return torch.cuda.get_device_capability() >= (9, 0)
            """),
    )
    INVALID = (
        Case(
            """
            import torch
            if torch.cuda.get_device_capability() >= (9, 0):
                import flash_attn_interface
            """,
            expected="""
            import torch

            {PRELUDE}

            if not is_rocm and torch.cuda.get_device_capability() >= (9, 0):
                import flash_attn_interface
            """,
            line=2,
            column=4,
            message=(
                "get_device_capability() is an AMD gfx version on ROCm (MI200 (9, 0), MI300 (9, 4), MI350 (9, 5)): "
                "this comparison reads it as an NVIDIA generation and picks an NVIDIA-only feature on AMD"
            ),
        ),
        Case(
            """
            import torch
            major, minor = torch.cuda.get_device_capability()
            use_tma = major >= 9
            """,
            expected="""
            import torch

            {PRELUDE}

            major, minor = torch.cuda.get_device_capability()
            use_tma = not is_rocm and major >= 9
            """,
            line=3,
            column=11,
            message=(
                "get_device_capability() is an AMD gfx version on ROCm (MI200 (9, 0), MI300 (9, 4), MI350 (9, 5)): "
                "this comparison reads it as an NVIDIA generation and picks an NVIDIA-only feature on AMD"
            ),
        ),
        Case(
            """
            import torch
            def is_hopper():
                return torch.cuda.get_device_capability()[0] == 9
            """,
            expected="""
            import torch

            {PRELUDE}

            def is_hopper():
                return not is_rocm and torch.cuda.get_device_capability()[0] == 9
            """,
            line=3,
            column=12,
            message=(
                "get_device_capability() is an AMD gfx version on ROCm (MI200 (9, 0), MI300 (9, 4), MI350 (9, 5)): "
                "this comparison reads it as an NVIDIA generation and picks an NVIDIA-only feature on AMD"
            ),
        ),
        Case(
            """
            import torch
            cap = torch.cuda.get_device_capability()
            if cap[0] >= 8:
                dtype = torch.bfloat16
            """,
            line=3,
            column=4,
            message=(
                "get_device_capability() is an AMD gfx version on ROCm (MI200 (9, 0), MI300 (9, 4), MI350 (9, 5)): "
                "this comparison reads it as an NVIDIA generation"
            ),
        ),
        Case(
            """
            import torch
            props = torch.cuda.get_device_properties(0)
            sm = props.major * 10 + props.minor
            if sm >= 89:
                use_fp8 = True
            """,
            line=4,
            column=4,
            message=(
                "get_device_capability() is an AMD gfx version on ROCm (MI200 (9, 0), MI300 (9, 4), MI350 (9, 5)): "
                "this comparison reads it as an NVIDIA generation"
            ),
        ),
        # reported, never gated: a branch that also enables bf16 (AMD has it), and comparisons
        # that reject GPUs (gating them would let AMD through)
        Case(
            """
            import torch
            if torch.cuda.get_device_capability()[0] >= 8:
                SUPPORTS_BF16 = True
                import flash_attn_interface
            """,
            line=2,
            column=4,
            message=(
                "get_device_capability() is an AMD gfx version on ROCm (MI200 (9, 0), MI300 (9, 4), MI350 (9, 5)): "
                "this comparison reads it as an NVIDIA generation"
            ),
        ),
        Case(
            """
            import torch
            if nvfp4 and torch.cuda.get_device_capability() < (10, 0):
                raise ValueError('needs Blackwell')
            """,
            line=2,
            column=14,
            message=(
                "get_device_capability() is an AMD gfx version on ROCm (MI200 (9, 0), MI300 (9, 4), MI350 (9, 5)): "
                "this comparison reads it as an NVIDIA generation"
            ),
        ),
        Case(
            """
            import torch
            if torch.cuda.get_device_capability() != (9, 0):
                raise RuntimeError('the SM90 kernel needs Hopper')
            """,
            line=2,
            column=4,
            message=(
                "get_device_capability() is an AMD gfx version on ROCm (MI200 (9, 0), MI300 (9, 4), MI350 (9, 5)): "
                "this comparison reads it as an NVIDIA generation"
            ),
        ),
        Case(
            """
            import torch
            if torch.cuda.get_device_capability()[0] == 9:
                raise ValueError('not supported on Hopper')
            """,
            line=2,
            column=4,
            message=(
                "get_device_capability() is an AMD gfx version on ROCm (MI200 (9, 0), MI300 (9, 4), MI350 (9, 5)): "
                "this comparison reads it as an NVIDIA generation"
            ),
        ),
    )

    @classmethod
    def may_match(cls, facts) -> bool:
        """Only ``visit_Comparison`` reports, and only for a comparison with a literal-int
        operand and an operand that ``_capability`` accepts: the same shapes on CPython's tree,
        with ``is_name`` widened to ``facts.may_be`` and a name to ``_capability_names``."""
        if not any(facts.calls_to(CAPABILITY | PROPERTIES)):
            return False
        if facts.tree is None:
            return True
        import ast

        names = _capability_names(SimpleNamespace(facts=facts))
        for node in facts.nodes(ast.Compare):
            operands = [node.left, *node.comparators]
            if any(_ast_literal_ints(o) for o in operands) and any(
                    _ast_capability(o, facts, names) for o in operands if not _ast_literal_ints(o)):
                return True
        return False

    @classmethod
    def reach(cls, facts) -> Optional[FrozenSet[str]]:
        """A comparison it reports names the capability or the properties, or a name assigned
        from them (``_capability_names``), whose values it reads in the functions around the
        comparison, else at module level (``values``). A name whose chain of values goes
        through a module-level name spells that name; one that does not spells the capability
        or the properties in its own function. So the words are those spellings and the
        names that module-level statements assign; the rest it reads is the statement's own."""
        names = _capability_names(SimpleNamespace(facts=facts))
        if names is None:
            return None
        return frozenset((names & _module_assigned(facts)) | facts.spellings(CAPABILITY | PROPERTIES))

    def visit_Comparison(self, node: cst.Comparison) -> None:
        operands = [node.left] + [c.comparator for c in node.comparisons]
        if not any(_literal_ints(o) for o in operands):
            return
        if not any(self._capability(o) for o in operands if not _literal_ints(o)):
            return
        if self.gated(node):
            return
        self._check(node)

    def _capability(self, node: cst.CSTNode, depth: int = 0) -> bool:
        if depth > 4:
            return False
        if isinstance(node, cst.Call):
            return self.is_name(node.func, CAPABILITY)
        if isinstance(node, cst.Subscript):
            return self._capability(node.value, depth + 1)
        if isinstance(node, cst.Attribute) and node.attr.value in ("major", "minor"):
            return self._properties(node.value, depth + 1)
        if isinstance(node, cst.BinaryOperation):
            return self._capability(node.left, depth + 1) or self._capability(node.right, depth + 1)
        if isinstance(node, cst.Name):
            if not self._may_hold_capability(node.value):
                return False  # spares the scope analysis of the file
            return any(self._capability(v, depth + 1) for v in self.values(node))
        return False

    def _may_hold_capability(self, name: str) -> bool:
        """Could ``name`` be assigned (anywhere in the file) from the capability or the device
        properties, directly or through other such names? A cheap superset, from CPython's
        tree, before the scope analysis that answers exactly."""
        names = self.context.shared("roc702_capability_names", _capability_names)
        return names is None or name in names

    def _properties(self, node: cst.CSTNode, depth: int) -> bool:
        if isinstance(node, cst.Call):
            return self.is_name(node.func, PROPERTIES)
        if isinstance(node, cst.Name) and depth <= 4:
            if not self._may_hold_capability(node.value):
                return False
            return any(self._properties(v, depth + 1) for v in self.values(node))
        return False

    def _check(self, node: cst.Comparison) -> None:
        message = ("get_device_capability() is an AMD gfx version on ROCm (MI200 (9, 0), MI300 (9, 4), "
                   "MI350 (9, 5)): this comparison reads it as an NVIDIA generation")
        site, guarded = self._guarded(node)
        enables = site is not None and self._enables(node) and not any(_raises(g) for g in guarded)
        amd_has = any(mentions(g, _AMD_HAS) for g in guarded)
        if enables and not amd_has and any(mentions(g, NVIDIA_ONLY) for g in guarded):
            text = f"{negated_gate(self.context.gate_name)} and {self.context.source(node)}"
            parent = self.parent(node)
            if isinstance(parent, cst.BooleanOperation) and isinstance(parent.operator, cst.Or):
                text = f"({text})"
            fix = Fix(Applicability.SAFE, "Keep the NVIDIA-only path off ROCm",
                      (self.context.replace(node, text),), ("gate",))
            self.report(node, message + " and picks an NVIDIA-only feature on AMD", fix=fix)
            return
        if not amd_has and not _names_a_generation(node):
            return  # `major >= 7` for fp16, `>= 8` for Triton: AMD GPUs pass, and have the feature
        hint = ("AMD GPUs have this feature: test it (torch.cuda.is_bf16_supported()) or the architecture "
                "(get_device_properties(0).gcnArchName) rather than gating it off"
                if amd_has else "Test the feature or the architecture (get_device_properties(0).gcnArchName) "
                                "on ROCm, or gate the NVIDIA-only path with `not is_rocm and ...`")
        self.display_only(node, message, hint)

    def _enables(self, node: cst.Comparison) -> bool:
        """Does the comparison say "at least / exactly this generation" (so that True turns
        the NVIDIA path on)? ``cap >= (9, 0)``, ``(9, 0) <= cap``, ``major == 9``, ``cap in
        [...]``; not ``cap < (10, 0)`` or ``!= (9, 0)``, which reject GPUs: gating those off
        ROCm would let AMD through."""
        if len(node.comparisons) != 1:
            return False
        op = node.comparisons[0].operator
        if self._capability(node.left):
            return isinstance(op, (cst.GreaterThanEqual, cst.GreaterThan, cst.Equal, cst.In))
        return isinstance(op, (cst.LessThanEqual, cst.LessThan, cst.Equal))

    def _guarded(self, node: cst.Comparison) -> Tuple[Optional[cst.CSTNode], List[cst.CSTNode]]:
        """(where the gate can go, the code the comparison decides): the comparison itself
        when it is a test, an ``and`` operand of one, an assigned value or a returned value;
        None when it is negated or used otherwise."""
        top, extra = node, []
        parent = self.parent(top)
        while isinstance(parent, cst.BooleanOperation):
            if isinstance(parent.operator, cst.And):
                extra.append(parent.right if parent.left is top else parent.left)
            top, parent = parent, self.parent(parent)
        if isinstance(parent, cst.If) and parent.test is top:
            return node, extra + [parent.body]
        if isinstance(parent, cst.IfExp) and parent.test is top:
            return node, extra + [parent.body]
        if isinstance(parent, (cst.Assign, cst.AnnAssign)):
            targets = [t.target for t in parent.targets] if isinstance(parent, cst.Assign) else [parent.target]
            return node, extra + targets
        if isinstance(parent, cst.Return):
            function = next((a for a in self.ancestors(parent) if isinstance(a, cst.FunctionDef)), None)
            return node, extra + ([function.name] if function is not None else [])
        return None, extra
