"""Shared fixtures: the real bundled model, loaded once per test session (no stubs, no network); for the browser
tests a fresh server per module, a headless Chromium (a tab per module, or a browser per test) and a busy core.
Helpers (open a page, start a server, read a browser page) live in tests/support/; test modules import them from
there, never from this file or from each other (tests/test_test_harness.py checks)."""
from __future__ import annotations

import os
import sys

import pytest

# Never touch the network in tests: the pretrained-model path must fail fast and offline.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from kvviz.model.loading import LoadedModel, load_model  # noqa: E402  (torch only when a model loads)
from support import tiers  # noqa: E402
from support.browser import busy_core as one_core_kept_busy  # noqa: E402
from support.browser import chromium, fresh_server, new_tab, require_chromium


# ----- tiers (support/tiers.py says what each is) ---------------------------------------------------------------
def pytest_addoption(parser):
    parser.addoption("--all-tiers", action="store_true",
                     help="kvviz: run every tier (pure, model, app, browser, slow); a bare run takes the pure tier only")


def _tiers_of(item) -> set[str]:
    return {mark.name for mark in item.iter_markers() if mark.name in tiers.TIERS}


def _pure_tier_only(config) -> bool:
    """A bare `pytest` keeps the pure tier (like transformers without RUN_SLOW); -m or --all-tiers choose, and a test
    named by its id (tests/test_x.py::test_y) runs whatever its tier: the developer asked for it."""
    return not (config.getoption("--all-tiers") or config.getoption("-m") or any("::" in a for a in config.args))


def pytest_collection_modifyitems(config, items):
    if not _pure_tier_only(config):
        return
    kept, deselected = [], []
    for item in items:
        (deselected if _tiers_of(item) else kept).append(item)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept


_torch_at_collection: list[str] = []


def pytest_collectreport(report):
    """Collection never loads torch: the first module whose import did is named (a bare run must stay fast)."""
    if not _torch_at_collection and "torch" in sys.modules:
        _torch_at_collection.append(report.nodeid or "conftest.py")


def pytest_collection_finish(session):
    if _torch_at_collection:
        raise pytest.UsageError(
            f"{_torch_at_collection[0]} imports torch when collected: import it (and the kvviz modules that use it) "
            "inside a fixture or the test, so that a bare `pytest` never loads torch")


def pytest_report_header(config):
    if not _pure_tier_only(config):
        return None
    return "kvviz: a bare run takes the pure tier; -m model|app|browser|slow or --all-tiers for the rest"


@pytest.fixture(autouse=True)
def stays_in_its_tier(request):
    """A test without a tier marker is pure: it must not load torch, build an AppTest or start a server. The test
    fails (in teardown) naming the marker it needs, so the fast tier stays fast and a bare run stays honest."""
    pure = not _tiers_of(request.node)
    torch_before = "torch" in sys.modules
    built_before = dict(tiers.built)
    yield
    if not pure:
        return
    if not torch_before and "torch" in sys.modules:
        pytest.fail("this test loaded torch: mark it @pytest.mark.model (or keep torch out of it)")
    if tiers.built["apptest"] > built_before["apptest"]:
        pytest.fail("this test ran a page in AppTest: mark it @pytest.mark.app")
    if tiers.built["server"] > built_before["server"]:
        pytest.fail("this test started a streamlit server: mark it @pytest.mark.browser")


@pytest.fixture(scope="session")
def bundled() -> LoadedModel:
    """The bundled GPT-2 with eager attention (so attention weights can be read)."""
    return load_model("bundled", attn_implementation="eager")


@pytest.fixture(scope="session")
def sdpa_model() -> LoadedModel:
    """The bundled GPT-2 with SDPA attention, as the benchmark page loads it."""
    return load_model("bundled", attn_implementation="sdpa")


@pytest.fixture(scope="module")
def app_url():
    """One fresh `streamlit run app.py` per test module (skips without Chromium); its URL."""
    with fresh_server() as url:
        yield url


@pytest.fixture(scope="module")
def page(app_url):
    """A headless Chromium tab (1400x1000) on the module's server, shared by the module's tests."""
    with chromium() as browser:
        yield new_tab(browser, width=1400, height=1000, timeout_ms=90_000)


@pytest.fixture
def browser():
    """Debian's headless Chromium for one test (skips without it), closed after; new_tab / open_tab open its tabs.
    (One Chromium per test, not per session: Playwright's sync API holds an event loop in its thread while it runs,
    and the load tests' asyncio clients cannot start beside it.)"""
    require_chromium()
    with chromium() as launched:
        yield launched


@pytest.fixture
def busy_core():
    """One core kept busy for the test, as on a laptop serving a class (named before `browser`, it spins first)."""
    with one_core_kept_busy():
        yield


@pytest.fixture(autouse=False)
def fresh_streamlit_caches():
    """Clear st.cache_* between AppTest runs so one test's cached state never leaks into another."""
    import streamlit as st

    st.cache_data.clear()
    st.cache_resource.clear()
    yield
    st.cache_data.clear()
    st.cache_resource.clear()


@pytest.fixture(autouse=True, scope="session")
def apptest_reads_labels_in_the_sessions_language():
    """AppTest re-reads every radio's and selectbox's labels (their format_func) in the test's own thread before
    each run, to send the widgets' values back; a browser sends back what it was shown. With the labels translated
    (kvviz.i18n), that thread must translate into the session's language, as the run that drew them did: the
    test side of AppTest only, the app under test is untouched."""
    from streamlit.testing.v1 import AppTest

    from kvviz import i18n
    from kvviz.ui.language import LANGUAGE_KEY

    original = AppTest.run

    def run(self, *, timeout=None):
        language = self.session_state.get(LANGUAGE_KEY, None)
        if language not in i18n.LANGUAGES:
            return original(self, timeout=timeout)
        with i18n.language(language):
            return original(self, timeout=timeout)

    from streamlit.testing.v1.element_tree import ElementTree

    original_tree_run = ElementTree.run

    def tree_run(self, *, timeout=None):  # widget.set_value(...).run() reads the widgets' labels here, not in run
        at = self._runner
        language = at.session_state[LANGUAGE_KEY] if at is not None and LANGUAGE_KEY in at.session_state else None
        if language not in i18n.LANGUAGES:
            return original_tree_run(self, timeout=timeout)
        with i18n.language(language):
            return original_tree_run(self, timeout=timeout)

    AppTest.run = run
    ElementTree.run = tree_run
    yield
    AppTest.run = original
    ElementTree.run = original_tree_run
