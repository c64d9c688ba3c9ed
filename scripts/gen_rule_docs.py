#!/usr/bin/env python3
"""Regenerate docs/rules.md from the rules' own documentation (``Rule.doc()``).

Usage: ``python scripts/gen_rule_docs.py`` (writes docs/rules.md), or with ``--check`` to
exit 1 when the file is stale. Same as ``python -m rocmport.docs``.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rocmport.docs import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
