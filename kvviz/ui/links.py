"""Links kvviz builds and reads: every link carries the language and the session's model; number values a link
holds that no widget could take are dropped before the page draws them."""

from __future__ import annotations

import contextlib

import streamlit as st

from kvviz import i18n

MODEL_SPEC_KEY = "model_spec"  # the session's model (its spec), chosen in the sidebar: every link carries it
MODEL_QUERY_PARAM = "model"  # a link's model: its spec (bundled name, offered name, hub name, random:shape)


def link_params() -> dict[str, str]:
    """What every link kvviz builds carries: the language and the model (see add_model_to_link)."""
    return add_model_to_link({i18n.QUERY_PARAM: i18n.current()})


def add_model_to_link(params: dict[str, str]) -> dict[str, str]:
    """`params` with the session's model added (?model=<spec>): every link kvviz builds calls this, so a student
    opening a teacher's link gets the teacher's model; the sidebar applies it (kvviz.ui.sidebar), and sets the
    session's model before any page draws (a page run alone, as in a test, has none: its links name no model)."""
    spec = st.session_state.get(MODEL_SPEC_KEY)
    return {**params, MODEL_QUERY_PARAM: spec} if spec else dict(params)


def drop_refused_link_numbers(keys: list[str], notices_key: str) -> list[str]:
    """Before a page's URL-bound number inputs are drawn: link values that are no whole number (inf, 1e309,
    thousands of digits, words) are taken out of the URL and the page reruns once without them; returns the
    notices saying what was ignored (shown once). Streamlit's number_input raises OverflowError on such a value
    while it seeds itself from the URL (kvviz.inputs.query_values checks the text before any widget parses it)."""
    from kvviz.inputs import query_values

    refused = query_values.refused_link_numbers(
        {k: st.query_params.get_all(k) for k in keys if k in st.query_params}, keys
    )
    if refused:
        for key in refused:
            with contextlib.suppress(Exception):  # already bound by an earlier run: Streamlit keeps the widget's value
                del st.query_params[key]
        st.session_state[notices_key] = [*st.session_state.get(notices_key, []), *refused.values()]
        st.rerun()  # the rerun's link no longer holds them (st.query_params updates the run's query string)
    return st.session_state.pop(notices_key, [])


def visit_opened_naming(key: str) -> bool:
    """Whether this visit to the page was opened by a link that names `key` (a URL-bound widget's key): decided on the
    visit's first run (the widget's state is dropped when the reader leaves the page, so its absence marks a new
    visit) and kept for the whole visit, so a layout chosen for the link never jumps under the reader."""
    opened = f"{key}_opened_by_link"
    if key not in st.session_state:
        st.session_state[opened] = key in st.query_params
    return bool(st.session_state.get(opened))
