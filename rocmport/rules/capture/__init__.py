"""ROC3xx: CUDA-graph capture hazards.

A host synchronization inside a CUDA-graph capture invalidates the capture on NVIDIA and,
on ROCm before 7.14, can be swallowed silently and leave a corrupt graph. The bad call is
rarely lexically inside the ``with`` block: it sits in a ``forward`` or a helper that the
captured code calls, so these rules follow the calls: the shared analysis (``_regions``)
walks each capture and lists what the code it reaches does as typed events (``_events``);
each rule below picks its events in ``on_event`` and writes its own message and fix. Every
finding names the capture (its line) and the chain of calls that reaches the hazard.
"""
