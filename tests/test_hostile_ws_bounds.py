"""A number sent over Streamlit's WebSocket past a box's bounds (as a hostile student's own client sends it, never
the box) is refused by the setting's one rule: the reader is told in one message naming the setting, the page
runs with the default, and the server logs no traceback.

Streamlit (1.67) turns such a value into the widget's `value` without a word; kvviz.ui.bounded makes that visible.
The client is the load test's protocol-level student (bench/classroom_ws.py) against a real `streamlit run`.
"""
from __future__ import annotations

import asyncio
import importlib.util
import sys

import pytest
from streamlit.proto.WidgetStates_pb2 import WidgetState

from support.pages import REPO
from support.server import free_port, server_log, streamlit_server

_spec = importlib.util.spec_from_file_location("classroom_ws", REPO / "bench/classroom_ws.py")
ws_client = sys.modules.setdefault("classroom_ws", importlib.util.module_from_spec(_spec))
_spec.loader.exec_module(ws_client)


@pytest.fixture(scope="module")
def server_url():
    with streamlit_server(free_port(), ["--server.fileWatcherType", "none"]) as url:
        yield url


def send_number(url: str, page: str, key: str, value: int) -> tuple[dict, object]:
    """Open `page`, send `key`'s number box `value` as an int_value (what the box's own frontend sends), and return
    the page's state after that run and the box's element as the server last drew it."""

    async def go():
        student = ws_client.Student(url, page)
        try:
            await student.open()
            found = student.page.find_key("number_input", key)
            assert found is not None, f"no number box {key} on /{page}"
            student.values[found[0]] = WidgetState(id=found[0], int_value=value)
            await student.rerun(fragment_id=found[1])
            await student.wait()
            box = next(el for kind, el, _ in student.page.elements.values() if kind == "number_input"
                       and el.id == found[0])
            return student.page.state(), box
        finally:
            await student.close()

    return asyncio.run(go())


@pytest.mark.browser
@pytest.mark.parametrize("page,key,value,name,default", [
    ("internals_eviction", "evict_sinks", -1, "sink tokens S", 4),
    ("internals_paging", "int_paging_block", -1, "block size", 16),
    ("internals_crossattn", "int_cross_src", 0, "source length", 12),
    ("internals_speculative", "int_spec_k", 0, "draft length k", 4),
])
def test_a_value_past_the_bounds_sent_over_the_websocket_is_refused_and_named(server_url, page, key, value, name,
                                                                              default):
    state, box = send_number(server_url, page, key, value)
    errors = state["error_texts"]
    assert [e for e in errors if name in e] and len(errors) == 1, errors  # one message, naming the setting
    assert f"{default} until it is changed" in errors[0], errors  # ... and what the page shows instead
    assert not any(e.startswith(("exception", "Exception")) for e in errors)
    assert box.value == default  # the box shows what the page used
    assert "Traceback" not in server_log(server_url).read_text(errors="replace")
