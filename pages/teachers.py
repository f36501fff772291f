"""For teachers: a 30-minute and a 45-minute plan, and how to run kvviz for a class (kvviz.teaching.guide)."""

from __future__ import annotations

import streamlit as st

from kvviz import i18n, routes
from kvviz.figures import step as step_figures
from kvviz.i18n import _, ngettext
from kvviz.inputs import echo
from kvviz.inputs.links import refused_value
from kvviz.teaching import guide
from kvviz.ui import a11y, links, router, url_state

router.ensure_router()  # before anything is drawn: see its docstring
link_params = links.link_params()  # every link the page makes keeps the language and the model
st.title(_("For teachers"))
st.markdown(
    _(
        "**What you are seeing.** Two lesson plans built from kvviz's pages (which page, in which order, what "
        "to show, what to ask the room, where students usually go wrong) and how to run it for a class. "
        "Every link opens the page at the state the plan needs."
    )
)
row = st.container(horizontal=True)
row.page_link(
    routes.LESSON.file,
    label=_("Open the lesson in class mode"),
    icon=routes.LESSON.icon,
    query_params={**routes.LESSON.query(step=1, class_mode="true"), **link_params},
)
row.page_link(routes.GLOSSARY.file, label=_(routes.GLOSSARY.title), icon=routes.GLOSSARY.icon, query_params=link_params)


def minutes_label(plan: tuple[guide.Block, ...]) -> str:
    total = guide.total_minutes(plan)
    return ngettext("{n} minute", "{n} minutes", total).format(n=total)


plans = {minutes_label(guide.PLAN_30): guide.PLAN_30, minutes_label(guide.PLAN_45): guide.PLAN_45}
labels = list(plans)


def remember_the_plan() -> None:
    """The chosen plan stays chosen when the teacher comes back from a plan's page (the tabs' own state goes when
    the page is left); kept by position, the labels being in the reader's language."""
    st.session_state["teach_plan_chosen"] = labels.index(st.session_state["teach_plan"])


def plan_from_link() -> None:
    """A link chooses a plan too: ?teach_plan=45 minutes, as Streamlit binds the tabs by their label. A label in
    the other language ("45 分钟" in an English browser) or the language-free number of minutes (?teach_plan=45)
    opens that plan; any other value is named in one line, with the plan shown instead."""
    url = url_state.of(routes.TEACHERS)
    raw = url.raw_all("plan")
    if not raw or raw[-1] in labels:
        return
    by_text = {}
    for language in i18n.LANGUAGES:
        with i18n.language(language):
            by_text.update({minutes_label(plan).casefold(): i for i, plan in enumerate(plans.values())})
    by_text.update({str(guide.total_minutes(plan)): i for i, plan in enumerate(plans.values())})
    found = by_text.get(" ".join(raw[-1].split()).casefold())
    url.drop("plan")  # the tabs then open at `chosen` and write its label back when changed
    if found is None:
        st.warning(refused_value(url.key("plan"), raw[-1], labels[st.session_state.get("teach_plan_chosen", 0)]))
    else:
        st.session_state["teach_plan_chosen"] = found


plan_from_link()
chosen = labels[st.session_state.get("teach_plan_chosen", 0)]
tabs = st.tabs(labels, key="teach_plan", default=chosen, on_change=remember_the_plan, bind="query-params")
for tab, plan in zip(tabs, plans.values(), strict=True):
    with tab:
        for block, row in zip(plan, guide.plan_rows(plan), strict=True):
            with st.container(border=True):
                # a value that is a page's label (a sequence, a tab) goes in the reader's language, as that page
                # writes it
                query = {**block.page.localized(block.query), **link_params}
                line = st.container(horizontal=True, vertical_alignment="center")
                line.markdown(_("**{minutes} min** · open").format(minutes=row["minutes"]), width="content")
                # a link, drawn as one (a code span read as a grey snippet); echo.literal keeps its _ and & as typed
                line.page_link(
                    block.page.file,
                    label=echo.literal(row["open"]),
                    icon=":material/open_in_new:",
                    query_params=query,
                    width="content",
                )
                st.markdown(
                    _("**Show.** {show}  \n**Ask.** {ask}  \n**Where students go wrong.** {pitfall}").format(
                        show=_(block.show), ask=_(block.ask), pitfall=_(block.pitfall)
                    )
                )
with st.container(border=True, key="teach_hybrid"):  # the optional question: offered where it fits, not timed
    question = guide.hybrid_question()
    st.markdown(_(guide.HYBRID_WHEN).format(tokens=question.tokens))
    st.page_link(
        routes.STEP_THROUGH.file,
        label=echo.literal(routes.STEP_THROUGH.url(question.link_query)),
        icon=":material/open_in_new:",
        query_params={**link_params, **question.link_query},
        width="content",
    )
    st.markdown(
        _("**Ask.** {ask}  \n**Where students go wrong.** {pitfall}").format(
            ask=_(guide.HYBRID_ASK).format(tokens=question.tokens), pitfall=_(guide.HYBRID_PITFALL)
        )
    )
    with st.expander(_("The answer, and its picture")):
        st.markdown(question.answer())
        a11y.chart(
            st,
            step_figures.hybrid_layers_figure(
                question.layers, question.kv_rows, question.kv_bytes, question.state_bytes, question.tokens
            ),
            key="teach_hybrid_fig",
        )
st.header(_("Running it for a class"))
st.markdown(guide.run_for_a_class())
