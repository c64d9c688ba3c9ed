"""ROC703 nvidia-management-tools: `nvidia-smi` or NVML (`pynvml`) used: they do not exist on ROCm.

The rule's documentation is its class's (`rocmport rule ROC703` prints it).
"""

from __future__ import annotations

import re

import libcst as cst

from rocmport.analysis.needs import Call, Import, String
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
        a command, and code under a ROCm or `torch.version.cuda` test.
        """
    WHY = """
        ROCm has neither `nvidia-smi` nor NVML: the call fails, or the tool is missing and the
        code silently reports no GPU, zero memory or zero utilisation (8 threads, e.g.
        ROCm/pytorch#1535).

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
        Case("print('run nvidia-smi to see the GPUs')\n"),
        Case('"""Check nvidia-smi first."""\nimport os\n'),
        Case("import subprocess\nimport torch\nif torch.version.hip:\n    subprocess.run(['amd-smi'])\n"
             "else:\n    subprocess.run(['nvidia-smi'])\n"),
        Case("import torch\nif torch.version.cuda:\n    import pynvml\n"),
        Case("import subprocess\n# subprocess.run(['nvidia-smi'])\nsubprocess.run(['ls'])\n"),
        Case("import mynvml_tools\n"),
        Case("def init():\n    try:\n        import pynvml\n    except ImportError:\n        return None\n"
             "    return pynvml\n"),
    )
    INVALID = (
        Case("import subprocess\nout = subprocess.check_output(['nvidia-smi', '-L'])\n"),
        Case("import os\nos.system('nvidia-smi --query-gpu=name --format=csv')\n"),
        Case("import subprocess\ncmd = 'nvidia-smi -q'\nsubprocess.run(cmd, shell=True)\n"),
        Case("import pynvml\npynvml.nvmlInit()\n"),
        Case("from pynvml import *\n"),
        Case("from pynvml.smi import nvidia_smi\n"),
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
        if not self._runs_nvidia_smi(command) or self.gated(node):
            return
        self.display_only(node, "nvidia-smi does not exist on ROCm: this call fails or finds no GPU",
                          "Use torch.cuda queries (mem_get_info, device_count, get_device_name) or amd-smi / "
                          "amdsmi on ROCm")

    def _runs_nvidia_smi(self, command: cst.CSTNode, depth: int = 0) -> bool:
        if isinstance(command, (cst.List, cst.Tuple)):
            return bool(command.elements) and self._runs_nvidia_smi(command.elements[0].value, depth)
        if isinstance(command, cst.Name) and depth < 2:
            return any(self._runs_nvidia_smi(v, depth + 1) for v in self.values(command))
        if isinstance(command, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
            texts = [t for t in identifiers(command) if isinstance(t, str)]
            return any(_NVIDIA_SMI.search(" " + t + " ") for t in texts)
        return False
