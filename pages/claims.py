"""Claims checked: published KV-cache figures and popular sentences, each with its arithmetic and verdict.

Everything shown comes from kvviz.claims (computed by kvviz's own memory and op-count functions); this file
only lays it out. The GPU picked in the last card decides the prefill claim's verdict.
"""

from __future__ import annotations

import streamlit as st

from kvviz import claims, routes
from kvviz.i18n import N_, _
from kvviz.teaching import glossary
from kvviz.ui import links, router

router.ensure_router()  # before anything is drawn: see its docstring
COLORS = {"holds": "green", "wrong": "red", "partly true": "orange", "cannot be judged": "gray"}
ICONS = {
    "holds": ":material/check_circle:",
    "wrong": ":material/cancel:",
    "partly true": ":material/rule:",
    "cannot be judged": ":material/help:",
}
TITLES = {
    "holds": N_("Holds"),
    "wrong": N_("Wrong"),
    "partly true": N_("Partly true"),
    "cannot be judged": N_("Cannot be judged"),
}  # the summary tiles


def link_query(c: claims.Claim) -> dict[str, str]:
    """The "see it live" link's URL state, in the reader's language (a tab is named by its displayed label), with
    the reader's language and model."""
    return {**c.page.localized(c.page_query), **links.link_params()}


def card(c: claims.Claim) -> None:
    """One claim: verdict badge, the quote, the finding, the arithmetic, the source and a link to see it live."""
    st.badge(_(claims.VERDICT_LABELS[c.verdict]), icon=ICONS[c.verdict], color=COLORS[c.verdict])
    st.markdown(f"**“{c.quote}”**")
    if c.translation:  # the original words stay as written; the translation beside them, outside the quotes
        st.markdown(_("Translation: {translation}").format(translation=c.translation))
    st.markdown(c.finding)
    with st.expander(_("The arithmetic")):
        st.code("\n".join(c.arithmetic), language=None, wrap_lines=True)
    st.caption(_("Source: {source}").format(source=c.source))
    st.page_link(
        c.page.file,
        label=_("See it live: {page}").format(page=_(c.page.title)),
        icon=":material/arrow_forward:",
        query_params=link_query(c),
    )


st.title(_("Claims checked"))
st.markdown(
    _(
        "**What you are seeing.** Numbers and sentences about the KV cache that circulate in blog posts, "
        "calculators and explainers, each recomputed here with the same functions the rest of kvviz uses. "
        "A claim **holds**, is **wrong** (by the factor shown), is **partly true**: right for one quantity, "
        "wrong for the one it is usually read as, or **cannot be judged** from figures kvviz can cite. Each card cites "
        "its source (title, address and date, or says which of them is not recorded) and links to the page where you "
        "can watch the numbers live. The first two are the figures in the texts kvviz grew from."
    )
)
rule = st.container(horizontal=True, vertical_alignment="center")
rule.caption(_(claims.UNITS_RULE))
rule.page_link(
    routes.GLOSSARY.file,
    label=_("GB and GiB"),
    icon=routes.GLOSSARY.icon,
    query_params={**routes.GLOSSARY.query(term="GiB"), **links.link_params()},
    help=glossary.help_text("Bytes: GB and GiB"),
)
summary = st.container()  # filled last, once the GPU-dependent verdict is known

found = claims.fixed_claims()
for c in found:
    with st.container(border=True):
        card(c)
with st.container(border=True):
    gpu = st.selectbox(
        _(claims.GPU_LABEL),
        list(claims.GPU_COMPUTE),
        index=list(claims.GPU_COMPUTE).index(claims.DEFAULT_GPU),
        key="claims_gpu",
        bind="query-params",
    )
    found.append(claims.prefill_claim(gpu))
    card(found[-1])

with summary:
    for col, verdict in zip(st.columns(len(COLORS)), COLORS, strict=True):
        col.metric(_(TITLES[verdict]), sum(c.verdict == verdict for c in found))
