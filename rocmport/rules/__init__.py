"""rocmport's rules: one package per family, one module per rule.

``base`` holds what every rule is built on (:class:`base.Rule`, its per-file
:class:`base.RuleContext`, Fixit-style :class:`base.Case`). A family package holds one module
per rule, named after the rule (``compile_modes/compile_reduce_overhead.py`` is ROC101), and a
``common`` module for what its rules share. The registry finds every rule class by walking
the packages; nothing else registers a rule.
"""
