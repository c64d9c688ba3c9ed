"""ROC701 cuda-version-on-rocm: `torch.version.cuda` used as a version or as "a GPU build is present": it is None on ROCm.

The rule's documentation is its class's (`rocmport rule ROC701` prints it).
"""

from __future__ import annotations

import re
from typing import Dict, FrozenSet, List, Optional, Set

import libcst as cst

from rocmport.analysis import gates
from rocmport.analysis.needs import Name
from rocmport.analysis.platforms import CPU, ROCM
from rocmport.analysis.syntax import dotted_name, mentions_rocm
from rocmport.findings import Applicability, Fix
from rocmport.rules.base import Case

from .common import (
    CAPABILITY,
    NVIDIA_ONLY,
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
    r"|(?:^|[^a-z])(?:sm_?\d{2,3}a?|compute_\d{2,3})(?:[^a-z0-9]|$)|cuda_?version|\bcu\d{2,3}\b|cuda_arch")
# A comment that says the code is kept off ROCm (or on CUDA) on purpose.
_INTENT_COMMENT = re.compile(
    r"(?i)#.*(?:\b(?:rocm|amd|hip|mi[23]\d\d)\b|cuda[- ]only|only (?:be )?(?:supported |available |works? )?"
    r"(?:on|for|with) (?:cuda|nvidia)|not (?:yet )?supported on)")
# The module tells NVIDIA from AMD somewhere: its author knows torch.version.cuda means CUDA.
_KNOWS_ROCM = re.compile(r"\bversion\.hip\b|\bIS_HIP_EXTENSION\b|\bROCM_HOME\b|\bis_rocm_pytorch\b|"
                         r"\bis_(?:hip|rocm)\s*\(")
_SKIP_CALLS = frozenset({"skipIf", "skipUnless", "skipif", "skip_if", "skip_unless"})
_SKIPPING = frozenset({"skip", "skipTest", "xfail", "SkipTest"})


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

        Not reported either: a truth test that means "a CUDA build, not ROCm" on purpose, which
        is what `torch.version.cuda` says (its safe fix would turn a deliberate exclusion of
        ROCm on there):
        - a vendor dispatch: its `elif` / `else` tests ROCm (`if torch.version.cuda: ... elif
          torch.version.hip: ...`, `"CUDA" if torch.version.cuda else "HIP" if
          torch.version.hip else None`);
        - a test already known to run on a GPU (`torch.cuda.is_available() and
          torch.version.cuda`, or under `if torch.cuda.is_available():`): there the test can
          only tell NVIDIA from AMD;
        - a function or class that tells NVIDIA from AMD elsewhere (`torch.version.hip`,
          `is_hip()`, `IS_HIP_EXTENSION`), or a comment at the test that says so ("only
          supported on cuda for now", "on ROCm we don't want this");
        - guarded code that only makes sense with NVIDIA's toolchain (nvcc flags, `-arch`,
          `sm_90`, `TORCH_CUDA_ARCH_LIST`, cuDNN, NVML), also after an early exit (`if not
          torch.version.cuda: return` and the rest of the function);
        - the condition of a test skip (`@unittest.skipIf(not torch.version.cuda, ...)`,
          `if not torch.version.cuda: pytest.skip(...)`): a skip on ROCm never fails;
        - a function that every call of the file makes off ROCm (`if not
          self.is_rocm_pytorch(): assert_no_cuda_mismatch()`), for version uses too.
        """
    WHY = """
        `torch.version.cuda` is None on ROCm builds. As a version it raises (`float(None)`,
        `None.split`); as a truth value it silently takes the CPU or "disabled" branch, for
        example turning bf16 off on an AMD GPU: bitsandbytes-foundation/bitsandbytes#1513
        (`torch.version.cuda.split` raised on ROCm 6.3), meta-pytorch/torchtune#597 and #801 (bf16
        reported unsupported on an MI250 and a 7900 XTX), huggingface/transformers#24451 (bf16 check
        False on an MI250X), DeepSpeed#6909 (`.split` on None in the op builder).

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
        # "a CUDA build, not ROCm", on purpose: a vendor dispatch whose other arm tests ROCm
        Case("""
            import torch

            def matmul_fp8(a):
                if torch.version.cuda:
                    assert a.dtype in (torch.float8_e4m3fn, torch.float8_e5m2)
                elif torch.version.hip:
                    assert a.dtype in (torch.float8_e4m3fnuz, torch.float8_e5m2fnuz)
            """),
        Case("""
            import torch
            BACKEND = "CUDA" if torch.version.cuda else "HIP" if torch.version.hip else None
            """),
        # a test already on a GPU can only tell NVIDIA from AMD
        Case("""
            import torch
            if torch.cuda.is_available() and torch.version.cuda:
                torch.ops.load_library("//tinygemm:tinygemm")
            """),
        Case("""
            import torch

            def platform_at_least(major):
                if torch.cuda.is_available():
                    if torch.version.cuda:
                        return torch.cuda.get_device_capability() >= (major, 0)
                return False
            """),
        # a skip on ROCm never fails
        Case("""
            import unittest
            import torch

            class GemmTest(unittest.TestCase):
                @unittest.skipIf(not torch.version.cuda, "Skip on AMD: grouped gemm not yet supported.")
                def test_grouped_gemm(self):
                    pass
            """),
        Case("""
            import pytest
            import torch

            def test_fused():
                if not torch.version.cuda:
                    pytest.skip("needs CUDA")
                run_fused()
            """),
        # a comment that says so, a module that tells the vendors apart elsewhere
        Case("""
            import torch

            def check(model):
                # on ROCm we don't want this check
                if torch.version.cuda:
                    verify_kernels(model)
            """),
        Case("""
            import torch

            def check(model):
                if torch.version.cuda:  # only supported on cuda for now
                    verify_kernels(model)
            """),
        Case("""
            import torch
            from hypothesis import given, strategies as st

            class QuantizeTest:
                @given(mode=st.sampled_from(["rowwise"] + (["tensorwise"] if torch.version.cuda else [])))
                def test_matmul(self, mode):
                    bias = self.bias if torch.version.cuda else None
                    if bias is not None and torch.version.hip:
                        self.skipTest("bias fusion not supported on AMD")
            """),
        # guarded code that only NVIDIA's toolchain runs, also after an early exit
        Case("""
            import torch
            if torch.version.cuda:
                flags = ['-arch=sm_80']
            """),
        Case("""
            import os
            import torch

            def maybe_set_arch_list_env():
                if not torch.version.cuda:
                    return
                arch_list = [f"{m}.{n}" for m, n in caps()]
                os.environ["TORCH_CUDA_ARCH_LIST"] = ";".join(arch_list)
            """),
        # every call of the function is off ROCm (a version use too)
        Case("""
            import torch

            def assert_no_cuda_mismatch():
                torch_cuda_version = ".".join(torch.version.cuda.split(".")[:2])
                return torch_cuda_version

            class Builder:
                def flags(self):
                    if not self.is_rocm_pytorch():
                        assert_no_cuda_mismatch()
            """),
        Case("""
            import torch
            print('CUDA', torch.version.cuda)
            """),
        Case("""
            import torch
            info = {'cuda': torch.version.cuda, 'hip': torch.version.hip}
            """),
        Case("""
            import torch
            if torch.version.cuda or torch.version.hip:
                device = 'cuda'
            """),
        Case("""
            import torch
            if torch.version.hip:
                x = 1
            elif float(torch.version.cuda) >= 11:
                x = 2
            """),
        Case("""
            import torch
            if torch.version.cuda is not None and float(torch.version.cuda) >= 11:
                x = 2
            """),
        Case("""
            import torch
            if torch.version.cuda:
                major = int(torch.version.cuda.split('.')[0])
            """),
        Case("""
            import torch
            def f():
                if torch.version.cuda is None:
                    return None
                return float(torch.version.cuda)
            """),
        Case("""
            import torch
            if torch.version.cuda == '11.8':
                x = 1
            """),
        Case("""
            import torch
            # if float(torch.version.cuda) >= 11:
            s = 'torch.version.cuda.split()'
            """),
        Case("""
            import my
            if float(my.version.cuda) > 1:
                pass
            """),
        Case("""
            import torch
            logger.info(f'cuda {torch.version.cuda}')
            """),
        Case("""
            import torch
            print(f"CUDA: {torch.version.cuda or 'N/A'}")
            label = torch.version.cuda or 'cpu'
            """),
        Case("""
            import torch
            IS_ROCM = torch.version.hip is not None
            IS_CUDA = torch.version.cuda is not None
            """),
        Case("""
            import torch
            def why_not(x):
                if x.device.type != 'cuda' or torch.version.cuda is None:
                    return 'needs an NVIDIA CUDA device'
            """),
    )
    INVALID = (
        # near misses of "on purpose": an elif that tests no ROCm, an `and` with no GPU test, a
        # comment that says nothing of ROCm, a function also called on ROCm
        Case(
            """
            import torch
            if torch.version.cuda:
                device = "cuda"
            elif torch.backends.mps.is_available():
                device = "mps"
            """,
            line=2,
            column=4,
            message=(
                'torch.version.cuda is None on ROCm: this test takes the no-GPU branch on an AMD GPU; test '
                '`torch.version.cuda or torch.version.hip` for "a GPU build"'
            ),
        ),
        Case(
            """
            import torch
            if use_kernels and torch.version.cuda:
                enable_gpu_kernels()
            """,
            line=2,
            column=20,
            message=(
                'torch.version.cuda is None on ROCm: this test takes the no-GPU branch on an AMD GPU; test '
                '`torch.version.cuda or torch.version.hip` for "a GPU build"'
            ),
        ),
        Case(
            """
            import torch

            def check(model):
                # check the CUDA build
                if torch.version.cuda:
                    use_fused_adam(model)
            """,
            line=5,
            column=8,
            message=(
                'torch.version.cuda is None on ROCm: this test takes the no-GPU branch on an AMD GPU; test '
                '`torch.version.cuda or torch.version.hip` for "a GPU build"'
            ),
        ),
        Case(
            """
            import torch

            def cuda_major():
                return int(torch.version.cuda.split(".")[0])

            class Builder:
                def flags(self):
                    if not self.is_rocm_pytorch():
                        cuda_major()
                    return cuda_major()
            """,
            line=4,
            column=16,
            message="torch.version.cuda is None on ROCm: `.split` on it raises AttributeError",
        ),
        Case(
            """
            import torch
            if torch.version.cuda:
                device = 'cuda'
            else:
                device = 'cpu'
            """,
            expected="""
            import torch
            if torch.version.cuda or torch.version.hip:
                device = 'cuda'
            else:
                device = 'cpu'
            """,
            line=2,
            column=4,
            message=(
                'torch.version.cuda is None on ROCm: this test takes the no-GPU branch on an AMD GPU; test '
                '`torch.version.cuda or torch.version.hip` for "a GPU build"'
            ),
        ),
        Case(
            """
            import torch
            use_gpu = True if torch.version.cuda is not None else False
            """,
            expected="""
            import torch
            use_gpu = True if (torch.version.cuda or torch.version.hip) is not None else False
            """,
            line=2,
            column=19,
            message=(
                'torch.version.cuda is None on ROCm: this test takes the no-GPU branch on an AMD GPU; test '
                '`torch.version.cuda or torch.version.hip` for "a GPU build"'
            ),
        ),
        Case(
            """
            import torch
            if version.parse(torch.version.cuda) >= version.parse('11.0'):
                bf16 = True
            """,
            expected="""
            import torch
            if torch.version.cuda is not None and version.parse(torch.version.cuda) >= version.parse('11.0'):
                bf16 = True
            """,
            line=2,
            column=18,
            message="torch.version.cuda is None on ROCm: `parse(None)` raises",
        ),
        Case(
            """
            def supported():
                import torch as th
                ok = th.cuda.is_available() and int(th.version.cuda.split('.')[0]) >= 11
                return ok
            """,
            expected="""
            def supported():
                import torch as th
                ok = th.cuda.is_available() and th.version.cuda is not None and int(th.version.cuda.split('.')[0]) >= 11
                return ok
            """,
            line=3,
            column=41,
            message="torch.version.cuda is None on ROCm: `.split` on it raises AttributeError",
        ),
        Case(
            """
            import torch as th
            ok = th.cuda.is_available() and int(th.version.cuda.split('.')[0]) >= 11
            """,
            expected="""
            import torch as th
            ok = th.cuda.is_available() and th.version.cuda is not None and int(th.version.cuda.split('.')[0]) >= 11
            """,
            line=2,
            column=37,
            message="torch.version.cuda is None on ROCm: `.split` on it raises AttributeError",
        ),
        Case(
            """
            import torch
            CUDA_MAJOR = float(torch.version.cuda)
            """,
            line=2,
            column=20,
            message="torch.version.cuda is None on ROCm: `float(None)` raises",
        ),
        Case(
            """
            import torch
            HAS_GPU_BUILD = torch.version.cuda is not None
            """,
            line=2,
            column=17,
            message=(
                'torch.version.cuda is None on ROCm: this test takes the no-GPU branch on an AMD GPU; test '
                '`torch.version.cuda or torch.version.hip` for "a GPU build"'
            ),
        ),
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
        (``_hip_beside``) and ``.cuda`` (``_read_after``), and the calls of the function that
        holds it (``callers_off_rocm``): the names of the functions that read a ``.version.cuda``."""
        import ast

        words = {"cuda", "hip"}
        for node in facts.nodes(ast.FunctionDef, ast.AsyncFunctionDef):
            if any(isinstance(n, ast.Attribute) and n.attr == "cuda" and isinstance(n.value, ast.Attribute)
                   and n.value.attr == "version" for n in ast.walk(node)):
                words.add(node.name)
        return frozenset(words)

    def __init__(self, context):
        super().__init__(context)
        self._fixed: Set[int] = set()
        self._knows: Dict[int, bool] = {}

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
        if isinstance(holder, cst.If) and holder.test is top and exits(holder.body) and _says_missing(top, node):
            guarded = guarded + self._rest_of_block(holder)  # `if not cuda: return` guards what follows
        if any(mentions(g, NVIDIA_ONLY) or mentions(g, _NVIDIA_WORD) for g in guarded + [top]) \
                or self._tests_capability(top):
            return  # deliberately "a CUDA build": it guards an NVIDIA-only feature, generation or message
        if not guarded and self._hip_beside(top):
            return  # `IS_CUDA = cuda is not None` next to `IS_ROCM = hip is not None`: means CUDA
        if any(mentions(g, _NVIDIA_TOOLCHAIN) for g in guarded):
            return  # code that only NVIDIA's toolchain runs: "a CUDA build" is what it needs
        if self._intended(node, top, holder, guarded):
            return
        message = ("torch.version.cuda is None on ROCm: this test takes the no-GPU branch on an AMD GPU; "
                   "test `torch.version.cuda or torch.version.hip` for \"a GPU build\"")
        if guarded:
            base = self.context.source(node.value)
            text = f"{base}.cuda or {base}.hip"
            if not (isinstance(holder, (cst.If, cst.IfExp)) and holder.test is node):
                text = f"({text})"
            fix = Fix(Applicability.SAFE, "Test for a CUDA or a HIP build", (self.context.replace(node, text),))
            self.report(node, message, fix=fix)
            return
        self.display_only(node, message, "Test torch.version.hip for ROCm; decide whether it means \"a CUDA build\""
                                         " or \"a GPU build\"")

    # -- "a CUDA build, not ROCm", on purpose ---------------------------------------------
    def _intended(self, node: cst.CSTNode, top: cst.CSTNode, holder, guarded: List[cst.CSTNode]) -> bool:
        """Does the code around this truth test show that it means "a CUDA build, not ROCm" on
        purpose: a skip, a vendor dispatch, a test already on a GPU, a module that tells the
        vendors apart, a comment that says so, or a function only called off ROCm?"""
        return (self._skip_condition(top, holder, guarded) or self._dispatches(holder, top)
                or self._on_a_gpu(node, top) or self._knows_rocm(node) or self._intent_comment(top, holder)
                or self.callers_off_rocm(node))

    def _skip_condition(self, top, holder, guarded) -> bool:
        """``skipIf(not torch.version.cuda, ...)``, ``pytest.mark.skipif(...)``, or an ``if``
        whose body only skips the test: a skip on ROCm never fails."""
        if isinstance(holder, cst.Arg) and holder.value is top and holder.keyword is None:
            call = self.parent(holder)
            if isinstance(call, cst.Call) and call.args and call.args[0] is holder:
                name = (dotted_name(call.func) or "").rsplit(".", 1)[-1]
                if name in _SKIP_CALLS:
                    return True
        if isinstance(holder, cst.If) and holder.test is top and guarded:
            body = holder.body.body if isinstance(holder.body, cst.IndentedBlock) else ()
            lines = [s for s in body if isinstance(s, cst.SimpleStatementLine)]
            return bool(lines) and len(lines) == len(body) and all(_skips(small) for s in lines for small in s.body)
        return False

    def _dispatches(self, holder, top) -> bool:
        """``if cuda: ... elif hip: ...`` / ``a if cuda else b if hip else c``: the other arm tests ROCm."""
        gate = self.context.gate_name
        if isinstance(holder, cst.If) and holder.test is top:
            orelse = holder.orelse
            if isinstance(orelse, cst.If):
                return mentions_rocm(orelse.test, gate) or self._dispatches(orelse, orelse.test)
            if isinstance(orelse, cst.Else) and isinstance(orelse.body, cst.IndentedBlock) and orelse.body.body:
                first = orelse.body.body[0]
                return isinstance(first, cst.If) and mentions_rocm(first.test, gate)
        if isinstance(holder, cst.IfExp) and holder.test is top:
            orelse = holder.orelse
            while isinstance(orelse, cst.IfExp):
                if mentions_rocm(orelse.test, gate):
                    return True
                orelse = orelse.orelse
        return False

    def _on_a_gpu(self, node, top) -> bool:
        """Is the test already known to run on a GPU (``torch.cuda.is_available() and cuda``,
        or under ``if torch.cuda.is_available():``)? Then it can only tell NVIDIA from AMD."""
        platforms = gates.of(self.context)
        current = top
        while isinstance(self.parent(current), cst.BooleanOperation):
            current = self.parent(current)
        for operand in _and_operands(current):
            if operand is top or any(n is node for n in walk(operand)):
                continue
            test = platforms.test(operand)
            if ROCM in test.true and CPU not in test.true:
                return True
        where = self.platforms(top)
        return ROCM in where and CPU not in where

    def _knows_rocm(self, node: cst.CSTNode) -> bool:
        """Does the function around ``node`` (its decorators included) or its class tell NVIDIA
        from AMD elsewhere (``torch.version.hip``, ``is_hip()``)? Its author then means CUDA."""
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef)):
                key = id(ancestor)
                if key not in self._knows:
                    self._knows[key] = _KNOWS_ROCM.search(self.context.module.code_for_node(ancestor)) is not None
                if self._knows[key]:
                    return True
        return False

    def _intent_comment(self, top, holder) -> bool:
        """A comment on the lines just above the statement, on its line or on the first line
        of what it guards, that says ROCm (or "CUDA only") on purpose."""
        statement = statement_of(self, top) or holder
        try:
            row = self.context.position(statement).start.line
        except KeyError:
            return False
        lines = self.context.lines
        for r in range(max(1, row - 2), row + 2):
            start, end = lines.line_span(r) if r <= len(lines.starts) else (0, 0)
            if _INTENT_COMMENT.search(self.context.text[start:end]):
                return True
        return False

    def _rest_of_block(self, statement) -> List[cst.CSTNode]:
        block = self.parent(statement)
        body = getattr(block, "body", ())
        if not isinstance(body, (list, tuple)) or statement not in body:
            return []
        return list(body[body.index(statement) + 1:])

    # -- a version -------------------------------------------------------------------------
    def _version(self, node: cst.Attribute, why: str) -> None:
        if self._guarded_by_earlier_exit(node) or self.callers_off_rocm(node):
            return
        message = f"torch.version.cuda is None on ROCm: {why}"
        test = self._version_test(node)
        if test is not None and self._none_checked_before(node, test):
            return  # `x is not None and <test>`: the test never runs on ROCm
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

    def _none_checked_before(self, node: cst.Attribute, test: cst.CSTNode) -> bool:
        """Is ``test`` the right side of an ``and`` whose left side tests the same expression
        ``is not None`` (what this rule's fix writes, wherever the platform analysis cannot
        tell the name for torch: an alias imported inside a function)?"""
        base = self.context.source(node)
        current, parent = test, self.parent(test)
        while isinstance(parent, cst.BooleanOperation) and isinstance(parent.operator, cst.And) \
                and parent.right is current:
            for operand in _and_operands(parent.left):
                if (isinstance(operand, cst.Comparison) and len(operand.comparisons) == 1
                        and isinstance(operand.comparisons[0].operator, cst.IsNot)
                        and is_none(operand.comparisons[0].comparator) and not operand.lpar
                        and self.context.source(operand.left) == base):
                    return True
            current, parent = parent, self.parent(parent)
        return False

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


def _says_missing(top: cst.CSTNode, node: cst.CSTNode) -> bool:
    """Is ``top`` true when the CUDA version is missing: ``not torch.version.cuda``,
    ``torch.version.cuda is None``?"""
    if isinstance(top, cst.UnaryOperation) and isinstance(top.operator, cst.Not):
        return top.expression is node
    if isinstance(top, cst.Comparison) and len(top.comparisons) == 1 and top.left is node:
        target = top.comparisons[0]
        return isinstance(target.operator, (cst.Is, cst.Equal)) and is_none(target.comparator)
    return False


def _and_operands(expr: cst.CSTNode) -> List[cst.CSTNode]:
    if isinstance(expr, cst.BooleanOperation) and isinstance(expr.operator, cst.And):
        return _and_operands(expr.left) + _and_operands(expr.right)
    return [expr]


def _skips(small: cst.CSTNode) -> bool:
    """A statement that skips a test: ``pytest.skip(...)``, ``self.skipTest(...)``,
    ``raise unittest.SkipTest(...)``."""
    if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
        return (dotted_name(small.value.func) or "").rsplit(".", 1)[-1] in _SKIPPING
    if isinstance(small, cst.Raise) and small.exc is not None:
        exc = small.exc.func if isinstance(small.exc, cst.Call) else small.exc
        return (dotted_name(exc) or "").rsplit(".", 1)[-1] == "SkipTest"
    return False
