"""An injected clock for the poll store's tests: seconds, moved by hand (the store takes `clock=`)."""

from __future__ import annotations


class Clock:
    """An injected clock: seconds, moved by hand."""

    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now
