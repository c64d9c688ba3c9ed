"""ROC101 compile-reduce-overhead: torch.compile(mode="reduce-overhead") uses CUDA graphs.

The rule's documentation is its class's (`rocmport rule ROC101` prints it).
"""

from __future__ import annotations

from rocmport.findings import Applicability
from rocmport.rules.base import Case

from .common import LiteralMode


class ReduceOverheadMode(LiteralMode):
    CODE = "ROC101"
    NAME = "compile-reduce-overhead"
    MODE = "reduce-overhead"
    SUMMARY = 'torch.compile(mode="reduce-overhead") uses CUDA graphs.'
    WHAT = """
        A literal `mode="reduce-overhead"` handed to `torch.compile` in any spelling: a call,
        a decorator, `torch.compile(mode=...)(fn)`, an alias (`import torch as th`,
        `from torch import compile as tc`), `functools.partial(torch.compile, mode=...)`,
        `model.compile(mode=...)` (`nn.Module.compile`), a literal `**{"mode": ...}`, and
        transformers' `CompileConfig(mode=...)`.
        """
    WHY = """
        "reduce-overhead" sets `triton.cudagraphs=True`. Inductor's CUDA graphs on ROCm (HIP
        graphs) have hung, crashed or run slower on the stacks most users have today
        (ROCm/clr#279, ROCm/hip#3887, pytorch#187715). The mode overrides global config, so a
        prelude cannot switch it off: the call site must change.
        """
    EXAMPLE = """
        decode_one_token = torch.compile(decode_one_token, mode="reduce-overhead", fullgraph=True)
        """
    FIXED_EXAMPLE = """
        decode_one_token = torch.compile(decode_one_token, mode="default" if is_rocm else "reduce-overhead", fullgraph=True)
        """
    FIX = """
        Safe. The literal becomes `"default" if is_rocm else "reduce-overhead"`: on NVIDIA the
        expression evaluates to the original value, on ROCm to "default". `is_rocm` comes from
        the generated prelude (or a binding of the file's own that means the same). To keep
        the speed of CUDA graphs on ROCm, capture the compiled function manually
        (`torch.cuda.graph`), which HIP graphs support. Turn the rule off on stacks where
        inductor's CUDA graphs work (`ignore = ["ROC101"]`). A literal handed to the project's
        own wrapper around torch.compile (a function that hands its parameter to the mode
        unchanged) is left where it is when ROC104 maps the mode once inside that wrapper,
        for every caller; through `**kwargs` or a partial, each literal is fixed where it is.
        """
    FIX_APPLICABILITY = Applicability.SAFE
    VALID = (
        Case("""
            import torch
            f = torch.compile(g, mode="default")
            """),
        Case("""
            import torch
            f = torch.compile(g, mode="max-autotune-no-cudagraphs")
            """),
        Case("""
            import re
            p = re.compile("reduce-overhead")
            """),
        Case("""
            import torch
            # mode="reduce-overhead" is faster
            f = torch.compile(g)
            """),
        Case('''
            import torch
            """Use torch.compile(m, mode="reduce-overhead")."""
            '''),
        Case("""
            import argparse
            p = argparse.ArgumentParser()
            p.add_argument("--mode", choices=["default", "reduce-overhead"], default="default")
            """),
        Case("""
            import torch
            f = torch.compile(g, mode="default" if is_rocm else "reduce-overhead")
            """),
        Case("""
            import torch
            if torch.version.hip:
                f = torch.compile(g)
            else:
                f = torch.compile(g, mode="reduce-overhead")
            """),
        Case("""
            def compile(fn, mode):
                return fn
            f = compile(g, mode="reduce-overhead")
            """),
        # a constant flag decides that nothing is compiled
        Case("""
            import torch

            USE_COMPILE = False
            if USE_COMPILE:
                decode = torch.compile(decode, mode="reduce-overhead")
            """),
        Case("""
            import torch

            DEBUG_EAGER = True
            decode = torch.compile(decode, mode="reduce-overhead", disable=DEBUG_EAGER)
            step = torch.compile(step, mode="reduce-overhead", disable=True)
            """),
    )
    INVALID = (
        # near misses of a decided flag: one the environment sets, one a function may turn on
        Case(
            """
            import os
            import torch

            USE_COMPILE = os.environ.get("USE_COMPILE") == "1"
            if USE_COMPILE:
                decode = torch.compile(decode, mode="reduce-overhead")
            """,
            line=6,
            column=41,
            message='mode="reduce-overhead" turns on CUDA graphs, which hang or slow down on ROCm; use "default" there',
        ),
        Case(
            """
            import torch

            USE_COMPILE = False

            def enable():
                global USE_COMPILE
                USE_COMPILE = True

            decode = torch.compile(decode, mode="reduce-overhead", disable=not USE_COMPILE)
            """,
            line=9,
            column=37,
            message='mode="reduce-overhead" turns on CUDA graphs, which hang or slow down on ROCm; use "default" there',
        ),
        Case(
            """
            import torch
            f = torch.compile(g, mode="reduce-overhead")
            """,
            expected="""
            import torch

            {PRELUDE}

            f = torch.compile(g, mode="default" if is_rocm else "reduce-overhead")
            """,
            line=2,
            column=27,
            message='mode="reduce-overhead" turns on CUDA graphs, which hang or slow down on ROCm; use "default" there',
        ),
        Case(
            """
            import torch as th

            @th.compile(mode='reduce-overhead')
            def f(x):
                return x
            """,
            expected="""
            import torch as th

            is_rocm = getattr(th.version, "hip", None) is not None

            @th.compile(mode='default' if is_rocm else 'reduce-overhead')
            def f(x):
                return x
            """,
            line=3,
            column=18,
            message='mode="reduce-overhead" turns on CUDA graphs, which hang or slow down on ROCm; use "default" there',
        ),
        Case(
            """
            import functools
            import torch
            c = functools.partial(torch.compile, mode="reduce-overhead")
            """,
            expected="""
            import functools
            import torch

            {PRELUDE}

            c = functools.partial(torch.compile, mode="default" if is_rocm else "reduce-overhead")
            """,
            line=3,
            column=43,
            message='mode="reduce-overhead" turns on CUDA graphs, which hang or slow down on ROCm; use "default" there',
        ),
        Case(
            """
            from torch import compile as tc
            f = tc(mode="reduce-overhead")(g)
            """,
            expected="""
            import torch
            from torch import compile as tc

            is_rocm = getattr(torch.version, "hip", None) is not None

            f = tc(mode="default" if is_rocm else "reduce-overhead")(g)
            """,
            line=2,
            column=13,
            message='mode="reduce-overhead" turns on CUDA graphs, which hang or slow down on ROCm; use "default" there',
        ),
        Case(
            """
            import torch
            model.compile(mode="reduce-overhead")
            """,
            expected="""
            import torch

            {PRELUDE}

            model.compile(mode="default" if is_rocm else "reduce-overhead")
            """,
            line=2,
            column=20,
            message='mode="reduce-overhead" turns on CUDA graphs, which hang or slow down on ROCm; use "default" there',
        ),
        Case(
            """
            import torch
            f = torch.compile(g, **{"mode": "reduce-overhead"})
            """,
            expected="""
            import torch

            {PRELUDE}

            f = torch.compile(g, **{"mode": "default" if is_rocm else "reduce-overhead"})
            """,
            line=2,
            column=33,
            message='mode="reduce-overhead" turns on CUDA graphs, which hang or slow down on ROCm; use "default" there',
        ),
    )
