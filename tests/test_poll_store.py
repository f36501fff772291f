"""The class poll's store (kvviz.poll.store): the same tests on SQLite (a file in a temp folder, the pure
tier) and on a throwaway PostgreSQL server (support.postgres, marked slow: it starts a server). Votes counted once per
voter, the latest counting; rounds apart; host actions only with the host key; expiry on an injected clock; the CSV
equal to the votes; every refusal a clear exception; two processes voting at once on one SQLite file."""

from __future__ import annotations

import csv
import io
import multiprocessing
from pathlib import Path

import pytest
import sqlalchemy as sa

from kvviz import i18n
from kvviz.i18n import Message
from kvviz.poll import store as ps
from kvviz.poll.question import PollQuestion
from support.clock import Clock
from support.postgres import empty, throwaway_postgres
from support.repo import REPO

STEP = 3


# msgids the catalog translates (kvviz's own): a stored poll is drawn in each reader's language
QUESTION, CHOICE, MISTAKE = "Step {number}. {title}", "Row {row}: {token}", "step {number}: {model}"


def poll(step: int = STEP, n: int = 4, right: int = 1) -> PollQuestion:
    """One language-free poll: "Step 3. question", choices "Row 0: choice" ..., mistakes "step 0: mistake" ...
    (in Chinese 第 3 步：question, 第 0 行：choice, 第 0 步：mistake)."""
    labels = tuple(Message.lazy(CHOICE, row=i, token="choice") for i in range(n))
    mistakes = tuple(None if i == right else Message.lazy(MISTAKE, number=i, model="mistake") for i in range(n))
    return PollQuestion(step, Message.lazy(QUESTION, number=step, title="question"), labels, right, mistakes)


@pytest.fixture(scope="session")
def postgres_url():
    with throwaway_postgres() as url:
        yield url


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.slow)])
def url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'poll.sqlite3'}"
    url = request.getfixturevalue("postgres_url")
    empty(url)  # each test starts from an empty store
    return url


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def store(url, clock):
    made = ps.PollStore(url, clock=clock)
    yield made
    made.engine.dispose()


@pytest.fixture
def room(store):
    new = store.create_room()
    store.open_step(new.code, new.host_key, poll())
    return new


def test_votes_count_once_per_voter_and_the_latest_counts(store, room):
    store.vote(room.code, "alice", STEP, 1, 0)
    store.vote(room.code, "bob", STEP, 1, 1)
    store.vote(room.code, "alice", STEP, 1, 2)  # alice changes her mind
    store.vote(room.code.lower(), "carol", STEP, 1, 2)  # a code typed in lower case is the same room
    assert store.voted_count(room.code, STEP, 1) == 3
    tally = store.tally(room.code, STEP, 1, room.host_key)
    assert tally.counts == (0, 1, 2, 0) and tally.voted == 3 and tally.right_votes == 1
    assert tally.share_right == pytest.approx(1 / 3)


def test_the_second_round_is_counted_apart_and_keeps_the_first(store, room):
    for voter, choice in (("a", 0), ("b", 0), ("c", 1)):
        store.vote(room.code, voter, STEP, 1, choice)
    state = store.vote_again(room.code, room.host_key)
    assert (state.step, state.round, state.phase) == (STEP, 2, "open")
    with pytest.raises(ps.VotingClosed):
        store.vote(room.code, "d", STEP, 1, 0)  # a phone still showing round 1
    for voter in ("a", "b"):
        store.vote(room.code, voter, STEP, 2, 1)
    assert store.tally(room.code, STEP, 1, room.host_key).counts == (2, 1, 0, 0)
    assert store.tally(room.code, STEP, 2, room.host_key).counts == (0, 2, 0, 0)
    assert [(t.step, t.round, t.voted) for t in store.results(room.code, room.host_key)] == [(STEP, 1, 3), (STEP, 2, 2)]


@pytest.mark.parametrize("key", [None, "", "not-the-key", "other-room"])
def test_host_actions_refuse_without_the_host_key(store, room, key):
    if key == "other-room":
        key = store.create_room().host_key
    store.vote(room.code, "a", STEP, 1, 1)
    actions = [
        lambda: store.open_step(room.code, key, poll(STEP + 1)),
        lambda: store.next_question(room.code, key, poll(STEP + 1)),
        lambda: store.reveal(room.code, key),
        lambda: store.lock(room.code, key),
        lambda: store.unlock(room.code, key),
        lambda: store.vote_again(room.code, key),
        lambda: store.reset(room.code, key),
        lambda: store.mark_result(room.code, key, STEP, True),
        lambda: store.export_csv(room.code, key, "en"),
        lambda: store.results(room.code, key),
        lambda: store.check_host(room.code, key),
    ]
    for action in actions:
        with pytest.raises(ps.NotHost):
            action()
    with pytest.raises(ps.NotRevealed if key is None else ps.NotHost):  # no key: a phone, before the reveal
        store.tally(room.code, STEP, 1, key)
    state = store.room(room.code)
    assert (state.step, state.round, state.phase) == (STEP, 1, "open")
    assert store.voted_count(room.code, STEP, 1) == 1 and store.marked_results(room.code) == {}


def test_the_host_key_opens_the_room_in_another_tab(store, room):
    assert store.check_host(room.code, room.host_key).step == STEP
    assert store.check_host(room.code.lower(), room.host_key).code == room.code  # typed in any case


def test_the_host_key_is_stored_only_as_a_hash(store, room, url):
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        row = conn.execute(sa.select(ps.rooms).where(ps.rooms.c.code == room.code)).one()
    engine.dispose()
    assert room.host_key not in [str(v) for v in row] and len(room.host_key) >= 40
    assert store.room(room.code).phase == "open"


def test_the_phones_see_the_counts_only_after_the_reveal(store, room):
    store.vote(room.code, "a", STEP, 1, 1)
    with pytest.raises(ps.NotRevealed):
        store.tally(room.code, STEP, 1)
    store.reveal(room.code, room.host_key)
    assert store.tally(room.code, STEP, 1).counts == (0, 1, 0, 0)


def test_an_idle_room_expires_is_refused_and_purged(store, room, clock, url):
    store.vote(room.code, "a", STEP, 1, 1)
    clock.now += ps.ROOM_IDLE_S - 60
    store.lock(room.code, room.host_key)  # activity keeps the room alive
    clock.now += ps.ROOM_IDLE_S - 60
    assert store.room(room.code).phase == "locked"
    clock.now += 120
    with pytest.raises(ps.RoomNotFound):
        store.room(room.code)
    with pytest.raises(ps.RoomNotFound):
        store.reveal(room.code, room.host_key)
    engine = sa.create_engine(url)
    with engine.connect() as conn:  # the room and everything in it are gone from the database
        left = {
            t.name: conn.execute(sa.select(sa.func.count()).select_from(t)).scalar_one()
            for t in (ps.rooms, *ps._ROOM_TABLES)
        }
    engine.dispose()
    assert left == dict.fromkeys(left, 0)


def test_expired_rooms_are_purged_when_a_room_is_created(store, clock):
    old = store.create_room()
    clock.now += ps.ROOM_IDLE_S + 1
    new = store.create_room()
    assert store.purge_expired() == 0
    assert store.room(new.code).step == 0
    with pytest.raises(ps.RoomNotFound):
        store.room(old.code)


def _csv_rows(text: str) -> list[dict[str, str]]:
    """The export's rows, after checking it opens with the byte-order mark (Excel reads UTF-8 only with it)."""
    assert text.startswith("\ufeff") and text.encode("utf-8")[:3] == b"\xef\xbb\xbf"
    assert text.count("\ufeff") == 1
    return list(csv.DictReader(io.StringIO(text[1:])))


def test_the_csv_matches_the_votes_and_names_no_voter(store, room):
    store.vote(room.code, "voter-token-1", STEP, 1, 0)
    store.vote(room.code, "voter-token-2", STEP, 1, 1)
    store.vote(room.code, "voter-token-3", STEP, 1, 1)
    store.vote_again(room.code, room.host_key)
    store.vote(room.code, "voter-token-1", STEP, 2, 1)
    store.open_step(room.code, room.host_key, poll(STEP + 1, n=3, right=2))
    store.vote(room.code, "voter-token-2", STEP + 1, 1, 2)
    text = store.export_csv(room.code, room.host_key, "en")
    rows = _csv_rows(text)
    assert list(rows[0]) == ["step", "round", "question", "letter", "choice", "right", "mistake", "votes"]
    assert "voter-token" not in text
    got = {
        (int(r["step"]), int(r["round"]), r["letter"], r["choice"]): (r["right"], r["mistake"], int(r["votes"]))
        for r in rows
    }
    assert got == {
        (STEP, 1, "A", "Row 0: choice"): ("no", "step 0: mistake", 1),
        (STEP, 1, "B", "Row 1: choice"): ("yes", "", 2),
        (STEP, 1, "C", "Row 2: choice"): ("no", "step 2: mistake", 0),
        (STEP, 1, "D", "Row 3: choice"): ("no", "step 3: mistake", 0),
        (STEP, 2, "A", "Row 0: choice"): ("no", "step 0: mistake", 0),
        (STEP, 2, "B", "Row 1: choice"): ("yes", "", 1),
        (STEP, 2, "C", "Row 2: choice"): ("no", "step 2: mistake", 0),
        (STEP, 2, "D", "Row 3: choice"): ("no", "step 3: mistake", 0),
        (STEP + 1, 1, "A", "Row 0: choice"): ("no", "step 0: mistake", 0),
        (STEP + 1, 1, "B", "Row 1: choice"): ("no", "step 1: mistake", 0),
        (STEP + 1, 1, "C", "Row 2: choice"): ("yes", "", 1),
    }
    assert {(int(r["step"]), r["question"]) for r in rows} == {
        (STEP, f"Step {STEP}. question"),
        (STEP + 1, f"Step {STEP + 1}. question"),
    }
    for tally in store.results(room.code, room.host_key):  # the CSV's sums are the tallies
        assert (
            sum(v for (s, r, _l, _c), (_r, _m, v) in got.items() if (s, r) == (tally.step, tally.round)) == tally.voted
        )
    chinese = _csv_rows(store.export_csv(room.code, room.host_key, "zh-CN"))
    assert {r["choice"] for r in chinese} >= {"第 1 行：choice"} and {r["question"] for r in chinese} == {
        f"第 {STEP} 步：question",
        f"第 {STEP + 1} 步：question",
    }


def test_the_csv_lists_only_the_polled_steps_in_plain_text(store, room):
    """A step passed through (opened, nobody voted, no action) is left out; a step locked or revealed with no vote,
    or with only a held-back vote, is listed; markdown's code backticks are dropped from every text."""
    store.vote(room.code, "a", STEP, 1, 1)
    store.open_step(room.code, room.host_key, poll(STEP + 1))  # passed through: 0 votes, no action
    coded = PollQuestion(
        STEP + 2,
        Message.lazy(QUESTION, number=STEP + 2, title="which row holds `en`?"),
        (Message.lazy(CHOICE, row=8, token="`en`"), Message.lazy(CHOICE, row=0, token="``red``")),
        0,
        (None, Message.lazy(MISTAKE, number=1, model="reads the `mask`")),
    )
    store.open_step(room.code, room.host_key, coded)
    store.reveal(room.code, room.host_key)  # revealed with no vote: polled
    store.open_step(room.code, room.host_key, poll(STEP + 3))
    store.set_limits(room.code, room.host_key, 2, 1)
    store.vote(room.code, "b", STEP + 3, 1, 0)
    with pytest.raises(ps.HeldBack):
        store.vote(room.code, "c", STEP + 3, 1, 0)
    store.open_step(room.code, room.host_key, poll(STEP + 4))  # the current step, open, nobody voted yet
    rows = _csv_rows(store.export_csv(room.code, room.host_key, "en"))
    assert sorted({int(r["step"]) for r in rows}) == [STEP, STEP + 2, STEP + 3]
    assert [t.step for t in store.results(room.code, room.host_key)] == [STEP, STEP + 2, STEP + 3]
    assert [(r["question"], r["letter"], r["choice"], r["mistake"]) for r in rows if int(r["step"]) == STEP + 2] == [
        (f"Step {STEP + 2}. which row holds en?", "A", "Row 8: en", ""),
        (f"Step {STEP + 2}. which row holds en?", "B", "Row 0: red", "step 1: reads the mask"),
    ]
    assert "`" not in store.export_csv(room.code, room.host_key, "zh-CN")


def test_a_revealed_round_is_final(store, room):
    """Back to a revealed step, or an old tab reloaded, calls open_step: it gets the revealed state back, the room
    stays on its current question, no vote is taken there; only the teacher's explicit actions open a round."""
    store.vote(room.code, "a", STEP, 1, 1)
    store.vote(room.code, "b", STEP, 1, 2)
    store.reveal(room.code, room.host_key)
    assert store.lock(room.code, room.host_key).phase == "revealed"  # a revealed round is not hidden again
    assert store.unlock(room.code, room.host_key).phase == "revealed"  # nor reopened
    store.open_step(room.code, room.host_key, poll(STEP + 4))  # the class moved on to a later question
    store.vote(room.code, "a", STEP + 4, 1, 0)
    version = store.room(room.code).version
    for again in (poll(), poll(right=2)):  # the same choices, or a measured answer that came out otherwise
        back = store.open_step(room.code, room.host_key, again)
        assert (back.step, back.round, back.phase) == (STEP, 1, "revealed")
        now = store.room(room.code)
        assert (now.step, now.round, now.phase, now.version) == (STEP + 4, 1, "open", version)  # nothing moved
        assert store.poll(room.code, STEP) == poll()  # the revealed question kept its choices
    for step, round_ in ((STEP, 1), (STEP, 2)):
        with pytest.raises(ps.VotingClosed):
            store.vote(room.code, "c", step, round_, 1)
    assert store.tally(room.code, STEP, 1, room.host_key).counts == (0, 1, 1, 0)
    assert store.step_state(room.code, room.host_key, STEP).phase == "revealed"
    assert store.step_state(room.code, room.host_key, STEP + 1) is None  # never shown
    assert store.voted_count(room.code, STEP + 4, 1) == 1
    # The teacher's explicit Back shows the result to the room: still revealed, still no vote there.
    shown = store.go_to_step(room.code, room.host_key, poll())
    assert (shown.step, shown.round, shown.phase) == (STEP, 1, "revealed") and shown.version > version
    assert store.room(room.code).step == STEP
    with pytest.raises(ps.VotingClosed):
        store.vote(room.code, "c", STEP, 1, 1)
    assert store.tally(room.code, STEP, 1).counts == (0, 1, 1, 0)  # a phone sees the result
    # Only an explicit new round opens it; round 1 stays as revealed.
    again = store.poll_again(room.code, room.host_key, poll())
    assert (again.step, again.round, again.phase) == (STEP, 2, "open")
    store.vote(room.code, "c", STEP, 2, 1)
    store.reveal(room.code, room.host_key)
    assert store.vote_again(room.code, room.host_key).phase == "revealed"  # no round 3, round 2 stays revealed
    with pytest.raises(ValueError):
        store.poll_again(room.code, room.host_key, poll())
    assert store.open_step(room.code, room.host_key, poll()).phase == "revealed"
    assert [(t.round, t.counts) for t in store.results(room.code, room.host_key) if t.step == STEP] == [
        (1, (0, 1, 1, 0)),
        (2, (0, 1, 0, 0)),
    ]
    # Reset is the teacher's explicit action: it drops the step's votes and opens round 1.
    assert (store.reset(room.code, room.host_key).round, store.room(room.code).phase) == (1, "open")
    assert store.voted_count(room.code, STEP, 1) == 0


def test_an_unrevealed_step_reopens_in_its_round_and_every_host_action_bumps_the_version(store, room):
    store.vote(room.code, "a", STEP, 1, 0)
    store.lock(room.code, room.host_key)
    store.vote_again(room.code, room.host_key)
    store.vote(room.code, "a", STEP, 2, 1)
    store.next_question(room.code, room.host_key, poll(STEP + 1))
    back = store.open_step(room.code, room.host_key, poll())  # round 2 was open, not revealed: it reopens
    assert (back.step, back.round, back.phase) == (STEP, 2, "open")
    with pytest.raises(ps.VotingClosed):
        store.vote(room.code, "b", STEP, 1, 0)  # round 1 was closed: it stays closed
    versions = [store.room(room.code).version]
    for action in (store.lock, store.unlock, store.reveal, store.reset):
        versions.append(action(room.code, room.host_key).version)
        assert store.room(room.code).version == versions[-1]
    assert versions == sorted(set(versions))  # each one higher
    store.vote(room.code, "b", STEP, 1, 0)
    assert store.room(room.code).version == versions[-1]  # a vote is no host action


@pytest.mark.parametrize("code", ["ZZZZZZ", "ABC23", "ABC2345", "O0OIL1", "", None, "A" * 10_000, "💥💥💥💥💥💥"])
def test_a_forged_code_is_refused(store, room, code):
    for attempt in (
        lambda: store.room(code),
        lambda: store.vote(code, "a", STEP, 1, 0),
        lambda: store.voted_count(code, STEP, 1),
        lambda: store.reveal(code, room.host_key),
    ):
        with pytest.raises(ps.RoomNotFound):
            attempt()


@pytest.mark.parametrize("choice", [-1, 4, 99, "1", 1.0, True, None])
def test_a_choice_that_does_not_exist_is_refused(store, room, choice):
    with pytest.raises(ps.NoSuchChoice):
        store.vote(room.code, "a", STEP, 1, choice)
    assert store.voted_count(room.code, STEP, 1) == 0


def test_no_vote_after_lock_or_reveal_or_for_another_step(store, room):
    store.lock(room.code, room.host_key)
    with pytest.raises(ps.VotingClosed):
        store.vote(room.code, "a", STEP, 1, 0)
    store.unlock(room.code, room.host_key)
    store.vote(room.code, "a", STEP, 1, 0)
    store.reveal(room.code, room.host_key)
    with pytest.raises(ps.VotingClosed):
        store.vote(room.code, "a", STEP, 1, 1)
    store.next_question(room.code, room.host_key, poll(STEP + 1))
    for step, round_ in ((STEP, 1), (STEP + 1, 2), (STEP + 2, 1)):
        with pytest.raises(ps.VotingClosed):
            store.vote(room.code, "b", step, round_, 0)
    assert store.tally(room.code, STEP, 1, room.host_key).counts == (1, 0, 0, 0)


def test_a_new_room_opens_nothing_to_vote_on(store):
    new = store.create_room()
    with pytest.raises(ps.VotingClosed):
        store.vote(new.code, "a", 0, 1, 0)


def test_a_thousand_votes_from_one_voter_change_the_count_by_one(store, room, clock):
    refused = 0
    for i in range(1000):
        try:
            store.vote(room.code, "one-browser", STEP, 1, i % 4)
        except ps.TooManyVotes as e:
            refused += 1
            assert "wait a minute" in str(e)
    assert refused == 1000 - ps.VOTES_PER_MINUTE
    assert store.voted_count(room.code, STEP, 1) == 1
    assert store.tally(room.code, STEP, 1, room.host_key).counts[(ps.VOTES_PER_MINUTE - 1) % 4] == 1
    clock.now += 60  # a minute later the voter may change their vote again
    store.vote(room.code, "one-browser", STEP, 1, 3)
    assert store.tally(room.code, STEP, 1, room.host_key).counts == (0, 0, 0, 1)


def test_reset_drops_the_steps_votes(store, room):
    store.vote(room.code, "a", STEP, 1, 0)
    store.vote_again(room.code, room.host_key)
    store.vote(room.code, "a", STEP, 2, 1)
    state = store.reset(room.code, room.host_key)
    assert (state.round, state.phase) == (1, "open")
    assert store.voted_count(room.code, STEP, 1) == 0 and store.voted_count(room.code, STEP, 2) == 0


def test_a_phone_reads_its_own_vote_only_while_it_counts(store, room):
    """What a phone shows as "Vote received" is the store's: its latest counted choice, in this round only, gone
    after Reset; a vote held back past the class size is not one."""
    assert store.choice_of(room.code, "a", STEP, 1) is None
    store.vote(room.code, "a", STEP, 1, 0)
    store.vote(room.code, "a", STEP, 1, 2)
    assert store.choice_of(room.code, "a", STEP, 1) == 2 and store.choice_of(room.code, "b", STEP, 1) is None
    assert store.choice_of(room.code, "a", STEP, 2) is None
    store.reset(room.code, room.host_key)
    assert store.choice_of(room.code, "a", STEP, 1) is None
    store.set_limits(room.code, room.host_key, 2, 1)
    store.vote(room.code, "b", STEP, 1, 1)
    with pytest.raises(ps.HeldBack):
        store.vote(room.code, "c", STEP, 1, 1)
    assert store.choice_of(room.code, "c", STEP, 1) is None and store.choice_of(room.code, "b", STEP, 1) == 1


def test_voted_n_of_m_counts_the_phones_that_drew_the_question(store, room):
    """M of "Voted N of M": each phone that drew the step's question, once however often it redraws; per step."""
    for phone in ("a", "b", "c", "a", "b"):
        store.saw(room.code, phone, STEP)
    store.saw(room.code, "d", STEP + 1)
    store.vote(room.code, "a", STEP, 1, 0)
    voted, held_back, class_size, opened = store.live_count(room.code, STEP, 1)
    assert (voted, held_back, class_size, opened) == (1, 0, None, 3)
    assert store.live_count(room.code, STEP + 1, 1)[3] == 1


def test_reopening_a_step_keeps_its_votes_unless_its_choices_changed(store, room):
    store.vote(room.code, "a", STEP, 1, 0)
    store.open_step(room.code, room.host_key, poll())
    assert store.voted_count(room.code, STEP, 1) == 1
    store.open_step(room.code, room.host_key, poll(right=2))  # a measured answer came out otherwise
    assert store.voted_count(room.code, STEP, 1) == 0
    assert store.poll(room.code) == poll(right=2)


def test_one_stored_poll_is_drawn_in_every_language(store, room, url):
    """The store keeps one row per step, language-free; a phone in English and one in Chinese draw it from that one
    record, each in its own words."""
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        rows = conn.execute(sa.text("SELECT step, poll_json FROM poll_questions")).all()
    engine.dispose()
    assert [r.step for r in rows] == [STEP]
    stored = store.poll(room.code)
    assert stored == poll()
    drawn = {}
    for code in i18n.LANGUAGES:
        with i18n.language(code):
            drawn[code] = (stored.text.shown(), [c.shown() for c in stored.choices], stored.mistakes[0].shown())
    assert drawn[i18n.ENGLISH] == (f"Step {STEP}. question", [f"Row {i}: choice" for i in range(4)], "step 0: mistake")
    assert drawn[i18n.CHINESE] == (
        f"第 {STEP} 步：question",
        [f"第 {i} 行：choice" for i in range(4)],
        "第 0 步：mistake",
    )


def test_next_question_takes_only_the_next_step(store, room):
    with pytest.raises(ValueError):
        store.next_question(room.code, room.host_key, poll(STEP + 2))


def test_the_room_result_marks(store, room):
    store.mark_result(room.code, room.host_key, 2, True)
    store.mark_result(room.code, room.host_key, 5, False)
    store.mark_result(room.code, room.host_key, 2, False)
    assert store.marked_results(room.code) == {2: False, 5: False}


def test_refusals_speak_the_users_language():
    for refusal in (ps.RoomNotFound, ps.NotHost, ps.NoSuchChoice, ps.VotingClosed, ps.TooManyVotes, ps.NotRevealed):
        english = str(refusal())
        with i18n.language(i18n.CHINESE):
            chinese = str(refusal())
        assert english == refusal.message and chinese != english and i18n.text_width(chinese) > len(chinese)


def test_the_setting_and_the_default_file(monkeypatch, tmp_path):
    """Unset, the store is poll.sqlite3 in the user's data folder, never in the package or the checkout."""
    monkeypatch.delenv(ps.ENV_URL, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert ps.database_url() == f"sqlite:///{tmp_path / 'data' / 'kvviz' / 'poll.sqlite3'}"
    assert (tmp_path / "data" / "kvviz").is_dir()
    store = ps.PollStore()
    with store.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == ps.BUSY_TIMEOUT_MS
    store.engine.dispose()
    for unset in ("", "relative/data"):  # the base directory spec: a relative XDG_DATA_HOME is ignored
        monkeypatch.setenv("XDG_DATA_HOME", unset)
        monkeypatch.setenv("HOME", str(tmp_path / "home"))
        assert ps.default_path() == tmp_path / "home" / ".local" / "share" / "kvviz" / "poll.sqlite3"
    assert REPO not in ps.default_path().parents and Path(ps.__file__).parents[2] not in ps.default_path().parents
    monkeypatch.setenv(ps.ENV_URL, f"sqlite:///{tmp_path / 'elsewhere.sqlite3'}")
    assert ps.database_url().endswith("elsewhere.sqlite3")


def test_codes_are_typable_and_unambiguous(store):
    codes = {store.create_room().code for _ in range(20)}
    assert len(codes) == 20
    for code in codes:
        assert len(code) == ps.CODE_CHARS and not set(code) & set("0O1IL")
        assert ps.normalize_code(f" {code[:3].lower()}-{code[3:]} ") == code
    assert len(ps.CODE_ALPHABET) ** ps.CODE_CHARS > 5 * 10**8


def _vote_in_a_process(url: str, code: str, first: int, n: int) -> None:
    """One server process's votes: its own store (engine, connections) on the shared file."""
    store = ps.PollStore(url)
    for voter in range(first, first + n):
        store.vote(code, f"voter-{voter}", STEP, 1, voter % 4)
    store.engine.dispose()


def test_two_processes_vote_at_once_on_one_sqlite_file(tmp_path):
    url = f"sqlite:///{tmp_path / 'poll.sqlite3'}"
    store = ps.PollStore(url)
    room = store.create_room()
    store.open_step(room.code, room.host_key, poll())
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_vote_in_a_process, args=(url, room.code, k * 40, 40)) for k in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
    alive = [w for w in workers if w.is_alive()]
    for worker in alive:
        worker.kill()
    assert not alive and [w.exitcode for w in workers] == [0, 0]
    assert store.voted_count(room.code, STEP, 1) == 80
    assert store.tally(room.code, STEP, 1, room.host_key).counts == (20, 20, 20, 20)
