"""Run a Python file in a fresh interpreter with real torch, on the NVIDIA path or with
``torch.version.hip`` set (simulated ROCm), ``torch.compile`` replaced by a recording spy.

Returns what the probe saw: the compile calls' keyword arguments, the inductor and dynamo
settings that matter, the ROCm-relevant environment variables, and anything ``post`` adds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Optional

import pytest

torch = pytest.importorskip("torch")

RUNNER = textwrap.dedent(r'''
    import json, os, runpy, sys, warnings
    import torch
    ROCM, PATH, SPY = sys.argv[1] == "rocm", sys.argv[2], sys.argv[3] == "spy"
    if ROCM:
        torch.version.hip = "6.2.41133"
    calls = []
    def spy(model=None, **kwargs):
        calls.append({k: v for k, v in kwargs.items()})
        return (lambda fn: fn) if model is None else model
    if SPY:
        torch.compile = spy
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        namespace = runpy.run_path(PATH, run_name="fixture")
        exec(os.environ.get("ROCMPORT_TEST_POST", ""), namespace)
    out = {"calls": calls, "extra": namespace.get("RESULT")}
    import torch._inductor.config as c, torch._dynamo.config as d
    out["config"] = {
        "triton.cudagraphs": c.triton.cudagraphs, "max_autotune": c.max_autotune,
        "max_autotune_gemm_backends": c.max_autotune_gemm_backends,
        "memory_planning": c.memory_planning, "coordinate_descent_tuning": c.coordinate_descent_tuning,
        "epilogue_fusion": c.epilogue_fusion, "freezing": c.freezing,
        "recompile_limit": d.recompile_limit,
    }
    out["env"] = {k: v for k, v in os.environ.items() if k.startswith("TORCHINDUCTOR_") and k != "TORCHINDUCTOR_CACHE_DIR"}
    out["warnings"] = [str(w.message) for w in caught if "rocmport" in str(w.message)]
    print("@@RESULT@@" + json.dumps(out, default=repr))
''')


def run_file(path: Path, rocm: bool, *, spy: bool = True, post: str = "", env: Optional[dict] = None) -> dict:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("TORCHINDUCTOR_")}
    environment["ROCMPORT_TEST_POST"] = post
    environment.update(env or {})
    proc = subprocess.run([sys.executable, "-c", RUNNER, "rocm" if rocm else "cuda", str(path),
                           "spy" if spy else "real"], capture_output=True, text=True, env=environment,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = [l for l in proc.stdout.splitlines() if l.startswith("@@RESULT@@")][-1]
    return json.loads(line[len("@@RESULT@@"):])
