"""ROC701 cuda-version-on-rocm: `torch.version.cuda` used as a version or as "a GPU build is present": it is None on ROCm.

The rule's documentation is its class's (`rocmport rule ROC701` prints it).
"""

from __future__ import annotations

import re
from typing import FrozenSet, List, Optional, Set

import libcst as cst

from rocmport.analysis.needs import Name
from rocmport.analysis.syntax import dotted_name, mentions_rocm
from rocmport.findings import Applicability, Fix
from rocmport.rules.base import Case

from .common import (
    CAPABILITY,
    NVIDIA_ONLY,
    PRE,
    PROPERTIES,
    VendorRule,
    exits,
    facts_doc,
    is_none,
    mentions,
    reads_cuda_version,
    statement_of,
    walk,
)

CUDA_VERSION = frozenset({"torch.version.cuda"})
_VERSION_CALLS = frozenset({"float", "int", "len", "parse", "Version", "LooseVersion", "StrictVersion",
                            "parse_version"})
_ORDERING = (cst.LessThan, cst.LessThanEqual, cst.GreaterThan, cst.GreaterThanEqual)
_NVIDIA_WORD = re.compile(r"(?i)nvidia")
# Code that only makes sense with NVIDIA's toolchain: a "GPU build" test that guards it is
# really a "CUDA build" test, so it must not be widened to ROCm.
_NVIDIA_TOOLCHAIN = re.compile(
    r"(?i)nvcc|nvidia|nvml|cudnn|cublas|cusparse|cufft|curand|nvrtc|nvtx|cutlass|ptx|cuda_home|-arch|gencode"
    r"|(?:^|[^a-z])(?:sm_?\d{2,3}a?|compute_\d{2,3})(?:[^a-z0-9]|$)|cuda_?version|\bcu\d{2,3}\b")


class CudaVersionOnRocm(VendorRule):
    CODE = "ROC701"
    NAME = "cuda-version-on-rocm"
    SUMMARY = "`torch.version.cuda` used as a version or as \"a GPU build is present\": it is None on ROCm."
    NEEDS = Name(*CUDA_VERSION)
    FIX_APPLICABILITY = Applicability.SAFE
    WHAT = """
        `torch.version.cuda` (in any spelling of `torch.version`) used
        - as a version: `float(...)`, `int(...)`, `version.parse(...)`, `Version(...)`,
          `LooseVersion(...)`, a method or subscript on it (`.split(".")`, `[0]`), an ordering
          comparison (`>= "11.8"`), `"..." in torch.version.cuda`, `"cu" + torch.version.cuda`;
        - as "a GPU build is present": the test of an `if` / `while` / conditional expression /
          `assert` (alone or as an operand of `and` / `or` there), negated with `not`, passed to
          `bool(...)`, or compared with `None`. `torch.version.cuda or "N/A"` used as a value
          is not a test.
        Not reported: printing, logging or formatting it, `==` / `!=` with a string (False on
        ROCm, which is usually what a check for one CUDA version means), code that also tests
        `torch.version.hip` (or another ROCm test), version uses guarded by a test of
        `torch.version.cuda` (`if torch.version.cuda is not None and float(...) >= 11:`, an
        earlier `if torch.version.cuda is None: return`), and a truthiness test whose guarded
        code reads the version again (it is a None guard). A value copied to a variable first
        is not followed.
        """
    WHY = """
        `torch.version.cuda` is None on ROCm builds. As a version it raises (`float(None)`,
        `None.split`); as a truth value it silently takes the CPU or "disabled" branch, for
        example turning bf16 off on an MI300 (13 threads: DeepSpeed#6909, pytorch#97013,
        bitsandbytes#1599, torchtune#597, vllm#3481).

""" + facts_doc("detection") + """
        """
    EXAMPLE = """
        if torch.version.cuda:
            device = "cuda"
        if float(torch.version.cuda) >= 11.0:
            use_bf16 = True
        """
    FIXED_EXAMPLE = """
        if torch.version.cuda or torch.version.hip:
            device = "cuda"
        if torch.version.cuda is not None and float(torch.version.cuda) >= 11.0:
            use_bf16 = True
        """
    FIX = """
        Safe where the intent is clear, display-only elsewhere.
        - "A GPU build is present": in the test of an `if` / conditional expression whose
          guarded code does not use NVIDIA's toolchain (nvcc, `-arch`, `sm_90`, cuDNN, NVML,
          CUDA_HOME...) nor the version itself, `torch.version.cuda` becomes
          `(torch.version.cuda or torch.version.hip)`: on NVIDIA and CPU builds (`hip` is None)
          the value is exactly the old one; on ROCm it is the HIP version, so the GPU branch
          is taken. `torch.version.rocm` is never generated (it does not exist on older torch).
        - A version use in a test (`if` / `while` / conditional expression / `and` / `or`
          operand, or a comparison assigned to a name) gets a None guard:
          `torch.version.cuda is not None and <test>`. On NVIDIA `True and x` is `x`; on ROCm
          the test is False instead of raising, so the CUDA-version-specific branch is skipped.
        - Anything else (an assignment such as `HAS_CUDA = torch.version.cuda is not None`,
          `x = float(torch.version.cuda)`, a negated version test) is display-only: decide
          whether the code means "CUDA" or "any GPU" and test `torch.version.hip` for ROCm.
        """
    VALID = (
        Case(PRE + "print('CUDA', torch.version.cuda)\n"),
        Case(PRE + "info = {'cuda': torch.version.cuda, 'hip': torch.version.hip}\n"),
        Case(PRE + "if torch.version.cuda or torch.version.hip:\n    device = 'cuda'\n"),
        Case(PRE + "if torch.version.hip:\n    x = 1\nelif float(torch.version.cuda) >= 11:\n    x = 2\n"),
        Case(PRE + "if torch.version.cuda is not None and float(torch.version.cuda) >= 11:\n    x = 2\n"),
        Case(PRE + "if torch.version.cuda:\n    major = int(torch.version.cuda.split('.')[0])\n"),
        Case(PRE + "def f():\n    if torch.version.cuda is None:\n        return None\n"
             "    return float(torch.version.cuda)\n"),
        Case(PRE + "if torch.version.cuda == '11.8':\n    x = 1\n"),
        Case(PRE + "# if float(torch.version.cuda) >= 11:\ns = 'torch.version.cuda.split()'\n"),
        Case("import my\nif float(my.version.cuda) > 1:\n    pass\n"),
        Case(PRE + "logger.info(f'cuda {torch.version.cuda}')\n"),
        Case(PRE + "print(f\"CUDA: {torch.version.cuda or 'N/A'}\")\nlabel = torch.version.cuda or 'cpu'\n"),
        Case(PRE + "IS_ROCM = torch.version.hip is not None\nIS_CUDA = torch.version.cuda is not None\n"),
        Case(PRE + "def why_not(x):\n    if x.device.type != 'cuda' or torch.version.cuda is None:\n"
             "        return 'needs an NVIDIA CUDA device'\n"),
    )
    INVALID = (
        Case(PRE + "if torch.version.cuda:\n    device = 'cuda'\nelse:\n    device = 'cpu'\n",
             PRE + "if torch.version.cuda or torch.version.hip:\n    device = 'cuda'\nelse:\n    device = 'cpu'\n"),
        Case(PRE + "use_gpu = True if torch.version.cuda is not None else False\n",
             PRE + "use_gpu = True if (torch.version.cuda or torch.version.hip) is not None else False\n"),
        Case(PRE + "if version.parse(torch.version.cuda) >= version.parse('11.0'):\n    bf16 = True\n",
             PRE + "if torch.version.cuda is not None and version.parse(torch.version.cuda) >= "
             "version.parse('11.0'):\n    bf16 = True\n"),
        Case("import torch as th\nok = th.cuda.is_available() and int(th.version.cuda.split('.')[0]) >= 11\n",
             "import torch as th\nok = th.cuda.is_available() and th.version.cuda is not None and "
             "int(th.version.cuda.split('.')[0]) >= 11\n"),
        Case(PRE + "CUDA_MAJOR = float(torch.version.cuda)\n"),
        Case(PRE + "if torch.version.cuda:\n    flags = ['-arch=sm_80']\n"),
        Case(PRE + "HAS_GPU_BUILD = torch.version.cuda is not None\n"),
    )

    @classmethod
    def may_match(cls, facts) -> bool:
        """``visit_Attribute`` reports a ``.cuda`` attribute that may be the CUDA version only
        where ``_use`` names a use; the same parents on CPython's tree (a call's first
        positional argument, whatever the call)."""
        if not facts.may_reference(CUDA_VERSION):
            return False
        if facts.tree is None:
            return True
        import ast

        found = {id(node) for node in facts.attributes.get("cuda", ()) if facts.may_be(node, CUDA_VERSION)}
        if not found:
            return False
        for node in facts.nodes(ast.Attribute, ast.Subscript):
            if id(node.value) in found:  # `.split(".")`, `[0]`
                return True
        for node in facts.nodes(ast.Call):
            if node.args and id(node.args[0]) in found:
                return True
        for node in facts.nodes(ast.Compare):
            operands = [node.left, *node.comparators]
            for index, operand in enumerate(operands):
                if id(operand) not in found:
                    continue
                sides = []
                if index > 0:
                    sides.append((node.ops[index - 1], operands[index - 1], "right"))
                if index < len(node.ops):
                    sides.append((node.ops[index], operands[index + 1], "left"))
                for op, other, side in sides:
                    none = type(other) is ast.Constant and other.value is None
                    if (type(op) in (ast.Is, ast.IsNot, ast.Eq, ast.NotEq) and none
                            or type(op) in (ast.Lt, ast.LtE, ast.Gt, ast.GtE)
                            or type(op) in (ast.In, ast.NotIn) and side == "right"):
                        return True
        for node in facts.nodes(ast.BinOp):
            if type(node.op) is ast.Add and (id(node.left) in found or id(node.right) in found):
                return True
        for node in facts.nodes(ast.If, ast.While, ast.IfExp):
            if id(node.test) in found:
                return True
        for node in facts.nodes(ast.BoolOp):
            if any(id(value) in found for value in node.values):
                return True
        return any(type(node.op) is ast.Not and id(node.operand) in found for node in facts.nodes(ast.UnaryOp))

    @classmethod
    def reach(cls, facts) -> Optional[FrozenSet[str]]:
        """It reports a ``.cuda`` attribute; beyond the statement's own nodes and the
        module-level statements, it reads the statements of the block around it for ``.hip``
        (``_hip_beside``) and ``.cuda`` (``_read_after``)."""
        return frozenset({"cuda", "hip"})

    def __init__(self, context):
        super().__init__(context)
        self._fixed: Set[int] = set()

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value != "cuda" or not self.is_name(node, CUDA_VERSION):
            return
        parent = self.parent(node)
        kind = self._use(node, parent)
        if kind is None or self.gated(node):
            return
        if kind == "truth":
            self._truth(node)
        else:
            self._version(node, kind)

    # -- how is it used ---------------------------------------------------------------------
    def _use(self, node: cst.Attribute, parent) -> Optional[str]:
        """"truth", a description of a version use, or None (not a hazard)."""
        if isinstance(parent, cst.Attribute) and parent.value is node:
            return f"`.{parent.attr.value}` on it raises AttributeError"
        if isinstance(parent, cst.Subscript) and parent.value is node:
            return "subscripting it raises TypeError"
        if isinstance(parent, cst.Arg) and parent.keyword is None and parent.star == "":
            call = self.parent(parent)
            if isinstance(call, cst.Call) and call.args and call.args[0] is parent:
                name = dotted_name(call.func)
                last = name.rsplit(".", 1)[-1] if name else None
                if last in _VERSION_CALLS:
                    return f"`{last}(None)` raises"
                if last == "bool":
                    return "truth"
            return None
        if isinstance(parent, cst.ComparisonTarget):
            parent = self.parent(parent)
        if isinstance(parent, cst.Comparison):
            operands = [parent.left] + [c.comparator for c in parent.comparisons]
            index = next(i for i, o in enumerate(operands) if o is node)
            ops = []
            if index > 0:
                ops.append((parent.comparisons[index - 1].operator, operands[index - 1], "right"))
            if index < len(parent.comparisons):
                ops.append((parent.comparisons[index].operator, operands[index + 1], "left"))
            for op, other, side in ops:
                if isinstance(op, (cst.Is, cst.IsNot, cst.Equal, cst.NotEqual)) and is_none(other):
                    return "truth"
                if isinstance(op, _ORDERING):
                    return "an ordering comparison with None raises TypeError"
                if isinstance(op, (cst.In, cst.NotIn)) and side == "right":
                    return "`in None` raises TypeError"
            return None
        if isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, cst.Add):
            return "adding None to a string raises TypeError"
        if isinstance(parent, (cst.If, cst.While, cst.IfExp)) and parent.test is node:
            return "truth"
        if isinstance(parent, cst.BooleanOperation):
            return "truth"
        if isinstance(parent, cst.UnaryOperation) and isinstance(parent.operator, cst.Not):
            return "truth"
        return None

    # -- "a GPU build is present" ---------------------------------------------------------
    def _truth_expression(self, node: cst.CSTNode) -> cst.CSTNode:
        """The whole boolean expression ``node`` is a part of (through comparisons with None,
        ``not``, ``and`` / ``or``, ``bool()``)."""
        top = node
        while True:
            parent = self.parent(top)
            if isinstance(parent, (cst.Comparison, cst.BooleanOperation)) or (
                    isinstance(parent, cst.UnaryOperation) and isinstance(parent.operator, cst.Not)):
                top = parent
            elif isinstance(parent, cst.Arg) and isinstance(self.parent(parent), cst.Call) and \
                    dotted_name(self.parent(parent).func) == "bool":
                top = self.parent(parent)
            else:
                return top

    def _tested(self, node: cst.CSTNode, top: cst.CSTNode, holder) -> bool:
        """Is the version's truth really asked: the expression is a test (``if``, ``while``,
        conditional expression, ``assert``), or the way up to it compares it with None or
        negates it, or passes it to ``bool()``? ``x = torch.version.cuda or "N/A"`` is not."""
        if isinstance(holder, (cst.If, cst.While, cst.IfExp)) and holder.test is top:
            return True
        if isinstance(holder, cst.Assert) and holder.test is top:
            return True
        current = node
        while current is not top:
            current = self.parent(current)
            if isinstance(current, (cst.Comparison, cst.UnaryOperation, cst.Call)):
                return True
        return False

    def _truth(self, node: cst.Attribute) -> None:
        top = self._truth_expression(node)
        if mentions_rocm(top, self.context.gate_name):
            return  # `cuda or hip`, `cuda is None and hip is None`
        holder = self.parent(top)
        if not self._tested(node, top, holder):
            return  # a value: `torch.version.cuda or "N/A"` in a message
        guarded: List[cst.CSTNode] = []
        if isinstance(holder, cst.If) and holder.test is top:
            guarded = [holder.body] + ([holder.orelse] if holder.orelse is not None else [])
        elif isinstance(holder, cst.IfExp) and holder.test is top:
            guarded = [holder.body, holder.orelse]
        others = [n for n in guarded] + [top]
        # a None guard: the version is read again under it (or beside it in the expression)
        count = sum(1 for o in others for n in walk(o) if n is not node and isinstance(n, cst.Attribute)
                    and n.attr.value == "cuda" and self.is_name(n, CUDA_VERSION))
        if count or (isinstance(holder, cst.If) and exits(holder.body) and self._read_after(holder)):
            return  # a None guard, perhaps with an early exit (`if cuda is None: return`)
        if self._guarded_by_earlier_exit(node):
            return
        if any(mentions(g, NVIDIA_ONLY) or mentions(g, _NVIDIA_WORD) for g in guarded + [top]) \
                or self._tests_capability(top):
            return  # deliberately "a CUDA build": it guards an NVIDIA-only feature, generation or message
        if not guarded and self._hip_beside(top):
            return  # `IS_CUDA = cuda is not None` next to `IS_ROCM = hip is not None`: means CUDA
        message = ("torch.version.cuda is None on ROCm: this test takes the no-GPU branch on an AMD GPU; "
                   "test `torch.version.cuda or torch.version.hip` for \"a GPU build\"")
        if guarded and not any(mentions(g, _NVIDIA_TOOLCHAIN) for g in guarded):
            base = self.context.source(node.value)
            text = f"{base}.cuda or {base}.hip"
            if not (isinstance(holder, (cst.If, cst.IfExp)) and holder.test is node):
                text = f"({text})"
            fix = Fix(Applicability.SAFE, "Test for a CUDA or a HIP build", (self.context.replace(node, text),))
            self.report(node, message, fix=fix)
            return
        reason = ("the guarded code uses NVIDIA's toolchain, so it may really mean \"a CUDA build\""
                  if guarded else "decide whether it means \"a CUDA build\" or \"a GPU build\"")
        self.display_only(node, message, f"Test torch.version.hip for ROCm; {reason}")

    # -- a version -------------------------------------------------------------------------
    def _version(self, node: cst.Attribute, why: str) -> None:
        if self._guarded_by_earlier_exit(node):
            return
        message = f"torch.version.cuda is None on ROCm: {why}"
        test = self._version_test(node)
        if test is None or id(test) in self._fixed:
            if test is None:
                self.display_only(node, message, "Guard it with `torch.version.cuda is not None`, and test "
                                                 "torch.version.hip for ROCm")
            return
        self._fixed.add(id(test))
        base = self.context.source(node)
        text = f"{base} is not None and {self.context.source(test)}"
        parent = self.parent(test)
        if isinstance(parent, cst.BooleanOperation) and isinstance(parent.operator, cst.Or):
            text = f"({text})"
        fix = Fix(Applicability.SAFE, "Guard the version test against None",
                  (self.context.replace(test, text),))
        self.report(node, message, fix=fix)

    def _version_test(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        """The expression evaluated for its truth that holds this version use, where a None
        guard keeps the intent: the test of an ``if`` / ``while`` / conditional expression or
        an operand of ``and`` / ``or`` there, or a comparison assigned to a name."""
        top = node
        while True:
            parent = self.parent(top)
            if isinstance(parent, (cst.If, cst.While, cst.IfExp)):
                return top if parent.test is top else None
            if isinstance(parent, cst.BooleanOperation):
                outer = parent
                while isinstance(self.parent(outer), cst.BooleanOperation):
                    outer = self.parent(outer)
                holder = self.parent(outer)
                if isinstance(holder, (cst.If, cst.While, cst.IfExp)) and holder.test is outer:
                    return top
                if isinstance(holder, (cst.Assign, cst.AnnAssign)) and isinstance(top, cst.Comparison):
                    return top
                return None
            if isinstance(parent, (cst.Assign, cst.AnnAssign)):
                return top if isinstance(top, cst.Comparison) else None
            if isinstance(parent, (cst.Attribute, cst.Call, cst.Arg, cst.Subscript, cst.SubscriptElement,
                                   cst.Index, cst.Comparison, cst.ComparisonTarget, cst.BinaryOperation)):
                top = parent
                continue
            return None

    def _hip_beside(self, node: cst.CSTNode) -> bool:
        """Does the block around ``node``'s statement also test ``torch.version.hip``?"""
        statement = statement_of(self, node)
        block = self.parent(statement) if statement is not None else None
        body = getattr(block, "body", ())
        if not isinstance(body, (list, tuple)):
            return False
        for stmt in body:
            for n in walk(stmt):
                if isinstance(n, cst.Attribute) and n.attr.value == "hip" and \
                        (dotted_name(n.value) or "").split(".")[-1] == "version":
                    return True
        return False

    def _tests_capability(self, node: cst.CSTNode) -> bool:
        return any(isinstance(n, cst.Call) and self.is_name(n.func, CAPABILITY | PROPERTIES) for n in walk(node))

    def _read_after(self, statement: cst.CSTNode) -> bool:
        """Is the version read by a statement after ``statement`` in its block?"""
        block = self.parent(statement)
        body = getattr(block, "body", ())
        if not isinstance(body, (list, tuple)) or statement not in body:
            return False
        return any(reads_cuda_version(s) for s in body[body.index(statement) + 1:])

    def _guarded_by_earlier_exit(self, node: cst.CSTNode) -> bool:
        """``if torch.version.cuda is None: return`` (or raise) earlier in an enclosing block."""
        return self.earlier_exit(node, reads_cuda_version)
