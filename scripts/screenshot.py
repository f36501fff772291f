"""Take the README screenshots from the real app: `python scripts/screenshot.py [outdir]`.

Starts `streamlit run app.py` on a free port, drives headless Debian Chromium with Playwright (prefill
ROMEO:, five Next token clicks), and saves PNGs of the step-through page and the other pages.
"""

from __future__ import annotations

import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
from local_server import CHROMIUM_ARGS, free_port, start_streamlit, wait_healthy  # noqa: E402


def _idle(tab) -> None:
    tab.wait_for_timeout(500)
    tab.wait_for_selector('[data-testid="stStatusWidget"]', state="detached", timeout=120_000)
    tab.wait_for_timeout(800)  # let plotly finish drawing


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else REPO / "docs")
    out.mkdir(parents=True, exist_ok=True)
    server, url = start_streamlit(free_port())
    try:
        wait_healthy(url, poll_s=0.2)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            tab = browser.new_page(viewport={"width": 1500, "height": 1100})
            tab.set_default_timeout(120_000)
            tab.goto(f"{url}/step_through")
            tab.get_by_role("button", name="Prefill").click()
            _idle(tab)
            for _ in range(5):
                tab.get_by_role("button", name="Next token").click()
                _idle(tab)
            tab.screenshot(path=str(out / "step_through.png"), full_page=False)
            for path in ("attention_ops", "memory_budget", "speedup", "internals_layout", ""):
                tab.goto(f"{url}/{path}")
                tab.wait_for_selector("h1")
                _idle(tab)
                tab.screenshot(path=str(out / f"{path or 'home'}.png"), full_page=False)
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=20)
    print(f"screenshots in {out}")


if __name__ == "__main__":
    main()
