"""The load test's protocol-level client (bench/classroom_ws.py) against a real server, no browser.

Three students speak Streamlit's WebSocket protocol to one `streamlit run app.py`: each sets its own prompt,
prefills, clicks Next token / Back, and after every click its "Cache length" and token strip (read from the
deltas it received) must be its own, never empty, with no error on the page and a recorded settle time. The
strip reader is checked on the app's own markup (kvviz.step.strip.strip_html), and one student typing another's
prompt must be flagged as "foreign" by the same check. No timing is asserted: timing lives in the benchmark.
"""

from __future__ import annotations

import asyncio
import importlib.util
import sys

import pytest
from streamlit.proto.Markdown_pb2 import Markdown

from kvviz.step.strip import strip_html
from kvviz.step.view import StripToken
from support.pages import REPO
from support.server import free_port, port_free, streamlit_server

PORT = 8612  # the port this test was given; a free one when it is taken
_spec = importlib.util.spec_from_file_location("classroom_ws", REPO / "bench/classroom_ws.py")
ws_client = sys.modules.setdefault("classroom_ws", importlib.util.module_from_spec(_spec))
_spec.loader.exec_module(ws_client)
session = sys.modules["classroom_session"]  # imported by classroom_ws: the browser client's own checks


@pytest.fixture(scope="module")
def server_url():
    port = PORT if port_free(PORT) else free_port()
    with streamlit_server(port, ["--server.fileWatcherType", "none"]) as url:
        yield url


def test_strip_reader_reads_the_apps_markup():
    tokens = [StripToken(i, text, "prompt") for i, text in enumerate(["a<b", " x", "\n", "", "&amp;"])]
    tokens.append(StripToken(None, " next", "pending"))
    page = ws_client.Page()
    page.elements[(0, 0)] = ("markdown", Markdown(body=strip_html(tokens, max_tokens=4)), "")
    strip = page.state()["strip"]
    # The first two tokens are folded into "⋯ 2 earlier" (no data-pos); <sub> labels are not token text; an
    # empty token is a no-break space, as a browser's textContent reads it.
    assert strip == [["2", "↵"], ["3", "\xa0"], ["4", "&amp;"], ["next", "·next"]]
    assert page.state()["lastPos"] == 4 and page.state()["cache"] is None


@pytest.mark.browser
def test_three_ws_sessions_each_see_only_their_own_cache(server_url):
    prompts = [session.session_prompt(i) for i in range(3)]
    expected = [session.expected_prompt_strip(p) for p in prompts]
    assert len({len(e) for e in expected}) > 1  # different lengths, so a swapped cache shows
    actions = ["next", "next", "back", "next", "next", "next"]
    reports, _ = asyncio.run(
        ws_client.run_load(server_url, prompts, [session.fixed_plan(actions) for _ in prompts], ramp_s=0.5)
    )
    for r in reports:
        assert r.problems == [], f"session {r.index} ({r.prompt!r}): {r.problems}"
        assert [c["action"] for c in r.clicks] == ["prefill", *actions], f"session {r.index} stopped early"
        assert all(c["problem"] is None for c in r.clicks)
        assert all(c["settle_ms"] is not None and c["settle_ms"] > 0 for c in r.clicks)
        assert r.replica_cookie == []  # one process: no nginx cookie


@pytest.mark.browser
def test_another_students_tokens_are_flagged_foreign(server_url):
    # Mine is the longer one: _classify maps the pending chip to my expected cache length, past their prompt.
    mine, theirs = sorted(
        (session.session_prompt(i) for i in (0, 1)), key=lambda p: -len(session.expected_prompt_strip(p))
    )

    async def prefill_theirs():
        student = ws_client.Student(server_url, ws_client.STEP_PAGE)
        try:
            await student.open()
            await student.set_text(session.PROMPT_LABEL, theirs)
            await student.click(session.BUTTONS["prefill"])
            return student.page.state()
        finally:
            await student.close()

    state = asyncio.run(prefill_theirs())
    own = session.expected_prompt_strip(mine)
    other = session.expected_prompt_strip(theirs)
    assert [text for pos, text in state["strip"] if pos != "next"] == other and state["errors"] == 0
    assert session._classify(state, len(own), dict(enumerate(own)), [other]) == "foreign"
    assert session._classify(state, len(other), dict(enumerate(other)), [own]) is None
