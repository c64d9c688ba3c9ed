"""ROC5xx: Triton launch and tile parameters that fit NVIDIA's 32-lane warps, not AMD's
64-lane wavefronts.

A kernel is a function decorated with ``triton.jit`` / ``triton.autotune`` /
``triton.heuristics`` in any spelling; its block sizes are ``tl.constexpr`` parameters used
as ``tl.arange`` extents. The per-file analysis lives in :mod:`rocmport.analysis.triton` and is
computed once for all these rules.
"""
