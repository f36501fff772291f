"""Layout on a phone (390x844, touch) and on an old projector (1024x768, sidebar open), in a real browser (headless
Debian Chromium), in English and in Chinese: the stage after Prefill and 5 tokens, the lesson (a student's step after
Next, and class mode) and the memory page. On each: no text is cut by its container (an HTML text wider than its
clipping box, a "…", a chart's text outside its chart), no two labels overlap (headings, button and widget labels,
metric tiles, Streamlit's header; in a chart its titles, axis titles, ticks and colour-bar ticks, a colour bar's
ticks over the heatmaps and bars, the chart's toolbar on hover over its title), nothing scrolls sideways. On a
phone the stage's tiles read in their order and the lesson's question is on the first screen after Next.
Screenshots go to test-artifacts/layout/ to be looked at.
"""

from __future__ import annotations

import pytest

from support.browser import ARTIFACTS as ALL_ARTIFACTS
from support.browser import CLIPPED_JS, close_tab, open_tab, wait_settled

pytestmark = pytest.mark.browser
ARTIFACTS = ALL_ARTIFACTS / "layout"
DEVICES = {
    "phone": {"width": 390, "height": 844, "is_mobile": True, "has_touch": True, "device_scale_factor": 2},
    "projector": {"width": 1024, "height": 768},
}
SETTLE_MS = 180_000  # the lead runs the whole browser tier beside this module: a loaded machine

# CLIPPED_JS (support.browser): every visible text cut by its box, and every chart's text outside its chart.

# Pairs of labels whose boxes overlap (more than 2 px each way). HTML: headings, button labels, widget labels,
# metric labels and values, the stage's readout, Streamlit's header bar. In each chart: titles, subplot titles
# (annotations), axis titles, ticks, colour-bar ticks, bar texts; and a colour bar's ticks against the chart's
# heatmaps and bars.
OVERLAPS_JS = """() => {
  const box = e => { const r = e.getBoundingClientRect(); return {l: r.left, r: r.right, t: r.top, b: r.bottom, w: r.width}; };
  const hit = (a, b) => Math.min(a.r, b.r) - Math.max(a.l, b.l) > 2 && Math.min(a.b, b.b) - Math.max(a.t, b.t) > 2;
  const name = e => (e.textContent || '').trim().slice(0, 40) || e.dataset.testid || e.tagName;
  const shown = e => { const s = getComputedStyle(e);
    return box(e).w > 0 && s.visibility !== 'hidden' && +s.opacity > 0 && e.checkVisibility(); };  // not in a closed expander
  const out = [];
  const pairs = (items, against) => {
    for (let i = 0; i < items.length; i++)
      for (const other of (against || items.slice(i + 1))) {
        const a = items[i], b = other;
        if (a === b || a.contains(b) || b.contains(a)) continue;
        if (hit(box(a), box(b))) out.push([name(a), name(b)]);
      }
  };
  const html = [...document.querySelectorAll('[data-testid="stMain"] :is(h1, h2, h3, button p, '
    + '[data-testid="stWidgetLabel"] p, [data-testid="stMetricLabel"] p, [data-testid="stMetricValue"] > div, '
    + '.kvviz-readout, [data-testid="stCaptionContainer"] p)')].filter(shown);
  const header = document.querySelector('[data-testid="stHeader"]');
  const headerBg = header && getComputedStyle(header).backgroundColor;
  if (header && headerBg && !headerBg.endsWith(', 0)') && headerBg !== 'transparent' && window.scrollY === 0)
    pairs(html.filter(e => e.matches('h1')), [header]);
  pairs(html);
  for (const plot of document.querySelectorAll('.js-plotly-plot')) {
    const labels = [...plot.querySelectorAll('.gtitle, .annotation-text, .g-xtitle text, .g-ytitle text, '
      + '.xtick text, .ytick text, .cbaxis text, .bartext')].filter(e => shown(e) && e.textContent.trim());
    pairs(labels);
    const marks = [...plot.querySelectorAll('.hm image, .heatmaplayer image, .barlayer .point path')].filter(shown);
    pairs([...plot.querySelectorAll('.cbaxis text')].filter(shown), marks);
  }
  return out;
}"""

# A chart's title or subplot titles under its toolbars (Streamlit's element toolbar and plotly's mode bar, shown
# while the pointer is on the chart): the chart's index and the covered title.
TOOLBAR_JS = """(i) => {
  const plot = document.querySelectorAll('.js-plotly-plot')[i];
  const hit = (a, b) => Math.min(a.right, b.right) - Math.max(a.left, b.left) > 2
    && Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 2;
  const element = plot.closest('[data-testid="stElementContainer"]') || plot.parentElement;
  const bars = [...element.querySelectorAll('[data-testid="stElementToolbar"], .modebar')]
    .filter(e => { const s = getComputedStyle(e); return e.getBoundingClientRect().width > 0 && +s.opacity > 0
      && s.visibility !== 'hidden'; });
  const titles = [...plot.querySelectorAll('.gtitle, .annotation-text')].filter(t => t.textContent.trim());
  return titles.filter(t => bars.some(b => hit(t.getBoundingClientRect(), b.getBoundingClientRect())))
    .map(t => t.textContent.trim());
}"""


def _layout_problems(tab, width: int, height: int, name: str) -> list[str]:
    """What is cut, overlapping or sideways on the page in `tab` now; screenshots of the first screen and of each
    chart (scrolled to, the pointer on it) saved under `name`."""
    tab.evaluate("() => window.scrollTo(0, 0)")
    tab.wait_for_timeout(600)  # plotly relayouts after a resize; Streamlit's header settles
    tab.screenshot(path=str(ARTIFACTS / f"{name}.png"))
    problems = [f"cut ({what}): {text!r}" for what, text in tab.evaluate(CLIPPED_JS)]
    problems += [f"overlap: {a!r} / {b!r}" for a, b in tab.evaluate(OVERLAPS_JS)]
    scroll_px = tab.evaluate("() => document.documentElement.scrollWidth")
    if scroll_px > width + 1:
        problems.append(f"the page scrolls sideways: {scroll_px} px wide in a {width} px viewport")
    charts = tab.locator(".js-plotly-plot")
    for i in range(charts.count()):
        chart = charts.nth(i)
        if not chart.is_visible():  # in a tab not open (the memory page's): nothing to hover
            continue
        chart.scroll_into_view_if_needed()
        chart.hover(position={"x": 40, "y": 40}, force=True)
        tab.wait_for_timeout(400)
        tab.screenshot(path=str(ARTIFACTS / f"{name}_chart{i}.png"))  # the chart with its toolbar shown
        problems += [f"chart {i}: its toolbar covers {title!r}" for title in tab.evaluate(TOOLBAR_JS, i)]
    tab.mouse.move(0, 0)
    tab.evaluate("() => window.scrollTo(0, 0)")
    return problems


def _open(browser, app_url, device: str, lang: str, path: str, query: dict | None = None):
    tab = open_tab(browser, app_url, path, lang=lang, query=query, timeout_ms=SETTLE_MS, **DEVICES[device])
    wait_settled(tab, timeout_ms=SETTLE_MS)
    return tab


def _stage_after_five_tokens(browser, app_url, device: str, lang: str):
    """The stage after Prefill (P) and 5 Next tokens (Right arrow), each waited for (the records on the stage)."""
    tab = _open(browser, app_url, device, lang, "step_through")
    tab.locator(".st-key-step_btn_prefill button").first.wait_for()
    tab.keyboard.press("p")
    for records in range(1, 7):
        tab.wait_for_selector(f'.kvviz-stage-state[data-records="{records}"]', state="attached")
        wait_settled(tab, timeout_ms=SETTLE_MS)
        if records < 6:
            tab.keyboard.press("ArrowRight")
    tab.wait_for_selector(".js-plotly-plot .main-svg")
    return tab


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
@pytest.mark.parametrize("device", ["phone", "projector"])
def test_layout_on_a_phone_and_an_old_projector(app_url, browser, device, lang):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    width, height = DEVICES[device]["width"], DEVICES[device]["height"]
    problems: dict[str, list[str]] = {}

    tab = _stage_after_five_tokens(browser, app_url, device, lang)
    problems["stage"] = _layout_problems(tab, width, height, f"stage_{device}_{lang}")
    # the tiles read length, size, then this step's two dot counts (reading order: top to bottom, left to right)
    tiles = tab.locator('[data-testid="stMetric"] [data-testid="stMetricLabel"]')
    boxes = [(round(b["y"]), round(b["x"])) for b in (tiles.nth(i).bounding_box() for i in range(tiles.count()))]
    texts = [tiles.nth(i).inner_text() for i in range(tiles.count())]
    read = [text for _box, text in sorted(zip(boxes, texts, strict=True))]
    if len(read) == 4 and read != texts:
        problems["stage"].append(f"the tiles read out of order: {read}")
    close_tab(tab)

    tab = _open(browser, app_url, device, lang, "lesson", {"step": "1"})
    tab.locator(".st-key-lesson_next button").first.click()
    tab.wait_for_selector(".st-key-lesson_answer_2", state="attached")
    wait_settled(tab, timeout_ms=SETTLE_MS)
    tab.evaluate("() => window.scrollTo(0, 0)")
    question = tab.locator('[data-testid="stForm"]').first.bounding_box()
    problems["lesson"] = _layout_problems(tab, width, height, f"lesson_step2_{device}_{lang}")
    if question is None or question["y"] > height:
        problems["lesson"].append(
            f"after Next the question starts {question and round(question['y'])} px down, below the {height} px screen"
        )
    close_tab(tab)

    tab = _open(browser, app_url, device, lang, "lesson", {"step": "2", "lesson_class": "true"})
    problems["lesson class mode"] = _layout_problems(tab, width, height, f"lesson_class_{device}_{lang}")
    close_tab(tab)

    tab = _open(browser, app_url, device, lang, "memory_budget")
    tab.wait_for_selector(".js-plotly-plot .main-svg")
    problems["memory"] = _layout_problems(tab, width, height, f"memory_{device}_{lang}")
    close_tab(tab)

    found = {page: sorted(set(p)) for page, p in problems.items() if p}
    assert not found, f"{device} {width}x{height}, {lang}: " + "; ".join(
        f"{page}: {' | '.join(p)}" for page, p in found.items()
    )
