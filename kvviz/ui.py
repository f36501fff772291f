"""The one Streamlit adapter in kvviz: the cached model, the sidebar's model picker, small shared widgets.

Everything else in kvviz is UI-free. Models are loaded once per process with `st.cache_resource` and
shared by every session, so they are never mutated here; per-user state lives in `st.session_state`.
Every model a page gets goes through `cached_model`, which applies the shared-server policy
(kvviz.model.shared_mode: only offered models, a cap per load, no server paths in messages) and shows a wait
message while another session's load runs (one load at a time per server, kvviz.model.loading).

Start-up: importing torch + transformers costs seconds on a 2-core laptop. The first page (home) needs
only `current_info()`, which reads the bundled model's description from disk, so it renders at once while
`warm_up_in_background()` imports torch/transformers in a daemon thread; pages that step the model import
them for real (waiting for that thread's import, if it is still running, through Python's import lock).
"""
from __future__ import annotations

import gc
import html
import importlib
import json
import sys
import threading
import time
import uuid
from typing import TYPE_CHECKING

import streamlit as st

from kvviz import i18n
from kvviz.i18n import N_, _, ngettext
from kvviz.model import loading, shared_mode
from kvviz.model.dims import GPT2_FAMILY

if TYPE_CHECKING:
    from kvviz.step.engine import StepEngine

# hash_funcs for st.cache_data over a LoadedModel argument: a model is identified by what was asked for and how
# its attention runs (the shared model object itself is not hashable content).
MODEL_HASH = {loading.LoadedModel: lambda loaded: (loaded.info.spec, loaded.info.attn_implementation)}

_warm_up_started = threading.Event()
# transformers resolves its classes lazily; two threads importing it at once (the warm-up thread and a page
# loading a model) made `from transformers import GPT2LMHeadModel` fail. Both import under this lock.
_IMPORT_LOCK = threading.Lock()

# Interactive pages run one tiny forward pass per click, and Streamlit serves each session in its own thread.
# Intra-op parallelism only adds hand-off cost there: on a 2-core machine with other work running, a decode
# step of the bundled model took 1.1 ms with 1 torch thread and 124 ms with 2 (median of 40 steps).
# The benchmark harness (kvviz.speedup.harness) sets its own thread count for its runs, under its lock.
INTERACTIVE_TORCH_THREADS = 1

MODEL_SPEC_KEY = "model_spec"  # the model every page uses, chosen in the sidebar (app.py)
MODEL_QUERY_PARAM = "model"  # a link's model: its spec (bundled name, offered name, hub name, random:shape)
_MODEL_LINK_MAX_CHARS = 1000
MODEL_NOTICE_KEY = "model_notice"
STEP_ENGINE_KEY = "step_engine"  # the user's stepping engine (its cache is per user; the model is shared)


@st.cache_resource(show_spinner=False, max_entries=4)  # the spinner's text is the session's language: cached_model
def _cached_load(
    spec: str, source: str, attn_implementation: str, cap: loading.LoadCap | None, allow_download: bool,
    offered: shared_mode.OfferedModel | None = None,
) -> loading.LoadedModel:
    import dataclasses

    with _IMPORT_LOCK:
        import torch
        import transformers  # noqa: F401  (finish the import before loading: see _IMPORT_LOCK)

        import pandas  # noqa: F401  (plotly in another session saw a half-imported pandas: import it whole here)

    torch.set_num_threads(INTERACTIVE_TORCH_THREADS)
    loaded = loading.load_model(source, attn_implementation, cap=cap, allow_download=allow_download)
    _freeze_long_lived_objects()
    _loaded_keys.add((spec, attn_implementation))
    if loaded.info.spec == spec and offered is None:
        return loaded
    # A teacher-listed model: the session knows it by its offered name and the teacher's label only, never by
    # its server path or folder name.
    if offered is None:
        return dataclasses.replace(loaded, info=dataclasses.replace(loaded.info, spec=spec))
    return dataclasses.replace(loaded, info=dataclasses.replace(
        loaded.info, spec=spec, label=offered.label, label_text=offered.label_text))


def _freeze_long_lived_objects() -> None:
    """Move every object alive now (torch, transformers, the loaded models) out of the garbage collector's view.

    Streamlit runs a full gc.collect() after every script run by default, fragment runs included
    (runner.postScriptGC). With torch and transformers loaded that walk cost ~0.3 s of CPU per Next-token click:
    0.43 s per click in all, 0.065 s with these objects frozen (one session, 20 clicks). kvviz now also turns that
    per-run collection off (.streamlit/config.toml); Python's own generational collector still runs, and its
    full collections skip what is frozen here. Frozen objects are still freed by reference counting; only cycles
    among them are never collected: modules live as long as the process anyway, and a model dropped from
    st.cache_resource keeps at most its cyclic part."""
    gc.collect()
    gc.freeze()


_loaded_keys: set[tuple[str, str]] = set()  # what this process has loaded (only decides whether to say "wait")


def model_offered(spec: str) -> bool:
    """Whether this server would load `spec` at all: always on localhost; in shared mode only the bundled
    and the teacher's listed models (a page can hide the others from its own menus)."""
    policy = shared_mode.current_policy()
    return not policy.enabled or spec in loading.BUNDLED_MODELS or policy.find(spec) is not None


def cached_model(spec: str, attn_implementation: str = "eager") -> loading.LoadedModel:
    """The model for `spec`, shared across sessions (never mutate it). Raises loading.ModelLoadError.

    In shared mode only the bundled and the teacher's listed models are loaded, under the cap, with no
    download, and the error message never names a server path, whatever the caller passes.
    """
    policy = shared_mode.current_policy()
    if not model_offered(spec):
        raise loading.ModelLoadError(_(shared_mode.NOT_OFFERED))
    offered = policy.find(spec) if policy.enabled else None
    source = offered.source if offered is not None else spec
    busy_s = loading.load_busy_for_s()
    waiting = None
    if busy_s is not None and (spec, attn_implementation) not in _loaded_keys:
        waiting = st.info(
            _("Another model is loading on this server (for {seconds:.0f} s). Yours starts as soon as it "
              "finishes: one load at a time keeps the server's memory safe.").format(seconds=busy_s),
            icon=":material/hourglass_top:",
        )
    try:
        with st.spinner(_("Loading the model...")):  # shown only past half a second: a cached model shows nothing
            return _cached_load(spec, source, attn_implementation, policy.cap, not policy.enabled, offered)
    except loading.ModelLoadError as exc:
        raise loading.ModelLoadError(policy.redact(str(exc))) from None
    finally:
        if waiting is not None:
            waiting.empty()


def ensure_router() -> None:
    """Make app.py the router from the very first run of a fresh server, even on a deep link; set the language.

    Streamlit 1.67 (upstream: streamlit/streamlit#10276, #9624): a fresh process sees the `pages/` folder and sets
    the class flag `PagesManager.uses_pages_directory`; the script runner then runs that first session's first run
    in the legacy multipage mode (`_mpa_v1`): it sends the client a page list of every file in pages/ plus the
    main script ("app", "internals shared": what a class saw flash in the sidebar) and executes the deep-linked page
    file by itself, without app.py. Only a call to `st.navigation` clears the flag. The old workaround cleared it
    and called st.rerun(): the client was told the run had finished (the main area blank, the legacy list shown)
    and the page came only with the rerun, seconds later on a busy laptop (issue 29). Now, with the legacy list
    hidden (`client.showSidebarNavigation = false` in .streamlit/config.toml; app.py draws the navigation itself),
    a page file run alone runs app.py in place, inside this same run: app.py's `st.navigation` routes to the page
    the URL asked for and draws it, and st.stop() ends the outer copy. One run, no rerun, no blank page.
    Called from app.py (the router itself, run as the legacy main page by AppTest), clearing the flag is enough.
    PagesManager and the script context's page registry are Streamlit's private API: this is the one place kvviz
    touches them.
    """
    from streamlit.runtime.pages_manager import PagesManager

    PagesManager.uses_pages_directory = False
    caller = sys._getframe(1).f_globals.get("__file__")  # app.py is the router itself: clearing the flag is enough
    if _in_a_legacy_run(caller):
        _run_router_in_place()
        st.stop()
    apply_language()


def _in_a_legacy_run(caller: str | None) -> bool:
    """Whether `caller`, a page file, runs by itself, routed by the legacy pages/ mode: the run's page registry lists
    the main script (st.navigation's registry never does). Read per run, not from the class flag: two first
    visitors on a fresh server may both start in legacy mode before either clears the flag."""
    import os

    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx(suppress_warning=True)
    if ctx is None:
        return False
    main = os.path.realpath(ctx.pages_manager.main_script_path)
    if caller is None or os.path.realpath(caller) == main:
        return False
    return any("url_pathname" in page and os.path.realpath(page.get("script_path") or "") == main
               for page in ctx.pages_manager.get_pages().values())


def _run_router_in_place() -> None:
    """Execute the main script (app.py) inside the current run, as Streamlit's own Page.run executes a page."""
    import types

    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    main = ctx.pages_manager.main_script_path
    module = types.ModuleType("__main__")
    module.__dict__["__file__"] = str(main)
    # Under the main script's hash, as a normal run executes app.py: widget ids depend on it, and the sidebar's
    # widgets drawn here must be the same widgets in every later run (else the model radio forgot its choice).
    with ctx.run_with_active_hash(ctx.pages_manager.main_script_hash):
        exec(ctx.pages_manager.get_page_script_byte_code(str(main)), module.__dict__)  # noqa: S102


# The interface language. LANGUAGE_KEY holds the session's language, decided at the top of every run (app.py and
# every page call ensure_router first); kvviz.i18n reads it through _session_language, which apply_language installs
# (not an import of this module), so fragment reruns and widget callbacks, which run without the page's top,
# translate the same way.
LANGUAGE_KEY = "kvviz_language"
_LANGUAGE_PICKER_KEY = "app_language"


def _session_language() -> str | None:
    from streamlit.runtime.scriptrunner import get_script_run_ctx  # public re-export, used to test for a session

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
    value that names no language (unknown, empty, huge) is dropped from the URL, silently."""
    i18n.set_resolver(_session_language)  # the same function every run: later calls change nothing
    linked = st.query_params.get_all(i18n.QUERY_PARAM)
    chosen = i18n.normalize(linked[-1]) if linked else None
    if chosen is None:
        chosen = st.session_state.get(LANGUAGE_KEY) or i18n.from_browser(_browser_locale())
    st.session_state[LANGUAGE_KEY] = chosen
    if linked != [chosen]:
        st.query_params[i18n.QUERY_PARAM] = chosen
    return chosen


def _browser_locale() -> str | None:
    try:
        return st.context.locale
    except Exception:  # noqa: BLE001 - no browser context (AppTest, a bare run): no preference
        return None


def keep_choices_across_languages() -> None:
    """(In the language switch's callback, before the language changes.) Every keyed widget that keeps its value
    as a shown label gets its value written back as the option itself, read while the previous run's labels still
    decode it. Without this the browser sends back the old language's label, which no option has in the new one:
    the widget fell back to its first option or handed the label on (issue 29: KeyError on the model radio's
    Chinese label in its callback, and on the ops page's "loaded model" label; the lesson's "End").
    Written back, each widget's state holds its language-free option and the browser is sent the new label.
    Which widgets: those whose value decoder is an options widget's (radio, selectbox, multiselect, segmented
    control, pills, select slider), read from Streamlit's widget metadata (private: a button, an uploader, a data
    editor or a chart selection must never be written)."""
    from streamlit.runtime.state import get_session_state

    try:
        state = get_session_state()._state  # SessionState behind st.session_state's proxy
        metadata = state._new_widget_state.widget_metadata
        keys = [key for key in list(st.session_state.keys())
                if (wid := state._key_id_mapper.get_id_from_key(key)) in metadata
                and hasattr(getattr(metadata[wid].deserializer, "__self__", None), "format_func")]
    except (AttributeError, KeyError):  # another Streamlit: nothing kept, nothing broken
        return
    for key in keys:
        st.session_state[key] = st.session_state[key]


def sidebar_language_switch() -> None:
    """Sidebar: English / 简体中文, each named in its own language. The choice is kept for the session and in
    the URL (?lang=), and every page redraws in it at once."""
    if st.session_state.get(_LANGUAGE_PICKER_KEY) != i18n.current():  # a link or the browser decided it
        st.session_state[_LANGUAGE_PICKER_KEY] = i18n.current()

    def _on_change() -> None:
        keep_choices_across_languages()
        st.session_state[LANGUAGE_KEY] = st.session_state[_LANGUAGE_PICKER_KEY]
        st.query_params[i18n.QUERY_PARAM] = st.session_state[LANGUAGE_KEY]

    st.sidebar.segmented_control(
        "Language / 语言", list(i18n.LANGUAGES), format_func=i18n.LANGUAGES.__getitem__, key=_LANGUAGE_PICKER_KEY,
        on_change=_on_change, selection_mode="single", required=True,
    )
    set_document_language()


# Streamlit's index.html says <html lang="en"> whatever the page's language (streamlit#15726); a screen reader
# then reads a Chinese page with English rules, and WCAG 3.1.1 asks for the page's own language. This script,
# drawn once per run beside the language switch, sets it; it runs again whenever the language changes (its text
# changes). Its container is hidden, so it takes no room in the sidebar.
_DOCUMENT_LANGUAGE_KEY = "kvviz_document_language"
_DOCUMENT_LANGUAGE_JS = "<script>document.documentElement.lang = __LANG__;</script>"


# Text readable at WCAG AA's 4.5:1 in both themes (issue 35; tests/test_browser_axe.py). Streamlit draws captions,
# radio captions and a button's shortcut hint at 60% opacity of the text colour (3.88:1 on white): kvviz puts
# essential text there (sources, the counting convention, model names), so 80% (about 7:1 on white, 10:1 on the
# dark theme). A selected segment (the language switch, the lesson's step) and a slider's value were drawn in the
# primary red on its 10% tint (4.23:1; 3.25:1 dark): the text colour instead, the selection still shown by its
# tint, its border and a heavier weight, never by colour alone. A page's sections are st.header (h2, under the
# page's h1 title: headings in order), drawn at st.subheader's size as before. A link reached with Tab (the sidebar's
# pages, every page link) showed its focus only as a 15% grey tint: it gets an outline in the text's colour. A chart's
# text for a screen reader drawn as an element of its own (screen_reader_text) is out of the flow: no gap on screen.
# Muted text kvviz draws itself (a hint in the stage's readout, the token strip's note) takes the class MUTED: the
# captions' one rule, never an opacity of its own (tests/test_figures_readable.py finds any).
MUTED = "kvviz-muted"
READABLE_CSS = """<style>
[data-testid="stCaptionContainer"], kbd[aria-label^="Shortcut"], .kvviz-muted { opacity: 0.8 !important; }
button[data-selected="true"][data-variant] { color: inherit !important; font-weight: 600; }
[data-testid="stSliderThumbValue"] { color: inherit !important; }
[data-testid="stMain"] h2 { font-size: 1.75rem !important; }
a:focus-visible { outline: 2px solid currentColor !important; outline-offset: 1px; }
[data-testid="stElementContainer"]:has(.kvviz-sr-only) { position: absolute !important; width: 1px !important;
  min-width: 0 !important; height: 1px !important; padding: 0 !important; margin: -1px !important;
  overflow: hidden !important; clip: rect(0,0,0,0) !important; }
</style>"""


# Visually hidden, read by a screen reader (the usual "sr-only" rules): a chart's data as text (issue 35).
SCREEN_READER_ONLY = ("position:absolute;width:1px;height:1px;padding:0;margin:-1px;overflow:hidden;"
                      "clip:rect(0,0,0,0);white-space:nowrap;border:0")


def table(rows: list[dict], **kwargs) -> None:
    """st.dataframe of `rows`, one dict a row (its keys are the columns, in order). pandas is imported here, when a
    table is drawn, not at a page's top: a fresh server's first visit runs the page's imports before anything is
    drawn, and pandas' ~0.6 s (more with a core busy) came before the sidebar and the title (bench/first_render.py)."""
    import pandas as pd

    st.dataframe(pd.DataFrame(rows), **kwargs)


def screen_reader_span(text: str) -> str:
    """`text` (escaped) in a visually hidden span: a screen reader reads it, the eye does not see it. A chart's data
    as a sentence (kvviz.figures' *_figure_text), put inside an element already drawn beside the chart (the stage's
    readout)."""
    return f'<span class="kvviz-chart-text" style="{SCREEN_READER_ONLY}">{html.escape(text)}</span>'


def screen_reader_text(text: str, where=None) -> None:
    """screen_reader_span as an element of its own, drawn in `where` (a column or container; the page when None)
    right after its chart. READABLE_CSS takes that element out of the page's flow, so it leaves no gap either."""
    (st if where is None else where).html(f'<div class="kvviz-sr-only">{screen_reader_span(text)}</div>')


def chart(where, fig, text: str | None = None, **kwargs) -> None:
    """`where`.plotly_chart(fig, **kwargs) (where: st, a column or a container), then the chart's data as visually
    hidden text for a screen reader: `text`, or what kvviz.figures.describe reads off the figure's traces."""
    from kvviz.figures import describe  # plotly, imported by the pages that draw a chart anyway

    where.plotly_chart(fig, **kwargs)
    screen_reader_text(describe(fig) if text is None else text, None if where is st else where)


def set_document_language() -> None:
    """<html lang> follows the interface language: "zh-CN" on a Chinese page, "en" on an English one. (With the
    style that keeps text readable, READABLE_CSS: both belong to every page, drawn once per run.)"""
    st.html(f"<style>.st-key-{_DOCUMENT_LANGUAGE_KEY}, :has(> .st-key-{_DOCUMENT_LANGUAGE_KEY}) "
            "{ display: none; }</style>")  # the container and its layout wrapper: no gap left in the sidebar
    st.html(READABLE_CSS)
    st.sidebar.container(key=_DOCUMENT_LANGUAGE_KEY).html(
        _DOCUMENT_LANGUAGE_JS.replace("__LANG__", json.dumps(i18n.current())), unsafe_allow_javascript=True)


def link_params() -> dict[str, str]:
    """What every link kvviz builds carries: the language and the model (see add_model_to_link)."""
    return add_model_to_link({i18n.QUERY_PARAM: i18n.current()})


def sidebar_navigation(sections: dict[str, list]) -> None:
    """Sidebar: a link to every page, under its section's header (the pages st.navigation routes to). Drawn by
    kvviz, not by Streamlit's navigation widget, so that the language switch sits above it (issue 29), and so that
    Streamlit's own list, hidden by client.showSidebarNavigation = false, never shows the legacy pages/ files."""
    nav = st.sidebar.container(key="kvviz_nav")
    for header, pages in sections.items():
        if header:
            nav.caption(header)
        for page in pages:
            nav.page_link(page, query_params=link_params())


def drop_refused_link_numbers(keys: list[str], notices_key: str) -> list[str]:
    """Before a page's URL-bound number inputs are drawn: link values that are no whole number (inf, 1e309,
    thousands of digits, words) are taken out of the URL and the page reruns once without them; returns the
    notices saying what was ignored (shown once). Streamlit's number_input raises OverflowError on such a value
    while it seeds itself from the URL (kvviz.inputs.query_values checks the text before any widget parses it)."""
    from kvviz.inputs import query_values

    refused = query_values.refused_link_numbers({k: st.query_params.get_all(k) for k in keys if k in st.query_params},
                                                keys)
    if refused:
        for key in refused:
            try:
                del st.query_params[key]
            except Exception:  # noqa: BLE001 - already bound by an earlier run: Streamlit keeps the widget's value
                pass
        st.session_state[notices_key] = [*st.session_state.get(notices_key, []), *refused.values()]
        st.rerun()  # the rerun's link no longer holds them (st.query_params updates the run's query string)
    return st.session_state.pop(notices_key, [])


def warm_up_in_background(delay_s: float = 2.0) -> None:
    """Once per process: import the slow modules in a daemon thread (no Streamlit calls in it).

    The thread waits delay_s first: an import holds the GIL most of the time, and starting at once made
    the first render 1.4 s slower (measured with bench/first_render.py) instead of faster.
    """
    if _warm_up_started.is_set():
        return
    _warm_up_started.set()

    def _import() -> None:
        time.sleep(delay_s)
        with _IMPORT_LOCK:
            for name in ("torch", "transformers", "pandas", "kvviz.step.engine"):
                importlib.import_module(name)
        _freeze_long_lived_objects()

    threading.Thread(target=_import, name="kvviz-warm-up", daemon=True).start()


def current_info() -> loading.ModelInfo:
    """Description of the sidebar's model; for a bundled model read from disk without importing torch."""
    spec = st.session_state.get(MODEL_SPEC_KEY, loading.BUNDLED)
    return loading.bundled_info(name=spec) if spec in loading.BUNDLED_MODELS else current_model().info


def current_model(attn_implementation: str = "eager") -> loading.LoadedModel:
    """The model chosen in the sidebar. A session keeps the model its generation runs on: when the shared cache
    has dropped it (st.cache_resource keeps at most four models: five students on five models evict one), the
    session's engine still holds it, and that very object serves the session on, with nothing reloaded or lost.
    The one fallback: a session whose model cannot be had at all (refused in shared mode, or evicted and now
    failing to load) goes back to the bundled model, with a notice; its generation is kept for its model."""
    spec = st.session_state.get(MODEL_SPEC_KEY, loading.BUNDLED)
    held = _held_model(spec, attn_implementation)
    if held is not None:
        return held
    try:
        return cached_model(spec, attn_implementation)
    except loading.ModelLoadError as exc:
        if spec == loading.BUNDLED:
            raise
        st.session_state[MODEL_SPEC_KEY] = loading.BUNDLED
        st.session_state[MODEL_NOTICE_KEY] = _("{error} Back on the bundled model.").format(error=exc)
        return cached_model(loading.BUNDLED, attn_implementation)


ENGINE_KEYS = (STEP_ENGINE_KEY, "lesson_engine")  # the session's stepping engines (step page, lesson)


def _held_model(spec: str, attn_implementation: str) -> loading.LoadedModel | None:
    """The model a started engine of this session runs on, if it is `spec` (and still offered)."""
    for key in ENGINE_KEYS:
        engine = st.session_state.get(key)
        loaded = getattr(engine, "loaded", None)
        if (loaded is not None and engine.started and loaded.info.spec == spec
                and loaded.info.attn_implementation == attn_implementation and model_offered(spec)):
            return loaded
    return None


_KIND_KEY, _NAME_KEY, _ARCH_KEY, _SHARED_KEY = "app_model_kind", "app_model_name", "app_model_arch", "app_model_offered"
_KINDS = {  # radio option (its English label, the same in every language) -> kind (localhost mode); each bundled
    # model is a kind of its own (its spec). The radio shows _kind_label(option).
    **{f"{b.title} (offline)": name for name, b in loading.BUNDLED_MODELS.items()},
    N_("Pretrained GPT-2 (name or local folder)"): "pretrained",
    N_("GPT-2 shape with random weights"): "random",
}


def _bundled_option(title: str) -> str:
    """A bundled model's name in a model picker, in the interface language."""
    return _("{title} (offline)").format(title=_(title))


def _kind_label(option: str) -> str:
    kind = _KINDS[option]
    return _bundled_option(loading.BUNDLED_MODELS[kind].title) if kind in loading.BUNDLED_MODELS else _(option)


def _kind_of(spec: str) -> str:
    if spec.startswith(loading.RANDOM_PREFIX):
        return "random"
    return spec if spec in loading.BUNDLED_MODELS else "pretrained"


SESSION_SEEN_WINDOW_S = 300  # a session that ran no script for 5 minutes is not counted as active
_SEEN_LOCK = threading.Lock()


@st.cache_resource(show_spinner=False)
def _sessions_last_seen() -> dict[str, float]:
    """{session id: time.monotonic() of its last run}, one dict per server process."""
    return {}


def note_session_active() -> None:
    """Stamp this session as active (called by sidebar_model_picker, which app.py draws on every run, and by
    other_active_sessions). Public API only: a random id kept in the session's own state, instead of Streamlit's
    private session manager."""
    session_id = st.session_state.setdefault("kvviz_session_id", uuid.uuid4().hex)
    now = time.monotonic()
    seen = _sessions_last_seen()
    with _SEEN_LOCK:
        seen[session_id] = now
        for stale in [k for k, t in seen.items() if now - t > SESSION_SEEN_WINDOW_S]:
            del seen[stale]


def other_active_sessions() -> int:
    """Other browser sessions that ran a script on this server in the last SESSION_SEEN_WINDOW_S seconds."""
    note_session_active()
    now = time.monotonic()
    with _SEEN_LOCK:
        return sum(1 for k, t in _sessions_last_seen().items()
                   if k != st.session_state["kvviz_session_id"] and now - t <= SESSION_SEEN_WINDOW_S)


def add_model_to_link(params: dict[str, str]) -> dict[str, str]:
    """`params` with the session's model added (?model=<spec>): every link kvviz builds calls this, so a student
    opening a teacher's link gets the teacher's model (issue 29); the sidebar applies it (apply_linked_model)."""
    return {**params, MODEL_QUERY_PARAM: st.session_state.get(MODEL_SPEC_KEY, loading.BUNDLED)}


def _apply_linked_model() -> None:
    """(Before the picker is drawn.) A link's ?model= becomes the session's model when it differs; a model this
    server does not offer, or one that fails to load, is refused with one line and the current model kept. The
    address bar then carries the session's model, as it carries the language."""
    linked = st.query_params.get_all(MODEL_QUERY_PARAM)
    spec = st.session_state[MODEL_SPEC_KEY]
    if linked and linked[-1] != spec:
        wanted = linked[-1].strip()
        if not wanted or len(wanted) > _MODEL_LINK_MAX_CHARS or not model_offered(wanted):
            st.session_state[MODEL_NOTICE_KEY] = _(LINKED_MODEL_REFUSED).format(model=current_info().shown_label())
        else:
            _switch_to(wanted)  # a load that fails leaves its one line (the reason; the model in use stays)
        spec = st.session_state[MODEL_SPEC_KEY]
    if linked != [spec] and (linked or spec != loading.BUNDLED):
        st.query_params[MODEL_QUERY_PARAM] = spec


LINKED_MODEL_REFUSED = N_("The link's model is not offered on this server: you stay on {model}.")


def sidebar_model_picker() -> None:
    """Sidebar: choose the model every page uses. Localhost: bundled / any pretrained name or folder / a
    random-weights shape. Shared mode: a list of the offered models, and nothing free-form.

    Switching happens in widget callbacks: a load that fails leaves the previous model in place, and
    the widget is put back to it, with a one-line notice."""
    note_session_active()
    st.session_state.setdefault(MODEL_SPEC_KEY, loading.BUNDLED)
    policy = shared_mode.current_policy()
    spec = st.session_state[MODEL_SPEC_KEY]
    if not model_offered(spec):
        st.session_state[MODEL_SPEC_KEY] = loading.BUNDLED  # a forged or stale value: refuse it, load nothing
        st.session_state[MODEL_NOTICE_KEY] = _(shared_mode.NOT_OFFERED)
    _apply_linked_model()
    with st.sidebar:
        st.markdown("### " + _("Model"))
        if policy.enabled:
            _shared_picker(policy)
        else:
            _local_picker()
        info = current_info()
        notice = st.session_state.pop(MODEL_NOTICE_KEY, None)
        if notice:
            st.warning(notice, icon=":material/info:")
        st.caption(info.shown_label())


def _shared_picker(policy: shared_mode.SharedPolicy) -> None:
    labels = {name: _bundled_option(spec.title) for name, spec in loading.BUNDLED_MODELS.items()}
    labels |= {m.name: m.shown_label() for m in policy.offered}
    if st.session_state.get(_SHARED_KEY) not in labels:  # first run, or a forged value: show the real model
        st.session_state[_SHARED_KEY] = st.session_state[MODEL_SPEC_KEY]
    st.radio(_("Which model"), list(labels), format_func=labels.__getitem__, key=_SHARED_KEY,
             on_change=lambda: _switch_to(st.session_state[_SHARED_KEY], _SHARED_KEY))
    st.caption(_("Shared server: the teacher chose these models. One load at a time, at most {cap}.").format(
        cap=policy.cap.describe()))


def _local_picker() -> None:
    spec = st.session_state[MODEL_SPEC_KEY]
    kind = _kind_of(spec)
    if st.session_state.get(_KIND_KEY) not in _KINDS or (
        _KINDS[st.session_state[_KIND_KEY]] != "pretrained" and _KINDS[st.session_state[_KIND_KEY]] != kind
    ):  # keep the radio on the model in use (a fallback may have changed it); "pretrained" may wait for Load
        st.session_state[_KIND_KEY] = next(label for label, k in _KINDS.items() if k == kind)
    if kind == "random":
        st.session_state[_ARCH_KEY] = spec.removeprefix(loading.RANDOM_PREFIX)
    choice = _KINDS[st.radio(_("Which model"), list(_KINDS), format_func=_kind_label, key=_KIND_KEY,
                             on_change=_on_kind_change)]
    if choice == "pretrained":
        st.session_state.setdefault(_NAME_KEY, spec if kind == "pretrained" else "gpt2")
        st.text_input(_("Name or folder"), key=_NAME_KEY, max_chars=1000,
                      help=_("e.g. gpt2, distilgpt2, gpt2-medium (from the Hugging Face cache), or a local folder"))
        st.button(_("Load"), key="app_model_load", on_click=_on_load)
    elif choice == "random":
        st.session_state.setdefault(_ARCH_KEY, "gpt2")
        st.selectbox(_("Architecture"), list(GPT2_FAMILY), key=_ARCH_KEY,
                     on_change=lambda: _switch_to(loading.RANDOM_PREFIX + st.session_state[_ARCH_KEY], _ARCH_KEY))


def _on_kind_change() -> None:
    kind = _KINDS.get(st.session_state[_KIND_KEY])
    if kind is None:  # never expected (see keep_choices_across_languages): keep the model, redraw the radio
        return
    if kind in loading.BUNDLED_MODELS:
        _switch_to(kind, _KIND_KEY)
    elif kind == "random":
        _switch_to(loading.RANDOM_PREFIX + st.session_state.get(_ARCH_KEY, "gpt2"), _KIND_KEY)


def _on_load() -> None:
    name = st.session_state.get(_NAME_KEY, "").strip()
    if name:
        _switch_to(name)


def _switch_to(spec: str, widget_key: str | None = None) -> None:
    """(A widget callback.) Make `spec` the session's model; if it cannot be loaded, keep the previous
    model, put the widget back, and leave a one-line notice."""
    previous = st.session_state.get(MODEL_SPEC_KEY, loading.BUNDLED)
    try:
        cached_model(spec)
    except loading.ModelLoadError as exc:
        st.session_state[MODEL_NOTICE_KEY] = str(exc)
        if widget_key == _SHARED_KEY:
            st.session_state[_SHARED_KEY] = previous
        elif widget_key == _ARCH_KEY and _kind_of(previous) == "random":
            st.session_state[_ARCH_KEY] = previous.removeprefix(loading.RANDOM_PREFIX)
        elif widget_key is not None:
            st.session_state[_KIND_KEY] = next(label for label, k in _KINDS.items() if k == _kind_of(previous))
        return
    st.session_state[MODEL_SPEC_KEY] = spec
    if MODEL_QUERY_PARAM in st.query_params or spec != loading.BUNDLED:
        st.query_params[MODEL_QUERY_PARAM] = spec  # the address bar follows, so the link never switches back


def step_engine(loaded: loading.LoadedModel, key: str = STEP_ENGINE_KEY) -> StepEngine:
    """This session's stepping engine for `loaded`. One generation per model: switching the model parks the
    generation on the old one (its prompt and tokens, no model held) and restores the new model's parked
    generation, if any, by replaying exactly the tokens it fed; the page shows engine_notice(key) once. The
    lesson keeps its own (key="lesson_engine") so it never disturbs the step page's cache."""
    from kvviz.step.engine import StepEngine

    engine = st.session_state.get(key)
    if engine is not None and engine.loaded is loaded:
        return engine
    parked = st.session_state.setdefault(f"{key}_parked", {})
    if engine is not None and engine.loaded.info.spec == loaded.info.spec:
        if engine.started:  # the same model reloaded (another attention, or dropped and back): replay onto it
            parked[loaded.info.spec] = engine.parked()
    elif engine is not None and engine.started:
        parked[engine.loaded.info.spec] = engine.parked()
        steps = len(engine.records) - 1
        st.session_state[f"{key}_notice"] = ngettext(
            "Your generation on {model} ({n} step) is kept: choose that model again in the sidebar to go on with it.",
            "Your generation on {model} ({n} steps) is kept: choose that model again in the sidebar to go on with it.",
            steps).format(model=engine.loaded.info.shown_label(), n=steps)
    engine = StepEngine(loaded)
    back = parked.pop(loaded.info.spec, None)
    if back is not None:
        try:
            engine.restore(back)
            st.session_state[f"{key}_notice"] = ngettext(
                "Restored your generation on {model}: the prompt and {n} step, replayed.",
                "Restored your generation on {model}: the prompt and {n} steps, replayed.",
                back.steps).format(model=loaded.info.shown_label(), n=back.steps)
        except ValueError as exc:  # PromptError / ContextFullError: say it, keep the page alive
            engine.reset()
            st.session_state[f"{key}_notice"] = _("Your earlier generation on this model could not be replayed: "
                                                  "{error}").format(error=exc)
    st.session_state[key] = engine
    return engine


def engine_notice(key: str = STEP_ENGINE_KEY) -> str | None:
    """The one-time line step_engine left for the page (a generation kept, restored, or not replayable)."""
    return st.session_state.pop(f"{key}_notice", None)
