"""ROC201 inductor-triton-cudagraphs: torch._inductor.config.triton.cudagraphs turned on.

The rule's documentation is its class's (`rocmport rule ROC201` prints it).
"""

from __future__ import annotations

from rocmport.findings import Applicability
from rocmport.rules.base import Case

from .common import InductorSetting, setting, what


class TritonCudagraphs(InductorSetting):
    CODE = "ROC201"
    NAME = "inductor-triton-cudagraphs"
    KEYS = ("triton.cudagraphs",)
    NEEDS = setting(*KEYS)
    TRIGGERS = ("cudagraphs",)
    WHAT_IT_DOES = "turns on inductor's CUDA graphs, which hang or slow down on ROCm"
    SUMMARY = "torch._inductor.config.triton.cudagraphs turned on."
    WHAT = what("`triton.cudagraphs` set to a value that is not False.") + """
        In `torch.compile(options=...)` the key is ROC103's and is not reported again.
        """
    WHY = """
        `triton.cudagraphs` makes inductor capture and replay CUDA graphs (what
        `mode="reduce-overhead"` turns on). Inductor's CUDA graphs on ROCm (HIP graphs) have
        hung, crashed or run slower on the stacks most users have today (ROCm/clr#279,
        ROCm/hip#3887, pytorch#187715).
        """
    EXAMPLE = """
        import torch._inductor.config

        torch._inductor.config.triton.cudagraphs = True
        """
    FIXED_EXAMPLE = """
        import torch._inductor.config

        torch._inductor.config.triton.cudagraphs = False if is_rocm else True
        """
    FIX = """
        Safe. The value becomes `False if is_rocm else <value>`: on NVIDIA the expression is
        the original value; on ROCm CUDA graphs stay off. `is_rocm` comes from the generated
        prelude. To keep the speed of CUDA graphs on ROCm, capture the compiled function
        manually (`torch.cuda.graph`). Turn the rule off on stacks where inductor's CUDA
        graphs work (`ignore = ["ROC201"]`).
        """
    FIX_APPLICABILITY = Applicability.SAFE
    VALID = (
        Case("import torch\ntorch._inductor.config.triton.cudagraphs = False\n"),
        Case("import torch\nif torch._inductor.config.triton.cudagraphs:\n    pass\n"),
        Case("import torch\nx = torch._inductor.config.triton.cudagraphs\n"),
        Case("import torch\ntorch._inductor.config.triton.cudagraphs = False if is_rocm else True\n"),
        Case("import torch\ntorch._inductor.config.triton.cudagraph_trees = False\n"),
        Case("import torch\nf = torch.compile(g, options={\"triton.cudagraphs\": True})\n"),
        Case("my_config.triton.cudagraphs = True\n"),
        Case("import torch\n# torch._inductor.config.triton.cudagraphs = True\n"),
        Case("import torch\nif not torch.version.hip:\n    torch._inductor.config.triton.cudagraphs = True\n"),
    )
    INVALID = (
        Case("import torch\ntorch._inductor.config.triton.cudagraphs = True\n",
             "import torch\n\n{PRELUDE}\n\ntorch._inductor.config.triton.cudagraphs = False if is_rocm else True\n"),
        Case("from torch._inductor import config\n\nwith config.patch({\"triton.cudagraphs\": True}):\n    pass\n",
             'import torch\nfrom torch._inductor import config\n\nis_rocm = getattr(torch.version, "hip", None) is not None\n\nwith config.patch({"triton.cudagraphs": False if is_rocm else True}):\n    pass\n'),
        Case("import torch._inductor.config as ic\n\n@ic.patch(**{\"triton.cudagraphs\": True})\ndef f():\n    pass\n",
             'import torch\nimport torch._inductor.config as ic\n\nis_rocm = getattr(torch.version, "hip", None) is not None\n\n@ic.patch(**{"triton.cudagraphs": False if is_rocm else True})\ndef f():\n    pass\n'),
        Case("def setup():\n    from torch._inductor import config\n    config.triton.cudagraphs = 1\n",
             'def setup():\n    from torch._inductor import config\n    import torch\n    is_rocm = getattr(torch.version, "hip", None) is not None\n    config.triton.cudagraphs = False if is_rocm else 1\n'),
    )
