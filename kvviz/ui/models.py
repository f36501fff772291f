"""Models and sessions: the cached model and the shared-server policy, the session's model, the warm-up import,
and which sessions are active (the stepping engines a session runs on them: kvviz.ui.engines).

Models are loaded once per process with `st.cache_resource` and shared by every session, so they are never mutated
here; per-user state lives in `st.session_state`. Every model a page gets goes through `cached_model`, which applies
the shared-server policy (kvviz.model.shared_mode: only offered models, a cap per load, no server paths in messages)
and shows a wait message while another session's load runs (one load at a time per server, kvviz.model.loading).

Start-up: importing torch + transformers costs seconds on a 2-core laptop. The first page (home) needs
only `current_info()`, which reads the bundled model's description from disk, so it renders without them, and
kvviz.ui.warm loads the bundled model in a daemon thread (at the server's start, or after a session's first page)
through `preload_model`, into the very cache entry `cached_model` reads; a page that needs the model while that
load runs waits for it (Streamlit's lock per cache entry) instead of starting a second one.
"""

from __future__ import annotations

import dataclasses
import gc
import importlib
import threading
import time
import uuid

import streamlit as st

from kvviz.i18n import _
from kvviz.model import loading, shared_mode
from kvviz.ui.links import MODEL_SPEC_KEY

# hash_funcs for st.cache_data over a LoadedModel argument: a model is identified by what was asked for and how
# its attention runs (the shared model object itself is not hashable content).
MODEL_HASH = {loading.LoadedModel: lambda loaded: (loaded.info.spec, loaded.info.attn_implementation)}

# transformers resolves its classes lazily; two threads importing it at once (the warm-up thread and a page
# loading a model) made `from transformers import GPT2LMHeadModel` fail. Both import under this lock.
_IMPORT_LOCK = threading.Lock()

# Interactive pages run one tiny forward pass per click, and Streamlit serves each session in its own thread.
# Intra-op parallelism only adds hand-off cost there: on a 2-core machine with other work running, a decode
# step of the bundled model took 1.1 ms with 1 torch thread and 124 ms with 2 (median of 40 steps).
# The benchmark harness (kvviz.speedup.harness) sets its own thread count for its runs, under its lock.
INTERACTIVE_TORCH_THREADS = 1

MODEL_NOTICE_KEY = "model_notice"


@st.cache_resource(show_spinner=False, max_entries=4)  # the spinner's text is the session's language: cached_model
def _cached_load(
    spec: str,
    source: str,
    attn_implementation: str,
    cap: loading.LoadCap | None,
    allow_download: bool,
    offered: shared_mode.OfferedModel | None = None,
) -> loading.LoadedModel:
    with _IMPORT_LOCK:
        import pandas  # noqa: F401  (plotly in another session can see a half-imported pandas: import it whole here)
        import torch
        import transformers  # noqa: F401  (finish the import before loading: see _IMPORT_LOCK)

        from kvviz.model import loaders  # torch and transformers at its top: imported under the lock, like them

    torch.set_num_threads(INTERACTIVE_TORCH_THREADS)
    loaded = loaders.load_model(source, attn_implementation, cap=cap, allow_download=allow_download)
    _freeze_long_lived_objects()
    _loaded_keys.add((spec, attn_implementation))
    if loaded.info.spec == spec and offered is None:
        return loaded
    # A teacher-listed model: the session knows it by its offered name and the teacher's label only, never by
    # its server path or folder name.
    if offered is None:
        return dataclasses.replace(loaded, info=dataclasses.replace(loaded.info, spec=spec))
    return dataclasses.replace(
        loaded, info=dataclasses.replace(loaded.info, spec=spec, label=offered.label, label_text=offered.label_text)
    )


def _freeze_long_lived_objects() -> None:
    """Move every object alive now (torch, transformers, the loaded models) out of the garbage collector's view.

    Streamlit runs a full gc.collect() after every script run by default, fragment runs included
    (runner.postScriptGC). With torch and transformers loaded that walk cost ~0.3 s of CPU per Next-token click:
    0.43 s per click in all, 0.065 s with these objects frozen (one session, 20 clicks). kvviz also turns that
    per-run collection off (.streamlit/config.toml); Python's own generational collector still runs, and its
    full collections skip what is frozen here. Frozen objects are still freed by reference counting; only cycles
    among them are never collected: modules live as long as the process anyway, and a model dropped from
    st.cache_resource keeps at most its cyclic part."""
    gc.collect()
    gc.freeze()


_loaded_keys: set[tuple[str, str]] = set()  # what this process has loaded (only decides whether to say "wait")


def current_policy() -> shared_mode.SharedPolicy:
    """The shared-server policy of this server: shared mode is on when it listens beyond loopback (Streamlit's
    server.address) unless the teacher's KVVIZ_SHARED says otherwise (kvviz.model.shared_mode)."""
    return shared_mode.current_policy(st.get_option("server.address"))


def model_offered(spec: str) -> bool:
    """Whether this server would load `spec` at all: always on localhost; in shared mode only the bundled
    and the teacher's listed models (a page can hide the others from its own menus)."""
    policy = current_policy()
    return not policy.enabled or spec in loading.BUNDLED_MODELS or policy.find(spec) is not None


def cached_model(spec: str, attn_implementation: str = "eager") -> loading.LoadedModel:
    """The model for `spec`, shared across sessions (never mutate it). Raises loading.ModelLoadError.

    In shared mode only the bundled and the teacher's listed models are loaded, under the cap, with no
    download, and the error message never names a server path, whatever the caller passes.
    """
    policy = current_policy()
    load_args = _load_args(spec, attn_implementation, policy)
    busy_s = loading.load_busy_for_s()
    waiting = None
    if busy_s is not None and (spec, attn_implementation) not in _loaded_keys | _preloading:
        waiting = st.info(
            _(
                "Another model is loading on this server (for {seconds:.0f} s). Yours starts as soon as it "
                "finishes: one load at a time keeps the server's memory safe."
            ).format(seconds=busy_s),
            icon=":material/hourglass_top:",
        )
    try:
        with st.spinner(_("Loading the model...")):  # shown only past half a second: a cached model shows nothing
            return _cached_load(*load_args)
    except loading.ModelLoadError as exc:
        raise loading.ModelLoadError(policy.redact(str(exc))) from None
    finally:
        if waiting is not None:
            waiting.empty()


def _load_args(spec: str, attn_implementation: str, policy: shared_mode.SharedPolicy) -> tuple:
    """_cached_load's arguments for `spec` under `policy` (its cache key: cached_model and preload_model must pass
    the same ones to share an entry). Raises loading.ModelLoadError when this server does not offer `spec`."""
    if not model_offered(spec):
        raise loading.ModelLoadError(_(shared_mode.NOT_OFFERED))
    offered = policy.find(spec) if policy.enabled else None
    source = offered.source if offered is not None else spec
    return spec, source, attn_implementation, policy.cap, not policy.enabled, offered


_preloading: set[tuple[str, str]] = set()  # what preload_model is loading now (a session waiting for it is not told
# "another model is loading": it is its own model, and the spinner says so)


def preload_model(spec: str = loading.BUNDLED, attn_implementation: str = "eager") -> loading.LoadedModel:
    """Load `spec` into the shared cache outside any session (kvviz.ui.warm's thread, at the server's start): the
    same entry cached_model(spec, attn_implementation) returns, under this server's policy. Draws nothing; call it
    once Streamlit has read its configuration (the policy depends on server.address). Raises loading.ModelLoadError."""
    policy = current_policy()
    key = (spec, attn_implementation)
    _preloading.add(key)
    try:
        return _cached_load(*_load_args(spec, attn_implementation, policy))
    except loading.ModelLoadError as exc:
        raise loading.ModelLoadError(policy.redact(str(exc))) from None
    finally:
        _preloading.discard(key)


def import_model_modules() -> None:
    """Import what a model page runs on (torch, transformers, pandas, the stepping engine) under the import lock,
    then keep the long-lived objects out of the garbage collector's walks. For a thread, before any session needs
    them (kvviz.ui.warm)."""
    with _IMPORT_LOCK:
        for name in ("torch", "transformers", "pandas", "kvviz.step.engine"):
            importlib.import_module(name)
    _freeze_long_lived_objects()


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


ENGINES_KEY = "kvviz_engine_keys"  # the session keys its stepping engines are kept under (kvviz.ui.engines)


def _held_model(spec: str, attn_implementation: str) -> loading.LoadedModel | None:
    """The model a started engine of this session runs on, if it is `spec` (and still offered)."""
    for key in st.session_state.get(ENGINES_KEY, ()):
        engine = st.session_state.get(key)
        loaded = getattr(engine, "loaded", None)
        if (
            loaded is not None
            and engine.started
            and loaded.info.spec == spec
            and loaded.info.attn_implementation == attn_implementation
            and model_offered(spec)
        ):
            return loaded
    return None


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
        return sum(
            1
            for k, t in _sessions_last_seen().items()
            if k != st.session_state["kvviz_session_id"] and now - t <= SESSION_SEEN_WINDOW_S
        )
