"""ROC7xx: code that assumes the GPU is NVIDIA.

Python code written for NVIDIA runs unchanged on ROCm builds of torch (``torch.cuda`` is
HIP there), except where it asks "which vendor, which version, which generation" in NVIDIA's
terms: ``torch.version.cuda`` (None on ROCm), compute capabilities read as NVIDIA generations
(MI300 reports (9, 4)), ``nvidia-smi`` and NVML, packages that only exist for CUDA, and fp8
formats that depend on the GPU architecture. The facts and their sources live in
``rocmport.rocm_facts`` (one table, shown by the rule docs and ``docs/rocm-facts.md``).

Fixes are safe only where the intent is clear and the NVIDIA path provably evaluates as
before; everything else is a display-only suggestion.
"""

from __future__ import annotations

import re
from types import SimpleNamespace
from typing import Dict, FrozenSet, Iterator, List, Optional, Set, Tuple

import libcst as cst
from libcst.metadata import ParentNodeProvider, PositionProvider, QualifiedNameProvider

from rocmport import rocm_facts
from rocmport.findings import Applicability, Fix

from ._torch import qualified_names
from ._triton import _FOREIGN_TEST, KERNEL_DECORATORS, is_foreign_path
from ._walk import children as _children
from .base import _ROCM_WORD, PREFILTER, Case, Rule, dotted_name, literal_string, mentions_rocm

_PRE = "import torch\n"


# ------------------------------------------------------------------------------------------
# Shared helpers
# ------------------------------------------------------------------------------------------

def _walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """``node`` and every node under it (``current.children`` rebuilds each node it reads)."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(_children(current)))


def _identifiers(node: cst.CSTNode, strings: bool = True) -> Iterator[str]:
    """Names, attribute names, import names and (with ``strings``) string literal values
    under ``node``."""
    for n in _walk(node):
        if isinstance(n, cst.Name):
            yield n.value
        elif strings and isinstance(n, cst.SimpleString):
            value = literal_string(n)
            if value is not None:
                yield value
        elif strings and isinstance(n, cst.FormattedStringText):
            yield n.value


def _mentions(node: cst.CSTNode, pattern: "re.Pattern[str]", strings: bool = True) -> bool:
    return any(pattern.search(text) for text in _identifiers(node, strings))


def _reads_cuda_version(node: cst.CSTNode) -> bool:
    """Does ``node`` mention ``<x>.version.cuda`` (torch's CUDA version, by its spelling)?"""
    for n in _walk(node):
        if isinstance(n, cst.Attribute) and n.attr.value == "cuda":
            name = dotted_name(n.value)
            if name is not None and (name == "version" or name.endswith(".version")):
                return True
    return False


def _cuda_sign(test: cst.CSTNode) -> Optional[bool]:
    """True when ``test`` being true proves ``torch.version.cuda`` is set (it is read as a
    truth value or a version), False when ``test`` being false proves it (``cuda is None``,
    ``not cuda``), None when it says nothing about it."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = _cuda_sign(test.expression)
        return None if inner is None else not inner
    if isinstance(test, cst.BooleanOperation):
        left, right = _cuda_sign(test.left), _cuda_sign(test.right)
        wanted = isinstance(test.operator, cst.And)  # and: one true operand proves it
        return wanted if wanted in (left, right) else None
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and _reads_cuda_version(test.left) \
            and isinstance(test.comparisons[0].comparator, cst.Name) and test.comparisons[0].comparator.value == "None":
        return isinstance(test.comparisons[0].operator, (cst.IsNot, cst.NotEqual))
    return True if _reads_cuda_version(test) else None


def _vendor_path(path: str) -> bool:
    """A file whose name says it is for one vendor: ``..._sm90.py``, ``hopper.py``,
    ``nvidia.py``, ``tensorrt_*.py``, ``test_rocm_support.py``: its vendor code is the point."""
    stem = re.split(r"[/\\]", path)[-1].rsplit(".", 1)[0]
    return bool(_NVIDIA_ONLY.search(stem) or _VENDOR_FILE.search(stem) or _ROCM_WORD.search(stem))


_VENDOR_FILE = re.compile(r"(?i)nvidia|tensorrt|(?:^|_)trt(?:_|$)")


def _statement(rule: Rule, node: cst.CSTNode) -> Optional[cst.CSTNode]:
    """The statement that holds ``node``: a simple statement line, or the compound statement
    whose header (test, iterable, ...) holds it."""
    child = node
    for ancestor in rule.ancestors(node):
        if isinstance(ancestor, cst.SimpleStatementLine):
            return ancestor
        if isinstance(ancestor, cst.BaseCompoundStatement) and child is not getattr(ancestor, "body", None) \
                and not isinstance(child, (cst.Else, cst.If)):
            return ancestor
        if isinstance(ancestor, cst.BaseSuite):
            return None
        child = ancestor
    return None


def _header(statement: Optional[cst.CSTNode]) -> Optional[cst.CSTNode]:
    """The part of a statement that is evaluated with it: a simple statement line, the test
    of an ``if`` / ``while``; None for other compound statements."""
    if isinstance(statement, (cst.If, cst.While)):
        return statement.test
    return statement if isinstance(statement, cst.SimpleStatementLine) else None


class _VendorRule(Rule):
    METADATA_DEPENDENCIES = (PositionProvider, ParentNodeProvider, QualifiedNameProvider)

    def is_name(self, node: cst.CSTNode, names) -> bool:
        return bool(qualified_names(self, node, names) & names)

    def gated(self, node: cst.CSTNode) -> bool:
        """Already gated: under a ROCm test (``in_rocm_branch``), or where a test of
        ``torch.version.cuda`` proves a CUDA build (the body of ``if torch.version.cuda:``,
        the ``else`` of ``if torch.version.cuda is None:``, the right of ``cuda and ...``)."""
        if self.in_rocm_branch(node) or is_foreign_path(self.context.path) or _vendor_path(self.context.path):
            return True
        if self.earlier_exit(node, lambda test: mentions_rocm(test, self.context.gate_name) and not (
                isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And))):
            return True  # `if torch.version.hip is not None or ...: return` before it
        child = node
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef)) and _FOREIGN_TEST.search(ancestor.name.value):
                return True  # code for another accelerator
            if isinstance(ancestor, (cst.If, cst.IfExp)) and child is ancestor.body and \
                    _mentions(ancestor.test, _FOREIGN_TEST, strings=False):
                return True
            if isinstance(ancestor, (cst.If, cst.IfExp, cst.While)) and child is not ancestor.test:
                sign = _cuda_sign(ancestor.test)
                if (sign is True and child is ancestor.body) or (sign is False and child is not ancestor.body):
                    return True
            elif isinstance(ancestor, cst.BooleanOperation) and child is ancestor.right:
                sign = _cuda_sign(ancestor.left)
                if sign is (not isinstance(ancestor.operator, cst.Or)) and sign is not None:
                    return True
            child = ancestor
        return False

    def earlier_exit(self, node: cst.CSTNode, predicate) -> bool:
        """Is there, earlier in a block that holds ``node`` (up to its function), an ``if``
        whose test satisfies ``predicate`` and whose body returns, raises, breaks or continues?"""
        child = node
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, (cst.IndentedBlock, cst.Module)):
                for stmt in ancestor.body:
                    if stmt is child:
                        break
                    if isinstance(stmt, cst.If) and _exits(stmt.body) and predicate(stmt.test):
                        return True
            if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                return False
            child = ancestor
        return False

    def values(self, name: cst.Name) -> List[cst.BaseExpression]:
        """What is assigned to ``name`` in the function that reads it (or, when that function
        assigns nothing to it, at module level): plain assignments, and the value of a tuple
        unpacking (``major, minor = <value>``). A statement-level walk that does not enter
        nested functions or classes: cheaper than the scope analysis of a large file, which
        ROC7xx does not need."""
        scopes: List[cst.CSTNode] = []
        for ancestor in self.ancestors(name):
            if isinstance(ancestor, (cst.FunctionDef, cst.Module)):
                scopes.append(ancestor)
        for scope in scopes:
            found = list(_assignments_in(scope, name.value))
            if found:
                return found
            if isinstance(scope, cst.FunctionDef) and any(
                    p.name.value == name.value for p in _params(scope.params)):
                return []  # a parameter: unknown
        return []

    def in_triton_kernel(self, node: cst.CSTNode) -> bool:
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, cst.FunctionDef):
                for decorator in ancestor.decorators:
                    if qualified_names(self, decorator.decorator, KERNEL_DECORATORS) & KERNEL_DECORATORS:
                        return True
        return False

    def display_only(self, node: cst.CSTNode, message: str, suggestion: str) -> None:
        self.report(node, message, fix=Fix(Applicability.DISPLAY_ONLY, suggestion))


def _facts_doc(topic: str) -> str:
    return "\n".join("        - " + f.claim + " (" + ", ".join(f.sources) + ")"
                     for f in rocm_facts.FACTS if f.topic == topic)


def _arch_doc() -> str:
    return "\n".join("        " + line for line in rocm_facts.arch_table().splitlines())


# ------------------------------------------------------------------------------------------
# ROC701 torch.version.cuda
# ------------------------------------------------------------------------------------------

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


def _is_none(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


class CudaVersionOnRocm(_VendorRule):
    CODE = "ROC701"
    NAME = "cuda-version-on-rocm"
    SUMMARY = "`torch.version.cuda` used as a version or as \"a GPU build is present\": it is None on ROCm."
    TRIGGERS = ("version",)
    WORDS = (("cuda",), ("version",))  # the ``.cuda`` attribute, and torch.version's spelling in it or its import
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

""" + _facts_doc("detection") + """
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
        Case(_PRE + "print('CUDA', torch.version.cuda)\n"),
        Case(_PRE + "info = {'cuda': torch.version.cuda, 'hip': torch.version.hip}\n"),
        Case(_PRE + "if torch.version.cuda or torch.version.hip:\n    device = 'cuda'\n"),
        Case(_PRE + "if torch.version.hip:\n    x = 1\nelif float(torch.version.cuda) >= 11:\n    x = 2\n"),
        Case(_PRE + "if torch.version.cuda is not None and float(torch.version.cuda) >= 11:\n    x = 2\n"),
        Case(_PRE + "if torch.version.cuda:\n    major = int(torch.version.cuda.split('.')[0])\n"),
        Case(_PRE + "def f():\n    if torch.version.cuda is None:\n        return None\n"
             "    return float(torch.version.cuda)\n"),
        Case(_PRE + "if torch.version.cuda == '11.8':\n    x = 1\n"),
        Case(_PRE + "# if float(torch.version.cuda) >= 11:\ns = 'torch.version.cuda.split()'\n"),
        Case("import my\nif float(my.version.cuda) > 1:\n    pass\n"),
        Case(_PRE + "logger.info(f'cuda {torch.version.cuda}')\n"),
        Case(_PRE + "print(f\"CUDA: {torch.version.cuda or 'N/A'}\")\nlabel = torch.version.cuda or 'cpu'\n"),
        Case(_PRE + "IS_ROCM = torch.version.hip is not None\nIS_CUDA = torch.version.cuda is not None\n"),
        Case(_PRE + "def why_not(x):\n    if x.device.type != 'cuda' or torch.version.cuda is None:\n"
             "        return 'needs an NVIDIA CUDA device'\n"),
    )
    INVALID = (
        Case(_PRE + "if torch.version.cuda:\n    device = 'cuda'\nelse:\n    device = 'cpu'\n",
             _PRE + "if torch.version.cuda or torch.version.hip:\n    device = 'cuda'\nelse:\n    device = 'cpu'\n"),
        Case(_PRE + "use_gpu = True if torch.version.cuda is not None else False\n",
             _PRE + "use_gpu = True if (torch.version.cuda or torch.version.hip) is not None else False\n"),
        Case(_PRE + "if version.parse(torch.version.cuda) >= version.parse('11.0'):\n    bf16 = True\n",
             _PRE + "if torch.version.cuda is not None and version.parse(torch.version.cuda) >= "
             "version.parse('11.0'):\n    bf16 = True\n"),
        Case("import torch as th\nok = th.cuda.is_available() and int(th.version.cuda.split('.')[0]) >= 11\n",
             "import torch as th\nok = th.cuda.is_available() and th.version.cuda is not None and "
             "int(th.version.cuda.split('.')[0]) >= 11\n"),
        Case(_PRE + "CUDA_MAJOR = float(torch.version.cuda)\n"),
        Case(_PRE + "if torch.version.cuda:\n    flags = ['-arch=sm_80']\n"),
        Case(_PRE + "HAS_GPU_BUILD = torch.version.cuda is not None\n"),
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
                if isinstance(op, (cst.Is, cst.IsNot, cst.Equal, cst.NotEqual)) and _is_none(other):
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
        count = sum(1 for o in others for n in _walk(o) if n is not node and isinstance(n, cst.Attribute)
                    and n.attr.value == "cuda" and self.is_name(n, CUDA_VERSION))
        if count or (isinstance(holder, cst.If) and _exits(holder.body) and self._read_after(holder)):
            return  # a None guard, perhaps with an early exit (`if cuda is None: return`)
        if self._guarded_by_earlier_exit(node):
            return
        if any(_mentions(g, _NVIDIA_ONLY) or _mentions(g, _NVIDIA_WORD) for g in guarded + [top]) \
                or self._tests_capability(top):
            return  # deliberately "a CUDA build": it guards an NVIDIA-only feature, generation or message
        if not guarded and self._hip_beside(top):
            return  # `IS_CUDA = cuda is not None` next to `IS_ROCM = hip is not None`: means CUDA
        message = ("torch.version.cuda is None on ROCm: this test takes the no-GPU branch on an AMD GPU; "
                   "test `torch.version.cuda or torch.version.hip` for \"a GPU build\"")
        if guarded and not any(_mentions(g, _NVIDIA_TOOLCHAIN) for g in guarded):
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
        statement = _statement(self, node)
        block = self.parent(statement) if statement is not None else None
        body = getattr(block, "body", ())
        if not isinstance(body, (list, tuple)):
            return False
        for stmt in body:
            for n in _walk(stmt):
                if isinstance(n, cst.Attribute) and n.attr.value == "hip" and \
                        (dotted_name(n.value) or "").split(".")[-1] == "version":
                    return True
        return False

    def _tests_capability(self, node: cst.CSTNode) -> bool:
        return any(isinstance(n, cst.Call) and self.is_name(n.func, CAPABILITY | PROPERTIES) for n in _walk(node))

    def _read_after(self, statement: cst.CSTNode) -> bool:
        """Is the version read by a statement after ``statement`` in its block?"""
        block = self.parent(statement)
        body = getattr(block, "body", ())
        if not isinstance(body, (list, tuple)) or statement not in body:
            return False
        return any(_reads_cuda_version(s) for s in body[body.index(statement) + 1:])

    def _guarded_by_earlier_exit(self, node: cst.CSTNode) -> bool:
        """``if torch.version.cuda is None: return`` (or raise) earlier in an enclosing block."""
        return self.earlier_exit(node, _reads_cuda_version)


def _params(params: cst.Parameters):
    yield from params.posonly_params
    yield from params.params
    yield from params.kwonly_params
    for star in (params.star_arg, params.star_kwarg):
        if isinstance(star, cst.Param):
            yield star


def _assignments_in(scope: cst.CSTNode, name: str) -> Iterator[cst.BaseExpression]:
    """Values assigned to ``name`` by statements of ``scope`` (not of nested scopes)."""
    stack = list(scope.body.body) if isinstance(scope, cst.FunctionDef) and \
        isinstance(scope.body, cst.IndentedBlock) else list(getattr(scope, "body", ()))
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(node, cst.Assign):
            for target in node.targets:
                t = target.target
                if isinstance(t, cst.Name) and t.value == name:
                    yield node.value
                elif isinstance(t, (cst.Tuple, cst.List)) and any(
                        isinstance(e.value, cst.Name) and e.value.value == name for e in t.elements):
                    yield node.value
            continue
        if isinstance(node, cst.AnnAssign):
            if isinstance(node.target, cst.Name) and node.target.value == name and node.value is not None:
                yield node.value
            continue
        stack.extend(node.children)


def _raises(node: cst.CSTNode) -> bool:
    """A block (or statement) that raises: a rejection, not a feature."""
    return any(isinstance(n, cst.Raise) for n in _walk(node))


def _exits(block: cst.BaseSuite) -> bool:
    if isinstance(block, cst.IndentedBlock):
        body = block.body
        last = body[-1] if body else None
        if isinstance(last, cst.SimpleStatementLine):
            return isinstance(last.body[-1], (cst.Return, cst.Raise, cst.Continue, cst.Break))
        return False
    if isinstance(block, cst.SimpleStatementSuite):
        return isinstance(block.body[-1], (cst.Return, cst.Raise, cst.Continue, cst.Break))
    return False


# ------------------------------------------------------------------------------------------
# ROC702 compute capability read as an NVIDIA generation
# ------------------------------------------------------------------------------------------

CAPABILITY = frozenset({"torch.cuda.get_device_capability"})
PROPERTIES = frozenset({"torch.cuda.get_device_properties"})
# Features that exist only on NVIDIA: a capability test that guards one is gated off ROCm.
_NVIDIA_ONLY = re.compile(
    r"(?i)(?:^|[^a-z0-9])(?:fa3|tma|wgmma|hopper|blackwell|tcgen05|sm_?9\d+a?|sm_?1[0-2]\d+a?|"
    r"flash_attn_interface|flash_attn_3|flash_mla|deep_gemm|cutlass|nvfp4|mxfp4_nv)(?:[^a-z]|$)")
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

    from ._bindings import walk

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
                    found.update(n.id for n in walk(target) if type(n) is ast.Name)
                continue
            stack.extend(child for child in ast.iter_child_nodes(node)
                         if isinstance(child, (ast.stmt, ast.excepthandler)) or type(child).__name__ == "match_case")
        facts.memo["roc702_module_assigned"] = found
    return found


def _assigned_from_capability(facts) -> Set[str]:
    import ast

    from ._bindings import walk

    assigns = []
    for node in facts.nodes(ast.Assign, ast.AnnAssign):
        if node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            bound = {n.id for t in targets for n in walk(t) if isinstance(n, ast.Name)}
            used = set()
            for n in walk(node.value):
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


class CapabilityAsNvidiaGeneration(_VendorRule):
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

""" + _facts_doc("capability") + """

""" + _arch_doc() + """
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
        Case(_PRE + "print(torch.cuda.get_device_capability())\n"),
        Case(_PRE + "if not is_rocm and torch.cuda.get_device_capability() >= (9, 0):\n"
             "    import flash_attn_interface\n"),
        Case(_PRE + "if torch.version.hip is None:\n    if torch.cuda.get_device_capability()[0] >= 9:\n"
             "        use_tma = True\n"),
        Case(_PRE + "if torch.version.cuda and torch.cuda.get_device_capability() >= (9, 0):\n    use_fa3 = True\n"),
        Case(_PRE + "cap = torch.cuda.get_device_capability()\nlogger.info('capability %s', cap)\n"),
        Case("import mylib\nif mylib.get_device_capability() >= (9, 0):\n    use_fa3 = True\n"),
        Case(_PRE + "# if torch.cuda.get_device_capability() >= (9, 0):\ns = 'get_device_capability() >= (9, 0)'\n"),
        Case(_PRE + "def fp16_ok():\n    major, _ = torch.cuda.get_device_capability()\n    return major >= 7\n"),
        Case(_PRE + "def fp6_kernel_ok():\n    major, _ = torch.cuda.get_device_capability()\n"
             "    if major != 8:\n        return False\n    return True\n"),
        Case(_PRE + "def prefer_grouped():\n    if torch.version.hip is not None or slow():\n        return False\n"
             "    return torch.cuda.get_device_capability()[0] < 9\n"),
        Case(_PRE + "def hpu_fp8_range():\n    return torch.cuda.get_device_capability() >= (9, 0)\n"),
    )
    # reported, never gated: a branch that also enables bf16 (AMD has it), and comparisons
    # that reject GPUs (gating them would let AMD through)
    REJECTIONS = (
        "if torch.cuda.get_device_capability()[0] >= 8:\n    SUPPORTS_BF16 = True\n    import flash_attn_interface\n",
        "if nvfp4 and torch.cuda.get_device_capability() < (10, 0):\n    raise ValueError('needs Blackwell')\n",
        "if torch.cuda.get_device_capability() != (9, 0):\n    raise RuntimeError('the SM90 kernel needs Hopper')\n",
        "if torch.cuda.get_device_capability()[0] == 9:\n    raise ValueError('not supported on Hopper')\n",
    )
    INVALID = (
        Case(_PRE + "if torch.cuda.get_device_capability() >= (9, 0):\n    import flash_attn_interface\n",
             _PRE + "\n{PRELUDE}\n\nif not is_rocm and torch.cuda.get_device_capability() >= (9, 0):\n"
             "    import flash_attn_interface\n"),
        Case(_PRE + "major, minor = torch.cuda.get_device_capability()\nuse_tma = major >= 9\n",
             _PRE + "\n{PRELUDE}\n\nmajor, minor = torch.cuda.get_device_capability()\n"
             "use_tma = not is_rocm and major >= 9\n"),
        Case(_PRE + "def is_hopper():\n    return torch.cuda.get_device_capability()[0] == 9\n",
             _PRE + "\n{PRELUDE}\n\ndef is_hopper():\n"
             "    return not is_rocm and torch.cuda.get_device_capability()[0] == 9\n"),
        Case(_PRE + "cap = torch.cuda.get_device_capability()\nif cap[0] >= 8:\n    dtype = torch.bfloat16\n"),
        Case(_PRE + "props = torch.cuda.get_device_properties(0)\nsm = props.major * 10 + props.minor\n"
             "if sm >= 89:\n    use_fp8 = True\n"),
    ) + tuple(Case(_PRE + code) for code in REJECTIONS)

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
        amd_has = any(_mentions(g, _AMD_HAS) for g in guarded)
        if enables and not amd_has and any(_mentions(g, _NVIDIA_ONLY) for g in guarded):
            text = f"not {self.context.gate_name} and {self.context.source(node)}"
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


# ------------------------------------------------------------------------------------------
# ROC703 nvidia-smi and NVML
# ------------------------------------------------------------------------------------------

NVML_MODULES = frozenset({"pynvml", "py3nvml", "nvidia_smi", "GPUtil"})
_PROCESS_CALLS = frozenset(
    {f"subprocess.{n}" for n in ("run", "call", "check_call", "check_output", "Popen", "getoutput",
                                 "getstatusoutput")}
    | {f"os.{n}" for n in ("system", "popen", "execv", "execvp", "execl", "execlp", "spawnv", "spawnvp")}
    | {"asyncio.create_subprocess_exec", "asyncio.create_subprocess_shell", "shutil.which"})
_NVIDIA_SMI = re.compile(r"(?:^|[\s/\"'])nvidia-smi(?:$|[\s\"'.])")


class NvidiaManagementTools(_VendorRule):
    CODE = "ROC703"
    NAME = "nvidia-management-tools"
    SUMMARY = "`nvidia-smi` or NVML (`pynvml`) used: they do not exist on ROCm."
    TRIGGERS = ("nvidia-smi", "nvml", "nvidia_smi", "GPUtil")
    FIX_APPLICABILITY = Applicability.DISPLAY_ONLY
    WHAT = """
        A `subprocess` / `os.system` / `os.popen` / `shutil.which` / asyncio subprocess call
        whose command (a string, a list, or a name assigned one in the same scope) runs
        `nvidia-smi`; an import of `pynvml`, `py3nvml`, `nvidia_smi` or `GPUtil` (which runs
        nvidia-smi). Not reported: the words in strings, comments or docstrings that are not
        a command, and code under a ROCm or `torch.version.cuda` test.
        """
    WHY = """
        ROCm has neither `nvidia-smi` nor NVML: the call fails, or the tool is missing and the
        code silently reports no GPU, zero memory or zero utilisation (8 threads, e.g.
        ROCm/pytorch#1535).

""" + _facts_doc("tools") + """
        """
    EXAMPLE = """
        import subprocess
        out = subprocess.check_output(["nvidia-smi", "--query-gpu=memory.used", "--format=csv"])
        """
    FIX = """
        Display-only: use torch's own queries, which work on both vendors
        (`torch.cuda.mem_get_info()`, `torch.cuda.memory_allocated()`,
        `torch.cuda.get_device_name()`, `torch.cuda.device_count()`), or AMD's `amdsmi` /
        `amd-smi` on ROCm (gated on `torch.version.hip`).
        """
    VALID = (
        Case("print('run nvidia-smi to see the GPUs')\n"),
        Case('"""Check nvidia-smi first."""\nimport os\n'),
        Case("import subprocess\nimport torch\nif torch.version.hip:\n    subprocess.run(['amd-smi'])\n"
             "else:\n    subprocess.run(['nvidia-smi'])\n"),
        Case("import torch\nif torch.version.cuda:\n    import pynvml\n"),
        Case("import subprocess\n# subprocess.run(['nvidia-smi'])\nsubprocess.run(['ls'])\n"),
        Case("import mynvml_tools\n"),
        Case("def init():\n    try:\n        import pynvml\n    except ImportError:\n        return None\n"
             "    return pynvml\n"),
    )
    INVALID = (
        Case("import subprocess\nout = subprocess.check_output(['nvidia-smi', '-L'])\n"),
        Case("import os\nos.system('nvidia-smi --query-gpu=name --format=csv')\n"),
        Case("import subprocess\ncmd = 'nvidia-smi -q'\nsubprocess.run(cmd, shell=True)\n"),
        Case("import pynvml\npynvml.nvmlInit()\n"),
        Case("from pynvml import *\n"),
        Case("from pynvml.smi import nvidia_smi\n"),
    )

    @classmethod
    def may_match(cls, facts) -> bool:
        """An import of an NVML module, or a process call in a file with a string that holds
        "nvidia-smi" (every command ``_runs_nvidia_smi`` accepts is, or is assigned, one)."""
        if facts.tree is None:
            return True
        import ast

        for node in facts.nodes(ast.Import):
            if any(alias.name.split(".", 1)[0] in NVML_MODULES for alias in node.names):
                return True
        for node in facts.nodes(ast.ImportFrom):
            if not node.level and node.module and node.module.split(".", 1)[0] in NVML_MODULES:
                return True
        return any("nvidia-smi" in text for text in facts.strings) and any(facts.calls_to(_PROCESS_CALLS))

    @classmethod
    def reach(cls, facts) -> Optional[FrozenSet[str]]:
        """An import of an NVML module, or a process call (its command, when a name, is read
        in the same function or at module level)."""
        return frozenset(NVML_MODULES | facts.spellings(_PROCESS_CALLS) | {"nvidia-smi"})

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            name = dotted_name(alias.name) or ""
            if name.split(".", 1)[0] in NVML_MODULES and not self.gated(node):
                self._import(alias.name, name)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if node.relative or node.module is None:
            return
        name = dotted_name(node.module) or ""
        if name.split(".", 1)[0] in NVML_MODULES and not self.gated(node):
            self._import(node.module, name)

    def _tolerated(self, node: cst.CSTNode) -> bool:
        """Inside ``try:`` with a handler for ImportError (or a broader one): the code
        already copes with the module's absence."""
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, cst.Try):
                for handler in ancestor.handlers:
                    caught = {dotted_name(n) for n in _walk(handler.type) if isinstance(n, (cst.Name, cst.Attribute))} \
                        if handler.type is not None else {None}
                    if caught & {None, "ImportError", "ModuleNotFoundError", "Exception", "BaseException"}:
                        return True
            if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef)):
                return False
        return False

    def _import(self, node: cst.CSTNode, name: str) -> None:
        if self._tolerated(node):
            return
        tool = "nvidia-smi" if name.split(".", 1)[0] == "GPUtil" else "NVML"
        self.display_only(node, f"`{name}` needs {tool}, which does not exist on ROCm",
                          "Use torch.cuda queries (mem_get_info, device_count, get_device_name) or amdsmi on ROCm")

    def visit_Call(self, node: cst.Call) -> None:
        if not node.args or not self.is_name(node.func, _PROCESS_CALLS):
            return
        command = node.args[0].value
        if not self._runs_nvidia_smi(command) or self.gated(node):
            return
        self.display_only(node, "nvidia-smi does not exist on ROCm: this call fails or finds no GPU",
                          "Use torch.cuda queries (mem_get_info, device_count, get_device_name) or amd-smi / "
                          "amdsmi on ROCm")

    def _runs_nvidia_smi(self, command: cst.CSTNode, depth: int = 0) -> bool:
        if isinstance(command, (cst.List, cst.Tuple)):
            return bool(command.elements) and self._runs_nvidia_smi(command.elements[0].value, depth)
        if isinstance(command, cst.Name) and depth < 2:
            return any(self._runs_nvidia_smi(v, depth + 1) for v in self.values(command))
        if isinstance(command, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
            texts = [t for t in _identifiers(command) if isinstance(t, str)]
            return any(_NVIDIA_SMI.search(" " + t + " ") for t in texts)
        return False


# ------------------------------------------------------------------------------------------
# ROC704 CUDA-only packages imported unconditionally
# ------------------------------------------------------------------------------------------

# import name -> what it is (why it has no ROCm build)
CUDA_ONLY_PACKAGES = {
    "flash_attn_interface": "FlashAttention 3, built from flash-attention's hopper/ directory (SM90+ only)",
    "flash_attn_3": "FlashAttention 3's package (SM90+ only)",
    "deep_gemm": "DeepGEMM, FP8 GEMM kernels for SM90 / SM100 only",
    "flash_mla": "FlashMLA, MLA decoding kernels for SM90 / SM100 only",
    "pycuda": "PyCUDA, bindings to NVIDIA's CUDA driver",
    "tensorrt": "TensorRT, NVIDIA's inference runtime",
    "torch_tensorrt": "Torch-TensorRT, NVIDIA's TensorRT backend for torch",
}


class CudaOnlyImport(_VendorRule):
    CODE = "ROC704"
    NAME = "cuda-only-package-import"
    SUMMARY = "A CUDA-only package imported unconditionally at module level."
    TRIGGERS = tuple(CUDA_ONLY_PACKAGES)
    FIX_APPLICABILITY = Applicability.DISPLAY_ONLY
    WHAT = """
        `import X` / `from X import ...` at the top level of a module (not inside `try`, `if`,
        a function or a class) where X is one of these packages, which have no ROCm build:

""" + "\n".join(f"        - `{name}`: {why}" for name, why in CUDA_ONLY_PACKAGES.items()) + """

        Not reported: the import inside `try: ... except ImportError:` (or any `try`), inside
        `if not is_rocm:` or any other `if`, or inside a function.
        """
    WHY = """
        On ROCm the import raises ModuleNotFoundError (or the package cannot be installed),
        so the whole module, and everything importing it, fails to load even when the code
        path would never call the kernel (10 threads, e.g. vllm#42123, ComfyUI#14865).

""" + _facts_doc("packages") + """
        """
    EXAMPLE = """
        from flash_attn_interface import flash_attn_func
        """
    FIX = """
        Display-only: import it optionally and fall back to
        `torch.nn.functional.scaled_dot_product_attention` (which uses AMD's flash / efficient
        kernels on ROCm):

            try:
                from flash_attn_interface import flash_attn_func
            except ImportError:
                flash_attn_func = None  # use F.scaled_dot_product_attention instead
        """
    VALID = (
        Case("try:\n    from flash_attn_interface import flash_attn_func\nexcept ImportError:\n"
             "    flash_attn_func = None\n"),
        Case("import torch\nif not is_rocm:\n    import flash_attn_interface\n"),
        Case("def load():\n    import deep_gemm\n    return deep_gemm\n"),
        Case("import flash_attn\nfrom flash_attn import flash_attn_func\n"),
        Case("# import flash_attn_interface\nx = 'flash_attn_interface'\n"),
        Case("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import tensorrt\n"),
    )
    INVALID = (
        Case("from flash_attn_interface import flash_attn_func\n"),
        Case("import flash_attn_3.flash_attn_interface as fa3\n"),
        Case("import deep_gemm\n"),
        Case("from flash_attn_3 import flash_attn_interface\n"),
    )

    @classmethod
    def reach(cls, facts) -> Optional[FrozenSet[str]]:
        return frozenset()  # an import statement of the module's own body: never in a definition

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            self._check(node, alias.name)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if not node.relative and node.module is not None:
            self._check(node, node.module)

    def _check(self, statement: cst.CSTNode, module: cst.CSTNode) -> None:
        name = dotted_name(module) or ""
        root = name.split(".", 1)[0]
        if root not in CUDA_ONLY_PACKAGES:
            return
        line = self.parent(statement)
        if not isinstance(line, cst.SimpleStatementLine) or not isinstance(self.parent(line), cst.Module):
            return  # inside try / if / with / a function: not unconditional at module level
        self.display_only(module, f"`{name}` ({CUDA_ONLY_PACKAGES[root]}) has no ROCm build: importing it "
                                  "unconditionally fails on AMD GPUs",
                          "Import it in try/except ImportError and fall back to "
                          "torch.nn.functional.scaled_dot_product_attention (or the portable path)")


# ------------------------------------------------------------------------------------------
# ROC705 / ROC706 fp8 formats
# ------------------------------------------------------------------------------------------

E4M3FN = frozenset({"torch.float8_e4m3fn"})
TL_E4M3NV = frozenset({"triton.language.float8e4nv"})
_FNUZ_AWARE = re.compile(r"(?i)fnuz|float8e4b8|fp8e4b8|gfx|gcnarch")
_FP8_WORD = re.compile(r"(?i)fp8|float8|e4m3|f8e4|f8_e4")
_FP8_MAX_LITERAL = re.compile(r"448(?:\.0*)?")


class _Fp8Rule(_VendorRule):
    def __init__(self, context):
        super().__init__(context)
        self._header_aware: Dict[int, bool] = {}  # id(statement) -> does its header know fnuz

    def fnuz_aware(self, node: cst.CSTNode, statement: Optional[cst.CSTNode]) -> bool:
        """The statement around ``node`` (or a test that decides it) knows the fnuz format or
        the architecture: the code already chooses per GPU. The statement's answer is kept
        (a table of dtypes asks it for every entry)."""
        key = id(statement)
        known = self._header_aware.get(key)
        if known is None:
            header = _header(statement)
            known = self._header_aware[key] = header is not None and _mentions(header, _FNUZ_AWARE)
        if known:
            return True
        child = node
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, (cst.If, cst.IfExp, cst.While)) and child is not ancestor.test:
                if _mentions(ancestor.test, _FNUZ_AWARE):
                    return True
            if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef)) and _FNUZ_AWARE.search(ancestor.name.value):
                return True
            child = ancestor
        return False


class Fp8FormatIsArchitectureDependent(_Fp8Rule):
    CODE = "ROC705"
    NAME = "fp8-format-architecture"
    SUMMARY = "`torch.float8_e4m3fn` / `tl.float8e4nv` hard-coded: MI300 uses the fnuz format."
    TRIGGERS = ("float8_e4m3fn", "float8e4nv")
    FIX_APPLICABILITY = Applicability.DISPLAY_ONLY
    WHAT = """
        `torch.float8_e4m3fn` or Triton's `tl.float8e4nv` chosen as a dtype (assigned, passed,
        converted to). Not reported: comparisons that only inspect a dtype
        (`x.dtype == torch.float8_e4m3fn`), statements that also name the fnuz format or the
        architecture (`(torch.float8_e4m3fn, torch.float8_e4m3fnuz)`,
        `... if "gfx942" in arch else ...`), code under a ROCm test, strings and comments.
        """
    WHY = """
        fp8 on AMD depends on the architecture: MI300 (gfx942) computes in
        `float8_e4m3fnuz` (max 240, `tl.float8e4b8` in Triton), so e4m3fn tensors fail in
        hipBLASLt's scaled GEMMs or give wrong scales there, while MI350 and RDNA4 use
        e4m3fn like NVIDIA (10 threads, e.g. sglang#39628, DiffSynth-Studio#1528).

""" + _facts_doc("fp8") + """

""" + _arch_doc() + """
        """
    EXAMPLE = """
        x_fp8 = x.to(torch.float8_e4m3fn)
        """
    FIX = """
        Display-only: the right format depends on the GPU, not on ROCm alone. Choose it once,
        from the architecture, e.g.
        `torch.float8_e4m3fnuz if "gfx942" in torch.cuda.get_device_properties(0).gcnArchName
        else torch.float8_e4m3fn`, and derive maxima from it with `torch.finfo(dtype).max`.
        """
    VALID = (
        Case(_PRE + "FP8 = (torch.float8_e4m3fn, torch.float8_e4m3fnuz)\n"),
        Case(_PRE + "if x.dtype == torch.float8_e4m3fn:\n    pass\n"),
        Case(_PRE + "dtype = torch.float8_e4m3fnuz if is_rocm else torch.float8_e4m3fn\n"),
        Case(_PRE + "arch = torch.cuda.get_device_properties(0).gcnArchName\n"
             "dtype = torch.float8_e4m3fnuz if 'gfx942' in arch else torch.float8_e4m3fn\n"),
        Case(_PRE + "# use torch.float8_e4m3fn\nname = 'torch.float8_e4m3fn'\n"),
        Case(_PRE + "dtype = torch.float8_e5m2\n"),
    )
    INVALID = (
        Case(_PRE + "y = x.to(torch.float8_e4m3fn)\n"),
        Case("import triton.language as tl\n\ndef k(x):\n    return x.to(tl.float8e4nv)\n"),
        Case("from torch import float8_e4m3fn as F8\nFP8_DTYPE = F8\n"),
    )

    @classmethod
    def may_match(cls, facts) -> bool:
        """``_check`` reports a reference that is not compared (an operand of a comparison,
        or an element of a tuple, list or set that is one, is skipped). On CPython's tree:
        an attribute named like a format that may resolve to one, or a name that may, when
        neither is such an operand. A name that may resolve to one but is also bound some
        other way, or an import from a module spelled with the format, decides nothing."""
        wanted = E4M3FN | TL_E4M3NV
        if not facts.may_reference(wanted):
            return False
        if facts.tree is None:
            return True
        import ast

        compared: Set[int] = set()

        def mark(node) -> None:
            compared.add(id(node))
            if type(node) in (ast.Tuple, ast.List, ast.Set):
                for element in node.elts:
                    mark(element)

        for node in facts.nodes(ast.Compare):
            for operand in (node.left, *node.comparators):
                mark(operand)
        lasts = {name.rsplit(".", 1)[-1] for name in wanted}
        for last in lasts:
            for node in facts.attributes.get(last, ()):
                if id(node) not in compared and facts.may_be(node, wanted):
                    return True
        if any(lasts & set((node.module or "").split(".")) for node in facts.nodes(ast.ImportFrom)):
            return True
        names = {name for name in facts.names if not facts.roots(name).isdisjoint(wanted)}
        if not names:
            return False
        if names & facts.other_bindings:
            return True
        roots = {id(node.value) for node in facts.nodes(ast.Attribute)}  # skipped by ``visit_Name``
        return any(node.id in names and id(node) not in compared and id(node) not in roots
                   for node in facts.nodes(ast.Name))

    @classmethod
    def reach(cls, facts) -> Optional[FrozenSet[str]]:
        """A reference to the format, read with its statement and the tests around it."""
        return frozenset(facts.spellings(E4M3FN | TL_E4M3NV))

    def __init__(self, context):
        super().__init__(context)
        self._lines: Set[int] = set()
        facts = context.facts
        wanted = E4M3FN | TL_E4M3NV
        # a bare name is the format only where an import binds it to it (None: ask each)
        self._names = None if facts is None or not PREFILTER["enabled"] else {
            name for name, bound in facts.bindings.items() if not bound.isdisjoint(wanted)}

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value in ("float8_e4m3fn", "float8e4nv"):
            self._check(node)

    def visit_Name(self, node: cst.Name) -> None:
        if self._names is not None and node.value not in self._names:
            return
        parent = self.parent(node)
        if isinstance(parent, (cst.Attribute, cst.ImportAlias, cst.AsName)) or isinstance(parent, cst.Arg) and \
                parent.keyword is node:
            return
        if isinstance(parent, cst.AssignTarget):
            return
        self._check(node)

    def _check(self, node: cst.CSTNode) -> None:
        if not self.is_name(node, E4M3FN | TL_E4M3NV):
            return
        parent = self.parent(node)
        while isinstance(parent, (cst.Element, cst.Tuple, cst.List, cst.Set)):
            parent = self.parent(parent)  # `dtype in (torch.float8_e4m3fn, ...)`
        if isinstance(parent, (cst.Comparison, cst.ComparisonTarget)):
            return
        statement = _statement(self, node)
        key = id(statement) if statement is not None else id(node)
        if key in self._lines:  # reported once per statement (asked first: a large table has many)
            return
        if self.gated(node) or self.fnuz_aware(node, statement):
            return
        self._lines.add(key)
        triton = "float8e4nv" in (dotted_name(node) or "") or self.is_name(node, TL_E4M3NV)
        fnuz = "tl.float8e4b8" if triton else "torch.float8_e4m3fnuz"
        self.display_only(node, f"MI300 (gfx942) uses the fnuz fp8 format ({fnuz}, max 240), not this one; "
                                "MI350 and RDNA4 use it: the format depends on the GPU architecture",
                          "Choose the fp8 dtype from gcnArchName (fnuz on gfx942) and derive its maximum "
                          "with torch.finfo(dtype).max")


class Fp8MaxConstant(_Fp8Rule):
    CODE = "ROC706"
    NAME = "fp8-max-constant"
    SUMMARY = "448 hard-coded as the fp8 maximum: it is 240 for MI300's fnuz format."
    TRIGGERS = ("448",)
    FIX_APPLICABILITY = Applicability.SAFE
    WHAT = """
        The literal `448` (or `448.0`) in a statement about fp8: one that names fp8 in an
        identifier (`fp8`, `float8`, `e4m3`: `FP8_MAX = 448.0`, `x.clamp(-448, 448).to(fp8_dtype)`,
        `fp8_max=448`). Not reported: 448 elsewhere (an image size), in strings or comments,
        in statements that already name the fnuz format or the architecture, and under a ROCm
        test.
        """
    WHY = """
        448 is the maximum of `float8_e4m3fn`. MI300 (gfx942) uses `float8_e4m3fnuz`, whose
        maximum is 240: scaling to 448 overflows it, giving NaNs or saturated values (10
        threads, e.g. sglang#39628, DiffSynth-Studio#1528).

""" + _facts_doc("fp8") + """
        """
    EXAMPLE = """
        fp8_dtype = torch.float8_e4m3fnuz if is_rocm else torch.float8_e4m3fn
        y = (x / scale).clamp(-448.0, 448.0).to(fp8_dtype)
        """
    FIXED_EXAMPLE = """
        fp8_dtype = torch.float8_e4m3fnuz if is_rocm else torch.float8_e4m3fn
        y = (x / scale).clamp(-torch.finfo(fp8_dtype).max, torch.finfo(fp8_dtype).max).to(fp8_dtype)
        """
    FIX = """
        Safe when the statement names the dtype and that dtype is `float8_e4m3fn` on NVIDIA:
        `torch.float8_e4m3fn` itself, or a name whose every assignment in the file is
        `torch.float8_e4m3fn` or a ROCm conditional whose NVIDIA arm is
        (`torch.float8_e4m3fnuz if is_rocm else torch.float8_e4m3fn`). `448.0` becomes
        `torch.finfo(dtype).max` and `448` becomes `int(torch.finfo(dtype).max)`: on NVIDIA
        exactly 448.0 / 448 as before; with an fnuz dtype, 240. Not inside a Triton kernel
        (`torch.finfo` is not available there). Otherwise display-only: use
        `torch.finfo(dtype).max` for the dtype in use.
        """
    VALID = (
        Case("image_size = 448\n"),
        Case(_PRE + "FP8_MAX = torch.finfo(torch.float8_e4m3fn).max\n"),
        Case(_PRE + "FP8_MAX = 240.0 if is_rocm else 448.0\n"),
        Case(_PRE + "# FP8_MAX = 448.0\ns = 'fp8 max 448'\n"),
        Case(_PRE + "fp8_max = 240.0 if 'gfx942' in arch else 448.0\n"),
        Case(_PRE + "resize(img, 448).to(torch.float32)\n"),
    )
    INVALID = (
        Case(_PRE + "y = x.clamp(-448.0, 448.0).to(torch.float8_e4m3fn)\n",
             _PRE + "y = x.clamp(-torch.finfo(torch.float8_e4m3fn).max, "
             "torch.finfo(torch.float8_e4m3fn).max).to(torch.float8_e4m3fn)\n"),
        Case(_PRE + "fp8 = torch.float8_e4m3fnuz if is_rocm else torch.float8_e4m3fn\n"
             "y = torch.clamp(x, max=448).to(fp8)\n",
             _PRE + "fp8 = torch.float8_e4m3fnuz if is_rocm else torch.float8_e4m3fn\n"
             "y = torch.clamp(x, max=int(torch.finfo(fp8).max)).to(fp8)\n"),
        Case(_PRE + "FP8_E4M3_MAX = 448.0\n"),
        Case(_PRE + "scale = amax / 448.0  # fp8 e4m3\nq = (x / scale).to(fp8_dtype)\nfp8_scale = amax / 448.0\n"),
        Case("import triton\nimport triton.language as tl\n\n@triton.jit\ndef k(x):\n"
             "    return tl.clamp(x, -448.0, 448.0).to(tl.float8e4nv)\n"),
    )

    @classmethod
    def may_match(cls, facts) -> bool:
        """Only ``visit_Integer`` / ``visit_Float`` report, on a literal that spells 448
        (``_FP8_MAX_LITERAL``): CPython's tree holds each such literal as a constant equal
        to 448 (it folds nothing: ``-448.0`` keeps the constant 448.0). "448" in a string,
        a comment, a docstring or a longer number never reaches LibCST."""
        if facts.tree is None:
            return True
        import ast

        Constant = ast.Constant
        return any(type(n.value) in (int, float) and n.value == 448 for n in facts.nodes(Constant))

    @classmethod
    def reach(cls, facts) -> Optional[FrozenSet[str]]:
        """A literal 448; the dtype it reads is its statement's, or a name's value in the same
        function or at module level."""
        return frozenset({"448"})

    def visit_Integer(self, node: cst.Integer) -> None:
        self._check(node)

    def visit_Float(self, node: cst.Float) -> None:
        self._check(node)

    def _check(self, node: cst.CSTNode) -> None:
        if not _FP8_MAX_LITERAL.fullmatch(node.value):
            return
        statement = _statement(self, node)
        header = _header(statement)
        if header is None or not _mentions(header, _FP8_WORD, strings=False):
            return
        if self.gated(node) or self.fnuz_aware(node, statement):
            return
        message = ("448 is the maximum of float8_e4m3fn only: MI300 (gfx942) uses float8_e4m3fnuz, whose "
                   "maximum is 240")
        dtype = None if self.in_triton_kernel(node) else self._known_dtype(header)
        torch_name = self._torch_name(dtype) if dtype is not None else None
        if dtype is None or torch_name is None:
            self.display_only(node, message, "Use torch.finfo(dtype).max for the fp8 dtype in use")
            return
        text = f"{torch_name}.finfo({self.context.source(dtype)}).max"
        if isinstance(node, cst.Integer):
            text = f"int({text})"
        fix = Fix(Applicability.SAFE, "Take the maximum from the dtype", (self.context.replace(node, text),))
        self.report(node, message, fix=fix)

    def _known_dtype(self, header: cst.CSTNode) -> Optional[cst.CSTNode]:
        """The one dtype expression of the statement that is float8_e4m3fn on NVIDIA."""
        found: List[cst.CSTNode] = []
        for n in _walk(header):
            if isinstance(n, cst.Attribute) and n.attr.value == "float8_e4m3fn" and self.is_name(n, E4M3FN):
                found.append(n)
            elif isinstance(n, cst.Name) and _FP8_WORD.search(n.value) and self._nvidia_e4m3fn(n):
                parent = self.parent(n)
                if not (isinstance(parent, cst.Attribute) and parent.attr is n):
                    found.append(n)
        sources = {self.context.source(f) for f in found}
        return found[0] if len(sources) == 1 else None

    def _nvidia_e4m3fn(self, name: cst.Name) -> bool:
        values = self.values(name)
        return bool(values) and all(self._e4m3fn_on_nvidia(v) for v in values)

    def _e4m3fn_on_nvidia(self, value: cst.CSTNode) -> bool:
        if isinstance(value, (cst.Attribute, cst.Name)):
            return self.is_name(value, E4M3FN)
        if isinstance(value, cst.IfExp):
            polarity = _rocm_polarity(value.test, self.context.gate_name)
            if polarity is None:
                return False
            nvidia = value.orelse if polarity else value.body
            return self._e4m3fn_on_nvidia(nvidia)
        return False

    def _torch_name(self, dtype: cst.CSTNode) -> Optional[str]:
        """How this file names the torch module: the root of ``torch.float8_e4m3fn`` as
        written, or a module-level ``import torch [as x]``."""
        if isinstance(dtype, cst.Attribute) and isinstance(dtype.value, cst.Name):
            return dtype.value.value
        facts = self.context.facts
        if facts is None:
            return None
        kinds, imports = facts.binding_kinds(), facts.binding_kinds_imports()
        candidates = sorted(n for n, full in imports.items() if full == {"torch"} and kinds.get(n) == {"import"})
        return "torch" if "torch" in candidates else (candidates[0] if candidates else None)


def _rocm_polarity(test: cst.CSTNode, gate: str) -> Optional[bool]:
    """True when ``test`` is true on ROCm (``is_rocm``, ``torch.version.hip``,
    ``torch.version.hip is not None``), False when it is true off ROCm (``not is_rocm``,
    ``... is None``), None when it cannot be told."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = _rocm_polarity(test.expression, gate)
        return None if inner is None else not inner
    if isinstance(test, cst.Name):
        return True if mentions_rocm(test, gate) else None
    if isinstance(test, cst.Attribute):
        return True if test.attr.value == "hip" or mentions_rocm(test.attr, gate) else None
    if isinstance(test, cst.Call) and not test.args:
        return _rocm_polarity(test.func, gate)
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and _is_none(test.comparisons[0].comparator):
        inner = _rocm_polarity(test.left, gate)
        if inner is None:
            return None
        op = test.comparisons[0].operator
        return inner if isinstance(op, (cst.IsNot, cst.NotEqual)) else not inner
    return None


RULES = [CudaVersionOnRocm, CapabilityAsNvidiaGeneration, NvidiaManagementTools, CudaOnlyImport,
         Fp8FormatIsArchitectureDependent, Fp8MaxConstant]
