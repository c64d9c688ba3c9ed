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
        inductor's CUDA graphs work (`ignore = ["ROC101"]`).
        """
    FIX_APPLICABILITY = Applicability.SAFE
    VALID = (
        Case('import torch\nf = torch.compile(g, mode="default")\n'),
        Case('import torch\nf = torch.compile(g, mode="max-autotune-no-cudagraphs")\n'),
        Case('import re\np = re.compile("reduce-overhead")\n'),
        Case('import torch\n# mode="reduce-overhead" is faster\nf = torch.compile(g)\n'),
        Case('import torch\n"""Use torch.compile(m, mode="reduce-overhead")."""\n'),
        Case('import argparse\np = argparse.ArgumentParser()\n'
             'p.add_argument("--mode", choices=["default", "reduce-overhead"], default="default")\n'),
        Case('import torch\nf = torch.compile(g, mode="default" if is_rocm else "reduce-overhead")\n'),
        Case('import torch\nif torch.version.hip:\n    f = torch.compile(g)\n'
             'else:\n    f = torch.compile(g, mode="reduce-overhead")\n'),
        Case('def compile(fn, mode):\n    return fn\nf = compile(g, mode="reduce-overhead")\n'),
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
        Case("""
            import os
            import torch

            USE_COMPILE = os.environ.get("USE_COMPILE") == "1"
            if USE_COMPILE:
                decode = torch.compile(decode, mode="reduce-overhead")
            """, line=6),
        Case("""
            import torch

            USE_COMPILE = False

            def enable():
                global USE_COMPILE
                USE_COMPILE = True

            decode = torch.compile(decode, mode="reduce-overhead", disable=not USE_COMPILE)
            """, line=9),
        Case('import torch\nf = torch.compile(g, mode="reduce-overhead")\n',
             'import torch\n\n{PRELUDE}\n\nf = torch.compile(g, mode="default" if is_rocm else "reduce-overhead")\n'),
        Case("import torch as th\n\n@th.compile(mode='reduce-overhead')\ndef f(x):\n    return x\n",
             'import torch as th\n\nis_rocm = getattr(th.version, "hip", None) is not None\n\n@th.compile(mode=\'default\' if is_rocm else \'reduce-overhead\')\ndef f(x):\n    return x\n'),
        Case('import functools\nimport torch\nc = functools.partial(torch.compile, mode="reduce-overhead")\n',
             'import functools\nimport torch\n\n{PRELUDE}\n\nc = functools.partial(torch.compile, mode="default" if is_rocm else "reduce-overhead")\n'),
        Case('from torch import compile as tc\nf = tc(mode="reduce-overhead")(g)\n',
             'import torch\nfrom torch import compile as tc\n\nis_rocm = getattr(torch.version, "hip", None) is not None\n\nf = tc(mode="default" if is_rocm else "reduce-overhead")(g)\n'),
        Case('import torch\nmodel.compile(mode="reduce-overhead")\n',
             'import torch\n\n{PRELUDE}\n\nmodel.compile(mode="default" if is_rocm else "reduce-overhead")\n'),
        Case('import torch\nf = torch.compile(g, **{"mode": "reduce-overhead"})\n',
             'import torch\n\n{PRELUDE}\n\nf = torch.compile(g, **{"mode": "default" if is_rocm else "reduce-overhead"})\n'),
    )
