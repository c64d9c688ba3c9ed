"""ROC712 device-query-at-import: a device query that initialises the GPU runtime when the
module is imported, or before the function sets the visible devices.

The rule's documentation is its class's (`rocmport rule ROC712` prints it).
"""

from __future__ import annotations

import ast
import re
from typing import Iterator, List, Optional, Set, Tuple

import libcst as cst

from rocmport.analysis import effects as _effects
from rocmport.analysis import gates
from rocmport.analysis.bindings import dotted as _dotted_ast, top_level
from rocmport.analysis.cuda_only import imported_names
from rocmport.analysis.names import qualified_names
from rocmport.analysis.needs import Call, Identifier, identifiers, strings
from rocmport.analysis.platforms import ROCM, other_accelerator_path
from rocmport.analysis.syntax import dotted_name, literal_string
from rocmport.analysis.walk import children as _children
from rocmport.findings import Applicability, Fix
from rocmport.rules.base import Case

from .common import VendorRule, nvidia_named

VISIBILITY = frozenset({"CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"})
_QUERIES = _effects.QUERIES | {_effects.IS_AVAILABLE}
# Methods that query the device on the objects projects hand torch.cuda through (a device
# module, a platform, an accelerator): read only beside a write of the visible devices.
_QUERY_METHODS = frozenset({"get_device_name", "get_device_properties", "get_device_capability", "current_device",
                            "device_count", "mem_get_info", "is_available", "set_device"})
_ENVIRON = frozenset({"os.environ"})
_PUTENV = frozenset({"os.putenv", "os.unsetenv"})
_INITIALIZED = frozenset({"torch.cuda.is_initialized"})
_ENV_READS = frozenset({"os.getenv", "os.environ", "os.environ.get"})
# a test module: by its name, or a module of a tests/ folder
_TEST_PATH = re.compile(r"(?:^|/)(?:tests?|testing)/|(?:^|/)(?:test_[^/]*|[^/]*_test|conftest)\.pyi?$")
_LAZY = ("query on first use instead: a `functools.cache` function called where the value is needed (or a module"
         " global filled on the first call)")


_CAPABILITY_MESSAGE = ("`torch.cuda.get_device_capability()` runs when this module is imported and initialises the"
                       " GPU runtime (HIP on ROCm): a launcher or Ray actor that sets `HIP_VISIBLE_DEVICES` /"
                       " `CUDA_VISIBLE_DEVICES` after the import no longer changes which GPUs the process sees, and"
                       " `fork()`ed workers cannot use the GPU: query on first use instead: a `functools.cache`"
                       " function called where the value is needed (or a module global filled on the first call)")
_COUNT_MESSAGE = ("`torch.cuda.device_count()` runs when this module is imported and counts the GPUs: on ROCm torch"
                  " counts them through the `amdsmi` package and, where it is not installed, through"
                  " `hipGetDeviceCount`, which initialises HIP (on CUDA, NVML counts without initialising anything): a"
                  " launcher or Ray actor that sets `HIP_VISIBLE_DEVICES` / `CUDA_VISIBLE_DEVICES` after the import no"
                  " longer changes which GPUs the process sees: query on first use instead: a `functools.cache`"
                  " function called where the value is needed (or a module global filled on the first call)")


class DeviceQueryAtImport(VendorRule):
    CODE = "ROC712"
    NAME = "device-query-at-import"
    SUMMARY = "A device query initialises the GPU runtime at import, or before the visible devices are set."
    # A finding may sit at a call of the project's own wrapper (another module's, a name no
    # Call need can list): the need is an identifier spelled as a query or a query method
    # (the wrapper's name, ``p.get_device_name()``), a call of torch.cuda.init, or an
    # accelerator object's query method beside ``get_accelerator`` (DeepSpeed's). The derived
    # ``may_match`` would send every such file to LibCST; the hand-written one asks the index
    # (36 s of CPU on the torch package for the whole-file prefilter, 8 with this one:
    # ``benchmarks/bench.py``).
    NEEDS = (Identifier(*sorted({n.rsplit(".", 1)[-1] for n in _QUERIES} - {"init"} | _QUERY_METHODS))
             | Call("torch.cuda.init")
             | Identifier(*sorted(_effects.ACCELERATOR_QUERIES)) & Identifier(_effects.ACCELERATOR_FACTORY))
    FIX_APPLICABILITY = Applicability.DISPLAY_ONLY
    WHAT = """
        Two shapes.

        At import: a call that initialises the GPU runtime, run when the module is imported:
        at module level (also inside module-level `if` / `try` / `with` / loops), in a class
        body, in a decorator or a default argument value, or inside a function of the module
        (or, through the project index, of another module of the project) that one of those
        calls. The calls: `torch.cuda.get_device_properties`, `get_device_capability`,
        `get_device_name`, `current_device`, `mem_get_info`, `set_device`, `torch.cuda.init`,
        Triton's `triton.runtime.driver.active.get_current_target()` and, for ROCm,
        `torch.cuda.device_count()`; and the methods of the accelerator object that
        DeepSpeed's `get_accelerator()` returns (imported from `deepspeed.accelerator`, or from
        the project's own module named `accelerator`, as DeepSpeed's `op_builder` does), called
        on its result (`get_accelerator().is_triton_supported()`) or on a module-level name bound
        to it, that make one of those queries on the object ROCm gets, `CUDA_Accelerator`:
        `is_triton_supported`, `is_fp16_supported` and `supported_dtypes`
        (`get_device_capability`), `total_memory` and `available_memory`
        (`get_device_properties`; ROCm has no NVML), `current_device`, `current_device_name`,
        `set_device`. The finding is at the call that runs at import (where a
        helper does the query, at the helper's call, naming the query). A helper of another
        module is looked for where the file's code spells one of those names, or a method of
        such a name (the project's own `get_device_capability()` wrapper, say; a comment or
        a string does not count): reading every file of a project for
        helpers of any name costs a fifth of a lint of the torch package, so a differently
        named helper of another module is not followed (one of the same module is).

        Before the visible devices are set: in one function (or at module level), a device
        query -- the calls above, `torch.cuda.is_available()`, a method of that name on any
        object (`get_torch_device().get_device_name()`, `platform.device_count()`), a helper
        that makes one -- that comes before a write of `os.environ["CUDA_VISIBLE_DEVICES"]`,
        `["HIP_VISIBLE_DEVICES"]` or `["ROCR_VISIBLE_DEVICES"]` (assignment, `del`, `pop`,
        `setdefault`, `update`, `os.putenv`) on the same path.

        Not reported: files named for NVIDIA alone (`gemm_sm90.py`, `nvidia.py`; a file named
        for ROCm is checked: it runs on ROCm), modules the project imports only off ROCm (each
        import of it under a test that excludes ROCm: `if SYSTEM == "cuda": from .cuda import
        ...`, and no import of it elsewhere) and the modules of another accelerator's backend
        tree (`backend/_kunlunxin/`, `npu/`: never imported on an AMD GPU); code under `if __name__ == "__main__":`, in
        files that have one, in files that begin with `#!`, in `setup.py`, and in files whose
        own top level parses the command line or joins a process group (`args =
        parser.parse_args()`, `dist.init_process_group(...)`: a script `torchrun` starts; a
        script's module level is its start, not an import), and in a script of statements
        that nothing imports (it defines no function or class, is in no package, and no other
        module of the project names it: `examples/generate.py`); test files (`test_*.py`, `*_test.py`,
        `conftest.py`, the modules of a `tests/` folder: pytest imports them to collect, and
        their capability checks are how tests are skipped); a query in a function no
        import-time code calls (lazy: `functools.cache`, `if _cap is None: _cap = ...`); a
        query under `if torch.cuda.is_initialized():` or in a function that tests it (it asks
        a runtime already up); a query that an environment variable turns on
        (`os.getenv("USE_X") and ...`, `if os.environ.get(...):`); code that never runs on
        ROCm (`if not torch.version.hip:`, and inside a helper: after `if is_rocm(): return`,
        right of `is_cuda() and`, under `if torch.version.cuda:`, as the platform analysis
        reads those tests); `torch.cuda.is_available()` at import (everywhere, and the same
        on both vendors: see below), and so a `device_count()` at import after one (HIP is
        already up there), or after an import of a project module whose own import makes a
        device query (reported there); only a query that calls `_lazy_init()` is reported
        after it. Of an
        accelerator object, the methods that make no such query: `device_name()` and
        `communication_backend_name()` (strings), `memory_allocated()` and the other
        allocator statistics (`{}` before the runtime is up), `is_available()`,
        `is_bf16_supported()` (`is_available()` alone on ROCm) and `device_count()` (to choose
        the object, `get_accelerator()` has already counted the devices and called
        `is_available()`); and a `get_accelerator` of a module not named `accelerator`, or the
        module's own function of that name.
        """
    WHY = """
        The GPU runtime reads the visible devices once, when it is initialised: on ROCm
        `ROCR_VISIBLE_DEVICES` when ROCr starts and `HIP_VISIBLE_DEVICES` /
        `CUDA_VISIBLE_DEVICES` when HIP starts. A Ray actor, a launcher or a worker that sets
        them after importing a module that already initialised the runtime changes nothing:
        every worker sees the devices of the parent, and ranks collide or hit "invalid device
        ordinal". ROCm ports meet this more than CUDA ones, because Ray hands AMD GPUs out as
        `ROCR_VISIBLE_DEVICES` / `HIP_VISIBLE_DEVICES` that frameworks rewrite in the process
        (verl-project/verl#1465: the "[SUPPORT AMD]" blocks that copied
        `ROCR_VISIBLE_DEVICES` into `CUDA_VISIBLE_DEVICES` after `torch.cuda.is_available()`
        and `get_device_name()` were no-ops; OpenRLHF/OpenRLHF#895, radixark/miles#1233,
        meta-pytorch/torchforge#725). A runtime initialised by `torch.cuda._lazy_init()` also
        makes `fork()`ed workers fail with "Cannot re-initialize CUDA in forked subprocess"
        (deepspeedai/DeepSpeed#7918; #8078 removed the import-time
        `get_device_capability()` and `get_device_properties(0)` calls, among them
        `ds_transformer.py`'s module-level `if deepspeed.HAS_TRITON and
        get_accelerator().is_triton_supported():`, which reads the capability whenever Triton
        is installed, as it always is beside a ROCm torch; #7252).

        What each call does, on torch 2.13 (`torch/cuda/__init__.py`; checked on torch 2.11
        on an H100: a query, then `CUDA_VISIBLE_DEVICES=""`, then a tensor on the GPU, which
        is created only when the runtime was up before): `get_device_properties` calls
        `_lazy_init()` (line 737), and `get_device_capability` and `get_device_name` call it;
        `current_device` calls `_lazy_init()` (line 1205), `mem_get_info` calls
        `current_device()` (`torch/cuda/memory.py` line 859), `set_device` initialises the
        device in C++ (`torch._C._cuda_setDevice`, line 689); Triton's `get_current_target()`
        initialises it too (checked). `is_available()` returns
        `torch._C._cuda_getDeviceCount() > 0` (line 188: `cudaGetDeviceCount` /
        `hipGetDeviceCount`), which initialises the driver although
        `torch.cuda.is_initialized()` stays False (checked), unless
        `PYTORCH_NVML_BASED_CUDA_CHECK=1`. `device_count()` asks NVML on CUDA and initialises
        nothing there (checked), but on ROCm it asks `_device_count_amdsmi()` (line 1167),
        which returns -1 where the `amdsmi` package cannot be imported (`_HAS_AMDSMI`, line
        933), and then falls back to `torch._C._cuda_getDeviceCount()` (line 1170):
        `hipGetDeviceCount`, which initialises HIP. A call that is safe at import on CUDA is
        not on ROCm.
        """
    EXAMPLE = """
        import torch

        _MAJOR, _MINOR = torch.cuda.get_device_capability()

        def use_fp8():
            return (_MAJOR, _MINOR) >= (9, 4)
        """
    FIX = """
        Display-only: query on first use instead of at import -- a `functools.cache` function
        called where the value is needed (or a module global filled on the first call, under
        `if _cap is None:`). In a function that sets the visible devices, set every
        `*_VISIBLE_DEVICES` variable first and query the device after. The queries a module
        makes at import are one decision (its import brings the runtime up at the first, and
        making them lazy is one change): reported once, at the first, with the others as
        related locations.
        """
    VALID = (
        # lazy: a cached function, called where the value is needed
        Case("""
            import functools
            import torch

            @functools.cache
            def capability():
                return torch.cuda.get_device_capability()

            def use_fp8():
                return capability() >= (9, 4)
            """),
        # a module global filled on the first call
        Case("""
            import torch

            _cap = None

            def kernel_config():
                global _cap
                if _cap is None:
                    _cap = torch.cuda.get_device_capability()
                return _cap
            """),
        # a script's entry point
        Case("""
            import torch

            if __name__ == "__main__":
                print(torch.cuda.get_device_name())
            """),
        # asks a runtime already up
        Case("""
            import torch

            def major():
                if not torch.cuda.is_initialized():
                    return None
                return torch.cuda.get_device_properties(0).major

            MAJOR = major()
            """),
        # is_available at import: everywhere, the same on both vendors
        Case("""
            import torch

            DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
            """),
        # never on ROCm
        Case("""
            import torch

            if torch.version.hip is None:
                SM = torch.cuda.get_device_capability()
            """),
        # the visible devices set first, the device queried after
        Case("""
            import os
            import torch

            def setup(local_rank):
                os.environ["CUDA_VISIBLE_DEVICES"] = os.environ.pop("ROCR_VISIBLE_DEVICES", "0")
                torch.cuda.set_device(local_rank)
            """),
        # turned on by an environment variable: runs only where the user asked for it
        Case("""
            import os
            import torch

            FAST = os.getenv("USE_FAST_KERNELS") == "1" and torch.cuda.get_device_capability()[0] >= 9
            """),
        # HIP is already up (is_available ran first): device_count adds nothing
        Case("""
            import torch

            HAS_GPU = torch.cuda.is_available()
            GPUS = [f"cuda:{i}" for i in range(torch.cuda.device_count())] if HAS_GPU else []
            """),
        # a helper that leaves before the query on ROCm
        Case("""
            import torch

            def nvcc_arch_list():
                if not torch.version.cuda:
                    return None
                return [torch.cuda.get_device_capability(i) for i in range(torch.cuda.device_count())]

            ARCHS = nvcc_arch_list()
            """),
        # a script
        Case("""
            #!/usr/bin/env python3
            import torch

            print("GPU:", torch.cuda.get_device_name())
            """),
        # a module the project imports only off ROCm (its importer's `else` holds the ROCm path)
        Case("""
            import torch

            MAJOR, MINOR = torch.cuda.get_device_capability()
            """, path="pkg/attention/backend_cuda.py",
             files=(("pkg/__init__.py", ""), ("pkg/attention/__init__.py", """
                 import torch

                 if torch.version.hip is None:
                     from .backend_cuda import MAJOR
                 else:
                     MAJOR = 9
                 """))),
        # HIP is already up: the import of a project module that queries at its import came first
        Case("""
            import torch

            from .cext import CAP

            N_GPUS = torch.cuda.device_count()
            """, path="pkg/functional.py",
             files=(("pkg/__init__.py", ""), ("pkg/cext.py", "import torch\n\nCAP = torch.cuda.get_device_capability()\n"))),
        # a script of statements in no package, that no module of the project names
        Case("""
            import torch

            n_gpus = torch.cuda.device_count()
            max_memory = {i: f"{int(torch.cuda.mem_get_info()[0] / 1024**3) - 2}GB" for i in range(n_gpus)}
            print(max_memory)
            """, path="examples/generate.py", files=(("lib/__init__.py", ""), ("lib/core.py", "X = 1\n"))),
        # a script torchrun starts, without a guard: it joins its process group at module level
        Case("""
            import os
            import torch
            import torch.distributed as dist

            device = torch.device("cuda", int(os.environ["LOCAL_RANK"]))
            torch.cuda.set_device(device)
            dist.init_process_group(backend="nccl", device_id=device)
            """),
        Case("""
            import argparse
            import torch

            parser = argparse.ArgumentParser()
            args = parser.parse_args()
            torch.cuda.set_device(0)
            """),
        # the words in a string and a comment; a look-alike method of another object
        Case("""
            import torch

            # CAP = torch.cuda.get_device_capability()
            HELP = "call torch.cuda.get_device_properties(0) to see the GPU"

            class Registry:
                def device_count(self):
                    return 0

            N = Registry().device_count()
            """),
        # an accelerator object's methods that query nothing, or only what the factory asked
        Case("""
            from deepspeed.accelerator import get_accelerator

            DEVICE = get_accelerator().device_name()
            BACKEND = get_accelerator().communication_backend_name()
            ALLOCATED = get_accelerator().memory_allocated()
            LOCAL_GPUS = get_accelerator().device_count()
            """),
        # the query in a function that import-time code does not call
        Case("""
            from deepspeed.accelerator import get_accelerator

            def use_triton(config):
                return config.use_triton and get_accelerator().is_triton_supported()
            """),
        # not an accelerator factory's object: another library's, the module's own function
        Case("""
            from accelerate import Accelerator
            from mylib.hardware import get_accelerator as hardware

            def get_accelerator():
                return Accelerator()

            MEMORY = hardware().total_memory()
            DEVICE = get_accelerator().current_device()
            """),
    )
    INVALID = (
        # near miss: imported under a test that lets ROCm through
        Case("""
            import torch

            MAJOR, MINOR = torch.cuda.get_device_capability()
            """, path="pkg/attention/backend_cuda.py",
             files=(("pkg/__init__.py", ""), ("pkg/attention/__init__.py", """
                 import torch

                 if torch.cuda.is_available():
                     from .backend_cuda import MAJOR
                 """)),
             line=3, column=16,
             message=_CAPABILITY_MESSAGE),
        # near misses of an import that brought HIP up: the count comes before it, or the module
        # imported queries only in a function
        Case("""
            import torch

            N_GPUS = torch.cuda.device_count()

            from .cext import CAP
            """, path="pkg/functional.py",
             files=(("pkg/__init__.py", ""), ("pkg/cext.py", "import torch\n\nCAP = torch.cuda.get_device_capability()\n")),
             line=3, column=10, message=_COUNT_MESSAGE),
        Case("""
            import torch

            from .cext import cap

            N_GPUS = torch.cuda.device_count()
            """, path="pkg/functional.py",
             files=(("pkg/__init__.py", ""),
                    ("pkg/cext.py", "import torch\n\n\ndef cap():\n    return torch.cuda.get_device_capability()\n")),
             line=5, column=10, message=_COUNT_MESSAGE),
        # statements in no package, as a script is, but another module of the project imports it
        Case("""
            import torch

            N_GPUS = torch.cuda.device_count()
            """, path="settings.py", files=(("train.py", "import settings\n\nprint(settings.N_GPUS)\n"),),
             line=3, column=10, message=_COUNT_MESSAGE),
        Case("""
            import torch

            _MAJOR, _MINOR = torch.cuda.get_device_capability()
            """, line=3, column=18,
             message=_CAPABILITY_MESSAGE),
        # a library that joins the process group in a function: its module level is an import
        Case("""
            import torch
            import torch.distributed as dist

            def setup():
                dist.init_process_group("nccl")

            CAP = torch.cuda.get_device_capability()
            """, line=7, column=7,
             message=_CAPABILITY_MESSAGE),
        Case("""
            import torch

            def _arch():
                return torch.cuda.get_device_properties(0).gcnArchName

            class Config:
                arch = _arch()
            """, line=7, column=12,
             message="`_arch()` runs when this module is imported and calls `torch.cuda.get_device_properties()` (line "
                     "4), which initialises the GPU runtime (HIP on ROCm): a launcher or Ray actor that sets "
                     "`HIP_VISIBLE_DEVICES` / `CUDA_VISIBLE_DEVICES` after the import no longer changes which GPUs the "
                     "process sees, and `fork()`ed workers cannot use the GPU: query on first use instead: a "
                     "`functools.cache` function called where the value is needed (or a module global filled on the "
                     "first call)"),
        Case("""
            import torch

            NUM_GPUS = torch.cuda.device_count()
            """, line=3, column=12,
             message="`torch.cuda.device_count()` runs when this module is imported and counts the GPUs: on ROCm torch "
                     "counts them through the `amdsmi` package and, where it is not installed, through "
                     "`hipGetDeviceCount`, which initialises HIP (on CUDA, NVML counts without initialising anything): "
                     "a launcher or Ray actor that sets `HIP_VISIBLE_DEVICES` / `CUDA_VISIBLE_DEVICES` after the import "
                     "no longer changes which GPUs the process sees: query on first use instead: a `functools.cache` "
                     "function called where the value is needed (or a module global filled on the first call)"),
        Case("""
            import os
            import torch

            class Worker:
                def __init__(self):
                    if torch.cuda.is_available() and "AMD" in torch.cuda.get_device_name():
                        os.environ["CUDA_VISIBLE_DEVICES"] = os.environ["ROCR_VISIBLE_DEVICES"]
            """, line=6, column=12,
             message="`torch.cuda.is_available()` initialises the GPU runtime (`cudaGetDeviceCount` / "
                     "`hipGetDeviceCount`; `torch.cuda.is_initialized()` still says False) before line 7 sets "
                     "`CUDA_VISIBLE_DEVICES`: the runtime has already read the visible devices, so the new value has no "
                     "effect in this process (every worker keeps the devices it started with): set the "
                     "`*_VISIBLE_DEVICES` variables first and query the device after"),
        Case("""
            import os
            from utils import get_torch_device

            def init_worker(rank):
                name = get_torch_device().get_device_name()
                os.environ.update({"HIP_VISIBLE_DEVICES": str(rank)})
            """, line=5, column=12,
             message="`get_torch_device().get_device_name()` queries the device, which initialises the GPU runtime "
                     "before line 6 sets `HIP_VISIBLE_DEVICES`: the runtime has already read the visible devices, so "
                     "the new value has no effect in this process (every worker keeps the devices it started with): set "
                     "the `*_VISIBLE_DEVICES` variables first and query the device after"),
        # deepspeedai/DeepSpeed#8078: ds_transformer.py, read by `import deepspeed`
        Case("""
            import deepspeed
            from deepspeed.accelerator import get_accelerator

            if deepspeed.HAS_TRITON and get_accelerator().is_triton_supported():
                from deepspeed.ops.triton import attention
            """, line=4, column=29,
             message="`get_accelerator().is_triton_supported()` runs when this module is imported and, on the CUDA "
                     "accelerator object that ROCm gets, calls `torch.cuda.get_device_capability()`, which initialises "
                     "the GPU runtime (HIP on ROCm): "
                     "a launcher or Ray actor that sets `HIP_VISIBLE_DEVICES` / `CUDA_VISIBLE_DEVICES` after the import no "
                     "longer changes which GPUs the process sees, and `fork()`ed workers cannot use the GPU: query on "
                     "first use instead: a `functools.cache` function called where the value is needed (or a module "
                     "global filled on the first call)"),
        # the project's own accelerator module, through a module-level name and a helper a
        # class body calls
        Case("""
            from accelerator import get_accelerator

            _ACCELERATOR = get_accelerator()

            def _budget():
                return _ACCELERATOR.total_memory() // 2

            class Planner:
                budget = _budget()
            """, line=9, column=14,
             message="`_budget()` runs when this module is imported and calls `_ACCELERATOR.total_memory()` (line 6), "
                     "which initialises the GPU runtime (HIP on ROCm): "
                     "a launcher or Ray actor that sets `HIP_VISIBLE_DEVICES` / `CUDA_VISIBLE_DEVICES` after the import no "
                     "longer changes which GPUs the process sees, and `fork()`ed workers cannot use the GPU: query on "
                     "first use instead: a `functools.cache` function called where the value is needed (or a module "
                     "global filled on the first call)"),
        Case("""
            import os
            from deepspeed.accelerator import get_accelerator

            def launch(rank):
                use_triton = get_accelerator().is_triton_supported()
                os.environ["HIP_VISIBLE_DEVICES"] = str(rank)
            """, line=5, column=18,
             message="`get_accelerator().is_triton_supported()` queries the device, which initialises the GPU runtime "
                     "before line 6 sets `HIP_VISIBLE_DEVICES`: the runtime has already read the visible devices, so "
                     "the new value has no effect in this process (every worker keeps the devices it started with): set "
                     "the `*_VISIBLE_DEVICES` variables first and query the device after"),
    )

    def __init__(self, context):
        super().__init__(context)
        self._module: Optional[cst.Module] = None
        self._reported: Set[int] = set()

    @classmethod
    def may_match(cls, facts) -> bool:
        """The rule's two shapes, asked of CPython's tree: a call run at import that is a
        device query or calls a function (of this module, or of the project through the
        index) that makes one; or a write of the visible devices in a file that makes a
        device query (by name, or a method of that name)."""
        if facts.tree is None:
            return True
        if not cls.NEEDS.holds(facts) or other_accelerator_path(facts.path or ""):
            return False
        if not VISIBILITY.isdisjoint(strings(facts)) and (
                any(facts.calls_to(_QUERIES)) or not _QUERY_METHODS.isdisjoint(facts.calls)
                or not _effects.ACCELERATOR_QUERIES.keys().isdisjoint(facts.calls)):
            return True
        path = (facts.path or "").replace("\\", "/")
        if _TEST_PATH.search(path) or nvidia_named(path) or path.rsplit("/", 1)[-1] == "setup.py":
            return False
        return _import_time_query(facts)

    @classmethod
    def reach(cls, facts):
        """What the rule reads of a definition: a query (a spelling of one), a write of the
        environment, or a call of a function (of this module, or imported from the project)
        that queries the device -- its helpers are read on CPython's tree."""
        if facts.tree is None:
            return None
        memo = facts.memo.get("vendor_checks:712:reach")
        if memo is None:
            words = set(facts.spellings(_QUERIES)) | {"get_current_target", "environ", "putenv", "unsetenv",
                                                      _effects.ACCELERATOR_FACTORY}
            index = facts.index
            if facts.path is not None:
                from rocmport.analysis.index import ProjectIndex

                index = index if index is not None else ProjectIndex([facts.path])
                name = index.module_name(facts.path) or "__main__"
                own = _effects.ModuleFacts(name, facts.tree, lambda module, level: index.absolute(name, module, level),
                                           index.effects, index.compiler, index.platform_test)
                for local in list(own.functions) + list(own.classes):
                    if own.effects(local).query is not None:
                        words.add(local)
                words |= own.accelerators  # ``_acc.total_memory()``
                for bound, full in own.imports.items():
                    if bound not in facts.names or full.split(".", 1)[0] in ("torch", "os", "sys", "functools"):
                        continue
                    if index.path_of(full) is not None:
                        words.add(bound)  # a module of the project: its functions are called as bound.f()
                    elif index.path_of(full.rpartition(".")[0]) is not None and index.effects(full).query is not None:
                        words.add(bound)  # a function of the project that queries the device
            memo = facts.memo["vendor_checks:712:reach"] = frozenset(words)
        return memo

    def visit_Module(self, node: cst.Module) -> None:
        self._module = node

    def leave_Module(self, original_node: cst.Module) -> None:
        path = self.context.path or ""
        if self.context.facts is None or nvidia_named(path) or other_accelerator_path(path):
            return
        script = (_has_main_guard(original_node) or self.context.text.startswith("#!")
                  or path.replace("\\", "/").rsplit("/", 1)[-1] == "setup.py"
                  or _starts_a_program(getattr(self.context.facts.tree, "body", []))
                  or _plain_script(self.context))
        if not script and not _TEST_PATH.search(path.replace("\\", "/")):
            self._import_time(original_node)
        if not VISIBILITY.isdisjoint(strings(self.context.facts)):
            self._before_visibility(original_node)

    # -- the project's facts (this module from its tree, others through the index) ---------
    def _own(self):
        def build(ctx):
            from rocmport.analysis.index import ProjectIndex

            index = ctx.index if ctx.index is not None else ctx.shared("own_index", lambda c: ProjectIndex([c.path]))
            name = index.module_name(ctx.path) or "__main__"
            own = _effects.ModuleFacts(name, ctx.facts.tree, lambda module, level: index.absolute(name, module, level),
                                       index.effects, index.compiler, index.platform_test)
            return index, own
        return self.context.shared("rocmport.effects.own", build)

    def _helper_effects(self, func: cst.BaseExpression) -> _effects.Effects:
        """What calling ``func`` does on ROCm when it is a function (or class) of this module
        or of the project: its device queries, through its own calls."""
        spelled = dotted_name(func)
        if spelled is None:
            return _effects.NONE
        index, own = self._own()
        root, _, rest = spelled.partition(".")
        if not rest and root not in own.imports:
            if root in own.functions or root in own.classes:
                return own.effects(root)
            return _effects.NONE
        full = own.resolve(_ast_name(spelled))
        if full is None or full.split(".", 1)[0] in ("torch", "os", "sys", "functools", "builtins"):
            return _effects.NONE
        return index.effects(full)

    def _query(self, call: cst.Call) -> Optional[str]:
        names = qualified_names(self, call.func, _QUERIES) & _QUERIES
        return min(names) if names else None

    def _accelerator_method(self, call: cst.Call) -> Optional[str]:
        """The device query ``call`` makes as a method of the object an accelerator factory
        returns (``get_accelerator().total_memory()``, or through a module-level name bound
        to ``get_accelerator()``), or None."""
        func = call.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in _effects.ACCELERATOR_QUERIES:
            return None
        value = func.value
        if isinstance(value, cst.Call):
            if any(_effects.accelerator_factory(n) for n in qualified_names(self, value.func)):
                return func.attr.value
        elif isinstance(value, cst.Name) and value.value in self._own()[1].accelerators \
                and qualified_names(self, value) == {value.value}:  # the module's name, not a local one
            return func.attr.value
        return None

    # -- at import -----------------------------------------------------------------------
    def _import_time(self, module: cst.Module) -> None:
        # Once ``is_available()`` (``hipGetDeviceCount``) has run at import, HIP is up and a
        # later ``device_count()`` changes nothing: only a ``_lazy_init()`` query is then news.
        # So it is after an import of a project module whose own import makes a query.
        available = False
        up: List[int] = []  # the line of the first such import, found on first need (0: none)

        def already_up(call: cst.Call) -> bool:
            if not up:
                up.append(self._queried_by_import())
            return 0 < up[0] < self.context.position(call).start.line

        for call in _import_time_calls(module.body):
            if id(call) in self._reported:
                continue
            name = self._query(call)
            if name is not None:
                if ROCM not in self.platforms(call):
                    continue
                if name == _effects.IS_AVAILABLE:
                    available = True
                elif not self._skipped(call) and (name in _effects.LAZY_INIT or not (available or already_up(call))):
                    self._report_import(call, f"`{_callee(self, call)}()`", name)
                continue
            method = self._accelerator_method(call)
            if method is not None:
                if ROCM in self.platforms(call) and not self._skipped(call):
                    query = _effects.ACCELERATOR_QUERIES[method]
                    self._report_import(call, f"`{_callee(self, call)}()` runs when this module is imported and,"
                                              " on the CUDA accelerator object that ROCm gets, calls"
                                              f" `{query}()`, which", query, helper=True)
                continue
            found = self._helper_effects(call.func)
            if found.query is None or ROCM not in self.platforms(call):
                continue
            site = found.init or (found.query if found.query.what == _effects.DEVICE_COUNT
                                  and not (available or already_up(call)) else None)
            if found.query.what == _effects.IS_AVAILABLE:
                available = True
            if site is None or self._skipped(call):
                continue
            where = f"line {site.line}" + ("" if site.module == self._own()[1].name else f" of `{site.module}`")
            self._report_import(call, f"`{_callee(self, call)}()` runs when this module is imported and calls"
                                      f" `{site.what}()` ({where}), which", site.what, helper=True)

    def _queried_by_import(self) -> int:
        """The line of the first top-level import of a project module whose own import makes a
        device query (``effects.IMPORT``, through the project index), or 0."""
        index, own = self._own()
        for stmt in getattr(self.context.facts.tree, "body", []):
            modules = imported_names(stmt, lambda module, level: index.absolute(own.name, module, level))
            if any(index.path_of(m) is not None and index.effects(f"{m}.{_effects.IMPORT}").query is not None
                   for m in modules):
                return stmt.end_lineno or stmt.lineno
        return 0

    def _skipped(self, call: cst.Call) -> bool:
        """A query that asks a runtime already up, or one that an environment variable turns
        on (``os.getenv("USE_X") and ...``: it runs only where the user asked for it)."""
        return self._initialized_guard(call) or self._env_gated(call)

    def _env_gated(self, node: cst.CSTNode) -> bool:
        child = node
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, (cst.If, cst.IfExp)) and child is not ancestor.test and self._reads_env(
                    ancestor.test):
                return True
            if isinstance(ancestor, cst.BooleanOperation) and child is ancestor.right \
                    and isinstance(ancestor.operator, cst.And) and self._reads_env(ancestor.left):
                return True
            if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef)):
                return False
            child = ancestor
        return False

    def _reads_env(self, test: cst.BaseExpression) -> bool:
        for node in _walk(test):
            if isinstance(node, (cst.Call, cst.Subscript, cst.Attribute, cst.Name)):
                target = node.func if isinstance(node, cst.Call) else node.value if isinstance(
                    node, cst.Subscript) else node
                spelled = dotted_name(target) or ""
                if spelled.endswith("getenv") or spelled.endswith("environ") or spelled.endswith("environ.get"):
                    if qualified_names(self, target, _ENV_READS) & _ENV_READS:
                        return True
        return False

    def _report_import(self, call: cst.Call, text: str, name: str, helper: bool = False) -> None:
        self._reported.add(id(call))
        if ROCM not in gates.of(self.context).imported_on():
            return  # the project imports the module only off ROCm (`if SYSTEM == "cuda": from .cuda import ...`)
        runs = f"{text}" if helper else f"{text} runs when this module is imported and"
        if name == _effects.DEVICE_COUNT:
            message = (f"{runs} counts the GPUs: on ROCm torch counts them through the"
                       " `amdsmi` package and, where it is not installed, through `hipGetDeviceCount`, which"
                       " initialises HIP (on CUDA, NVML counts without initialising anything): a launcher or Ray actor"
                       " that sets `HIP_VISIBLE_DEVICES` / `CUDA_VISIBLE_DEVICES` after the import no longer changes"
                       f" which GPUs the process sees: {_LAZY}")
        else:
            message = (f"{runs} initialises the GPU runtime (HIP on ROCm): a launcher or Ray actor that sets"
                       " `HIP_VISIBLE_DEVICES` / `CUDA_VISIBLE_DEVICES` after the import no longer changes which GPUs"
                       f" the process sees, and `fork()`ed workers cannot use the GPU: {_LAZY}")
        # one decision per module: its import brings the runtime up at the first of them, and
        # making the queries lazy is one change (the others are its related locations)
        self.report(call, message, fix=Fix(Applicability.DISPLAY_ONLY,
                                           "Query the device on first use (functools.cache), not at import"),
                    decision="queries at import")

    def _initialized_guard(self, node: cst.CSTNode) -> bool:
        """Under ``if torch.cuda.is_initialized():`` (or after ``if not ...: return``)."""
        child = node
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, (cst.If, cst.IfExp)) and child is ancestor.body and self._tests_initialized(
                    ancestor.test, positive=True):
                return True
            if isinstance(ancestor, cst.BooleanOperation) and child is ancestor.right \
                    and isinstance(ancestor.operator, cst.And) and self._tests_initialized(ancestor.left, True):
                return True
            child = ancestor
        return self.earlier_exit(node, lambda test: self._tests_initialized(test, positive=False))

    def _tests_initialized(self, test: cst.BaseExpression, positive: bool) -> bool:
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            return self._tests_initialized(test.expression, not positive)
        if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And) and positive:
            return self._tests_initialized(test.left, True) or self._tests_initialized(test.right, True)
        return positive and isinstance(test, cst.Call) and bool(
            qualified_names(self, test.func, _INITIALIZED) & _INITIALIZED)

    # -- before the visible devices are set ------------------------------------------------
    def _before_visibility(self, module: cst.Module) -> None:
        for body in _bodies(module):
            writes: List[Tuple[cst.CSTNode, str]] = []
            calls: List[cst.Call] = []  # the calls that write nothing: queries, maybe
            for node in _own_nodes(body):
                if isinstance(node, cst.Call):
                    what = self._visibility_write_call(node)
                    if what is not None:
                        writes.append((node, what))
                    else:
                        calls.append(node)
                elif isinstance(node, (cst.Assign, cst.AugAssign, cst.AnnAssign, cst.Del)):
                    what = self._visibility_write_statement(node)
                    if what is not None:
                        writes.append((node, what))
            if not writes:
                continue  # no query here is asked what it is
            for node in calls:
                what = self._any_query(node) if id(node) not in self._reported else None
                if what is None:
                    continue
                start = self._offset(node)
                later = [(n, w) for n, w in writes if self._offset(n) > start and not self._exclusive(node, n)]
                if not later or ROCM not in self.platforms(node) or self._initialized_guard(node):
                    continue
                write, variable = later[0]
                self._reported.add(id(node))
                self.display_only(node, self._visibility_message(node, what, write, variable),
                                  "Set the *_VISIBLE_DEVICES variables first, query the device after")
                break  # once per function: the first query before a write

    def _visibility_message(self, node: cst.Call, what: str, write: cst.CSTNode, variable: str) -> str:
        line = self.context.position(write).start.line
        head = f"`{_callee(self, node)}()`"
        if what == _effects.IS_AVAILABLE:
            how = (" initialises the GPU runtime (`cudaGetDeviceCount` / `hipGetDeviceCount`; `torch.cuda"
                   ".is_initialized()` still says False)")
        elif what == _effects.DEVICE_COUNT:
            how = (" initialises HIP on ROCm where the `amdsmi` package is not installed (torch falls back to"
                   " `hipGetDeviceCount`)")
        elif what.startswith("helper:"):
            how = f" calls `{what[7:]}()`, which initialises the GPU runtime"
        elif what.startswith("method:"):
            how = " queries the device, which initialises the GPU runtime"
        else:
            how = " initialises the GPU runtime"
        return (f"{head}{how} before line {line} sets `{variable}`: the runtime has already read the visible devices,"
                " so the new value has no effect in this process (every worker keeps the devices it started with):"
                " set the `*_VISIBLE_DEVICES` variables first and query the device after")

    def _any_query(self, call: cst.Call) -> Optional[str]:
        name = self._query(call)
        if name is not None:
            return name
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value in _QUERY_METHODS and not self._self_method(func):
            return "method:" + func.attr.value
        method = self._accelerator_method(call)
        if method is not None:
            return "method:" + method
        site = self._helper_effects(func).query
        if site is not None:
            return "helper:" + site.what
        return None

    def _self_method(self, func: cst.Attribute) -> bool:
        return isinstance(func.value, cst.Name) and func.value.value in ("self", "cls")

    def _visibility_write_statement(self, node: cst.CSTNode) -> Optional[str]:
        targets: List[cst.BaseExpression] = []
        if isinstance(node, cst.Assign):
            targets = [t.target for t in node.targets]
        elif isinstance(node, (cst.AugAssign, cst.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, cst.Del):
            target = node.target
            targets = [e.value for e in target.elements] if isinstance(target, (cst.Tuple, cst.List)) else [target]
        for target in targets:
            if isinstance(target, cst.Subscript) and self._is_environ(target.value) and len(target.slice) == 1:
                index = target.slice[0].slice
                key = literal_string(index.value) if isinstance(index, cst.Index) else None
                if key in VISIBILITY:
                    return key
        return None

    def _visibility_write_call(self, call: cst.Call) -> Optional[str]:
        func = call.func
        if isinstance(func, cst.Attribute) and self._is_environ(func.value):
            method = func.attr.value
            if method in ("pop", "setdefault", "__setitem__", "__delitem__") and call.args:
                key = literal_string(call.args[0].value)
                return key if key in VISIBILITY else None
            if method == "update":
                for arg in call.args:
                    if arg.keyword is not None and arg.keyword.value in VISIBILITY:
                        return arg.keyword.value
                    if arg.keyword is None and isinstance(arg.value, cst.Dict):
                        for element in arg.value.elements:
                            if isinstance(element, cst.DictElement):
                                key = literal_string(element.key)
                                if key in VISIBILITY:
                                    return key
            return None
        if call.args and self.is_name(func, _PUTENV):
            key = literal_string(call.args[0].value)
            return key if key in VISIBILITY else None
        return None

    def _is_environ(self, node: cst.BaseExpression) -> bool:
        return dotted_name(node) is not None and bool(qualified_names(self, node, _ENVIRON) & _ENVIRON)

    def _offset(self, node: cst.CSTNode) -> int:
        return self.context.span(node)[0]

    def _exclusive(self, first: cst.CSTNode, second: cst.CSTNode) -> bool:
        """Do the two nodes sit on different branches of one ``if`` (never both run)?"""
        def path(node):
            chain = [node]
            chain.extend(self.ancestors(node))
            return chain
        a, b = path(first), path(second)
        ids_b = {id(n): i for i, n in enumerate(b)}
        for i, node in enumerate(a):
            if id(node) in ids_b and isinstance(node, (cst.If, cst.IfExp)):
                j = ids_b[id(node)]
                child_a = a[i - 1] if i else None
                child_b = b[j - 1] if j else None
                if child_a is node.test or child_b is node.test:
                    return False
                return child_a is not child_b
            if id(node) in ids_b:
                return False
        return False


def _walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(_children(current))


def _has_main_guard(module: cst.Module) -> bool:
    for stmt in module.body:
        if isinstance(stmt, cst.If) and _is_main_test(stmt.test):
            return True
    return False


def _is_main_test(test: cst.BaseExpression) -> bool:
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        left, right = test.left, test.comparisons[0].comparator
        names = {dotted_name(left), dotted_name(right)}
        strings = {literal_string(left), literal_string(right)}
        return "__name__" in names and "__main__" in strings
    return False


def _is_type_checking(test: cst.BaseExpression) -> bool:
    return (dotted_name(test) or "").rsplit(".", 1)[-1] == "TYPE_CHECKING"


def _import_time_calls(body) -> Iterator[cst.Call]:
    """The calls that run when a module (or a class body) is imported, in source order:
    module-level statements (into ``if`` / ``try`` / ``with`` / loops, not under ``if
    __name__ == "__main__":`` or ``if TYPE_CHECKING:``), class bodies, and the decorators and
    default values of the functions defined there; not function bodies or lambdas."""
    for stmt in body:
        if isinstance(stmt, cst.If) and (_is_main_test(stmt.test) or _is_type_checking(stmt.test)):
            if _is_type_checking(stmt.test) and stmt.orelse is not None:
                yield from _import_time_calls(_block(stmt.orelse))
            continue
        if isinstance(stmt, cst.FunctionDef):
            for decorator in stmt.decorators:
                yield from _calls_in(decorator.decorator)
            params = stmt.params
            for param in (*params.posonly_params, *params.params, *params.kwonly_params):
                if param.default is not None:
                    yield from _calls_in(param.default)
            continue
        if isinstance(stmt, cst.ClassDef):
            for decorator in stmt.decorators:
                yield from _calls_in(decorator.decorator)
            for arg in stmt.bases + stmt.keywords:
                yield from _calls_in(arg.value)
            yield from _import_time_calls(_block(stmt.body))
            continue
        if isinstance(stmt, cst.SimpleStatementLine):
            yield from _calls_in(stmt)
            continue
        # a compound statement: its header, then its blocks
        for child in _children(stmt):
            if isinstance(child, (cst.IndentedBlock, cst.SimpleStatementSuite)):
                yield from _import_time_calls(_block(child))
            elif isinstance(child, (cst.Else, cst.Finally)):
                yield from _import_time_calls(_block(child.body))
            elif isinstance(child, (cst.If,)):  # elif
                yield from _import_time_calls([child])
            elif isinstance(child, cst.ExceptHandler):
                yield from _import_time_calls(_block(child.body))
            elif isinstance(child, cst.CSTNode):
                yield from _calls_in(child)


def _block(block) -> List[cst.CSTNode]:
    if isinstance(block, (cst.Else, cst.Finally)):
        block = block.body
    if isinstance(block, cst.If):
        return [block]
    body = getattr(block, "body", ())
    return list(body) if isinstance(body, (list, tuple)) else [body]


def _calls_in(node: cst.CSTNode) -> Iterator[cst.Call]:
    """The calls under ``node`` that run when it runs (not in lambdas, nested definitions or
    a generator's lazy part), outermost first, in source order."""
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, (cst.Lambda, cst.FunctionDef, cst.ClassDef)):
            continue
        if isinstance(current, cst.Call):
            yield current
        if isinstance(current, cst.GeneratorExp):
            for_in = current.for_in
            stack.append(for_in.iter)
            continue
        stack.extend(reversed(_children(current)))


def _bodies(module: cst.Module) -> Iterator[cst.CSTNode]:
    """The module and every function of it: the scopes whose statements run in order."""
    yield module
    stack: List[cst.CSTNode] = list(module.body)
    while stack:
        node = stack.pop()
        if isinstance(node, cst.FunctionDef):
            yield node
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            stack.extend(_block(node.body))
        elif isinstance(node, (cst.BaseCompoundStatement, cst.IndentedBlock, cst.Else, cst.Finally,
                               cst.ExceptHandler)):
            stack.extend(_children(node))


def _own_nodes(scope: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The nodes of a function's body (or the module's), not those of nested definitions,
    in source order."""
    body = _block(scope.body) if isinstance(scope, cst.FunctionDef) else list(scope.body)
    stack = list(reversed(body))
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        yield node
        stack.extend(reversed(_children(node)))


def _callee(rule: VendorRule, call: cst.Call) -> str:
    text = " ".join(rule.context.module.code_for_node(call.func).split())
    return text if len(text) <= 60 else (dotted_name(call.func) or text[:57] + "...")


def _ast_name(spelled: str) -> ast.AST:
    parts = spelled.split(".")
    node: ast.AST = ast.Name(parts[0], ast.Load())
    for part in parts[1:]:
        node = ast.Attribute(node, part, ast.Load())
    return node


def _import_time_query(facts) -> bool:
    """Is a call run at import (module level, class bodies, decorators, defaults: CPython's
    tree) a device query, or a call of a function of this module or of the project that,
    through its calls, makes one?"""
    memo = facts.memo.get("vendor_checks:import_time_query")
    if memo is not None:
        return memo
    found = False
    body = getattr(facts.tree, "body", [])
    if any(isinstance(s, ast.If) and _ast_main_test(s.test) for s in body) or _starts_a_program(body):
        facts.memo["vendor_checks:import_time_query"] = False
        return False  # a script
    own = None
    index = None
    accelerators = _ast_accelerators(body, facts) if _effects.ACCELERATOR_FACTORY in identifiers(facts) else None
    for call in _ast_import_time_calls(body):
        if facts.may_be(call.func, _QUERIES) or (isinstance(call.func, ast.Attribute)
                                                  and call.func.attr == "get_current_target"):
            found = True
            break
        if accelerators is not None and _effects.accelerator_method(call.func, facts.qualified_names,
                                                                     accelerators) is not None:
            found = True
            break
        spelled = _dotted_ast(call.func)
        if spelled is None:
            continue
        root = spelled.partition(".")[0]
        if root in ("torch", "os", "sys", "functools", "logging", "re", "warnings", "typing"):
            continue
        if own is None:
            from rocmport.analysis.index import ProjectIndex

            index = facts.index if facts.index is not None else ProjectIndex([facts.path] if facts.path else [])
            name = (index.module_name(facts.path) if facts.path else None) or "__main__"
            own = _effects.ModuleFacts(name, facts.tree, lambda module, level: index.absolute(name, module, level),
                                       index.effects, index.compiler, index.platform_test)
        if root not in own.imports:
            if "." not in spelled and (root in own.functions or root in own.classes) \
                    and own.effects(root).query is not None:
                found = True
                break
            continue
        full = own.resolve(call.func)
        if full is None or full.split(".", 1)[0] in ("torch", "os", "sys", "functools", "builtins"):
            continue
        if index.effects(full).query is not None:
            found = True
            break
    facts.memo["vendor_checks:import_time_query"] = found
    return found


def _ast_accelerators(body, facts) -> Set[str]:
    """Module-level names bound to an accelerator factory's result (``_acc = get_accelerator()``)."""
    out: Set[str] = set()
    for stmt in top_level(body):
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                and isinstance(stmt.value, ast.Call) \
                and any(_effects.accelerator_factory(n) for n in facts.qualified_names(stmt.value.func)):
            out.add(stmt.targets[0].id)
    return out


# Calls that only a program's start makes at its module level (a library that did it on import
# would take the process over): its arguments read, its process group joined.
_PROGRAM_START = frozenset({"parse_args", "parse_known_args", "init_process_group"})


def _starts_a_program(body) -> bool:
    """Does the module's own top level (not a function, class or branch) parse the command
    line or join a process group, as ``torchrun train.py`` scripts without a ``__main__``
    guard do? Its module level is then the program's start, not an import."""
    for stmt in body:
        value = getattr(stmt, "value", None) if isinstance(stmt, (ast.Expr, ast.Assign, ast.AnnAssign)) else None
        if isinstance(value, ast.Call) and isinstance(value.func, (ast.Attribute, ast.Name)) and (
                value.func.attr if isinstance(value.func, ast.Attribute) else value.func.id) in _PROGRAM_START:
            return True
    return False


def _plain_script(ctx) -> bool:
    """Is the module a program nothing imports: it defines no function or class, it is in no
    package, and no other module of the project spells its name (``examples/run.py``: a
    script of statements, run as ``python examples/run.py``)? Its module level is then the
    program's start. Where the project is not linted (one file: nothing else to import it),
    nothing proves it."""
    index, tree = ctx.index, getattr(ctx.facts, "tree", None)
    name = index.module_name(ctx.path) if index is not None and ctx.path and index.module_count() > 1 else None
    if tree is None or not name or "." in name:
        return False
    if any(isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda))
           for node in ast.walk(tree)):
        return False
    return all(module == name for module, _, _ in index.modules_mentioning(name))


def _ast_main_test(test: ast.AST) -> bool:
    return isinstance(test, ast.Compare) and any(
        isinstance(c, ast.Constant) and c.value == "__main__" for c in [test.left, *test.comparators])


def _ast_import_time_calls(body) -> Iterator[ast.Call]:
    """``_import_time_calls`` on CPython's tree (a superset: every branch of a module-level
    statement, comprehensions' lazy parts too)."""
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for expr in [*stmt.decorator_list, *stmt.args.defaults, *[d for d in stmt.args.kw_defaults if d]]:
                yield from _ast_calls(expr)
            continue
        if isinstance(stmt, ast.ClassDef):
            for expr in [*stmt.decorator_list, *stmt.bases, *[k.value for k in stmt.keywords]]:
                yield from _ast_calls(expr)
            yield from _ast_import_time_calls(stmt.body)
            continue
        if isinstance(stmt, ast.If) and _ast_main_test(stmt.test):
            continue
        if isinstance(stmt, (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try)) \
                or type(stmt).__name__ == "TryStar":
            for name, value in ast.iter_fields(stmt):
                if isinstance(value, list):
                    yield from _ast_import_time_calls([v for v in value if isinstance(v, ast.stmt)])
                    for item in value:
                        if isinstance(item, ast.excepthandler):
                            yield from _ast_import_time_calls(item.body)
                        elif isinstance(item, ast.withitem):
                            yield from _ast_calls(item.context_expr)
                elif isinstance(value, ast.expr):
                    yield from _ast_calls(value)
            continue
        yield from _ast_calls(stmt)


def _ast_calls(node: ast.AST) -> Iterator[ast.Call]:
    """The calls under ``node``, not in lambdas or nested definitions."""
    todo = [node]
    while todo:
        current = todo.pop()
        if isinstance(current, (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(current, ast.Call):
            yield current
        todo.extend(ast.iter_child_nodes(current))
