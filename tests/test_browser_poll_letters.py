"""The class poll as one room sees it (headless Debian Chromium): the projector, the phones and the vote chart name
each choice by the same letter, in both languages and on number steps too; the phones follow the teacher without a
tap; a phone's controls are made for a thumb and a screen reader; the join code reads from the back of the hall; a
revealed round stays revealed when the teacher goes back to it; a phone says "Vote received" only while its vote
counts, and the projector reads "Voted N of M".
Screenshots go to test-artifacts/poll/ to be looked at.
"""

from __future__ import annotations

import re
import time

import pytest

from support.browser import ARTIFACTS as ALL_ARTIFACTS
from support.browser import close_tab, new_tab, open_tab, page_url, wait_settled

pytestmark = pytest.mark.browser
ARTIFACTS = ALL_ARTIFACTS / "poll"
PHONE = {"width": 390, "height": 844, "is_mobile": True, "has_touch": True, "device_scale_factor": 2}
LOCALES = {"en": "en-US", "zh-CN": "zh-CN"}


def _settled(tab) -> None:
    wait_settled(tab, timeout_ms=60_000)


def _projector(poll_url: str, browser, step: int, lang: str, **tab):
    """A teacher's projector in class mode on `step`, its class poll started (`tab`: open_tab's other arguments, a
    size or a colour scheme); (the tab, the room's code)."""
    teacher = open_tab(
        browser,
        poll_url,
        "lesson",
        lang=lang,
        query={"step": str(step), "lesson_class": "true"},
        drawn=(".st-key-poll_start",),
        **tab,
    )
    _settled(teacher)
    teacher.locator(".st-key-poll_start button").first.click()
    heading = teacher.locator(".st-key-poll_panel h3").first
    heading.wait_for()
    _settled(teacher)
    return teacher, re.search(r"([0-9A-Z]{6})", heading.inner_text()).group(1)


def _phone(poll_url: str, browser, code: str, lang: str):
    phone = new_tab(browser, locale=LOCALES[lang], **PHONE)
    phone.goto(page_url(poll_url, "join", lang=lang, query={"room": code}))
    phone.locator("[class*='st-key-join_choice_'] button").first.wait_for()
    _settled(phone)
    return phone


def _lines(locator) -> list[str]:
    return [" ".join(t.split()) for t in locator.all_inner_texts()]


@pytest.mark.parametrize("step, lang", [(5, "en"), (4, "zh-CN"), (7, "en")])
def test_the_projector_the_phones_and_the_chart_letter_the_choices_alike(poll_url, browser, step, lang):
    """Steps 4 and 5 are choice questions whose lesson order differs from the poll's; step 7 asks for a number, which
    the projector lettered not at all while the phones showed lettered values."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    teacher, code = _projector(poll_url, browser, step, lang)
    projector = _lines(teacher.locator(".st-key-lesson_choices h3"))
    phone = _phone(poll_url, browser, code, lang)
    phones = _lines(phone.locator("[class*='st-key-join_choice_'] button"))
    assert len(projector) >= 2 and projector == phones, (projector, phones)
    assert [line[0] for line in projector] == [chr(65 + i) for i in range(len(projector))]

    phone.locator("[class*='st-key-join_choice_'] button").first.click()
    _settled(phone)
    teacher.keyboard.press("v")
    chart = teacher.locator(".st-key-poll_panel .js-plotly-plot").first
    chart.wait_for()
    _settled(teacher)
    rows = chart.evaluate("(plot) => plot.data[plot.data.length - 1].y")
    charted = [" ".join(row.removesuffix(" ✓").split()) for row in rows]
    assert charted == projector, (charted, projector)
    assert not any("`" in row for row in rows)  # plain text: a chart draws no markdown
    table = _lines(
        teacher.locator(
            ".st-key-poll_panel table tbody tr td:first-child, .st-key-poll_panel table tbody tr th:first-child"
        )
    )
    assert table == projector, (table, projector)
    teacher.screenshot(path=str(ARTIFACTS / f"letters_step{step}_{lang}.png"))
    close_tab(phone)
    close_tab(teacher)


def test_a_phone_follows_the_teacher_without_a_tap(poll_url, browser):
    """Next question, Lock and Reveal reach a phone that nobody touches: it redraws the room's state itself."""
    teacher, code = _projector(poll_url, browser, 4, "en")
    phone = _phone(poll_url, browser, code, "en")
    phone.get_by_text("Question 4.").first.wait_for()
    teacher.locator(".st-key-poll_lock button").first.click()
    _settled(teacher)
    phone.get_by_text("Voting is closed").wait_for(timeout=10_000)
    teacher.keyboard.press("v")
    teacher.locator(".st-key-poll_next button").first.wait_for()
    _settled(teacher)
    phone.get_by_text("The answer is").first.wait_for(timeout=10_000)
    teacher.locator(".st-key-poll_next button").first.click()
    teacher.get_by_text("Step 5 of 12").first.wait_for()
    _settled(teacher)
    t0 = time.monotonic()
    phone.get_by_text("Question 5.").first.wait_for(timeout=10_000)
    followed_s = time.monotonic() - t0
    assert phone.locator("[class*='st-key-join_choice_5_'] button").first.is_enabled()
    phone.screenshot(path=str(ARTIFACTS / "phone_followed_to_step5.png"))
    print(f"the phone showed question 5 {followed_s:.1f} s after the projector drew it")
    close_tab(phone)
    close_tab(teacher)


def test_a_phone_is_made_for_a_thumb_and_a_screen_reader(poll_url, browser):
    """The code box types capitals and never autocorrects; every choice is at least 48 px tall; the chosen one says
    so to a screen reader (aria-pressed), not by colour alone."""
    teacher, code = _projector(poll_url, browser, 5, "en")
    phone = new_tab(browser, locale="en-US", **PHONE)
    phone.goto(page_url(poll_url, "join", lang="en"))
    box = phone.locator("input[type=text]").first
    box.wait_for()
    _settled(phone)
    assert box.get_attribute("autocapitalize") == "characters"
    assert box.get_attribute("autocorrect") == "off" and box.get_attribute("spellcheck") == "false"
    phone.goto(page_url(poll_url, "join", lang="en", query={"room": code}))
    buttons = phone.locator("[class*='st-key-join_choice_'] button")
    buttons.first.wait_for()
    _settled(phone)
    heights = [buttons.nth(i).bounding_box()["height"] for i in range(buttons.count())]
    assert min(heights) >= 48, heights
    buttons.nth(1).click()
    _settled(phone)
    phone.wait_for_function(
        """() => [...document.querySelectorAll("[class*='st-key-join_choice_'] button")]
        .map(b => b.getAttribute('aria-pressed')).join() === 'false,true' + ',false'.repeat(
        document.querySelectorAll("[class*='st-key-join_choice_'] button").length - 2)""",
        timeout=10_000,
    )
    close_tab(phone)
    close_tab(teacher)


def test_the_join_code_reads_from_the_back_of_the_hall(poll_url, browser):
    """At 1280x720 the QR code is at least 240 px; Full screen shows the code and a QR code filling the screen."""
    teacher, code = _projector(poll_url, browser, 5, "en")
    qr = teacher.locator(".st-key-poll_panel img.kvviz-poll-qr")
    assert qr.bounding_box()["width"] >= 240
    teacher.locator(".st-key-poll_full_screen button").first.click()
    dialog = teacher.get_by_role("dialog")
    dialog.locator(".kvviz-join-code").wait_for()
    assert dialog.locator(".kvviz-join-code").inner_text().strip() == code
    box = dialog.locator("img.kvviz-poll-qr").bounding_box()
    assert box["width"] >= 400 and box["y"] + box["height"] <= 720, box  # as large as fits the screen
    teacher.screenshot(path=str(ARTIFACTS / "join_full_screen.png"))
    close_tab(teacher)


def _voted_text(tab) -> str:
    return tab.locator('.st-key-poll_panel [data-testid="stMetric"] [data-testid="stMetricValue"]').inner_text()


def test_a_revealed_round_stays_revealed_when_the_teacher_goes_back(poll_url, browser):
    """Reveal, Next question, then the teacher's Back: the projector shows step 4's result again, the phones follow
    to it, and nobody can vote on it any more."""
    teacher, code = _projector(poll_url, browser, 4, "en")
    phone = _phone(poll_url, browser, code, "en")
    phone.locator("[class*='st-key-join_choice_4_'] button").first.click()
    _settled(phone)
    teacher.keyboard.press("v")
    teacher.locator(".st-key-poll_panel .js-plotly-plot").first.wait_for()
    _settled(teacher)
    teacher.locator(".st-key-poll_next button").first.click()
    teacher.get_by_text("Step 5 of 12").first.wait_for()
    _settled(teacher)
    phone.get_by_text("Question 5.").first.wait_for(timeout=10_000)
    teacher.keyboard.press("ArrowLeft")  # the lesson's Back
    teacher.get_by_text("Step 4 of 12").first.wait_for()
    _settled(teacher)
    teacher.locator(".st-key-poll_panel .js-plotly-plot").first.wait_for()  # its result, not a new vote
    assert "answer revealed" in teacher.locator(".st-key-poll_panel").inner_text()
    phone.get_by_text("Question 4.").first.wait_for(timeout=10_000)
    _settled(phone)
    phone.get_by_text("You voted A").wait_for()
    buttons = phone.locator("[class*='st-key-join_choice_4_'] button")
    assert buttons.count() >= 2 and not any(buttons.nth(i).is_enabled() for i in range(buttons.count()))
    teacher.screenshot(path=str(ARTIFACTS / "back_to_a_revealed_step.png"))
    close_tab(phone)
    close_tab(teacher)


def test_after_reset_no_phone_says_its_vote_was_received(poll_url, browser):
    """Two phones open the question, one votes: the projector reads "1 of 2". Reset: the voter's phone follows and
    no longer says "Vote received" (its vote no longer counts); a reload after voting shows the vote that counts."""
    teacher, code = _projector(poll_url, browser, 5, "en")
    voter = _phone(poll_url, browser, code, "en")
    _phone(poll_url, browser, code, "en")
    voter.locator("[class*='st-key-join_choice_5_'] button").nth(1).click()
    _settled(voter)
    voter.get_by_text("Vote received: B").wait_for()
    teacher.wait_for_function(
        """() => /^1 of 2$/.test((document.querySelector(
        '.st-key-poll_panel [data-testid="stMetricValue"]') || {}).innerText || '')""",
        timeout=15_000,
    )
    voter.reload()
    voter.get_by_text("Vote received: B").wait_for()  # read back from the store, not from the tab's memory
    _settled(voter)
    teacher.locator(".st-key-poll_reset button").first.click()
    _settled(teacher)
    voter.wait_for_function("() => !document.body.innerText.includes('Vote received')", timeout=10_000)
    assert _voted_text(teacher).startswith("0 of")
    close_tab(voter)
    close_tab(teacher)


def test_the_countdown_closes_the_vote(poll_url, browser):
    """Countdown, 15 s: the projector counts down beside the votes, then locks the vote; the phone follows."""
    teacher, code = _projector(poll_url, browser, 5, "en")
    phone = _phone(poll_url, browser, code, "en")
    teacher.locator(".st-key-poll_countdown_menu button").first.click()
    teacher.locator(".st-key-poll_countdown_15 button").click()
    teacher.get_by_text("Closes in").first.wait_for(timeout=10_000)
    teacher.get_by_text("voting closed").first.wait_for(timeout=40_000)
    phone.get_by_text("Voting is closed").wait_for(timeout=10_000)
    close_tab(phone)
    close_tab(teacher)


def test_a_tap_lost_with_its_server_is_named(poll_url, browser):
    """A tap sent while the phone's server is gone (here: the page's messages to the server dropped for 3 s, as when
    a replica stops) is named in one line, never lost silently; a tap that arrives shows no such line."""
    teacher, code = _projector(poll_url, browser, 5, "en")
    phone = new_tab(browser, locale="en-US", **PHONE)
    dropping = {"until": 0.0}

    def relay(ws) -> None:
        server = ws.connect_to_server()

        def to_server(message) -> None:
            if time.monotonic() < dropping["until"]:
                return  # gone with its server
            server.send(message)

        ws.on_message(to_server)

    phone.route_web_socket(re.compile(r".*_stcore/stream.*"), relay)
    phone.goto(page_url(poll_url, "join", lang="en", query={"room": code}))
    buttons = phone.locator("[class*='st-key-join_choice_5_'] button")
    buttons.first.wait_for()
    _settled(phone)
    buttons.nth(0).click()  # arrives
    phone.get_by_text("Vote received: A").wait_for()
    phone.wait_for_timeout(3500)
    assert not phone.locator("#kvviz-join-lost").is_visible()
    dropping["until"] = time.monotonic() + 3
    buttons.nth(1).click()  # lost
    lost = phone.locator("#kvviz-join-lost")
    lost.wait_for(timeout=20_000)
    assert "Tap your answer again" in lost.inner_text()
    phone.screenshot(path=str(ARTIFACTS / "phone_tap_lost.png"))
    close_tab(phone)
    close_tab(teacher)


@pytest.mark.parametrize("lang, scheme", [("en", "light"), ("zh-CN", "dark")])
def test_every_poll_state_on_a_1024x768_projector_passes_axe(poll_url, browser, lang, scheme):
    """The projector's poll in each state a class sees, on an old projector (the panel beside the question): open
    with a vote in, locked, revealed (the vote chart and the mistakes table), and Full screen; axe finds no serious
    or critical violation, nor heading-order, in either language and theme. Step 2: its prompt stays on the first
    screen beside the panel."""
    from support import axe

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    teacher, code = _projector(poll_url, browser, 2, lang, width=1024, height=768, color_scheme=scheme)
    phone = _phone(poll_url, browser, code, lang)
    phone.locator("[class*='st-key-join_choice_'] button").first.click()
    _settled(phone)
    failing: dict = {}

    def scan(state: str) -> None:
        axe.settle(teacher)
        if bad := axe.failing_now(teacher):
            failing[state] = bad
        teacher.screenshot(path=str(ARTIFACTS / f"projector_1024_{state.replace(' ', '_')}_{lang}.png"))

    scan("open")
    teacher.locator(".st-key-poll_lock button").first.click()
    teacher.locator(".st-key-poll_unlock").wait_for()
    scan("locked")
    teacher.keyboard.press("v")
    teacher.locator(".st-key-poll_panel .js-plotly-plot").first.wait_for()
    scan("revealed")
    teacher.locator(".st-key-poll_full_screen button").first.click()
    teacher.get_by_role("dialog").locator(".kvviz-join-code").wait_for()
    scan("full screen")
    assert not failing, "\n".join(f"{state}: {v}" for state, found in failing.items() for v in found)
    close_tab(phone)
    close_tab(teacher)
