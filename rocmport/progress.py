"""Progress of a long ``lint`` or ``fix`` on stderr (stdout keeps the findings alone).

On a terminal: one line redrawn in place, ``rocmport [#####.....] 1200/5000 files, 37
findings``, for runs of :data:`TTY_MIN_FILES` files or more. There is no time estimate: the
largest files are checked first (so that no worker is left with one at the end), which makes
any estimate from the first files far too long; ruff and pre-commit show none either.

Anywhere else (a CI log, a pipe): nothing for a run that ends within :data:`LOG_INTERVAL`
seconds, then a plain line every :data:`LOG_INTERVAL` seconds, ``rocmport: 1200/5000 files
checked, 37 findings so far (10 s)``, never a carriage return or an escape sequence.

The clock is a parameter, so the tests drive it by hand instead of sleeping."""

from __future__ import annotations

import time
from typing import Callable, Optional, TextIO

TTY_MIN_FILES = 50
LOG_INTERVAL = 5.0  # seconds between two lines in a log
TTY_REDRAW = 0.1  # seconds between two redraws on a terminal
BAR_WIDTH = 30
monotonic = time.monotonic  # the default clock (the tests replace it)


class Progress:
    def __init__(self, total: int, stream: TextIO, *, tty: bool, clock: Optional[Callable[[], float]] = None,
                 interval: float = LOG_INTERVAL):
        clock = clock or monotonic
        self.total, self.stream, self.tty, self.clock = total, stream, tty, clock
        self.interval = interval
        self.done = self.findings = 0
        self.started = clock()
        self.last: Optional[float] = None  # when a line was last written
        self.enabled = total > 0 and (total >= TTY_MIN_FILES if tty else True)

    def update(self, report=None) -> None:
        """One more file done (``report``: its FileReport, whose findings are counted)."""
        self.done += 1
        self.findings += len(getattr(report, "findings", None) or ())
        if not self.enabled:
            return
        now = self.clock()
        if self.tty:
            if self.done == self.total or self.last is None or now - self.last >= TTY_REDRAW:
                self._write("\r" + self.bar() + "\x1b[K")
                self.last = now
        elif now - (self.last if self.last is not None else self.started) >= self.interval and self.done < self.total:
            self._write(self.log_line(now) + "\n")
            self.last = now

    def finish(self) -> None:
        """End the terminal's line (a log needs nothing: its lines are whole)."""
        if self.enabled and self.tty and self.last is not None:
            self._write("\n")

    def bar(self) -> str:
        filled = BAR_WIDTH * self.done // self.total
        percent = 100 * self.done // self.total
        return (f"rocmport [{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {percent:3d}% "
                f"{self.done}/{self.total} files, {_count(self.findings, 'finding')}")

    def log_line(self, now: float) -> str:
        return (f"rocmport: {self.done}/{self.total} files checked, {_count(self.findings, 'finding')} so far "
                f"({now - self.started:.0f} s)")

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # a closed or broken stderr never stops the run
            self.enabled = False


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"
