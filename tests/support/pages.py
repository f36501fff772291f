"""Open a page the way a test needs it: a page file (or a function) by itself, or through app.py's router as a
browser opens a link; in a language; with a link's query and a session's state. The one repository root every test
uses, and the shared folder beside it."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from streamlit.testing.v1 import AppTest

from kvviz import i18n
from support import tiers
from support.repo import REPO

PAGES_DIR = REPO / "pages"
SHARED = REPO.parent / "shared"  # ../shared: the source texts kvviz grew from, and the training data
TINY_SHAKESPEARE = SHARED / "data" / "tinyshakespeare.txt"  # the corpus the bundled models were trained on
APP_TIMEOUT_S = 120  # AppTest default_timeout: generous, the CI machine has 2 shared cores


def _scan_installed_components_once() -> None:
    """A new AppTest's first run scans every installed package's metadata for Streamlit components
    (streamlit.components.v2.manifest_scanner.scan_component_manifests, looked up by name at each scan): about 480
    scans in the model, app and slow tiers, 40 CPU-s (docs/architecture.md, the tiers; `python bench/apptest_scan.py`
    measures one). The installed packages do not change while the tests run, so each test process scans once and
    keeps the answer. Test side only: a server scans once at its start. Not public API, so if an upgrade moves the
    scanner nothing is kept, and the tests only run slower."""
    try:
        from streamlit.components.v2 import manifest_scanner
    except ImportError:
        return
    scan = getattr(manifest_scanner, "scan_component_manifests", None)
    if scan is not None and not hasattr(scan, "cache_info"):
        manifest_scanner.scan_component_manifests = functools.cache(scan)


_scan_installed_components_once()


def app_test(
    page: str | Path | Callable[[], None] = "app.py",
    *,
    lang: str | None = None,
    query: Mapping[str, str] | None = None,
    session_state: Mapping[str, Any] | None = None,
    timeout: float = APP_TIMEOUT_S,
) -> AppTest:
    """`page` ("app.py", "pages/memory_budget.py", relative to the repository, or a whole path; or a function, run as
    a page of its own) as an AppTest, not run yet; its link carries the language (?lang=) first, then `query`; its
    session starts with `session_state` (a request a browser could not make, a model already chosen)."""
    tiers.count("apptest")
    if callable(page):
        at = AppTest.from_function(page, default_timeout=timeout)
    else:
        at = AppTest.from_file(str(REPO / page), default_timeout=timeout)
    if lang is not None:
        at.query_params[i18n.QUERY_PARAM] = lang
    for key, value in (query or {}).items():
        at.query_params[key] = value
    for key, value in (session_state or {}).items():
        at.session_state[key] = value
    return at


def open_page(
    page: str | Path | Callable[[], None] = "app.py",
    *,
    lang: str | None = None,
    query: Mapping[str, str] | None = None,
    session_state: Mapping[str, Any] | None = None,
    router: bool = False,
    timeout: float = APP_TIMEOUT_S,
    check: bool = True,
) -> AppTest:
    """`page` run once, in `lang` with `query` in its link and `session_state` in its session. router=True opens it
    as a browser opens /<page>?<query>: app.py runs with the link, then switches to the page (page links need
    st.navigation). check: no exception on the page."""
    at = app_test("app.py" if router else page, lang=lang, query=query, session_state=session_state, timeout=timeout)
    at.run()
    if router and str(page) != "app.py":
        at.switch_page(
            str(page)
        ).run()  # (conftest: AppTest's side re-reads translated labels in the session's language)
    if check:
        assert not at.exception, [e.value for e in at.exception]
    return at
