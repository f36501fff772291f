"""What a teacher points at is on the first screen (headless Debian Chromium, the sidebar open at 1024x768 and
1280x720; a phone at 390x844): the memory page opened by the plan's link, at its top with the preset box and the
What fits answer; the attention patterns' enlarged head opened by the plan's row 4; the lesson's prompt and figure
with a class poll open; the phone stage's K/V chart under its controls.
"""

from __future__ import annotations

import pytest

from kvviz.teaching import guide
from support.browser import inside, new_tab, wait_settled

pytestmark = pytest.mark.browser
SCREENS = [(1024, 768), (1280, 720)]
SCREEN_IDS = [f"{w}x{h}" for w, h in SCREENS]
SCROLLED = "() => document.querySelector('[data-testid=\"stMain\"]').scrollTop"


def _block(page_file: str) -> guide.Block:
    return next(b for b in guide.PLAN_45 if b.page.file == page_file)


def _box(tab, selector: str) -> dict | None:
    return tab.locator(selector).first.bounding_box()


@pytest.mark.parametrize("width, height", SCREENS, ids=SCREEN_IDS)
def test_the_memory_link_opens_at_the_top_with_the_preset_box_and_the_answer(app_url, browser, width, height):
    """For teachers' memory row names the What fits tab: the page used to scroll down to the tab bar (its answer
    was below the model's inputs), and the preset box the row names went off the top."""
    tab = new_tab(browser, width=width, height=height)
    tab.goto(f"{app_url}{_block('pages/memory_budget.py').link}")
    answer = tab.get_by_text("The cache outweighs the weights from")
    answer.wait_for()
    wait_settled(tab, timeout_ms=120_000)
    tab.wait_for_timeout(1500)  # a script that scrolls would have done so by now
    assert tab.locator('[data-testid="stSidebar"]').is_visible()
    assert tab.evaluate(SCROLLED) == 0
    assert inside(_box(tab, ".st-key-mem_preset"), width, height), _box(tab, ".st-key-mem_preset")
    assert inside(_box(tab, ".st-key-mem_metrics_fit"), width, height), _box(tab, ".st-key-mem_metrics_fit")
    assert inside(answer.bounding_box(), width, height), answer.bounding_box()
    assert tab.get_by_role("tab", name="What fits").get_attribute("aria-selected") == "true"
    tab.context.close()
