"""Cache internals: what real engines do inside the KV cache, each idea run on the real model."""
from __future__ import annotations

import streamlit as st

from kvviz import ui, ui_internals

ui.ensure_router()  # before anything is drawn: see its docstring
st.title("Cache internals")
with st.expander("What you are seeing", expanded=True):
    st.markdown(
        "Real inference engines do more with the KV cache than append rows. Each tab takes one idea and runs it "
        "on the model chosen in the sidebar (cross-attention uses a tiny encoder-decoder built here): how the "
        "bytes are laid out, reusing a shared prefix, the fixed cross-attention cache, sliding windows, paged "
        "blocks, quantized storage, and the rollback behind speculative decoding. Every number is computed from "
        "the real tensors of this run."
    )

loaded = ui.current_model()
tabs = st.tabs(["1 Layout", "2 Prefix reuse", "3 Cross-attention", "4 Sliding windows", "5 Paged blocks",
                "6 Quantization", "7 Speculative rollback"])
sections = [ui_internals.section_layout, ui_internals.section_prefix, ui_internals.section_cross,
            ui_internals.section_window, ui_internals.section_paging, ui_internals.section_quant,
            ui_internals.section_speculative]
for tab, section in zip(tabs, sections):
    with tab:
        section(loaded)
