"""A tiny progress bar on stderr, drawn only when stderr is a terminal."""

from __future__ import annotations

import sys
import time
from typing import TextIO

_WIDTH = 24


class Progress:
    """Counts items and redraws one status line at most every `interval` seconds.

    Nothing is drawn before `delay` seconds have passed (short runs stay
    quiet), nor when the stream is not a TTY (unless `enabled` forces it).

    Args:
      label: what is counted, e.g. ``"legacy batches"``.
      total: the expected count, or None for a plain counter.
      stream: where to draw; default ``sys.stderr``.
      enabled: True/False to force; None draws only on a TTY.
    """

    def __init__(
        self,
        label: str,
        total: int | None = None,
        *,
        stream: TextIO | None = None,
        enabled: bool | None = None,
        delay: float = 0.5,
        interval: float = 0.1,
    ):
        self.stream = stream if stream is not None else sys.stderr
        if enabled is None:
            enabled = bool(getattr(self.stream, "isatty", lambda: False)())
        self.enabled, self.label, self.total = enabled, label, total
        self.count, self._drawn = 0, False
        self._start = time.monotonic()
        self._delay, self._interval, self._last = delay, interval, 0.0

    def update(self, count: int) -> None:
        """Sets the count and redraws if due."""
        self.count = count
        now = time.monotonic()
        if not self.enabled or now - self._start < self._delay or now - self._last < self._interval:
            return
        self._last = now
        self._draw(now)

    def _draw(self, now: float) -> None:
        rate = self.count / max(now - self._start, 1e-9)
        if self.total:
            done = min(self.count / self.total, 1.0)
            bar = "#" * int(done * _WIDTH)
            text = f"{self.label} [{bar:<{_WIDTH}}] {self.count}/{self.total}"
        else:
            text = f"{self.label} {self.count}"
        self.stream.write(f"\r{text}  {rate:,.0f}/s\x1b[K")
        self.stream.flush()
        self._drawn = True

    def close(self) -> None:
        """Erases the line if anything was drawn."""
        if self._drawn:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._drawn = False

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
