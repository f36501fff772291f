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


def send_value(
    url: str, page: str, key: str, value, kind: str = "number_input", popover: str | None = None
) -> tuple[dict, object]:
    """Open `page` (and the popover labelled `popover`, whose widgets are drawn only while it is open), send `key`'s
    widget `value` as its own frontend encodes it (a number box: int_value or double_value; a slider: a list of
    floats; a select_slider: a list of option labels), and return the page's state after that run and the widget's
    element as the server last drew it."""

    async def go():
        student = ws_client.Student(url, page)
        try:
            await student.open()
            if popover is not None:
                assert await student.set_popover(popover, True), f"no popover {popover} on /{page}"
            found = student.page.find_key("slider" if kind == "select_slider" else kind, key)  # one element type
            assert found is not None, f"no {kind} {key} on /{page}"
            if kind == "slider":
                state = WidgetState(id=found[0])
                state.double_array_value.data.extend(value)
            elif kind == "select_slider":
                state = WidgetState(id=found[0])
                state.string_array_value.data.extend(value)
            elif isinstance(value, float):
                state = WidgetState(id=found[0], double_value=value)
            else:
                state = WidgetState(id=found[0], int_value=value)
            student.values[found[0]] = state
            await student.rerun(fragment_id=found[1])
            await student.wait()
            box = next(el for _, el, _ in student.page.elements.values() if getattr(el, "id", None) == found[0])
            return student.page.state(), box
        finally:
            await student.close()

    return asyncio.run(go())


def send_number(url: str, page: str, key: str, value: int) -> tuple[dict, object]:
    return send_value(url, page, key, value)


def _refused_once(state: dict, name: str, default: str) -> None:
    errors = state["error_texts"]
    assert [e for e in errors if name in e] and len(errors) == 1, errors  # one message, naming the setting
    assert f"{default} until it is changed" in errors[0], errors  # ... and what the page shows instead
    assert not any(e.startswith(("exception", "Exception")) for e in errors)


@pytest.mark.browser
@pytest.mark.parametrize(
    "page,key,value,name,default",
    [
        ("internals_eviction", "evict_sinks", -1, "sink tokens S", 4),
        ("internals_paging", "int_paging_block", -1, "block size", 16),
        ("internals_crossattn", "int_cross_src", 0, "source length", 12),
        ("internals_speculative", "int_spec_k", 0, "draft length k", 4),
    ],
)
def test_a_value_past_the_bounds_sent_over_the_websocket_is_refused_and_named(
    server_url, page, key, value, name, default
):
    state, box = send_number(server_url, page, key, value)
    _refused_once(state, name, str(default))
    assert box.value == default  # the box shows what the page used
    assert "Traceback" not in server_log(server_url).read_text(errors="replace")


@pytest.mark.browser
@pytest.mark.parametrize(
    "page,key,value,name,default,kind,popover",
    [
        ("memory_budget", "mem_batch", 2**30, "batch (sequences)", 1, "number_input", None),  # bound to the URL
        ("attention_ops", "ops_new", 10**7, "new tokens N", 200, "number_input", None),  # in a fragment
        ("internals_layout", "int_layout_layer", 999, "layer", 0, "number_input", None),  # bounded by the model
        ("step_through", "step_top_k", 999, "top-k", 40, "number_input", "Prompt"),
        ("step_through", "step_temperature", [9.0], "temperature", 0.8, "slider", "Prompt"),
        ("internals_eviction", "evict_keep", ["33"], "budget", 25, "select_slider", None),  # not one of the options
    ],
)
def test_every_page_names_a_value_it_refuses_over_the_websocket(
    server_url, page, key, value, name, default, kind, popover
):
    state, box = send_value(server_url, page, key, value, kind, popover)
    _refused_once(state, name, str(default))
    if kind == "number_input":  # the box shows what the page used (a URL-bound box: its own first value)
        assert box.value == default if box.set_value else box.default == default
    assert "Traceback" not in server_log(server_url).read_text(errors="replace")
