"""Chinese labels keep their words whole (issue 58), in a real browser (headless Debian Chromium) at 1280x720 and at
1024x768 (the sidebar open): a metric's label or value, a choice of a radio or a segmented control, a button, a tab
and the sidebar's links break a line only where a word ends (a space or a mark), never between two Chinese characters
("本步点积（不使 / 用缓存）", "模型原有布 / 局 + MKL", the sidebar's "（离 / 线）"). Chinese has no spaces to say
where a word ends, so any break between two characters counts. Nor is any of them, or a toggle's label, cut by its
box: the layout test's clipped-text rule (CLIPPED_JS) reads them. A widget's label is a phrase and keeps Chinese's
ordinary breaks. Screenshots go to test-artifacts/words_zh/.
"""

from __future__ import annotations

import pytest

from kvviz import i18n
from kvviz.i18n import _
from support.browser import ARTIFACTS as ALL_ARTIFACTS
from support.browser import CLIPPED_JS, close_tab, open_tab, wait_settled

pytestmark = pytest.mark.browser
ARTIFACTS = ALL_ARTIFACTS / "words_zh"
SCREENS = {"1280x720": (1280, 720), "1024x768": (1024, 768)}
SETTLE_MS = 180_000
# The short texts a reader reads as one label: where a line breaks in one, a word must end.
LABELS = (
    '[data-testid="stMetricLabel"], [data-testid="stMetricValue"], [role="radiogroup"] label, '
    '[data-testid="stButtonGroup"] button, button[role="tab"], '
    '[data-testid="stBaseButton-secondary"], [data-testid="stBaseButton-primary"], [data-testid="stSidebar"] a'
)

# [the label's text, the two characters a line break falls between] for every line break between two Chinese
# characters inside one of the labels: each character's box (a Range over it) starts lower than the one before.
BREAKS_JS = """(selectors) => {
  const han = /[\\u3400-\\u9fff\\uf900-\\ufaff]/;
  const out = [];
  for (const label of document.querySelectorAll(selectors)) {
    if (!label.checkVisibility() || label.closest('.kvviz-sr-only, [aria-hidden="true"]')) continue;
    const walker = document.createTreeWalker(label, NodeFilter.SHOW_TEXT);
    let before = null, beforeTop = null;  // across the label's text nodes (bold inside a label)
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const text = n.textContent;
      for (let i = 0; i < text.length; i++) {
        const range = document.createRange();
        range.setStart(n, i); range.setEnd(n, i + 1);
        const rects = range.getClientRects();
        if (!rects.length || rects[0].width === 0) continue;  // a space collapsed at the line's end
        const top = rects[0].top;
        if (beforeTop !== null && top > beforeTop + 2 && han.test(before) && han.test(text[i]))
          out.push([label.textContent.trim(), before + ' / ' + text[i]]);
        before = text[i]; beforeTop = top;
      }
    }
  }
  return out;
}"""
LABEL_TEXTS_JS = """(selectors) => [...document.querySelectorAll(selectors)].map(e => e.textContent.trim())"""


def _problems(tab, name: str) -> list[str]:
    tab.evaluate("() => window.scrollTo(0, 0)")
    tab.wait_for_timeout(600)
    tab.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
    problems = [f"broken inside a word ({where}): {text!r}" for text, where in tab.evaluate(BREAKS_JS, LABELS)]
    labels = set(tab.evaluate(LABEL_TEXTS_JS, LABELS + ', [data-testid="stCheckbox"] label'))
    problems += [f"cut ({what}): {text!r}" for what, text in tab.evaluate(CLIPPED_JS) if text in labels]
    return problems


@pytest.mark.parametrize("screen", list(SCREENS))
def test_chinese_labels_break_only_between_words(app_url, browser, screen):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    width, height = SCREENS[screen]
    problems: dict[str, list[str]] = {}

    tab = open_tab(browser, app_url, "step_through", lang="zh-CN", width=width, height=height, timeout_ms=SETTLE_MS)
    wait_settled(tab, timeout_ms=SETTLE_MS)
    tab.locator(".st-key-step_btn_prefill button").first.wait_for()
    tab.keyboard.press("p")
    tab.wait_for_selector('.kvviz-stage-state[data-records="1"]', state="attached", timeout=SETTLE_MS)
    wait_settled(tab, timeout_ms=SETTLE_MS)
    assert tab.locator('[data-testid="stMetricLabel"]').count() >= 4
    problems["stage"] = _problems(tab, f"stage_{screen}")
    close_tab(tab)

    for path in ("attention_ops", "memory_budget"):
        tab = open_tab(browser, app_url, path, lang="zh-CN", width=width, height=height, timeout_ms=SETTLE_MS)
        wait_settled(tab, timeout_ms=SETTLE_MS)
        problems[path] = _problems(tab, f"{path}_{screen}")
        close_tab(tab)

    # the speed-up's metric row after a tiny benchmark (seconds): its weight format ("模型原有布局 + MKL")
    tab = open_tab(browser, app_url, "speedup", lang="zh-CN", width=width, height=height, timeout_ms=SETTLE_MS)
    wait_settled(tab, timeout_ms=SETTLE_MS)
    with i18n.language(i18n.CHINESE):
        setup = {_("Prompt tokens"): "4", _("New tokens"): "5", _("Rounds"): "1"}
        run = _("Run benchmark")
    for label, value in setup.items():
        tab.get_by_label(label, exact=True).fill(value)
    tab.get_by_role("button", name=run).first.click()
    tab.wait_for_selector('.st-key-bench_metrics [data-testid="stMetricValue"]', timeout=SETTLE_MS)
    wait_settled(tab, timeout_ms=SETTLE_MS)
    problems["speedup"] = _problems(tab, f"speedup_{screen}")
    close_tab(tab)

    found = {page: sorted(set(p)) for page, p in problems.items() if p}
    assert not found, f"zh-CN {screen}: " + "; ".join(f"{page}: {' | '.join(p)}" for page, p in found.items())
