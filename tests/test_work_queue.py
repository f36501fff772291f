"""kvviz.work_queue: one job at a time, first come first served, queue positions, and leaving the queue."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest

from kvviz.work_queue import QueueTimeout, WorkQueue, shared_queue


@pytest.mark.slow
def test_work_queue_is_torch_free():
    code = "import sys, kvviz.work_queue; print('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "False\n"


def test_one_at_a_time_in_arrival_order_with_positions():
    queue = WorkQueue("test", poll_s=0.01)
    order, running, seen_ahead = [], [], {}
    release = threading.Event()

    def job(name: str) -> None:
        def waiting(ahead: int) -> None:
            seen_ahead.setdefault(name, ahead)

        with queue.turn(on_wait=waiting):
            running.append(name)
            assert len(running) == 1  # never two holders at once
            order.append(name)
            if name == "first":
                release.wait(5)
            running.remove(name)

    threads = []
    for name in ("first", "second", "third"):
        t = threading.Thread(target=job, args=(name,))
        t.start()
        threads.append(t)
        deadline = time.monotonic() + 5  # arrive in this order: the next starts once this one runs or has waited
        while name not in order and name not in seen_ahead and time.monotonic() < deadline:
            time.sleep(0.005)
    state = queue.state()
    assert (state.busy, state.waiting) == (True, 2) and state.running_for_s > 0
    release.set()
    for t in threads:
        t.join(5)
    assert order == ["first", "second", "third"]
    assert seen_ahead == {"second": 1, "third": 2}  # the running job counts as ahead
    assert queue.state() == type(state)("test", False, 0, None)


def test_a_waiter_that_gives_up_leaves_the_queue():
    queue = WorkQueue("test", poll_s=0.01)
    hold = threading.Event()
    started = threading.Event()

    def holder() -> None:
        with queue.turn():
            started.set()
            hold.wait(5)

    t = threading.Thread(target=holder)
    t.start()
    started.wait(5)
    with pytest.raises(QueueTimeout, match="1 job"), queue.turn(timeout_s=0.1):
        pass
    assert queue.state().waiting == 0
    hold.set()
    t.join(5)
    with queue.turn(timeout_s=1):  # the abandoned ticket does not block the next job
        assert queue.state().busy


def test_an_exception_in_the_job_passes_the_turn_on():
    queue = WorkQueue("test")
    with pytest.raises(ValueError), queue.turn():
        raise ValueError("boom")
    with queue.turn(timeout_s=1):
        pass
    assert shared_queue("same name") is shared_queue("same name")


def test_ten_sweepers_in_line_each_keep_their_job_and_see_their_true_place():
    """10 sessions queue behind a running sweep with no timeout: each is told its own place (the running job
    counted), every job runs, once, in arrival order. Arrivals and reports are ordered on the queue's condition
    and on events, never on sleeps."""
    queue = WorkQueue("test", poll_s=0.01)
    holding, release = threading.Event(), threading.Event()
    reports: dict[int, list[int]] = {i: [] for i in range(10)}
    reported = [threading.Event() for _ in range(10)]
    done: list[int] = []

    def holder() -> None:
        with queue.turn():
            holding.set()
            release.wait(30)

    def sweeper(i: int) -> None:
        def waiting(ahead: int) -> None:
            reports[i].append(ahead)
            reported[i].set()

        with queue.turn(on_wait=waiting):
            done.append(i)

    threads = [threading.Thread(target=holder)]
    threads[0].start()
    assert holding.wait(10)
    for i in range(10):
        threads.append(threading.Thread(target=sweeper, args=(i,)))
        threads[-1].start()
        assert queue.wait_for_line(i + 1, 10)  # sweeper i holds ticket i: arrival order is fixed
    for event in reported:
        event.clear()
    for event in reported:  # a report made with all ten in line
        assert event.wait(10)
    assert [reports[i][-1] for i in range(10)] == [i + 1 for i in range(10)]  # each its own place, not one stale count
    assert queue.state().waiting == 10
    release.set()
    for t in threads:
        t.join(10)
    assert done == list(range(10))  # every job kept and run, in arrival order
    assert all(r == sorted(r, reverse=True) for r in reports.values())  # a place only ever moves up


def test_the_wait_estimate_comes_from_the_last_turns(monkeypatch):
    """Median of the last turns for each job ahead, less what the running one has done; None with no history."""
    import kvviz.work_queue as wq

    clock = [100.0]
    monkeypatch.setattr(wq.time, "monotonic", lambda: clock[0])
    queue = WorkQueue("test")
    assert queue.wait_estimate_s() == 0.0 and queue.wait_estimate_s(1) is None
    for seconds in (10.0, 30.0, 20.0):
        with queue.turn():
            clock[0] += seconds
    with queue.turn():
        clock[0] += 5.0  # the running job has done 5 s of a typical 20 s
        assert queue.wait_estimate_s(1) == 15.0 and queue.wait_estimate_s(3) == 15.0 + 2 * 20.0
        assert queue.wait_estimate_s() == 15.0  # a new arrival: behind the running job only
