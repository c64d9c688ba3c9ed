"""SIGINT and SIGTERM end a run with 128 + the signal, as shells report (130, 143).

Kept apart from the runner so that the command line can install the handlers at start without
importing the runner, the cache or the configuration (a light command stays light)."""

from __future__ import annotations

import signal


class Interrupted(BaseException):
    """Raised in the main process by SIGINT / SIGTERM (see :func:`interrupt_on_signals`).

    A BaseException, so that nothing between the signal and the command line swallows it;
    ``exit_code`` is what a shell reports for the signal: 128 + its number (130, 143)."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum
        self.exit_code = 128 + signum


def interrupt_on_signals() -> dict:
    """Make SIGINT and SIGTERM raise :class:`Interrupted` in the main thread; returns the
    handlers they had (for :func:`restore_signals`)."""
    def handler(signum, _frame):
        raise Interrupted(signum)

    previous = {}
    for signum in (signal.SIGINT, signal.SIGTERM):
        try:
            previous[signum] = signal.signal(signum, handler)
        except (ValueError, OSError):  # pragma: no cover - not the main thread
            pass
    return previous


def restore_signals(previous: dict) -> None:
    for signum, handler in previous.items():
        try:
            signal.signal(signum, handler if handler is not None else signal.SIG_DFL)
        except (ValueError, OSError, TypeError):  # pragma: no cover
            pass
