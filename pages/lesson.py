"""The guided lesson: a dozen steps through the whole KV-cache story, each one asks before it tells.

Every answer is computed on the spot (kvviz.lesson) from the real model or kvviz's arithmetic; the student's
answer is judged against it, then the arithmetic is shown. ?step=4 opens step 4.
"""
from __future__ import annotations

import streamlit as st

from kvviz import lesson, query_values, ui

N_STEPS = len(lesson.STEPS)

ui.ensure_router()  # before anything is drawn: see its docstring
st.title(f"Lesson: the KV cache in {N_STEPS} questions")


def _go(delta: int) -> None:
    """(Button callback.) Move to the previous or next step; the bound widget puts it in the URL."""
    st.session_state["step"] = min(N_STEPS, max(1, (st.session_state.get("step") or 1) + delta))


# Link check (issue 23): the bound step control drops a bad ?step= silently; say so, once per session.
if not st.session_state.get("lesson_link_checked"):
    st.session_state["lesson_link_checked"] = True
    if link_notice := query_values.refused_link_whole(st.query_params.get("step"), 1, N_STEPS, "step",
                                                       "Opening step 1."):
        st.warning(link_notice)

nav = st.container(horizontal=True, vertical_alignment="center")
number = st.session_state.get("step") or 1
nav.button("Back", key="lesson_back", on_click=_go, args=(-1,), disabled=number == 1,
           icon=":material/arrow_back:", shortcut="Left")
number = nav.segmented_control(
    "Step", list(range(1, N_STEPS + 1)), default=None if "step" in st.session_state else 1, key="step",
    bind="query-params", help="Jump to a step; the URL (?step=4) opens the same step", label_visibility="collapsed",
) or 1
nav.button("Next", key="lesson_next", on_click=_go, args=(1,), disabled=number == N_STEPS,
           icon=":material/arrow_forward:", shortcut="Right", type="primary")
step = lesson.STEPS[number - 1]
st.progress(number / N_STEPS, text=f"Step {number} of {N_STEPS}: **{step.title}**")

loaded = ui.current_model("eager")
engine = ui.step_engine(loaded, key="lesson_engine")
asked_key = f"lesson_q_{number}_{loaded.info.label}"
if asked_key not in st.session_state:  # compute the live answer once per step and model
    with st.spinner("Running the model for this question..."):
        st.session_state[asked_key] = step.ask(engine)
question: lesson.Question = st.session_state[asked_key]

st.markdown(step.teach)
with st.container(border=True):
    st.markdown(f"**Question.** {question.text}")
    if question.is_choice:
        given = st.radio("Your answer", question.choices, index=None, key=f"lesson_answer_{number}")
    else:
        given = st.number_input(f"Your answer{f' ({question.unit})' if question.unit else ''}", value=None,
                                min_value=0.0, step=1.0, format="%.10g", key=f"lesson_answer_{number}",
                                width=260)
    row = st.container(horizontal=True)
    checked = row.button("Check", key=f"lesson_check_{number}", type="primary", disabled=given is None)
    shown = row.button("Show me", key=f"lesson_show_{number}")
    if checked:
        st.session_state[f"lesson_result_{number}"] = lesson.check(question, given)
    if shown:
        st.session_state[f"lesson_result_{number}"] = None
    if f"lesson_result_{number}" in st.session_state:
        result = st.session_state[f"lesson_result_{number}"]
        answer = question.answer if question.is_choice else f"{question.answer:,}{' ' + question.unit if question.unit else ''}"
        if result is True:
            st.success(f"Right: **{answer}**.")
        elif result is False:
            st.error(f"Not quite. The computed answer is **{answer}**.")
        else:
            st.info(f"The computed answer is **{answer}**.")
        st.markdown(question.arithmetic)
        st.page_link(step.page, label=f"See it on the full page: {step.page_label}", icon=":material/open_in_new:")

st.caption(f"Model for the live questions: {loaded.info.label}. Every number here is computed when the step "
           "opens, from the real model or from kvviz's own arithmetic.")
