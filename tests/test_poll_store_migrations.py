"""The poll store's schema versions (kvviz.poll.migrations, Alembic): a store written by the schema before it
had versions (the "v0" tables below, copied from that kvviz's poll_store.py, with rows in them) upgrades in place when
the new code opens it, its rooms and votes kept; a new database is made at the newest version; several processes
opening an old store at once upgrade it once. On SQLite (pure tier) and a throwaway PostgreSQL (slow)."""

from __future__ import annotations

import json
import threading

import pytest
import sqlalchemy as sa

from kvviz import i18n
from kvviz.i18n import Message
from kvviz.poll import migrations as poll_migrations
from kvviz.poll import store as ps
from kvviz.poll.question import PollQuestion
from support.clock import Clock
from support.postgres import empty, throwaway_postgres

NOW = 1_000_000.0
CODE, HOST_KEY = "ABC234", "the-host-key"

# ----- the schema before versions: poll_store.py's tables as they were (metadata.create_all made them) -------------
v0 = sa.MetaData()
v0_rooms = sa.Table(
    "poll_rooms",
    v0,
    sa.Column("code", sa.String(16), primary_key=True),
    sa.Column("host_key_sha256", sa.String(64), nullable=False),
    sa.Column("created_s", sa.Float, nullable=False),
    sa.Column("active_s", sa.Float, nullable=False),
    sa.Column("step", sa.Integer, nullable=False),  # 0: no step opened yet
    sa.Column("round", sa.Integer, nullable=False),
    sa.Column("phase", sa.String(16), nullable=False),
    sa.Column("n_choices", sa.Integer, nullable=False),
)
v0_questions = sa.Table(
    "poll_questions",
    v0,
    sa.Column("room", sa.String(16), primary_key=True),
    sa.Column("step", sa.Integer, primary_key=True),
    sa.Column("language", sa.String(16), primary_key=True),
    sa.Column("poll_json", sa.Text, nullable=False),
)
v0_votes = sa.Table(
    "poll_votes",
    v0,
    sa.Column("room", sa.String(16), primary_key=True),
    sa.Column("step", sa.Integer, primary_key=True),
    sa.Column("round", sa.Integer, primary_key=True),
    sa.Column("voter_sha256", sa.String(64), primary_key=True),
    sa.Column("choice", sa.Integer, nullable=False),
    sa.Column("voted_s", sa.Float, nullable=False),
)
v0_voters = sa.Table(
    "poll_voters",
    v0,
    sa.Column("room", sa.String(16), primary_key=True),
    sa.Column("voter_sha256", sa.String(64), primary_key=True),
    sa.Column("minute", sa.Integer, nullable=False),
    sa.Column("votes", sa.Integer, nullable=False),
)
sa.Table(
    "poll_results",
    v0,
    sa.Column("room", sa.String(16), primary_key=True),
    sa.Column("step", sa.Integer, primary_key=True),
    sa.Column("right", sa.Boolean, nullable=False),
)
v0_limits = sa.Table(
    "poll_limits",
    v0,
    sa.Column("room", sa.String(16), primary_key=True),
    sa.Column("per_address", sa.Integer, nullable=False),
    sa.Column("class_size", sa.Integer, nullable=True),
)
sa.Table(
    "poll_clients",
    v0,
    sa.Column("room", sa.String(16), primary_key=True),
    sa.Column("client_sha256", sa.String(64), primary_key=True),
    sa.Column("voter_sha256", sa.String(64), primary_key=True),
)
sa.Table(
    "poll_held",
    v0,
    sa.Column("room", sa.String(16), primary_key=True),
    sa.Column("step", sa.Integer, primary_key=True),
    sa.Column("round", sa.Integer, primary_key=True),
    sa.Column("voter_sha256", sa.String(64), primary_key=True),
)
v0_openers = sa.Table(
    "poll_openers",
    v0,
    sa.Column("code", sa.String(16), primary_key=True),
    sa.Column("client_sha256", sa.String(64), nullable=False),
    sa.Column("created_s", sa.Float, nullable=False),
)


def old_poll_json(step: int, language: str) -> str:
    """A step's poll as the code before 0004 stored it: one row per language, its texts in that language's words."""
    return json.dumps(
        {
            "step": step,
            "text": f"{language}: question {step}",
            "choices": [f"{language} {i}" for i in range(3)],
            "right": 1,
            "mistakes": ["" if i == 1 else f"{language} mistake {i}" for i in range(3)],
        },
        ensure_ascii=False,
        sort_keys=True,
    )


def polls(step: int) -> PollQuestion:
    """A step's poll as the code now stores it: one, language-free."""
    return PollQuestion(
        step,
        Message.lazy("Step {number}. {title}", number=step, title="question"),
        tuple(Message.verbatim(str(i)) for i in range(3)),
        1,
        tuple(None if i == 1 else Message.verbatim(f"mistake {i}") for i in range(3)),
    )


def write_v0_store(url: str) -> None:
    """A store as the old code left it mid-lesson: step 2 voted and passed, step 3 revealed (the current one)."""
    engine = sa.create_engine(url)
    v0.create_all(engine)
    with engine.begin() as conn:
        conn.execute(
            v0_rooms.insert().values(
                code=CODE,
                host_key_sha256=ps._hash(HOST_KEY),
                created_s=NOW,
                active_s=NOW,
                step=3,
                round=1,
                phase="revealed",
                n_choices=3,
            )
        )
        conn.execute(v0_openers.insert().values(code=CODE, client_sha256="c" * 64, created_s=NOW))
        conn.execute(v0_limits.insert().values(room=CODE, per_address=30, class_size=None))
        for step in (2, 3):
            for language in i18n.LANGUAGES:
                conn.execute(
                    v0_questions.insert().values(
                        room=CODE, step=step, language=language, poll_json=old_poll_json(step, language)
                    )
                )
        for voter, (step, choice) in enumerate([(2, 0), (2, 1), (3, 1), (3, 1), (3, 2)]):
            conn.execute(
                v0_votes.insert().values(
                    room=CODE, step=step, round=1, voter_sha256=f"{voter:064d}", choice=choice, voted_s=NOW
                )
            )
        conn.execute(v0_voters.insert().values(room=CODE, voter_sha256=f"{0:064d}", minute=int(NOW // 60), votes=4))
    engine.dispose()


def columns(url: str, table: str) -> set[str]:
    engine = sa.create_engine(url)
    try:
        return {c["name"] for c in sa.inspect(engine).get_columns(table)}
    finally:
        engine.dispose()


def schema_version(url: str) -> str | None:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return conn.execute(sa.text(f"SELECT version_num FROM {poll_migrations.VERSION_TABLE}")).scalar_one()
    finally:
        engine.dispose()


@pytest.fixture(scope="module")
def postgres_url():
    with throwaway_postgres() as url:
        yield url


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.slow)])
def url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'poll.sqlite3'}"
    url = request.getfixturevalue("postgres_url")
    empty(url)
    return url


def test_a_store_from_before_versions_upgrades_in_place_and_keeps_its_rows(url):
    write_v0_store(url)
    assert "version" not in columns(url, "poll_rooms")
    store = ps.PollStore(url, clock=Clock(NOW + 60))
    try:
        assert schema_version(url) == poll_migrations.HEAD
        assert "version" in columns(url, "poll_rooms") and columns(url, "poll_steps") == {
            "room",
            "step",
            "round",
            "phase",
        }
        assert columns(url, "poll_questions") == {"room", "step", "poll_json"}  # one poll per step (0004)
        kept = store.poll(CODE, 3)  # the old poll, in the words it was written in (English where it had English)
        for language in i18n.LANGUAGES:
            with i18n.language(language):
                assert kept.text.shown() == "en: question 3" and [c.shown() for c in kept.choices] == [
                    "en 0",
                    "en 1",
                    "en 2",
                ]
        assert (kept.right, kept.mistakes[1], kept.mistakes[0].shown()) == (1, None, "en mistake 0")
        state = store.check_host(CODE, HOST_KEY)  # the old room and its host key
        assert (state.step, state.round, state.phase, state.version) == (3, 1, "revealed", 0)
        assert store.limits(CODE) == (30, None)
        assert store.tally(CODE, 2, 1, HOST_KEY).counts == (1, 1, 0)
        assert store.tally(CODE, 3, 1).counts == (0, 2, 1)  # revealed: the phones may read it
        # the current step's state came over: its revealed round is final under the new code too
        assert store.open_step(CODE, HOST_KEY, polls(3)).phase == "revealed"
        assert store.step_state(CODE, HOST_KEY, 3).phase == "revealed"
        with pytest.raises(ps.VotingClosed):
            store.vote(CODE, "late", 3, 1, 0)
        store.go_to_step(CODE, HOST_KEY, polls(4))
        store.vote(CODE, "new voter", 4, 1, 2)
        assert [(t.step, t.voted) for t in store.results(CODE, HOST_KEY)] == [(2, 2), (3, 3), (4, 1)]
    finally:
        store.engine.dispose()
    again = ps.PollStore(url, clock=Clock(NOW + 120))  # opened again: at head already, nothing changes
    try:
        assert schema_version(url) == poll_migrations.HEAD and again.voted_count(CODE, 4, 1) == 1
    finally:
        again.engine.dispose()


def test_a_new_store_is_made_at_the_newest_version(url):
    store = ps.PollStore(url)
    try:
        assert schema_version(url) == poll_migrations.HEAD
        engine = sa.create_engine(url)
        made = set(sa.inspect(engine).get_table_names())
        engine.dispose()
        assert made == {t.name for t in ps.metadata.sorted_tables} | {poll_migrations.VERSION_TABLE}
        for table in ps.metadata.sorted_tables:  # the live tables are exactly what the migrations made
            assert columns(url, table.name) == {c.name for c in table.columns}, table.name
        room = store.create_room()
        assert store.room(room.code).version == 0
    finally:
        store.engine.dispose()


def test_servers_opening_an_old_store_at_once_upgrade_it_once(url):
    write_v0_store(url)
    stores, faults = [], []

    def open_store() -> None:
        try:
            stores.append(ps.PollStore(url, clock=Clock(NOW + 60)))
        except Exception as fault:  # noqa: BLE001 - the test names it below
            faults.append(fault)

    threads = [threading.Thread(target=open_store) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    try:
        assert not faults and len(stores) == 4 and all(s._ready for s in stores), faults
        assert schema_version(url) == poll_migrations.HEAD
        assert {s.tally(CODE, 3, 1, HOST_KEY).counts for s in stores} == {(0, 2, 1)}
    finally:
        for store in stores:
            store.engine.dispose()
