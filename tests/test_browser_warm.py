"""A fresh server warms the bundled model before its class needs it (kvviz.ui.warm): the first visit to the lesson's
step 1 in class mode, made once the warm-up has said it is done, shows its question without "Loading the model...".
Started as deploy/run_class.sh starts a replica (`python -m kvviz.ui.warm run app.py`), and as a bare
`streamlit run app.py` after a first page. How fast it is belongs to bench/first_render.py, not here."""

from __future__ import annotations

import time

import pytest

from kvviz.ui import warm
from support.browser import close_tab, new_tab, page_url, wait_idle
from support.server import free_port, server_log, streamlit_server

pytestmark = pytest.mark.browser

WARM_TIMEOUT_S = 240  # the warm-up imports torch and transformers: tens of seconds on a busy 2-core machine
LESSON = ("lesson", {"step": "1", "lesson_class": "true"})
# Every text the page ever shows, kept from the first script on: a spinner shown for a moment is still caught.
SEEN_TEXT = """window.__kvvizSeen = [];
new MutationObserver(() => { if (document.body) window.__kvvizSeen.push(document.body.innerText); })
    .observe(document, {childList: true, subtree: true, characterData: true});"""


def _wait_warm(url: str) -> None:
    """Until the server's log says the warm-up is done; fails with the log when it failed or never ended."""
    deadline = time.monotonic() + WARM_TIMEOUT_S
    while time.monotonic() < deadline:
        log = server_log(url).read_text(errors="replace")
        if warm.DONE_LINE in log:
            return
        assert "kvviz warm-up: failed" not in log, log[-3000:]
        time.sleep(0.5)
    pytest.fail("no warm-up line in the server's log: " + server_log(url).read_text(errors="replace")[-3000:])


def _first_lesson_visit(browser, url: str) -> list[str]:
    """A new session opens step 1 in class mode; every text it showed until its question was drawn and the run over."""
    tab = new_tab(browser, width=1280, height=720, fresh=True)  # a script of its own: a context of its own
    tab.add_init_script(SEEN_TEXT)
    tab.goto(page_url(url, LESSON[0], query=LESSON[1]))
    tab.wait_for_selector(".st-key-lesson_question", state="visible")
    wait_idle(tab)
    seen = tab.evaluate("() => window.__kvvizSeen")
    close_tab(tab)
    return seen


def test_a_replica_started_warm_shows_the_first_question_without_loading_the_model(browser):
    """`python -m kvviz.ui.warm run app.py` (deploy/run_class.sh's start) loads the model before any session: the
    class's first visit finds it loaded and never shows the loading spinner."""
    port = free_port()
    with streamlit_server(
        args=[
            "kvviz.ui.warm",
            "run",
            "app.py",
            "--server.port",
            str(port),
            "--server.headless",
            "true",
            "--browser.gatherUsageStats",
            "false",
        ]
    ) as url:
        _wait_warm(url)
        seen = _first_lesson_visit(browser, url)
    assert seen, "the observer saw nothing"
    assert "head" in seen[-1]  # step 1's question: how many numbers one K row of one head holds
    assert not [text for text in seen if "Loading the model" in text]


def test_a_bare_server_loads_the_model_after_its_first_page(browser):
    """`streamlit run app.py`: the warm-up starts after the first session's page (the home page here, which needs
    no torch), so a later lesson visit finds the model loaded too."""
    with streamlit_server() as url:
        tab = new_tab(browser)
        tab.goto(page_url(url))
        tab.wait_for_selector("[data-testid=stMain] h1", state="visible")
        wait_idle(tab)
        _wait_warm(url)
        close_tab(tab)
        seen = _first_lesson_visit(browser, url)
    assert not [text for text in seen if "Loading the model" in text]
