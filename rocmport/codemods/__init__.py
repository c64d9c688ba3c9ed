"""rocmport's rules, one module per family. Each module lists its rules in ``RULES``."""
