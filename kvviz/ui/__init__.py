"""The one Streamlit adapter in kvviz: everything else in kvviz is UI-free. One concern per module:

- models.py    the cached model and the shared-server policy, the session's model, its stepping engines (a
               generation parked per model), the warm-up import, which sessions are active
- router.py    ensure_router (app.py routes from a fresh server's first run) and the sidebar's page links
- language.py  each run's language, the sidebar's language switch, <html lang>
- a11y.py      readable text (READABLE_CSS, MUTED), charts and text for a screen reader, tables
- links.py     what every link carries (the language, the model); link numbers no widget could take
- sidebar.py   the sidebar's model picker, and a link's ?model= applied before it

Pages, app.py and tests use the names below as `ui.<name>`.
"""
from __future__ import annotations

from kvviz.ui.a11y import MUTED, READABLE_CSS, SCREEN_READER_ONLY, chart, screen_reader_span, screen_reader_text, table
from kvviz.ui.language import LANGUAGE_KEY, apply_language, sidebar_language_switch
from kvviz.ui.links import add_model_to_link, drop_refused_link_numbers
from kvviz.ui.models import (
    MODEL_HASH, MODEL_SPEC_KEY, STEP_ENGINE_KEY, cached_model, current_info, current_model, engine_notice,
    model_offered, other_active_sessions, step_engine, warm_up_in_background,
)
from kvviz.ui.router import ensure_router, sidebar_navigation
from kvviz.ui.sidebar import LINKED_MODEL_REFUSED, sidebar_model_picker

__all__ = [
    "LANGUAGE_KEY", "LINKED_MODEL_REFUSED", "MODEL_HASH", "MODEL_SPEC_KEY", "MUTED", "READABLE_CSS",
    "SCREEN_READER_ONLY", "STEP_ENGINE_KEY", "add_model_to_link", "apply_language", "cached_model", "chart",
    "current_info", "current_model", "drop_refused_link_numbers", "engine_notice", "ensure_router", "model_offered",
    "other_active_sessions", "screen_reader_span", "screen_reader_text", "sidebar_language_switch",
    "sidebar_model_picker", "sidebar_navigation", "step_engine", "table", "warm_up_in_background",
]
