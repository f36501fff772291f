"""Time from `streamlit run app.py` (fresh process) to the first fully rendered page in a real browser.

    python bench/first_render.py [--repeats 3]
    python bench/first_render.py --path /attention_ops --lang zh-CN --busy-core --repeats 3
    python bench/first_render.py --path "/lesson?step=1&lesson_class=true" --ready .st-key-lesson_question --busy-core

Target: <= 5 s, the bundled model included. Starts the server, opens headless Debian Chromium
(Playwright) as soon as the health check answers, and stops the clock when the page's title and the
sidebar's model label are both on screen (--ready: the title and that element instead, e.g. the lesson's
question, .st-key-lesson_question in class mode, which hides the sidebar). Two clocks: from `streamlit run` (the teacher's start), and from the
first visitor's click on the link (target <= 3 s: the page a class sees first, on a deep link, with a core
kept busy as on a laptop serving a class: --busy-core spins one core for the whole run). Repeats on fresh
processes; prints the medians and the spread.

The server starts as a teacher's bare `streamlit run app.py` (--server plain, the default) or as deploy/run_class.sh
starts it, `python -m kvviz.ui.warm run app.py`, which loads the bundled model while the server waits for its first
visitor (--server warm; kvviz.ui.warm). --click-after-warm opens the link only once that warm-up has said it is done
(a class clicks minutes after the teacher started the server; the clock from the click is the class's wait), and
prints how long the warm-up took. Without it the link opens the moment the health check answers, warm-up or not.

Each page's --ready default is what its visitor waits for, drawn only once the page's work is done:
READY_BY_PAGE (the lesson's question in class mode, the stage's Next token button, Count the work's metrics).

    python bench/first_render.py --path "/lesson?step=1&lesson_class=true" --server warm --click-after-warm
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from local_server import CHROMIUM_ARGS, REPO, free_port, wait_healthy  # noqa: E402

MODEL_LABEL = {"en-US": "Bundled Tiny-Shakespeare GPT-2", "zh-CN": "内置 Tiny-Shakespeare GPT-2"}


# The page's own element, on screen only once the page's work (its model included) is done. The lesson's question
# is drawn in class mode only (.st-key-lesson_question); the stage's Next token button comes after its model and
# prefill; Count the work is torch-free and its metrics are its answer. Other pages: the sidebar's model label.
READY_BY_PAGE = {
    "/lesson": ".st-key-lesson_question",
    "/step_through": ".st-key-step_btn_next",
    "/attention_ops": ".st-key-ops_metrics",
}
WARM_DONE_LINE = "kvviz warm-up: the bundled model is loaded"  # kvviz.ui.warm.DONE_LINE (not imported: no kvviz here)


def start_server(port: int, warm: bool, log_path: Path) -> subprocess.Popen:
    """`streamlit run app.py` (warm: `python -m kvviz.ui.warm run app.py`, deploy/run_class.sh's start) on port,
    offline, its output to log_path."""
    launcher = ["-m", "kvviz.ui.warm"] if warm else ["-m", "streamlit"]
    with log_path.open("w") as log:
        return subprocess.Popen(
            [sys.executable, *launcher, "run", "app.py", "--server.port", str(port), "--server.headless", "true"],
            cwd=REPO,
            env={**os.environ, "HF_HUB_OFFLINE": "1"},
            stdout=log,
            stderr=subprocess.STDOUT,
        )


def wait_warm(server: subprocess.Popen, log_path: Path, poll_s: float = 0.05) -> None:
    """Return once the server's log says the warm-up is done (or failed); raise when the server exits first."""
    while "kvviz warm-up:" not in log_path.read_text(errors="replace"):
        if server.poll() is not None:
            raise RuntimeError("the server exited before its warm-up ended: " + log_path.read_text()[-2000:])
        time.sleep(poll_s)
    if WARM_DONE_LINE not in log_path.read_text(errors="replace"):
        raise RuntimeError("the warm-up failed: " + log_path.read_text()[-2000:])


def one_run(
    pw, path: str, lang: str, ready: str | None = None, warm: bool = False, click_after_warm: bool = False
) -> tuple[float, float, float | None]:
    """(seconds from `streamlit run`, seconds from the visitor opening the link, to the rendered page; seconds from
    `streamlit run` to the warm-up's end when the click waited for it)."""
    # The user's browser is already open: launch it before the clock starts.
    browser = pw.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=CHROMIUM_ARGS)
    tab = browser.new_context(locale=lang).new_page()
    port = free_port()
    log_path = Path(tempfile.mkstemp(prefix=f"first-render-{port}-", suffix=".log")[1])
    began = time.perf_counter()
    server = start_server(port, warm, log_path)
    url = f"http://127.0.0.1:{port}"
    warm_s = None
    try:
        wait_healthy(url, poll_s=0.05)
        if click_after_warm:
            wait_warm(server, log_path)
            warm_s = time.perf_counter() - began
        opened = time.perf_counter()
        tab.goto(url + path)
        tab.wait_for_selector("[data-testid=stMain] h1", timeout=120_000)
        if ready:
            tab.wait_for_selector(ready, state="visible", timeout=120_000)
        else:
            tab.get_by_text(MODEL_LABEL[lang]).first.wait_for(timeout=120_000)
        done = time.perf_counter()
        return done - began, done - opened, warm_s
    finally:
        browser.close()
        server.terminate()
        server.wait(timeout=20)
        log_path.unlink(missing_ok=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--path", default="/", help="the link the first visitor opens (e.g. /attention_ops)")
    parser.add_argument("--lang", choices=sorted(MODEL_LABEL), default="en-US", help="the browser's language")
    parser.add_argument(
        "--ready",
        help="a CSS selector the page must also show (default: READY_BY_PAGE's for the "
        "path, else the sidebar's model label)",
    )
    parser.add_argument("--busy-core", action="store_true", help="keep one core spinning for the whole run")
    parser.add_argument(
        "--server",
        choices=("plain", "warm"),
        default="plain",
        help="plain: `streamlit run app.py`; warm: `python -m kvviz.ui.warm run app.py`",
    )
    parser.add_argument(
        "--click-after-warm", action="store_true", help="open the link once the warm-up is done (needs --server warm)"
    )
    args = parser.parse_args()
    if args.click_after_warm and args.server != "warm":
        parser.error("--click-after-warm needs --server warm")
    ready = args.ready or READY_BY_PAGE.get(args.path.split("?")[0])
    from playwright.sync_api import sync_playwright

    load_before = os.getloadavg()
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if args.busy_core else None
    try:
        with sync_playwright() as pw:
            runs = [
                one_run(pw, args.path, args.lang, ready, args.server == "warm", args.click_after_warm)
                for _ in range(args.repeats)
            ]
    finally:
        if busy is not None:
            busy.kill()
    print(
        f"{args.path}{' until ' + ready if ready else ''} ({args.lang}, server {args.server}"
        f"{', click after the warm-up' if args.click_after_warm else ''}"
        f"{', one core busy' if args.busy_core else ''}), {args.repeats} fresh starts, "
        f"1-min load {load_before[0]:.1f} before, {os.getloadavg()[0]:.1f} after, on {os.cpu_count()} cores"
    )
    clocks = [
        ("first render after `streamlit run app.py`", [r[0] for r in runs]),
        ("first render after the first visitor opened the link", [r[1] for r in runs]),
    ]
    if args.click_after_warm:
        clocks.append(("warm-up done (the link opened) after `streamlit run app.py`", [r[2] for r in runs]))
    for name, times_s in clocks:
        print(f"  {name}: median {statistics.median(times_s):.2f} s (min {min(times_s):.2f}, max {max(times_s):.2f})")


if __name__ == "__main__":
    main()
