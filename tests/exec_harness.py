"""Run a module with real torch in a fresh interpreter, on the NVIDIA path or on a simulated
ROCm build (``torch.version.hip`` set after ``import torch``, before the module runs), and
return what a probe expression sees afterwards.

    run_module(path_or_source, rocm, probe) -> the probe's value (JSON round-tripped)

``probe`` is a Python expression evaluated in the module's namespace after it ran (``os``,
``torch`` and ``config`` = ``torch._inductor.config`` are available), e.g.
``"{'cudagraphs': config.triton.cudagraphs}"``. Inherited ``TORCHINDUCTOR_*`` variables are
removed so the parent's environment cannot leak into the result.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any, Union

_MARKER = "@@ROCMPORT_PROBE@@"
_RUNNER = textwrap.dedent(r'''
    import json, os, runpy, sys
    import torch
    if sys.argv[1] == "rocm":
        torch.version.hip = "6.2.0"
    namespace = runpy.run_path(sys.argv[2], run_name="rocmport_exec")
    namespace.setdefault("os", os)
    namespace.setdefault("torch", torch)
    import torch._inductor.config
    namespace.setdefault("config", torch._inductor.config)
    value = eval(sys.argv[3], namespace)
    print("@@ROCMPORT_PROBE@@" + json.dumps(value, default=repr))
''')


def run_module(path_or_source: Union[str, bytes, Path], rocm: bool, probe: str, *, timeout: int = 300) -> Any:
    """Run a file (a ``Path`` or an existing path) or source text (``str``/``bytes``) and
    return ``probe`` evaluated afterwards. Raises AssertionError with stderr on failure."""
    temp = None
    if isinstance(path_or_source, Path) or (isinstance(path_or_source, str) and "\n" not in path_or_source
                                            and os.path.isfile(path_or_source)):
        path = str(path_or_source)
    else:
        data = path_or_source.encode("utf-8") if isinstance(path_or_source, str) else path_or_source
        handle = tempfile.NamedTemporaryFile("wb", suffix=".py", delete=False)
        handle.write(data)
        handle.close()
        path = temp = handle.name
    try:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("TORCHINDUCTOR_") and k != "TORCH_COMPILE_DEBUG"}
        proc = subprocess.run([sys.executable, "-c", _RUNNER, "rocm" if rocm else "cuda", path, probe],
                              capture_output=True, text=True, env=env, timeout=timeout)
    finally:
        if temp is not None:
            os.unlink(temp)
    assert proc.returncode == 0, f"module failed ({'rocm' if rocm else 'nvidia'} path):\n{proc.stderr[-4000:]}"
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(_MARKER):
            return json.loads(line[len(_MARKER):])
    raise AssertionError(f"no probe output:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
