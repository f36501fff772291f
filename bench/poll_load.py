"""Class poll load: N phones vote on 12 questions x 2 rounds through nginx and 2 replicas, as a class would.

    python bench/poll_load.py                              # SQLite (a new file), 40 students
    python bench/poll_load.py --db postgresql              # a throwaway PostgreSQL (tests/support/postgres.py)
    python bench/poll_load.py --kill-replica               # SIGKILL one replica in the middle of step 6, round 1

What runs:
- deploy/run_class.sh -n 2 --listen 127.0.0.1 on a free port block, with KVVIZ_POLL_DB in its environment (the
  script exports nothing over it, so every replica inherits it) and a run dir of our own (its replica-PORT.pid);
- the teacher, in this process, directly on the store (the same KVVIZ_POLL_DB): a room, then steps 1..12, each a
  fixed PollQuestion in "en" and "zh-CN" (same shape), round 1 open -> lock -> vote again (round 2 open) -> reveal.
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

Reported: ack median / p90 / max, votes sent vs counted per question and round (the store's rows; every
acknowledged vote must be a row with the chosen index), the load average (before, the run's peak, after), thread
counts (the machine's, from /proc/loadavg, and each replica's), the replicas' CPU seconds, the projector's refresh
cost, and with --kill-replica how many students lost their connection and rejoined. JSON in bench/results/.
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


def fixed_polls(step: int) -> dict[str, PollQuestion]:
    """The step's poll in both languages: 3 to 5 choices, the right one somewhere else each step."""
    n = 3 + step % 3
    right = step % n
    en = PollQuestion(
        step,
        f"Question {step}: how many bytes?",
        tuple(f"{(i + 1) * 64 * step:,} B" for i in range(n)),
        right,
        tuple("" if i == right else "Off by a factor." for i in range(n)),
    )
    zh = PollQuestion(
        step,
        f"问题 {step}：多少字节？",
        en.choices,
        right,
        tuple("" if i == right else "差了一个倍数。" for i in range(n)),
    )
    return {"en": en, "zh-CN": zh}


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
        "poll": lambda i: store.poll(room.code, "en"),
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
            choice = None
            for attempt in range(3):
                try:
                    if attempt or student is None:
                        me.rejoins += bool(attempt)
                        await connect()
                    t0 = time.perf_counter()
                    await student.click_key("join_refresh", timeout_s=ACK_TIMEOUT_S)
                    refresh_ms = (time.perf_counter() - t0) * 1000
                    prefix = f"join_choice_{step}_{round_}_"
                    n = sum(student.page.find_key("button", f"{prefix}{i}") is not None for i in range(5))
                    if not n:
                        me.problems.append(f"{key}: no choice buttons after refresh; alerts {shown_alerts(student)}")
                        break
                    choice = rng.randrange(n) if choice is None else choice  # a retry votes the same again
                    vote = {
                        "step": step,
                        "round": round_,
                        "choice": choice,
                        "refresh_ms": round(refresh_ms, 1),
                        "ack_ms": None,
                        "replica": student.cookies.get("kvviz_replica"),
                        "attempt": attempt,
                    }
                    me.votes.append(vote)
                    _, ack_ms = await student.click_key(
                        f"{prefix}{choice}", settled=lambda _s: acked(student), timeout_s=ACK_TIMEOUT_S
                    )
                    vote["ack_ms"] = None if ack_ms is None else round(ack_ms, 1)
                    if ack_ms is None:
                        me.problems.append(f"{key}: no receipt; alerts {shown_alerts(student)}")
                    break
                except Exception as exc:  # noqa: BLE001 - a dropped connection (the killed replica): rejoin
                    me.problems.append(f"{key} attempt {attempt}: {type(exc).__name__}: {str(exc)[:120]}")
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


if __name__ == "__main__":
    main()
