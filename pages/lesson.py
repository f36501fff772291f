"""The guided lesson: twelve steps through the whole KV-cache story, each asks before it tells, then an ending.

Every answer is computed on the spot (kvviz.teaching.lesson) from the real model or kvviz's arithmetic. Ask, then help,
then tell: a first wrong answer gets a hint, a second (or "Show me") the worked answer. Class mode puts the
question up in large type for a room to answer aloud; one click (or V) reveals it, then the teacher marks the
room right (Y) or wrong (N), and the ending scores the room. ?step=4 opens step 4, ?step=End the summary,
?lesson_class=true class mode; the score rides in the URL too (?lesson_score=, one letter per step, signed with a
key the server keeps), so a reload keeps it and a score typed into a link is shown as not recorded, never counted.
The handout (one printable page per step) downloads from the top of every step and from the summary.

Language (kvviz.i18n): every text is shown in the session's language. A question is computed once per step and model,
language-free (its texts are Messages), and drawn in the language of the run that shows it: switching the language
redraws it without running the model again. The handout is written in the language of the session that asks for it.
"""

from __future__ import annotations

import html

import streamlit as st

from kvviz import i18n, routes
from kvviz.figures import export_config
from kvviz.figures.lesson import lesson_figure, tokens_html
from kvviz.figures.poll import choice_letter
from kvviz.i18n import N_, _, ngettext
from kvviz.teaching import glossary, grading, handout, lesson, score
from kvviz.ui import a11y, assets, bounded, engines, links, models, poll, router, sidebar, url_state

N_STEPS = len(lesson.STEPS)
END = N_STEPS + 1  # the summary page, after step 12
OUTCOMES = "lesson_outcomes"  # {step number: score.Outcome}
END_LABEL = N_("End")  # the summary's place in the step control (and ?step=End in an English link)
URL_STEP = "lesson_url_step"  # the step this session last wrote into the URL (_step_to_url)
URL = url_state.of(routes.LESSON)  # the page's keys in its link: step, class mode, score (kvviz.routes)
SCORE_WRITTEN = "lesson_url_score"  # the score this session last wrote into the URL (or last read from it)
SCORE_HOLD = "lesson_score_hold"  # this run writes no score (the URL came without one: _outcomes)
SCORE_UNRECORDED = "lesson_score_unrecorded"  # outcomes a URL's score carried that this server did not sign
CLICKED = "lesson_clicked"  # this run comes from a click on this page (_clicked): the URL it carries may lag
REVEAL_KEY, RIGHT_KEY, WRONG_KEY = "V", "Y", "N"  # class mode's keys: none of them reads as a choice's letter A-D
# Class mode's chrome (no sidebar, a small title: the question and its answer stay above the fold) and the lesson's
# keys (V, H, Y, N, Left, Right, queued in the browser like the stage's): CSS and JavaScript in kvviz/assets/web/.
CLASS_CSS = assets.style("hide_sidebar.css", "lesson_class.css")
LESSON_KEYS_JS = assets.script("keyboard_queue.js", "lesson_keys.js")  # installed once per tab


router.ensure_router()  # before anything is drawn: see its docstring


def _url_step() -> int | None:
    """The step the URL names (?step=4, ?step=End in any language), or None."""
    if URL.raw("step") in grading.translations(END_LABEL):
        return END
    return URL.read("step", hi=N_STEPS)  # None for a refused one: the link's notice says why (below)


def _sync_step_with_url() -> None:
    """Before the step control is drawn: a URL that differs from the one this session last wrote (a link, a reload,
    the browser's Back or Forward) sets the step, so Back and its Left key work on a deep link's first run and the
    browser's Back returns to the previous step."""
    url, written = _url_step(), st.session_state.get(URL_STEP)
    if url is not None and url != written and not st.session_state.get(CLICKED):
        st.session_state["step"] = url
    elif not st.session_state.get("step"):
        st.session_state["step"] = written or 1


def _step_to_url(number: int) -> None:
    """The step shown into the URL. Written by the page (not bound to the control, which replaces the URL in place):
    each move is a browser history entry, so the browser's Back goes to the step before."""
    st.session_state[URL_STEP] = number
    URL.write({"step": _(END_LABEL) if number == END else number})


def _clicked() -> None:
    """(Callback of every control that moves the step or marks a score.) A rerun carries the URL as the browser has
    it when the click is sent, and the browser takes the previous run's URL write only at that run's end: a Next
    clicked (or queued) just after a mark carries the URL from before the mark. Such a run keeps the session's step
    and score; only a run no click started (the browser's Back or Forward, a link, a reload) reads them from the URL.
    """
    st.session_state[CLICKED] = True


def _go(delta: int) -> None:
    """(Button callback.) Move to the previous or next step; the bound widget puts it in the URL."""
    _clicked()
    st.session_state["step"] = min(END, max(1, (st.session_state.get("step") or 1) + delta))


def _restart() -> None:
    """(Button callback.) Start again: step 1, every answer and hint forgotten (the computed questions stay)."""
    _clicked()
    for key in [
        k
        for k in st.session_state
        if str(k).startswith(("lesson_tries_", "lesson_result_", "lesson_answer_", "lesson_unit_", "lesson_reveal_"))
    ]:
        del st.session_state[key]
    st.session_state[OUTCOMES] = {}
    st.session_state["step"] = 1
    URL.drop("score")
    st.session_state[SCORE_WRITTEN] = ""


def _score_key() -> bytes:
    """The key that signs this server's scores (kvviz.teaching.score.score_key): a score in a link is counted only
    when this server wrote it, so ?lesson_score=ffffffffffff cannot show "Right 12 of 12"."""
    return score.score_key(st.get_option("server.cookieSecret"))


def _outcomes() -> dict[int, score.Outcome]:
    """This session's outcomes. A score in the URL that this session did not write (a reload, a link that carries
    one, the browser's Back or Forward) wins: a reload keeps the score, and Back after a mark takes that mark back.
    A URL without a score (a plan's link, Back to before the first mark) keeps the session's, and this run writes
    none (writing it would push a history entry and undo the browser's Back)."""
    url = URL.raw("score") or ""
    if OUTCOMES not in st.session_state or (
        url != st.session_state.get(SCORE_WRITTEN, "") and not st.session_state.get(CLICKED)
    ):
        old = st.session_state.get(OUTCOMES, {})
        if url or OUTCOMES not in st.session_state:
            recorded, unrecorded = score.read_signed_score(url, _score_key(), N_STEPS)
            if unrecorded:  # said once (after the handout), never counted, gone from the URL at the run's end
                st.session_state[SCORE_UNRECORDED] = unrecorded
            st.session_state[OUTCOMES] = {
                n: old[n] if n in old and old[n].result == o.result else o for n, o in recorded.items()
            }
        else:
            st.session_state[SCORE_HOLD] = True
        st.session_state[SCORE_WRITTEN] = url
    outcomes = st.session_state[OUTCOMES]
    for n, right in poll.marks(poll.hosted_room()).items():  # the room's marks, from any tab of this browser: they win
        if n not in outcomes or not outcomes[n].room or outcomes[n].right != right:
            outcomes[n] = score.Outcome("first try" if right else "shown", _("the room"), None, True)
    return outcomes


def _score_to_url() -> None:
    """Write the outcomes into the URL when they differ from it (an unchanged URL adds no history entry)."""
    code = score.encode_outcomes(_outcomes(), N_STEPS)
    if st.session_state.pop(SCORE_HOLD, False):
        return
    code = score.sign_score(code if code.strip("-") else "", _score_key())
    st.session_state[SCORE_WRITTEN] = code
    URL.write({"score": code or None})  # in place (Route.in_place): a mark is no history entry of its own


def _record(number: int, result: str, given: str, choice: int | None = None, room: bool = False) -> None:
    """Keep the first verdict a step earned (a later 'Show me' does not turn a right answer into 'shown')."""
    outcomes = _outcomes()
    if number not in outcomes or outcomes[number].result == "":
        outcomes[number] = score.Outcome(result, given, choice, room)


def _finish(run_marker) -> None:
    """The run's last writes: the score into the URL, then the run's count for LESSON_KEYS_JS, which presses the
    next queued key only once the count has changed, so never before the browser holds this run's URL."""
    _score_to_url()
    st.session_state.pop(CLICKED, None)
    one, many = (
        html.escape(ngettext("Lesson busy: {n} key press queued", "Lesson busy: {n} key presses queued", n))
        for n in (1, 2)
    )  # the badge's words in this run's language: the script is installed once per tab
    dropped = html.escape(_("A key press was dropped: its button did not appear"))
    run_marker.html(
        f'<div class="kvviz-lesson-state" data-runs="{st.session_state["lesson_runs"]}" '
        f'data-busy-one="{one}" data-busy-many="{many}" data-dropped="{dropped}" style="display:none"></div>'
    )


def _question_key(number: int, loaded) -> str:
    """A question is kept per step and model: it is language-free, drawn in whichever language the page shows."""
    return f"lesson_q_{number}_{loaded.info.label}"


def _question(number: int, loaded, engine) -> lesson.Question:
    """The live question of step `number`, computed once per step and model (the model runs once, whatever the
    language the page is read in; the class poll stores this same question)."""
    key = _question_key(number, loaded)
    if key not in st.session_state:
        with st.spinner(_("Running the model for this question...")):
            st.session_state[key] = lesson.STEPS[number - 1].ask(engine)
    return st.session_state[key]


def _model_name(loaded) -> str:
    return i18n.without_aside(loaded.info.shown_label())  # the title, without the shape (step 1 asks for head_dim)


def _handout_maker(loaded, computed: dict[int, lesson.Question], engine, worksheet: bool = False):
    """A callable for st.download_button: kvviz.teaching.handout.handout_maker (drawn once per model, language and
    questions, one at a time on the server; no Streamlit calls inside, it runs on its own thread)."""
    return handout.handout_maker(
        loaded, computed, _model_name(loaded), worksheet=worksheet, new_engine=lambda: type(engine)(loaded)
    )  # a fresh engine: the session's stays put


def _computed(loaded) -> dict[int, lesson.Question]:
    return {
        n: st.session_state[_question_key(n, loaded)]
        for n in range(1, END)
        if _question_key(n, loaded) in st.session_state
    }


def _term_label(term: str) -> str:
    """A glossary word as the glossary names it in the current language."""
    found = glossary.find(term)
    return glossary.display_name(found) if found else term


def _figures(question: lesson.Question, after: bool, font_px: int, number: int) -> None:
    for i, pic in enumerate(p for p in question.pictures if p.after == after):
        if pic.kind == "tokens":  # chips that wrap: readable on a phone as on a projector
            st.html(tokens_html(pic.data, font_px))
        else:
            a11y.chart(
                st,
                lesson_figure(pic.kind, pic.data, font_px),
                config=export_config(f"lesson_step_{number}"),
                key=f"lesson_fig_{number}_{int(after)}_{i}_{font_px}",
            )
        st.caption(pic.caption.shown())


def _answer_input(number: int, question: lesson.Question):
    """The student's answer widget(s): a choice, a number, or a number and a byte unit. Returns (value, unit)."""
    if question.is_choice:
        return st.radio(
            _("Your answer"),
            question.choices,
            index=None,
            format_func=lambda choice: choice.shown(),  # a choice is its Message: graded by identity, drawn in words
            key=f"lesson_answer_{number}",
        ), None
    if question.unit == "bytes":
        row = st.container(horizontal=True, vertical_alignment="bottom")
        value = row.number_input(
            _("Your answer"), value=None, step=1.0, format="%.10g", key=f"lesson_answer_{number}", width=220
        )  # no min: -5 is sent, and named
        unit = row.selectbox(
            _("Unit"),
            list(lesson.BYTE_UNITS),
            index=0,
            key=f"lesson_unit_{number}",
            width=110,
            help=_("1 KB = 1,000 B, 1 MB = 10^6 B, 1 GB = 10^9 B; 1 KiB = 1,024 B, 1 MiB = 2^20 B, 1 GiB = 2^30 B"),
        )
        return value, unit
    label = _("Your answer (how many times)") if question.unit == "x" else _("Your answer")
    return st.number_input(
        label, value=None, step=1.0, format="%.10g", key=f"lesson_answer_{number}", width=260
    ), None  # no min: -5 is sent, and named


def _worked(number: int, question: lesson.Question, step: lesson.LessonStep, font_px: int) -> None:
    """The worked answer: the arithmetic, the figures that would have given it away, the full page's link."""
    st.markdown(question.arithmetic.shown())
    _figures(question, True, font_px, number)
    st.page_link(
        step.page.file,
        label=_("See it on the full page: {page}").format(page=_(step.page.title)),
        icon=":material/open_in_new:",
        query_params={**step.page.localized(question.page_query), **links.link_params()},
    )


def student_box(number: int, question: lesson.Question, step: lesson.LessonStep, font_px: int) -> None:
    """Ask, then help, then tell: first wrong answer -> hint; second wrong answer or Show me -> worked answer."""
    tries_key, result_key = f"lesson_tries_{number}", f"lesson_result_{number}"
    # A form sends what is typed with the click: a plain button's first click only took the box's value (its blur
    # ran the page) and lost the click, so a phone needed two taps. Enter in the box checks too.
    with st.form(f"lesson_form_{number}", border=False, enter_to_submit=True):
        given, unit = _answer_input(number, question)
        row = st.container(horizontal=True)
        checked = row.form_submit_button(_("Check"), key=f"lesson_check_{number}", type="primary", on_click=_clicked)
        shown = row.form_submit_button(_("Show me"), key=f"lesson_show_{number}", on_click=_clicked)
    cannot = (
        None
        if question.is_choice or not (checked or shown)
        else bounded.answer_refusal(f"lesson_answer_{number}", given)
    )
    if checked and cannot:  # -5, NaN, 1e999: named, not mistaken for an empty box
        st.warning(cannot, icon=":material/edit:")
        checked = False
    elif checked and given is None:
        st.info(_("Type or choose an answer first, then press Check."), icon=":material/edit:")
        checked = False
    written = (
        "" if given is None else (given.shown() if question.is_choice else f"{given:g}{' ' + unit if unit else ''}")
    )
    choice = question.choices.index(given) if question.is_choice and given in question.choices else None
    if checked:
        if grading.check(question, given, unit):
            st.session_state[result_key] = "right"
            _record(number, "first try" if not st.session_state.get(tries_key) else "after a hint", written, choice)
        else:
            st.session_state[tries_key] = st.session_state.get(tries_key, 0) + 1
            if st.session_state[tries_key] >= 2:
                st.session_state[result_key] = "wrong-shown"
                _record(number, "shown", written, choice)
            else:
                st.session_state[result_key] = "hint"
                st.session_state[f"lesson_hint_{number}"] = grading.hint(question, given, unit)
    if shown:
        st.session_state[result_key] = "shown"
        _record(number, "shown", written, choice)
    result = st.session_state.get(result_key)
    if result == "hint":
        hint = st.session_state[f"lesson_hint_{number}"]  # a Message: drawn in this run's language
        st.warning(
            _("Not yet. {hint} Try again, or press *Show me*.").format(hint=hint.shown() if hint else ""),
            icon=":material/lightbulb:",
        )
        return
    if result is None:
        return
    if result == "right":
        st.success(_("Right: **{answer}**.").format(answer=question.answer_text()))
    elif result == "wrong-shown":
        st.error(
            _("Not quite, again. The computed answer is **{answer}**; here is how.").format(
                answer=question.answer_text()
            )
        )
    else:
        st.info(_("The computed answer is **{answer}**.").format(answer=question.answer_text()))
    _worked(number, question, step, font_px)


def _mark_room(number: int, right: bool, answer: str) -> None:
    """(Button callback.) The teacher marks the room's answer: right (at the first try, or after the hint if it was
    shown) or wrong (the answer was shown). A step counts once, as for a student."""
    _clicked()
    hinted = st.session_state.get(f"lesson_class_hint_{number}")
    result = ("after a hint" if hinted else "first try") if right else "shown"
    _record(number, result, _("the room: {answer}").format(answer=answer) if right else _("the room"), room=True)
    poll.mark(poll.hosted_room(), number, right)  # kept with the room: a new tab, a reload or Back reads the same score


def class_box(number: int, question: lesson.Question, step: lesson.LessonStep, font_px: int, ask) -> None:
    """The projector: the question large, the choices lettered, nothing to type; one click (or V) reveals, then the
    teacher marks the room right (Y) or wrong (N) and the ending scores the room. With a class poll running, the
    room votes on its phones (`ask()`: this step's question, computed once, for the poll)."""
    # the question is the first heading under the page's title (h2: headings in order, axe's heading-order), its
    # choices and the answer h3 under it; drawn at the h3's size and spacing it had (CLASS_CSS, READABLE_CSS)
    st.container(key="lesson_question").markdown(f"## {question.text.shown()}")
    # With this tab's class poll running, its panel (the QR code, the count, after Reveal the room's votes) sits
    # beside the question's choices and figure: under the question it pushed step 2's prompt (its figure) and, after
    # Reveal, the vote chart below a 1024x768 projector's fold
    main, side = st.columns([2, 1], gap="medium") if poll.hosted_room() is not None else (st.container(), None)
    with main:
        _class_question(number, question, step, font_px, ask, side)


def _class_question(number: int, question: lesson.Question, step: lesson.LessonStep, font_px: int, ask, side) -> None:
    """class_box's choices, Reveal or the answer and the room's mark, the poll panel (in `side` when given) and the
    figure."""
    # With a class poll running, the room's letters: the poll's choices in its order, as every phone and the vote
    # chart letter them (on number steps too), so "the answer is C" sends the room to one choice
    choices = poll.room_choices(number, question) or tuple(c.shown() for c in question.choices)
    if choices:
        st.container(key="lesson_choices").markdown(
            "\n".join(f"### {choice_letter(i)}. {c}" for i, c in enumerate(choices))
        )
    elif question.rel_tolerance and not question.states_tolerance:
        st.caption(_("Accepted within {tolerance:.0%}.").format(tolerance=question.rel_tolerance))
    reveal_key = f"lesson_reveal_{number}"
    revealed = bool(st.session_state.get(reveal_key)) or number in _outcomes()
    if not revealed:
        # beside the choices over the room's panel when a poll runs: the figure under the choices stays on the screen
        row = (side or st).container(horizontal=True)
        row.button(
            _("Reveal the answer"),
            key=f"lesson_reveal_btn_{number}",
            type="primary",
            icon=":material/visibility:",
            shortcut=REVEAL_KEY,
            on_click=lambda: (st.session_state.update({reveal_key: True}), poll.reveal(poll.hosted_room(), number)),
        )
        row.button(
            _("Hint"),
            key=f"lesson_hint_btn_{number}",
            icon=":material/lightbulb:",
            shortcut="H",
            on_click=lambda: st.session_state.update({f"lesson_class_hint_{number}": True}),
        )
        if st.session_state.get(f"lesson_class_hint_{number}"):
            st.warning(question.hint.shown() if question.hint else "", icon=":material/lightbulb:")
        with side or st.container():
            poll.projector_panel(number, ask, font_px, moved_here=bool(st.session_state.get(CLICKED)))
    else:
        st.success(_("### Answer: {answer}").format(answer=question.answer_text()))
        outcome = _outcomes().get(number)
        if outcome is None:
            row = st.container(horizontal=True, vertical_alignment="center", key=f"lesson_mark_{number}")
            row.markdown(_("**Did the room get it?**"))
            row.button(
                _("The room got it"),
                key=f"lesson_room_right_{number}",
                icon=":material/check:",
                shortcut=RIGHT_KEY,
                on_click=_mark_room,
                args=(number, True, question.answer_text()),
            )
            row.button(
                _("The room missed it"),
                key=f"lesson_room_wrong_{number}",
                icon=":material/close:",
                shortcut=WRONG_KEY,
                on_click=_mark_room,
                args=(number, False, question.answer_text()),
            )
        else:
            st.caption(
                _("Marked for the room: {result}. The ending counts the room's score.").format(
                    result=score.result_label(outcome.result) if outcome.right else _("missed (answer shown)")
                )
            )
        with side or st.container():
            poll.projector_panel(
                number,
                ask,
                font_px,
                answer_shown=True,
                moved_here=bool(st.session_state.get(CLICKED)),
                on_next=(lambda: _go(1)) if number < N_STEPS else None,
            )
    _figures(question, False, font_px, number)  # the figure the question is about, under it
    if revealed:
        _worked(number, question, step, font_px)


def summary(loaded, engine) -> None:
    """The ending: the twelve ideas with the student's answers, a score, start again, the handout."""
    outcomes = _outcomes()
    right, first = score.score(outcomes)
    st.header(_("What you learned"))
    c = st.columns(3)
    c[0].metric(_("Right"), _("{right} of {n}").format(right=right, n=N_STEPS))
    c[1].metric(_("Right at the first try"), f"{first}")
    c[2].metric(_("Answers shown"), f"{sum(o.result == 'shown' for o in outcomes.values())}")
    rows = []
    for n, step in enumerate(lesson.STEPS, start=1):
        o = outcomes.get(n, score.Outcome("", ""))
        if (
            o.choice is not None or o.room
        ):  # a choice's words are drawn from its question: compute it if a reload lost it
            _question(n, loaded, engine)
        q = st.session_state.get(_question_key(n, loaded))
        rows.append(
            {
                _("step"): n,
                _("the idea"): _(step.idea),
                _("your answer"): o.shown(q),
                _("result"): score.result_label(o.result),
                _("computed answer"): q.answer_text() if q else "—",
            }
        )
    poll.room_results(poll.hosted_room())  # the class poll's votes per step and round, and their CSV
    st.table(rows, hide_index=True)  # a static table: long ideas wrap instead of being cut
    row = st.container(horizontal=True)
    row.button(_("Start again"), key="lesson_restart", on_click=_restart, icon=":material/restart_alt:", type="primary")
    row.page_link(
        routes.GLOSSARY.file,
        label=_(routes.GLOSSARY.title),
        icon=routes.GLOSSARY.icon,
        query_params=links.link_params(),
    )
    row.page_link(
        routes.TEACHERS.file,
        label=_(routes.TEACHERS.title),
        icon=routes.TEACHERS.icon,
        query_params=links.link_params(),
    )


# ----- the page -----------------------------------------------------------------------------------------------
if st.session_state["lesson_class"] if "lesson_class" in st.session_state else URL.read("class_mode") is True:
    st.html(CLASS_CSS)  # before the title: class mode's chrome is small from the first frame
st.title(_("Lesson: the KV cache in {n} questions").format(n=N_STEPS))
sidebar.needs_all_attention(models.current_info())  # K/V in every layer: not a hybrid
st.session_state["lesson_runs"] = st.session_state.get("lesson_runs", 0) + 1  # LESSON_KEYS_JS waits on it
st.html(LESSON_KEYS_JS, unsafe_allow_javascript=True)
run_marker = st.empty()  # filled by _finish, at the run's end: LESSON_KEYS_JS presses the next key after it
top = st.container(horizontal=True, vertical_alignment="center")
# Link check: a bad ?step= opens step 1; say so, once per session.
if not st.session_state.get("lesson_link_checked"):
    st.session_state["lesson_link_checked"] = True
    if URL.raw("step") not in grading.translations(END_LABEL) and (
        link_notice := URL.refusal("step", _("Opening step 1 (or ?step=End for the summary)."), hi=N_STEPS)
    ):
        st.warning(link_notice)
    if link_notice := URL.refusal("class_mode", _("Opening with class mode off.")):  # the toggle reads true/false
        st.warning(link_notice)

_sync_step_with_url()
number = st.session_state["step"]
top.button(
    _("Back"),
    key="lesson_back",
    on_click=_go,
    args=(-1,),
    disabled=number == 1,
    icon=":material/arrow_back:",
    shortcut="Left",
)
number = (
    top.segmented_control(
        _("Step"),
        list(range(1, END + 1)),
        key="step",
        format_func=lambda n: _(END_LABEL) if n == END else str(n),
        help=_("Jump to a step; the URL (?step=4) opens the same step"),
        label_visibility="collapsed",
        on_change=_clicked,
    )
    or number
)  # clicking the step shown deselects it: stay there
_step_to_url(number)
top.button(
    _("Next"),
    key="lesson_next",
    on_click=_go,
    args=(1,),
    disabled=number == END,
    icon=":material/arrow_forward:",
    shortcut="Right",
    type="primary",
)
class_mode = top.toggle(
    _("Class mode"),
    key="lesson_class",
    bind="query-params",
    on_change=_clicked,  # a click too
    help=_(
        "For a projector: large type, no typing; the room answers aloud, then one click "
        "(or V) reveals the answer, then Y or N marks the room right or wrong: the ending scores the room"
    ),
)
font_px = 22 if class_mode else 16

loaded = models.current_model("eager")
engine = engines.step_engine(loaded, key="lesson_engine")
with top.popover(_("Handout"), icon=":material/print:"):
    st.markdown(
        _(
            "One printable page per step: its question, figure and worked answer, with the numbers computed "
            "for **{model}**, except where a step uses a published model's preset ({others}). Open the file "
            "in a browser and print it."
        ).format(model=_model_name(loaded), others=lesson.preset_steps_text())
    )
    st.download_button(
        _("Download the handout (HTML)"),
        data=_handout_maker(loaded, _computed(loaded), engine),
        file_name="kvviz-lesson-handout.html",
        mime="text/html",
        key="lesson_handout",
        icon=":material/download:",
        on_click="ignore",
    )
    st.download_button(
        _("Download the worksheet, without answers (HTML)"),
        data=_handout_maker(loaded, _computed(loaded), engine, worksheet=True),
        file_name="kvviz-lesson-worksheet.html",
        mime="text/html",
        key="lesson_worksheet",
        icon=":material/edit_note:",
        on_click="ignore",
    )

_outcomes()  # a reload's score, read from the URL before anything records
if unrecorded := st.session_state.pop(SCORE_UNRECORDED, None):
    st.warning(
        _(
            "This link carries a score ({right} of {n} right) that this page did not record, so it is not "
            "counted: a score is kept only as this server wrote it (a reload after the server restarted loses "
            "it too)."
        ).format(right=score.score(unrecorded)[0], n=N_STEPS)
    )
if number == END:
    st.progress(1.0, text=_("The end: your answers"))
    summary(loaded, engine)
    _finish(run_marker)
    st.stop()

step = lesson.STEPS[number - 1]
st.progress(
    number / N_STEPS, text=_("Step {number} of {n}: **{title}**").format(number=number, n=N_STEPS, title=_(step.title))
)
question = _question(number, loaded, engine)


def _teach() -> None:
    st.markdown(_(step.teach))
    words = st.container(horizontal=True, vertical_alignment="center", gap="small")
    words.caption(_("Words for this step:"))
    for term in step.terms:  # each opens the glossary at that word; the tooltip is the glossary's own definition
        words.page_link(
            routes.GLOSSARY.file,
            label=_term_label(term),
            query_params={**routes.GLOSSARY.query(term=term), **links.link_params()},
            help=glossary.help_text(term),
            icon=":material/menu_book:",
        )


if class_mode:  # the projector: the question and its answer first, above the fold; the figure under them
    with st.container(border=True):
        class_box(number, question, step, font_px, lambda: _question(number, loaded, engine))
    _teach()
else:
    _teach()
    # keyed so that narrow.css can put the question above the figure on a phone or a short screen (the figure
    # fills most of one there)
    with st.container(key="lesson_figures"):
        _figures(question, False, font_px, number)
    with st.container(border=True, key="lesson_ask"):
        st.markdown(_("**Question.** {question}").format(question=question.text.shown()))
        student_box(number, question, step, font_px)

foot = st.container(horizontal=True, vertical_alignment="center", key="lesson_foot")
foot.caption(
    _(
        "Model for the live questions: {model}. Every number here is computed when the step opens, from the "
        "real model or from kvviz's own arithmetic. The words in bold are explained in the glossary."
    ).format(model=_model_name(loaded))
)
foot.page_link(
    routes.GLOSSARY.file, label=_(routes.GLOSSARY.title), icon=routes.GLOSSARY.icon, query_params=links.link_params()
)
_finish(run_marker)
