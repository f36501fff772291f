"""Links kvviz builds: every link carries the language and the session's model. (A page's own keys in its link
are read and written by kvviz.ui.url_state.)"""

from __future__ import annotations

import streamlit as st

from kvviz import i18n, routes

MODEL_SPEC_KEY = "model_spec"  # the session's model (its spec), chosen in the sidebar: every link carries it


def link_params() -> dict[str, str]:
    """What every link kvviz builds carries: the language and the model (see add_model_to_link)."""
    return add_model_to_link(routes.EVERY_PAGE.query(language=i18n.current()))


def add_model_to_link(params: dict[str, str]) -> dict[str, str]:
    """`params` with the session's model added (?model=<spec>: a bundled name, an offered name, a hub name,
    random:shape; the key is routes.EVERY_PAGE's): every link kvviz builds calls this, so a student
    opening a teacher's link gets the teacher's model; the sidebar applies it (kvviz.ui.sidebar), and sets the
    session's model before any page draws (a page run alone, as in a test, has none: its links name no model)."""
    spec = st.session_state.get(MODEL_SPEC_KEY)
    return {**params, **routes.EVERY_PAGE.query(model=spec)} if spec else dict(params)
