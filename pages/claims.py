"""Claims checked: published KV-cache figures and popular sentences, each with its arithmetic and verdict.

Everything shown comes from kvviz.claims (computed by kvviz's own memory and op-count functions); this file
only lays it out. The GPU picked in the last card decides the prefill claim's verdict.
"""
from __future__ import annotations

import streamlit as st

from kvviz import claims, ui
from kvviz.teaching import glossary

ui.ensure_router()  # before anything is drawn: see its docstring
COLORS = {"holds": "green", "wrong": "red", "partly true": "orange"}
ICONS = {"holds": ":material/check_circle:", "wrong": ":material/cancel:", "partly true": ":material/rule:"}


def card(c: claims.Claim) -> None:
    """One claim: verdict badge, the quote, the finding, the arithmetic, the source and a link to see it live."""
    st.badge(c.verdict, icon=ICONS[c.verdict], color=COLORS[c.verdict])
    st.markdown(f"**“{c.quote}”**")
    st.markdown(c.finding)
    with st.expander("The arithmetic"):
        st.code("\n".join(c.arithmetic), language=None, wrap_lines=True)
    st.caption(f"Source: {c.source}")
    st.page_link(c.page[0], label=f"See it live: {c.page[1]}", icon=":material/arrow_forward:",
                 query_params=c.page_query or None)


st.title("Claims checked")
st.markdown(
    "**What you are seeing.** Numbers and sentences about the KV cache that circulate in blog posts, "
    "calculators and explainers, each recomputed here with the same functions the rest of kvviz uses. "
    "A claim **holds**, is **wrong** (by the factor shown), or is **partly true**: right for one quantity, "
    "wrong for the one it is usually read as. Each card cites its public source (title, address, date) and links "
    "to the page where you can watch the numbers live."
)
rule = st.container(horizontal=True, vertical_alignment="center")
rule.caption(claims.UNITS_RULE)
rule.page_link("pages/glossary.py", label="GB and GiB", icon=":material/menu_book:",
               query_params={"term": "GiB"}, help=glossary.help_text("Bytes: GB and GiB"))
summary = st.container()  # filled last, once the GPU-dependent verdict is known

found = claims.fixed_claims()
for c in found:
    with st.container(border=True):
        card(c)
with st.container(border=True):
    gpu = st.selectbox(claims.GPU_LABEL, list(claims.GPU_COMPUTE),
                       index=list(claims.GPU_COMPUTE).index(claims.DEFAULT_GPU), key="claims_gpu",
                       bind="query-params")
    found.append(claims.prefill_claim(gpu))
    card(found[-1])

with summary:
    for col, verdict in zip(st.columns(3), COLORS):
        col.metric(verdict.capitalize(), sum(c.verdict == verdict for c in found))
