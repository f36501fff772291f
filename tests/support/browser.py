"""A real browser against the real app: Debian's headless Chromium (driven by Playwright), a fresh server, a busy
core; a page opened in a language with a link's query and waited for until drawn; what every browser test reads off
a page. The fixtures (app_url, page, browser, busy_core) live in tests/conftest.py.

  chromium()      the worker's Chromium (a context manager: the contexts a block opens close with it)
  stop_chromium   the worker's Chromium stopped (before a test's asyncio clients)
  new_tab         a tab in a context of its own (its own session: a fresh browser, as far as the app can tell)
  close_tab       a test's tab done with (kept, reset, for the next test that asks for the same options)
  page_url        the app's URL for a page, in a language (?lang=), with a query
  goto_drawn      a tab sent to a page and waited for until drawn (selectors, then the script run over)
  open_tab        new_tab + goto_drawn
  choose_tab      a tab bar's tab opened, and still open once the run is over
  choose_option   a searchable select's option chosen, and kept in the URL
  CLIPPED_JS      the layout test's clipped-text rule: every visible text cut by its box (a page.evaluate script)
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from urllib.parse import quote, urlencode

import pytest

from kvviz import i18n
from support.pages import REPO
from support.server import streamlit_server

CHROMIUM = "/usr/bin/chromium"
# --disable-back-forward-cache: a tab sent to about:blank (close_tab) unloads its page, and so ends its session,
# rather than keeping it alive in the back/forward cache.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-dev-shm-usage",
    "--disable-back-forward-cache",
]
PAGES = [  # url paths st.navigation derives: every page of the app
    "lesson",
    "attention_patterns",
    "attention_ops",
    "memory_budget",
    "speedup",
    "claims",
    "internals_layout",
    "internals_prefix",
    "internals_crossattn",
    "internals_window",
    "internals_paging",
    "internals_quant",
    "internals_speculative",
    "internals_eviction",
]
ARTIFACTS = Path(os.environ.get("KVVIZ_ARTIFACTS", REPO / "test-artifacts"))  # screenshots to be looked at
IDLE_TIMEOUT_MS = 90_000

# The layout test's clipped-text rule (test_browser_layout, test_browser_words_zh): every visible text node of the
# page as a [what, its text] problem when it is cut: a text node's rectangles beyond an ancestor that clips (overflow
# other than visible, and not a scroll box the reader can scroll), or a text ending in "…" (CSS ellipsis, or a label
# shortened by the app); then every chart's text outside its chart.
CLIPPED_JS = """() => {
  const out = [];
  const root = document.querySelector('[data-testid="stApp"]');
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  // a collapsed sidebar sits off the screen (0 px wide: its buttons squeezed); a closed expander's content is
  // not drawn (checkVisibility): neither is text a reader sees
  const sidebar = document.querySelector('[data-testid="stSidebar"]');
  const sidebarShut = sidebar && sidebar.getBoundingClientRect().right <= 0;
  const hiddenish = e => e.closest('.kvviz-sr-only, [aria-hidden="true"], script, style, .js-plotly-plot, '
    + '[data-testid="stTooltipContent"], .kvviz-stage-state') || !e.checkVisibility()
    || (sidebarShut && sidebar.contains(e));
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const text = n.textContent.trim();
    const e = n.parentElement;
    if (!text || !e || hiddenish(e)) continue;
    const range = document.createRange(); range.selectNodeContents(n);
    const r = range.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) continue;
    const style = getComputedStyle(e);
    if (style.visibility === 'hidden' || +style.opacity === 0) continue;
    if (style.textOverflow === 'ellipsis' && e.scrollWidth > e.clientWidth + 1) { out.push(['ellipsis', text]); continue; }
    for (let a = e; a && a !== root; a = a.parentElement) {
      const s = getComputedStyle(a);
      if (s.overflowX === 'visible' && s.overflowY === 'visible') continue;
      if (['auto', 'scroll'].includes(s.overflowX) || ['auto', 'scroll'].includes(s.overflowY)) break;
      const b = a.getBoundingClientRect();
      if (b.width === 0 || b.height <= 2) break;  // a collapsed or visually-hidden box, not a cut
      if (r.left < b.left - 1 || r.right > b.right + 1 || r.top < b.top - 2 || r.bottom > b.bottom + 2) {
        out.push(['cut by ' + (a.dataset.testid || a.className || a.tagName), text]); break;
      }
    }
  }
  for (const plot of document.querySelectorAll('.js-plotly-plot')) {
    const b = plot.getBoundingClientRect();
    if (b.width === 0) continue;
    for (const t of plot.querySelectorAll('.main-svg text, .main-svg .gtitle')) {
      const r = t.getBoundingClientRect();
      if (r.width === 0 || !t.textContent.trim()) continue;
      if (r.left < b.left - 1 || r.right > b.right + 1 || r.top < b.top - 1 || r.bottom > b.bottom + 1)
        out.push(['outside its chart', t.textContent.trim()]);
    }
  }
  return out;
}"""


def require(path: str, package: str) -> None:
    """Skip when an OS package's program is missing; fail when tests/install_and_run.sh installed it (it must be
    there: KVVIZ_REQUIRE_BROWSER)."""
    if not Path(path).exists():
        if os.environ.get("KVVIZ_REQUIRE_BROWSER"):
            pytest.fail(f"{path} is missing but KVVIZ_REQUIRE_BROWSER is set")
        pytest.skip(f"{path} not installed (apt-get install {package})")


def require_chromium() -> None:
    require(CHROMIUM, "chromium chromium-driver")


@contextlib.contextmanager
def busy_core() -> Iterator[None]:
    """One core kept busy, as on a laptop serving a class (a spinning Python process)."""
    spinner = subprocess.Popen([sys.executable, "-c", "while 1: pass"])
    try:
        yield
    finally:
        spinner.kill()
        spinner.wait(timeout=20)


@contextlib.contextmanager
def fresh_server(env: Mapping[str, str] | None = None) -> Iterator[str]:
    """A new `streamlit run app.py` process for a browser (nothing run yet: a fresh server's first visitor), with
    `env` set for it (streamlit_server's env); yields its URL."""
    require_chromium()
    with streamlit_server(env=env) as url:
        yield url


# How often a wait for an end state reads the page: Playwright's default reads it on every animation frame, which
# keeps Chromium drawing frames while it waits (the machine's CPU over 10 s of waiting: 0.83 s, 0.40 at 100 ms;
# `python bench/browser_tabs.py`).
POLL_MS = 100


def wait_idle(tab, timeout_ms: int = IDLE_TIMEOUT_MS) -> None:
    """Streamlit shows a 'running' status widget while the script runs; wait until it is gone."""
    tab.wait_for_timeout(300)
    tab.wait_for_selector('[data-testid="stStatusWidget"]', state="detached", timeout=timeout_ms)


def wait_settled(tab, timeout_ms: int) -> None:
    """The rerun finished (wait_idle) and no element is left over from the previous run (Streamlit marks those
    stale) within `timeout_ms`."""
    wait_idle(tab)
    tab.wait_for_function("() => !document.querySelector('[data-stale=\"true\"]')", timeout=timeout_ms, polling=POLL_MS)


# The name of the open tab of a tab bar (Streamlit marks it aria-selected).
SELECTED_TAB = """(name) => [...document.querySelectorAll('[role="tab"][aria-selected="true"]')]
    .some(t => t.innerText.trim() === name)"""


def choose_tab(tab, name: str, *, tries: int = 3, timeout_ms: int = 60_000) -> None:
    """The tab bar's tab `name` opened and still open once the run is over. A rerun already under way when the tab is
    clicked (a choice made just before) ends by drawing the bar with the tab it started with, so a click it overrode
    is made again, `tries` times at most."""
    for _ in range(tries):
        tab.get_by_role("tab", name=name, exact=True).click()
        tab.wait_for_function(SELECTED_TAB, arg=name, timeout=timeout_ms, polling=POLL_MS)
        wait_settled(tab, timeout_ms=timeout_ms)
        tab.wait_for_timeout(500)
        if tab.evaluate(SELECTED_TAB, name):
            return
    raise AssertionError(f"the tab {name!r} did not stay open after {tries} clicks")


def choose_option(
    tab, key: str, typed: str, option: str, in_url: str, *, tries: int = 3, timeout_ms: int = 30_000
) -> None:
    """In the select or multiselect keyed `key`, `typed` typed (it filters the list) and `option` chosen, until the
    URL carries `in_url`. A choice made while the page's first run is still drawing the box can be lost with the box
    it was made in, so it is made again, `tries` times at most."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    for _ in range(tries):
        tab.locator(f".st-key-{key} input").press_sequentially(typed)
        tab.get_by_role("option", name=option, exact=True).click()
        try:
            tab.wait_for_function(
                "(part) => location.search.includes(part)", arg=in_url, timeout=timeout_ms, polling=POLL_MS
            )
        except PlaywrightTimeout:
            tab.keyboard.press("Escape")
            wait_settled(tab, timeout_ms=timeout_ms)
            continue
        tab.keyboard.press("Escape")
        wait_settled(tab, timeout_ms=timeout_ms)
        return
    raise AssertionError(f"choosing {option!r} in {key} never reached the URL ({in_url!r}) in {tries} tries")


# The worker's one Chromium and the Playwright driver behind it, launched on first use. Launching both costs about a
# second of CPU: once per test it was some 150 CPU seconds of a browser run; now once per worker.
_launched: list = []  # [(playwright, browser)] while launched

# The worker's tabs whose test is over, kept for the next test that asks for the same options (close_tab resets one
# first). Chromium spends less than half the CPU on a page opened in a tab that has shown a page before: six pages,
# each in a new tab of its own context, 20.0-22.1 CPU-s of the machine's; each in one tab reset between them, 6.9-8.2
# (`python bench/browser_tabs.py`, 3 rounds, 2 cores). A new tab in a shared context, --process-per-site or one
# renderer process saved nothing of it.
_spare: dict[tuple, list] = {}  # the options' key -> tabs ready for a test
_kept: dict = {}  # every tab made to be kept: a page -> (its options' key, its viewport, the origins it showed)
_lent: list = []  # the kept tabs a test holds now, in the order lent
SPARE_PER_KEY = 3  # tabs kept per set of options beyond this are closed (a test that opened many at once)


@contextlib.contextmanager
def chromium() -> Iterator:
    """Debian's headless Chromium, driven by Playwright (never a downloaded browser): the worker's one Chromium,
    launched on first use (and again if it went away). Each block gets it as a fresh browser: the tabs the block
    opened are closed (close_tab) when it ends, whatever the block did, and any other context it opened too."""
    from playwright.sync_api import sync_playwright

    if _launched and not _launched[0][1].is_connected():
        stop_chromium()
    if not _launched:
        pw = sync_playwright().start()
        _launched.append((pw, pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)))
    browser = _launched[0][1]
    contexts_before, lent_before = set(browser.contexts), list(_lent)
    try:
        yield browser
    finally:
        for tab in [t for t in _lent if t not in lent_before]:
            close_tab(tab)
        kept_contexts = {tab.context for tab in _kept}
        for context in browser.contexts:
            if context not in contexts_before and context not in kept_contexts:
                with contextlib.suppress(Exception):  # a context its test closed, or a browser gone away
                    context.close()


def stop_chromium() -> None:
    """The worker's Chromium and its Playwright driver stopped (a later chromium() launches them again). Playwright's
    sync API holds an event loop in its thread while it runs: a test that runs asyncio clients needs it stopped."""
    _spare.clear()
    _kept.clear()
    _lent.clear()
    if _launched:
        pw, browser = _launched.pop()
        with contextlib.suppress(Exception):  # already gone
            browser.close()
        pw.stop()


def new_tab(
    browser, *, width: int = 1280, height: int = 720, timeout_ms: int | None = 120_000, fresh: bool = False, **context
):
    """A tab in a browser context of its own (cookies and storage of its own: a new session) with a `width` x `height`
    viewport and `context`'s other options (color_scheme, locale, device_scale_factor, accept_downloads ...);
    Playwright's waits in it time out after `timeout_ms` (None: Playwright's own 30 s). close_tab(tab) ends it.

    The tab is one an earlier test of this worker closed, with the same options, when there is one: blank, its
    cookies and its origins' storage cleared, so the app sees a new visitor, as from a new context. fresh: a context
    made for this tab alone and closed after it (a test that adds scripts or listeners to its context, or needs a
    cold browser, as a fresh server's first visitor has)."""
    viewport = {"width": width, "height": height}
    key = (id(browser), width, height, repr(sorted(context.items())))
    tab = None
    while not fresh and _spare.get(key) and tab is None:
        spare = _spare[key].pop()
        tab = None if spare.is_closed() else spare
    if tab is None:
        tab = browser.new_context(viewport=viewport, **context).new_page()
        if not fresh:
            _kept[tab] = (key, viewport, set())
            tab.on("framenavigated", lambda frame, tab=tab: _note_origin(tab, frame))
    if not fresh:
        _lent.append(tab)
    tab.set_default_timeout(30_000 if timeout_ms is None else timeout_ms)
    return tab


def _note_origin(tab, frame) -> None:
    """The origins a kept tab has shown (their storage is cleared when the tab is closed)."""
    url = frame.url
    if url.startswith("http") and tab in _kept:
        _kept[tab][2].add("/".join(url.split("/", 3)[:3]))


def close_tab(tab) -> None:
    """`tab`'s test is done with it. A kept tab (new_tab without fresh) is reset and kept for the next test that
    asks for the same options: its other tabs closed, its page unloaded (about:blank: the app's session ends, as when
    a tab closes), its cookies, permissions and every origin's storage it showed cleared, its viewport as made. A tab
    that cannot be reset, or a fresh one, is closed with its context."""
    if tab in _lent:
        _lent.remove(tab)
    kept = _kept.get(tab)
    try:
        if kept is None or tab.is_closed():
            raise LookupError("not kept")
        key, viewport, origins = kept
        for other in tab.context.pages:
            if other is not tab:
                other.close()
        if tab.url.startswith("http"):
            tab.evaluate("() => sessionStorage.clear()")
        tab.goto("about:blank")
        cdp = tab.context.new_cdp_session(tab)
        for origin in origins:
            cdp.send("Storage.clearDataForOrigin", {"origin": origin, "storageTypes": "all"})
        cdp.detach()
        origins.clear()
        tab.context.clear_cookies()
        tab.context.clear_permissions()
        tab.set_viewport_size(viewport)
        spare = _spare.setdefault(key, [])
        if len(spare) >= SPARE_PER_KEY:
            raise LookupError("enough kept")
        spare.append(tab)
    except Exception:  # noqa: BLE001 - not kept, not resettable (a crashed tab, a browser gone away): closed
        _kept.pop(tab, None)
        with contextlib.suppress(Exception):
            tab.context.close()


def page_url(base_url: str, path: str = "", *, lang: str | None = None, query: Mapping[str, str] | None = None) -> str:
    """/`path` of the app at `base_url`, its link carrying the language (?lang=) first, then `query`."""
    params = {**({i18n.QUERY_PARAM: lang} if lang is not None else {}), **(query or {})}
    return f"{base_url}/{path}" + (f"?{urlencode(params, safe='/', quote_via=quote)}" if params else "")


def goto_drawn(
    tab,
    base_url: str,
    path: str = "",
    *,
    lang: str | None = None,
    query: Mapping[str, str] | None = None,
    drawn: Sequence[str] = ("h1",),
    state: str = "visible",
    drawn_timeout_ms: int | None = None,
    settle: Callable = wait_idle,
):
    """`tab` sent to the page (page_url's arguments), then waited for until drawn: each selector of `drawn` in
    `state` (within drawn_timeout_ms, None: the tab's own), then `settle(tab)` (wait_idle: the run is over).
    Returns the tab."""
    tab.goto(page_url(base_url, path, lang=lang, query=query))
    for selector in drawn:
        tab.wait_for_selector(selector, state=state, timeout=drawn_timeout_ms)
    settle(tab)
    return tab


# The sidebar's link to a page (sidebar.sidebar_navigation: st.page_link, its href relative: "memory_budget?lang=en",
# the home page's "./?lang=en").
PAGE_LINK = ".st-key-kvviz_nav a[href^='{path}?']"
# The page's title is no longer the one it had: the linked page's run has drawn its own.
NEW_TITLE = "(old) => { const h = document.querySelector('h1'); return !!h && h.innerText !== old; }"


def follow_page_link(tab, path: str = "", *, timeout_ms: int | None = None, settle: Callable = wait_idle):
    """`tab`, on any page of the app, sent to /`path` by its link in the sidebar, as a student clicks it (the
    session, its language and the tab stay: Streamlit runs the page without reloading the tab), then waited for until
    the page's own title is drawn and `settle(tab)`. Less CPU than goto_drawn's load of the whole app: five pages
    after a first, 3.6 against 6.0 CPU-s of the machine (`python bench/browser_tabs.py`). Returns the tab."""
    old_title = tab.locator("h1").first.inner_text()
    tab.locator(PAGE_LINK.format(path=path or "./")).first.click()
    tab.wait_for_function(NEW_TITLE, arg=old_title, timeout=timeout_ms, polling=POLL_MS)
    settle(tab)
    return tab


def open_tab(
    browser,
    base_url: str,
    path: str = "",
    *,
    lang: str | None = None,
    query: Mapping[str, str] | None = None,
    width: int = 1280,
    height: int = 720,
    timeout_ms: int | None = 120_000,
    drawn: Sequence[str] = ("h1",),
    state: str = "visible",
    drawn_timeout_ms: int | None = None,
    settle: Callable = wait_idle,
    **context,
):
    """A new tab (new_tab's arguments) on the page in `lang` with `query`, drawn (goto_drawn's arguments)."""
    tab = new_tab(browser, width=width, height=height, timeout_ms=timeout_ms, **context)
    return goto_drawn(
        tab,
        base_url,
        path,
        lang=lang,
        query=query,
        drawn=drawn,
        state=state,
        drawn_timeout_ms=drawn_timeout_ms,
        settle=settle,
    )


def cache_length(tab) -> int:
    metric = tab.locator('[data-testid="stMetric"]', has_text="Cache length")
    value = metric.locator('[data-testid="stMetricValue"]').inner_text()
    return int(re.match(r"(\d+)", value).group(1))


CACHE_LENGTH_SHOWN = """(shown) => [...document.querySelectorAll('[data-testid="stMetricValue"]')]
    .some(e => e.innerText.startsWith(shown))"""


def wait_cache_length(tab, n: int, timeout_ms: int | None = None, *, lang: str | None = None) -> None:
    """A metric shows `n` tokens (the cache length) within `timeout_ms` (None: the tab's own); in `lang` (the stage's
    own words for it, from the catalog: "5 个 token" in Chinese), English ("5 tokens") when None."""
    shown = f"{n} tokens"
    if lang is not None:
        with i18n.language(lang):
            shown = i18n.ngettext("{n} token", "{n} tokens", n).format(n=n)
    tab.wait_for_function(CACHE_LENGTH_SHOWN, arg=shown, timeout=timeout_ms, polling=POLL_MS)


# The sidebar model radio's checked option(s): Streamlit draws each option as a label holding an input.
CHECKED_MODEL = """() => [...document.querySelectorAll('[data-testid="stSidebar"] [role="radiogroup"] label')]
    .filter(l => l.querySelector('input:checked')).map(l => l.innerText.trim())"""


def inside(box: dict | None, width: int, height: int) -> bool:
    """A bounding box wholly inside a `width` x `height` viewport (a pixel's rounding allowed)."""
    return (
        box is not None
        and box["x"] >= 0
        and box["y"] >= 0
        and box["x"] + box["width"] <= width + 1
        and box["y"] + box["height"] <= height + 1
    )


def assert_no_errors(tab) -> None:
    assert tab.locator('[data-testid="stException"]').count() == 0
    assert tab.locator('[data-testid="stAlertContentError"]').count() == 0
