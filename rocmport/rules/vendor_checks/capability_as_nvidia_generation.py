"""ROC702 capability-as-nvidia-generation: A compute-capability comparison read as an NVIDIA generation; AMD GPUs report (9, x).

The rule's documentation is its class's (`rocmport rule ROC702` prints it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from types import SimpleNamespace
from typing import FrozenSet, List, Optional, Set, Tuple

import libcst as cst

from rocmport import rocm_facts
from rocmport.analysis import bindings, gates
from rocmport.analysis.needs import Attribute, Call
from rocmport.analysis.platforms import ROCM, name_words, nvidia_feature_word
from rocmport.analysis.syntax import dotted_name, literal_string, negated_gate
from rocmport.findings import Applicability, Fix
from rocmport.rules.base import Case

from .common import (
    CAPABILITY,
    NVIDIA_ONLY,
    PROPERTIES,
    VendorRule,
    arch_doc,
    facts_doc,
    identifiers,
    is_none,
    mentions,
    walk,
)


def _raises(node: cst.CSTNode) -> bool:
    """A block (or statement) that raises: a rejection, not a feature."""
    return any(isinstance(n, cst.Raise) for n in walk(node))


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
        func = node.func
        if type(func) is ast.Attribute and func.attr in ("get_device_capability", "to_int"):
            return True  # a platform object's capability, its ``.to_int()``
        return facts.may_be(func, CAPABILITY)
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


def _thresholds(node: cst.CSTNode, capability) -> List[int]:
    """The majors that the capability comparisons under ``node`` name (9 for ``>= (9, 0)``,
    ``== 9``, ``>= 90``, ``has_device_capability(90)``); ``capability(operand)`` says which
    operands are capabilities (``head_size != 160`` beside them is not one)."""
    out = []
    for n in walk(node):
        if isinstance(n, cst.Comparison):
            operands = [n.left] + [c.comparator for c in n.comparisons]
            if not any(capability(o) for o in operands if not _literal_ints(o)):
                continue
        elif isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and \
                n.func.attr.value in ("has_device_capability", "is_device_capability"):
            operands = [a.value for a in n.args]
        else:
            continue
        out.extend(_major(o) or 0 for o in operands if _literal_ints(o))
    return out


def _names_a_generation(node: cst.CSTNode, capability=lambda _: True) -> bool:
    """A threshold of Hopper or later (major 9 or more) in a capability comparison under
    ``node``, which AMD GPUs (9, x) meet or equal. Lower ones (``major >= 7`` for fp16, ``== 8``
    for Ampere) answer "a recent GPU" or "not that one" on AMD, which is what the code expects."""
    return any(major >= 9 for major in _thresholds(node, capability))


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


# a platform object's capability tests: `current_platform.has_device_capability(90)`
_PLATFORM_QUERIES = ("has_device_capability", "is_device_capability")


class CapabilityAsNvidiaGeneration(VendorRule):
    CODE = "ROC702"
    NAME = "capability-as-nvidia-generation"
    SUMMARY = "A compute-capability comparison read as an NVIDIA generation; AMD GPUs report (9, x)."
    NEEDS = Call(*CAPABILITY, *PROPERTIES) | Attribute("get_device_capability", *_PLATFORM_QUERIES)
    BY_FILE_NAME = False
    FIX_APPLICABILITY = Applicability.SAFE
    WHAT = """
        A comparison of the compute capability with a number or a tuple of numbers, judged by
        what it answers on AMD Instinct GPUs, which report their gfx version: MI200 (9, 0),
        MI300 (9, 4), MI350 (9, 5). The capability is `torch.cuda.get_device_capability()`,
        its `[0]`, `.major` / `.minor` of `torch.cuda.get_device_properties()`, a platform
        object's `get_device_capability()` (`current_platform.get_device_capability()`, its
        `.to_int()`), `has_device_capability(90)` / `is_device_capability(100)`, names assigned
        from them (`major, minor = ...`, `cap = ...`, a module global) and arithmetic on them
        (`major * 10 + minor >= 89`). Reported where AMD GPUs pass the comparison into:

        - an NVIDIA-only feature (FA3, TMA, wgmma, Hopper / Blackwell kernels, CUTLASS,
          Marlin, Machete, DeepGEMM, FlashMLA, TensorRT-LLM) named by the code it decides,
          below Hopper too (`major >= 8` before a Marlin kernel); one NVIDIA generation
          named exactly (`== 9`, `!= (9, 0)`) picks that generation's kernels;
        - fp8 or FP4 / MX formats that some of them lack (MI200 has no fp8; only MI350 has FP4
          and MX GEMMs): `>= (8, 9)` turning fp8 on, `major < 8 or (major == 8 and minor < 9)`
          skipping a fallback;
        - a Hopper-or-later path of something else (a major of 9 or more: tiles, stages,
          configurations tuned for Hopper).

        Not reported: answers that are right on AMD (`major >= 8` for bf16 or fp16, which
        every AMD GPU has; an fp8 test skipped, or an fp8 model rejected, below (9, 0), which
        MI300 and MI350 pass and run; a path turned on below the generation that has the
        feature in hardware, which converts or emulates it); comparisons that no Instinct GPU
        passes (`== (10, 0)`, `major >= 10`, a rejection below Blackwell); a skip whose reason
        names an AMD GPU ("MI300 or H100"); comparisons under a ROCm test (there they compare
        AMD architectures: `torch.version.hip and cap >= (9, 5)`), conjoined with a test that
        excludes ROCm (`not is_rocm and ...`, `is_cuda() and ...` where `is_cuda()` tests the
        CUDA platform or Triton's backend, `find_spec("cutlass") is not None and ...`, a CUDA
        version that is `(0, 0)` off CUDA), under `if torch.version.cuda:`, after an early
        exit; code for NVIDIA GPUs only (a module that imports a package with no ROCm build, a
        function or class named for an NVIDIA-only feature, code after `try: import deep_gemm`
        / `pytest.importorskip("flash_mla")`), another accelerator's code (`hpu` / `xpu` /
        `npu` paths, backend trees such as `_kunlunxin/`); printing the capability. A file's
        name decides nothing. The same comparison written again in the module (the same skip
        on five test classes) is one finding with the count of the places that follow.
        """
    WHY = """
        On ROCm `get_device_capability()` reports the gfx version, so comparisons written
        against NVIDIA generations pick Hopper-only (`>= (9, 0)`) or Ampere (`major >= 8`)
        paths on AMD: FA3, TMA, sm90 kernels, Hopper-tuned tiles (11 threads: torchtitan#3738
        and #4778, sglang#28486, vllm#40620). lmdeploy read MI300's (9, 4) as Hopper and gave
        it Hopper tile sizes, which ran out of AMD's LDS (InternLM/lmdeploy#3925);
        GPTQModel's `major >= 8` sent AMD GPUs to the NVIDIA-only Marlin kernels
        (ModelCloud/GPTQModel#1040).

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
        Marlin, Machete, DeepGEMM, FlashMLA, TensorRT-LLM, named in the guarded branch, in
        the rest of an `and` chain, in the name the result is assigned to (`use_fa3 = ...`) or in the name of the function that
        returns it (`def is_hopper(): return ...`), when the comparison says "this generation
        or later" (`>=`, `>`, `==`, `in`; a platform object's capability too) and its branch
        does not raise. The comparison becomes
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
        # a Hopper module whose import runs CUDA-only code through a kernel module of the
        # project (CuTe DSL): it does not load on ROCm, so its check never runs there
        Case("""
            import torch
            from pkg.ops._kernel_sm90 import kernel

            def run(x):
                if torch.cuda.get_device_capability() != (9, 0):
                    raise RuntimeError("needs SM90")
                return kernel(x)
            """, path="pkg/ops/fused_sm90.py",
             files=(("pkg/__init__.py", ""), ("pkg/ops/__init__.py", ""),
                    ("pkg/ops/_kernel_sm90.py", "import cutlass.cute as cute\ndef kernel(x):\n    return x\n"))),
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
        Case("""
            import torch
            cap = torch.cuda.get_device_capability()
            if cap[0] >= 8:
                dtype = torch.bfloat16
            """),
        # rejections that AMD GPUs do not pass: the NVIDIA-only path stays off there
        Case("""
            import torch
            if nvfp4 and torch.cuda.get_device_capability() < (10, 0):
                raise ValueError('needs Blackwell')
            """),
        Case("""
            import torch
            if torch.cuda.get_device_capability()[0] == 9:
                raise ValueError('not supported on Hopper')
            """),
        # right on AMD: every AMD GPU has bf16; MI300 / MI350 run an fp8 test skipped below (9, 0)
        Case("""
            import torch
            def supports_bf16():
                return torch.cuda.is_available() and torch.cuda.get_device_capability() >= (8, 0)
            """),
        Case("""
            import torch
            import unittest
            @unittest.skipIf(torch.cuda.get_device_capability()[0] < 9, "needs H100")
            class TestFp8RowwiseGemm(unittest.TestCase):
                pass
            """),
        Case("""
            import torch
            import pytest
            @pytest.mark.skipif(torch.cuda.get_device_capability()[0] < 9, reason="MI300 or H100 is not available")
            def test_grouped_gemm():
                pass
            """),
        # a path turned on below the generation with fp8 in hardware converts or emulates it
        Case("""
            import torch
            if torch.cuda.get_device_capability()[0] >= 8:
                kv_cache_dtype = torch.float8_e4m3fn
            """),
        # no Instinct GPU passes these
        Case("""
            import torch
            if torch.cuda.get_device_capability() == (10, 0):
                import flash_attn_interface
            use_tcgen05 = torch.cuda.get_device_capability()[0] >= 10
            """),
        Case("""
            from .platforms import current_platform
            if current_platform.is_device_capability(100):
                use_tcgen05 = True
            """),
        # AMD architectures compared under a HIP test
        Case("""
            import torch
            def _skip_config(block_k):
                return block_k == 64 and torch.version.hip is not None and torch.cuda.get_device_capability() >= (9, 5)
            """),
        # conjoined with a test that is false on ROCm
        Case("""
            import torch
            import triton
            def is_cuda():
                return triton.runtime.driver.active.get_current_target().backend == "cuda"
            def supports_tma():
                return is_cuda() and torch.cuda.get_device_capability()[0] >= 9
            """),
        Case("""
            import torch
            _cuda_ver = tuple(int(x) for x in torch.version.cuda.split(".")[:2]) if torch.version.cuda else (0, 0)
            if torch.cuda.get_device_capability()[0] >= 8 and _cuda_ver >= (12, 3):
                import flash_attn_interface
            """),
        Case("""
            import importlib.util
            import torch
            CUTEDSL = importlib.util.find_spec("cutlass") is not None and torch.cuda.get_device_capability() >= (9, 0)
            """),
        # code for NVIDIA GPUs only
        Case("""
            import torch
            def _has_deep_gemm():
                try:
                    import deep_gemm
                except ImportError:
                    return False
                return torch.cuda.get_device_capability()[0] >= 9
            """),
        Case("""
            import cutlass.cute as cute
            import torch
            def tile_config():
                return 256 if torch.cuda.get_device_capability()[0] >= 9 else 128
            """),
        # on AMD it only skips a test
        Case("""
            import torch
            import pytest
            def test_loss(loss_type):
                if loss_type == "luspo" and torch.cuda.get_device_capability()[0] >= 9:
                    pytest.skip("flaky on H100")
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
            props = torch.cuda.get_device_properties(0)
            sm = props.major * 10 + props.minor
            if sm >= 89:
                use_fp8 = True
            """,
            line=4,
            column=4,
            message=(
                "get_device_capability() is an AMD gfx version on ROCm (MI200 (9, 0), MI300 (9, 4), MI350 (9, 5)): "
                "this comparison reads it as an NVIDIA generation (fp8 on MI200 (9, 0), which has none)"
            ),
        ),
        Case(
            """
            import torch
            from .platforms import current_platform
            if current_platform.get_device_capability() >= (9, 0):
                import flash_attn_interface
            """,
            expected="""
            import torch
            from .platforms import current_platform

            {PRELUDE}

            if not is_rocm and current_platform.get_device_capability() >= (9, 0):
                import flash_attn_interface
            """,
            line=3,
            column=4,
            message=(
                "get_device_capability() is an AMD gfx version on ROCm (MI200 (9, 0), MI300 (9, 4), MI350 (9, 5)): "
                "this comparison reads it as an NVIDIA generation and picks an NVIDIA-only feature on AMD"
            ),
        ),
        Case(
            """
            from .platforms import current_platform
            use_tma = current_platform.has_device_capability(90)
            """,
            line=2,
            column=11,
            message=(
                "get_device_capability() is an AMD gfx version on ROCm (MI200 (9, 0), MI300 (9, 4), MI350 (9, 5)): "
                "this comparison reads it as an NVIDIA generation"
            ),
        ),
        Case(
            """
            from .platforms import current_platform
            if current_platform.get_device_capability().to_int() >= 89:
                quant_dtype = "fp8"
            """,
            line=2,
            column=4,
            message=(
                "get_device_capability() is an AMD gfx version on ROCm (MI200 (9, 0), MI300 (9, 4), MI350 (9, 5)): "
                "this comparison reads it as an NVIDIA generation (fp8 on MI200 (9, 0), which has none)"
            ),
        ),
        # below Hopper, before an NVIDIA-only kernel
        Case(
            """
            import torch
            def _validate_marlin_device_support():
                return torch.cuda.is_available() and torch.cuda.get_device_capability()[0] >= 8
            """,
            expected="""
            import torch

            {PRELUDE}

            def _validate_marlin_device_support():
                return torch.cuda.is_available() and not is_rocm and torch.cuda.get_device_capability()[0] >= 8
            """,
            line=3,
            column=42,
            message=(
                "get_device_capability() is an AMD gfx version on ROCm (MI200 (9, 0), MI300 (9, 4), MI350 (9, 5)): "
                "this comparison reads it as an NVIDIA generation and picks an NVIDIA-only feature on AMD"
            ),
        ),
        # MI200 skips the fallback it needs
        Case(
            """
            import torch
            major, minor = torch.cuda.get_device_capability()
            if (major < 8) or (major == 8 and minor < 9):
                logger.warning("fp8 needs compute capability 8.9: dequantizing to bf16")
                config.dequantize = True
            """,
            line=3,
            column=5,
            message=(
                "get_device_capability() is an AMD gfx version on ROCm (MI200 (9, 0), MI300 (9, 4), MI350 (9, 5)): "
                "this comparison reads it as an NVIDIA generation (bf16 / fp8 on MI200 (9, 0), which has none)"
            ),
        ),
        # one generation named exactly: MI200, MI300 and MI350 all report major 9
        Case(
            """
            import torch
            def _has_gluon():
                if not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] != 9:
                    return False
                from .blocked_fp8_gemm_gluon import fp8_gemm_nt
                return True
            """,
            line=3,
            column=41,
            message=(
                "get_device_capability() is an AMD gfx version on ROCm (MI200 (9, 0), MI300 (9, 4), MI350 (9, 5)): "
                "this comparison reads it as an NVIDIA generation"
            ),
        ),
        # one decision, written on two test classes: one finding, the second place counted
        Case(
            """
            import torch
            import unittest
            @unittest.skipIf(torch.cuda.get_device_capability()[0] < 9, "needs H100")
            class TestFp4Quantize(unittest.TestCase):
                pass
            @unittest.skipIf(torch.cuda.get_device_capability()[0] < 9, "needs H100")
            class TestFp4RmsQuantize(unittest.TestCase):
                pass
            """,
            line=3,
            column=18,
            message=(
                "get_device_capability() is an AMD gfx version on ROCm (MI200 (9, 0), MI300 (9, 4), MI350 (9, 5)): "
                "this comparison reads it as an NVIDIA generation (FP4 / MX formats on MI300 (9, 4), which has none) "
                "(1 more place in this file follows from this decision: line 6)"
            ),
        ),
        # the capability read from nvidia-smi, else from torch: on an AMD GPU, torch's
        Case(
            """
            import subprocess
            import torch
            def check_fp8_capability():
                try:
                    out = subprocess.check_output(["nvidia-smi", "--query-gpu=compute_capability", "--format=csv"])
                    cap = tuple(map(int, out.decode().split(".")))
                except Exception:
                    cap = torch.cuda.get_device_capability()
                return cap >= (8, 9)
            """,
            line=9,
            column=12,
            message=(
                "get_device_capability() is an AMD gfx version on ROCm (MI200 (9, 0), MI300 (9, 4), MI350 (9, 5)): "
                "this comparison reads it as an NVIDIA generation (fp8 on MI200 (9, 0), which has none)"
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
    )

    @classmethod
    def may_match(cls, facts) -> bool:
        """Only ``visit_Comparison`` reports, and only for a comparison with a literal-int
        operand and an operand that ``_capability`` accepts: the same shapes on CPython's tree,
        with ``is_name`` widened to ``facts.may_be`` and a name to ``_capability_names``."""
        wrappers = any(facts.attributes.get(name) for name in ("get_device_capability", *_PLATFORM_QUERIES))
        if not wrappers and not any(facts.calls_to(CAPABILITY | PROPERTIES)):
            return False
        if facts.tree is None:
            return True
        import ast

        if any(type(n.func) is ast.Attribute and n.func.attr in _PLATFORM_QUERIES for n in facts.nodes(ast.Call)):
            return True

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
        return frozenset((names & _module_assigned(facts)) | facts.spellings(CAPABILITY | PROPERTIES)
                         | {"get_device_capability", *_PLATFORM_QUERIES})

    def __init__(self, context):
        super().__init__(context)
        self._done: Set[int] = set()  # top expressions already judged (one finding per decision)

    def visit_Comparison(self, node: cst.Comparison) -> None:
        operands = [node.left] + [c.comparator for c in node.comparisons]
        if not any(_literal_ints(o) for o in operands):
            return
        if not any(self._capability(o) for o in operands if not _literal_ints(o)):
            return
        self._judge(node)

    def visit_Call(self, node: cst.Call) -> None:
        """``current_platform.has_device_capability(90)`` (``>= 90``) and
        ``is_device_capability(100)`` (``== 100``) of a platform object."""
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in _PLATFORM_QUERIES and len(node.args) == 1 \
                and _literal_ints(node.args[0].value) and _platform_object(func.value):
            self._judge(node)

    # -- what a comparison answers on AMD GPUs --------------------------------------------
    def _judge(self, node: cst.CSTNode) -> None:
        top = _top(self, node)
        if id(top) in self._done:
            return  # `major < 8 or (major == 8 and minor < 9)`: one decision
        self._done.add(id(top))
        if self.gated(node):
            return
        use = self._use(top)
        if gates.of(self.context).nvidia_only(node, names=not self._predicate(use)):
            return  # code for NVIDIA GPUs only (a function named so is the test, not such code)
        features, text = self._features(node, use)
        if _exact_generation(self, top):
            features.add("nvidia")  # `== 9`, `!= (9, 0)`: one generation's kernels, not a feature
        at_least = self._at_least(node, top)
        if use.kind == ENABLE and not at_least and isinstance(use.site, (cst.Return, cst.Assign, cst.AnnAssign)):
            use = Use(REJECT_SOFT, use.site, use.guarded, use.raises)  # `return cap[0] < 9`: a "too old" test
        # the GPUs that reach the decided code: read as new enough, or not rejected
        taken = self._taken(top, node, at_least if use.kind in (ENABLE, OTHER) else use.kind == REQUIRE)
        message = ("get_device_capability() is an AMD gfx version on ROCm (MI200 (9, 0), MI300 (9, 4), "
                   "MI350 (9, 5)): this comparison reads it as an NVIDIA generation")
        if "nvidia" in features:
            if not taken:
                return  # `== (10, 0)`, `>= 13`: no AMD GPU reports it; the NVIDIA-only path stays off
            fix = self._gate(node, use, features)
            if fix is not None:
                self.report(node, message + " and picks an NVIDIA-only feature on AMD", fix=fix)
                return
            self._decide(top, node, message, "Test the feature or the architecture "
                         "(get_device_properties(0).gcnArchName) on ROCm, or gate the NVIDIA-only path with "
                         "`not is_rocm and ...`")
            return
        amd = [f for f in features if f in _AMD_SUPPORT]
        if use.kind in (ENABLE, OTHER):
            # a path that NVIDIA's generation below the hardware feature takes too (Ampere (8, 6)
            # for fp8, Hopper for FP4) converts or emulates it: AMD GPUs take it as NVIDIA's do
            amd = [f for f in amd if not self._emulated(top, node, at_least, _BELOW_HARDWARE[f])]
        if amd:
            wrong = {cap for cap in taken for f in amd if cap not in _AMD_SUPPORT[f]}
            if use.kind in (REJECT, REJECT_SOFT, REQUIRE):
                wrong &= {GFX942}  # MI200 without fp8 fails either way: a raise, a skip or the kernel
            if not wrong:
                return  # bf16 on `major >= 8`, an fp8 test skipped below (9, 0): right on AMD
            self._decide(top, node, message + f" ({_feature_words(amd)} on {_gpus(wrong)}, which "
                         f"{'has' if len(wrong) == 1 else 'have'} none)",
                         "Some AMD GPUs have this feature and some do not: test the feature "
                         "(torch.cuda.is_bf16_supported()) or the architecture (get_device_properties(0).gcnArchName) "
                         "rather than an NVIDIA generation")
            return
        if use.kind in (REJECT, REJECT_SOFT, REQUIRE) and _names_amd(text):
            return  # `skipIf(major < 9, "Skip when MI300 or H100 is not available")`: AMD is meant to run it
        if use.kind == ENABLE and isinstance(use.site, (cst.If, cst.IfExp)):
            # a ladder of generations (`< 8`, `< 9`, `< 10`): the branch AMD GPUs enter is the misreading
            taken = self._taken(top, node, True)
        if not taken or not _names_a_generation(top, self._capability):
            return  # `major >= 7` for fp16, `>= 8` for Triton: AMD GPUs pass, and have the feature
        self._decide(top, node, message, "Test the feature or the architecture (get_device_properties(0).gcnArchName)"
                     " on ROCm, or gate the NVIDIA-only path with `not is_rocm and ...`")

    def _predicate(self, use: "Use") -> bool:
        """Is the decision what a function named for an NVIDIA-only feature answers
        (``def is_hopper(): return cap[0] == 9``, ``def supports_tma(): if ...: return True``)?
        Such a function is the test, not code that runs on NVIDIA only."""
        function = next((a for a in self.ancestors(use.site) if isinstance(a, cst.FunctionDef)), None) \
            if use.site is not None else None
        if function is None:
            return False
        if isinstance(use.site, cst.Return):
            return True
        returns = [n for n in walk(function.body) if isinstance(n, cst.Return)]
        assigned = {dotted_name(t) for t in use.guarded} if isinstance(use.site, (cst.Assign, cst.AnnAssign)) else set()
        return bool(returns) and all(isinstance(r.value, cst.Name) and (
            r.value.value in ("True", "False") or r.value.value in assigned) for r in returns)

    def _decide(self, top: cst.CSTNode, node: cst.CSTNode, message: str, hint: str) -> None:
        """A display-only finding, once per decision: the same comparison written again in the
        module (the same skip on five test classes) is counted, not reported again."""
        self.report(node, message, fix=Fix(Applicability.DISPLAY_ONLY, hint),
                    decision=" ".join(self.context.source(top).split()))

    def _gate(self, node, use, features) -> Optional[Fix]:
        """The safe fix: ``not is_rocm and <comparison>`` where the comparison turns an
        NVIDIA-only feature on ("this generation or later") and nothing AMD has."""
        if use.kind != ENABLE or features != {"nvidia"} or not self._enables(node) or use.raises:
            return None
        if not (isinstance(node, cst.Comparison) and use.site is not None):
            return None
        if not any(mentions(g, NVIDIA_ONLY) for g in use.guarded):
            return None
        text = f"{negated_gate(self.context.gate_name)} and {self.context.source(node)}"
        parent = self.parent(node)
        if isinstance(parent, cst.BooleanOperation) and isinstance(parent.operator, cst.Or):
            text = f"({text})"
        return Fix(Applicability.SAFE, "Keep the NVIDIA-only path off ROCm", (self.context.replace(node, text),),
                   ("gate",))

    def _use(self, top: cst.CSTNode) -> "Use":
        """How the decision is used: what its truth turns on or rejects, and the code it decides."""
        parent = self.parent(top)
        if isinstance(parent, cst.If) and parent.test is top:
            body = parent.body
            if _raises(body) or _skips(body):
                return Use(REJECT, parent, [body], True)
            if _only_returns_false(body):
                return Use(REJECT_SOFT, parent, [body] + _rest_of_block(self, parent), False)
            return Use(ENABLE, parent, [body], False)
        if isinstance(parent, cst.IfExp) and parent.test is top:
            return Use(ENABLE, parent, [parent.body], False)
        if isinstance(parent, (cst.Assign, cst.AnnAssign)):
            targets = [t.target for t in parent.targets] if isinstance(parent, cst.Assign) else [parent.target]
            return Use(ENABLE, parent, targets, False)
        if isinstance(parent, cst.Return):
            function = next((a for a in self.ancestors(parent) if isinstance(a, cst.FunctionDef)), None)
            return Use(ENABLE, parent, [function.name] if function is not None else [], False)
        if isinstance(parent, cst.Assert):
            return Use(REQUIRE, parent, [parent.msg] if parent.msg is not None else [], True)
        skip = self._skip_decorator(top)
        if skip is not None:
            return skip
        return Use(OTHER, None, [], False)

    def _skip_decorator(self, top: cst.CSTNode) -> Optional["Use"]:
        """``@unittest.skipIf(<top>, reason)`` / ``@pytest.mark.skipif(...)`` (reject: the test is
        skipped when true) and ``skipUnless`` (skipped when false)."""
        arg = self.parent(top)
        call = self.parent(arg) if isinstance(arg, cst.Arg) else None
        if not isinstance(call, cst.Call) or call.args[0] is not arg:
            return None
        name = (dotted_name(call.func) or "").rsplit(".", 1)[-1].lower()
        if name not in ("skipif", "skipunless"):
            return None
        decorated = [a for a in self.ancestors(call) if isinstance(a, (cst.FunctionDef, cst.ClassDef))]
        reason = [a.value for a in call.args[1:]]
        # the test's name and the reason, not its body (a test class names many things)
        guarded = reason + ([decorated[0].name] if decorated and isinstance(self.parent(call), cst.Decorator) else [])
        return Use(REJECT if name == "skipif" else ENABLE, call, guarded, True)

    def _features(self, node: cst.CSTNode, use: "Use") -> Tuple[Set[str], str]:
        """What the decided code is about (``nvidia``, ``fp8``, ``mx``, ``bf16``), from the
        names and strings it holds, and its text (the words of a skip reason)."""
        pieces = list(use.guarded) + _and_siblings(self, node)
        found: Set[str] = set()
        words, names = [], []
        for piece in pieces:
            messages = {id(m) for m in _messages(piece, use)}
            for n in walk(piece):
                if isinstance(n, cst.Name):
                    names.append(n.value)
                elif isinstance(n, cst.SimpleString) and id(n) not in messages:
                    names.append(str(literal_string(n) or ""))  # `return "fa3"`, `impl = "wgmma"`
            words.extend(" ".join(name_words(w)) if w.isidentifier() else w for w in identifiers(piece))
        text = " ".join(words)
        # NVIDIA-only features named by the code, not by a message ("requires sm90+" states the
        # threshold): names, and strings that are values rather than what a raise, a skip or a log says
        nvidia = {w for name in names for w in _nvidia_words(name)}
        if _MX.search(text):
            found.add("mx")
        if _FP8.search(text):
            found.add("fp8")
        if _BF16.search(text):
            found.add("bf16")
        if "feature" in nvidia or (nvidia and not found):
            found.add("nvidia")  # a generation's name (`is_sm90`, `pre_sm90`) beside fp8 / bf16 is the threshold
        return found, text

    def _at_least(self, node: cst.CSTNode, top: cst.CSTNode) -> bool:
        """Does the whole condition say "new enough" when true (``cap >= (9, 0)``, ``major ==
        9``, ``has_device_capability(90)``), rather than "too old" (``major < 9``, ``!= 9``,
        ``not cap >= ...``)?"""
        if isinstance(node, cst.Comparison):
            at_least = self._enables(node)
        else:
            at_least = True
        current = node
        while current is not top:
            current = self.parent(current)
            if isinstance(current, cst.UnaryOperation) and isinstance(current.operator, cst.Not):
                at_least = not at_least
        return at_least

    def _taken(self, top: cst.CSTNode, node: cst.CSTNode, wanted: bool, caps=None) -> Set[Tuple[int, int]]:
        """The capabilities (the Instinct GPUs' unless ``caps``) on which the condition is
        ``wanted`` (True: the feature is on; False: a rejection lets the GPU through). An
        operand the analysis cannot evaluate counts as going along with the comparison."""
        out: Set[Tuple[int, int]] = set()
        for cap in caps or INSTINCT:
            value = self._evaluate(top, cap, 0)
            if value is None:
                value = self._push(node, top, cap)  # an unknown operand: what this comparison adds
            if value is None or value is wanted:
                out.add(cap)
        return out

    def _emulated(self, top: cst.CSTNode, node: cst.CSTNode, at_least: bool, below) -> bool:
        """Does the NVIDIA generation just below the feature's hardware (``below``) provably take
        the path too? Then the path converts or emulates the feature."""
        value = self._evaluate(top, below, 0)
        if value is None:
            value = self._push(node, top, below)
        return value is at_least

    def _push(self, node: cst.CSTNode, top: cst.CSTNode, cap) -> Optional[bool]:
        """Which way the comparison alone moves its decision on ``cap``: its value, flipped by
        each ``not`` between it and the top."""
        value = self._evaluate(node, cap, 0)
        if value is None:
            return None
        current = node
        while current is not top:
            current = self.parent(current)
            if isinstance(current, cst.UnaryOperation) and isinstance(current.operator, cst.Not):
                value = not value
        return value

    def _evaluate(self, expr: cst.CSTNode, cap, depth: int) -> Optional[bool]:
        """The truth of ``expr`` on an AMD GPU that reports ``cap`` (None: unknown)."""
        if depth > 12:
            return None
        if isinstance(expr, cst.BooleanOperation):
            left, right = self._evaluate(expr.left, cap, depth + 1), self._evaluate(expr.right, cap, depth + 1)
            if isinstance(expr.operator, cst.And):
                return False if False in (left, right) else (True if left is True and right is True else None)
            return True if True in (left, right) else (False if left is False and right is False else None)
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
            inner = self._evaluate(expr.expression, cap, depth + 1)
            return None if inner is None else not inner
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and \
                expr.func.attr.value in _PLATFORM_QUERIES and expr.args and _platform_object(expr.func.value):
            wanted = _int_value(expr.args[0].value)
            if wanted is None:
                return None
            have = cap[0] * 10 + cap[1]
            return have >= wanted if expr.func.attr.value == "has_device_capability" else have == wanted
        if isinstance(expr, cst.Comparison):
            target = expr.comparisons[0]
            if len(expr.comparisons) == 1 and is_none(target.comparator) and \
                    isinstance(target.operator, (cst.Is, cst.IsNot)):
                inner = self._evaluate(expr.left, cap, depth + 1)  # `cuda_version is not None`
                if inner is not None:
                    return inner if isinstance(target.operator, cst.IsNot) else not inner
            return self._compare(expr, cap)
        if isinstance(expr, cst.Name) and not self._may_hold_capability(expr.value):
            values = self.values(expr)
            if len(values) == 1 and not isinstance(values[0], cst.Name):
                return self._evaluate(values[0], cap, depth + 1)  # `cuda_version = torch.version.cuda`
        test = gates.of(self.context).test(expr)
        if test.known and not test.arch:
            if ROCM not in test.false:
                return True
            if ROCM not in test.true:
                return False
        return None

    def _compare(self, expr: cst.Comparison, cap) -> Optional[bool]:
        left = self._value(expr.left, cap, 0)
        for target in expr.comparisons:
            right = self._value(target.comparator, cap, 0)
            if left is None or right is None:
                return None
            try:
                ok = _OPS[type(target.operator)](left, right)
            except (KeyError, TypeError):
                return None
            if not ok:
                return False
            left = right
        return True

    def _value(self, expr: cst.CSTNode, cap, depth: int):
        """The value of a capability expression (or a literal) on an AMD GPU reporting ``cap``."""
        if depth > 6:
            return None
        if isinstance(expr, (cst.Integer, cst.UnaryOperation)) and _literal_ints(expr):
            return _int_value(expr)
        if isinstance(expr, (cst.Tuple, cst.List, cst.Set)):
            values = [self._value(e.value, cap, depth + 1) for e in expr.elements]
            if any(v is None for v in values):
                return None
            return tuple(values) if isinstance(expr, cst.Tuple) else list(values)
        if isinstance(expr, cst.Call):
            if self._capability_call(expr):
                return cap
            if isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "to_int" and not expr.args:
                inner = self._value(expr.func.value, cap, depth + 1)
                return inner[0] * 10 + inner[1] if isinstance(inner, tuple) else None
            return None
        if isinstance(expr, cst.Subscript) and len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index):
            inner = self._value(expr.value, cap, depth + 1)
            index = _int_value(expr.slice[0].slice.value)
            return inner[index] if isinstance(inner, tuple) and index in (0, 1) else None
        if isinstance(expr, cst.Attribute) and expr.attr.value in ("major", "minor"):
            if self._properties(expr.value, depth + 1) or self._capability(expr.value, depth + 1):
                return cap[0] if expr.attr.value == "major" else cap[1]
            return None
        if isinstance(expr, cst.BinaryOperation):
            left, right = self._value(expr.left, cap, depth + 1), self._value(expr.right, cap, depth + 1)
            if isinstance(left, int) and isinstance(right, int):
                if isinstance(expr.operator, cst.Multiply):
                    return left * right
                if isinstance(expr.operator, cst.Add):
                    return left + right
            return None
        if isinstance(expr, cst.Name):
            return self._name_value(expr, cap, depth)
        return None

    def _name_value(self, name: cst.Name, cap, depth: int):
        """A name's value on ROCm: one assignment (or a tuple unpacking) of a capability, or a
        ROCm-decided conditional (``ver = parse(...) if torch.version.cuda else (0, 0)``)."""
        found = []
        assigned = self._assigned(name)
        if len(assigned) > 1 and any(self._capability(v) for v, _ in assigned):
            # `cap = parse(nvidia_smi())` beside `cap = torch.cuda.get_device_capability()`: on an AMD GPU,
            # where nvidia-smi fails, the capability
            assigned = [(v, i) for v, i in assigned if self._capability(v)]
        for value, index in assigned:
            if isinstance(value, cst.IfExp):
                test = gates.of(self.context).test(value.test)
                if test.known and not test.arch and ROCM not in test.true:
                    value = value.orelse  # on ROCm the condition is false
                elif test.known and not test.arch and ROCM not in test.false:
                    value = value.body
                else:
                    return None
            v = self._value(value, cap, depth + 1)
            if index is not None:
                v = v[index] if isinstance(v, tuple) and index < len(v) else None
            if v is None:
                return None
            found.append(v)
        return found[0] if found and all(v == found[0] for v in found) else None

    def _assigned(self, name: cst.Name):
        """(value, element index or None) of each assignment to ``name`` in its function
        (else at module level), as ``values`` reads them."""
        out = []
        for value in self.values(name):
            statement = self.parent(value)
            index = None
            if isinstance(statement, cst.Assign):
                for target in statement.targets:
                    t = target.target
                    if isinstance(t, (cst.Tuple, cst.List)):
                        for i, element in enumerate(t.elements):
                            if isinstance(element.value, cst.Name) and element.value.value == name.value:
                                index = i
            out.append((value, index))
        return out

    def _capability_call(self, call: cst.Call) -> bool:
        if self.is_name(call.func, CAPABILITY):
            return True
        return isinstance(call.func, cst.Attribute) and call.func.attr.value == "get_device_capability" and \
            _platform_object(call.func.value)

    # -- reading the operands -------------------------------------------------------------
    def _capability(self, node: cst.CSTNode, depth: int = 0) -> bool:
        if depth > 4:
            return False
        if isinstance(node, cst.Call):
            if self._capability_call(node):
                return True
            if isinstance(node.func, cst.Attribute) and node.func.attr.value == "to_int" and not node.args:
                return self._capability(node.func.value, depth + 1)
            return False
        if isinstance(node, cst.Subscript):
            return self._capability(node.value, depth + 1)
        if isinstance(node, cst.Attribute) and node.attr.value in ("major", "minor"):
            return self._properties(node.value, depth + 1) or self._capability(node.value, depth + 1)
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

    def _enables(self, node: cst.Comparison) -> bool:
        """Does the comparison say "at least / exactly this generation" (so that True turns
        the NVIDIA path on)? ``cap >= (9, 0)``, ``(9, 0) <= cap``, ``major == 9``, ``cap in
        [...]``; not ``cap < (10, 0)`` or ``!= (9, 0)``, which reject GPUs: gating those off
        ROCm would let AMD through."""
        if not isinstance(node, cst.Comparison) or len(node.comparisons) != 1:
            return False
        op = node.comparisons[0].operator
        if self._capability(node.left):
            return isinstance(op, (cst.GreaterThanEqual, cst.GreaterThan, cst.Equal, cst.In))
        return isinstance(op, (cst.LessThanEqual, cst.LessThan, cst.Equal))


# -- how a decision is used -------------------------------------------------------------------
ENABLE, REJECT, REJECT_SOFT, REQUIRE, OTHER = "enable", "reject", "reject-soft", "require", "other"
GFX942 = (9, 4)


@dataclass
class Use:
    """``kind``: ENABLE (true turns the decided code on), REJECT (true raises or skips),
    REJECT_SOFT (true returns False / None: the feature is off), REQUIRE (``assert``: false
    raises); ``site``: the
    statement or call that uses it; ``guarded``: the code it decides; ``raises``."""

    kind: str
    site: Optional[cst.CSTNode]
    guarded: List[cst.CSTNode]
    raises: bool


_OPS = {cst.Equal: lambda a, b: a == b, cst.NotEqual: lambda a, b: a != b, cst.LessThan: lambda a, b: a < b,
        cst.LessThanEqual: lambda a, b: a <= b, cst.GreaterThan: lambda a, b: a > b,
        cst.GreaterThanEqual: lambda a, b: a >= b, cst.In: lambda a, b: a in b, cst.NotIn: lambda a, b: a not in b}
# the NVIDIA generation just below the one with the feature in hardware (fp8 came with (8, 9), FP4 with (10, 0))
_BELOW_HARDWARE = {"fp8": (8, 6), "mx": (9, 0), "bf16": (7, 5)}
# The AMD GPUs the rule judges on: Instinct (gfx9, MI200 / MI300 / MI350), which report (9, x).
# Radeon GPUs report (11, 0) and (12, 0), above every Hopper threshold and beside no NVIDIA
# feature these checks guard; the docs say so rather than every finding.
INSTINCT = tuple(cap for cap in rocm_facts.amd_capabilities() if cap[0] == 9)
_GENERATION = re.compile(r"(?i)^(?:sm_?\d+a?|hopper|blackwell|ampere)$")


def _nvidia_words(name: str) -> Set[str]:
    """What a name says of NVIDIA-only code: ``feature`` (``use_fa3``, ``flash_attn_interface``,
    ``tma_ok``, ``marlin``) or ``generation`` (``is_sm90``, ``pre_sm90``, ``hopper``), which may
    only state a threshold."""
    out: Set[str] = set()
    for word in name_words(name):
        found = nvidia_feature_word(word)
        if found:
            out.add("generation" if _GENERATION.match(found) else "feature")
    match = NVIDIA_ONLY.search(name)
    if match:
        text = match.group().strip("_").lower()
        out.add("generation" if _GENERATION.match(text) else "feature")
    return out
_MX = re.compile(r"(?i)(?:^|[^a-z])(?:mx|mxfp\d|fp4|e2m1|e8m0|float4)")
_FP8 = re.compile(r"(?i)fp8|float8|e4m3|e5m2|f8e4|f8e5|w8a8")
_BF16 = re.compile(r"(?i)bf16|bfloat16|tf32|fp16|float16|half")
_AMD_NAMED = re.compile(r"(?i)\b(?:mi[23]\d\d\w*|amd|rocm|hip|gfx\d+|instinct)\b")


def _amd_support():
    archs = [a for a in rocm_facts.ARCHS if a.capability is not None]
    return {
        "fp8": frozenset(a.capability for a in archs if a.fp8_dtype),
        "mx": frozenset(a.capability for a in archs if a.mx),
        "bf16": frozenset(a.capability for a in archs),
    }


_AMD_SUPPORT = _amd_support()


def _feature_words(features) -> str:
    return " / ".join({"fp8": "fp8", "mx": "FP4 / MX formats", "bf16": "bf16"}[f] for f in sorted(features))


def _gpus(caps) -> str:
    names = [f"{a.products.split(' (')[0]} {a.capability}" for a in rocm_facts.ARCHS if a.capability in caps]
    return ", ".join(dict.fromkeys(names))


def _names_amd(text: str) -> bool:
    return bool(_AMD_NAMED.search(text))


def _platform_object(node: cst.CSTNode) -> bool:
    """A platform object whose capability queries wrap torch's: ``current_platform``,
    ``platform``, ``self.platform``, ``current_platform()``."""
    if isinstance(node, cst.Call):
        node = node.func
    name = dotted_name(node) or ""
    return "platform" in name.rsplit(".", 1)[-1].lower()


def _int_value(node: cst.CSTNode) -> Optional[int]:
    if isinstance(node, cst.Integer):
        return int(node.value.replace("_", ""), 0)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus) and \
            isinstance(node.expression, cst.Integer):
        return -int(node.expression.value.replace("_", ""), 0)
    return None


def _top(rule, node: cst.CSTNode) -> cst.CSTNode:
    """The whole condition a comparison is part of: up through ``and`` / ``or`` / ``not`` and
    parentheses."""
    top = node
    parent = rule.parent(top)
    while isinstance(parent, (cst.BooleanOperation, cst.UnaryOperation)) and not (
            isinstance(parent, cst.UnaryOperation) and not isinstance(parent.operator, cst.Not)):
        top, parent = parent, rule.parent(parent)
    return top


def _and_siblings(rule, node: cst.CSTNode) -> List[cst.CSTNode]:
    """The other operands of the ``and`` chains around the comparison."""
    out, top = [], node
    parent = rule.parent(top)
    while isinstance(parent, cst.BooleanOperation):
        if isinstance(parent.operator, cst.And):
            out.append(parent.right if parent.left is top else parent.left)
        top, parent = parent, rule.parent(parent)
    return out


def _exact_generation(rule, top: cst.CSTNode) -> bool:
    """``major == 9``, ``cap != (9, 0)``, ``cap in [(9, 0)]``: one NVIDIA generation (of Hopper
    or later), named exactly."""
    for n in walk(top):
        if isinstance(n, cst.Comparison) and len(n.comparisons) == 1 and isinstance(
                n.comparisons[0].operator, (cst.Equal, cst.NotEqual, cst.In, cst.NotIn)) and \
                _names_a_generation(n, rule._capability):
            return True
    return False


_MESSAGE_CALLS = frozenset({"skip", "skipTest", "skipIf", "skipif", "skipUnless", "xfail", "warn", "warning",
                            "warning_once", "info", "debug", "error", "exception", "log", "print", "log_and_exit",
                            "exit", "fail"})


def _messages(piece: cst.CSTNode, use) -> List[cst.CSTNode]:
    """The strings of ``piece`` that are messages: raised, logged, printed, or a skip's reason."""
    out: List[cst.CSTNode] = []
    if isinstance(piece, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
        return [n for n in walk(piece)] if use.raises else []  # a skip decorator's reason
    for n in walk(piece):
        if isinstance(n, cst.Raise):
            out.extend(walk(n))
        elif isinstance(n, cst.Call) and (dotted_name(n.func) or "").rsplit(".", 1)[-1] in _MESSAGE_CALLS:
            out.extend(walk(n))
    return out


def _skips(block: cst.CSTNode) -> bool:
    """A block that skips a test (``pytest.skip(...)``, ``self.skipTest(...)``)."""
    for n in walk(block):
        if isinstance(n, cst.Call):
            name = (dotted_name(n.func) or "").rsplit(".", 1)[-1]
            if name in ("skip", "skipTest", "xfail", "exit"):
                return True
    return False


def _only_returns_false(block: cst.CSTNode) -> bool:
    """A block that only leaves with False / None: the feature is off."""
    body = getattr(block, "body", ())
    statements = [s for s in body if not (isinstance(s, cst.SimpleStatementLine) and all(
        isinstance(x, cst.Expr) and (isinstance(x.value, (cst.SimpleString, cst.ConcatenatedString)) or (
            isinstance(x.value, cst.Call) and (dotted_name(x.value.func) or "").rsplit(".", 1)[-1] in _MESSAGE_CALLS))
        for x in s.body))]  # a docstring, a log line
    if len(statements) != 1:
        return False
    smalls = statements[0].body if isinstance(statements[0], cst.SimpleStatementLine) else [statements[0]]
    if isinstance(block, cst.SimpleStatementSuite):
        smalls = block.body
    last = smalls[-1] if smalls else None
    return isinstance(last, cst.Return) and (last.value is None or (
        isinstance(last.value, cst.Name) and last.value.value in ("False", "None")))


def _rest_of_block(rule, statement: cst.CSTNode) -> List[cst.CSTNode]:
    """The statements after ``statement`` in its block, and the function's name: what an early
    ``return False`` decides."""
    block = rule.parent(statement)
    body = list(getattr(block, "body", ()))
    out = body[body.index(statement) + 1:] if statement in body else []
    function = next((a for a in rule.ancestors(statement) if isinstance(a, cst.FunctionDef)), None)
    return out + ([function.name] if function is not None else [])
