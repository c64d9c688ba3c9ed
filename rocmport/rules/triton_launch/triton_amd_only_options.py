"""ROC511 triton-amd-only-options: waves_per_eu / matrix_instr_nonkdim / kpack passed on every platform: KeyError on NVIDIA.

The rule's documentation is its class's (`rocmport rule ROC511` prints it).
"""

from __future__ import annotations

import re

import libcst as cst

from rocmport.analysis import gates
from rocmport.analysis.needs import Call, DictKey, Keyword
from rocmport.analysis.platforms import CUDA
from rocmport.analysis.syntax import literal_string
from rocmport.analysis.triton import (
    AMD_ONLY_OPTIONS,
    CONFIG_NAMES,
    TritonAnalysis,
)
from rocmport.findings import Applicability, Fix
from rocmport.rules.base import Case, SpanError

from .common import TritonRule, in_rocm_named_assignment

_AMD_PATH = re.compile(r"(?i)(?:^|[/_.-])(?:rocm|hip|amd|aiter)(?:[/_.-]|$)")


_ROCM_IMPORTER = """\
import torch

if torch.version.hip:
    from .flash_triton import CONFIGS
else:
    CONFIGS = []
"""


class TritonAmdOnlyOptions(TritonRule):
    CODE = "ROC511"
    NAME = "triton-amd-only-options"
    SUMMARY = "waves_per_eu / matrix_instr_nonkdim / kpack passed on every platform: KeyError on NVIDIA."
    NEEDS = DictKey(*AMD_ONLY_OPTIONS) & Call(*CONFIG_NAMES) | Keyword(*AMD_ONLY_OPTIONS, subscripted=True)
    WHAT = """
        The AMD-only Triton options `waves_per_eu`, `matrix_instr_nonkdim` and `kpack` as keys
        of a `triton.Config({...})` dict or as keywords of a kernel launch
        (`kernel[grid](..., waves_per_eu=2)`), outside a ROCm branch, outside config lists
        whose name says they are for ROCm (`HIP_CONFIGS = [...]`), outside files whose path
        says they are for AMD only (`ops/rocm/gemm.py`, `hip_kernels.py`, AMD's `aiter`) and
        outside modules the project imports only on ROCm (each import of it under a ROCm test,
        as `if SYSTEM == "rocm": from .rocm import ...` and the modules only that one imports).
        """
    WHY = """
        Only Triton's AMD backend knows these options (`HIPOptions` in
        `triton/backends/amd/compiler.py`). Code tuned on MI200/MI300 often passes them
        unconditionally, and on NVIDIA Triton 3.9 raises KeyError for them (pytorch#185599,
        triton-lang/triton#7518): the AMD tuning breaks the NVIDIA path of the same code. Seen
        on an H100 with Triton 3.6: `KeyError: 'Keyword argument waves_per_eu was specified but
        unrecognised'`, for a config dict entry and for a launch keyword alike; the fixed
        forms ran and gave the right results.
        """
    EXAMPLE = """
        import triton
        cfg = triton.Config({"BLOCK_M": 128, "waves_per_eu": 2}, num_warps=8)
        """
    FIXED_EXAMPLE = """
        import triton
        cfg = triton.Config({"BLOCK_M": 128, **({"waves_per_eu": 2} if is_rocm else {})}, num_warps=8)
        """
    FIX = """
        Safe: each option becomes a dict spread that holds it on ROCm and nothing on NVIDIA
        (`**({"waves_per_eu": 2} if is_rocm else {})`), in the config dict or in the launch's
        keywords. On ROCm the kernel gets exactly the original options; on NVIDIA it gets
        none of them, as if they had never been written. No fix for a launch where a
        positional `*args` follows the option (a `**` spread cannot precede it).
        """
    FIX_APPLICABILITY = Applicability.SAFE
    VALID = (
        Case("""
            import triton
            cfg = triton.Config({"BLOCK": 64, **({"waves_per_eu": 2} if is_rocm else {})})
            """),
        # a module the project imports only on ROCm: NVIDIA never compiles its configs
        Case("""
            import triton
            CONFIGS = [triton.Config({"BLOCK": 64, "waves_per_eu": 2})]
            """, path="pkg/attention/flash_triton.py",
             files=(("pkg/__init__.py", ""), ("pkg/attention/__init__.py", _ROCM_IMPORTER))),
        Case("""
            import triton
            import torch
            if torch.version.hip:
                cfg = triton.Config({"BLOCK": 64, "kpack": 2})
            """),
        Case("""
            import triton
            HIP_CONFIGS = [triton.Config({"BLOCK": 64, "waves_per_eu": 2})]
            """),
        Case("""
            import triton
            def get_hip_autotune_config():
                return [triton.Config({"BLOCK": 64, "kpack": 2})]
            """),
        Case("""
            import triton
            # triton.Config({"waves_per_eu": 2})
            opts = {"waves_per_eu": 2}
            """),
        Case("""
            import triton
            def f(x):
                return launch(x, waves_per_eu=2)
            """),
    )
    INVALID = (
        # near miss: an importer whose test lets NVIDIA through too
        Case("""
            import triton
            CONFIGS = [triton.Config({"BLOCK": 64, "waves_per_eu": 2})]
            """, path="pkg/attention/flash_triton.py",
             files=(("pkg/__init__.py", ""),
                    ("pkg/attention/__init__.py", _ROCM_IMPORTER.replace("torch.version.hip", "torch.cuda.is_available()"))),
             codes=("ROC511",), line=2, column=40,
             message="waves_per_eu in a triton.Config is an AMD-only Triton option: Triton raises KeyError for it on"
                     " NVIDIA; pass it on ROCm only"),
        Case(
            """
            import triton
            cfg = triton.Config({"BLOCK_M": 128, "waves_per_eu": 2}, num_warps=8)
            """,
            expected="""
            import torch
            import triton

            is_rocm = getattr(torch.version, "hip", None) is not None

            cfg = triton.Config({"BLOCK_M": 128, **({"waves_per_eu": 2} if is_rocm else {})}, num_warps=8)
            """,
            line=2,
            column=38,
            message=(
                "waves_per_eu in a triton.Config is an AMD-only Triton option: Triton raises KeyError for it on "
                "NVIDIA; pass it on ROCm only"
            ),
        ),
        Case(
            """
            import triton
            import triton.language as tl

            @triton.jit
            def scale(x_ptr, n, BLOCK: tl.constexpr):
                offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
                tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)

            def f(x, n):
                scale[(1,)](x, n, BLOCK=64, matrix_instr_nonkdim=16, num_warps=4)
            """,
            expected="""
            import torch
            import triton
            import triton.language as tl

            {PRELUDE}

            @triton.jit
            def scale(x_ptr, n, BLOCK: tl.constexpr):
                offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
                tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)

            def f(x, n):
                scale[(1,)](x, n, BLOCK=64, **({"matrix_instr_nonkdim": 16} if is_rocm else {}), num_warps=4)
            """,
            line=10,
            column=33,
            message=(
                "matrix_instr_nonkdim in a kernel launch is an AMD-only Triton option: Triton raises KeyError for it "
                "on NVIDIA; pass it on ROCm only"
            ),
        ),
    )

    def check(self, a: TritonAnalysis) -> None:
        if _AMD_PATH.search(self.context.path.replace("\\", "/")):
            return  # code for AMD GPUs only (a `rocm/` or `hip_` module, AMD's aiter): NVIDIA never runs it
        gate = self.context.gate_name
        for config in a.configs:
            d = a.config_dict(config)
            if d is None or self.skipped(a, config) or in_rocm_named_assignment(self, config):
                continue
            for element in d.elements:
                if not isinstance(element, cst.DictElement):
                    continue
                option = literal_string(element.key)
                if option not in AMD_ONLY_OPTIONS or self.skipped(a, element):
                    continue
                text = f"**({{{self.context.source(element.key)}: {self.context.source(element.value)}}} if {gate} else {{}})"
                self._report(element.key, option, "a triton.Config", self._edit(element.key, element.value, text),
                             element.value)
        for call in a.subscript_calls:
            if self.skipped(a, call):
                continue
            for index, arg in enumerate(call.args):
                if arg.keyword is None or arg.keyword.value not in AMD_ONLY_OPTIONS:
                    continue
                later_positional = any(x.keyword is None and x.star != "**" for x in call.args[index + 1:])
                text = f"**({{\"{arg.keyword.value}\": {self.context.source(arg.value)}}} if {gate} else {{}})"
                edit = None if later_positional else self._edit(arg.keyword, arg.value, text)
                self._report(arg.keyword, arg.keyword.value, "a kernel launch", edit, arg.value)

    def _edit(self, first: cst.CSTNode, last: cst.CSTNode, text: str):
        try:
            return self.context.edit(self.context.span(first)[0], self.context.span(last)[1], text)
        except SpanError:  # a source rocmport cannot place an edit in: the finding stays, without a fix
            return None

    def _report(self, node: cst.CSTNode, option: str, where: str, edit, end_node=None) -> None:
        if CUDA not in gates.of(self.context).imported_on():
            return  # the project imports the module only on ROCm (`if SYSTEM == "rocm": from .rocm import ...`)
        fix = Fix(Applicability.SAFE, f"Pass {option} on ROCm only", (edit,), ("gate",)) if edit is not None else \
            Fix(Applicability.DISPLAY_ONLY, f"Pass {option} on ROCm only")
        self.report(node, f"{option} in {where} is an AMD-only Triton option: Triton raises KeyError for it on NVIDIA;"
                          " pass it on ROCm only", fix=fix, end_node=end_node)
