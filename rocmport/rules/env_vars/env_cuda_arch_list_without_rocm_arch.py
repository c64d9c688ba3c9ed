"""ROC606 env-cuda-arch-list-without-rocm-arch: TORCH_CUDA_ARCH_LIST set for an extension build, PYTORCH_ROCM_ARCH not.

The rule's documentation is its class's (`rocmport rule ROC606` prints it).
"""

from __future__ import annotations

import libcst as cst

from rocmport.findings import Applicability, Fix
from rocmport.rules.base import Case

from .common import ARCH_LIST_VAR, ROCM_ARCH_VAR, PairRule, env_write, py_value


class ArchListWithoutRocmArch(PairRule):
    CODE = "ROC606"
    NAME = "env-cuda-arch-list-without-rocm-arch"
    TRIGGERS = ("TORCH_CUDA_ARCH_LIST",)
    VARS = (ARCH_LIST_VAR,)
    NEEDS = env_write(*VARS)
    SUMMARY = "TORCH_CUDA_ARCH_LIST set for an extension build, PYTORCH_ROCM_ARCH not."
    WHAT = """
        A file that sets `TORCH_CUDA_ARCH_LIST` to a non-empty value (the Python spellings of
        ROC601, shell scripts, Dockerfiles, YAML, `.env` files) and never mentions
        `PYTORCH_ROCM_ARCH`. Reported at the first setting. Not findings: settings in either
        arm of a ROCm test (`if HIP_BUILD: ... else: os.environ["TORCH_CUDA_ARCH_LIST"] =
        ...`), and files whose name says they are for NVIDIA only (`nv-build.yml`,
        `Dockerfile.cuda`, `build_nvidia.sh`).
        """
    WHY = """
        `torch.utils.cpp_extension` builds ROCm extensions for the targets in
        `PYTORCH_ROCM_ARCH` and ignores `TORCH_CUDA_ARCH_LIST`. Without it, torch 2.13 builds for
        the architectures of the GPUs visible at build time (`_get_rocm_arch_flags`): none in a
        `docker build` or on a CPU-only CI runner, and only the local GPU's elsewhere, so the
        extension fails to load on other AMD GPUs.
        """
    EXAMPLE = """
        import os
        os.environ["TORCH_CUDA_ARCH_LIST"] = "8.0;9.0"
        """
    FIX = """
        Display-only: set `PYTORCH_ROCM_ARCH` next to it with the AMD targets you ship (for
        example `gfx90a;gfx942` for MI200 and MI300). rocmport does not know the targets.
        """
    FIX_APPLICABILITY = Applicability.DISPLAY_ONLY
    VALID = (
        Case('import os\nos.environ["TORCH_CUDA_ARCH_LIST"] = "8.0;9.0"\nos.environ["PYTORCH_ROCM_ARCH"] = "gfx942"\n'),
        Case('import os\nos.environ.setdefault("PYTORCH_ROCM_ARCH", "gfx90a")\n'
             'os.environ["TORCH_CUDA_ARCH_LIST"] = "8.0"\n'),
        Case('import os\narchs = os.environ.get("TORCH_CUDA_ARCH_LIST", "")\n'),
        Case('import os\nimport torch\nHIP_BUILD = bool(torch.version.hip)\nif not HIP_BUILD:\n'
             '    os.environ["TORCH_CUDA_ARCH_LIST"] = "8.0;9.0"\n'),
        Case('import os\nos.environ["TORCH_CUDA_ARCH_LIST"] = ""\n'),
        Case('import os\n# os.environ["TORCH_CUDA_ARCH_LIST"] = "8.0"\n'),
    )
    INVALID = (
        Case(EXAMPLE.replace("\n        ", "\n").strip() + "\n"),
        Case('import os\nimport subprocess\nsubprocess.check_call(["pip", "install", "."],'
             ' env=dict(os.environ, TORCH_CUDA_ARCH_LIST="8.6+PTX"))\n'),
    )

    HINT = "Set PYTORCH_ROCM_ARCH too (e.g. gfx90a;gfx942)"

    @staticmethod
    def message(var: str) -> str:
        return (f"{var} is set but PYTORCH_ROCM_ARCH is not: ROCm extension builds ignore {var} and, without"
                " PYTORCH_ROCM_ARCH, target only the GPUs visible at build time (none in a docker build); set"
                " PYTORCH_ROCM_ARCH too")

    def leave_Module(self, original_node: cst.Module) -> None:
        if ROCM_ARCH_VAR in self.context.text:
            return
        # a branch on ROCm (its NVIDIA arm included) already tells the platforms apart; an
        # empty value clears the list rather than choosing architectures
        writes = [w for w in self._writes if py_value(w.value) != "" and not self.in_rocm_branch(w.key_node)]
        if not writes:
            return
        first = min(writes, key=lambda w: self._where(w))
        self.report(first.key_node, self.message(first.var), fix=Fix(Applicability.DISPLAY_ONLY, self.HINT))
