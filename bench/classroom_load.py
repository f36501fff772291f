"""Classroom load test: N browser sessions step through generations at once, like a class on one laptop.

One headless Debian Chromium (Playwright), one browser context per student (bench/classroom_session.py):
each session prefills its own prompt, then clicks Next token every ~2 s (every 6th click Back) for the given
minutes, checking after every click that the cache length and the token strip are its own. Optionally one
more session keeps the "Measured speed-up" benchmark running.

    python bench/classroom_load.py --url http://127.0.0.1:8501 --sessions 10 --minutes 1
    python bench/classroom_load.py --url http://127.0.0.1:8500 --sessions 10 --minutes 1 \
        --rss-ports 8501,8502 --benchmark --json bench/results/classroom_10.json
    python bench/classroom_load.py --client ws --url http://127.0.0.1:8501 --sessions 20 --minutes 1
    python bench/classroom_load.py --client ws --browsers 1 --url http://127.0.0.1:8501 --sessions 20 --minutes 1

--client browser (default) drives headless Chromium: on a small machine its rendering competes with the server
for the CPU. --client ws (bench/classroom_ws.py) speaks Streamlit's WebSocket protocol without a browser, as if
every student's own device did the rendering; both make the same clicks and the same checks. --browsers K
with --client ws makes K of the sessions real Chromium pages among the ws students, each kind's settle times
reported apart (settle_next_browser, settle_next_ws).

Reports per-click settle time (median, p90, max), the server's CPU per click (server CPU seconds / clicks),
Streamlit errors, sessions that saw another session's tokens, empty or wrong strips, and the server processes'
RSS before and after. Localhost only; hard caps:
MAX_SESSIONS sessions, MAX_MINUTES minutes of clicking, at most one click per 0.5 s per session.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import statistics
import sys
import threading
import time
from dataclasses import asdict
from pathlib import Path
from urllib.parse import urlparse

sys.path.insert(0, str(Path(__file__).resolve().parent))
from classroom_session import BUTTONS, SessionReport, session_prompt, timed_plan  # noqa: E402

MAX_SESSIONS, MAX_MINUTES = 100, 10  # room for the target class: 80 students on two replicas


def pids_listening(ports: list[int]) -> dict[int, int]:
    """port -> pid of the process listening on it (from /proc/net/tcp{,6} and /proc/*/fd)."""
    inodes: dict[str, int] = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            cols = line.split()
            port = int(cols[1].rsplit(":", 1)[1], 16)
            if cols[3] == "0A" and port in ports:  # 0A = LISTEN
                inodes[cols[9]] = port
    found: dict[int, int] = {}
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                for fd in (proc / "fd").iterdir():
                    link = os.readlink(fd)
                    if link.startswith("socket:[") and link[8:-1] in inodes:
                        found[inodes[link[8:-1]]] = int(proc.name)
            except OSError:
                continue
    return found


def rss_mib(ports: list[int]) -> dict[str, float | None]:
    """Resident memory of each server process, MiB (psutil if installed, else /proc/<pid>/status VmRSS)."""
    pids = pids_listening(ports)
    out: dict[str, float | None] = {}
    for port in ports:
        pid = pids.get(port)
        if pid is None:
            out[str(port)] = None
            continue
        try:
            import psutil

            out[str(port)] = round(psutil.Process(pid).memory_info().rss / 2**20, 1)
        except ImportError:
            kib = re.search(r"VmRSS:\s+(\d+)", Path(f"/proc/{pid}/status").read_text()).group(1)
            out[str(port)] = round(int(kib) / 1024, 1)
    return out


def cpu_s(ports: list[int]) -> dict[str, float | None]:
    """CPU time (user + system, all threads) each server process has used so far, seconds (/proc/<pid>/stat)."""
    pids, tick = pids_listening(ports), os.sysconf("SC_CLK_TCK")
    out: dict[str, float | None] = {}
    for port in ports:
        try:
            fields = Path(f"/proc/{pids[port]}/stat").read_text().rsplit(")", 1)[1].split()
            out[str(port)] = round((int(fields[11]) + int(fields[12])) / tick, 2)  # utime, stime
        except (KeyError, OSError):
            out[str(port)] = None
    return out


class TreeCpu:
    """CPU seconds of this process and all its descendants (Chromium's processes too, which this process never
    reaps), sampled from /proc every interval_s while running; a process that lives shorter is missed."""

    def __init__(self, interval_s: float = 0.5):
        self.seen: dict[int, float] = {}
        self._stop, self._interval_s = threading.Event(), interval_s
        self._sample()
        self._base = dict(self.seen)  # what was used before the run (imports, the tokenizer)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        parent, cpu, tick = {}, {}, os.sysconf("SC_CLK_TCK")
        for proc in Path("/proc").iterdir():
            try:
                fields = (proc / "stat").read_text().rsplit(")", 1)[1].split() if proc.name.isdigit() else None
            except OSError:
                continue
            if fields:
                parent[int(proc.name)], cpu[int(proc.name)] = int(fields[1]), (int(fields[11]) + int(fields[12])) / tick
        for pid, used in cpu.items():
            up = pid
            while up > 1 and up != os.getpid():
                up = parent.get(up, 0)
            if up == os.getpid():
                self.seen[pid] = max(used, self.seen.get(pid, 0.0))

    def _run(self) -> None:
        while not self._stop.wait(self._interval_s):
            self._sample()

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        self._sample()
        return round(sum(used - self._base.get(pid, 0.0) for pid, used in self.seen.items()), 2)


def _stats(values: list[float]) -> dict:
    if not values:
        return {"n": 0}
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, int(round(0.9 * (len(ordered) - 1))))]
    return {
        "n": len(values),
        "median_s": round(statistics.median(values) / 1000, 3),
        "p90_s": round(p90 / 1000, 3),
        "max_s": round(ordered[-1] / 1000, 3),
    }


def summarize(reports: list[SessionReport]) -> dict:
    clicks = [c for r in reports for c in r.clicks]
    by_action = {
        a: _stats([c["settle_ms"] for c in clicks if c["action"] == a and c["settle_ms"] is not None]) for a in BUTTONS
    }
    kinds = ("error", "foreign", "empty", "wrong", "timeout")
    return {
        "clicks": len(clicks),
        "settle_next": by_action["next"],
        "settle_by_action": by_action,
        "clicks_with_problem": {k: sum(c["problem"] == k for c in clicks) for k in kinds},
        "sessions_with_problem": {k: sum(any(c["problem"] == k for c in r.clicks) for r in reports) for k in kinds},
    }


async def _drive(args, prompts: list[str], plans: list) -> tuple[list[SessionReport], list[dict], set[int]]:
    """Run the class: every session by one kind of client, or (--browsers K) sessions 0..K-1 in Chromium and
    the rest over the WebSocket protocol, side by side against the same server. Returns the reports, the
    benchmark's runs and the indices the browser drove."""
    url, ramp_s = args.url.rstrip("/"), min(args.interval, 5)
    if args.client == "browser":
        from classroom_session import run_load

        reports, runs = await run_load(url, prompts, plans, ramp_s=ramp_s, benchmark=args.benchmark)
        return reports, runs, set(range(len(plans)))
    from classroom_ws import run_load

    if not args.browsers:
        reports, runs = await run_load(url, prompts, plans, ramp_s=ramp_s, benchmark=args.benchmark)
        return reports, runs, set()
    from classroom_session import run_load as browser_load

    browser_ids = list(range(args.browsers))
    (b_reports, _), (w_reports, runs) = await asyncio.gather(
        browser_load(url, prompts, plans, ramp_s=ramp_s, sessions=browser_ids),
        run_load(
            url,
            prompts,
            plans,
            ramp_s=ramp_s,
            benchmark=args.benchmark,
            sessions=list(range(args.browsers, len(plans))),
        ),
    )
    return sorted(b_reports + w_reports, key=lambda r: r.index), runs, set(browser_ids)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", required=True, help="one streamlit process or the nginx front, on localhost")
    ap.add_argument("--sessions", type=int, default=5)
    ap.add_argument("--minutes", type=float, default=1.0, help="clicking time per session, after its prefill")
    ap.add_argument("--interval", type=float, default=2.0, help="seconds between a session's clicks")
    ap.add_argument("--back-every", type=int, default=6, help="every k-th click is Back (0: never)")
    ap.add_argument(
        "--client",
        choices=("browser", "ws"),
        default="browser",
        help="browser: headless Chromium pages; ws: Streamlit's WebSocket protocol, no rendering",
    )
    ap.add_argument(
        "--browsers",
        type=int,
        default=0,
        help="with --client ws: this many of the sessions are real Chromium pages instead "
        "('one Chromium student among the ws students'); the report gives each kind's settle times",
    )
    ap.add_argument("--benchmark", action="store_true", help="one more session runs the speed-up benchmark")
    ap.add_argument("--rss-ports", default="", help="ports of the streamlit processes to measure (default: --url's)")
    ap.add_argument("--json", help="write the full report here")
    args = ap.parse_args()
    target = urlparse(args.url)
    if target.hostname not in ("127.0.0.1", "localhost", "::1"):
        ap.error("localhost only")
    if not 1 <= args.sessions <= MAX_SESSIONS or not 0 < args.minutes <= MAX_MINUTES or args.interval < 0.5:
        ap.error(f"caps: 1..{MAX_SESSIONS} sessions, at most {MAX_MINUTES} minutes, interval >= 0.5 s")
    if not 0 <= args.browsers <= args.sessions or (args.browsers and args.client != "ws"):
        ap.error("--browsers K: 0..--sessions, with --client ws (the rest of the class)")
    ports = [int(p) for p in args.rss_ports.split(",") if p] or [target.port or 80]
    rng = random.Random(0)
    prompts = [session_prompt(i) for i in range(args.sessions)]
    load_before, rss_before, cpu_before, start = os.getloadavg(), rss_mib(ports), cpu_s(ports), time.monotonic()
    client_cpu = TreeCpu()
    plans = [timed_plan(60 * args.minutes, args.interval, args.back_every, rng) for _ in prompts]
    reports, bench_runs, browser_ids = asyncio.run(_drive(args, prompts, plans))
    time.sleep(2)  # closed sessions: let the server drop them
    result = {
        "url": args.url,
        "client": args.client,
        "sessions": args.sessions,
        "minutes": args.minutes,
        "interval_s": args.interval,
        "benchmark_runs": bench_runs if args.benchmark else None,
        "wall_s": round(time.monotonic() - start, 1),
        "cpu_count": os.cpu_count(),
        "loadavg_before": load_before,
        "loadavg_after": os.getloadavg(),
        "rss_mib_before": rss_before,
        "rss_mib_after": rss_mib(ports),
        # CPU seconds over the run: each server process, and this load generator with its Chromium processes,
        # to tell a busy server from a busy client.
        "server_cpu_s": {
            p: None if c is None or cpu_before[p] is None else round(c - cpu_before[p], 2)
            for p, c in cpu_s(ports).items()
        },
        "client_cpu_s": client_cpu.stop(),
        **summarize(reports),
        **(
            {
                "browsers": args.browsers,
                "settle_next_browser": summarize([r for r in reports if r.index in browser_ids])["settle_next"],
                "settle_next_ws": summarize([r for r in reports if r.index not in browser_ids])["settle_next"],
            }
            if args.browsers
            else {}
        ),
        "problems": {r.index: r.problems for r in reports if r.problems},
    }
    # The per-click measure: the servers' CPU over the run divided by the clicks they served (prefills included),
    # so the machine's load and the clients' own CPU do not enter.
    used = [c for c in result["server_cpu_s"].values() if c is not None]
    served = result["clicks"] + args.sessions  # every session's prefill is a click too
    result["server_cpu_ms_per_click"] = round(1000 * sum(used) / served, 1) if used and served else None
    if args.json:
        Path(args.json).write_text(json.dumps({**result, "session_reports": [asdict(r) for r in reports]}, indent=1))
    json.dump(result, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
