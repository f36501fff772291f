"""One long job at a time per server process, first come first served, with a queue position for the others.

A Streamlit server runs every session's script in its own thread of ONE process. Two long jobs at once (two
measurements, a benchmark and an agreement run) share the same cores, take twice as long and measure nonsense.
A `WorkQueue` hands out tickets; each job waits for its turn and can show where it stands meanwhile:

    queue = shared_queue("cache internals")          # the same object in every session of this process
                                                     # (timed work stands in one line: timed_work_queue())
    with queue.turn(timeout_s=120, on_wait=lambda ahead: box.info(f"busy: {ahead} ahead of you")):
        result = long_job()

`on_wait(ahead)` is called from the waiting thread (at most every `poll_s`), never while holding the lock, so it
may draw; `ahead` is counted after each wait, so it is the waiter's true place at that moment. A waiter that gives
up (timeout, a Streamlit rerun or stop raising through `turn`) leaves the queue and the jobs behind it move up.
Torch-free and UI-free; `state()` lets a page say "busy" before queueing.

A job that waits keeps its place until its turn comes (no timeout: a page passes none, so no one's work is thrown
away after minutes in line). Instead a page asks first: `wait_estimate_s(ahead)` is the time the jobs ahead need,
from how long the last turns took, and a page whose estimate is past its limit says plainly that the server is
full, and for how long, before anyone waits.
"""

from __future__ import annotations

import statistics
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from kvviz.i18n import _, ngettext

RECENT_TURNS = 8  # the estimate is the median of this many last turns: one odd job does not swing it


class QueueTimeout(RuntimeError):
    """Waited longer than the caller allowed; the message says how many jobs were still ahead."""


@dataclass(frozen=True)
class QueueState:
    name: str
    busy: bool  # a job holds the turn now
    waiting: int  # jobs waiting behind it
    running_for_s: float | None  # how long the current job has held the turn (None when idle)


class WorkQueue:
    """A FIFO ticket lock: one holder at a time, waiters served in arrival order."""

    def __init__(self, name: str, poll_s: float = 0.5) -> None:
        self.name = name
        self.poll_s = poll_s
        self._cond = threading.Condition()
        self._next_ticket = 0  # handed to the next arrival
        self._serving = 0  # the ticket whose turn it is
        self._abandoned: set[int] = set()  # tickets that left before their turn
        self._started_at: float | None = None  # time.monotonic() when the current holder got its turn
        self._recent_turns_s: deque[float] = deque(maxlen=RECENT_TURNS)  # how long the last turns held it

    # ----- inspection -------------------------------------------------------------------------------
    def _live_between(self, low: int, high: int) -> int:
        """Tickets in [low, high) that have not left the queue."""
        return (high - low) - sum(1 for t in self._abandoned if low <= t < high)

    def state(self) -> QueueState:
        with self._cond:
            busy = self._started_at is not None
            live = self._live_between(self._serving, self._next_ticket)
            waiting = live - 1 if busy else live
            running = time.monotonic() - self._started_at if busy else None
            return QueueState(self.name, busy, max(waiting, 0), running)

    def wait_estimate_s(self, ahead: int | None = None) -> float | None:
        """Seconds until a job with `ahead` jobs before it (the running one included; None: a new arrival, behind
        everyone now in line) gets its turn: the median of the last turns for each, less what the running one has
        done. None before any turn has finished (nothing to estimate from); 0.0 when the turn is free."""
        with self._cond:
            busy = self._started_at is not None
            if ahead is None:
                ahead = self._live_between(self._serving, self._next_ticket)
            if ahead <= 0:
                return 0.0
            if not self._recent_turns_s:
                return None
            per_turn_s = statistics.median(self._recent_turns_s)
            done_s = time.monotonic() - self._started_at if busy else 0.0
            return max(per_turn_s - done_s, 0.0) + (ahead - 1) * per_turn_s

    def wait_for_line(self, waiting: int, timeout_s: float) -> bool:
        """Block until at least `waiting` jobs wait behind the running one (False after timeout_s): lets a caller
        (a test, a load script) order arrivals on the queue's own condition instead of on sleeps."""
        with self._cond:
            return self._cond.wait_for(
                lambda: (
                    self._started_at is not None and self._live_between(self._serving, self._next_ticket) - 1 >= waiting
                ),
                timeout_s,
            )

    # ----- taking a turn ----------------------------------------------------------------------------
    def _advance(self) -> None:
        self._serving += 1
        while self._serving in self._abandoned:
            self._abandoned.discard(self._serving)
            self._serving += 1

    @contextmanager
    def turn(self, timeout_s: float | None = None, on_wait: Callable[[int], None] | None = None) -> Iterator[None]:
        """Wait for this job's turn (FIFO), hold it for the `with` body, then pass it on.

        on_wait(ahead): jobs before this one (the running one included), reported while waiting.
        Raises QueueTimeout if the turn has not come within timeout_s (the job is then out of the queue).
        """
        with self._cond:
            ticket = self._next_ticket
            self._next_ticket += 1
            self._cond.notify_all()  # (wait_for_line sees the arrival)
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        try:
            while True:
                with self._cond:
                    if self._serving == ticket:
                        self._started_at = time.monotonic()
                        break
                    ahead = self._live_between(self._serving, ticket)
                    remaining = None if deadline is None else deadline - time.monotonic()
                    if remaining is not None and remaining <= 0:
                        raise QueueTimeout(
                            ngettext(  # the queue's name is shown through _(): N_() it where named
                                "{queue}: still {n} job ahead after {seconds:.0f} s; try again in a moment.",
                                "{queue}: still {n} jobs ahead after {seconds:.0f} s; try again in a moment.",
                                ahead,
                            ).format(queue=_(self.name), n=ahead, seconds=timeout_s)
                        )
                    self._cond.wait(self.poll_s if remaining is None else min(self.poll_s, remaining))
                    if self._serving == ticket:
                        self._started_at = time.monotonic()
                        break
                    ahead = self._live_between(self._serving, ticket)  # the place now, not before the wait
                if on_wait is not None:
                    on_wait(ahead)
            yield
        finally:
            with self._cond:
                if self._serving == ticket:  # held the turn (or it arrived just as we gave up): pass it on
                    if self._started_at is not None:
                        self._recent_turns_s.append(time.monotonic() - self._started_at)
                    self._started_at = None
                    self._advance()
                else:
                    self._abandoned.add(ticket)
                self._cond.notify_all()


_QUEUES: dict[str, WorkQueue] = {}
_QUEUES_LOCK = threading.Lock()


def shared_queue(name: str) -> WorkQueue:
    """The process-wide queue called `name` (created on first use): every session of a server shares it."""
    with _QUEUES_LOCK:
        if name not in _QUEUES:
            _QUEUES[name] = WorkQueue(name)
        return _QUEUES[name]


TIMED_WORK = "benchmark"  # the line's name, shown in its busy message


def timed_work_queue() -> WorkQueue:
    """The one line every timed job of this server process stands in (the speed-up benchmark, the cache-internals
    measurements): one timing at a time keeps the timings honest. Created on first use, never at import."""
    return shared_queue(TIMED_WORK)
