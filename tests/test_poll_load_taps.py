"""bench/poll_load.py's phones account for every tap as the phone's page does (kvviz/assets/web/join_phone.js): the
page's marker (.kvviz-join-state, drawn by pages/join.py: which run of which session, the taps it acted on) read from
the ForwardMsgs received. A run of the same session with one more tap acted on it (the receipt: acknowledged; no
receipt: refused); a run of another session, no run within LOST_AFTER_S, or a dropped connection: the page's line "Your
tap did not reach the class poll" (told). Fed here by a fake WebSocket with the messages a server sends."""

from __future__ import annotations

import asyncio
import importlib.util
import sys

import pytest
from streamlit.proto.Alert_pb2 import Alert
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from websockets.exceptions import ConnectionClosedError

from support.pages import REPO

_spec = importlib.util.spec_from_file_location("poll_load", REPO / "bench/poll_load.py")
poll_load = sys.modules.setdefault("poll_load", importlib.util.module_from_spec(_spec))
_spec.loader.exec_module(poll_load)

CHOICE = "join_choice_4_1_2"


def _marker(run: str, taps: int) -> str:
    """The marker as pages/join.py draws it."""
    return (
        f'<div class="kvviz-join-state" data-run="{run}" data-taps="{taps}" data-lost="Your tap did not reach the '
        'class poll (its server changed). Tap your answer again." style="display:none"></div>'
    )


def _html(path, run: str, taps: int) -> ForwardMsg:
    msg = ForwardMsg()
    msg.metadata.delta_path.extend(path)
    msg.delta.new_element.html.body = _marker(run, taps)
    return msg


def _button(path) -> ForwardMsg:
    msg = ForwardMsg()
    msg.metadata.delta_path.extend(path)
    msg.delta.new_element.button.id = f"$$ID-abc-{CHOICE}"
    msg.delta.new_element.button.label = "C. 192 B"
    return msg


def _alert(path, kind: int, body: str) -> ForwardMsg:
    msg = ForwardMsg()
    msg.metadata.delta_path.extend(path)
    msg.delta.new_element.alert.body = body
    msg.delta.new_element.alert.format = kind
    return msg


def _new_session() -> ForwardMsg:
    msg = ForwardMsg()
    msg.new_session.config.max_cached_message_age = 2
    return msg


def _finished() -> ForwardMsg:
    msg = ForwardMsg()
    msg.script_finished = ForwardMsg.FINISHED_SUCCESSFULLY
    return msg


def _run(run: str, taps: int, alert: tuple[int, str] | None = None) -> list[ForwardMsg]:
    """One whole run of the join page: a choice button, the marker, an alert under it."""
    return [
        _new_session(),
        _button((0, 1)),
        _html((0, 2), run, taps),
        *([_alert((0, 3), *alert)] if alert else []),
        _finished(),
    ]


class FakeSocket:
    """Hands out the messages given, then waits (a server that sends nothing more), or drops the connection."""

    def __init__(self, messages: list[ForwardMsg], then_close: bool = False):
        self.queue, self.then_close, self.sent = [m.SerializeToString() for m in messages], then_close, []

    async def send(self, data: bytes) -> None:
        self.sent.append(data)

    async def recv(self) -> bytes:
        if self.queue:
            return self.queue.pop(0)
        if self.then_close:
            raise ConnectionClosedError(None, None)
        await asyncio.sleep(3600)


def _tapped(after: list[ForwardMsg], then_close: bool = False, earlier_receipt: bool = True) -> dict:
    """A phone showing run "s1:3" (2 taps acted on, an earlier receipt on screen) taps CHOICE; `after`: the server's
    messages that follow."""
    student = poll_load.Student("http://127.0.0.1:1", "join", "room=ABC234")
    student.ws = FakeSocket(_run("s1:3", 2, (Alert.SUCCESS, "Vote received: A.") if earlier_receipt else None))

    async def go() -> dict:
        await student.wait()  # the page drawn before the tap
        student.ws = FakeSocket(after, then_close)
        return await poll_load.tap(student, CHOICE)

    return asyncio.run(go())


def test_a_run_of_the_same_session_with_one_more_tap_and_its_receipt_acknowledges():
    out = _tapped(_run("s1:4", 3, (Alert.SUCCESS, "Vote received: C.")))
    assert out["outcome"] == "acknowledged" and out["ack_ms"] is not None


def test_an_earlier_receipt_still_on_screen_is_not_this_taps():
    """The new run's marker arrives before its alert: the old receipt on screen must not count as this tap's."""
    out = _tapped([_new_session(), _button((0, 1)), _html((0, 2), "s1:4", 3)])  # the run stalls after the marker
    assert out["outcome"] == "silent"  # acted on, never answered within ACK_TIMEOUT_S (shortened below)


def test_a_run_that_acted_without_a_receipt_is_refused():
    out = _tapped(_run("s1:4", 3, (Alert.WARNING, "Voting on this question is closed.")))
    assert out["outcome"] == "refused" and out["alerts"] == ["Voting on this question is closed."]


def test_a_run_of_another_session_tells_the_student():
    """The tap went to a replica that is gone; the page reconnected to a new session, whose run never saw it."""
    out = _tapped(_run("s2:1", 0))
    assert out["outcome"] == "told" and out["told_ms"] is not None and not out["disconnected"]


def test_a_run_of_the_same_session_that_did_not_count_the_tap_tells_the_student():
    out = _tapped(_run("s1:4", 2, (Alert.SUCCESS, "Vote received: A.")))
    assert out["outcome"] == "told"


def test_no_run_within_the_pages_wait_tells_the_student():
    out = _tapped([])
    assert out["outcome"] == "told" and out["told_ms"] == poll_load.LOST_AFTER_S * 1000


def test_a_dropped_connection_after_the_tap_tells_the_student():
    out = _tapped([], then_close=True)
    assert out["outcome"] == "told" and out["disconnected"]


@pytest.fixture(autouse=True)
def short_waits(monkeypatch):
    """The page's 10 s and the bench's 30 s, shortened: the rule, not the clock, is under test."""
    monkeypatch.setattr(poll_load, "LOST_AFTER_S", 0.2)
    monkeypatch.setattr(poll_load, "ACK_TIMEOUT_S", 0.4)
