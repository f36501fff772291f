"""Class poll load: N phones vote on 12 questions x 2 rounds through nginx and 2 replicas, as a class would.

    python bench/poll_load.py                              # SQLite (a new file), 40 students
    python bench/poll_load.py --db postgresql              # a throwaway PostgreSQL (tests/support/postgres.py)
    python bench/poll_load.py --kill-replica               # SIGKILL one replica in the middle of step 6, round 1

What runs:
- deploy/run_class.sh -n 2 --listen 127.0.0.1 on a free port block, with KVVIZ_POLL_DB in its environment (the
  script exports nothing over it, so every replica inherits it) and a run dir of our own (its replica-PORT.pid);
- the teacher, in this process, directly on the store (the same KVVIZ_POLL_DB): a room, then steps 1..12, each a
  fixed PollQuestion (its words the same in every language), round 1 open -> lock -> vote again (round 2 open) -> reveal.
  A round closes when every student has voted (or ROUND_TIMEOUT_S), and lasts at least MIN_ROUND_S: the store
  allows a voter VOTES_PER_MINUTE votes a calendar minute, and a class is not faster than that;
- the projector's refresh, in this process too: a thread calls store.voted_count once a second, as the projector's
  fragment does (kvviz.ui.poll.live_count). Its cost is the CPU this thread spends in voted_count (thread_time),
  per second of refresh. The fragment's own Streamlit rerun inside a replica (its delta to the projector) is not
  in that figure: a projector session needs the lesson's class mode and a model; the replicas' CPU per second
  while the students sit idle (connected, nothing clicked) is reported beside it;
- N protocol-level students (bench/classroom_ws.Student: Streamlit's WebSocket protocol, no browser) on
  /join?room=CODE with a cookie kvviz_voter=<token> (a reconnect keeps the voter); odd students read the page in
  zh-CN (?lang=zh-CN). For each round, after the teacher opens it and a random wait of up to --spread seconds:
  press join_refresh, then one choice button (join_choice_{step}_{round}_{i}, found by key), timing the
  acknowledgement: from sending the click to the ForwardMsg after which the page shows the success alert
  ("Vote received").

Every tap is accounted for as the phone's page does it (kvviz/assets/web/join_phone.js, whose rule tap() applies to
the messages read): the page draws which run of which session it is and how many taps that session acted on
(.kvviz-join-state); the next run after a tap either acted on it (the receipt, "acknowledged", or a sentence saying
why not, "refused") or did not (another session: the tap went to a replica that is gone), and no run within 10 s
counts as not: then the page shows "Your tap did not reach the class poll ... Tap your answer again" ("told"), and the
student taps again. A dropped connection after a tap is told too (the browser reconnects to a new session). A tap
with none of these within ACK_TIMEOUT_S is lost without a message; the run exits 1 unless there are none and taps
sent = acknowledged + told + refused.

Reported: ack median / p90 / max, taps sent / acknowledged / told / refused / lost without a message, votes sent vs
counted per question and round (the store's rows; every acknowledged vote must be a row with the chosen index), the
load average (before, the run's peak, after), thread counts (the machine's, from /proc/loadavg, and each replica's),
the replicas' CPU seconds, the projector's refresh cost, and with --kill-replica how many students lost their
connection and rejoined. JSON in bench/results/.
Localhost only; caps: MAX_STUDENTS students, --max-minutes wall clock for the class (servers' start not counted).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import os
import random
import re
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from classroom_load import _stats  # noqa: E402
from classroom_ws import Student  # noqa: E402
from streamlit.proto.Alert_pb2 import Alert  # noqa: E402
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg  # noqa: E402
from websockets.exceptions import ConnectionClosed  # noqa: E402

from kvviz.i18n import Message  # noqa: E402
from kvviz.poll import store as poll_store  # noqa: E402
from kvviz.poll.question import PollQuestion  # noqa: E402

MAX_STUDENTS = 80
STEPS = 12  # the lesson's steps 1..12
ROUNDS = (1, 2)
MIN_ROUND_S = 60 / poll_store.VOTES_PER_MINUTE + 1  # 7 s: at most 9 rounds start in a calendar minute
ROUND_TIMEOUT_S = 60.0  # a round closes anyway after this: a student still voting is reported
ACK_TIMEOUT_S = 30.0
REFRESH_EVERY_S = 1.0  # kvviz.ui.poll.LIVE_REFRESH_S
KILL_STEP = 6  # --kill-replica: in this step's round 1
SERVER_START_S = 240


def fixed_polls(step: int) -> PollQuestion:
    """The step's poll: 3 to 5 choices, the right one somewhere else each step; its words the same in every language
    (Message.verbatim: a load test's phones read no translation)."""
    n = 3 + step % 3
    right = step % n
    return PollQuestion(
        step,
        Message.verbatim(f"Question {step}: how many bytes?"),
        tuple(Message.verbatim(f"{(i + 1) * 64 * step:,} B") for i in range(n)),
        right,
        tuple(None if i == right else Message.verbatim("Off by a factor.") for i in range(n)),
    )


# ----- the machine ----------------------------------------------------------------------------------------------
def proc_cpu_s(pid: int) -> float | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def proc_threads(pid: int) -> int | None:
    try:
        return next(
            int(line.split()[1])
            for line in Path(f"/proc/{pid}/status").read_text().splitlines()
            if line.startswith("Threads:")
        )
    except (OSError, StopIteration):
        return None


def machine_threads() -> int:
    """Every thread on the machine (/proc/loadavg's 4th field: running/total scheduling entities)."""
    return int(Path("/proc/loadavg").read_text().split()[3].split("/")[1])


def free_port_block(n: int) -> int:
    """A first port p with p .. p+n-1 free on 127.0.0.1 (run_class.sh refuses a busy one anyway)."""
    rng = random.Random()
    for _ in range(50):
        base = rng.randrange(20000, 30000)
        with contextlib.ExitStack() as stack:
            try:
                for port in range(base, base + n):
                    sock = stack.enter_context(socket.socket())
                    sock.bind(("127.0.0.1", port))
                return base
            except OSError:
                continue
    raise RuntimeError("no free port block")


@contextlib.contextmanager
def class_servers(db_url: str, replicas: int):
    """deploy/run_class.sh with KVVIZ_POLL_DB=db_url; yields (front url, run dir, replica ports). SIGTERM after: its
    trap stops nginx and every replica."""
    port = free_port_block(replicas + 1)
    run_dir = Path(tempfile.mkdtemp(prefix="kvviz-pollbench-"))
    log = (run_dir / "run_class.log").open("w")
    env = {**os.environ, poll_store.ENV_URL: db_url}
    proc = subprocess.Popen(
        [
            str(ROOT / "deploy" / "run_class.sh"),
            "-n",
            str(replicas),
            "-p",
            str(port),
            "--listen",
            "127.0.0.1",
            "--run-dir",
            str(run_dir),
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + SERVER_START_S
        while not (run_dir / "ready").exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"run_class.sh did not start: {(run_dir / 'run_class.log').read_text()[-2000:]}")
            time.sleep(0.5)
        yield f"http://127.0.0.1:{port}", run_dir, [port + i for i in range(1, replicas + 1)]
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


@contextlib.contextmanager
def database(kind: str):
    """The store's URL: a new SQLite file, or tests/support/postgres.py's throwaway server."""
    if kind == "sqlite":
        with tempfile.TemporaryDirectory(prefix="kvviz-pollbench-db-") as top:
            yield f"sqlite:///{top}/poll.sqlite3"
        return
    sys.path.insert(0, str(ROOT / "tests"))
    from support.postgres import binaries, throwaway_postgres

    if binaries() is None:
        raise SystemExit("PostgreSQL is not installed (/usr/lib/postgresql/*/bin/initdb): apt-get install postgresql")
    with throwaway_postgres() as url:
        yield url


# ----- the class ------------------------------------------------------------------------------------------------
@dataclass
class Phone:
    index: int
    token: str
    replicas: list[str] = field(default_factory=list)  # the kvviz_replica cookie after each (re)connect
    votes: list[dict] = field(default_factory=list)  # one per click sent: step, round, choice, ack_ms, refresh_ms
    rejoins: int = 0
    problems: list[str] = field(default_factory=list)


class Projector(threading.Thread):
    """The projector's fragment: store.voted_count(code, step, round) once a second, timed."""

    def __init__(self, store: poll_store.PollStore, code: str):
        super().__init__(daemon=True)
        self.store, self.code, self.current = store, code, (0, 1)
        self.cpu_s: list[float] = []
        self.wall_ms: list[float] = []
        self.stop = threading.Event()
        self.span_s = 0.0

    def run(self) -> None:
        start = time.monotonic()
        while not self.stop.wait(REFRESH_EVERY_S):
            step, round_ = self.current
            if not step:
                continue
            cpu0, wall0 = time.thread_time(), time.perf_counter()
            self.store.voted_count(self.code, step, round_)
            self.cpu_s.append(time.thread_time() - cpu0)
            self.wall_ms.append((time.perf_counter() - wall0) * 1000)
        self.span_s = time.monotonic() - start


def store_call_ms(store: poll_store.PollStore, n: int = 100) -> dict:
    """CPU (thread_time) and wall ms per store call a phone's rerun makes, in this process on the same database,
    with the servers idle: a refresh reads room() and poll(), a tap adds vote(). A new room: the class's is closed."""
    room = store.create_room()
    store.open_step(room.code, room.host_key, fixed_polls(1))
    calls = {
        "room": lambda i: store.room(room.code),
        "poll": lambda i: store.poll(room.code),
        "vote": lambda i: store.vote(room.code, f"bench-voter-{i:04d}", 1, 1, i % 3),
        "voted_count": lambda i: store.voted_count(room.code, 1, 1),
    }
    out = {}
    for name, call in calls.items():
        cpu, wall = [], []
        for i in range(n):
            cpu0, wall0 = time.thread_time(), time.perf_counter()
            call(i)
            cpu.append((time.thread_time() - cpu0) * 1000)
            wall.append((time.perf_counter() - wall0) * 1000)
        out[name] = {
            "cpu_ms_median": round(statistics.median(cpu), 2),
            "wall_ms_median": round(statistics.median(wall), 2),
            "wall_ms_max": round(max(wall), 2),
        }
    return out


def acked(student: Student) -> bool:
    """The page shows the vote's receipt: a success alert (only the receipt is one while a round is open)."""
    return any(kind == "alert" and el.format == Alert.SUCCESS for kind, el, _ in student.page.elements.values())


def shown_alerts(student: Student) -> list[str]:
    return [el.body[:160] for kind, el, _ in student.page.elements.values() if kind == "alert"]


class Lesson:
    """The teacher's side and the signals the students wait on."""

    def __init__(self, store, students: int, steps: int):
        self.store, self.room = store, store.create_room()
        # every phone here reaches nginx from 127.0.0.1: one shared address, so the teacher allows the whole class
        # from it, as a school behind one router does (docs/deploying.md); bench/poll_stuffing.py keeps the default
        store.set_limits(self.room.code, self.room.host_key, per_address=students, class_size=None)
        self.steps = tuple(range(1, steps + 1))
        self.opened = {(s, r): asyncio.Event() for s in self.steps for r in ROUNDS}
        self.done = {(s, r): asyncio.Event() for s in self.steps for r in ROUNDS}
        self.voted: Counter = Counter()
        self.students = students
        self.joined = 0
        self.all_joined = asyncio.Event()
        self.rounds: list[dict] = []
        self.killed: dict | None = None

    def joined_one(self) -> None:
        self.joined += 1
        if self.joined == self.students:
            self.all_joined.set()

    def finished(self, key: tuple[int, int]) -> None:
        self.voted[key] += 1
        if self.voted[key] == self.students:
            self.done[key].set()

    async def teach(self, projector: Projector, kill=None) -> None:
        code, host = self.room.code, self.room.host_key
        for step in self.steps:
            for round_ in ROUNDS:
                if round_ == 1:
                    await asyncio.to_thread(self.store.open_step, code, host, fixed_polls(step))
                else:
                    await asyncio.to_thread(self.store.vote_again, code, host)
                opened_at = time.monotonic()
                projector.current = (step, round_)
                self.opened[(step, round_)].set()
                if kill is not None and (step, round_) == (KILL_STEP, 1):
                    await kill()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.done[(step, round_)].wait(), ROUND_TIMEOUT_S)
                all_in_s = time.monotonic() - opened_at
                await asyncio.sleep(max(0.0, MIN_ROUND_S - all_in_s))
                action = self.store.lock if round_ == 1 else self.store.reveal
                await asyncio.to_thread(action, code, host)
                self.rounds.append(
                    {
                        "step": step,
                        "round": round_,
                        "students_done": self.voted[(step, round_)],
                        "all_in_s": round(all_in_s, 2),
                    }
                )


# ----- a tap, as the phone's page accounts for it (kvviz/assets/web/join_phone.js) ---------------------------------
LOST_AFTER_S = 10.0  # join_phone.js's LOST_AFTER_MS: no run drawn this long after a tap, and the page says so
MARKER = re.compile(r'class="kvviz-join-state" data-run="([^"]*)" data-taps="(\d+)"')


class NotSent(Exception):
    """The tap's message could not be sent: the connection was already closed (a browser shows the page
    reconnecting with its buttons disabled, so no tap is made)."""


def drawn_marker(student: Student) -> tuple[str, int] | None:
    """The page's .kvviz-join-state (pages/join.py): (which run of which session, "<session>:<run>"; how many taps
    that session acted on), as join_phone.js reads it from the DOM; None before the page drew one."""
    for kind, el, _ in student.page.elements.values():
        if kind == "html" and "kvviz-join-state" in el.body and (found := MARKER.search(el.body)):
            return found.group(1), int(found.group(2))
    return None


def receipt_this_run(student: Student) -> bool:
    """The page shows the vote's receipt (a success alert) drawn by the run now under way or just finished."""
    return any(
        kind == "alert" and el.format == Alert.SUCCESS and path in student.page.touched
        for path, (kind, el, _) in student.page.elements.items()
    )


async def tap(student: Student, key: str) -> dict:
    """Tap the choice button `key` and account for it as the phone's page does (join_phone.js): the marker drawn when
    tapped is remembered; the next run drawn either acted on the tap (the same session, more taps) or did not (another
    session: the tap went to a replica that is gone), and no run within LOST_AFTER_S counts as not. Returns the tap's
    outcome, after every message read:

    - "acknowledged": a run that acted on the tap drew the receipt ("Vote received"), ack_ms from the send;
    - "refused": a run that acted on it finished with no receipt (a sentence says why: voting closed, a limit);
    - "told": the page would show join_phone.js's line "Your tap did not reach the class poll ... Tap your answer
      again": the next run drawn did not act on it, or none came within LOST_AFTER_S, or the connection dropped (a
      browser then reconnects, to a new session on another replica, whose first run is another session's: told;
      `disconnected` True and told_ms left to the caller, which reconnects);
    - "silent": none of these within ACK_TIMEOUT_S: a tap lost without a message (the count that must stay 0)."""
    found = student.page.find_key("button", key)
    if found is None:
        raise RuntimeError(f"no button keyed {key!r}")
    before = drawn_marker(student) or ("", 0)
    t0 = time.perf_counter()
    try:
        await student.rerun(trigger=found[0], fragment_id=found[1])
    except ConnectionClosed as closed:
        raise NotSent(str(closed)) from closed
    out = {"outcome": "silent", "ack_ms": None, "told_ms": None, "disconnected": False, "alerts": []}
    acted = False
    while True:
        elapsed_s = time.perf_counter() - t0
        if elapsed_s > ACK_TIMEOUT_S or (not acted and elapsed_s > LOST_AFTER_S):
            if not acted:
                out.update(outcome="told", told_ms=round(LOST_AFTER_S * 1000, 1))
            out["alerts"] = shown_alerts(student)
            return out
        limit_s = (ACK_TIMEOUT_S if acted else LOST_AFTER_S) - elapsed_s
        try:
            data = await asyncio.wait_for(student.ws.recv(), limit_s)
        except TimeoutError:
            continue
        except ConnectionClosed:
            out.update(outcome="told", disconnected=True)
            return out
        msg = ForwardMsg()
        msg.ParseFromString(data)
        msg = student.page.apply(msg)
        kind = msg.WhichOneof("type")
        now_ms = round((time.perf_counter() - t0) * 1000, 1)
        marker = drawn_marker(student)
        if not acted and marker is not None and marker[0] != before[0]:
            same_session = marker[0].split(":")[0] == before[0].split(":")[0]
            if not (same_session and marker[1] > before[1]):
                out.update(outcome="told", told_ms=now_ms, alerts=shown_alerts(student))
                return out
            acted = True  # this session acted on the tap: the receipt, or a sentence, comes in this run
        if acted and receipt_this_run(student):
            out.update(outcome="acknowledged", ack_ms=now_ms)
            return out
        if acted and kind == "script_finished" and msg.script_finished != ForwardMsg.FINISHED_EARLY_FOR_RERUN:
            out.update(outcome="refused", alerts=shown_alerts(student))
            return out


async def phone(url: str, lesson: Lesson, me: Phone, spread_s: float) -> None:
    rng = random.Random(me.index)
    query = f"room={lesson.room.code}" + ("&lang=zh-CN" if me.index % 2 else "")
    cookies = {"kvviz_voter": me.token}
    student = None

    async def connect() -> Student:
        nonlocal student
        if student is not None:
            with contextlib.suppress(Exception):
                await student.close()
        student = Student(url, "join", query, cookies)
        await student.open()
        cookies.update((k, v) for k, v in student.cookies.items() if k == "kvviz_replica")  # as a browser keeps it
        me.replicas.append(student.cookies.get("kvviz_replica", "?"))
        return student

    try:
        await connect()
    except Exception as exc:  # noqa: BLE001 - reported; the first round tries again
        me.problems.append(f"join: {type(exc).__name__}: {str(exc)[:120]}")
        student = None
    finally:
        lesson.joined_one()
    await lesson.all_joined.wait()
    for step in lesson.steps:
        for round_ in ROUNDS:
            key = (step, round_)
            await lesson.opened[key].wait()
            await asyncio.sleep(rng.uniform(0, spread_s))
            choice, reconnect = None, student is None
            for attempt in range(3):  # a tap the page says did not reach the poll is tapped again
                try:
                    if reconnect:
                        me.rejoins += attempt > 0
                        await connect()
                        reconnect = False
                    t0 = time.perf_counter()
                    await student.click_key("join_refresh", timeout_s=ACK_TIMEOUT_S)
                    refresh_ms = (time.perf_counter() - t0) * 1000
                    prefix = f"join_choice_{step}_{round_}_"
                    n = sum(student.page.find_key("button", f"{prefix}{i}") is not None for i in range(5))
                    if not n:
                        me.problems.append(f"{key}: no choice buttons after refresh; alerts {shown_alerts(student)}")
                        break
                    choice = rng.randrange(n) if choice is None else choice  # a retry votes the same again
                    sent_at = time.perf_counter()
                    result = await tap(student, f"{prefix}{choice}")
                except Exception as exc:  # noqa: BLE001 - no tap sent: a dropped connection (the killed replica)
                    me.problems.append(f"{key} attempt {attempt}: {type(exc).__name__}: {str(exc)[:120]}")
                    reconnect = True
                    continue
                vote = {
                    "step": step,
                    "round": round_,
                    "choice": choice,
                    "refresh_ms": round(refresh_ms, 1),
                    "ack_ms": result["ack_ms"],
                    "outcome": result["outcome"],
                    "told_ms": result["told_ms"],
                    "replica": student.cookies.get("kvviz_replica"),
                    "attempt": attempt,
                }
                me.votes.append(vote)
                if result["disconnected"]:  # the browser reconnects by itself; its new session's first run tells
                    me.problems.append(f"{key} attempt {attempt}: the connection dropped after the tap")
                    reconnect = True
                    with contextlib.suppress(Exception):
                        me.rejoins += 1
                        await connect()
                        reconnect = False
                    drawn_ms = (time.perf_counter() - sent_at) * 1000
                    vote["told_ms"] = round(min(drawn_ms, LOST_AFTER_S * 1000), 1)  # that run, or the page's timer
                if result["outcome"] in ("acknowledged", "refused"):
                    if result["outcome"] == "refused":
                        me.problems.append(f"{key}: refused; alerts {result['alerts']}")
                    break
                if result["outcome"] == "silent":
                    me.problems.append(f"{key}: lost without a message; alerts {result['alerts']}")
                    break
            lesson.finished(key)
    with contextlib.suppress(Exception):
        await student.close()


async def run_class(args, url: str, run_dir: Path, ports: list[int], store) -> dict:
    lesson = Lesson(store, args.students, args.steps)
    projector = Projector(store, lesson.room.code)
    phones = [Phone(i, secrets.token_urlsafe(24)) for i in range(args.students)]
    pids = {port: int((run_dir / f"replica-{port}.pid").read_text()) for port in ports}
    loads: list[tuple[float, float]] = []
    cpu_at_kill: dict[int, float | None] = {}  # the killed replica's CPU is read just before the kill

    async def sample_load():
        while True:
            loads.append((os.getloadavg()[0], machine_threads()))
            await asyncio.sleep(2)

    async def kill():
        await asyncio.sleep(args.spread / 2)  # students are mid-vote
        port = ports[0]
        cpu_at_kill[port] = proc_cpu_s(pids[port])
        os.kill(pids[port], signal.SIGKILL)
        lesson.killed = {
            "port": port,
            "pid": pids[port],
            "at": f"step {KILL_STEP} round 1, {args.spread / 2:.1f} s after it opened",
        }

    sampler = asyncio.create_task(sample_load())
    clients = [asyncio.create_task(phone(url, lesson, p, args.spread)) for p in phones]
    await lesson.all_joined.wait()
    # Idle: every phone connected, nothing clicked; the projector's count loop already running.
    projector.start()
    cpu0 = {p: proc_cpu_s(pid) for p, pid in pids.items()}
    await asyncio.sleep(5)
    idle = {str(p): round((proc_cpu_s(pid) - cpu0[p]) / 5, 3) for p, pid in pids.items()}
    cpu_start, t_start, load_before = {p: proc_cpu_s(pid) for p, pid in pids.items()}, time.monotonic(), os.getloadavg()
    threads_before = {str(p): proc_threads(pid) for p, pid in pids.items()}
    await lesson.teach(projector, kill if args.kill_replica else None)
    await asyncio.gather(*clients)
    class_s = time.monotonic() - t_start
    cpu_now = {p: cpu_at_kill[p] if p in cpu_at_kill else proc_cpu_s(pid) for p, pid in pids.items()}
    cpu_used = {str(p): None if cpu_now[p] is None else round(cpu_now[p] - cpu_start[p], 2) for p in pids}
    threads_after = {str(p): proc_threads(pid) for p, pid in pids.items()}
    projector.stop.set()
    projector.join()
    sampler.cancel()
    calls = await asyncio.to_thread(store_call_ms, store)
    return report(
        args,
        lesson,
        phones,
        projector,
        store,
        {
            "class_s": round(class_s, 1),
            "loadavg_before": [round(x, 2) for x in load_before],
            "loadavg_peak_1min": round(max(x for x, _ in loads), 2),
            "loadavg_after": [round(x, 2) for x in os.getloadavg()],
            "machine_threads_peak": max(t for _, t in loads),
            "replica_threads_before": threads_before,
            "replica_threads_after": threads_after,
            "replica_cpu_s": cpu_used,
            "replica_cpu_s_per_s_idle": idle,
            "cpu_count": os.cpu_count(),
            "store_call_ms": calls,
        },
    )


def report(args, lesson: Lesson, phones: list[Phone], projector: Projector, store, machine: dict) -> dict:
    code = lesson.room.code
    rows = {}
    with store.engine.connect() as conn:
        for r in conn.execute(poll_store.votes.select().where(poll_store.votes.c.room == code)):
            rows[(r.step, r.round, r.voter_sha256)] = r.choice
    sent, acks, lost, per_round = Counter(), Counter(), [], []
    for p in phones:
        voter = hashlib.sha256(p.token.encode()).hexdigest()
        for key in {(v["step"], v["round"]) for v in p.votes}:
            sent[key] += 1
        for v in p.votes:
            if v["ack_ms"] is not None:
                acks[(v["step"], v["round"])] += 1
                if rows.get((v["step"], v["round"], voter)) != v["choice"]:
                    lost.append({"student": p.index, **v})
    counted = Counter((s, r) for s, r, _ in rows)
    for s in lesson.steps:
        for r in ROUNDS:
            per_round.append(
                {"step": s, "round": r, "sent": sent[(s, r)], "acked": acks[(s, r)], "counted": counted[(s, r)]}
            )
    taps = Counter(v["outcome"] for p in phones for v in p.votes)
    told_ms = [v["told_ms"] for p in phones for v in p.votes if v["outcome"] == "told" and v["told_ms"] is not None]
    acks_ms = [v["ack_ms"] for p in phones for v in p.votes if v["ack_ms"] is not None]
    refresh_ms = [v["refresh_ms"] for p in phones for v in p.votes]
    ack = _stats(acks_ms)
    total_cpu = sum(c for c in machine["replica_cpu_s"].values() if c is not None)
    clicks = sum(len(p.votes) for p in phones)
    return {
        "db": args.db,
        "students": args.students,
        "replicas": args.replicas,
        "spread_s": args.spread,
        "kill_replica": args.kill_replica,
        "room": code,
        "steps": len(lesson.steps),
        "rounds": len(ROUNDS),
        "ack": ack,
        "ack_goal_p90_s": 0.5,
        "ack_p90_over_goal_s": None if not acks_ms else round(max(0.0, ack["p90_s"] - 0.5), 3),
        "refresh": _stats(refresh_ms),
        "votes_sent": sum(sent.values()),
        "clicks_sent": clicks,
        "votes_acked": len(acks_ms),
        "votes_counted": sum(counted.values()),
        # every tap sent, as the phone's page accounts for it (join_phone.js's rule, applied to the messages read)
        "taps": {
            "sent": clicks,
            "acknowledged": taps["acknowledged"],
            "told": taps["told"],
            "refused": taps["refused"],
            "lost_without_a_message": taps["silent"],
            "told_after_s": _stats(told_ms),
            "sent_equals_acknowledged_told_refused": clicks == taps["acknowledged"] + taps["told"] + taps["refused"],
        },
        "sent_equals_counted": sent == counted,
        "acked_votes_missing_from_store": lost,
        "per_round": per_round,
        "teacher_rounds": lesson.rounds,
        # both replicas' CPU over the class / the reruns the students asked for (a refresh and a click per vote)
        "server_cpu_ms_per_rerun": round(1000 * total_cpu / (2 * clicks), 1) if clicks else None,
        **machine,
        "projector_refresh": {
            "measured": "CPU seconds this benchmark process spent in store.voted_count (time.thread_time of the "
            "thread calling it once a second, as kvviz.ui.poll.live_count does), per second of refresh; "
            "the fragment's Streamlit rerun inside a replica is not included",
            "calls": len(projector.cpu_s),
            "span_s": round(projector.span_s, 1),
            "cpu_s_per_s": round(sum(projector.cpu_s) / projector.span_s, 5) if projector.span_s else None,
            "cpu_ms_per_call_median": round(1000 * statistics.median(projector.cpu_s), 2) if projector.cpu_s else None,
            "wall_ms_per_call": _stats(projector.wall_ms)
            | ({"median_ms": round(statistics.median(projector.wall_ms), 2)} if projector.wall_ms else {}),
        },
        "killed": lesson.killed,
        "students_disconnected": sum(p.rejoins > 0 for p in phones),
        "students_rejoined": sum(
            p.rejoins > 0
            and len(set(p.replicas)) > 1
            and any(v["ack_ms"] is not None and v["attempt"] > 0 for v in p.votes)
            for p in phones
        ),
        "students_by_first_replica": dict(Counter(p.replicas[0] if p.replicas else "?" for p in phones)),
        "problems": {p.index: p.problems for p in phones if p.problems},
    }


def summary(result: dict) -> str:
    ack, proj = result["ack"], result["projector_refresh"]
    lines = [
        ("database", result["db"]),
        ("students / replicas", f"{result['students']} / {result['replicas']}"),
        ("questions x rounds", f"{result['steps']} x {result['rounds']}, spread {result['spread_s']} s"),
        (
            "vote ack median / p90 / max",
            f"{ack.get('median_s')} / {ack.get('p90_s')} / {ack.get('max_s')} s (goal p90 <= 0.5 s)",
        ),
        ("refresh median / p90", f"{result['refresh'].get('median_s')} / {result['refresh'].get('p90_s')} s"),
        (
            "clicks / votes sent / acked / counted",
            f"{result['clicks_sent']} / {result['votes_sent']} / {result['votes_acked']} / {result['votes_counted']} "
            f"(sent == counted per round: {result['sent_equals_counted']})",
        ),
        (
            "taps sent / acknowledged / told / refused / lost",
            f"{result['taps']['sent']} / {result['taps']['acknowledged']} / {result['taps']['told']} / "
            f"{result['taps']['refused']} / {result['taps']['lost_without_a_message']} (told = the page's line "
            f"'Your tap did not reach the class poll', after {result['taps']['told_after_s'].get('median_s')} s "
            f"median, {result['taps']['told_after_s'].get('max_s')} s max)",
        ),
        ("acked votes missing from store", len(result["acked_votes_missing_from_store"])),
        (
            "load avg before / peak / after",
            f"{result['loadavg_before'][0]} / {result['loadavg_peak_1min']} / "
            f"{result['loadavg_after'][0]} on {result['cpu_count']} cores",
        ),
        ("threads: machine peak / replicas", f"{result['machine_threads_peak']} / {result['replica_threads_after']}"),
        ("replica CPU s (class of {:.0f} s)".format(result["class_s"]), result["replica_cpu_s"]),
        ("server CPU ms per rerun", result["server_cpu_ms_per_rerun"]),
        (
            "store CPU ms: room / poll / vote",
            " / ".join(str(result["store_call_ms"][k]["cpu_ms_median"]) for k in ("room", "poll", "vote")),
        ),
        ("replica CPU s/s idle", result["replica_cpu_s_per_s_idle"]),
        (
            "projector voted_count CPU s/s",
            f"{proj['cpu_s_per_s']} ({proj['calls']} calls, "
            f"{proj['cpu_ms_per_call_median']} ms CPU, "
            f"{proj['wall_ms_per_call'].get('median_ms')} ms wall each)",
        ),
    ]
    if result["kill_replica"]:
        lines += [
            ("killed", result["killed"]),
            ("students disconnected / rejoined", f"{result['students_disconnected']} / {result['students_rejoined']}"),
        ]
    lines.append(("students with problems", len(result["problems"])))
    width = max(len(k) for k, _ in lines)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", choices=("sqlite", "postgresql"), default="sqlite")
    ap.add_argument("--students", type=int, default=40)
    ap.add_argument("--steps", type=int, default=STEPS, help="questions 1..STEPS (fewer for a trial run)")
    ap.add_argument("--replicas", type=int, default=2)
    ap.add_argument("--spread", type=float, default=3.0, help="a student votes within this many seconds of the open")
    ap.add_argument("--kill-replica", action="store_true", help=f"SIGKILL one replica during step {KILL_STEP}")
    ap.add_argument("--max-minutes", type=float, default=10.0, help="wall-clock cap on the class")
    ap.add_argument("--json", help="default bench/results/poll_load_<db>_<students>[_kill].json")
    args = ap.parse_args()
    if (
        not 1 <= args.students <= MAX_STUDENTS
        or not 1 <= args.replicas <= 4
        or not 0 <= args.spread <= 20
        or not 1 <= args.steps <= STEPS
    ):
        ap.error(f"caps: 1..{MAX_STUDENTS} students, 1..4 replicas, spread 0..20 s, 1..{STEPS} steps")
    if args.kill_replica and args.steps < KILL_STEP:
        ap.error(f"--kill-replica kills in step {KILL_STEP}: --steps >= {KILL_STEP}")
    if args.kill_replica and args.replicas < 2:
        ap.error("--kill-replica needs a replica to survive: --replicas >= 2")
    out = Path(
        args.json
        or ROOT
        / "bench"
        / "results"
        / f"poll_load_{args.db}_{args.students}{'_kill' if args.kill_replica else ''}.json"
    )
    with database(args.db) as db_url, class_servers(db_url, args.replicas) as (url, run_dir, ports):
        store = poll_store.PollStore(db_url)
        try:
            result = asyncio.run(asyncio.wait_for(run_class(args, url, run_dir, ports, store), 60 * args.max_minutes))
        except TimeoutError:
            raise SystemExit(f"the class ran past --max-minutes {args.max_minutes}: stopped, no report") from None
        finally:
            store.engine.dispose()
    full = {**result, "command": " ".join(["python", "bench/poll_load.py", *sys.argv[1:]])}
    out.write_text(json.dumps(full, indent=1, ensure_ascii=False))
    print(summary(result))
    print(f"(JSON: {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out})")
    taps = result["taps"]
    if taps["lost_without_a_message"] or not taps["sent_equals_acknowledged_told_refused"]:
        raise SystemExit(f"taps lost without a message: {taps}")


if __name__ == "__main__":
    main()
