"""kvviz: learn the transformer KV cache with a real GPT-2. Router only: `streamlit run app.py`."""
from __future__ import annotations

import streamlit as st

from kvviz import ui

st.set_page_config(page_title="kvviz: the KV cache, step by step", page_icon="🗄️", layout="wide")

ui.warm_up_in_background()  # torch + transformers import while the first page renders
ui.sidebar_model_picker()

pages = [
    st.Page("pages/home.py", title="Start here", icon="🏠", default=True),
    st.Page("pages/step_through.py", title="Step through generation", icon="👣"),
    st.Page("pages/attention_ops.py", title="Count the work", icon="🧮"),
    st.Page("pages/memory_budget.py", title="Memory budget", icon="💾"),
    st.Page("pages/speedup.py", title="Measured speed-up", icon="⏱️"),
    st.Page("pages/cache_internals.py", title="Cache internals", icon="🔬"),
]
st.navigation(pages).run()
