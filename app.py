"""kvviz: learn the transformer KV cache with a real GPT-2. Router only: `streamlit run app.py`."""

from __future__ import annotations

import streamlit as st

from kvviz import routes
from kvviz.i18n import _
from kvviz.ui import language, router, sidebar, warm

router.ensure_router()  # a fresh server's first run is Streamlit's legacy pages/ mode: see its docstring
# An emoji favicon: Streamlit draws it as a data: SVG. A ":material/...:" icon is fetched from fonts.gstatic.com,
# which an offline classroom cannot reach and a privacy-minded one should not call.
st.set_page_config(page_title=_("kvviz: the KV cache, step by step"), page_icon="🔑", layout="wide")

language.sidebar_language_switch()  # first in the sidebar, above the navigation: a teacher finds it without scrolling

sections: dict[str, list] = {}  # section header (translated; "" = the main list) -> its pages, in order
for route in routes.ROUTES:  # the routes table is the one list of pages
    sections.setdefault(_(route.section) if route.section else "", []).append(
        st.Page(route.file, title=_(route.title), icon=route.icon, default=route.default)
    )
sidebar.sidebar_navigation(sections)
sidebar.sidebar_model_picker()
# The navigation is drawn by sidebar.sidebar_navigation (below the language switch); Streamlit's own list stays hidden
# (client.showSidebarNavigation = false), which also hides the legacy pages/ list of a fresh server's first run.
st.navigation(sections, position="hidden").run()
# The bundled model loads in a background thread while the user reads the first page (at once when the server was
# started as `python -m kvviz.ui.warm run app.py`, as deploy/run_class.sh does): kvviz.ui.warm
warm.start_after_page(delay_s=2.0)
