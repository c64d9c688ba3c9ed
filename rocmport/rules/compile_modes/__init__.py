"""ROC1xx: ``torch.compile`` modes that use CUDA graphs.

``mode="reduce-overhead"`` turns ``triton.cudagraphs`` on, and so does ``"max-autotune"``
(its no-graphs twin is ``"max-autotune-no-cudagraphs"``). A mode overrides global config, so
the call site itself must be rewritten; ``mode=`` and ``options=`` together raise, so a fix
never adds ``options=``.
"""
