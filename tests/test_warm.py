"""The server's warm-up (kvviz.ui.warm): it loads the bundled model into the very cache entry the pages read, under
the server's policy, and a page waiting for that load is not told another model is loading. The thread itself runs
in a real server: tests/test_browser_warm.py."""

from __future__ import annotations

import pytest
from streamlit import config as st_config

from kvviz.model import loading, shared_mode
from kvviz.ui import models, warm


@pytest.fixture
def listening_on(monkeypatch):
    """Streamlit's server.address set for the test (as `--server.address` does), restored after; no KVVIZ_SHARED."""
    monkeypatch.delenv(shared_mode.ENV_SWITCH, raising=False)
    before = st_config.get_option("server.address")
    yield lambda address: st_config.set_option("server.address", address)
    st_config.set_option("server.address", before)


@pytest.mark.model
@pytest.mark.parametrize("address", ["127.0.0.1", "0.0.0.0"], ids=["localhost", "shared"])
def test_the_warm_up_fills_the_entry_a_page_reads(address, listening_on, fresh_streamlit_caches):
    """After preload_model, cached_model (what every page gets its model through) returns that very object, in
    shared mode too (the cap and the no-download flag are part of the cache key): nothing loads twice."""
    listening_on(address)
    assert models.current_policy().enabled is (address == "0.0.0.0")
    warmed = models.preload_model(loading.BUNDLED, "eager")
    assert models.cached_model(loading.BUNDLED, "eager") is warmed
    assert models.cached_model(loading.BUNDLED, "sdpa") is not warmed  # another entry: the key is honest


def test_a_page_waiting_for_the_warm_up_is_not_told_another_model_is_loading(monkeypatch):
    """While the warm-up loads the bundled model, a page asking for it waits under the usual spinner, without the
    'Another model is loading on this server' notice (it is its own model); another model's wait still says so."""
    shown: list[str] = []
    monkeypatch.setattr(loading, "load_busy_for_s", lambda: 3.0)
    monkeypatch.setattr(models, "_cached_load", lambda *args: args[0])
    monkeypatch.setattr(models.st, "info", lambda text, **kwargs: shown.append(text))
    monkeypatch.setattr(models, "_loaded_keys", set())
    monkeypatch.setattr(models, "_preloading", {(loading.BUNDLED, "eager")})
    assert models.cached_model(loading.BUNDLED, "eager") == loading.BUNDLED
    assert shown == []
    assert models.cached_model("bundled-gqa", "eager") == "bundled-gqa"
    assert len(shown) == 1 and "Another model is loading" in shown[0]


def test_no_warm_up_starts_under_apptest(monkeypatch):
    """A test process opens many pages and loads models on purpose: app.py's start does nothing under AppTest."""
    started: list[float] = []
    monkeypatch.setattr(warm, "start", lambda delay_s=0.0, wait_for_runtime=False: started.append(delay_s) or True)
    before = st_config.get_option("global.appTest")
    try:
        st_config.set_option("global.appTest", True)
        assert warm.start_after_page() is False
        st_config.set_option("global.appTest", False)
        assert warm.start_after_page(delay_s=2.0) is True
    finally:
        st_config.set_option("global.appTest", before)
    assert started == [2.0]
