"""ROC2xx: inductor configuration that turns on CUDA graphs, exhaustive autotuning or
memory planning.

The rules work from names, not from the installed torch: ``torch._inductor.config`` in every
spelling (the dotted path on ``torch``, ``import torch._inductor.config as ic``, ``from
torch._inductor import config``, function-local imports, local aliases such as
``cfg = torch._inductor.config``), and the ways of setting a value: assignment,
``setattr(config, "name", value)``, ``config.patch(...)`` (context manager or decorator) and
``torch.compile(options={...})``. The fix gates the value on ``is_rocm``: the NVIDIA path
keeps the original value.

``"triton.cudagraphs"`` inside ``torch.compile(options=...)`` is ROC103's: it is not
reported twice. ``triton.cudagraph_trees = False`` is not a mitigation (it selects the older
CUDA-graph implementation), so it is not treated as one.
"""
