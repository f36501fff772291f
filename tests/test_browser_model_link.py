"""A Link carries the model. A teacher on the bundled GQA model shares the step page's Link; a
student (another browser, zh-CN) opens it on the GQA model; a link naming a model the server cannot give is
refused with one translated line and the student's model is kept. Headless Chromium at 1280x720."""

from __future__ import annotations

import re

import pytest

from support.browser import CHECKED_MODEL, assert_no_errors, close_tab, new_tab, page_url, wait_idle

pytestmark = pytest.mark.browser


def _wait_model(tab, label: str) -> None:
    tab.wait_for_function(f"() => JSON.stringify(({CHECKED_MODEL})()) === JSON.stringify([{label!r}])")
    wait_idle(tab)


def test_a_shared_link_opens_on_the_teachers_model_and_an_unknown_one_is_refused(app_url, browser):
    teacher = new_tab(browser, locale="en-US")
    teacher.goto(page_url(app_url, "step_through"))
    _wait_model(teacher, "Bundled Tiny-Shakespeare GPT-2 (offline)")
    teacher.locator('[data-testid="stSidebar"]').get_by_text(
        "Bundled Tiny-Shakespeare Llama, GQA (offline)", exact=True
    ).click()
    _wait_model(teacher, "Bundled Tiny-Shakespeare Llama, GQA (offline)")
    teacher.get_by_role("button", name="Prefill").click()
    teacher.wait_for_selector('[data-testid="stMetric"]')
    wait_idle(teacher)
    teacher.get_by_role("button", name="Next token").click()  # (the Link popover is drawn once a run has begun)
    teacher.get_by_role("button", name=re.compile(r"\bLink\b")).click()
    link = teacher.locator('[data-testid="stPopoverBody"] code').inner_text().strip()
    assert "model=bundled-gqa" in link, link
    close_tab(teacher)

    student = new_tab(browser, locale="zh-CN")
    student.goto(link)  # the link opens in the language it was made in (?lang=en), on its model
    _wait_model(student, "Bundled Tiny-Shakespeare Llama, GQA (offline)")
    assert_no_errors(student)
    assert "model=bundled-gqa" in student.url
    assert student.locator('[data-testid="stSidebar"] [data-testid="stAlert"]').count() == 0

    # A model this server cannot give: one line, in the link's language, and the model in use (a new browser
    # session's: the default) stays.
    student.goto(link.replace("model=bundled-gqa", "model=no-such-model-xyz").replace("lang=en", "lang=zh-CN"))
    student.wait_for_selector('[data-testid="stSidebar"] [data-testid="stAlert"]')
    _wait_model(student, "内置 Tiny-Shakespeare GPT-2（离线）")
    notices = student.locator('[data-testid="stSidebar"] [data-testid="stAlert"]').all_inner_texts()
    assert len(notices) == 1 and "no-such-model-xyz" in notices[0] and "继续使用当前模型" in notices[0], notices
    assert "model=bundled&" in student.url + "&"  # the address bar says what is in use
    assert_no_errors(student)
    close_tab(student)
