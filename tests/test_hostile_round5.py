"""Hostile input, round five (issue 55): one client cannot stuff the poll, a store fault costs the poll and never the
lesson, a deleted store file is noticed before a vote is acknowledged, rooms are bounded, a full-width join code joins,
run_class.sh checks IPv6 and host names by their real rules and checks KVVIZ_POLL_DB before it starts anything.

Pure tier: the store on a SQLite file of the test's own (and a PostgreSQL address where nothing listens: a stopped
server refuses the connection the same way); the app tier: the lesson and the join page in AppTest on a store that
is away."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
import sys

import pytest

from kvviz import i18n
from kvviz.i18n import Message
from kvviz.poll import store as ps
from kvviz.poll.question import PollQuestion
from support.clock import Clock
from support.repo import REPO
from support.server import free_port

STEP = 3


def _polls(step: int = STEP) -> PollQuestion:
    """One step's poll, language-free (verbatim texts)."""
    v = Message.verbatim
    return PollQuestion(step, v("question"), (v("a"), v("b"), v("c")), 1, (v("m0"), None, v("m2")))


@pytest.fixture
def db(tmp_path):
    return tmp_path / "poll.sqlite3"


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def store(db, clock):
    return ps.PollStore(f"sqlite:///{db}", clock=clock)


@pytest.fixture
def room(store):
    new = store.create_room()
    store.open_step(new.code, new.host_key, _polls())
    return new


def _stopped_postgres() -> str:
    return f"postgresql://kvviz@127.0.0.1:{free_port()}/kvviz"  # nothing listens: as a stopped server


# ----- 1. one client cannot stuff the poll --------------------------------------------------------------------------
def test_fresh_tokens_from_one_address_move_the_count_by_at_most_two(store, room):
    refused = 0
    for i in range(50):  # what the script did: a fresh voter token for every vote, from one address
        try:
            store.vote(room.code, f"fresh-token-{i}", STEP, 1, 0, client="203.0.113.7")
        except ps.TooManyVotersHere as too_many:
            refused += 1
            assert "2 voters from each network address" in str(too_many)
    assert store.voted_count(room.code, STEP, 1) == ps.VOTERS_PER_ADDRESS == 2 and refused == 48
    store.vote(room.code, "fresh-token-0", STEP, 1, 2, client="203.0.113.7")  # a counted voter may change its vote
    store.vote(room.code, "another-phone", STEP, 1, 1, client="203.0.113.8")  # another address is another student
    assert store.tally(room.code, STEP, 1, room.host_key).counts == (1, 1, 1)


def test_a_teacher_on_a_shared_address_raises_the_limit_and_the_class_size_holds_back_the_rest(store, room):
    store.set_limits(room.code, room.host_key, per_address=40, class_size=30)
    held = 0
    for i in range(34):
        try:
            store.vote(room.code, f"student-{i}", STEP, 1, i % 3, client="198.51.100.1")
        except ps.HeldBack:
            held += 1
    assert store.voted_count(room.code, STEP, 1) == 30 and held == 4
    assert store.held_back(room.code, STEP, 1) == 4
    store.vote(room.code, "student-0", STEP, 1, 2, client="198.51.100.1")  # a counted voter still changes its vote
    assert store.limits(room.code) == (40, 30)
    with pytest.raises(ps.NotHost):
        store.set_limits(room.code, "forged", per_address=1000, class_size=None)
    with pytest.raises(ValueError):
        store.set_limits(room.code, room.host_key, per_address=0, class_size=None)


def test_the_join_pages_address_is_nginxs_x_real_ip_and_the_template_sets_it():
    template = (REPO / "deploy" / "nginx.conf.template").read_text()
    assert "proxy_set_header X-Real-IP $remote_addr;" in template
    from kvviz.ui import poll

    assert poll.REAL_IP_HEADER == "X-Real-IP"


# ----- 2. a store fault costs the poll, never the lesson ------------------------------------------------------------
def test_a_stopped_postgresql_is_one_sentence_and_no_vote_is_acknowledged():
    store = ps.PollStore(_stopped_postgres())  # the server starts: the poll waits for its store
    with pytest.raises(ps.StoreUnavailable) as away:
        store.room("QZJBSS")
    assert str(away.value) == "The class poll cannot reach its store: the lesson goes on without it."
    with pytest.raises(ps.VoteNotStored) as vote:
        store.vote("QZJBSS", "token-123456", STEP, 1, 0)
    assert "tap your choice again" in str(vote.value)
    with i18n.language(i18n.CHINESE):
        assert "课堂投票" in str(away.value) or "存储" in str(away.value), str(away.value)


def test_a_lock_held_past_the_busy_timeout_refuses_the_vote_and_the_poll_resumes_after(db, store, room, monkeypatch):
    monkeypatch.setattr(ps, "BUSY_TIMEOUT_MS", 100)
    quick = ps.PollStore(f"sqlite:///{db}", clock=store.clock)  # a new pool: its connections wait 100 ms for the lock
    other = sqlite3.connect(db, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    try:
        with pytest.raises(ps.VoteNotStored):
            quick.vote(room.code, "token-123456", STEP, 1, 0)
    finally:
        other.execute("ROLLBACK")
        other.close()
    quick.vote(room.code, "token-123456", STEP, 1, 0)  # the lock is gone: the same tap counts, no restart
    assert quick.voted_count(room.code, STEP, 1) == 1


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("sqlite://", "in-memory SQLite"),
        ("sqlite:///:memory:", "in-memory SQLite"),
        ("not a url", "is not a database URL"),
        ("mysql://user@host/kvviz", "SQLite or PostgreSQL only"),
        ("oracle://x", "names oracle: the class poll keeps its votes in SQLite or PostgreSQL only"),
        ("postgresql+psycopg2://user@host/kvviz", "not installed here"),
        ("sqlite:///file::memory:?mode=memory&cache=shared", "in-memory SQLite"),
        ("x" * 10_000, "is not a database URL"),
    ],
)
def test_a_bad_kvviz_poll_db_is_refused_in_one_line(url, said):
    with pytest.raises(ps.BadStoreURL, match=said):
        ps.check_url(url)


@pytest.mark.parametrize(
    ("url", "said"),
    [("sqlite://", "in-memory SQLite"), ("mysql://u@h/db", "SQLite or PostgreSQL"), ("@stopped", "cannot be reached")],
)
def test_the_start_check_says_one_line_and_exits_2(url, said):
    env = {**os.environ, ps.ENV_URL: _stopped_postgres() if url == "@stopped" else url}
    done = subprocess.run(
        [sys.executable, "-m", "kvviz.poll.store"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        cwd=REPO,
    )
    assert done.returncode == 2 and said in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


# ----- 3. a deleted or replaced SQLite file ------------------------------------------------------------------------
@pytest.mark.parametrize("how", ["deleted", "replaced"])
def test_a_store_file_deleted_under_the_server_is_noticed_before_a_vote_is_acknowledged(db, store, room, how):
    store.vote(room.code, "token-before", STEP, 1, 0)
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(f"{db}{suffix}"):
            os.remove(f"{db}{suffix}")
    if how == "replaced":
        sqlite3.connect(db).close()
    with pytest.raises(ps.VoteNotStored):
        store.vote(room.code, "token-after", STEP, 1, 1)  # never "Vote received" into a file nobody will read
    with pytest.raises(ps.RoomNotFound):  # afresh, in a new file: the room went with the old one, said plainly
        store.room(room.code)
    assert os.path.exists(db) and store.create_room().code


# ----- 4. rooms bounded -------------------------------------------------------------------------------------------
def test_one_address_opens_a_few_rooms_an_hour(store, clock):
    for _ in range(ps.ROOMS_PER_ADDRESS_HOUR):
        store.create_room(client="203.0.113.9")
    with pytest.raises(ps.TooManyRooms):
        store.create_room(client="203.0.113.9")
    store.create_room(client="203.0.113.10")  # another address
    clock.now += 3601
    store.create_room(client="203.0.113.9")  # an hour later


def test_a_room_lives_at_most_twelve_hours_whatever_its_votes(store, room, clock):
    for i in range(13):  # a vote every hour keeps it active, not alive for ever
        clock.now += 3600
        try:
            store.vote(room.code, f"token-{i:04d}", STEP, 1, 0)
        except ps.RoomNotFound:
            break
    assert clock.now - 1_000_000.0 <= ps.ROOM_MAX_LIFE_S + 3600
    with pytest.raises(ps.RoomNotFound):
        store.room(room.code)


def test_idle_rooms_are_purged_on_a_timer_without_a_new_room(store, room, clock):
    import sqlalchemy as sa

    other = store.create_room()
    clock.now += ps.ROOM_IDLE_S + ps.PURGE_EVERY_S
    with pytest.raises(ps.RoomNotFound):
        store.room("QZJBSS")  # any call, for another code: the timer purges every idle room
    with store.engine.connect() as conn:
        left = {r.code for r in conn.execute(sa.select(ps.rooms.c.code))}
    assert room.code not in left and other.code not in left


# ----- 9. NFKC join codes ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("typed", ["ＱＺＪＢＳＳ", "qzj－bss", "QZJ‐BSS", "QZJ—BSS", "QZJ\u3000BSS", "ｑｚｊ ｂｓｓ"])
def test_a_full_width_code_as_a_chinese_keyboard_types_it_is_normalised(typed):
    assert ps.normalize_code(typed) == "QZJBSS"


# ----- 7. run_class.sh ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("listen", ["::::", "1::2::3", "2001:db8::1:2:3:4:5:6:7", "1.2.3.4.5", "12345"])
def test_run_class_refuses_what_is_neither_an_address_nor_a_host_name(listen):
    done = subprocess.run(
        ["bash", str(REPO / "deploy" / "run_class.sh"), "--listen", listen],
        capture_output=True,
        text=True,
        env={**os.environ, "NGINX": "/nonexistent/nginx"},
        timeout=30,
    )
    assert done.returncode == 2 and "--listen must be an IP address or a host name" in done.stderr, done.stderr


@pytest.mark.parametrize("listen", ["::1", "[fe80::1]", "::ffff:127.0.0.1", "kvviz.example.org", "localhost"])
def test_run_class_takes_a_real_ipv6_address_or_host_name(listen):
    done = subprocess.run(
        ["bash", str(REPO / "deploy" / "run_class.sh"), "--listen", listen],
        capture_output=True,
        text=True,
        env={**os.environ, "NGINX": "/nonexistent/nginx"},
        timeout=30,
    )
    assert done.returncode == 1 and "not found" in done.stderr, done.stderr  # past the checks: no nginx here


def test_run_class_refuses_a_bad_poll_store_before_it_starts_anything(tmp_path):
    run_dir = tmp_path / "run"
    done = subprocess.run(
        ["bash", str(REPO / "deploy" / "run_class.sh"), "-p", str(free_port()), "-n", "1", "--run-dir", str(run_dir)],
        capture_output=True,
        text=True,
        env={**os.environ, ps.ENV_URL: "sqlite://"},
        timeout=60,
    )
    assert done.returncode == 2 and "in-memory SQLite" in done.stderr and not run_dir.exists(), done.stderr


# ----- the pages on a store that is away (app tier) -----------------------------------------------------------------
@pytest.fixture
def away(monkeypatch):
    from kvviz.ui import poll

    monkeypatch.setenv(ps.ENV_URL, _stopped_postgres())
    poll.store.clear()
    yield
    poll.store.clear()


@pytest.mark.app
def test_a_stopped_store_leaves_the_lesson_page_whole_with_one_sentence(away):
    from support.pages import open_page

    room = ps.NewRoom("QZJBSS", "k" * 43)  # the teacher's room, as the host cookie brings it to every run
    at = open_page(
        "pages/lesson.py", query={"step": "1", "lesson_class": "true"}, router=True, session_state={"poll_room": room}
    )
    sentence = "The class poll cannot reach its store: the lesson goes on without it."
    assert [w.value for w in at.warning].count(sentence) == 1, [w.value for w in at.warning]
    assert at.button(key="lesson_reveal_btn_1") and at.button(key="poll_retry")
    at.button(key="lesson_reveal_btn_1").click().run()  # the lesson's own reveal goes on without the room's
    assert not at.exception and at.success
    at.button(key="lesson_room_right_1").click().run()  # the mark is kept in the session
    assert not at.exception and at.session_state["lesson_outcomes"][1].result == "first try"


@pytest.mark.app
@pytest.mark.parametrize("url", ["@stopped", "sqlite://"])
def test_the_join_page_on_a_store_that_is_away_says_one_sentence(monkeypatch, url):
    from kvviz.ui import poll
    from support.pages import open_page

    monkeypatch.setenv(ps.ENV_URL, _stopped_postgres() if url == "@stopped" else url)
    poll.store.clear()
    try:
        at = open_page("pages/join.py", lang=i18n.ENGLISH, query={"room": "QZJBSS"})
    finally:
        poll.store.clear()
    assert [w.value for w in at.warning] == ["The class poll cannot reach its store: the lesson goes on without it."]
    assert at.button(key="join_retry") and not at.error


@pytest.mark.app
def test_a_full_width_code_joins_on_the_page(tmp_path, monkeypatch):
    from kvviz.ui import poll
    from support.pages import open_page

    monkeypatch.setenv(ps.ENV_URL, f"sqlite:///{tmp_path / 'poll.sqlite3'}")
    poll.store.clear()
    try:
        new = poll.store().create_room()
        poll.store().open_step(new.code, new.host_key, _polls())
        wide = new.code.translate({ord(c): ord(c) + 0xFEE0 for c in new.code})  # ＡＢＣ２３４
        at = open_page("pages/join.py", lang=i18n.ENGLISH)
        at.text_input[0].input(wide)
        at.button[0].click().run()
        assert not at.error and "question" in at.markdown[0].value
    finally:
        poll.store.clear()


@pytest.mark.slow
def test_the_stuffing_bench_moves_the_count_by_at_most_two_through_run_class(tmp_path):
    """bench/poll_stuffing.py against deploy/run_class.sh (1 replica, nginx on 127.0.0.1): 12 sessions from one
    address, fresh tokens or no cookie; the store's count moves by 2 and only those 2 were acknowledged."""
    out = tmp_path / "stuffing.json"
    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "bench" / "poll_stuffing.py"),
            "--sessions",
            "12",
            "--concurrency",
            "3",
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=400,
        cwd=REPO,
    )
    import json

    assert out.exists(), done.stdout + done.stderr
    result = json.loads(out.read_text())
    assert done.returncode == 0, done.stdout + done.stderr
    assert result["counted"] == result["acknowledged"] == 2 and not result["errors"], result


# ----- 5. Infinity and NaN over the WebSocket ----------------------------------------------------------------------
@pytest.mark.app
@pytest.mark.parametrize(
    ("page", "key", "default"),
    [("pages/internals_layout.py", "int_layout_layer", "0"), ("pages/memory_budget.py", "mem_context", "4,096")],
)
@pytest.mark.parametrize("sent", [float("inf"), float("-inf"), float("nan")])
def test_infinity_and_nan_are_named_and_the_session_goes_on(page, key, default, sent):
    from support.pages import open_page

    at = open_page(page)
    at.number_input(key=key).set_value(sent).run()
    assert not at.exception, [e.value for e in at.exception]
    named = [e.value for e in at.error if f"(got '{sent}')" in e.value]
    assert len(named) == 1 and f"Using {default} until it is changed" in named[0], [e.value for e in at.error]
    at.number_input(key=key).set_value(2).run()  # a valid value afterwards is taken: no reload needed
    assert not at.exception and at.number_input(key=key).value == 2 and not at.error


@pytest.mark.app
@pytest.mark.parametrize(
    ("typed", "said"),
    [(-5.0, "cannot be negative (got -5)"), (float("nan"), "not a number"), (float("inf"), "too large for this box")],
)
def test_the_lessons_answer_box_names_a_value_it_cannot_take(typed, said):
    from kvviz.teaching import lesson
    from support.pages import open_page

    number = 1 + [s.ask for s in lesson.STEPS].index(lesson._bytes_at_1000)  # a number and a unit
    at = open_page("pages/lesson.py", query={"step": str(number)}, router=True)
    at.number_input(key=f"lesson_answer_{number}").set_value(typed)
    at.button(key=f"lesson_check_{number}").click().run()
    assert not at.exception
    assert [w.value for w in at.warning if said in w.value], ([w.value for w in at.warning], [i.value for i in at.info])
    assert not [i.value for i in at.info if "Type or choose an answer first" in i.value]


# ----- 6. every refused link value named ---------------------------------------------------------------------------
@pytest.mark.app
@pytest.mark.parametrize(
    ("lang", "plan", "opens"),
    [("zh-CN", "45 minutes", 1), ("en", "45 分钟", 1), ("en", "45", 1), ("zh-CN", "30", 0), ("en", "45  MINUTES", 1)],
)
def test_a_plan_link_in_either_language_or_by_its_minutes_opens_that_plan(lang, plan, opens):
    from kvviz.teaching import guide
    from support.pages import open_page

    at = open_page("pages/teachers.py", lang=lang, query={"teach_plan": plan}, router=True)
    with i18n.language(lang):
        label = ("{n} 分钟" if lang == "zh-CN" else "{n} minutes").format(
            n=guide.total_minutes((guide.PLAN_30, guide.PLAN_45)[opens])
        )
    assert at.session_state["teach_plan"] == label and not at.warning, [w.value for w in at.warning]


@pytest.mark.app
@pytest.mark.parametrize("plan", ["999 minutes", "<b>45</b>", "x" * 10_000])
def test_a_plan_link_that_names_no_plan_is_named(plan):
    from support.pages import open_page

    at = open_page("pages/teachers.py", lang="zh-CN", query={"teach_plan": plan}, router=True)
    said = [w.value for w in at.warning if "teach_plan=" in w.value]
    assert len(said) == 1 and "30 分钟" in said[0] and len(said[0]) < 300, said


@pytest.mark.app
@pytest.mark.parametrize(("value", "used"), [("xx", "English"), ("zh-TW", "English"), ("x" * 5000, "English")])
def test_a_lang_link_that_names_no_language_is_named(value, used):
    from support.pages import open_page

    at = open_page("app.py", query={"lang": value})  # the first run of a shared link
    said = [w.value for w in at.warning if "lang=" in w.value]
    assert len(said) == 1 and f"using {used}" in said[0] and len(said[0]) < 300, said


@pytest.mark.app
@pytest.mark.parametrize("value", ["<b>true</b>", "1", "yes"])
def test_a_class_mode_link_value_that_is_not_true_or_false_is_named(value):
    from support.pages import open_page

    at = open_page("pages/lesson.py", query={"step": "1", "lesson_class": value}, router=True)
    said = [w.value for w in at.warning if "lesson_class=" in w.value]
    assert len(said) == 1 and "class mode off" in said[0], [w.value for w in at.warning]


# ----- 8. the CLI: one range per flag, stated once -----------------------------------------------------------------
@pytest.mark.parametrize(
    ("flag", "value", "said"),
    [
        ("--new-tokens", "0", "from 1 to 1,000,000 (got 0)"),
        ("--new-tokens", "2000000000", "from 1 to 1,000,000"),
        ("--prompt-len", "0", "from 1 to 1,000,000 (got 0)"),
        ("--repeats", "0", "from 1 to 50 (got 0)"),
        ("--repeats", "51", "from 1 to 50 (got 51)"),
    ],
)
def test_bench_states_one_range_per_flag(flag, value, said):
    done = subprocess.run(
        [sys.executable, "-m", "kvviz", "bench", "--model", "/nonexistent", flag, value],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    last = done.stderr.strip().splitlines()[-1]  # argparse's usage above it, then the one message
    assert done.returncode == 2 and said in last and flag in last and done.stderr.count(" to ") == 1, done.stderr


@pytest.mark.app
def test_the_projector_sets_the_limits_and_names_the_votes_held_back(tmp_path, monkeypatch):
    from kvviz.ui import poll
    from support.pages import open_page

    monkeypatch.setenv(ps.ENV_URL, f"sqlite:///{tmp_path / 'poll.sqlite3'}")
    poll.store.clear()
    try:
        at = open_page("pages/lesson.py", query={"step": "1", "lesson_class": "true"}, router=True)
        at.button(key="poll_start").click().run()
        room = at.session_state["poll_room"]
        at.number_input(key="poll_per_address").set_value(30).run()
        at.number_input(key="poll_class_size").set_value(3).run()
        store = poll.store()
        assert store.limits(room.code) == (30, 3)
        state = store.room(room.code)
        for i in range(5):
            with contextlib.suppress(ps.HeldBack):
                store.vote(room.code, f"phone-{i:04d}", state.step, state.round, 0, client="198.51.100.4")
        at.run()
        assert not at.exception
        assert [w.value for w in at.warning if "held back" in w.value] == [
            "5 votes for a class of 3: 2 held back, not counted."
        ]
    finally:
        poll.store.clear()


@pytest.mark.app
def test_the_poll_resumes_when_its_store_comes_back_without_a_restart(tmp_path, monkeypatch):
    """The store's folder missing (SQLite cannot open the file: as a disk unmounted mid-class), then back."""
    from kvviz.ui import poll
    from support.pages import open_page

    folder = tmp_path / "away"
    monkeypatch.setenv(ps.ENV_URL, f"sqlite:///{folder / 'poll.sqlite3'}")
    poll.store.clear()
    try:
        at = open_page("pages/lesson.py", query={"step": "1", "lesson_class": "true"}, router=True)
        at.button(key="poll_start").click().run()  # the store is away: one sentence, the lesson stays
        assert not at.exception and [w.value for w in at.warning if "cannot reach its store" in w.value]
        assert at.button(key="lesson_reveal_btn_1")
        folder.mkdir()
        at.button(key="poll_start").click().run()  # the same server process, the same cached store
        assert not at.exception and "poll_room" in at.session_state
        assert poll.store().room(at.session_state["poll_room"].code).step == 1
        assert not [w.value for w in at.warning if "cannot reach its store" in w.value]
    finally:
        poll.store.clear()


def test_a_refused_list_value_names_what_the_page_uses_in_words_not_as_a_python_list():
    from kvviz.inputs.links import link_refusals

    [said] = link_refusals(
        {"evict_drawn": ["random", "bogus"]}, {"evict_drawn": ["random"]}, {"evict_drawn": ["random", "recent"]}
    )
    assert said.endswith(f"using random{i18n.list_sep()}recent.") and "[" not in said, said
    [none] = link_refusals({"evict_drawn": ["bogus"]}, {}, {"evict_drawn": []})
    assert none.endswith("using none."), none
    with i18n.language(i18n.CHINESE):
        [zh] = link_refusals({"evict_drawn": ["bogus"]}, {}, {"evict_drawn": ["random", "recent"]})
        assert f"random{i18n.list_sep()}recent" in zh and "[" not in zh and "'" not in zh, zh


@pytest.mark.slow
def test_a_postgresql_stopped_mid_class_costs_the_poll_and_the_poll_resumes_when_it_is_back(monkeypatch):
    """A real PostgreSQL (support.postgres), stopped under a running store and the join page, then started again:
    nothing stored is lost, no vote is acknowledged while it is down, the same store (no restart) goes on after."""
    from kvviz.ui import poll
    from support.pages import open_page
    from support.postgres import stopped, throwaway_postgres

    with throwaway_postgres() as url:
        store = ps.PollStore(url)
        room = store.create_room()
        store.open_step(room.code, room.host_key, _polls())
        store.vote(room.code, "phone-before", STEP, 1, 0)
        monkeypatch.setenv(ps.ENV_URL, url)
        poll.store.clear()
        try:
            with stopped(url):
                with pytest.raises(ps.VoteNotStored):
                    store.vote(room.code, "phone-during", STEP, 1, 1)
                at = open_page("pages/join.py", lang=i18n.ENGLISH, query={"room": room.code}, check=False)
                assert not at.exception and [w.value for w in at.warning] == [
                    "The class poll cannot reach its store: the lesson goes on without it."
                ]
            store.vote(room.code, "phone-after", STEP, 1, 2)
            assert store.tally(room.code, STEP, 1, room.host_key).counts == (1, 0, 1)
            at.button(key="join_retry").click().run()  # the page's own store, cached in the server: resumes too
            assert not at.exception and not at.warning and any(b.key.startswith("join_choice_") for b in at.button)
        finally:
            poll.store.clear()
            store.engine.dispose()


@pytest.mark.parametrize(
    ("peer", "headers", "trusted", "address"),
    [
        (None, {"X-Real-IP": "203.0.113.7"}, "", "203.0.113.7"),  # nginx of run_class.sh on this computer
        (None, {}, "", None),  # a browser on this computer, no proxy: not limited
        ("198.51.100.9", {"X-Real-IP": "1.2.3.4"}, "", "198.51.100.9"),  # a direct client's own header is not believed
        ("10.1.2.3", {"X-Real-IP": "203.0.113.8"}, "10.0.0.0/8", "203.0.113.8"),  # the Kubernetes ingress
        ("10.1.2.3", {"X-Forwarded-For": "6.6.6.6, 203.0.113.9"}, "10.0.0.0/8", "203.0.113.9"),  # the proxy's entry
        ("10.1.2.3", {"X-Real-IP": "<b>x</b>"}, "10.0.0.0/8,not a network", "10.1.2.3"),
    ],
)
def test_the_client_address_is_the_connections_or_a_trusted_proxys(monkeypatch, peer, headers, trusted, address):
    import types

    from kvviz.ui import poll

    monkeypatch.setenv(poll.TRUSTED_PROXIES_ENV, trusted)
    poll.trusted_proxies.clear()
    fake = types.SimpleNamespace(context=types.SimpleNamespace(ip_address=peer, headers=headers))
    monkeypatch.setattr(poll, "st", fake)
    try:
        assert poll.client_address() == address
    finally:
        poll.trusted_proxies.clear()


def test_the_projectors_one_read_counts_votes_held_back_and_the_class_size(store, room):
    store.set_limits(room.code, room.host_key, per_address=2, class_size=1)
    store.vote(room.code, "phone-one", STEP, 1, 0, client="203.0.113.1")
    with pytest.raises(ps.HeldBack):
        store.vote(room.code, "phone-two", STEP, 1, 1, client="203.0.113.2")
    assert store.live_count(room.code, STEP, 1) == (1, 1, 1, 0)
    store.reset(room.code, room.host_key)  # a reset forgets the held-back votes with the counted ones
    assert store.live_count(room.code, STEP, 1) == (0, 0, 1, 0)


# ----- the three the round left: ?fresh=, a 10,000-character preset name, train --text <a folder> ---------------------
@pytest.mark.app
def test_a_fresh_flag_the_stage_cannot_read_is_named():
    from support.pages import app_test

    at = app_test("pages/step_through.py", query={"fresh": "2"})
    at.run()
    assert not at.exception
    said = " ".join(w.value for w in at.info)  # the stage's link notices are a banner (kept until read)
    assert "fresh=2" in said and "the stage as this session left it" in said
    assert "fresh" not in at.query_params


def test_a_huge_preset_name_is_cut_and_the_known_presets_kept(capsys):
    from kvviz.cli.memory import main as memory_cli

    assert memory_cli(["--preset", "x" * 10_000]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and len(err) < 1500
    assert "unknown preset" in err and "llama-3-8b" in err and "qwen3-next-80b-a3b" in err


def test_train_names_a_folder_as_a_folder(tmp_path, capsys):  # refused before torch (pure: the tier check says so)
    from kvviz.training.command import main as train_main

    assert train_main(["--text", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "is a folder, not a text file" in err and err.count("\n") == 1
