"""Cache internals 4: sliding windows. Apply a window (and a local/global layer pattern) to the real cache of a
prompt, check the bytes against the memory calculator, and see Gemma 3's 5:1 pattern per layer."""

from __future__ import annotations

import numpy as np
import streamlit as st

from kvviz.figures import internals as fig
from kvviz.i18n import N_, _, item_sep, ngettext
from kvviz.inputs import echo
from kvviz.inputs.prompt_rules import MAX_TEXT_CHARS, TEXT_CAP_HELP
from kvviz.internals import window
from kvviz.internals.records import PresetLayers, WindowRun
from kvviz.memory import units
from kvviz.model.loading import LoadedModel
from kvviz.ui import a11y, bounded, models, router, sidebar
from pages.internals_shared import DEFAULT_PROMPT, MODEL_HASH, PLOT, explain

PATTERNS = {"all local": None, "1 local : 1 global": 1, "3 local : 1 global": 3}  # option (English) -> local per global
PATTERN_LABELS = {
    "all local": N_("all local"),
    "1 local : 1 global": N_("1 local : 1 global"),
    "3 local : 1 global": N_("3 local : 1 global"),
}


@st.cache_data(show_spinner=False, max_entries=16, hash_funcs=MODEL_HASH)  # spinner at the call, translated
def window_run(loaded: LoadedModel, prompt: str, w: int, local_per_global: int | None) -> tuple[WindowRun, np.ndarray]:
    """The run and the last 48 tokens' visibility mask. Deterministic (no timing): safe to share."""
    from kvviz.internals.lab import window as window_lab  # torch: imported only when the model runs

    run = window_lab.window_on_model(loaded, prompt, w, local_per_global)
    return run, window.visibility(min(len(run.tokens), 48), w)


@st.cache_data(show_spinner=False, max_entries=16)
def gemma_layers(context_len: int) -> PresetLayers:
    return window.preset_layers("gemma-3-4b", context_len)


router.ensure_router()  # before anything is drawn: see its docstring
st.title(_("Sliding windows"))
sidebar.needs_all_attention(models.current_info())  # K/V in every layer: not a hybrid
explain(
    _(
        "A sliding-window layer keeps only the last W rows: older rows are evicted and that layer can no longer "
        "attend to them, so its cache stops growing at W rows. Hybrid models mix local and global layers (Gemma 3: "
        "5 local, then 1 global). Below, the real model runs with full attention on your prompt; we apply the window "
        "to its real cache and measure how much attention the last token paid to rows a window would have evicted. "
        "Per-layer sizes come from the memory calculator and match the real tensors."
    )
)
info = models.current_info()
prompt = st.text_area(
    _("Prompt"), DEFAULT_PROMPT, key="int_window_prompt", height=70, max_chars=MAX_TEXT_CHARS, help=_(TEXT_CAP_HELP)
)
c1, c2 = st.columns(2)
# Each box has its setting's bounds; a value past them (sent by a client, not the box) gets a message.
w = bounded.number(
    c1,
    window.WINDOW.up_to(info.n_positions),
    _("Window W (1..{top} tokens)").format(top=info.n_positions),
    key="int_window_w",
)
pattern = c2.selectbox(
    _("Layer pattern"), list(PATTERNS), format_func=lambda v: _(PATTERN_LABELS[v]), key="int_window_pattern"
)
try:
    with st.spinner(_("Running the model on the prompt...")):
        run, visible = window_run(models.current_model(), prompt, int(w), PATTERNS[pattern])
except window.WindowError as exc:
    st.error(str(exc))
    st.stop()
s = run.state
if s.rows_evicted == 0:
    st.warning(
        ngettext(
            "The prompt has {n} token, not more than W = {w}: nothing is evicted yet. Lower W or lengthen the prompt.",
            "The prompt has {n} tokens, not more than W = {w}: nothing is evicted yet. Lower W or lengthen the prompt.",
            s.seq_len,
        ).format(n=s.seq_len, w=s.window)
    )
m = st.columns(3)
m[0].metric(_("Rows a local layer keeps"), _("{kept} of {n}").format(kept=s.rows_kept, n=s.seq_len))
m[1].metric(
    _("Cache bytes kept"), f"{run.bytes_kept:,}", delta=f"{run.bytes_kept - run.bytes_full:,}", delta_color="inverse"
)
lost = [la.attention_lost for la in run.layers if la.kind == "local"]
m[2].metric(_("Attention on evicted rows (local layers)"), f"{np.mean(lost):.0%}" if lost else _("n/a"))
if run.evicted_tokens:
    st.markdown(
        _("**Evicted (no longer visible to local layers):** {tokens}").format(
            tokens=echo.code("".join(run.evicted_tokens), None)
        )
    )  # the prompt's own words: a code span they cannot close
a11y.chart(
    st,
    fig.window_mask_figure(
        visible,
        run.tokens[: len(visible)],
        ngettext(
            "Local layer: which rows each query sees (W = {w}, first {n} token)",
            "Local layer: which rows each query sees (W = {w}, first {n} tokens)",
            len(visible),
        ).format(w=w, n=len(visible)),
    ),
    **PLOT,
)
a11y.chart(st, fig.window_layers_figure(run), **PLOT)
st.caption(
    _(
        "Calculator bytes per layer: {bytes_} (kvviz.memory.budget) = bytes of the kept slices of the real tensors."
    ).format(bytes_=item_sep().join(f"{la.calculator_bytes:,}" for la in run.layers))
)

ctx = bounded.number(
    st,
    window.GEMMA_CONTEXT,
    _("Gemma 3 4B context (1..{top:,} tokens)").format(top=window.GEMMA_CONTEXT.hi),
    key="int_window_gemma_ctx",
)
p = gemma_layers(ctx)
a11y.chart(st, fig.preset_layers_figure(p), **PLOT)
st.caption(
    _("Gemma 3 4B, one sequence: {hybrid} with its 5:1 pattern vs {all_global} if every layer were global.").format(
        hybrid=units.format_bytes(p.total_bytes), all_global=units.format_bytes(p.all_global_bytes)
    )
)
