"""ROC602 env-cudagraphs: TORCHINDUCTOR_CUDAGRAPHS set to a true value.

The rule's documentation is its class's (`rocmport rule ROC602` prints it).
"""

from __future__ import annotations

from rocmport.findings import Applicability
from rocmport.rules.base import Case

from .common import CUDAGRAPH_VARS, GatedValue, env_write, what


class CudagraphsEnv(GatedValue):
    CODE = "ROC602"
    NAME = "env-cudagraphs"
    TRIGGERS = ("TORCHINDUCTOR_CUDAGRAPHS",)
    NEEDS = env_write(*CUDAGRAPH_VARS)
    SUMMARY = "TORCHINDUCTOR_CUDAGRAPHS set to a true value."
    WHAT = what("`TORCHINDUCTOR_CUDAGRAPHS` (it sets `triton.cudagraphs`) set to \"1\" or to a value "
                 "only known at run time.")
    WHY = """
        It turns on inductor's CUDA graphs for every compiled function in the process and in
        child processes; they hang or slow down on ROCm (see ROC201).
        """
    EXAMPLE = """
        subprocess.run(cmd, env={**os.environ, "TORCHINDUCTOR_CUDAGRAPHS": "1"})
        """
    FIXED_EXAMPLE = """
        subprocess.run(cmd, env={**os.environ, "TORCHINDUCTOR_CUDAGRAPHS": "0" if is_rocm else "1"})
        """
    FIX = """
        Safe in Python: `"0" if is_rocm else <value>`, unchanged on NVIDIA. Display-only in
        other files.
        """
    FIX_APPLICABILITY = Applicability.SAFE
    VALID = (
        Case('import os\nos.environ["TORCHINDUCTOR_CUDAGRAPHS"] = "0"\n'),
        Case('import os\nprint("TORCHINDUCTOR_CUDAGRAPHS=1")\n'),
    )
    INVALID = (
        Case('import os\nimport subprocess\nsubprocess.run(cmd, env={**os.environ, "TORCHINDUCTOR_CUDAGRAPHS": "1"})\n',
             'import os\nimport subprocess\n\nimport torch\n\nis_rocm = getattr(torch.version, "hip", None) is not None\n\nsubprocess.run(cmd, env={**os.environ, "TORCHINDUCTOR_CUDAGRAPHS": "0" if is_rocm else "1"})\n'),
        Case('import os as _os\n_os.putenv("TORCHINDUCTOR_CUDAGRAPHS", "1")\n',
             'import os as _os\n\nimport torch\n\nis_rocm = getattr(torch.version, "hip", None) is not None\n\n_os.putenv("TORCHINDUCTOR_CUDAGRAPHS", "0" if is_rocm else "1")\n'),
        Case('import os\ndef launch(cmd):\n    env = os.environ.copy()\n    env["TORCHINDUCTOR_CUDAGRAPHS"] = flag\n    return env\n',
             'import os\n\nimport torch\n\nis_rocm = getattr(torch.version, "hip", None) is not None\n\ndef launch(cmd):\n    env = os.environ.copy()\n    env["TORCHINDUCTOR_CUDAGRAPHS"] = "0" if is_rocm else flag\n    return env\n'),
    )
