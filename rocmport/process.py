"""Whether the process rocmport runs in is its own.

rocmport speeds a run up with two switches that change the whole process while a file is
checked (``rocmport.parsing``: the cyclic collector paused, LibCST's validation of its parser's
own nodes off). It uses them only in a process that is rocmport's own: the command line's run
and its worker processes (``rocmport.runner``), and the language server's analysis child
(``rocmport.lsp``). Inside another program -- the flake8 plugin, LibCST's codemod runner, the
language server's own process, a library call -- nothing rocmport does changes the process.
It imports nothing, so the command line's light paths can say so without loading LibCST.
"""

from __future__ import annotations

_OWN = [0]


class own:  # noqa: N801 (a context manager: ``with process.own():``)
    """While held (holds nest), the process is rocmport's own."""

    def __enter__(self) -> None:
        _OWN[0] += 1

    def __exit__(self, *exc) -> None:
        _OWN[0] -= 1


def is_own() -> bool:
    return _OWN[0] > 0
