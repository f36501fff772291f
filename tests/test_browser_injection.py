"""A shared link cannot put someone else's image, link, colour or formula on a classmate's screen.

Real Chromium against `streamlit run app.py`: the glossary opened with a hostile ?term= (an image, a phishing
link, a formula, a colour, an icon, a bare URL; then 1,800 formulas), and the Memory budget page opened with link
values that close their notice's code span with a backtick. Every network request the page makes is recorded:
none may leave 127.0.0.1, no <a>, <img>, KaTeX, coloured span or icon may come from the input, and the input must
be on the screen as the characters it was typed with.
"""

from __future__ import annotations

import json
from urllib.parse import urlparse

import pytest

from support.browser import chromium, new_tab, page_url, wait_idle

pytestmark = pytest.mark.browser
EVIL = "evil.example"
TERM = f"![p](http://{EVIL}/t.png) [Log in again here](http://{EVIL}/phish)"  # an image and a phishing link
EXTRAS = "$x^2$ :red[red] :material/lock: :streamlit: http://e.x/b a@e.x a -> b"
LINK_VALUES = {"mem_layers": f"1`![p](//{EVIL}/s.png)`", "mem_dtype": f"x`![q](http://{EVIL}/q.png)`"}
# what the input may not become, inside the page's markdown (the app's own links and icons are elsewhere)
INJECTED = (
    f"a[href*='{EVIL}'], img[src*='{EVIL}'], [data-testid='stMarkdownContainer'] img, "
    "[data-testid='stAlert'] .katex, [data-testid='stAlert'] [role='img'], "
    "[data-testid='stAlert'] .stMarkdownColoredText, [data-testid='stAlert'] a"
)


def _alert_texts(tab, starting: str) -> list[str]:
    texts = tab.eval_on_selector_all('[data-testid="stAlert"]', "els => els.map(e => e.innerText)")
    return [t.replace("\u2060", "").strip() for t in texts if t.strip().startswith(starting)]


@pytest.fixture(scope="module")
def browser_context():
    """One tab for the module's tests, every request its context makes recorded."""
    with chromium() as browser:
        tab = new_tab(browser, width=1280, height=900, timeout_ms=120_000, fresh=True)  # its context has a listener
        requests: list[str] = []
        tab.context.on("request", lambda request: requests.append(request.url))
        yield tab, requests


def _no_request_left(requests: list[str]) -> None:
    outside = [
        u
        for u in requests
        if urlparse(u).scheme not in ("data", "blob", "about") and urlparse(u).hostname != "127.0.0.1"
    ]
    assert not outside, outside


def test_the_glossary_shows_a_hostile_term_as_text(app_url, browser_context):
    tab, requests = browser_context
    for term in (TERM, EXTRAS):  # each under the 80 characters shown whole
        tab.goto(page_url(app_url, "glossary", query={"term": term}))
        tab.get_by_text("No term matches").first.wait_for()
        wait_idle(tab, timeout_ms=120_000)
        injected = tab.locator(INJECTED)
        assert injected.count() == 0, injected.evaluate_all("els => els.map(e => e.outerHTML)")
        assert _alert_texts(tab, "No term matches") == [
            f"No term matches {term}. Clear the box to see all {_count_terms()}."
        ]
    formulas = " ".join(["$x$"] * 1800)  # 8 s of KaTeX were they drawn; 80 characters of text instead
    tab.goto(page_url(app_url, "glossary", query={"term": formulas}))
    tab.get_by_text("No term matches").first.wait_for()
    wait_idle(tab, timeout_ms=120_000)
    assert tab.locator(".katex").count() == 0
    [box] = _alert_texts(tab, "No term matches")
    assert f"… (cut {len(formulas) - 80:,} of {len(formulas):,} characters)" in box and len(box) < 300
    _no_request_left(requests)


def test_link_notices_keep_a_backtick_breaking_value_as_text(app_url, browser_context):
    tab, requests = browser_context
    tab.goto(page_url(app_url, "memory_budget", query=LINK_VALUES))
    tab.get_by_text("Ignored mem_dtype=").first.wait_for()
    tab.get_by_text("Ignored mem_layers=").first.wait_for()
    wait_idle(tab, timeout_ms=120_000)
    assert tab.locator(INJECTED).count() == 0, tab.locator(INJECTED).evaluate_all("els => els.map(e => e.outerHTML)")
    notices = _alert_texts(tab, "Ignored ")
    for key, value in LINK_VALUES.items():
        assert any(n.startswith(f"Ignored {key}={value} from the link") for n in notices), notices
    _no_request_left(requests)
    assert requests  # the recorder saw the page's own traffic


def test_a_config_files_name_is_shown_as_text(app_url, browser_context):
    tab, requests = browser_context
    name = f":streamlit: http://e.x/b a@e.x www.e.x -> $x$ :red[r] ![p](//{EVIL}/n.png)"  # < 80: shown whole
    config = {
        "model_type": "llama",
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "hidden_size": 64,
        "_name_or_path": name,
    }
    tab.goto(page_url(app_url, "memory_budget"))
    tab.get_by_text("Import a Hugging Face config.json").first.click()
    box = tab.get_by_role("textbox", name="...or paste it")
    box.fill(json.dumps(config))
    box.press("Control+Enter")  # commit the text area's value before the click reads it
    wait_idle(tab, timeout_ms=120_000)
    tab.get_by_role("button", name="Use this config.json").click()
    tab.get_by_text("Imported ").first.wait_for()
    wait_idle(tab, timeout_ms=120_000)
    injected = tab.locator(INJECTED)
    assert injected.count() == 0, injected.evaluate_all("els => els.map(e => e.outerHTML)")
    [report] = _alert_texts(tab, "Imported ")
    assert report.startswith(f"Imported {name}. Used: model_type = llama"), report
    _no_request_left(requests)


def _count_terms() -> int:
    from kvviz.teaching import glossary

    return len(glossary.TERMS)
