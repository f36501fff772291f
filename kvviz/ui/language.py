"""The interface language: each run's language (a link's ?lang=, the session's choice, the browser's), the
sidebar's switch, widget choices kept across a switch, and <html lang> set to match."""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from kvviz import i18n, routes
from kvviz.i18n import N_, _
from kvviz.inputs.links import refused_value
from kvviz.ui import assets, url_state
from kvviz.ui.a11y import READABLE_CSS

# The interface language. LANGUAGE_KEY holds the session's language, decided at the top of every run (app.py and
# every page call ensure_router first); kvviz.i18n reads it through _session_language, which apply_language installs
# (not an import of this module), so fragment reruns and widget callbacks, which run without the page's top,
# translate the same way.
LANGUAGE_KEY = "kvviz_language"
_LANGUAGE_PICKER_KEY = "app_language"


def _session_language() -> str | None:
    # documented in Streamlit's multithreading guide (docs.streamlit.io/develop/concepts/design/multithreading)
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    if get_script_run_ctx(suppress_warning=True) is None:  # a worker thread or the CLI: no session to ask
        return None
    try:
        return st.session_state.get(LANGUAGE_KEY)
    except Exception:  # noqa: BLE001 - a session being torn down: fall back to English rather than fail a string
        return None


def apply_language() -> str:
    """Decide this run's language: `?lang=` when it names one (a shared link), else the session's earlier
    choice, else the browser's (st.context.locale: zh-CN gets Chinese, any other English). The URL then carries
    the language, so a link copied from the address bar opens the same way for the reader (and the pages'
    URL-bound pickers, whose link values are their labels, read in the language they were written in). A `?lang=`
    value that names no language (unknown, zh-TW, huge) is named in one line, in the language used instead, and
    replaced in the URL by that language."""
    i18n.set_resolver(_session_language)  # the same function every run: later calls change nothing
    url = url_state.of(routes.EVERY_PAGE)
    linked = url.raw_all("language")
    chosen = i18n.normalize(linked[-1]) if linked else None
    if chosen is None:
        chosen = st.session_state.get(LANGUAGE_KEY) or i18n.from_browser(_browser_locale())
    st.session_state[LANGUAGE_KEY] = chosen
    if linked != [chosen]:
        url.write({"language": chosen})
        if linked and i18n.normalize(linked[-1]) is None:  # ?lang=xx, ?lang=zh-TW: named, not dropped silently
            st.warning(refused_value(i18n.QUERY_PARAM, linked[-1], i18n.LANGUAGES[chosen]), icon=":material/translate:")
    return chosen


def _browser_locale() -> str | None:
    try:
        return st.context.locale
    except Exception:  # noqa: BLE001 - no browser context (AppTest, a bare run): no preference
        return None


# Which keyed widgets keep their value as a shown label: Streamlit has no public way to tell, so kvviz.ui.router, the
# one module that reads Streamlit's private state, installs its reader (router.option_widget_keys) when imported,
# which every page and app.py do before anything draws. (This module cannot import router: router imports it.)
_option_widget_keys: list[Callable[[], list[str]]] = [lambda: []]  # until router installs its reader


def read_option_widgets_with(reader: Callable[[], list[str]]) -> None:
    """Install `reader`: the keys of the session's options widgets (radio, selectbox, multiselect, segmented
    control, pills, select slider), for keep_choices_across_languages."""
    _option_widget_keys[0] = reader


def keep_choices_across_languages() -> None:
    """(In the language switch's callback, before the language changes.) Every keyed widget that keeps its value
    as a shown label gets its value written back as the option itself, read while the previous run's labels still
    decode it. Without this the browser sends back the old language's label, which no option has in the new one:
    the widget falls back to its first option or hands the label on (a KeyError in a callback that looks the
    label up, such as the model radio's or the ops page's "loaded model"; the lesson's "End").
    Written back, each widget's state holds its language-free option and the browser is sent the new label.
    Which widgets: the options widgets (read_option_widgets_with); a button, an uploader, a data editor or a chart
    selection must never be written."""
    for key in _option_widget_keys[0]():
        st.session_state[key] = st.session_state[key]


def sidebar_language_switch() -> None:
    """Sidebar: English / 简体中文, each named in its own language. The choice is kept for the session and in
    the URL (?lang=), and every page redraws in it at once."""
    if st.session_state.get(_LANGUAGE_PICKER_KEY) != i18n.current():  # a link or the browser decided it
        st.session_state[_LANGUAGE_PICKER_KEY] = i18n.current()

    def _on_change() -> None:
        keep_choices_across_languages()
        st.session_state[LANGUAGE_KEY] = st.session_state[_LANGUAGE_PICKER_KEY]
        url_state.of(routes.EVERY_PAGE).write({"language": st.session_state[LANGUAGE_KEY]})

    st.sidebar.segmented_control(
        "Language / 语言",
        list(i18n.LANGUAGES),
        format_func=i18n.LANGUAGES.__getitem__,
        key=_LANGUAGE_PICKER_KEY,
        on_change=_on_change,
        selection_mode="single",
        required=True,
    )
    set_document_language()


# <html lang> is set by a script (document_language.js says why), in a container hidden_helpers.css hides.
_DOCUMENT_LANGUAGE_KEY = "kvviz_hidden_document_language"
_STREAMLIT_LABELS_KEY = "kvviz_hidden_streamlit_labels"
# Streamlit's own screen-reader labels, as it writes them (English): streamlit_labels.js puts the page's words there.
STREAMLIT_LABELS = (
    N_("Increment"),
    N_("Decrement"),
    N_("Open"),
    N_("Clear value"),
    N_("Collapse sidebar"),
    N_("Expand sidebar"),
    N_("Sidebar"),
    N_("Fullscreen"),
    N_("Close fullscreen"),
    N_("Search"),
    N_("Download as CSV"),
    N_("Show/hide columns"),
    N_("Link to heading"),
    N_("progress"),
    N_("file upload"),
    N_("Close"),
    N_("computer icon"),
)


def set_document_language() -> None:
    """<html lang> follows the interface language: "zh-CN" on a Chinese page, "en" on an English one. (With the
    style that keeps text readable, READABLE_CSS, the phone's layout, narrow.css, page links that open in a new
    tab as a browser's do, page_links.js, and a page's own state that rewrites its history entry,
    history_entries.js: all belong to every page, drawn once per run.)"""
    st.html(READABLE_CSS + assets.style("hidden_helpers.css", "narrow.css"))
    st.sidebar.container(key=_DOCUMENT_LANGUAGE_KEY).html(
        assets.script(
            "document_language.js",
            "page_links.js",
            "history_entries.js",
            data={"lang": i18n.current(), "inPlace": routes.in_place_keys()},
        ),
        unsafe_allow_javascript=True,
    )
    english = i18n.current() == i18n.ENGLISH
    st.sidebar.container(key=_STREAMLIT_LABELS_KEY).html(
        assets.script(
            "streamlit_labels.js",
            data={
                "labels": {} if english else {label: _(label) for label in STREAMLIT_LABELS},
                "shortcut": "" if english else _("Shortcut {key}"),
            },
        ),
        unsafe_allow_javascript=True,
    )
