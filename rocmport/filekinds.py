"""Which kind of file a path is: the one decision that discovery, the engine and the
environment-file rules share.

- ``"python"``: ``*.py``, ``*.pyi``;
- ``"notebook"``: ``*.ipynb`` (code cells are checked as Python);
- ``"shell"``: ``*.sh``, ``*.bash``, ``*.zsh``, or a first line ``#!`` naming a shell;
- ``"dockerfile"``: ``Dockerfile``, ``Containerfile``, ``*.dockerfile``, ``Dockerfile.*``;
- ``"yaml"``: ``*.yml``, ``*.yaml``;
- ``"dotenv"``: ``.env``, ``.env.*``, ``*.env``;
- None: anything else. A directory walk skips it; a file named on the command line is read
  as Python.

The Python and notebook suffixes are matched as written; the other names in any case.
"""

from __future__ import annotations

import os
import re
from typing import Optional

PYTHON_SUFFIXES = (".py", ".pyi")
NOTEBOOK_SUFFIX = ".ipynb"
#: the kinds the ROC6xx environment-variable rules scan line by line
ENV_KINDS = frozenset({"shell", "dockerfile", "yaml", "dotenv"})
#: how many leading bytes ``file_kind`` looks at for a ``#!`` line
HEAD_BYTES = 256

_SHEBANG_SHELL = re.compile(rb"^#![^\r\n]*\b(?:ba|z|k|da|a)?sh\b")


def file_kind(path: str, head: bytes = b"") -> Optional[str]:
    """The kind of the file at ``path`` (see the module docs), or None. ``head``: the file's
    first bytes, for the ``#!`` line of a script without a suffix."""
    name = os.path.basename(path.replace("\\", "/"))
    if name.endswith(PYTHON_SUFFIXES):
        return "python"
    if name.endswith(NOTEBOOK_SUFFIX):
        return "notebook"
    name = name.lower()
    if name.endswith((".py", ".pyi", ".ipynb", ".pyw")):
        return None  # Python by name, only in other letters (X.PY) or a .pyw script
    if name in ("dockerfile", "containerfile") or name.endswith((".dockerfile", ".containerfile")) \
            or name.startswith(("dockerfile.", "containerfile.")):
        return "dockerfile"
    if name.endswith((".sh", ".bash", ".zsh")):
        return "shell"
    if name.endswith((".yml", ".yaml")):
        return "yaml"
    if name == ".env" or name.startswith(".env.") or name.endswith(".env"):
        return "dotenv"
    if head.startswith(b"#!") and _SHEBANG_SHELL.match(head[:HEAD_BYTES]):
        return "shell"
    return None


def env_kind(path: str, head: bytes = b"") -> Optional[str]:
    """``file_kind`` when it is one of ``ENV_KINDS``, else None."""
    kind = file_kind(path, head)
    return kind if kind in ENV_KINDS else None
