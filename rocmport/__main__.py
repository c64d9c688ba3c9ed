import os
import sys

# `python -m rocmport` puts the working directory first on sys.path: a `rocmport/rules/` (or any
# package named like one of rocmport's own) there would be imported instead of rocmport's,
# running the user's code. Drop that entry unless it is where rocmport itself lives.
_HOME = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if sys.path and os.path.abspath(sys.path[0] or os.curdir) == os.path.abspath(os.curdir) \
        and os.path.abspath(sys.path[0] or os.curdir) != _HOME:
    del sys.path[0]

from rocmport.cli import main  # noqa: E402

if __name__ == "__main__":  # pragma: no cover
    main(prog_name="rocmport")
