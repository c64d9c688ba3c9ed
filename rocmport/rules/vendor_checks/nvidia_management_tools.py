"""ROC703 nvidia-management-tools: `nvidia-smi` or NVML (`pynvml`) used: they do not exist on ROCm.

The rule's documentation is its class's (`rocmport rule ROC703` prints it).
"""

from __future__ import annotations

import re

import libcst as cst

from rocmport.analysis.needs import Call, Import, String
from rocmport.analysis.platforms import ROCM
from rocmport.analysis.syntax import dotted_name
from rocmport.findings import Applicability
from rocmport.rules.base import Case

from .common import VendorRule, facts_doc, identifiers, walk

NVML_MODULES = frozenset({"pynvml", "py3nvml", "nvidia_smi", "GPUtil"})
_PROCESS_CALLS = frozenset(
    {f"subprocess.{n}" for n in ("run", "call", "check_call", "check_output", "Popen", "getoutput",
                                 "getstatusoutput")}
    | {f"os.{n}" for n in ("system", "popen", "execv", "execvp", "execl", "execlp", "spawnv", "spawnvp")}
    | {"asyncio.create_subprocess_exec", "asyncio.create_subprocess_shell", "shutil.which"})
_NVIDIA_SMI = re.compile(r"(?:^|[\s/\"'])nvidia-smi(?:$|[\s\"'.])")
# What an AMD branch runs or says: the tool, the library, the platform's name.
_AMD_TOOL = re.compile(r"(?i)rocm-smi|amd-smi|rocminfo|amdsmi|rocm_smi|\brocm\b|\bhip\b|\bamd\b")


class NvidiaManagementTools(VendorRule):
    CODE = "ROC703"
    NAME = "nvidia-management-tools"
    SUMMARY = "`nvidia-smi` or NVML (`pynvml`) used: they do not exist on ROCm."
    TRIGGERS = ("nvidia-smi", "nvml", "nvidia_smi", "GPUtil")  # the command is a string: NEEDS gives no word for it
    # An import of an NVML module, or a process call in a file with a string that holds
    # "nvidia-smi" (every command ``_runs_nvidia_smi`` accepts is, or is assigned, one).
    NEEDS = Import(*NVML_MODULES) | String("nvidia-smi") & Call(*_PROCESS_CALLS)
    LOCAL = True
    FIX_APPLICABILITY = Applicability.DISPLAY_ONLY
    WHAT = """
        A `subprocess` / `os.system` / `os.popen` / `shutil.which` / asyncio subprocess call
        whose command (a string, a list, or a name assigned one in the same scope) runs
        `nvidia-smi`; an import of `pynvml`, `py3nvml`, `nvidia_smi` or `GPUtil` (which runs
        nvidia-smi). Not reported: the words in strings, comments or docstrings that are not
        a command, and code that already dispatches on the vendor: under a ROCm or
        `torch.version.cuda` test, or any condition the platform analysis reads as NVIDIA
        only (`"nvidia" in gpu_name`, `name.startswith("NVIDIA")`, `vendor == "nvidia"`,
        `"Tesla" in name`), a command assigned only in such a branch (`if "nvidia" in name: cmd
        = "nvidia-smi ..." else: cmd = "rocm-smi ..."`), and a probe whose failure is the AMD
        branch (`try: run(["nvidia-smi"]) except FileNotFoundError: run(["rocm-smi"])`).
        """
    WHY = """
        ROCm has neither `nvidia-smi` nor NVML: the call fails, or the tool is missing and the
        code silently reports no GPU, zero memory or zero utilisation (bytedance/xpu-perf#194: a
        GPU backend crashed on an MI350X for want of nvidia-smi; ryujaehun/pytorch-gpu-benchmark#29:
        a benchmark counted GPUs with nvidia-smi; pytorch#133259: with pynvml installed, torch's
        own device count failed on ROCm).

""" + facts_doc("tools") + """
        """
    EXAMPLE = """
        import subprocess
        out = subprocess.check_output(["nvidia-smi", "--query-gpu=memory.used", "--format=csv"])
        """
    FIX = """
        Display-only: use torch's own queries, which work on both vendors
        (`torch.cuda.mem_get_info()`, `torch.cuda.memory_allocated()`,
        `torch.cuda.get_device_name()`, `torch.cuda.device_count()`), or AMD's `amdsmi` /
        `amd-smi` on ROCm (gated on `torch.version.hip`).
        """
    VALID = (
        Case("""
            print('run nvidia-smi to see the GPUs')
            """),
        Case('''
            """Check nvidia-smi first."""
            import os
            '''),
        Case("""
            import subprocess
            import torch
            if torch.version.hip:
                subprocess.run(['amd-smi'])
            else:
                subprocess.run(['nvidia-smi'])
            """),
        Case("""
            import torch
            if torch.version.cuda:
                import pynvml
            """),
        Case("""
            import subprocess
            # subprocess.run(['nvidia-smi'])
            subprocess.run(['ls'])
            """),
        Case("""
            import mynvml_tools
            """),
        Case("""
            def init():
                try:
                    import pynvml
                except ImportError:
                    return None
                return pynvml
            """),
        # a vendor dispatch the platform analysis reads: the device's name, the command's branch
        Case("""
            import subprocess
            import torch

            def gpu_report():
                gpu_name = torch.cuda.get_device_name(0)
                if "nvidia" in gpu_name.lower():
                    return subprocess.check_output(["nvidia-smi", "-q"])
                elif "amd" in gpu_name.lower():
                    return subprocess.check_output(["rocm-smi", "--showallinfo"])
            """),
        Case("""
            import subprocess

            def gpu_report(gpu_name):
                if gpu_name.startswith("NVIDIA") or "Tesla" in gpu_name:
                    return subprocess.check_output(["nvidia-smi", "-q"])
                return subprocess.check_output(["rocm-smi"])
            """),
        Case("""
            import subprocess

            def gpu_report(gpu_name):
                if "nvidia" in gpu_name.lower():
                    cmd = "nvidia-smi --query-gpu=name --format=csv"
                else:
                    cmd = "rocm-smi --showproductname"
                return subprocess.check_output(cmd, shell=True)
            """),
        # a probe whose failure is the AMD branch
        Case("""
            import subprocess

            def get_platform():
                try:
                    subprocess.run(["nvidia-smi"], check=True)
                    return "cuda"
                except (subprocess.SubprocessError, FileNotFoundError):
                    try:
                        subprocess.run(["rocm-smi"], check=True)
                        return "rocm"
                    except (subprocess.SubprocessError, FileNotFoundError):
                        return "cpu"
            """),
    )
    INVALID = (
        Case(
            """
            import subprocess
            out = subprocess.check_output(['nvidia-smi', '-L'])
            """,
            line=2,
            column=7,
            message="nvidia-smi does not exist on ROCm: this call fails or finds no GPU",
        ),
        # near misses of a dispatch: a probe whose failure reports nothing for AMD, a command
        # also assigned where ROCm runs, a branch on a name that says no vendor
        Case(
            """
            import subprocess

            def accelerator():
                try:
                    out = subprocess.check_output(["nvidia-smi", "--query-gpu=gpu_name", "--format=csv"])
                    return out.decode()
                except FileNotFoundError:
                    return "NA"
            """,
            line=5,
            column=15,
            message="nvidia-smi does not exist on ROCm: this call fails or finds no GPU",
        ),
        Case(
            """
            import subprocess

            def gpu_report(gpu_name):
                cmd = "nvidia-smi -q"
                if "nvidia" not in gpu_name.lower():
                    print("not an NVIDIA GPU")
                return subprocess.check_output(cmd, shell=True)
            """,
            line=7,
            column=12,
            message="nvidia-smi does not exist on ROCm: this call fails or finds no GPU",
        ),
        Case(
            """
            import subprocess

            def gpu_report(gpu_name):
                if gpu_name.startswith("GPU-"):
                    return subprocess.check_output(["nvidia-smi", "-q"])
            """,
            line=5,
            column=16,
            message="nvidia-smi does not exist on ROCm: this call fails or finds no GPU",
        ),
        Case(
            """
            import os
            os.system('nvidia-smi --query-gpu=name --format=csv')
            """,
            line=2,
            column=1,
            message="nvidia-smi does not exist on ROCm: this call fails or finds no GPU",
        ),
        Case(
            """
            import subprocess
            cmd = 'nvidia-smi -q'
            subprocess.run(cmd, shell=True)
            """,
            line=3,
            column=1,
            message="nvidia-smi does not exist on ROCm: this call fails or finds no GPU",
        ),
        Case(
            """
            import pynvml
            pynvml.nvmlInit()
            """,
            line=1,
            column=8,
            message="`pynvml` needs NVML, which does not exist on ROCm",
        ),
        Case(
            """
            from pynvml import *
            """,
            line=1,
            column=6,
            message="`pynvml` needs NVML, which does not exist on ROCm",
        ),
        Case(
            """
            from pynvml.smi import nvidia_smi
            """,
            line=1,
            column=6,
            message="`pynvml.smi` needs NVML, which does not exist on ROCm",
        ),
    )

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            name = dotted_name(alias.name) or ""
            if name.split(".", 1)[0] in NVML_MODULES and not self.gated(node):
                self._import(alias.name, name)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if node.relative or node.module is None:
            return
        name = dotted_name(node.module) or ""
        if name.split(".", 1)[0] in NVML_MODULES and not self.gated(node):
            self._import(node.module, name)

    def _tolerated(self, node: cst.CSTNode) -> bool:
        """Inside ``try:`` with a handler for ImportError (or a broader one): the code
        already copes with the module's absence."""
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, cst.Try):
                for handler in ancestor.handlers:
                    caught = {dotted_name(n) for n in walk(handler.type) if isinstance(n, (cst.Name, cst.Attribute))} \
                        if handler.type is not None else {None}
                    if caught & {None, "ImportError", "ModuleNotFoundError", "Exception", "BaseException"}:
                        return True
            if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef)):
                return False
        return False

    def _import(self, node: cst.CSTNode, name: str) -> None:
        if self._tolerated(node):
            return
        tool = "nvidia-smi" if name.split(".", 1)[0] == "GPUtil" else "NVML"
        self.display_only(node, f"`{name}` needs {tool}, which does not exist on ROCm",
                          "Use torch.cuda queries (mem_get_info, device_count, get_device_name) or amdsmi on ROCm")

    def visit_Call(self, node: cst.Call) -> None:
        if not node.args or not self.is_name(node.func, _PROCESS_CALLS):
            return
        command = node.args[0].value
        if not self._runs_nvidia_smi(command) or self.gated(node) or self._amd_fallback(node):
            return
        self.display_only(node, "nvidia-smi does not exist on ROCm: this call fails or finds no GPU",
                          "Use torch.cuda queries (mem_get_info, device_count, get_device_name) or amd-smi / "
                          "amdsmi on ROCm")

    def _amd_fallback(self, node: cst.CSTNode) -> bool:
        """Is ``node`` in the body of a ``try`` whose handler is the AMD branch (runs rocm-smi,
        amd-smi, amdsmi, rocminfo, or names ROCm): a probe whose failure on ROCm is the point?"""
        child = node
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, cst.Try) and child is ancestor.body:
                return any(any(_AMD_TOOL.search(text) for text in identifiers(handler.body))
                           for handler in ancestor.handlers)
            if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef)):
                return False
            child = ancestor
        return False

    def _runs_nvidia_smi(self, command: cst.CSTNode, depth: int = 0) -> bool:
        if isinstance(command, (cst.List, cst.Tuple)):
            return bool(command.elements) and self._runs_nvidia_smi(command.elements[0].value, depth)
        if isinstance(command, cst.Name) and depth < 2:
            # a value assigned where ROCm cannot run (the NVIDIA arm of a vendor dispatch) is no
            # command that runs there
            return any(self._runs_nvidia_smi(v, depth + 1) for v in self.values(command)
                       if ROCM in self.platforms(v))
        if isinstance(command, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
            texts = [t for t in identifiers(command) if isinstance(t, str)]
            return any(_NVIDIA_SMI.search(" " + t + " ") for t in texts)
        return False
