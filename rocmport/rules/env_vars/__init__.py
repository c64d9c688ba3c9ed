"""ROC6xx: inductor environment variables that turn on CUDA graphs or max-autotune.

Inductor reads its environment variables once, when ``torch._inductor.config`` is first
imported (``torch._dynamo`` and ``torch.compile`` import it). Python code sets them through
``os.environ`` (item assignment, ``setdefault``, ``update``), ``os.putenv``, aliases of
``os`` and ``environ``, and env dicts handed to child processes (``subprocess.run(...,
env={**os.environ, ...})``, ``env = os.environ.copy(); env[...] = ...``). The fix gates the
value on ``is_rocm``. The same names in shell scripts, Dockerfiles, YAML and ``.env`` files
are found by :mod:`rocmport.rules.env_vars.scan_files` (display-only).
"""
