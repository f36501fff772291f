"""Hostile input, round four: work a student can repeat without limit is bounded (the handout is drawn once per
model, language and questions, one drawing at a time), and a score the lesson did not record says so."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest

from kvviz import i18n
from kvviz.teaching import handout, lesson, score
from support.pages import open_page

N = len(lesson.STEPS)
STUB_MODEL = SimpleNamespace(info=SimpleNamespace(spec="bundled", attn_implementation="eager"))


@pytest.fixture
def counted_drawings(monkeypatch):
    """handout_html replaced by a counter (a drawing takes a moment, so concurrent callers overlap)."""
    drawn = []

    def draw(steps, questions, label, worksheet=False):
        drawn.append((i18n.current(), worksheet))
        time.sleep(0.05)
        return f"<html>{i18n.current()} {worksheet} {len(questions)}</html>"

    monkeypatch.setattr(handout, "handout_html", draw)
    monkeypatch.setattr(handout, "_drawn", type(handout._drawn)())
    return drawn


def _questions() -> dict[int, lesson.Question]:
    return {n: lesson.Question(f"q{n}", n, "worked") for n in range(1, N + 1)}  # every step computed: no model runs


def test_a_handout_downloaded_again_and_again_is_drawn_once(counted_drawings):
    make = handout.handout_maker(STUB_MODEL, _questions(), "GPT-2")
    texts = {make() for _ in range(5)}
    assert len(texts) == 1 and len(counted_drawings) == 1
    # a new session with the same questions, and a whole class at once: still that one drawing
    others = [handout.handout_maker(STUB_MODEL, _questions(), "GPT-2") for _ in range(8)]
    threads = [threading.Thread(target=m) for m in others]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(counted_drawings) == 1


def test_each_language_and_the_worksheet_are_drawn_once_each_and_the_cache_is_bounded(counted_drawings):
    for _ in range(3):
        for lang in i18n.LANGUAGES:
            with i18n.language(lang):
                handout.handout_maker(STUB_MODEL, _questions(), "GPT-2")()
                handout.handout_maker(STUB_MODEL, _questions(), "GPT-2", worksheet=True)()
    assert len(counted_drawings) == 2 * len(i18n.LANGUAGES)
    for n in range(3 * handout.HANDOUT_CACHE_ENTRIES):  # sessions whose steps measured their own numbers
        handout.handout_maker(STUB_MODEL, {**_questions(), 11: lesson.Question("q11", n, "timed")}, "GPT-2")()
    assert len(handout._drawn) == handout.HANDOUT_CACHE_ENTRIES


def test_drawings_for_different_sessions_run_one_at_a_time(monkeypatch):
    running, most = [0], [0]
    lock = threading.Lock()

    def draw():
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.05)
        with lock:
            running[0] -= 1
        return "x"

    monkeypatch.setattr(handout, "_drawn", type(handout._drawn)())
    threads = [threading.Thread(target=handout.cached_handout, args=(("key", n), draw)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most[0] == 1


def test_a_score_is_counted_only_as_this_server_signed_it():
    key, other = score.score_key("server secret"), score.score_key("another server")
    signed = score.sign_score("fh-s" + "-" * (N - 4), key)
    recorded, unrecorded = score.read_signed_score(signed, key, N)
    assert [o.result for o in recorded.values()] == ["first try", "after a hint", "shown"] and not unrecorded
    for forged in (
        "f" * N,
        "f" * N + ".0123456789abcdef",
        "f" * N + "." + signed.partition(".")[2],
        score.sign_score("f" * N, other),
        "f" * N + ".",
        signed.partition(".")[0] + ".é" * 16,
    ):
        recorded, unrecorded = score.read_signed_score(forged, key, N)
        assert not recorded and len(unrecorded) >= 3, forged
    assert score.read_signed_score("", key, N) == ({}, {})
    assert score.read_signed_score("x" * 1_000_000, key, N) == ({}, {})  # no score at all: nothing to say


@pytest.mark.app
def test_a_forged_score_in_a_link_is_said_not_recorded_and_not_counted(fresh_streamlit_caches):
    at = open_page("pages/lesson.py", query={"step": "End", "lesson_score": "f" * N}, router=True)
    assert not at.exception
    assert at.metric[0].value == f"0 of {N}" and at.metric[1].value == "0"
    warned = " ".join(w.value for w in at.warning)
    assert f"({N} of {N} right)" in warned and "did not record" in warned and "not counted" in warned
    assert "lesson_score" not in at.query_params  # gone from the URL: a reload does not say it again
    assert set(at.table[0].value["result"]) == {"not answered"}
