"""kvviz: learn the transformer KV cache with a real GPT-2. Router only: `streamlit run app.py`."""
from __future__ import annotations

import streamlit as st

from kvviz import ui

ui.ensure_router()  # a fresh server's first run would otherwise ignore st.navigation below
st.set_page_config(
    page_title="kvviz: the KV cache, step by step", page_icon=":material/view_timeline:", layout="wide"
)

ui.sidebar_model_picker()

pages = [
    st.Page("pages/lesson.py", title="Lesson", icon=":material/school:"),
    st.Page("pages/home.py", title="Start here", icon=":material/home:", default=True),
    st.Page("pages/step_through.py", title="Step through generation", icon=":material/step:"),
    st.Page("pages/attention_patterns.py", title="Attention patterns", icon=":material/grid_view:"),
    st.Page("pages/attention_ops.py", title="Count the work", icon=":material/calculate:"),
    st.Page("pages/memory_budget.py", title="Memory budget", icon=":material/memory:"),
    st.Page("pages/speedup.py", title="Measured speed-up", icon=":material/timer:"),
    st.Page("pages/claims.py", title="Claims checked", icon=":material/fact_check:"),
    st.Page("pages/glossary.py", title="Glossary", icon=":material/menu_book:"),
    st.Page("pages/teachers.py", title="For teachers", icon=":material/co_present:"),
]
internals = [  # the "Cache internals" section: one small page per idea
    st.Page("pages/internals_layout.py", title="Memory layout", icon=":material/grid_on:"),
    st.Page("pages/internals_prefix.py", title="Prefix reuse", icon=":material/content_copy:"),
    st.Page("pages/internals_crossattn.py", title="Cross-attention", icon=":material/compare_arrows:"),
    st.Page("pages/internals_window.py", title="Sliding windows", icon=":material/view_week:"),
    st.Page("pages/internals_paging.py", title="Paged blocks", icon=":material/view_module:"),
    st.Page("pages/internals_quant.py", title="Quantized caches", icon=":material/compress:"),
    st.Page("pages/internals_speculative.py", title="Speculative rollback", icon=":material/undo:"),
]
st.navigation({"": pages, "Cache internals": internals}, expanded=True).run()
ui.warm_up_in_background()  # torch + transformers import while the user reads the first page
