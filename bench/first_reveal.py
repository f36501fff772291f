"""A fresh projector tab's first Reveal with a class poll open: the time from the click to the room's vote chart drawn.

    python bench/first_reveal.py [--repeats 5] [--step 5] [--votes 12] [--compare] [--busy-core] [--json FILE]

Issue 54's class measured 2.8-6.8 s for the first reveal in a fresh projector tab at load 5-7, 0.4-0.7 s for the later
ones; the goal is 1 s or less on a quiet machine. How a class gets there:

1. a fresh server (deploy/run_class.sh's `python -m kvviz.ui.warm run app.py`, its own SQLite store), the link opened
   once the warm-up said it is done; a teacher's tab (1280x720) opens the lesson at --step in class mode and presses
   "Start a class poll" (one room for the whole run: a client address opens at most 5 rooms an hour);
2. per reveal: the step reset (round 1 open, no votes) and --votes phones' votes cast on the server's store directly,
   each phone its own voter and address;
3. a fresh tab in a new browser profile (a Playwright context: its own HTTP cache, a new Streamlit session) holding
   the room's host cookie, as the projector's new tab does, opens the same step; once its page has settled and a
   second has passed, Reveal is clicked;
4. the clock stops when the poll panel's plotly chart has its SVG (`.st-key-poll_panel .js-plotly-plot .main-svg`);
   the answer's line ("Answer: ...", drawn earlier in the same run) is timed too, and the JavaScript files the tab
   fetched after the click are listed (chart code loaded only at the reveal shows up there);
5. then a later reveal in the same tab (Vote again, then "Show the votes": round 2's chart), timed the same way.

--compare interleaves, reveal by reveal, tabs told that their chart code is loaded already (window.kvvizChartCode,
which kvviz/assets/web/chart_code.js reads), i.e. the tab as it was before kvviz.ui.chart_code's preload. Step 5 (the
default) draws no chart before its question, so nothing else loads plotly's code early; step 7 draws one.

The tab's clock is read in the page (performance.now() in the click's listener and at the mutation that drew the SVG),
not by polling from here. Prints each reveal, then per variant the medians with their min-max and middle half
(kvviz.measure.timing), the 1-minute load before and after, the cores, the server's thread count and the machine's.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from first_render import start_server, wait_warm  # noqa: E402
from local_server import CHROMIUM_ARGS, REPO, free_port, wait_healthy  # noqa: E402

sys.path.insert(0, str(REPO))
from kvviz.measure.timing import median, quartiles  # noqa: E402
from kvviz.poll import store as poll_store  # noqa: E402

PANEL_SVG = ".st-key-poll_panel .js-plotly-plot .main-svg"
HOST_COOKIE = "kvviz_poll_host"  # kvviz.ui.poll.HOST_COOKIE: "<code>.<host key>", the room a browser hosts
VIEWPORT = {"width": 1280, "height": 720}

# In the page: resolve when `selector` is in the DOM, with performance.now() of the mutation that put it there; the
# click's own performance.now() is read in the click's listener (capture phase), so both clocks are the tab's.
ARM = """(selector) => {
  window.__kvvizRevealClick = null;
  document.addEventListener('click', () => { if (window.__kvvizRevealClick === null)
    window.__kvvizRevealClick = performance.now(); }, {capture: true});
  window.__kvvizSeen = {};
  window.__kvvizWatch = (name, sel) => new Promise((resolve) => {
    const look = () => { if (document.querySelector(sel)) { window.__kvvizSeen[name] = performance.now();
      return true; } return false; };
    if (look()) { resolve(); return; }
    const observer = new MutationObserver(() => { if (look()) { observer.disconnect(); resolve(); } });
    observer.observe(document.body, {subtree: true, childList: true, attributes: true});
  });
  window.__kvvizDone = window.__kvvizWatch('chart', selector);
  window.__kvvizWatch('answer', '[data-testid="stAlertContentSuccess"]');
}"""
RESULT = """async () => { await window.__kvvizDone;
  const click = window.__kvvizRevealClick;
  const scripts = performance.getEntriesByType('resource')
    .filter(e => e.startTime >= click && e.name.endsWith('.js'))
    .map(e => ({name: e.name.split('/').pop(), kb: Math.round((e.transferSize || e.encodedBodySize) / 1024),
                ms: Math.round(e.duration)}));
  return {chart_s: (window.__kvvizSeen.chart - click) / 1000,
          answer_s: window.__kvvizSeen.answer ? (window.__kvvizSeen.answer - click) / 1000 : null,
          scripts: scripts}; }"""


def settle(tab, timeout_ms: int = 120_000) -> None:
    """The run is over (Streamlit's running widget gone) and nothing stale is left on screen."""
    tab.wait_for_timeout(300)
    tab.wait_for_selector('[data-testid="stStatusWidget"]', state="detached", timeout=timeout_ms)
    tab.wait_for_function("() => !document.querySelector('[data-stale=\"true\"]')", timeout=timeout_ms)


def timed_click(tab, click) -> dict:
    """Arm the page's clocks, `click()`, and return the seconds to the chart's SVG (and to the answer's line)."""
    tab.evaluate(ARM, PANEL_SVG)
    click()
    return tab.evaluate(RESULT)


def start_room(browser, url: str, step: int) -> tuple[str, str]:
    """The teacher's tab opens the step in class mode and starts a class poll: the room's (code, host cookie)."""
    context = browser.new_context(viewport=VIEWPORT, locale="en-US")
    try:
        teacher = context.new_page()
        teacher.goto(f"{url}/lesson?step={step}&lesson_class=true")
        teacher.wait_for_selector(".st-key-lesson_question", timeout=120_000)
        settle(teacher)
        teacher.locator(".st-key-poll_start").get_by_role("button", name="Start a class poll").click()
        teacher.wait_for_selector(".st-key-poll_panel h3", timeout=60_000)
        settle(teacher)
        cookie = next(c["value"] for c in context.cookies() if c["name"] == HOST_COOKIE)
        return cookie.split(".", 1)[0], cookie
    finally:
        context.close()


def one_reveal(browser, url, store, room: tuple[str, str], step: int, n_votes: int, repeat: int, preload: bool):
    """Round 1 reset and voted on by `n_votes` phones; a fresh tab in a new browser profile holding the room's host
    cookie opens the step and reveals it; then round 2's votes shown in the same tab. `preload` False: the tab is
    told its chart code is loaded already (window.kvvizChartCode, which chart_code.js reads), as before the preload."""
    code, cookie = room
    host_key = cookie.split(".", 1)[1]
    state = store.reset(code, host_key)
    choices = len(store.poll(code).choices)
    for i in range(n_votes):  # the phones: each its own voter and address
        store.vote(
            code, f"bench-{repeat}-{int(preload)}-{i}", state.step, 1, i % choices, f"10.{repeat}.{int(preload)}.{i}"
        )
    context = browser.new_context(viewport=VIEWPORT, locale="en-US")
    context.add_cookies([{"name": HOST_COOKIE, "value": cookie, "url": url}])
    if not preload:
        context.add_init_script("window.kvvizChartCode = true;")
    try:
        projector = context.new_page()
        projector.goto(f"{url}/lesson?step={step}&lesson_class=true")
        projector.wait_for_selector(".st-key-poll_panel h3", timeout=120_000)
        settle(projector)
        projector.wait_for_timeout(1000)  # the teacher looks at the room before clicking
        charts_before = projector.locator(".js-plotly-plot").count()
        first = timed_click(
            projector, lambda: projector.locator(f".st-key-lesson_reveal_btn_{step} button").first.click()
        )
        settle(projector)
        projector.locator(".st-key-poll_again button").first.click()  # round 2, then its votes shown: a later reveal
        settle(projector)
        projector.wait_for_timeout(500)
        later = timed_click(projector, lambda: projector.locator(".st-key-poll_show button").first.click())
        return {"preload": preload, "charts_before": charts_before, "first": first, "later": later}
    finally:
        context.close()


def threads_of(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    return 0


def machine_threads() -> int:
    """Every thread of every process on the machine (/proc/PID/task)."""
    total = 0
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            with contextlib.suppress(OSError):  # gone meanwhile
                total += len(list((proc / "task").iterdir()))
    return total


def fetched(scripts: list[dict]) -> str:
    return ", ".join(f"{x['name']} ({x['kb']} KB)" for x in scripts) or "none"


def spread(values: list[float]) -> str:
    q1, q3 = quartiles(values)
    return (
        f"median {median(values):.2f} s (min {min(values):.2f}, max {max(values):.2f}; middle half {q1:.2f}-{q3:.2f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5, help="fresh tabs per variant")
    parser.add_argument("--step", type=int, default=5, help="the lesson step the room votes on (5: no chart before it)")
    parser.add_argument("--votes", type=int, default=12, help="phones' votes cast before each reveal")
    parser.add_argument(
        "--compare", action="store_true", help="interleave tabs without the chart code's preload (as before it)"
    )
    parser.add_argument("--busy-core", action="store_true", help="keep one core spinning for the whole run")
    parser.add_argument("--json", type=Path, help="write every reveal's figures here")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    db = Path(tempfile.mkdtemp(prefix="first-reveal-")) / "poll.sqlite3"
    os.environ[poll_store.ENV_URL] = f"sqlite:///{db}"  # the server's store and this process's: one file
    store = poll_store.PollStore()
    load_before = os.getloadavg()
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if args.busy_core else None
    port = free_port()
    log_path = Path(tempfile.mkstemp(prefix=f"first-reveal-{port}-", suffix=".log")[1])
    server = start_server(port, warm=True, log_path=log_path)
    runs, server_threads, all_threads = [], 0, 0
    try:
        url = f"http://127.0.0.1:{port}"
        wait_healthy(url, poll_s=0.1)
        wait_warm(server, log_path)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=CHROMIUM_ARGS)
            room = start_room(browser, url, args.step)
            for repeat in range(args.repeats):
                variants = (True, False) if repeat % 2 == 0 else (False, True)  # interleaved, each first in turn
                for preload in variants if args.compare else (True,):
                    run = one_reveal(browser, url, store, room, args.step, args.votes, repeat, preload)
                    runs.append(run)
                    print(
                        f"  repeat {repeat + 1}, {'preload' if preload else 'no preload'}: first reveal "
                        f"{run['first']['chart_s']:.2f} s (answer {run['first']['answer_s']:.2f} s), later "
                        f"{run['later']['chart_s']:.2f} s; charts in the tab before the click: {run['charts_before']}; "
                        f"scripts fetched after the first click: "
                        f"{fetched(run['first']['scripts'])}",
                        flush=True,
                    )
            server_threads, all_threads = threads_of(server.pid), machine_threads()
            browser.close()
    finally:
        if busy is not None:
            busy.kill()
        server.terminate()
        server.wait(timeout=20)
        log_path.unlink(missing_ok=True)
    load_after = os.getloadavg()
    print(
        f"/lesson?step={args.step}&lesson_class=true, {args.votes} votes, 1280x720, {args.repeats} fresh tabs "
        f"per variant (each a new browser profile) on one fresh warm server{', one core busy' if args.busy_core else ''}"
        f"; 1-min load {load_before[0]:.1f} before, {load_after[0]:.1f} after, on {os.cpu_count()} cores; threads: "
        f"the server {server_threads}, the machine {all_threads}"
    )
    for preload in (True, False):
        mine = [r for r in runs if r["preload"] == preload]
        if not mine:
            continue
        print(f"  {'with the chart code preloaded (now)' if preload else 'without the preload (before)'}:")
        print(
            f"    first reveal in a fresh tab, click -> vote chart drawn: {spread([r['first']['chart_s'] for r in mine])}"
        )
        answer = [r["first"]["answer_s"] for r in mine if r["first"]["answer_s"] is not None]
        if answer:
            print(f"    the same click -> the answer's line drawn: {spread(answer)}")
        print(
            f"    a later reveal in the same tab (round 2's votes shown): {spread([r['later']['chart_s'] for r in mine])}"
        )
    if args.json:
        args.json.write_text(
            json.dumps({"args": vars(args) | {"json": str(args.json)}, "load": [load_before, load_after], "runs": runs})
        )


if __name__ == "__main__":
    main()
