"""The one Streamlit adapter in kvviz: cached resources and small shared widgets.

Everything else in kvviz is UI-free. Models are loaded once per process with `st.cache_resource` and
shared by every session, so they are never mutated here; per-user state lives in `st.session_state`.

Start-up: importing torch + transformers costs seconds on a 2-core laptop. The first page (home) needs
only `current_info()`, which reads the bundled model's description from disk, so it renders at once while
`warm_up_in_background()` imports torch/transformers in a daemon thread; pages that step the model import
them for real (waiting for that thread's import, if it is still running, through Python's import lock).
"""
from __future__ import annotations

import importlib
import threading
import time
from typing import TYPE_CHECKING

import streamlit as st

from kvviz import models

if TYPE_CHECKING:
    from kvviz.stepping import StepEngine

_warm_up_started = threading.Event()
_router_rerun_done = threading.Event()

# Interactive pages run one tiny forward pass per click, and Streamlit serves each session in its own thread.
# Intra-op parallelism only adds hand-off cost there: on a 2-core machine with other work running, a decode
# step of the bundled model took 1.1 ms with 1 torch thread and 124 ms with 2 (median of 40 steps).
# The benchmark harness (kvviz.bench) sets its own thread count for its runs, under its lock.
INTERACTIVE_TORCH_THREADS = 1

MODEL_SPEC_KEY = "model_spec"  # the model every page uses, chosen in the sidebar (app.py)
MODEL_NOTICE_KEY = "model_notice"
STEP_ENGINE_KEY = "step_engine"  # the user's stepping engine (its cache is per user; the model is shared)


@st.cache_resource(show_spinner="Loading the model...", max_entries=4)
def cached_model(spec: str, attn_implementation: str = "eager") -> models.LoadedModel:
    """Shared across sessions (never mutate the returned model). Raises models.ModelLoadError."""
    import torch

    torch.set_num_threads(INTERACTIVE_TORCH_THREADS)
    return models.load_model(spec, attn_implementation)


def ensure_router() -> None:
    """Make app.py the router from the very first run of a fresh server, even on a deep link.

    Streamlit quirk (1.67): a fresh server sees the `pages/` folder and runs its first script run in the
    legacy multipage mode (the "pages/ directory" sidebar, no app.py). Only a call to `st.navigation` clears
    that flag, so a first visit straight to /step_through would render without the router and its model
    picker. Every page calls this first: it clears the class flag and reruns, and the rerun goes through
    app.py's `st.navigation` to the page the URL asked for. Once per process: Streamlit's AppTest resets the
    flag before every run, and rerunning each time there would swallow the button click being tested.
    """
    from streamlit.runtime.pages_manager import PagesManager

    if PagesManager.uses_pages_directory and not _router_rerun_done.is_set():
        _router_rerun_done.set()
        PagesManager.uses_pages_directory = False
        st.rerun()


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
        for name in ("torch", "transformers", "kvviz.stepping"):
            importlib.import_module(name)

    threading.Thread(target=_import, name="kvviz-warm-up", daemon=True).start()


def current_info() -> models.ModelInfo:
    """Description of the sidebar's model; for the bundled model read from disk without importing torch."""
    spec = st.session_state.get(MODEL_SPEC_KEY, models.BUNDLED)
    return models.bundled_info() if spec == models.BUNDLED else current_model().info


def current_model(attn_implementation: str = "eager") -> models.LoadedModel:
    """The model chosen in the sidebar; falls back to the bundled model with a notice if it fails."""
    spec = st.session_state.get(MODEL_SPEC_KEY, models.BUNDLED)
    try:
        return cached_model(spec, attn_implementation)
    except models.ModelLoadError as exc:
        st.session_state[MODEL_SPEC_KEY] = models.BUNDLED
        st.session_state[MODEL_NOTICE_KEY] = str(exc)
        return cached_model(models.BUNDLED, attn_implementation)


def sidebar_model_picker() -> None:
    """Sidebar: choose bundled / pretrained / random-weights GPT-2. Shows a notice if a load failed."""
    st.session_state.setdefault(MODEL_SPEC_KEY, models.BUNDLED)
    with st.sidebar:
        st.markdown("### Model")
        options = {
            "Bundled Tiny-Shakespeare GPT-2 (offline)": models.BUNDLED,
            "Pretrained GPT-2 (name or local folder)": "pretrained",
            "GPT-2 shape with random weights": "random",
        }
        current = st.session_state[MODEL_SPEC_KEY]
        kind = "random" if current.startswith(models.RANDOM_PREFIX) else (
            models.BUNDLED if current == models.BUNDLED else "pretrained"
        )
        labels = list(options)
        choice = st.radio("Which model", labels, index=list(options.values()).index(kind), key="app_model_kind")
        if options[choice] == "pretrained":
            name = st.text_input(
                "Name or folder", value=current if kind == "pretrained" else "gpt2", key="app_model_name",
                help="e.g. gpt2, distilgpt2, gpt2-medium (from the Hugging Face cache), or a local folder",
            ).strip()
            if st.button("Load", key="app_model_load") and name:
                _switch_to(name)
        elif options[choice] == "random":
            arch = st.selectbox("Architecture", list(models.GPT2_SHAPES), index=1, key="app_model_arch")
            if current != models.RANDOM_PREFIX + arch:
                _switch_to(models.RANDOM_PREFIX + arch)
        elif current != models.BUNDLED:
            _switch_to(models.BUNDLED)
        notice = st.session_state.pop(MODEL_NOTICE_KEY, None)
        if notice:
            st.warning(notice)
        st.caption(current_info().label)


def _switch_to(spec: str) -> None:
    try:
        cached_model(spec)
    except models.ModelLoadError as exc:
        st.session_state[MODEL_NOTICE_KEY] = str(exc)
        spec = models.BUNDLED
    st.session_state[MODEL_SPEC_KEY] = spec


def step_engine(loaded: models.LoadedModel) -> StepEngine:
    """This session's stepping engine, rebuilt (empty) whenever the model changes."""
    from kvviz.stepping import StepEngine

    engine = st.session_state.get(STEP_ENGINE_KEY)
    if engine is None or engine.loaded is not loaded:
        engine = StepEngine(loaded)
        st.session_state[STEP_ENGINE_KEY] = engine
    return engine
