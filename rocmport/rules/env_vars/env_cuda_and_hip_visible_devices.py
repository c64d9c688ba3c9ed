"""ROC605 env-cuda-and-hip-visible-devices: CUDA_VISIBLE_DEVICES and HIP_VISIBLE_DEVICES both set: torch on ROCm silently uses one.

The rule's documentation is its class's (`rocmport rule ROC605` prints it).
"""

from __future__ import annotations

import re
from typing import Optional

import libcst as cst

from rocmport.analysis.syntax import mentions_rocm
from rocmport.findings import Applicability, Fix
from rocmport.rules.base import Case

from .common import VISIBILITY_VARS, PairRule, env_write


def removes(text: str, var: str) -> bool:
    """True when the text removes ``var`` from an environment (``os.environ.pop("X")``,
    ``del os.environ["X"]``, ``os.unsetenv("X")``, shell ``unset X``, ``env -u X``)."""
    quoted = rf"[\"']{re.escape(var)}[\"']"
    return bool(re.search(rf"(?:\.pop\(\s*{quoted}|\bdel\s+[^\n]*\[\s*{quoted}\s*\]|unsetenv\(\s*{quoted}"
                          rf"|\bunset\s+(?:-v\s+)?{re.escape(var)}\b|\benv\s+(?:-\S+\s+)*-u\s*{re.escape(var)}\b)", text))


class VisibleDevicesBoth(PairRule):
    CODE = "ROC605"
    NAME = "env-cuda-and-hip-visible-devices"
    TRIGGERS = ("HIP_VISIBLE_DEVICES",)
    VARS = VISIBILITY_VARS
    NEEDS = env_write(*VARS)
    SUMMARY = "CUDA_VISIBLE_DEVICES and HIP_VISIBLE_DEVICES both set: torch on ROCm silently uses one."
    WHAT = """
        A file that sets both `CUDA_VISIBLE_DEVICES` and `HIP_VISIBLE_DEVICES` (the same value
        included), reported at the later of the two. Python: the spellings of ROC601 (this
        process' `os.environ`, `os.putenv`, environments built for child processes), both in
        one function or both at module level; two writes in the two arms of one ROCm test
        (`if is_rocm: HIP... else: CUDA...`) and files that also remove one of them
        (`os.environ.pop`, `del`, `unset`) are not findings.
        Shell scripts, Dockerfiles, `.env` files: anywhere in the file; YAML: in the same map
        or list (one `env:` block, one `run:` script).
        """
    WHY = """
        On a ROCm build torch 2.13 decides which GPUs it counts in
        `torch/cuda/__init__.py:_parse_visible_devices`: `ROCR_VISIBLE_DEVICES` is applied
        first; with `HIP_VISIBLE_DEVICES` set, `CUDA_VISIBLE_DEVICES` is ignored without a
        word; with only `ROCR_VISIBLE_DEVICES` set, it is ignored too; and torch raises
        RuntimeError when `HIP_VISIBLE_DEVICES` lists more devices than `ROCR_VISIBLE_DEVICES`.
        Earlier releases raised when both were set (pytorch#139866, #140398). The HIP runtime
        reads both variables as well, so the GPUs torch counts and the GPUs the runtime opens
        can differ: the wrong GPUs, or none (the failures: pytorch#140318, where torch seeded
        devices the visibility variables hid; Parsl/parsl#3858, where setting two of them left
        torch with no GPU on Frontier's MI250X).
        """
    EXAMPLE = """
        import os
        os.environ["CUDA_VISIBLE_DEVICES"] = "0,1"
        os.environ["HIP_VISIBLE_DEVICES"] = "0,1"
        """
    FIX = """
        Display-only: set one variable, `HIP_VISIBLE_DEVICES` on ROCm and
        `CUDA_VISIBLE_DEVICES` on NVIDIA (`"HIP_VISIBLE_DEVICES" if is_rocm else
        "CUDA_VISIBLE_DEVICES"`), and leave `ROCR_VISIBLE_DEVICES` unset or a superset. Which
        one to drop depends on the deployment, so rocmport does not choose.
        """
    FIX_APPLICABILITY = Applicability.DISPLAY_ONLY
    VALID = (
        Case("""
            import os
            os.environ["CUDA_VISIBLE_DEVICES"] = "0"
            """),
        Case("""
            import os
            if is_rocm:
                os.environ["HIP_VISIBLE_DEVICES"] = "0"
            else:
                os.environ["CUDA_VISIBLE_DEVICES"] = "0"
            """),
        Case("""
            import os
            var = "HIP_VISIBLE_DEVICES" if is_rocm else "CUDA_VISIBLE_DEVICES"
            os.environ[var] = "0"
            """),
        Case("""
            import os
            os.environ["HIP_VISIBLE_DEVICES"] = os.environ.pop("CUDA_VISIBLE_DEVICES", "0")
            """),
        Case("""
            import os
            print(os.environ.get("CUDA_VISIBLE_DEVICES"), os.environ.get("HIP_VISIBLE_DEVICES"))
            """),
        Case("""
            import os
            # os.environ["HIP_VISIBLE_DEVICES"] = "0"
            os.environ["CUDA_VISIBLE_DEVICES"] = "0"
            doc = "never set HIP_VISIBLE_DEVICES and CUDA_VISIBLE_DEVICES together"
            """),
        Case("""
            settings = {}
            settings["CUDA_VISIBLE_DEVICES"] = "0"
            settings["HIP_VISIBLE_DEVICES"] = "0"
            """),
        Case("""
            import os
            def use_xpu():
                os.environ["CUDA_VISIBLE_DEVICES"] = ""
            def use_gpus(ids):
                os.environ["HIP_VISIBLE_DEVICES"] = ids
            """),
    )
    INVALID = (
        Case(
            """
            import os
            os.environ["CUDA_VISIBLE_DEVICES"] = "0,1"
            os.environ["HIP_VISIBLE_DEVICES"] = "0,1"
            """,
            line=3,
            column=12,
            message=(
                "HIP_VISIBLE_DEVICES is set here and CUDA_VISIBLE_DEVICES at line 2: on a ROCm build torch 2.13 "
                "counts GPUs from HIP_VISIBLE_DEVICES and ignores CUDA_VISIBLE_DEVICES without a word (earlier "
                "releases raised), ROCR_VISIBLE_DEVICES is applied before both, and the HIP runtime reads both: set "
                "only one (HIP_VISIBLE_DEVICES on ROCm)"
            ),
        ),
        Case(
            """
            import os
            import subprocess
            subprocess.run(cmd, env={**os.environ, "CUDA_VISIBLE_DEVICES": ids, "HIP_VISIBLE_DEVICES": ids})
            """,
            line=3,
            column=69,
            message=(
                "HIP_VISIBLE_DEVICES is set here and CUDA_VISIBLE_DEVICES at line 3: on a ROCm build torch 2.13 "
                "counts GPUs from HIP_VISIBLE_DEVICES and ignores CUDA_VISIBLE_DEVICES without a word (earlier "
                "releases raised), ROCR_VISIBLE_DEVICES is applied before both, and the HIP runtime reads both: set "
                "only one (HIP_VISIBLE_DEVICES on ROCm)"
            ),
        ),
        Case(
            """
            import os
            os.environ["CUDA_VISIBLE_DEVICES"] = "0"
            if is_rocm:
                os.environ["HIP_VISIBLE_DEVICES"] = "0"
            """,
            line=4,
            column=16,
            message=(
                "HIP_VISIBLE_DEVICES is set here and CUDA_VISIBLE_DEVICES at line 2: on a ROCm build torch 2.13 "
                "counts GPUs from HIP_VISIBLE_DEVICES and ignores CUDA_VISIBLE_DEVICES without a word (earlier "
                "releases raised), ROCR_VISIBLE_DEVICES is applied before both, and the HIP runtime reads both: set "
                "only one (HIP_VISIBLE_DEVICES on ROCm)"
            ),
        ),
    )

    @staticmethod
    def message(later: str, earlier: str, row: int) -> str:
        return (f"{later} is set here and {earlier} at line {row}: on a ROCm build torch 2.13 counts GPUs from"
                " HIP_VISIBLE_DEVICES and ignores CUDA_VISIBLE_DEVICES without a word (earlier releases raised),"
                " ROCR_VISIBLE_DEVICES is applied before both, and the HIP runtime reads both: set only one"
                " (HIP_VISIBLE_DEVICES on ROCm)")

    HINT = "Set only one of them (HIP_VISIBLE_DEVICES on ROCm)"

    def leave_Module(self, original_node: cst.Module) -> None:
        text = self.context.text
        if any(removes(text, var) for var in VISIBILITY_VARS):
            return
        cuda = [w for w in self._writes if w.var == "CUDA_VISIBLE_DEVICES"]
        hip = [w for w in self._writes if w.var == "HIP_VISIBLE_DEVICES"]
        for first in cuda:
            for second in hip:
                if self._scope(first.anchor) is not self._scope(second.anchor) \
                        or self._exclusive(first.key_node, second.key_node):
                    continue
                earlier, later = sorted((first, second), key=lambda w: self._where(w))
                self.report(later.key_node, self.message(later.var, earlier.var, self.row(earlier)),
                            fix=Fix(Applicability.DISPLAY_ONLY, self.HINT))
                return

    def _scope(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        """The function the write runs in (None: module level): writes in different functions
        are different code paths (an XPU set-up and a ROCm one), not one environment."""
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, (cst.FunctionDef, cst.Lambda)):
                return ancestor
        return None

    def _exclusive(self, a: cst.CSTNode, b: cst.CSTNode) -> bool:
        """``a`` and ``b`` sit in the two arms of one ROCm test."""
        gate = self.context.gate_name
        b_ancestors = {id(n): n for n in self.ancestors(b)}
        child = a
        for ancestor in self.ancestors(a):
            if isinstance(ancestor, (cst.If, cst.IfExp)) and id(ancestor) in b_ancestors \
                    and mentions_rocm(ancestor.test, gate):
                arm_a = "body" if child is ancestor.body else "orelse"
                b_child = b
                for up in self.ancestors(b):
                    if up is ancestor:
                        break
                    b_child = up
                arm_b = "body" if b_child is ancestor.body else "orelse"
                return arm_a != arm_b and child is not ancestor.test and b_child is not ancestor.test
            child = ancestor
        return False
