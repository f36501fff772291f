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
    st.Page("pages/home.py", title="Start here", icon=":material/home:", default=True),
    st.Page("pages/step_through.py", title="Step through generation", icon=":material/step:"),
    st.Page("pages/attention_ops.py", title="Count the work", icon=":material/calculate:"),
    st.Page("pages/memory_budget.py", title="Memory budget", icon=":material/memory:"),
    st.Page("pages/speedup.py", title="Measured speed-up", icon=":material/timer:"),
    st.Page("pages/cache_internals.py", title="Cache internals", icon=":material/biotech:"),
]
st.navigation(pages).run()
ui.warm_up_in_background()  # torch + transformers import while the user reads the first page
