"""Routing, and the one module where kvviz reads a private Streamlit name (Streamlit 1.67, pinned in
requirements.txt; tests/test_streamlit_private.py fails if any other module does):

- ensure_router: the workaround that makes app.py the router from a fresh server's first run (Streamlit's page
  registry);
- refuse_non_finite_numbers: the one guard on Streamlit's number box that no page can place (Infinity and NaN from
  the WebSocket);
- sent_value: what the browser sent for a widget this run, before Streamlit reset it (kvviz.ui.bounded names a
  refused value with it);
- option_widget_keys: which keyed widgets keep a shown label (kvviz.ui.language keeps their choices across a
  language switch).

Each says why no public API does it. After a Streamlit upgrade, this module is the one to read again."""

from __future__ import annotations

import math
import os
import sys
import types

import streamlit as st

from kvviz.ui.language import apply_language, read_option_widgets_with


def refuse_non_finite_numbers() -> None:
    """Infinity or NaN sent over the WebSocket for a whole-number box: Streamlit 1.67's NumberInputSerde.deserialize
    calls int() on it before any page code runs (SessionState.on_script_will_rerun compares every widget's old and
    new value), so OverflowError / ValueError replaces the page, and every run after it, until a reload. Here such
    a value deserializes as the widget's own value, as Streamlit already does for a number past the box's bounds;
    kvviz.ui.bounded then reads what the browser sent (sent_value) and names it like any other refused value. Applied
    once per process, when this module is imported."""
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


NOT_SENT = object()  # sent_value: the browser sent nothing for that widget this run (or Streamlit's internals moved)


def sent_value(key: str):
    """The value the browser sent this run for the widget `key`, as it sent it (a number, a list for a slider, a
    list of option labels for a select_slider), or NOT_SENT.

    Why private: Streamlit 1.67 deserializes a widget's value before any page code or callback runs, and a value
    past a number box's or a slider's bounds, or a label no option has, comes out as the widget's `value` without a
    word (NumberInputSerde, SliderSerde, SelectSliderSerde). st.session_state and an on_change callback see only
    that reset value; st.query_params holds a link's raw value but not one sent over the WebSocket. So the run's
    request is read (ScriptRequests._rerun_data, the widget states as sent) with the key's widget id
    (SessionState._key_id_mapper). If those internals change, nothing is read (NOT_SENT): Streamlit's silent reset,
    and the tests that send such values (tests/test_page_bounds.py, test_hostile_round5.py) fail."""
    try:
        from streamlit.runtime.scriptrunner import get_script_run_ctx
        from streamlit.runtime.state.common import unpack_widget_state_value
        from streamlit.runtime.state.session_state_proxy import get_session_state

        ctx = get_script_run_ctx(suppress_warning=True)
        widget_id = get_session_state()._state._key_id_mapper.get_id_from_key(key, None)
        sent = ctx.script_requests._rerun_data.widget_states if ctx and ctx.script_requests else None
        if not widget_id or sent is None:
            return NOT_SENT
        for state in sent.widgets:
            if state.id == widget_id:
                value = unpack_widget_state_value(state)
                return value if isinstance(value, str | int | float | None) else list(value)  # an array: a list
        return NOT_SENT
    except Exception:  # noqa: BLE001 - private API gone or changed: Streamlit's silent reset, as before
        return NOT_SENT


def option_widget_keys() -> list[str]:
    """The session's keyed widgets that keep their value as a shown label: radio, selectbox, multiselect, segmented
    control, pills, select slider (their value decoder is an options widget's, which has a format_func).

    Why private: st.session_state holds every widget's value but not its kind, and writing a value back to a
    button's, an uploader's, a data editor's or a chart selection's key raises when that widget is drawn; Streamlit
    1.67 says which is which only in its widget metadata (SessionState._new_widget_state.widget_metadata, by the
    id from SessionState._key_id_mapper). Another Streamlit: [] (no choice kept across a language switch, nothing
    broken), and the language round trip in tests/test_browser_i18n.py fails."""
    from streamlit.runtime.state import get_session_state

    try:
        state = get_session_state()._state  # SessionState behind st.session_state's proxy
        metadata = state._new_widget_state.widget_metadata
        return [
            key
            for key in list(st.session_state.keys())
            if (wid := state._key_id_mapper.get_id_from_key(key)) in metadata
            and hasattr(getattr(metadata[wid].deserializer, "__self__", None), "format_func")
        ]
    except (AttributeError, KeyError):
        return []


read_option_widgets_with(option_widget_keys)  # kvviz.ui.language cannot import this module (it imports language)


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
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx(suppress_warning=True)
    if ctx is None:
        return False
    main = os.path.realpath(ctx.pages_manager.main_script_path)
    if caller is None or os.path.realpath(caller) == main:
        return False
    return any(
        "url_pathname" in page and os.path.realpath(page.get("script_path") or "") == main
        for page in ctx.pages_manager.get_pages().values()
    )


def _run_router_in_place() -> None:
    """Execute the main script (app.py) inside the current run, as Streamlit's own Page.run executes a page."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    main = ctx.pages_manager.main_script_path
    module = types.ModuleType("__main__")
    module.__dict__["__file__"] = str(main)
    # Under the main script's hash, as a normal run executes app.py: widget ids depend on it, and the sidebar's
    # widgets drawn here must be the same widgets in every later run (else the model radio forgot its choice).
    with ctx.run_with_active_hash(ctx.pages_manager.main_script_hash):
        exec(ctx.pages_manager.get_page_script_byte_code(str(main)), module.__dict__)  # noqa: S102
