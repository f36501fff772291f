"""The class poll's phone page (pages/join.py) in AppTest, on a store of the test's own (KVVIZ_POLL_DB): the code
typed or linked, one tap votes and says so, a changed vote replaces the first, a forged or expired code and a vote
after Lock each get a clear message and change nothing, the counts show only after the reveal, both languages."""

from __future__ import annotations

import pytest

from kvviz import i18n
from kvviz.i18n import Message
from kvviz.poll import store as poll_store
from kvviz.poll.question import PollQuestion
from kvviz.teaching import poll_choices
from support.pages import open_page

pytestmark = pytest.mark.app
STEP = 3


@pytest.fixture
def store(tmp_path, monkeypatch):
    """The app's store, pointed at a file of this test's own (the page's cached store is dropped before and after)."""
    from kvviz.ui import poll

    monkeypatch.setenv(poll_store.ENV_URL, f"sqlite:///{tmp_path / 'poll.sqlite3'}")
    poll.store.clear()
    yield poll.store()
    poll.store.clear()


# the lesson's step-3 question and the poll's off-by-one mistake: msgids the catalog translates
QUESTION = (
    "After the prefill of {prompt_rows} tokens the model takes **{steps} Next-token steps**. "
    "How many rows will layer {layer} hold?"
)


def _polls() -> PollQuestion:
    """One language-free poll, as the teacher's side stores it: each phone draws it in its own language."""
    off_by_one = Message.lazy(poll_choices.OFF_BY_ONE)
    return PollQuestion(
        STEP,
        Message.lazy(QUESTION, prompt_rows=10, steps=1, layer=0),
        tuple(Message.verbatim(n) for n in ("10", "11", "12")),
        1,
        (off_by_one, None, off_by_one),
    )


@pytest.fixture
def room(store):
    new = store.create_room()
    store.open_step(new.code, new.host_key, _polls())
    return new


def _choices(at) -> list:
    return [b for b in at.button if str(b.key).startswith("join_choice_")]


def test_a_tap_votes_and_a_second_tap_changes_the_vote(store, room):
    at = open_page("pages/join.py", lang=i18n.ENGLISH, query={"room": room.code})
    assert "How many rows will layer 0 hold?" in at.markdown[0].value and len(_choices(at)) == 3
    _choices(at)[0].click().run()
    assert "Vote received: A" in at.success[0].value
    _choices(at)[2].click().run()
    assert "Vote received: C" in at.success[0].value
    assert store.voted_count(room.code, STEP, 1) == 1  # one browser, its latest vote
    assert store.tally(room.code, STEP, 1, room.host_key).counts == (0, 0, 1)


def test_the_code_typed_in_any_case_joins(store, room):
    at = open_page("pages/join.py", lang=i18n.ENGLISH)
    at.text_input[0].input(room.code.lower())
    at.button[0].click().run()
    assert (
        at.query_params["room"] in (room.code, [room.code])
        and "How many rows will layer 0 hold?" in at.markdown[0].value
    )


@pytest.mark.parametrize("code", ["ZZZZZZ", "<b>x</b>", "9" * 400])
def test_a_forged_code_says_so_and_offers_the_form(store, room, code):
    at = open_page("pages/join.py", lang=i18n.ENGLISH, query={"room": code})
    assert at.error and not _choices(at) and at.text_input  # a message, and the code box again
    assert "<b>" not in at.error[0].value


def test_after_lock_the_choices_are_closed_and_a_vote_changes_nothing(store, room):
    at = open_page("pages/join.py", lang=i18n.ENGLISH, query={"room": room.code})
    store.lock(room.code, room.host_key)
    _choices(at)[0].click().run()  # the tap was sent before the page knew: refused, said
    assert at.warning and "closed" in at.warning[0].value
    assert store.voted_count(room.code, STEP, 1) == 0
    assert all(b.disabled for b in _choices(at))


def test_the_counts_show_after_the_reveal_with_the_right_answer(store, room):
    at = open_page("pages/join.py", lang=i18n.ENGLISH, query={"room": room.code})
    _choices(at)[0].click().run()
    assert not at.get("plotly_chart")
    store.reveal(room.code, room.host_key)
    at.button(key="join_refresh").click().run()
    assert "the answer is B" in at.error[0].value and at.get("plotly_chart")
    assert any("Off by one: check" in m.value for m in at.markdown)  # the mistake the vote stood for


def test_the_phone_reads_its_own_language(store, room):
    at = open_page("pages/join.py", lang=i18n.CHINESE, query={"room": room.code})
    with i18n.language(i18n.CHINESE):
        chinese = _polls().text.shown()
    assert "层" in chinese and chinese in at.markdown[0].value and at.title[0].value == "加入课堂投票"
    english = open_page("pages/join.py", lang=i18n.ENGLISH, query={"room": room.code})  # the same stored poll
    assert "How many rows will layer 0 hold?" in english.markdown[0].value


def test_no_question_open_yet_says_to_wait(store):
    new = store.create_room()
    at = open_page("pages/join.py", lang=i18n.ENGLISH, query={"room": new.code})
    assert at.info and not _choices(at)
