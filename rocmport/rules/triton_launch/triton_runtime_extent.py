"""ROC513 triton-runtime-extent: a run-time value used as a `tl.arange` extent or a tile dimension.

The rule's documentation is its class's (`rocmport rule ROC513` prints it).
"""

from __future__ import annotations

import ast
import re
from typing import Dict, List, Optional, Set, Tuple

import libcst as cst

from rocmport.analysis import resolve
from rocmport.analysis.needs import Attribute, Call, Decorator
from rocmport.analysis.triton import KERNEL_DECORATORS, TL, Kernel, TritonAnalysis
from rocmport.analysis.triton_values import (
    POW2,
    RUNTIME,
    LaunchFact,
    ModuleValues,
    KV_CACHE_NAME,
    Value,
    literal_value,
    pow2_shaped,
)
from rocmport.findings import Applicability, Fix
from rocmport.rules.base import Case

from .common import TritonRule, nvidia_only_file

_HEURISTICS = frozenset({"triton.heuristics", "triton.runtime.heuristics", "triton.runtime.autotuner.heuristics"})
_AUTOTUNE = frozenset({"triton.autotune", "triton.runtime.autotune", "triton.runtime.autotuner.autotune"})
_STATIC_ASSERT = frozenset({"static_assert"})
# Sizes the system picks, not the model: tiles, blocks, quantization groups, pages, splits.
SYSTEM_SIZE = re.compile(r"(?i)block|blk|page|chunk|tile|group_?size|groupsize|group_?b[kmnd]|quant|scale|cta|warp|"
                         r"stage|split|pad|align|bucket")

_HEAD = "import torch\nimport triton\nimport triton.language as tl\n\n"
_ROUTER = _HEAD + (
    "@triton.jit\n"
    "def topk_mask(idx_ptr, out_ptr, N_EXP: tl.constexpr):\n"
    "    row = tl.program_id(0)\n"
    "    offs = tl.arange(0, N_EXP)\n"
    "    tl.store(out_ptr + row * N_EXP + offs, tl.load(idx_ptr + row * N_EXP + offs))\n\n"
)


class TritonRuntimeExtent(TritonRule):
    CODE = "ROC513"
    NAME = "triton-runtime-extent"
    SUMMARY = "A run-time value (a shape, a parameter, a config value) used as a `tl.arange` extent."
    NEEDS = Decorator(*KERNEL_DECORATORS) & (
        Call(*(TL + n for n in ("arange", "zeros", "full", "reshape", "broadcast_to", "view", "make_block_ptr",
                                "make_tensor_descriptor")))
        | Attribute("reshape", "broadcast_to", "view"))
    WHAT = """
        A kernel's `tl.constexpr` used as the extent of `tl.arange(0, P)` (or as a dimension of
        a tile shape: `tl.zeros((P,))`, `tl.full`, `reshape`, `broadcast_to`, `block_shape=`)
        whose value, at some launch, is decided at run time: a tensor's shape
        (`x.shape[1]`, `a, b = x.shape`), a parameter of the launching function (its callers
        in the module are followed; a tuning knob -- a tile-like name, a power-of-two
        default -- is not a finding), an attribute of a run-time object (`config.num_experts`,
        `ctx.topk` as the class assigns it), arithmetic on those (`heads // kv_heads`), a value
        of a config dict built in the function or returned by a helper of the project, or a
        `triton.heuristics` value taken straight from a launch argument. Launches are
        followed by keyword and by position, through `wrap_triton(kernel)[grid]`, a bound
        `run = kernel[grid]`, `**config` dicts, and into the project's other modules (the
        kernel's name, imported or re-exported). A constexpr listed in the kernel's autotune
        `key` with no visible launch is a run-time value too (Triton re-tunes for each value
        it takes). Reported once per kernel parameter, at its first `tl.arange`.

        Not findings: a value rounded with `triton.next_power_of_2` (also inside `max`/`min`
        with powers of two, or shifted: `1 << k`), a literal, a value from autotune
        `triton.Config` dicts, a name that the launching function checks for a power of two
        (`assert n & (n - 1) == 0`, `assert is_power_of_2(n)`, `if n not in (16, 32, 64):
        raise`) -- or, in a launcher that only the `backward` of a `torch.autograd.Function`
        calls, a dimension of a tensor (`B, D, T = K.size()`) that a launcher its `forward`
        hands the same tensor checks so -- or the kernel checks with `tl.static_assert`,
        `tl.static_range(0, P)` and `range` bounds (any integer works there), and kernels in
        ROCm-only or other accelerators' code.
        """
    WHY = """
        `tl.arange` and every tile dimension must be a power of two on every backend: Triton
        raises `arange's range must be a power of 2` when it compiles the kernel for the value
        it is given (rocmport checked Triton 3.9 for gfx942 and sm_90 alike). A launch that
        passes a model-dependent size compiles for the models whose size happens to be a power
        of two and fails for the others. The ROCm angle: hybrid and multimodal models produce
        KV-cache block sizes such as 48, 544 or 1056 on attention paths that only ROCm takes,
        so a run-time block size that reaches a `tl.arange` extent needs
        `triton.next_power_of_2` (and a mask) before the port works.

        Other model sizes break the same kernels on every platform, and upstream fixed them by
        rounding the extent and masking: lmdeploy (InternLM/lmdeploy#4676, `KV_RATIO` = 3 on
        Qwen3.5-27B), Megatron-LM (NVIDIA/Megatron-LM@bc70535, router top-k and experts per
        rank), FBGEMM (pytorch/FBGEMM#4627 and #4634, 80 experts), FlagGems
        (FlagOpen/FlagGems#951, head sizes 96 and 192), Primus-Turbo (AMD-AGI/Primus-Turbo#62,
        "support arbitrary experts"). Triton's maintainers on the rule:
        triton-lang/triton#3722 ("Triton only supports power-of-two tensors").
        """
    EXAMPLE = _ROUTER + (
        "def route(idx, num_experts):\n"
        "    out = torch.empty_like(idx)\n"
        "    topk_mask[(idx.shape[0],)](idx, out, N_EXP=num_experts)\n"
        "    return out\n")
    FIX = """
        Display-only. Launch a second constexpr `BLOCK = triton.next_power_of_2(n)` (maybe
        `max(..., 16)`), use it as the extent (`tl.arange(0, BLOCK)`), and mask every load,
        store and reduction it indexes with `offs < n` (reductions need a neutral `other=`).
        The value keeps its other uses (strides, grid). rocmport does not apply it: the kernel
        gains a parameter and every access the block indexes needs a mask whose neutral value
        depends on what the kernel computes, which it cannot prove for both paths.
        """
    FIX_APPLICABILITY = Applicability.DISPLAY_ONLY
    VALID = (
        # rounded at the launch
        Case("""
            import torch
            import triton
            import triton.language as tl

            @triton.jit
            def topk_mask(idx_ptr, out_ptr, N_EXP: tl.constexpr):
                row = tl.program_id(0)
                offs = tl.arange(0, N_EXP)
                tl.store(out_ptr + row * N_EXP + offs, tl.load(idx_ptr + row * N_EXP + offs))

            def route(idx, n):
                topk_mask[(1,)](idx, idx, N_EXP=triton.next_power_of_2(n))
            """),
        Case("""
            import torch
            import triton
            import triton.language as tl

            @triton.jit
            def topk_mask(idx_ptr, out_ptr, N_EXP: tl.constexpr):
                row = tl.program_id(0)
                offs = tl.arange(0, N_EXP)
                tl.store(out_ptr + row * N_EXP + offs, tl.load(idx_ptr + row * N_EXP + offs))

            def route(idx, n):
                block = max(triton.next_power_of_2(n), 16)
                topk_mask[(1,)](idx, idx, block)
            """),
        # a literal, a tuning knob
        Case("""
            import torch
            import triton
            import triton.language as tl

            @triton.jit
            def topk_mask(idx_ptr, out_ptr, N_EXP: tl.constexpr):
                row = tl.program_id(0)
                offs = tl.arange(0, N_EXP)
                tl.store(out_ptr + row * N_EXP + offs, tl.load(idx_ptr + row * N_EXP + offs))

            def route(idx):
                topk_mask[(1,)](idx, idx, N_EXP=64)
            """),
        Case("""
            import torch
            import triton
            import triton.language as tl

            @triton.jit
            def topk_mask(idx_ptr, out_ptr, N_EXP: tl.constexpr):
                row = tl.program_id(0)
                offs = tl.arange(0, N_EXP)
                tl.store(out_ptr + row * N_EXP + offs, tl.load(idx_ptr + row * N_EXP + offs))

            def route(idx, BLOCK_SIZE=128):
                topk_mask[(1,)](idx, idx, N_EXP=BLOCK_SIZE)
            """),
        # checked for a power of two
        Case("""
            import torch
            import triton
            import triton.language as tl

            @triton.jit
            def topk_mask(idx_ptr, out_ptr, N_EXP: tl.constexpr):
                row = tl.program_id(0)
                offs = tl.arange(0, N_EXP)
                tl.store(out_ptr + row * N_EXP + offs, tl.load(idx_ptr + row * N_EXP + offs))

            def route(idx, n):
                assert n & (n - 1) == 0, 'experts'
                topk_mask[(1,)](idx, idx, N_EXP=n)
            """),
        Case("""
            import torch
            import triton
            import triton.language as tl

            @triton.jit
            def topk_mask(idx_ptr, out_ptr, N_EXP: tl.constexpr):
                row = tl.program_id(0)
                offs = tl.arange(0, N_EXP)
                tl.store(out_ptr + row * N_EXP + offs, tl.load(idx_ptr + row * N_EXP + offs))

            def route(idx, n):
                if n not in (8, 16, 32):
                    raise ValueError(n)
                topk_mask[(1,)](idx, idx, N_EXP=n)
            """),
        # the callers pass powers of two
        Case("""
            import torch
            import triton
            import triton.language as tl

            @triton.jit
            def topk_mask(idx_ptr, out_ptr, N_EXP: tl.constexpr):
                row = tl.program_id(0)
                offs = tl.arange(0, N_EXP)
                tl.store(out_ptr + row * N_EXP + offs, tl.load(idx_ptr + row * N_EXP + offs))

            def _launch(idx, n):
                topk_mask[(1,)](idx, idx, N_EXP=n)

            def route(idx):
                _launch(idx, 32)
            """),
        # static_range takes any bound
        Case("""
            import torch
            import triton
            import triton.language as tl

            @triton.jit
            def rep(x_ptr, R: tl.constexpr, BLOCK: tl.constexpr):
                offs = tl.arange(0, BLOCK)
                for r in tl.static_range(0, R):
                    tl.store(x_ptr + r * BLOCK + offs, r)

            def go(x, ratio):
                rep[(1,)](x, ratio, BLOCK=64)
            """),
        # a run-time value used only as a mask bound, not as an extent
        Case("""
            import torch
            import triton
            import triton.language as tl

            @triton.jit
            def k(x_ptr, D, BLOCK_D: tl.constexpr):
                offs = tl.arange(0, BLOCK_D)
                tl.store(x_ptr + offs, 0, mask=offs < D)

            def go(x):
                k[(1,)](x, x.shape[1], BLOCK_D=triton.next_power_of_2(x.shape[1]))
            """),
        # autotune configs decide it
        Case("""
            import torch
            import triton
            import triton.language as tl

            @triton.autotune(configs=[triton.Config({'BLOCK_D': 256}), triton.Config({'BLOCK_D': 512})], key=['D'])
            @triton.jit
            def k(x_ptr, D, BLOCK_D: tl.constexpr):
                offs = tl.arange(0, BLOCK_D)
                tl.store(x_ptr + offs, 0, mask=offs < D)

            def go(x):
                k[(1,)](x, x.shape[1])
            """),
        # a heuristic that rounds
        Case("""
            import torch
            import triton
            import triton.language as tl

            @triton.heuristics({'BLOCK_D': lambda args: triton.next_power_of_2(args['D'])})
            @triton.jit
            def k(x_ptr, D, BLOCK_D: tl.constexpr):
                offs = tl.arange(0, BLOCK_D)
                tl.store(x_ptr + offs, 0, mask=offs < D)

            def go(x):
                k[(1,)](x, x.shape[1])
            """),
        # the kernel checks it
        Case("""
            import torch
            import triton
            import triton.language as tl

            @triton.jit
            def k(x_ptr, N: tl.constexpr):
                tl.static_assert(N & (N - 1) == 0)
                tl.store(x_ptr + tl.arange(0, N), 0)

            def go(x):
                k[(1,)](x, x.shape[0])
            """),
        # torch.arange in the launcher is no Triton extent
        Case("""
            import torch
            import triton
            import triton.language as tl

            @triton.jit
            def topk_mask(idx_ptr, out_ptr, N_EXP: tl.constexpr):
                row = tl.program_id(0)
                offs = tl.arange(0, N_EXP)
                tl.store(out_ptr + row * N_EXP + offs, tl.load(idx_ptr + row * N_EXP + offs))

            def route(idx, n):
                rows = torch.arange(0, n)
                topk_mask[(1,)](idx, rows, N_EXP=32)
            """),
        # the hazard in a string, and in a ROCm-only kernel
        Case("""
            import torch
            import triton
            import triton.language as tl

            DOC = 'topk_mask[(1,)](idx, idx, N_EXP=idx.shape[1])'
            """),
        Case("""
            import torch
            import triton
            import triton.language as tl

            if torch.version.hip:
                @triton.jit
                def k(x_ptr, N: tl.constexpr):
                    tl.store(x_ptr + tl.arange(0, N), 0)

                def go(x):
                    k[(1,)](x, x.shape[0])
            """),
        # the backward of an autograd Function: its forward checks the same dimension of the
        # same tensor (FBGEMM's jagged_dense_flash_attention_fwd / _bwd)
        Case("""
            import torch
            import triton
            import triton.language as tl

            @triton.jit
            def rows_kernel(x_ptr, D: tl.constexpr):
                offs = tl.arange(0, D)
                tl.store(x_ptr + offs, tl.load(x_ptr + offs) * 2)

            def scale_fwd(x, w):
                n, d = w.shape
                assert d & (d - 1) == 0, "d must be a power of two"
                rows_kernel[(n,)](x, D=d)
                return x

            def scale_bwd(grad, w):
                n, d = w.shape
                rows_kernel[(n,)](grad, D=d)
                return grad

            class Scale(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x, w):
                    ctx.save_for_backward(w)
                    return scale_fwd(x, w)

                @staticmethod
                def backward(ctx, grad):
                    (w,) = ctx.saved_tensors
                    return scale_bwd(grad, w), None
            """),
    )
    INVALID = (
        Case(
            """
            import torch
            import triton
            import triton.language as tl

            @triton.jit
            def topk_mask(idx_ptr, out_ptr, N_EXP: tl.constexpr):
                row = tl.program_id(0)
                offs = tl.arange(0, N_EXP)
                tl.store(out_ptr + row * N_EXP + offs, tl.load(idx_ptr + row * N_EXP + offs))

            def route(idx, num_experts):
                topk_mask[(1,)](idx, idx, N_EXP=num_experts)
            """,
            line=8,
            column=12,
            message=(
                "`tl.arange(0, N_EXP)` needs a power-of-two extent, and `N_EXP` is decided at run time: launched "
                "with `num_experts` at line 12, a parameter of `route`. A value such as 3, 48 or 96 fails to compile "
                "(on ROCm as on every backend); launch `triton.next_power_of_2(num_experts)` as the extent and mask "
                "the lanes past `N_EXP`"
            ),
        ),
        Case(
            """
            import torch
            import triton
            import triton.language as tl

            @triton.jit
            def topk_mask(idx_ptr, out_ptr, N_EXP: tl.constexpr):
                row = tl.program_id(0)
                offs = tl.arange(0, N_EXP)
                tl.store(out_ptr + row * N_EXP + offs, tl.load(idx_ptr + row * N_EXP + offs))

            def route(idx):
                e = idx.shape[1]
                topk_mask[(1,)](idx, idx, e)
            """,
            line=8,
            column=12,
            message=(
                "`tl.arange(0, N_EXP)` needs a power-of-two extent, and `N_EXP` is decided at run time: launched "
                "with `e` at line 13, a tensor's shape (`idx.shape[1]`). A value such as 3, 48 or 96 fails to "
                "compile (on ROCm as on every backend); launch `triton.next_power_of_2(e)` as the extent and mask "
                "the lanes past `N_EXP`"
            ),
        ),
        Case(
            """
            import torch
            import triton
            import triton.language as tl

            @triton.jit
            def topk_mask(idx_ptr, out_ptr, N_EXP: tl.constexpr):
                row = tl.program_id(0)
                offs = tl.arange(0, N_EXP)
                tl.store(out_ptr + row * N_EXP + offs, tl.load(idx_ptr + row * N_EXP + offs))

            def route(idx, heads, kv_heads):
                topk_mask[(1,)](idx, idx, heads // kv_heads)
            """,
            line=8,
            column=12,
            message=(
                "`tl.arange(0, N_EXP)` needs a power-of-two extent, and `N_EXP` is decided at run time: launched "
                "with `heads // kv_heads` at line 12, a parameter of `route`. A value such as 3, 48 or 96 fails to "
                "compile (on ROCm as on every backend); launch `triton.next_power_of_2(heads // kv_heads)` as the "
                "extent and mask the lanes past `N_EXP`"
            ),
        ),
        Case(
            """
            import torch
            import triton
            import triton.language as tl

            @triton.jit
            def topk_mask(idx_ptr, out_ptr, N_EXP: tl.constexpr):
                row = tl.program_id(0)
                offs = tl.arange(0, N_EXP)
                tl.store(out_ptr + row * N_EXP + offs, tl.load(idx_ptr + row * N_EXP + offs))

            def route(idx, cfg):
                meta = {'N_EXP': cfg.num_experts}
                topk_mask[(1,)](idx, idx, **meta)
            """,
            line=8,
            column=12,
            message=(
                "`tl.arange(0, N_EXP)` needs a power-of-two extent, and `N_EXP` is decided at run time: launched "
                "with `cfg.num_experts` at line 13, an attribute of a run-time object (`cfg.num_experts`). A value "
                "such as 3, 48 or 96 fails to compile (on ROCm as on every backend); launch "
                "`triton.next_power_of_2(cfg.num_experts)` as the extent and mask the lanes past `N_EXP`"
            ),
        ),
        Case(
            """
            import torch
            import triton
            import triton.language as tl

            @triton.jit
            def k(x_ptr, e: tl.constexpr, g: tl.constexpr):
                ones = tl.full((e,), 1, tl.int32)
                idx = tl.arange(0, e).reshape(g, e // g)
                tl.store(x_ptr + idx, ones.reshape(g, e // g))

            def go(x, groups):
                k[(1,)](x, x.shape[1], 4)
            """,
            line=8,
            column=11,
            message=(
                "`tl.arange(0, e)` needs a power-of-two extent, and `e` is decided at run time: launched with "
                "`x.shape[1]` at line 12, a tensor's shape (`x.shape[1]`). A value such as 3, 48 or 96 fails to "
                "compile (on ROCm as on every backend); launch `triton.next_power_of_2(x.shape[1])` as the extent "
                "and mask the lanes past `e`"
            ),
        ),
        # the forward checks another tensor (the transposed weight): the backward's value is not checked
        Case(
            """
            import torch
            import triton
            import triton.language as tl

            @triton.jit
            def rows_kernel(x_ptr, D: tl.constexpr):
                offs = tl.arange(0, D)
                tl.store(x_ptr + offs, tl.load(x_ptr + offs) * 2)

            def scale_fwd(x, w):
                n, d = w.shape
                assert d & (d - 1) == 0, "d must be a power of two"
                rows_kernel[(n,)](x, D=d)
                return x

            def scale_bwd(grad, w):
                n, d = w.shape
                rows_kernel[(n,)](grad, D=d)
                return grad

            class Scale(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x, w):
                    ctx.save_for_backward(w)
                    return scale_fwd(x, w.t())

                @staticmethod
                def backward(ctx, grad):
                    (w,) = ctx.saved_tensors
                    return scale_bwd(grad, w), None
            """,
            line=7,
            column=12,
            message=(
                "`tl.arange(0, D)` needs a power-of-two extent, and `D` is decided at run time: launched with `d` at "
                "line 18, a tensor's shape (`w.shape`). A value such as 3, 48 or 96 fails to compile (on ROCm as on "
                "every backend); launch `triton.next_power_of_2(d)` as the extent and mask the lanes past `D`"
            ),
        ),
    )

    # -- the kernels ----------------------------------------------------------------------
    def check(self, a: TritonAnalysis) -> None:
        facts = self.context.facts
        if facts is None or facts.tree is None or nvidia_only_file(self.context):
            return
        values: Optional[ModuleValues] = None
        for kernel in list(a.kernels.values()):
            uses = a.extent_uses(kernel)
            if not uses or self.skipped(a, kernel.func):
                continue
            if values is None:
                values = self._values(facts.tree)
            self._kernel(a, kernel, uses, values)

    def _values(self, tree: ast.AST) -> ModuleValues:
        index = resolve.project_index(self)
        module = resolve.module_name(self)
        return ModuleValues(tree, module, lambda m, level: index.absolute(module, m, level), index.values_project())

    def _kernel(self, a: TritonAnalysis, kernel: Kernel, uses: Dict[str, List[Tuple[cst.Call, str]]],
                values: ModuleValues) -> None:
        definition = values.functions.get(kernel.name)
        if definition is None or definition.lineno != self.context.position(kernel.func.name).start.line:
            definition = None  # a nested kernel, or another function of the same name
        heuristics, key, checked = self._decorations(definition, values) if definition is not None else ({}, [], set())
        configured = {p for p in uses if any(a.config_value(c, p) is not None for c in kernel.configs)}
        launches: Optional[List[Tuple[str, LaunchFact]]] = None
        cross: Optional[List[Tuple[str, LaunchFact]]] = None
        for param, calls in uses.items():
            if param in configured or param in checked:
                continue
            node = next((call for call, kind in calls if kind == "arange"), calls[0][0])
            if self.skipped(a, node):
                continue
            if param in heuristics:
                origin = self._heuristic(heuristics[param], values)
                if origin is not None:
                    self._report(node, param, calls, origin)
                continue
            if definition is None:
                continue
            if launches is None:
                dotted = f"{values.module}.{kernel.name}"
                launches = [(values.module, fact) for fact in values.launches() if fact.kernel == dotted]
            found, passed = self._from_launches(kernel, param, launches, values.module)
            if not passed:
                if cross is None:
                    cross = self._cross_module(kernel, values.module)
                found, passed = self._from_launches(kernel, param, cross, values.module)
            if not passed and param in key and not SYSTEM_SIZE.search(param) \
                    and kernel.constexprs[param].default is None:
                # a key names a launch argument (a config may not set it) whose value changes
                found = (f"listed in the autotune `key` of `{kernel.name}` (Triton re-tunes for each value it takes"
                         " at run time), and no launch rocmport can read rounds it", "")
            if found is not None:
                self._report(node, param, calls, found)

    def _decorations(self, definition: ast.AST, values: ModuleValues):
        """(param -> heuristic lambda, autotune key names, params that tl.static_assert checks)."""
        heuristics: Dict[str, ast.AST] = {}
        key: List[str] = []
        for decorator in definition.decorator_list:
            if not isinstance(decorator, ast.Call):
                continue
            name = values.resolve(decorator.func) or ""
            if name in _HEURISTICS:
                table = decorator.args[0] if decorator.args else next(
                    (k.value for k in decorator.keywords if k.arg == "values"), None)
                if isinstance(table, ast.Dict):
                    for k, v in zip(table.keys, table.values):
                        if isinstance(k, ast.Constant) and isinstance(k.value, str):
                            heuristics[k.value] = v
            elif name in _AUTOTUNE:
                found = next((k.value for k in decorator.keywords if k.arg == "key"), None)
                if found is None and len(decorator.args) > 1:
                    found = decorator.args[1]
                if isinstance(found, (ast.List, ast.Tuple)):
                    key = [e.value for e in found.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        checked: Set[str] = set()
        for node in ast.walk(definition):
            test = msg = None
            if isinstance(node, ast.Assert):
                test, msg = node.test, node.msg
            elif isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name)) \
                    and (node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id) in _STATIC_ASSERT \
                    and node.args:
                test, msg = node.args[0], node.args[1] if len(node.args) > 1 else None
            if test is not None and pow2_shaped(test, msg):
                checked.update(n.id for n in ast.walk(test) if isinstance(n, ast.Name))
        return heuristics, key, checked

    def _heuristic(self, expr: ast.AST, values: ModuleValues) -> Optional[Tuple[str, str]]:
        """Why a ``triton.heuristics`` value is decided at run time, or None."""
        if not isinstance(expr, ast.Lambda) or not expr.args.args:
            return None
        body = expr.body
        if values.classify(body, body).kind == POW2:
            return None
        arg = expr.args.args[0].arg
        keys = [n.slice.value for n in ast.walk(body) if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name)
                and n.value.id == arg and isinstance(n.slice, ast.Constant) and isinstance(n.slice.value, str)]
        runtime = [k for k in keys if not SYSTEM_SIZE.search(k)]
        if not runtime or any(isinstance(n, ast.Call) and values.classify(n, n).kind == POW2 for n in ast.walk(body)):
            return None
        return (f"set by a `triton.heuristics` value computed from the launch argument `{runtime[0]}`", "")

    def _from_launches(self, kernel: Kernel, param: str, launches: List[Tuple[str, LaunchFact]],
                       own: str) -> Tuple[Optional[Tuple[str, str]], bool]:
        """((where the run-time value comes from, the value's text) for the first launch that
        passes a run-time size, or None; whether some launch passes a value at all)."""
        position = kernel.params.index(param) if param in kernel.params else None
        default = kernel.constexprs[param].default
        passed = False
        for module, launch in launches:
            found = launch.value_of(param, position)
            if found is None:
                if launch.opaque or default is None:
                    continue
                value, text = literal_value(_int_node(default)), ""
            else:
                value, text = found
            passed = True
            if value.kind == RUNTIME and self._model_size(value, param):
                where = f"at line {launch.line}" if module == own else f"in `{module}` line {launch.line}"
                why = value.why
                if value.cache and SYSTEM_SIZE.search(value.subject or param):
                    why = (f"a KV-cache block size ({why[2:] if why.startswith('a ') else why}; hybrid and multimodal"
                           " models use sizes such as 48, 544 or 1056)")
                return (f"launched with `{text}` {where}, {why}", text), True
        return None, passed

    def _model_size(self, value: Value, param: str) -> bool:
        """Is the run-time quantity one whose real values need not be powers of two? A size
        the system picks (a tile, a quantization group, a KV-cache block) is one only when it
        is a KV cache's and the project does not check its block size for a power of two."""
        subject = value.subject or param
        if not SYSTEM_SIZE.search(subject):
            return True
        if not value.cache and not KV_CACHE_NAME.search(subject):
            return False
        index = resolve.project_index(self)
        return not any(index.pow2_checked(word) for word in ("block_size", "page_size"))

    def _cross_module(self, kernel: Kernel, module: str) -> List[Tuple[str, LaunchFact]]:
        index = resolve.project_index(self)
        if index.path_of(module) is None:
            return []
        return index.triton_launches(f"{module}.{kernel.name}", exclude=module)

    def _report(self, node: cst.Call, param: str, calls, origin: Tuple[str, str]) -> None:
        why, text = origin
        head = f"`tl.arange(0, {param})` needs a power-of-two extent" if any(k == "arange" for _, k in calls) \
            else f"`{param}` is a tile dimension, which must be a power of two"
        rounded = f"`triton.next_power_of_2({text})`" if text and len(text) <= 40 else "`triton.next_power_of_2(...)`"
        self.report(node, f"{head}, and `{param}` is decided at run time: {why}. A value such as 3, 48 or 96 fails "
                          f"to compile (on ROCm as on every backend); launch {rounded} as the extent and mask the "
                          f"lanes past `{param}`",
                    fix=Fix(Applicability.DISPLAY_ONLY, "Round the extent with triton.next_power_of_2 and mask"))


def _int_node(default: cst.BaseExpression) -> ast.AST:
    if isinstance(default, cst.Integer):
        try:
            return ast.Constant(int(default.evaluated_value))
        except (ValueError, TypeError):  # pragma: no cover
            return ast.Constant(None)
    return ast.Constant(None)

