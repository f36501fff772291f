"""axe-core scans of the app in a real browser: axe-playwright-python (pinned in
requirements-dev.txt; it drives Debian's Chromium, no browser download) run on a tab as it is now, and the rule a
scan is judged by. tests/test_browser_every_page.py scans every page as first drawn; tests/test_browser_axe_states.py the
states a class reaches (after clicks, in class and presenter mode, on a phone).

Rules: axe's WCAG 2.0/2.1 A and AA rules plus its best-practice rules (TAGS). A serious or critical violation fails
unless ALLOWED names it (each entry: the rule, the selector, and why it is not ours to fix, with Streamlit's
upstream issue; docs/teaching.md's accessibility section lists each too); heading-order (moderate) fails as well:
a screen reader's user moves through a page by its headings.

  DRAWN            a page as a student reads it (a script for wait_for_function)
  settle           wait until the page is drawn, its charts too, and stays so a moment (a second run may follow)
  violations       (rule, impact, selector, summary) of every node axe finds failing on the tab now
  failing          the ones the rule above fails
  failing_now      failing, each looked at again 2 s later: a node seen while the page still drew is not counted
"""

from __future__ import annotations

TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"]
FAILING_IMPACTS = {"serious", "critical"}
ALSO_FAILING_RULES = {"heading-order"}
# (rule, a CSS selector axe reports for the node): Streamlit's own markup, not kvviz's; with its upstream issue.
ALLOWED: dict[tuple[str, str], str] = {}

Violation = tuple[str, str, str, str]

# The page as a student reads it: the run over, the sidebar's page links drawn, no spinner or placeholder left.
DRAWN = """() => !document.querySelector('[data-testid="stStatusWidget"], [data-testid="stSpinner"], '
    + '[data-testid="stSkeleton"], [data-stale="true"]') && !!document.querySelector('.st-key-kvviz_nav a')
    && !!document.querySelector('h1')"""
# ... and every chart on show drawn by plotly.js (a chart in a closed tab or expander is drawn when it opens) ...
CHARTS_DRAWN = """() => [...document.querySelectorAll('[data-testid="stPlotlyChart"]')]
    .filter(e => e.getClientRects().length).every(e => !!e.querySelector('.main-svg'))"""
# ... and both held for STEADY_MS on end: a second run (a fragment, a model load, a rerun) that starts meanwhile shows
# its status widget or its stale elements, and the wait starts again when it is over.
STEADY = (
    """([steady_ms]) => {
  const now = performance.now();
  if (!(("""
    + DRAWN
    + """)() && ("""
    + CHARTS_DRAWN
    + """)())) { window.__kvvizDrawnSince = null; return false; }
  if (window.__kvvizDrawnSince == null) window.__kvvizDrawnSince = now;
  return now - window.__kvvizDrawnSince >= steady_ms;
}"""
)
STEADY_MS = 1000
RECHECK_AFTER_MS = 2000


def settle(tab, timeout_ms: int = 120_000) -> None:
    """`tab` drawn (DRAWN), its charts drawn (CHARTS_DRAWN), and both for STEADY_MS on end, the page as a student reads
    it; a page drawn sooner is scanned sooner (no fixed wait beyond the first 300 ms)."""
    tab.evaluate("() => { window.__kvvizDrawnSince = null; }")  # a click's rerun: the page before it does not count
    tab.wait_for_timeout(300)  # a click's run has begun: its status widget or stale elements are on the page
    tab.wait_for_function(STEADY, arg=[STEADY_MS], timeout=timeout_ms, polling=100)


def violations(tab) -> list[Violation]:
    """(rule, impact, selector, a short summary) of every node axe finds failing on the page as it is now."""
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(tab, options={"runOnly": {"type": "tag", "values": TAGS}, "resultTypes": ["violations"]})
    found = []
    for rule in results.response["violations"]:
        for node in rule["nodes"]:
            selector = " ".join(str(s) for s in node["target"])
            found.append((rule["id"], rule.get("impact") or "", selector, node.get("failureSummary", "")[:200]))
    return found


def failing(found: list[Violation]) -> list[Violation]:
    """The violations that fail a scan: serious or critical, or heading-order; none that ALLOWED names."""
    return [v for v in found if (v[1] in FAILING_IMPACTS or v[0] in ALSO_FAILING_RULES) and (v[0], v[2]) not in ALLOWED]


def failing_now(tab) -> list[Violation]:
    """failing(violations(tab)), each looked at again RECHECK_AFTER_MS later and kept only if still there (a node seen
    while the page was still drawing is not a fault of the page). No wait when nothing fails."""
    if bad := failing(violations(tab)):
        tab.wait_for_timeout(RECHECK_AFTER_MS)
        again = {(v[0], v[2]) for v in failing(violations(tab))}
        bad = [v for v in bad if (v[0], v[2]) in again]
    return bad
