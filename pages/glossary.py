"""Glossary: every term kvviz uses, defined once (kvviz.teaching.glossary), with the page where it is live.

?term=head_dim filters the list to that term; the search box matches English and Chinese names and definitions.
In English each entry shows its Chinese name beside it (中文); in Chinese each entry is titled by its Chinese name
with the English one beside it. The whole term table (entries and the rest of the terminology) sits in an expander.
"""

from __future__ import annotations

import streamlit as st

from kvviz import i18n
from kvviz.i18n import _
from kvviz.inputs import echo
from kvviz.teaching import glossary
from kvviz.ui import links, router

router.ensure_router()  # before anything is drawn: see its docstring
chinese = i18n.current() == i18n.CHINESE
st.title(_("Glossary"))
st.markdown(
    _(
        "**What you are seeing.** Every word kvviz's pages, tooltips and lesson use, defined once, in the "
        "same words everywhere. Each entry links to the page where you can watch it on the real model."
    )
)
wanted = st.text_input(
    _("Find a term"), key="term", bind="query-params", placeholder=_("e.g. prefill, GQA, head_dim"), width=360
)
needle = (wanted or "").strip()
shown = [t for t in glossary.TERMS if glossary.matches(t, needle)]
if not shown:
    st.info(
        _("No term matches {wanted}. Clear the box to see all {n}.").format(
            wanted=echo.code(needle), n=len(glossary.TERMS)
        )
    )
for term in shown:
    with st.container(border=True, key=f"term_{term.anchor}"):
        if chinese:  # titled by the Chinese term, the English name beside it
            same = term.zh.lower() == term.name.lower()
            st.header(term.zh if same else f"{term.zh} :gray[{term.name}]", anchor=term.anchor)
        else:  # the English term, its Chinese name beside it
            head = st.container(horizontal=True, vertical_alignment="center", gap="small")
            head.header(term.name, anchor=term.anchor, width="content")
            head.markdown(f":gray-badge[中文] {term.zh}", width="content")
        if term.also:
            st.caption(_("Also: {names}").format(names=i18n.item_sep().join(term.also)))
        st.markdown(glossary.definition_text(term))
        if term.see is not None:
            st.page_link(
                term.see.file, label=_("See it live"), icon=":material/arrow_forward:", query_params=links.link_params()
            )

with st.expander(_("The term table: English and 中文")):
    st.caption(
        _(
            "The Chinese interface uses these words everywhere: the glossary's entries first, then the rest "
            "of the terminology."
        )
    )
    english, kind = _("English"), _("Kind")
    rows = [{english: t.name, "中文": t.zh, kind: _("glossary entry")} for t in glossary.TERMS]
    rows += [{english: en, "中文": zh, kind: _("terminology")} for en, zh in glossary.VOCABULARY.items()]
    st.dataframe(rows, hide_index=True, width="stretch", height=360)
