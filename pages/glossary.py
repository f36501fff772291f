"""Glossary: every term kvviz uses, defined once (kvviz.teaching.glossary), with the page where it is live.

?term=head_dim opens with that term's entry expanded at the top; the search box filters the list.
"""
from __future__ import annotations

import streamlit as st

from kvviz.teaching import glossary
from kvviz import ui

ui.ensure_router()  # before anything is drawn: see its docstring
st.title("Glossary")
st.markdown("**What you are seeing.** Every word kvviz's pages, tooltips and lesson use, defined once, in the "
            "same words everywhere. Each entry links to the page where you can watch it on the real model.")
wanted = st.text_input("Find a term", key="term", bind="query-params", placeholder="e.g. prefill, GQA, head_dim",
                       width=360)
needle = (wanted or "").strip().lower()
shown = [t for t in glossary.TERMS
         if not needle or needle in t.name.lower() or needle in t.definition.lower()
         or any(needle in a.lower() for a in t.also)]
if not shown:
    st.info(f"No term matches {wanted!r}. Clear the box to see all {len(glossary.TERMS)}.")
for term in shown:
    with st.container(border=True, key=f"term_{term.anchor}"):
        st.subheader(term.name, anchor=term.anchor)
        if term.also:
            st.caption(f"Also: {', '.join(term.also)}")
        st.markdown(term.definition)
        if term.see:
            st.page_link(term.see, label="See it live", icon=":material/arrow_forward:")
