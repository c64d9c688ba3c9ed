"""ROC606 env-cuda-arch-list-without-rocm-arch: TORCH_CUDA_ARCH_LIST set for an extension build, PYTORCH_ROCM_ARCH not.

The rule's documentation is its class's (`rocmport rule ROC606` prints it).
"""

from __future__ import annotations

import libcst as cst

from rocmport.findings import Applicability, Fix
from rocmport.rules.base import Case

from .common import (
    ARCH_LIST_VAR,
    ROCM_ARCH_VAR,
    PairRule,
    env_write,
    nvidia_arch_only,
    py_value,
)


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

        Not reported either, because no ROCm build reads the setting:
        - a Dockerfile or YAML file (a CI workflow, a compose or cluster file) that names ROCm
          nowhere (`rocm`, `hip`, `amd`, `gfx942`, `MI300`): its base image and runners are
          NVIDIA's or CPU-only, so it builds nothing for ROCm (a `FROM rocm/pytorch` image, a
          `runs-on: mi300` job are ROCm builds and are reported);
        - a list of arch-specific NVIDIA targets only (`"9.0a"`, `"10.0a;12.0a"`): it builds
          Hopper or Blackwell kernels (wgmma, tcgen05) that have no AMD counterpart.
        """
    WHY = """
        `torch.utils.cpp_extension` builds ROCm extensions for the targets in
        `PYTORCH_ROCM_ARCH` and ignores `TORCH_CUDA_ARCH_LIST`. Without it, torch 2.13 builds for
        the architectures of the GPUs visible at build time (`_get_rocm_arch_flags`): none in a
        `docker build` or on a CPU-only CI runner, and only the local GPU's elsewhere, so the
        extension fails to load on other AMD GPUs (ROCm/gsplat#22: a `docker build` without a
        device compiled the extension for the wrong architecture, and it failed only at run time).
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
        Case("""
            import os
            os.environ["TORCH_CUDA_ARCH_LIST"] = "8.0;9.0"
            os.environ["PYTORCH_ROCM_ARCH"] = "gfx942"
            """),
        Case("""
            import os
            os.environ.setdefault("PYTORCH_ROCM_ARCH", "gfx90a")
            os.environ["TORCH_CUDA_ARCH_LIST"] = "8.0"
            """),
        Case("""
            import os
            archs = os.environ.get("TORCH_CUDA_ARCH_LIST", "")
            """),
        Case("""
            import os
            import torch
            HIP_BUILD = bool(torch.version.hip)
            if not HIP_BUILD:
                os.environ["TORCH_CUDA_ARCH_LIST"] = "8.0;9.0"
            """),
        Case("""
            import os
            os.environ["TORCH_CUDA_ARCH_LIST"] = ""
            """),
        Case("""
            import os
            # os.environ["TORCH_CUDA_ARCH_LIST"] = "8.0"
            """),
        # Hopper-only kernels (CUTLASS sm90a): nothing to build for AMD
        Case("""
            import os
            import subprocess

            def build_machete(tmp):
                env = dict(os.environ)
                env["TORCH_CUDA_ARCH_LIST"] = "9.0a"
                subprocess.run(["python", "setup.py", "build_ext"], env=env, check=True)
            """),
    )
    INVALID = (
        Case(
            """
            import os
            os.environ["TORCH_CUDA_ARCH_LIST"] = "8.0;9.0"
            """,
            line=2,
            column=12,
            message=(
                "TORCH_CUDA_ARCH_LIST is set but PYTORCH_ROCM_ARCH is not: ROCm extension builds ignore "
                "TORCH_CUDA_ARCH_LIST and, without PYTORCH_ROCM_ARCH, target only the GPUs visible at build time "
                "(none in a docker build); set PYTORCH_ROCM_ARCH too"
            ),
        ),
        # near miss of arch-specific targets: one portable target beside them
        Case(
            """
            import os
            os.environ["TORCH_CUDA_ARCH_LIST"] = "8.0;9.0a"
            """,
            line=2,
            column=12,
            message=(
                "TORCH_CUDA_ARCH_LIST is set but PYTORCH_ROCM_ARCH is not: ROCm extension builds ignore "
                "TORCH_CUDA_ARCH_LIST and, without PYTORCH_ROCM_ARCH, target only the GPUs visible at build time "
                "(none in a docker build); set PYTORCH_ROCM_ARCH too"
            ),
        ),
        Case(
            """
            import os
            import subprocess
            subprocess.check_call(["pip", "install", "."], env=dict(os.environ, TORCH_CUDA_ARCH_LIST="8.6+PTX"))
            """,
            line=3,
            column=69,
            message=(
                "TORCH_CUDA_ARCH_LIST is set but PYTORCH_ROCM_ARCH is not: ROCm extension builds ignore "
                "TORCH_CUDA_ARCH_LIST and, without PYTORCH_ROCM_ARCH, target only the GPUs visible at build time "
                "(none in a docker build); set PYTORCH_ROCM_ARCH too"
            ),
        ),
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
        writes = [w for w in self._writes if py_value(w.value) != "" and not nvidia_arch_only(py_value(w.value))
                  and not self.in_rocm_branch(w.key_node)]
        if not writes:
            return
        first = min(writes, key=lambda w: self._where(w))
        self.report(first.key_node, self.message(first.var), fix=Fix(Applicability.DISPLAY_ONLY, self.HINT))
