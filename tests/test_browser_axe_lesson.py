"""Accessibility of every lesson step as a class sees it: axe-core scans (support.axe: the runner, rules and failing
rule of tests/test_browser_every_page.py) of each of the 12 steps as first drawn, in the student's mode and in class mode.

Each step is scanned once per mode, as (English, light) or (Chinese, dark) alternating step by step, the other way
round in class mode: every step in both modes, and both languages and both themes in each mode, at half the time of
every combination. No serious or critical violation, nor heading-order.
"""

from __future__ import annotations

import pytest

from kvviz.teaching import lesson
from support import axe
from support.browser import close_tab, goto_drawn, new_tab

pytestmark = pytest.mark.browser
PAIRS = [("en", "light"), ("zh-CN", "dark")]


@pytest.mark.parametrize("class_mode", [False, True], ids=["student", "class"])
def test_every_lesson_step_has_no_serious_axe_violation(app_url, browser, class_mode):
    failing: dict[str, list] = {}
    tabs = {scheme: new_tab(browser, color_scheme=scheme) for _, scheme in PAIRS}
    for number in range(1, len(lesson.STEPS) + 1):
        lang, scheme = PAIRS[(number + class_mode) % 2]
        query = {"step": str(number), **({"lesson_class": "true"} if class_mode else {})}
        tab = tabs[scheme]
        goto_drawn(tab, app_url, "lesson", lang=lang, query=query, drawn=(), settle=axe.settle)
        if bad := axe.failing_now(tab):
            failing[f"step {number} ({lang}, {scheme})"] = bad
    for tab in tabs.values():
        close_tab(tab)
    assert not failing, "\n".join(f"{state}: {v}" for state, found in failing.items() for v in found)
