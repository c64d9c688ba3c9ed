"""ROC7xx: code that assumes the GPU is NVIDIA.

Python code written for NVIDIA runs unchanged on ROCm builds of torch (``torch.cuda`` is
HIP there), except where it asks "which vendor, which version, which generation" in NVIDIA's
terms: ``torch.version.cuda`` (None on ROCm), compute capabilities read as NVIDIA generations
(MI300 reports (9, 4)), ``nvidia-smi`` and NVML, packages that only exist for CUDA, and fp8
formats that depend on the GPU architecture. The facts and their sources live in
``rocmport.rocm_facts`` (one table, shown by the rule docs and ``docs/rocm-facts.md``).

Fixes are safe only where the intent is clear and the NVIDIA path provably evaluates as
before; everything else is a display-only suggestion.
"""
