"""The poll store under concurrent calls, on SQLite (pure tier) and a throwaway PostgreSQL (slow): threads in one
process, each store call its own transaction on its own pooled connection, as a server's sessions make them.

- A vote and the room's phase check are one step: no vote counts after Lock or Reveal returns (a vote held between
  its check and its insert while the teacher locks; 20 voters tapping while the teacher locks, three times over).
- The rate-limit counter is atomic: 20 taps at once from one voter give exactly VOTES_PER_MINUTE votes, none lost.
"""

from __future__ import annotations

import threading
import time

import pytest
import sqlalchemy as sa
from sqlalchemy import event

from kvviz.i18n import Message
from kvviz.poll import store as ps
from kvviz.poll.question import PollQuestion
from support.postgres import empty, throwaway_postgres

VOTERS = 20  # threads voting at once
JOIN_S = 120  # a thread that has not ended by then is a hang: the test fails and names it
TAP_GAP_S = 0.005  # between one voter's taps (with none, 20 tight loops can starve the teacher of a connection)


def polls(step: int) -> PollQuestion:
    """One step's poll, language-free (verbatim texts: the store keeps it as it is)."""
    return PollQuestion(
        step,
        Message.verbatim(f"question {step}"),
        tuple(Message.verbatim(str(i)) for i in range(4)),
        1,
        tuple(None if i == 1 else Message.verbatim(f"mistake {i}") for i in range(4)),
    )


@pytest.fixture(scope="module")
def postgres_url():
    with throwaway_postgres() as url:
        yield url


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.slow)])
def store(request, tmp_path):
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'poll.sqlite3'}"
    else:
        url = request.getfixturevalue("postgres_url")
        empty(url)
    made = ps.PollStore(url)
    yield made
    made.engine.dispose()


def run_all(threads: list[threading.Thread]) -> None:
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=JOIN_S)
    assert not [t.name for t in threads if t.is_alive()], "a store call hung"


@pytest.mark.parametrize("action", ["lock", "reveal"])
def test_a_vote_held_between_its_check_and_its_insert_never_counts_after_the_lock(store, action):
    """The vote is stopped just before it writes its row (a hook on the connection) while the teacher locks in
    another thread. With the room's row locked by the vote (or SQLite's write lock), Lock waits for the vote, so the
    vote counts before Lock returns; checked and written apart, Lock would return first and the vote count after."""
    room = store.create_room()
    store.open_step(room.code, room.host_key, polls(1))
    at_insert, go_on = threading.Event(), threading.Event()
    seen: dict[str, object] = {}

    @event.listens_for(store.engine, "before_cursor_execute")
    def _hold(conn, cursor, statement, parameters, context, executemany):
        if threading.current_thread().name == "voter" and statement.lstrip().upper().startswith(
            "INSERT INTO POLL_VOTES"
        ):
            at_insert.set()
            go_on.wait(timeout=JOIN_S)

    def vote() -> None:
        try:
            store.vote(room.code, "voter-token", 1, 1, 2)
            seen["vote"] = "acknowledged"
        except ps.PollRefused as refused:
            seen["vote"] = type(refused).__name__

    def lock() -> None:
        getattr(store, action)(room.code, room.host_key)
        seen["counted_when_locked"] = store.voted_count(room.code, 1, 1)

    voter, teacher = threading.Thread(target=vote, name="voter"), threading.Thread(target=lock, name="teacher")
    voter.start()
    assert at_insert.wait(timeout=JOIN_S), "the vote never reached its insert"
    teacher.start()
    teacher.join(timeout=1.0)  # with the row locked the teacher waits for the vote; give it a second to show
    go_on.set()
    run_all([])
    voter.join(timeout=JOIN_S)
    teacher.join(timeout=JOIN_S)
    event.remove(store.engine, "before_cursor_execute", _hold)
    assert not voter.is_alive() and not teacher.is_alive()
    counted = store.voted_count(room.code, 1, 1)
    assert seen["vote"] == "acknowledged" and counted == 1
    assert seen["counted_when_locked"] == counted, "a vote was counted after the Lock returned"


@pytest.mark.parametrize("action", ["lock", "reveal"])
def test_twenty_voters_and_a_lock_in_the_middle_no_vote_counts_after_it(store, action):
    room = store.create_room()
    for step in (1, 2, 3):  # three questions, each locked mid-flood
        store.open_step(room.code, room.host_key, polls(step))
        acknowledged: list[str] = []
        refused: list[str] = []
        faults: list[Exception] = []
        started = threading.Barrier(VOTERS + 1)
        some_counted = threading.Event()
        stop = threading.Event()

        def voter(
            k: int,
            step: int = step,
            acknowledged=acknowledged,
            refused=refused,
            faults=faults,
            started=started,
            some_counted=some_counted,
            stop=stop,
        ) -> None:
            started.wait(timeout=JOIN_S)
            for i in range(10_000):
                token = f"phone-{step}-{k}-{i}"
                try:
                    store.vote(room.code, token, step, 1, (k + i) % 4)
                except ps.VotingClosed:
                    refused.append(token)
                    return
                except ps.PollRefused as fault:  # anything else is a failure, named below
                    faults.append(fault)
                    return
                acknowledged.append(token)
                if len(acknowledged) >= 2 * VOTERS:
                    some_counted.set()
                if stop.is_set():
                    return
                time.sleep(TAP_GAP_S)  # a phone's next tap: the teacher's call gets a pooled connection too

        threads = [threading.Thread(target=voter, args=(k,), name=f"voter-{k}") for k in range(VOTERS)]
        for thread in threads:
            thread.start()
        started.wait(timeout=JOIN_S)
        assert some_counted.wait(timeout=JOIN_S), "the voters never got going"
        state = getattr(store, action)(room.code, room.host_key)  # the teacher's Lock, in the middle of the flood
        counted_when_locked = store.voted_count(room.code, step, 1)
        stop.set()
        run_all([])
        for thread in threads:
            thread.join(timeout=JOIN_S)
        assert not [t.name for t in threads if t.is_alive()], "a voter hung"
        assert not faults, faults
        counted = store.voted_count(room.code, step, 1)
        assert state.phase in ("locked", "revealed") and refused, "no vote came after the Lock"
        assert counted == counted_when_locked, f"{counted - counted_when_locked} votes counted after the {action}"
        assert counted == len(acknowledged), "an acknowledged vote is not counted, or an uncounted one acknowledged"
        assert sum(store.tally(room.code, step, 1, room.host_key).counts) == counted


def test_taps_at_once_from_one_voter_lose_no_rate_limit_count(store):
    room = store.create_room()
    store.open_step(room.code, room.host_key, polls(1))
    outcomes: list[str] = []
    started = threading.Barrier(VOTERS)

    def tap(k: int) -> None:
        started.wait(timeout=JOIN_S)
        try:
            store.vote(room.code, "one-browser", 1, 1, k % 4)
            outcomes.append("counted")
        except ps.TooManyVotes:
            outcomes.append("too many")

    run_all([threading.Thread(target=tap, args=(k,), name=f"tap-{k}") for k in range(VOTERS)])
    assert sorted(outcomes) == ["counted"] * ps.VOTES_PER_MINUTE + ["too many"] * (VOTERS - ps.VOTES_PER_MINUTE)
    assert store.voted_count(room.code, 1, 1) == 1
    with store.engine.connect() as conn:
        stored = conn.execute(sa.select(ps.voters.c.votes).where(ps.voters.c.room == room.code)).scalar_one()
    assert stored == ps.VOTES_PER_MINUTE
