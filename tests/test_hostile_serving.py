"""Serving a class the easy way is the safe way: a server listening beyond loopback runs in shared mode unless the
teacher says otherwise, the sidebar says which mode it runs in, and a link's ?model= never loads (or downloads) a
model its reader did not choose: the reader is told what it costs and asked first. The real sidebar in AppTest."""

from __future__ import annotations

import pytest
from streamlit import config as st_config

from kvviz.model import loading, shared_mode
from kvviz.ui import models, sidebar
from support.pages import app_test


def _picker_and_page() -> None:
    import streamlit as st

    from kvviz.ui import models, sidebar

    sidebar.sidebar_model_picker()
    st.markdown(f"model in use: {models.current_model().info.spec}")


def _rss_bytes() -> int:
    with open("/proc/self/statm") as statm:
        import os

        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.fixture
def listening_on(monkeypatch):
    """Set Streamlit's server.address for the test (as `--server.address` does), restored after."""
    before = st_config.get_option("server.address")

    def listen(address: str | None) -> None:
        st_config.set_option("server.address", address)

    yield listen
    st_config.set_option("server.address", before)


@pytest.mark.parametrize(
    ("switch", "address", "shared"),
    [
        (None, "0.0.0.0", True),
        (None, "::", True),
        (None, None, True),
        (None, "", True),  # None: every interface
        (None, "192.168.1.20", True),
        (None, "class.example.org", True),
        (None, "[::]", True),
        (None, "127.0.0.1", False),
        (None, "::1", False),
        (None, "localhost", False),
        (None, "127.0.0.2", False),
        ("0", "0.0.0.0", False),
        ("off", "::", False),  # the teacher's explicit say-so
        ("1", "127.0.0.1", True),
        ("yes", "localhost", True),
        ("maybe", "127.0.0.1", True),  # only an explicit off is off
    ],
)
def test_shared_mode_follows_the_listening_address_unless_the_switch_says(switch, address, shared):
    environ = {} if switch is None else {shared_mode.ENV_SWITCH: switch}
    assert shared_mode.shared_mode_on(environ, listen_address=address) is shared


@pytest.mark.app
def test_a_server_on_every_interface_with_no_switch_refuses_a_gpt2_xl_link(
    monkeypatch, listening_on, fresh_streamlit_caches
):
    """`streamlit run app.py --server.address 0.0.0.0` and nothing else: shared mode, so /step?model=random:gpt2-xl
    (6 GiB of float32 weights, 45 s of CPU) is refused in one line, and the server's memory does not grow by it."""
    monkeypatch.delenv(shared_mode.ENV_SWITCH, raising=False)
    monkeypatch.setenv(shared_mode.ENV_CONFIG, "/nonexistent/kvviz_shared.toml")  # no list: bundled models only
    listening_on("0.0.0.0")
    at = app_test(_picker_and_page)
    at.run()  # the bundled model loaded first, so the growth measured below is the link's alone
    rss_before = _rss_bytes()
    at = app_test(_picker_and_page, query={"model": "random:gpt2-xl"})
    at.run()
    grown_mib = (_rss_bytes() - rss_before) / 2**20
    assert not at.exception
    assert at.session_state["model_spec"] == "bundled" and at.query_params["model"] == "bundled"
    assert [w.value for w in at.sidebar.warning] == [
        sidebar.LINKED_MODEL_REFUSED.format(model=loading.bundled_info().shown_label())
    ]
    assert grown_mib < 200, grown_mib  # gpt2-xl would add about 6,000 MiB
    assert any(sidebar.MODE_SHARED in m.value for m in at.sidebar.markdown)  # the page says which mode


@pytest.mark.app
def test_the_teachers_explicit_off_on_every_interface_is_said_in_the_sidebar(
    monkeypatch, listening_on, fresh_streamlit_caches
):
    monkeypatch.setenv(shared_mode.ENV_SWITCH, "0")
    listening_on("0.0.0.0")
    at = app_test(_picker_and_page)
    at.run()
    assert not at.exception and at.sidebar.radio(key="app_model_kind")  # the free-form picker
    assert any(sidebar.MODE_OPEN in m.value for m in at.sidebar.markdown)


@pytest.mark.app
def test_a_links_model_waits_for_the_reader_with_its_cost_on_a_laptop(monkeypatch, fresh_streamlit_caches):
    """Localhost, shared mode off: a link naming random:gpt2-medium loads nothing until the reader says yes; the
    question states its parameters and memory; 'Stay' keeps the model and puts the address right. A bundled
    model's link loads without asking."""
    monkeypatch.delenv(shared_mode.ENV_SWITCH, raising=False)
    at = app_test(_picker_and_page, query={"model": "random:gpt2-medium"})
    at.run()
    assert not at.exception
    assert at.session_state["model_spec"] == "bundled" and at.query_params["model"] == "random:gpt2-medium"
    assert any(sidebar.MODE_LOCAL in m.value for m in at.sidebar.markdown)
    question = " ".join(m.value for m in at.sidebar.markdown if "This link asks for the model" in m.value)
    n_params = loading.estimate_load("random:gpt2-medium").n_params
    assert f"{n_params:,} parameters" in question and "1.3 GiB" in question, question
    assert ("random:gpt2-medium", "eager") not in models._loaded_keys
    at.run()  # a rerun asks again, still loading nothing
    assert at.session_state["model_spec"] == "bundled" and at.sidebar.button(key="app_model_link_load")
    at.sidebar.button(key="app_model_link_stay").click().run()
    assert not at.exception
    assert at.session_state["model_spec"] == "bundled" and at.query_params["model"] == "bundled"
    assert not [m for m in at.sidebar.markdown if "This link asks" in m.value]

    at = app_test(_picker_and_page, query={"model": "bundled-gqa"})
    at.run()
    assert at.session_state["model_spec"] == "bundled-gqa" and not at.sidebar.warning


def test_a_links_cost_is_known_before_any_weight():
    assert loading.estimate_load("random:gpt2-xl") == loading.LoadEstimate(1_557_611_200, downloads=False)
    assert loading.estimate_load("random:nope").n_params is None
    assert loading.estimate_load("/no/such/folder") == loading.LoadEstimate(None, downloads=False)
