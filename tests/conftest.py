"""Shared fixtures: the real bundled model, loaded once per test session (no stubs, no network); for the browser
tests a server per pytest worker (a fresh one where a test needs it), the worker's headless Chromium (a tab per
module, or the tabs a test opens, closed after it: reset and kept for a later test, support.browser.close_tab) and a
busy core.
Helpers (open a page, start a server, read a browser page) live in tests/support/; test modules import them from
there, never from this file or from each other (tests/test_test_harness.py checks)."""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile

import pytest

# Never touch the network in tests: the pretrained-model path must fail fast and offline.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# One torch thread per test process, and per server and command it starts (they inherit it), as kvviz's own server
# runs (kvviz.ui.models.INTERACTIVE_TORCH_THREADS): the suite runs four workers and their servers on two cores, where
# a second OpenMP thread only waits at each barrier for a thread the other processes hold. Measured under the
# suite's load (load average 9-10): an eviction sweep's two prefills took 0.3 s of CPU and 0.7-1.0 s wall with one
# thread, 1.4-1.7 s of CPU and 4.5-5.6 s wall with two. A test that times threads sets its own (kvviz.speedup).
os.environ.setdefault("OMP_NUM_THREADS", "1")
# Nor the user's data folder: the default class-poll store (kvviz.poll.store.default_path, under $XDG_DATA_HOME) is a
# temporary folder of this test process and of the servers it starts. A store there that another checkout migrated
# further failed this one's tests.
os.environ["XDG_DATA_HOME"] = tempfile.mkdtemp(prefix="kvviz-test-data-")

from kvviz.model.loading import LoadedModel  # noqa: E402  (torch-free: the loaders are imported in the fixtures)
from support import tiers  # noqa: E402
from support.browser import busy_core as one_core_kept_busy  # noqa: E402
from support.browser import chromium, fresh_server, new_tab, require_chromium, stop_chromium

atexit.register(shutil.rmtree, os.environ["XDG_DATA_HOME"], ignore_errors=True)  # the servers have stopped by then


# ----- tiers (support/tiers.py says what each is) ---------------------------------------------------------------
def pytest_addoption(parser):
    parser.addoption(
        "--all-tiers",
        action="store_true",
        help="kvviz: run every tier (pure, model, app, browser, slow); a bare run takes the pure tier only",
    )


def _tiers_of(item) -> set[str]:
    return {mark.name for mark in item.iter_markers() if mark.name in tiers.TIERS}


def _pure_tier_only(config) -> bool:
    """A bare `pytest` keeps the pure tier (like transformers without RUN_SLOW); -m or --all-tiers choose, and a test
    named by its id (tests/test_x.py::test_y) runs whatever its tier: the developer asked for it."""
    return not (config.getoption("--all-tiers") or config.getoption("-m") or any("::" in a for a in config.args))


def _empties_the_data_cache(path) -> bool:
    """The module's tests empty st.cache_data: through the fresh_streamlit_caches fixture, or by hand."""
    source = path.read_text(encoding="utf-8") if path.suffix == ".py" else ""
    return "fresh_streamlit_caches" in source or "cache_data.clear()" in source


def pytest_collection_modifyitems(config, items):
    first = {name: rank for rank, name in enumerate(tiers.BROWSER_RUN_LONGEST_FIRST)}
    # The modules that empty Streamlit's data cache go last, so that what the other AppTests share is computed once
    # per worker: between two clears each AppTest module that opened the eviction page measured its whole sweep
    # again, about 10 CPU-s each time (docs/architecture.md, the tiers).
    clearing = {path for path in {item.path for item in items} if _empties_the_data_cache(path)}
    # a stable sort: the rest keep their order
    items.sort(key=lambda item: (first.get(item.path.name, len(first)), item.path in clearing))
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
            "inside a fixture or the test, so that a bare `pytest` never loads torch"
        )
    tiers.watch_imports()  # from here on every import that reaches torch is counted (the tier check reads it)


def pytest_unconfigure(config):
    tiers.watch_imports(on=False)


def pytest_report_header(config):
    if not _pure_tier_only(config):
        return None
    return "kvviz: a bare run takes the pure tier; -m model|app|browser|slow or --all-tiers for the rest"


# ----- the tier check: a pure test (no tier marker) loads no torch, runs no AppTest, starts no server ------------
# What a test did is what the counts in support.tiers grew by from the start of its setup (its module and session
# fixtures included) to the end of its call, whatever ran before it in the worker; a fixture that grew a count when
# it was set up (for an earlier test) is remembered, so a later test that reuses it is caught as well.
_counts_at_setup = pytest.StashKey[dict]()
_fixture_did: dict[object, set[str]] = {}  # a fixture's definition -> the counts its setup grew


def _grew(before: dict[str, int]) -> list[str]:
    return [kind for kind in tiers.MARKER_OF if tiers.built[kind] > before[kind]]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    item.stash[_counts_at_setup] = dict(tiers.built)
    tiers.forget_routes()
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef, request):
    before = dict(tiers.built)
    result = yield
    if grew := _grew(before):
        _fixture_did.setdefault(fixturedef, set()).update(grew)
    return result


def _tier_offence(item) -> str | None:
    """Why `item`, a test without a tier marker, is not pure, naming the marker it needs; None when it is pure."""
    for kind in _grew(item.stash[_counts_at_setup]):
        route = tiers.first_torch_route[0] if kind == "torch" and tiers.first_torch_route else ()
        how = f" ({' -> '.join(route)})" if len(route) > 1 else ""  # which module of ours took it there
        return f"this test {tiers.WHAT[kind]}{how}: mark it @pytest.mark.{tiers.MARKER_OF[kind]}"
    info = getattr(item, "_fixtureinfo", None)  # which definition each of the test's fixture names is
    for name in getattr(item, "fixturenames", ()):
        for fixturedef in (info.name2fixturedefs.get(name, ()) if info else ())[-1:]:
            for kind in sorted(_fixture_did.get(fixturedef, ())):
                return (
                    f"this test uses the fixture {name}, which {tiers.WHAT[kind]} when it was set up: "
                    f"mark it @pytest.mark.{tiers.MARKER_OF[kind]}"
                )
    return None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    """A test without a tier marker is pure: it must not load torch, build an AppTest or start a server. It fails
    naming the marker it needs, so the fast tier stays fast and a bare run stays honest."""
    result = yield  # a test that failed already fails for its own reason
    if not _tiers_of(item) and (offence := _tier_offence(item)):
        pytest.fail(offence, pytrace=False)
    return result


@pytest.fixture(scope="session")
def bundled() -> LoadedModel:
    """The bundled GPT-2 with eager attention (so attention weights can be read)."""
    from kvviz.model.loaders import load_model  # torch at its top: collecting never imports it

    return load_model("bundled", attn_implementation="eager")


@pytest.fixture(scope="session")
def sdpa_model() -> LoadedModel:
    """The bundled GPT-2 with SDPA attention, as the benchmark page loads it."""
    from kvviz.model.loaders import load_model  # torch at its top: collecting never imports it

    return load_model("bundled", attn_implementation="sdpa")


@pytest.fixture(scope="session")
def poll_db(tmp_path_factory) -> str:
    """The worker's class-poll store, the shared server's (shared_app_url): a SQLite file (its SQLAlchemy URL). Each
    poll test opens rooms of its own in it, as the classes of one school share a store."""
    return f"sqlite:///{tmp_path_factory.mktemp('poll') / 'poll.sqlite3'}"


@pytest.fixture(scope="session")
def shared_app_url(poll_db):
    """One `streamlit run app.py` per pytest worker (skips without Chromium), on the worker's poll store (poll_db),
    shared by its browser modules, the poll's included: a server start and its first page cost about 12 s on 2 cores
    (torch, the bundled model, the page's code), once per worker rather than once per module. A class's server serves
    many sessions too; a test about a fresh server's first visitor asks for fresh_app_url."""
    with fresh_server(env={"KVVIZ_POLL_DB": poll_db}) as url:
        yield url


@pytest.fixture(scope="module")
def app_url(shared_app_url):
    """The worker's shared server (shared_app_url): its URL."""
    return shared_app_url


@pytest.fixture(scope="module")
def fresh_app_url():
    """A fresh `streamlit run app.py` for the module (nothing run yet: a fresh server's first visitor); its URL."""
    with fresh_server() as url:
        yield url


@pytest.fixture(scope="module")
def poll_url(shared_app_url):
    """The server of the class-poll tests: the worker's shared one, on its poll store (poll_db); its URL."""
    return shared_app_url


@pytest.fixture(scope="module")
def page(app_url):
    """A headless Chromium tab (1400x1000) on the module's server, shared by the module's tests."""
    with chromium() as browser:
        yield new_tab(browser, width=1400, height=1000, timeout_ms=90_000)


@pytest.fixture
def browser():
    """Debian's headless Chromium for one test (skips without it): the worker's one Chromium, the tabs the test opened
    closed after it (support.browser.close_tab); new_tab / open_tab open its tabs."""
    require_chromium()
    with chromium() as launched:
        yield launched


@pytest.fixture(autouse=True)
def no_chromium_beside_asyncio(request):
    """A test module that runs asyncio clients (the load tests' protocol-level students) runs with the worker's
    Chromium stopped: Playwright's sync API holds an event loop in its thread while it runs, and asyncio.run cannot
    start beside it."""
    if "asyncio" in vars(request.module):
        stop_chromium()


@pytest.fixture(autouse=True, scope="session")
def chromium_stopped_at_the_end():
    yield
    stop_chromium()


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
