"""Routing: the workaround that makes app.py the router from a fresh server's first run (ensure_router, the one
place kvviz touches Streamlit's private page registry), and the one guard on Streamlit's number box that no page can
place (refuse_non_finite_numbers: Infinity and NaN from the WebSocket)."""
from __future__ import annotations

import sys

import streamlit as st

from kvviz.ui.language import apply_language


def refuse_non_finite_numbers() -> None:
    """Infinity or NaN sent over the WebSocket for a whole-number box: Streamlit 1.67's NumberInputSerde.deserialize
    calls int() on it before any page code runs (SessionState.on_script_will_rerun compares every widget's old and
    new value), so OverflowError / ValueError replaces the page, and every run after it, until a reload. Here such
    a value deserializes as the widget's own value, as Streamlit already does for a number past the box's bounds;
    kvviz.ui.bounded then reads what the browser sent and names it like any other refused value. The second place
    kvviz touches a private Streamlit name; applied once per process, when this module is imported."""
    import math

    from streamlit.elements.widgets.number_input import NumberInputSerde

    if getattr(NumberInputSerde.deserialize, "kvviz_finite", False):
        return
    original = NumberInputSerde.deserialize

    def deserialize(self, ui_value):
        if isinstance(ui_value, float) and not math.isfinite(ui_value):
            ui_value = None  # the widget's own value (kvviz.ui.bounded names what was sent)
        return original(self, ui_value)

    deserialize.kvviz_finite = True
    NumberInputSerde.deserialize = deserialize


refuse_non_finite_numbers()


def ensure_router() -> None:
    """Make app.py the router from the very first run of a fresh server, even on a deep link; set the language.

    Streamlit 1.67 (upstream: streamlit/streamlit#10276, #9624): a fresh process sees the `pages/` folder and sets
    the class flag `PagesManager.uses_pages_directory`; the script runner then runs that first session's first run
    in the legacy multipage mode (`_mpa_v1`): it sends the client a page list of every file in pages/ plus the
    main script ("app", "internals shared": what a class saw flash in the sidebar) and executes the deep-linked page
    file by itself, without app.py. Only a call to `st.navigation` clears the flag. Clearing it and calling
    st.rerun() is not enough: the client is told the run has finished (the main area blank, the legacy list shown)
    and the page comes only with the rerun, seconds later on a busy laptop. So, with the legacy list
    hidden (`client.showSidebarNavigation = false` in .streamlit/config.toml; app.py draws the navigation itself),
    a page file run alone runs app.py in place, inside this same run: app.py's `st.navigation` routes to the page
    the URL asked for and draws it, and st.stop() ends the outer copy. One run, no rerun, no blank page.
    Called from app.py (the router itself, run as the legacy main page by AppTest), clearing the flag is enough.
    PagesManager and the script context's page registry are Streamlit's private API: this is the one place kvviz
    touches them.
    """
    from streamlit.runtime.pages_manager import PagesManager

    PagesManager.uses_pages_directory = False
    caller = sys._getframe(1).f_globals.get("__file__")  # app.py is the router itself: clearing the flag is enough
    if _in_a_legacy_run(caller):
        _run_router_in_place()
        st.stop()
    apply_language()


def _in_a_legacy_run(caller: str | None) -> bool:
    """Whether `caller`, a page file, runs by itself, routed by the legacy pages/ mode: the run's page registry lists
    the main script (st.navigation's registry never does). Read per run, not from the class flag: two first
    visitors on a fresh server may both start in legacy mode before either clears the flag."""
    import os

    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx(suppress_warning=True)
    if ctx is None:
        return False
    main = os.path.realpath(ctx.pages_manager.main_script_path)
    if caller is None or os.path.realpath(caller) == main:
        return False
    return any("url_pathname" in page and os.path.realpath(page.get("script_path") or "") == main
               for page in ctx.pages_manager.get_pages().values())


def _run_router_in_place() -> None:
    """Execute the main script (app.py) inside the current run, as Streamlit's own Page.run executes a page."""
    import types

    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    main = ctx.pages_manager.main_script_path
    module = types.ModuleType("__main__")
    module.__dict__["__file__"] = str(main)
    # Under the main script's hash, as a normal run executes app.py: widget ids depend on it, and the sidebar's
    # widgets drawn here must be the same widgets in every later run (else the model radio forgot its choice).
    with ctx.run_with_active_hash(ctx.pages_manager.main_script_hash):
        exec(ctx.pages_manager.get_page_script_byte_code(str(main)), module.__dict__)  # noqa: S102
