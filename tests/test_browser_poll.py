"""The class poll in real browsers (headless Debian Chromium): a teacher's projector tab and three students, two on
phones at 390x844 (one in Chinese), join by the code, vote, change a vote and try to vote twice from a second tab; the
teacher reveals, runs round 2 and reaches the ending, and the projector's counts are the votes cast. Then the plan's
way of working: marks kept through new tabs, Back and a reload, read at the ending. Screenshots go to
test-artifacts/poll/ to be looked at.
"""

from __future__ import annotations

import re

import pytest

from support import axe
from support.browser import ARTIFACTS as ALL_ARTIFACTS
from support.browser import close_tab, new_tab, open_tab, page_url, wait_settled

pytestmark = pytest.mark.browser
ARTIFACTS = ALL_ARTIFACTS / "poll"
PHONE = {"width": 390, "height": 844, "is_mobile": True, "has_touch": True, "device_scale_factor": 2}


def _settled(tab) -> None:
    wait_settled(tab, timeout_ms=60_000)


def _voted(tab) -> int:
    metric = tab.locator('[data-testid="stMetric"]', has_text=re.compile("Voted|已投票"))
    shown = metric.locator('[data-testid="stMetricValue"]').inner_text()  # "3 of 4": voted of the phones that opened
    return int(re.match(r"[\d,]+", shown.strip()).group(0).replace(",", ""))


def _wait_voted(tab, n: int) -> None:
    """The projector's live count (a fragment, refreshed every second) shows n."""
    for _ in range(60):
        if _voted(tab) == n:
            return
        tab.wait_for_timeout(500)
    raise AssertionError(f"the projector shows {_voted(tab)} voted, not {n}")


def _join_by_code(tab, base_url: str, code: str) -> None:
    tab.goto(page_url(base_url, "join"))
    tab.locator("input[type=text]").first.wait_for()
    _settled(tab)
    tab.locator("input[type=text]").first.fill(code.lower())  # typed on a phone, in any case
    tab.locator('[data-testid="stFormSubmitButton"] button').click()
    tab.locator(".st-key-join_refresh").wait_for()
    _settled(tab)
    assert f"room={code}" in tab.url


TABLE_ROWS = """(table) => [...table.querySelectorAll('tbody tr')].map(
    tr => [...tr.querySelectorAll('td, th')].map(td => td.innerText.trim()))"""


def _rows(locator) -> list[list[str]]:
    """A static table's body, cell by cell."""
    return locator.evaluate(TABLE_ROWS)


def _tap(tab, letter: str) -> None:
    """Tap the choice lettered `letter` (a phone's tap is a click on touch devices too)."""
    tab.locator("[class*='st-key-join_choice_'] button", has_text=re.compile(rf"^{letter}\. ")).first.click()
    _settled(tab)


def _refresh(tab) -> None:
    tab.locator(".st-key-join_refresh button").click()
    _settled(tab)


def test_a_room_votes_on_phones_reveals_and_votes_again(poll_url, browser):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    teacher = open_tab(browser, poll_url, "lesson", lang="en", query={"step": "7", "lesson_class": "true"})
    teacher.get_by_text("Step 7 of 12").first.wait_for()
    _settled(teacher)
    teacher.locator(".st-key-poll_start").get_by_role("button", name="Start a class poll").click()
    heading = teacher.locator(".st-key-poll_panel h3").first
    heading.wait_for()
    _settled(teacher)
    code = re.search(r"([0-9A-Z]{6})", heading.inner_text()).group(1)
    qr = teacher.locator("img.kvviz-poll-qr")
    assert qr.count() == 1 and qr.get_attribute("src").startswith("data:image/svg+xml")  # drawn here: no web service
    assert _voted(teacher) == 0
    teacher.screenshot(path=str(ARTIFACTS / "projector_open.png"))

    phone_zh = new_tab(browser, locale="zh-CN", **PHONE)  # the phone's own language, not the teacher's
    phone_en = new_tab(browser, locale="en-US", **PHONE)
    laptop = open_tab(browser, poll_url, "join", query={"room": code}, drawn=(".st-key-join_refresh",))
    _join_by_code(phone_zh, poll_url, code)
    _join_by_code(phone_en, poll_url, code)
    assert phone_zh.locator("h1").inner_text().strip() != "Join a class poll"  # drawn in Chinese
    phone_zh.screenshot(path=str(ARTIFACTS / "phone_zh_question.png"))
    choices = phone_en.locator("[class*='st-key-join_choice_'] button")
    n_choices = choices.count()
    assert 3 <= n_choices <= 5
    _tap(phone_zh, "A")
    _tap(phone_en, "B")
    _tap(laptop, "A")
    _tap(phone_en, "C")  # a changed vote: its latest counts
    assert phone_en.get_by_text("Vote received: C").count() == 1
    phone_en.screenshot(path=str(ARTIFACTS / "phone_en_voted.png"))
    second = phone_en.context.new_page()  # a second tab of the same browser: the same voter
    second.goto(page_url(poll_url, "join", query={"room": code}))
    second.locator(".st-key-join_refresh").wait_for()
    _settled(second)
    _tap(second, "A")
    _wait_voted(teacher, 3)

    teacher.keyboard.press("v")  # the lesson's Reveal also reveals the room's votes
    teacher.locator(".st-key-poll_panel .js-plotly-plot").wait_for()
    _settled(teacher)
    rows = _rows(teacher.locator(".st-key-poll_panel table").first)
    votes = {row[0][0]: int(row[1]) for row in rows}
    assert votes["A"] == 3 and sum(votes.values()) == 3, rows  # phone_zh, laptop; the second tab's A replaced C
    teacher.screenshot(path=str(ARTIFACTS / "projector_revealed.png"))
    _refresh(phone_zh)
    phone_zh.locator(".js-plotly-plot").first.wait_for()  # the phones see the counts after the reveal

    teacher.locator(".st-key-poll_again button").first.click()  # round 2, after the room discusses
    _settled(teacher)
    _wait_voted(teacher, 0)
    for tab in (phone_zh, phone_en, laptop):
        _refresh(tab)
        _tap(tab, "A")
    _wait_voted(teacher, 3)
    teacher.locator(".st-key-poll_show button").first.click()
    teacher.locator(".st-key-poll_panel .js-plotly-plot").wait_for()
    _settled(teacher)
    assert "round 2" in teacher.locator(".st-key-poll_panel").inner_text()
    teacher.screenshot(path=str(ARTIFACTS / "projector_round2.png"))

    teacher.goto(page_url(poll_url, "lesson", lang="en", query={"step": "End", "lesson_class": "true"}))
    teacher.get_by_text("The room's votes").wait_for()
    _settled(teacher)
    ending = _rows(teacher.locator("table").first)  # the room's votes, above the ideas
    assert ["7", "1", "3"] in [row[:3] for row in ending] and ["7", "2", "3"] in [row[:3] for row in ending], ending
    teacher.screenshot(path=str(ARTIFACTS / "ending.png"))


def test_the_rooms_score_survives_new_tabs_back_and_reload(poll_url, browser):
    """The plan's way: marks made in class mode (no poll), a plan link opened in a new tab of the same browser, the
    browser's Back and a reload: the ending reads every mark."""
    tab = open_tab(browser, poll_url, "lesson", lang="en", query={"step": "1", "lesson_class": "true"})
    for number, key in ((1, "y"), (2, "n"), (3, "y")):
        if number != 1:
            tab.keyboard.press("ArrowRight")
        tab.get_by_text(f"Step {number} of 12").first.wait_for()
        _settled(tab)
        tab.keyboard.press("v")
        tab.locator(f".st-key-lesson_room_right_{number}").wait_for()
        _settled(tab)
        tab.keyboard.press(key)
        tab.get_by_text("Marked for the room").first.wait_for()
        _settled(tab)
    other = tab.context.new_page()  # a plan link in a new tab: the stage, then back to the lesson there
    other.goto(page_url(poll_url, "step_through", lang="en", query={"present": "1"}))
    other.locator("h1").first.wait_for()
    other.goto(page_url(poll_url, "lesson", lang="en", query={"step": "4", "lesson_class": "true"}))
    other.get_by_text("Step 4 of 12").first.wait_for()
    _settled(other)
    other.keyboard.press("v")
    other.locator(".st-key-lesson_room_right_4").wait_for()
    _settled(other)
    other.keyboard.press("y")
    other.get_by_text("Marked for the room").first.wait_for()
    _settled(other)
    for _ in range(2):  # Back in the first tab to step 1, past its marks (a mark is no history entry: Route.in_place)
        tab.go_back()
        _settled(tab)
    tab.get_by_text("Step 1 of 12").first.wait_for()
    tab.reload()
    tab.get_by_text("Step 1 of 12").first.wait_for()
    _settled(tab)
    tab.goto(page_url(poll_url, "lesson", lang="en", query={"step": "End", "lesson_class": "true"}))
    tab.get_by_text("What you learned").wait_for()
    _settled(tab)
    assert "3 of 12" in tab.locator('[data-testid="stMetric"]').first.inner_text()  # 1, 3 and 4 (2 missed)


@pytest.mark.parametrize("lang, scheme", [("en", "light"), ("zh-CN", "dark")])
def test_the_phone_view_has_no_serious_axe_violation(poll_url, poll_db, browser, lang, scheme):
    """The student's view at 390x844 (touch): the code form, a question with its choices, a vote received, and the
    counts after the reveal; in each language, in one colour scheme each."""
    from kvviz.i18n import Message
    from kvviz.poll import store as poll_store
    from kvviz.poll.question import PollQuestion
    from kvviz.teaching import poll_choices

    store = poll_store.PollStore(poll_db)  # the server's own file: the teacher's side, run from here
    room = store.create_room()
    question = Message.lazy(  # the lesson's step-3 question: one poll, each phone draws it in its language
        "After the prefill of {prompt_rows} tokens the model takes **{steps} Next-token steps**. "
        "How many rows will layer {layer} hold?",
        prompt_rows=10,
        steps=10,
        layer=0,
    )
    off_by_one = Message.lazy(poll_choices.OFF_BY_ONE)
    choices = tuple(Message.verbatim(n) for n in ("20", "21", "22"))
    store.open_step(room.code, room.host_key, PollQuestion(2, question, choices, 1, (off_by_one, None, off_by_one)))
    tab = new_tab(browser, locale=lang, color_scheme=scheme, **PHONE)
    failing: dict = {}
    for state, query in (("the code form", {}), ("a question", {"room": room.code})):
        tab.goto(page_url(poll_url, "join", lang=lang, query=query))
        tab.locator("h1").first.wait_for()
        axe.settle(tab)
        if bad := axe.failing_now(tab):
            failing[state] = bad
    _tap(tab, "B")
    axe.settle(tab)
    if bad := axe.failing_now(tab):
        failing["a vote received"] = bad
    store.reveal(room.code, room.host_key)
    _refresh(tab)
    tab.locator(".js-plotly-plot").first.wait_for()
    axe.settle(tab)
    if bad := axe.failing_now(tab):
        failing["the counts after the reveal"] = bad
    tab.screenshot(path=str(ARTIFACTS / f"phone_revealed_{lang}_{scheme}.png"))
    assert not failing, "\n".join(f"{state}: {v}" for state, found in failing.items() for v in found)


LOADED_CODE = """(files) => files.every(file => performance.getEntriesByType('resource')
    .some(entry => entry.name.endsWith('/' + file)))"""


def test_a_fresh_projector_tab_has_the_chart_code_before_its_first_reveal(poll_url, browser):
    """Step 5 draws no chart before its question: Streamlit would load plotly's code (and the table's) at the Reveal,
    the wait issue 54 measured. A fresh tab fetches them while the room votes (kvviz.ui.chart_code), before any chart
    is on the page; the Reveal then draws the room's votes."""
    from kvviz.ui import chart_code

    files = chart_code.chunk_files()
    assert [f.split(".")[0] for f in files] == list(chart_code.CHUNKS), files
    query = {"step": "5", "lesson_class": "true"}
    teacher = open_tab(browser, poll_url, "lesson", lang="en", query=query)
    teacher.get_by_text("Step 5 of 12").first.wait_for()
    _settled(teacher)
    teacher.locator(".st-key-poll_start").get_by_role("button", name="Start a class poll").click()
    teacher.locator(".st-key-poll_panel h3").first.wait_for()
    _settled(teacher)
    projector = teacher.context.new_page()  # the same browser's new tab: a new session, the room's host cookie
    projector.goto(page_url(poll_url, "lesson", lang="en", query=query))
    projector.locator(".st-key-poll_panel h3").first.wait_for()
    _settled(projector)
    projector.wait_for_function(LOADED_CODE, arg=list(files), timeout=30_000)
    assert projector.locator(".js-plotly-plot").count() == 0  # no chart drew it: the preload did
    projector.keyboard.press("v")
    projector.locator(".st-key-poll_panel .js-plotly-plot .main-svg").first.wait_for()
    projector.locator(".st-key-poll_panel table").first.wait_for()
    close_tab(teacher)
