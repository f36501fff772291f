"""Cache internals 4: sliding windows. Apply a window (and a local/global layer pattern) to the real cache of a
prompt, check the bytes against the memory calculator, and see Gemma 3's 5:1 pattern per layer."""
from __future__ import annotations

import numpy as np
import streamlit as st

from kvviz import ui
from kvviz.memory import units
from kvviz.figures import internals as fig
from kvviz.internals.records import PresetLayers, WindowError, WindowRun
from kvviz.model.loading import LoadedModel
from kvviz.inputs.prompt_rules import MAX_TEXT_CHARS, TEXT_CAP_HELP, check_int_in_range
from pages.internals_shared import DEFAULT_PROMPT, MODEL_HASH, PLOT, explain

PATTERNS = {"all local": None, "1 local : 1 global": 1, "3 local : 1 global": 3}
GEMMA_MAX_CONTEXT = 131072


@st.cache_data(show_spinner="Running the model on the prompt...", max_entries=16, hash_funcs=MODEL_HASH)
def window_run(loaded: LoadedModel, prompt: str, w: int, local_per_global: int | None) -> tuple[WindowRun, np.ndarray]:
    """The run and the last 48 tokens' visibility mask. Deterministic (no timing): safe to share."""
    from kvviz.internals import window  # torch: imported only when the model runs

    run = window.window_on_model(loaded, prompt, w, local_per_global)
    return run, window.visibility(min(len(run.tokens), 48), w)


@st.cache_data(show_spinner=False, max_entries=16)
def gemma_layers(context_len: int) -> PresetLayers:
    from kvviz.internals import window

    return window.preset_layers("gemma-3-4b", context_len)


ui.ensure_router()  # before anything is drawn: see its docstring
st.title("Sliding windows")
explain(
    "A sliding-window layer keeps only the last W rows: older rows are evicted and that layer can no longer "
    "attend to them, so its cache stops growing at W rows. Hybrid models mix local and global layers (Gemma 3: "
    "5 local, then 1 global). Below, the real model runs with full attention on your prompt; we apply the window "
    "to its real cache and measure how much attention the last token paid to rows a window would have evicted. "
    "Per-layer sizes come from the memory calculator and match the real tensors."
)
info = ui.current_info()
prompt = st.text_area("Prompt", DEFAULT_PROMPT, key="int_window_prompt", height=70, max_chars=MAX_TEXT_CHARS,
                      help=TEXT_CAP_HELP)
c1, c2 = st.columns(2)
# Caps are checked by the library, not clamped by the widget: a value past the cap gets a message.
w = c1.number_input(f"Window W (1..{info.n_positions} tokens)", min_value=1, value=8, key="int_window_w")
pattern = c2.selectbox("Layer pattern", list(PATTERNS), key="int_window_pattern")
try:
    run, visible = window_run(ui.current_model(), prompt, int(w), PATTERNS[pattern])
except WindowError as exc:
    st.error(str(exc))
    st.stop()
s = run.state
if s.rows_evicted == 0:
    st.warning(f"The prompt has {s.seq_len} tokens, not more than W = {s.window}: nothing is evicted yet. "
               "Lower W or lengthen the prompt.")
m = st.columns(3)
m[0].metric("Rows a local layer keeps", f"{s.rows_kept} of {s.seq_len}")
m[1].metric("Cache bytes kept", f"{run.bytes_kept:,}", delta=f"{run.bytes_kept - run.bytes_full:,}",
            delta_color="inverse")
lost = [la.attention_lost for la in run.layers if la.kind == "local"]
m[2].metric("Attention on evicted rows (local layers)", f"{np.mean(lost):.0%}" if lost else "n/a")
if run.evicted_tokens:
    st.markdown("**Evicted (no longer visible to local layers):** `" + "".join(run.evicted_tokens) + "`")
st.plotly_chart(fig.window_mask_figure(visible, run.tokens[: len(visible)],
                                       f"Local layer: which rows each query sees (W = {w}, first {len(visible)} tokens)"), **PLOT)
st.plotly_chart(fig.window_layers_figure(run), **PLOT)
st.caption("Calculator bytes per layer: " + ", ".join(f"{la.calculator_bytes:,}" for la in run.layers)
           + " (kvviz.memory.budget) = bytes of the kept slices of the real tensors.")

ctx = st.number_input(f"Gemma 3 4B context (1..{GEMMA_MAX_CONTEXT:,} tokens)", min_value=1, value=32768,
                      key="int_window_gemma_ctx")
try:
    p = gemma_layers(check_int_in_range(ctx, 1, GEMMA_MAX_CONTEXT, "Gemma 3 4B context (tokens)"))
except ValueError as exc:
    st.error(str(exc))
    st.stop()
st.plotly_chart(fig.preset_layers_figure(p), **PLOT)
st.caption(f"Gemma 3 4B, one sequence: {units.format_bytes(p.total_bytes)} with its 5:1 pattern vs "
           f"{units.format_bytes(p.all_global_bytes)} if every layer were global.")
