"""kvviz: learn the transformer KV cache with a real GPT-2. Router only: `streamlit run app.py`."""
from __future__ import annotations

import streamlit as st

from kvviz import ui
from kvviz.i18n import _

ui.ensure_router()  # a fresh server's first run is Streamlit's legacy pages/ mode: see its docstring
# An emoji favicon: Streamlit draws it as a data: SVG. A ":material/...:" icon is fetched from fonts.gstatic.com,
# which an offline classroom cannot reach and a privacy-minded one should not call.
st.set_page_config(
    page_title=_("kvviz: the KV cache, step by step"), page_icon="🔑", layout="wide"
)

ui.sidebar_language_switch()  # first in the sidebar, above the navigation: a teacher finds it without scrolling

pages = [
    st.Page("pages/lesson.py", title=_("Lesson"), icon=":material/school:"),
    st.Page("pages/home.py", title=_("Start here"), icon=":material/home:", default=True),
    st.Page("pages/step_through.py", title=_("Step through generation"), icon=":material/step:"),
    st.Page("pages/attention_patterns.py", title=_("Attention patterns"), icon=":material/grid_view:"),
    st.Page("pages/attention_ops.py", title=_("Count the work"), icon=":material/calculate:"),
    st.Page("pages/memory_budget.py", title=_("Memory budget"), icon=":material/memory:"),
    st.Page("pages/speedup.py", title=_("Measured speed-up"), icon=":material/timer:"),
    st.Page("pages/claims.py", title=_("Claims checked"), icon=":material/fact_check:"),
    st.Page("pages/glossary.py", title=_("Glossary"), icon=":material/menu_book:"),
    st.Page("pages/teachers.py", title=_("For teachers"), icon=":material/co_present:"),
]
internals = [  # the "Cache internals" section: one small page per idea
    st.Page("pages/internals_layout.py", title=_("Memory layout"), icon=":material/grid_on:"),
    st.Page("pages/internals_prefix.py", title=_("Prefix reuse"), icon=":material/content_copy:"),
    st.Page("pages/internals_crossattn.py", title=_("Cross-attention"), icon=":material/compare_arrows:"),
    st.Page("pages/internals_window.py", title=_("Sliding windows"), icon=":material/view_week:"),
    st.Page("pages/internals_paging.py", title=_("Paged blocks"), icon=":material/view_module:"),
    st.Page("pages/internals_quant.py", title=_("Quantized caches"), icon=":material/compress:"),
    st.Page("pages/internals_speculative.py", title=_("Speculative rollback"), icon=":material/undo:"),
    st.Page("pages/internals_eviction.py", title=_("What to forget"), icon=":material/delete_sweep:"),
]
sections = {"": pages, _("Cache internals"): internals}
ui.sidebar_navigation(sections)
ui.sidebar_model_picker()
# The navigation is drawn by ui.sidebar_navigation (below the language switch); Streamlit's own list stays hidden
# (client.showSidebarNavigation = false), which also hides the legacy pages/ list of a fresh server's first run.
st.navigation(sections, position="hidden").run()
ui.warm_up_in_background()  # torch + transformers import while the user reads the first page
