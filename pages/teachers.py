"""For teachers: a 30-minute and a 45-minute plan, and how to run kvviz for a class (kvviz.teaching.guide)."""
from __future__ import annotations

import streamlit as st

from kvviz.teaching import guide
from kvviz import ui

ui.ensure_router()  # before anything is drawn: see its docstring
st.title("For teachers")
st.markdown("**What you are seeing.** Two lesson plans built from kvviz's pages (which page, in which order, what "
            "to show, what to ask the room, where students usually go wrong) and how to run it for a class. "
            "Every link opens the page at the state the plan needs.")
row = st.container(horizontal=True)
row.page_link("pages/lesson.py", label="Open the lesson in class mode", icon=":material/school:",
              query_params={"step": "1", "lesson_class": "true"})
row.page_link("pages/glossary.py", label="Glossary", icon=":material/menu_book:")

plans = {f"{guide.total_minutes(guide.PLAN_30)} minutes": guide.PLAN_30,
         f"{guide.total_minutes(guide.PLAN_45)} minutes": guide.PLAN_45}
for tab, plan in zip(st.tabs(list(plans), key="teach_plan"), plans.values()):
    with tab:
        for n, row in enumerate(guide.plan_rows(plan)):
            with st.container(border=True):
                st.markdown(f"**{row['minutes']} min** · open `{row['open']}`")
                st.markdown(f"**Show.** {row['show']}  \n**Ask.** {row['ask']}  \n"
                            f"**Where students go wrong.** {row['where students go wrong']}")
st.subheader("Running it for a class")
st.markdown(guide.RUN_FOR_A_CLASS)
