"""The shared analyses: facts about one file, or the project, that rules ask for.

They return facts, never findings: names and scopes (``bindings``, ``names``, ``resolve``),
the prefilter's view of a file (``prescan``) and what a lint may leave unparsed (``opaque``),
the project index (``index``), positions and parents on demand (``metadata``), capture and
compiled regions and their typed events (``regions``, ``events``), Triton kernels and launches
(``triton``), and the traversal they share (``walk``, ``syntax``). No module here imports a rule.
"""
