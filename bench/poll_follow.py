"""Phones following the teacher: what N idle phones' `run_every` fragment costs the replicas, and how fast they follow.

    python bench/poll_follow.py                            # SQLite (a new file), 40 phones, 2 replicas, 20 s windows
    python bench/poll_follow.py --students 20 --window 10  # a shorter trial

pages/join.py draws a fragment `_follow` with `st.fragment(run_every=FOLLOW_S)`: the server sends the browser a
ForwardMsg auto_rerun (interval, fragment_id) and the browser then asks for that fragment's rerun every interval
(a BackMsg rerun_script with fragment_id and is_auto_rerun). The fragment reads the room's state from the store and
reruns the whole page only when the teacher has moved. This bench measures that loop without a browser:

- deploy/run_class.sh -n REPLICAS behind nginx, as bench/poll_load.py starts it (its helpers, imported), with a new
  SQLite store (or --db postgresql); the teacher, in this process, makes a room and opens step 1 on the store;
- N protocol-level phones (bench/classroom_ws.Student) open /join?room=CODE through nginx, each with its own voter
  cookie (odd ones in zh-CN); each reads every ForwardMsg the server sends it from then on (a reader task per phone);
- once the replicas are done starting (their warm-up thread: wait_quiet), the phones join; then a
  baseline window (--window s): every phone connected, no fragment reruns sent: what the idle class cost before the
  follow;
- follow window (--window s): every phone sends its fragment's rerun at the interval the server asked for (its
  Page.auto_reruns), on a timer that does not wait for the reply, as a browser's setInterval does, starting at a
  random phase; measured after one interval of warm-up;
- the teacher moves (--move next: store.next_question to step 2; lock: store.lock) once, after the follow window,
  the timers still running: per phone, the seconds from the store call's return to the first whole-page run that
  finished after it (script_finished FINISHED_SUCCESSFULLY) and whether the page then shows the move (step 2's choice
  buttons, or the lock's disabled buttons). The move's page reruns are kept out of the follow window's CPU: that
  window is the idle class's cost; the move period's CPU is reported beside it.

Reported (printed, and JSON in bench/results/poll_follow_<n>.json): the replicas' CPU seconds per second of each
window (/proc/PID/stat utime+stime, summed and per replica) and the follow's cost above the baseline, fragment
reruns sent and finished per second, the follow latency (median, max, phones that followed), the store's room() read
timed in this process (CPU ms a call: how much of a fragment run the store read can be), this process's own CPU, the
load average (before, peak, after) and thread counts (machine, each replica). Localhost only; caps: MAX_STUDENTS
phones, MAX_WINDOW_S per window.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import secrets
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from classroom_ws import Student  # noqa: E402
from poll_load import (  # noqa: E402
    class_servers,
    database,
    fixed_polls,
    machine_threads,
    proc_cpu_s,
    proc_threads,
)
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg  # noqa: E402

from kvviz.poll import store as poll_store  # noqa: E402

MAX_STUDENTS = 80
MAX_WINDOW_S = 120.0
JOIN_CONCURRENCY = 8  # phones opening at once: the class arrives over a few seconds, not in one instant
SETTLE_S = 3.0  # after the last phone joined, before the baseline window
FOLLOW_TIMEOUT_S = 15.0  # a phone that has not followed the move by then is reported as not followed
QUIET_CPU, QUIET_TIMEOUT_S = 0.03, 120.0  # a replica is done starting when it spends under this a second
GOAL_CORE = 0.1
GOAL_FOLLOW_S = 2.0


@dataclass
class Phone:
    index: int
    student: Student
    fragment_id: str = ""
    interval_s: float = 0.0
    sent: int = 0
    fragment_runs: list[float] = field(default_factory=list)  # monotonic times of finished fragment runs
    whole_runs: list[float] = field(default_factory=list)  # monotonic times of finished whole-page runs
    early: int = 0  # runs that finished early for a rerun (the fragment's st.rerun(scope="app"))
    problems: list[str] = field(default_factory=list)


async def read_forever(phone: Phone) -> None:
    """Apply every ForwardMsg to the phone's page, as the browser does, and note when each run finished."""
    ws = phone.student.ws
    try:
        async for data in ws:
            msg = ForwardMsg()
            msg.ParseFromString(data)
            msg = phone.student.page.apply(msg)
            if msg.WhichOneof("type") == "script_finished":
                now, status = time.monotonic(), msg.script_finished
                if status == ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY:
                    phone.fragment_runs.append(now)
                elif status == ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                    phone.early += 1
                else:
                    phone.whole_runs.append(now)
    except Exception as exc:  # noqa: BLE001 - a dropped connection is a finding, reported
        phone.problems.append(f"reader: {type(exc).__name__}: {str(exc)[:120]}")


async def timer(phone: Phone, stop: asyncio.Event, rng: random.Random) -> None:
    """The browser's setInterval for the fragment: a rerun every interval, whether or not the last one answered."""
    if not phone.fragment_id:
        return
    await asyncio.sleep(rng.uniform(0, phone.interval_s))
    next_at = time.monotonic()
    while not stop.is_set():
        try:
            await phone.student.rerun(fragment_id=phone.fragment_id, auto=True)
            phone.sent += 1
        except Exception as exc:  # noqa: BLE001
            phone.problems.append(f"timer: {type(exc).__name__}: {str(exc)[:120]}")
            return
        next_at += phone.interval_s
        if phone.student.page.auto_reruns.get(phone.fragment_id) is None:  # the server stopped the timer
            phone.fragment_id = next(iter(phone.student.page.auto_reruns), "")
            if not phone.fragment_id:
                return
        with _suppress_timeout():
            await asyncio.wait_for(stop.wait(), max(0.0, next_at - time.monotonic()))


class _suppress_timeout:
    def __enter__(self):
        return self

    def __exit__(self, kind, *_):
        return kind is TimeoutError


def room_read_cpu_ms(store: poll_store.PollStore, code: str, n: int = 200) -> dict:
    """store.room(code) timed in this process (thread CPU and wall ms a call), as the fragment calls it."""
    cpu, wall = [], []
    for _ in range(n):
        c0, w0 = time.thread_time(), time.perf_counter()
        store.room(code)
        cpu.append((time.thread_time() - c0) * 1000)
        wall.append((time.perf_counter() - w0) * 1000)
    return {
        "calls": n,
        "cpu_ms_median": round(statistics.median(cpu), 3),
        "wall_ms_median": round(statistics.median(wall), 3),
        "wall_ms_max": round(max(wall), 2),
    }


class Meter:
    """The replicas' CPU seconds, the load and thread counts, and this process's CPU over a window."""

    def __init__(self, pids: dict[int, int]):
        self.pids = pids

    def start(self) -> None:
        self.cpu0 = {p: proc_cpu_s(pid) for p, pid in self.pids.items()}
        self.t0, self.own0 = time.monotonic(), time.process_time()

    def stop(self) -> dict:
        span = time.monotonic() - self.t0
        per = {str(p): round((proc_cpu_s(pid) - self.cpu0[p]) / span, 4) for p, pid in self.pids.items()}
        return {
            "span_s": round(span, 2),
            "replica_cpu_s_per_s": per,
            "replicas_cpu_s_per_s": round(sum(per.values()), 4),
            "bench_process_cpu_s_per_s": round((time.process_time() - self.own0) / span, 4),
            "loadavg_end": [round(x, 2) for x in os.getloadavg()],
            "machine_threads_end": machine_threads(),
            "replica_threads_end": {str(p): proc_threads(pid) for p, pid in self.pids.items()},
        }


async def wait_quiet(pids: dict[int, int]) -> float:
    """Seconds until every replica has finished its start-up work: `run_class.sh` is ready before the replicas'
    warm-up thread (kvviz.ui.warm) is done, and that thread spent about 0.2 core a replica for 20 s after it at load
    8-11. A baseline taken then measures the warm-up, not the class."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < QUIET_TIMEOUT_S:
        cpu0 = {p: proc_cpu_s(pid) for p, pid in pids.items()}
        await asyncio.sleep(2)
        if all((proc_cpu_s(pid) - cpu0[p]) / 2 < QUIET_CPU for p, pid in pids.items()):
            break
    return time.monotonic() - t0


def count_between(times: list[float], t0: float, t1: float) -> int:
    return sum(t0 <= t < t1 for t in times)


def shows_move(student: Student, move: str) -> bool:
    if move == "next":
        return student.page.find_key("button", "join_choice_2_1_0") is not None
    return any(
        k == "button" and el.id.endswith("-join_choice_1_1_0") and el.disabled
        for k, el, _ in student.page.elements.values()
    )


async def run(args, url: str, run_dir: Path, ports: list[int], store: poll_store.PollStore) -> dict:
    room = store.create_room()
    code, host = room.code, room.host_key
    await asyncio.to_thread(store.open_step, code, host, fixed_polls(1))
    pids = {port: int((run_dir / f"replica-{port}.pid").read_text()) for port in ports}
    meter = Meter(pids)
    loads: list[float] = []
    quiet_s = await wait_quiet(pids)
    load_before = [round(x, 2) for x in os.getloadavg()]

    async def sample_load():
        while True:
            loads.append(os.getloadavg()[0])
            await asyncio.sleep(2)

    sampler = asyncio.create_task(sample_load())
    gate = asyncio.Semaphore(JOIN_CONCURRENCY)
    phones: list[Phone] = []

    async def join(i: int) -> Phone:
        query = f"room={code}" + ("&lang=zh-CN" if i % 2 else "")
        phone = Phone(i, Student(url, "join", query, {"kvviz_voter": secrets.token_urlsafe(24)}))
        async with gate:
            try:
                await phone.student.open()
            except Exception as exc:  # noqa: BLE001
                phone.problems.append(f"join: {type(exc).__name__}: {str(exc)[:120]}")
                return phone
        autos = phone.student.page.auto_reruns
        if not autos:
            phone.problems.append("the page asked for no fragment timer (no auto_rerun)")
        else:
            phone.fragment_id, phone.interval_s = next(iter(autos.items()))
        return phone

    t_join = time.monotonic()
    phones = list(await asyncio.gather(*(join(i) for i in range(args.students))))
    join_s = time.monotonic() - t_join
    live = [p for p in phones if p.student.ws is not None and not p.problems]
    readers = [asyncio.create_task(read_forever(p)) for p in live]
    await asyncio.sleep(SETTLE_S)

    # Baseline: connected, no fragment reruns
    meter.start()
    b0 = time.monotonic()
    await asyncio.sleep(args.window)
    baseline = meter.stop()
    b1 = time.monotonic()

    # Follow: every phone's timer running
    stop = asyncio.Event()
    rng = random.Random(7)
    timers = [asyncio.create_task(timer(p, stop, rng)) for p in live]
    warm = max((p.interval_s for p in live), default=1.0)
    await asyncio.sleep(warm)
    sent0 = sum(p.sent for p in live)
    meter.start()
    f0 = time.monotonic()
    await asyncio.sleep(args.window)
    follow = meter.stop()
    f1 = time.monotonic()
    sent1 = sum(p.sent for p in live)
    runs = sum(count_between(p.fragment_runs, f0, f1) for p in live)
    wholes_in_window = sum(count_between(p.whole_runs, f0, f1) for p in live)
    follow.update(
        {
            "fragment_reruns_sent_per_s": round((sent1 - sent0) / (f1 - f0), 2),
            "fragment_runs_finished_per_s": round(runs / (f1 - f0), 2),
            "whole_page_runs_in_window": wholes_in_window,
        }
    )
    base_runs = sum(count_between(p.fragment_runs, b0, b1) for p in live)
    baseline["fragment_runs_finished_per_s"] = round(base_runs / (b1 - b0), 2)

    # The teacher moves once, the timers still running
    action = {"next": lambda: store.next_question(code, host, fixed_polls(2)), "lock": lambda: store.lock(code, host)}[
        args.move
    ]
    meter.start()
    await asyncio.to_thread(action)
    t_move = time.monotonic()
    deadline = t_move + FOLLOW_TIMEOUT_S
    latencies: dict[int, float] = {}
    while time.monotonic() < deadline and len(latencies) < len(live):
        for p in live:
            if p.index not in latencies:
                after = [t for t in p.whole_runs if t >= t_move]
                if after and shows_move(p.student, args.move):
                    latencies[p.index] = after[0] - t_move
        await asyncio.sleep(0.05)
    move_cpu = meter.stop()
    stop.set()
    await asyncio.gather(*timers)
    for p in live:
        await p.student.close()
    for r in readers:
        r.cancel()
    sampler.cancel()
    room_read = await asyncio.to_thread(room_read_cpu_ms, store, code)
    lat = sorted(latencies.values())
    interval = statistics.median([p.interval_s for p in live]) if live else None
    cost = round(follow["replicas_cpu_s_per_s"] - baseline["replicas_cpu_s_per_s"], 4)
    runs_per_s = follow["fragment_runs_finished_per_s"]
    return {
        "db": args.db,
        "students": args.students,
        "replicas": args.replicas,
        "window_s": args.window,
        "move": args.move,
        "room": code,
        "phones_connected": len(live),
        "join_s": round(join_s, 1),
        "replicas_quiet_after_s": round(quiet_s, 1),
        "fragment_interval_s": interval,
        "baseline": baseline,
        "follow": follow,
        "follow_cost_cpu_s_per_s": cost,
        "goal_cpu_s_per_s": GOAL_CORE,
        "under_goal": cost <= GOAL_CORE,
        "cpu_ms_per_fragment_run": round(1000 * cost / runs_per_s, 2) if runs_per_s else None,
        "store_room_read": room_read,
        "store_share_of_fragment_run": (
            round(room_read["cpu_ms_median"] * runs_per_s / 1000 / cost, 3) if cost > 0 and runs_per_s else None
        ),
        "move_check": {
            "followed": len(lat),
            "of": len(live),
            "median_s": round(statistics.median(lat), 3) if lat else None,
            "max_s": round(lat[-1], 3) if lat else None,
            "goal_s": GOAL_FOLLOW_S,
            "timeout_s": FOLLOW_TIMEOUT_S,
            "cpu": move_cpu,
        },
        "loadavg_before": load_before,
        "loadavg_peak_1min": round(max(loads), 2) if loads else None,
        "loadavg_after": [round(x, 2) for x in os.getloadavg()],
        "cpu_count": os.cpu_count(),
        "phones_by_replica": {
            str(k): sum(p.student.cookies.get("kvviz_replica") == k for p in phones)
            for k in sorted({p.student.cookies.get("kvviz_replica") for p in phones}, key=str)
        },
        "problems": {p.index: p.problems for p in phones if p.problems},
    }


def summary(r: dict) -> str:
    b, f, m = r["baseline"], r["follow"], r["move_check"]
    lines = [
        ("database / phones / replicas", f"{r['db']} / {r['phones_connected']} of {r['students']} / {r['replicas']}"),
        ("fragment interval", f"{r['fragment_interval_s']} s (the server's auto_rerun)"),
        (
            "baseline CPU s/s (no follow)",
            f"{b['replicas_cpu_s_per_s']} {b['replica_cpu_s_per_s']} over {b['span_s']} s",
        ),
        ("follow CPU s/s", f"{f['replicas_cpu_s_per_s']} {f['replica_cpu_s_per_s']} over {f['span_s']} s"),
        (
            "follow cost above baseline",
            f"{r['follow_cost_cpu_s_per_s']} core (goal <= {r['goal_cpu_s_per_s']}: "
            f"{'met' if r['under_goal'] else 'NOT met'})",
        ),
        (
            "fragment reruns sent / finished",
            f"{f['fragment_reruns_sent_per_s']} / {f['fragment_runs_finished_per_s']} per s",
        ),
        ("replica CPU ms per fragment run", r["cpu_ms_per_fragment_run"]),
        (
            "store.room() CPU ms (this process)",
            f"{r['store_room_read']['cpu_ms_median']} (share of the follow's cost: {r['store_share_of_fragment_run']})",
        ),
        (
            "teacher moves: followed",
            f"{m['followed']} of {m['of']}, median {m['median_s']} s, max {m['max_s']} s (goal about {m['goal_s']} s)",
        ),
        ("bench process CPU s/s (follow)", f["bench_process_cpu_s_per_s"]),
        (
            "load avg before / peak / after",
            f"{r['loadavg_before'][0]} / {r['loadavg_peak_1min']} / {r['loadavg_after'][0]} on {r['cpu_count']} cores",
        ),
        ("threads: machine / replicas", f"{f['machine_threads_end']} / {f['replica_threads_end']}"),
        ("phones with problems", len(r["problems"])),
    ]
    width = max(len(k) for k, _ in lines)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", choices=("sqlite", "postgresql"), default="sqlite")
    ap.add_argument("--students", type=int, default=40)
    ap.add_argument("--replicas", type=int, default=2)
    ap.add_argument("--window", type=float, default=20.0, help="seconds of each measured window")
    ap.add_argument("--move", choices=("next", "lock"), default="next", help="the teacher's move after the window")
    ap.add_argument("--json", help="default bench/results/poll_follow_<students>.json")
    args = ap.parse_args()
    if not 1 <= args.students <= MAX_STUDENTS or not 1 <= args.replicas <= 4 or not 2 <= args.window <= MAX_WINDOW_S:
        ap.error(f"caps: 1..{MAX_STUDENTS} students, 1..4 replicas, window 2..{MAX_WINDOW_S:.0f} s")
    out = Path(args.json or ROOT / "bench" / "results" / f"poll_follow_{args.students}.json")
    with database(args.db) as db_url, class_servers(db_url, args.replicas) as (url, run_dir, ports):
        store = poll_store.PollStore(db_url)
        try:
            result = asyncio.run(
                asyncio.wait_for(
                    run(args, url, run_dir, ports, store), QUIET_TIMEOUT_S + 120 + 3 * args.window + FOLLOW_TIMEOUT_S
                )
            )
        finally:
            store.engine.dispose()
    full = {**result, "command": " ".join(["python", "bench/poll_follow.py", *sys.argv[1:]])}
    out.write_text(json.dumps(full, indent=1, ensure_ascii=False))
    print(summary(result))
    print(f"(JSON: {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out})")


if __name__ == "__main__":
    main()
