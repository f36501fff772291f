"""The session's stepping engines: one generation per model and page, parked when the model changes and replayed
when it comes back. A page names the session key its engine lives under (the stage's is STEP_ENGINE_KEY, the
lesson keeps its own so it never disturbs the stage's cache); the keys used are listed in the session, so the
model cache (kvviz.ui.models) can keep a model a started engine still runs on."""

from __future__ import annotations

from typing import TYPE_CHECKING

import streamlit as st

from kvviz.i18n import _, ngettext
from kvviz.model import loading
from kvviz.ui.models import ENGINES_KEY

if TYPE_CHECKING:
    from kvviz.step.engine import StepEngine

STEP_ENGINE_KEY = "step_engine"  # the stage's engine (its cache is per user; the model is shared)


def step_engine(loaded: loading.LoadedModel, key: str = STEP_ENGINE_KEY) -> StepEngine:
    """This session's stepping engine for `loaded`. One generation per model: switching the model parks the
    generation on the old one (its prompt and tokens, no model held) and restores the new model's parked
    generation, if any, by replaying exactly the tokens it fed; the page shows engine_notice(key) once."""
    from kvviz.step.engine import StepEngine

    keys = st.session_state.setdefault(ENGINES_KEY, [])
    if key not in keys:
        keys.append(key)
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
            steps,
        ).format(model=engine.loaded.info.shown_label(), n=steps)
    engine = StepEngine(loaded)
    back = parked.pop(loaded.info.spec, None)
    if back is not None:
        try:
            engine.restore(back)
            st.session_state[f"{key}_notice"] = ngettext(
                "Restored your generation on {model}: the prompt and {n} step, replayed.",
                "Restored your generation on {model}: the prompt and {n} steps, replayed.",
                back.steps,
            ).format(model=loaded.info.shown_label(), n=back.steps)
        except ValueError as exc:  # PromptError / ContextFullError: say it, keep the page alive
            engine.reset()
            st.session_state[f"{key}_notice"] = _(
                "Your earlier generation on this model could not be replayed: {error}"
            ).format(error=exc)
    st.session_state[key] = engine
    return engine


def engine_notice(key: str = STEP_ENGINE_KEY) -> str | None:
    """The one-time line step_engine left for the page (a generation kept, restored, or not replayable)."""
    return st.session_state.pop(f"{key}_notice", None)
