"""Cache internals 3: cross-attention. An encoder-decoder keeps a growing self-attention cache beside a fixed
cross-attention cache (a tiny random-weight BART built here; transformers' EncoderDecoderCache holds both)."""

from __future__ import annotations

import streamlit as st

from kvviz.figures import internals as fig
from kvviz.i18n import _, ngettext
from kvviz.internals import crossattn
from kvviz.internals.records import CrossAttnRun
from kvviz.ui import a11y, bounded, router
from pages.internals_shared import PLOT, explain


@st.cache_data(show_spinner=False, max_entries=16)  # the spinner is at the call, in the page's language
def cross_run(source_len: int, n_steps: int) -> CrossAttnRun:
    """Deterministic (fixed seed, no timing): safe to share between sessions."""
    from kvviz.internals.lab import crossattn as crossattn_lab  # torch: imported only when the model runs

    return crossattn_lab.run_cross_attention(source_len, n_steps)


router.ensure_router()  # before anything is drawn: see its docstring
st.title(_("Cross-attention cache"))
explain(
    _(
        "An encoder-decoder model (translation, summarisation) has two caches per decoder layer. The "
        "**self-attention** cache holds the decoder's own tokens and grows by one row per step. The "
        "**cross-attention** cache holds K/V of the encoder's output: computed at the first step, then reused "
        "unchanged. This is a tiny BART built here with **random weights** (2+2 layers, d_model 32), fed token ids "
        "directly; transformers' own `EncoderDecoderCache` holds both caches."
    )
)
c1, c2 = st.columns(2)
# Caps are checked by the library, not clamped by the widget: a value past the cap gets a message.
src = bounded.number(
    c1, crossattn.SOURCE_LEN, _("Source tokens (1..{top})").format(top=crossattn.MAX_SOURCE_LEN), key="int_cross_src"
)
steps = bounded.number(
    c2, crossattn.DECODE_STEPS, _("Decoder steps (1..{top})").format(top=crossattn.MAX_STEPS), key="int_cross_steps"
)
try:
    with st.spinner(_("Building a tiny BART and decoding...")):
        run = cross_run(int(src), int(steps))
except crossattn.CrossAttnError as exc:
    st.error(str(exc))
    st.stop()
st.caption(
    ngettext(
        "Tiny BART with RANDOM weights, built here in milliseconds: {layers} decoder layers x {heads} "
        "heads x head_dim {head_dim}, float32; the encoder ran {n} time for all the steps. The text is "
        "meaningless; the cache mechanics are real.",
        "Tiny BART with RANDOM weights, built here in milliseconds: {layers} decoder layers x {heads} "
        "heads x head_dim {head_dim}, float32; the encoder ran {n} times for all the steps. The text is "
        "meaningless; the cache mechanics are real.",
        run.encoder_passes,
    ).format(layers=run.n_layer, heads=run.n_heads, head_dim=run.head_dim, n=run.encoder_passes)
)
a11y.chart(st, fig.cross_attention_figure(run), **PLOT)
yes_no = {True: _("yes"), False: _("no")}
a11y.text_table(
    [
        {
            _("step"): s.step,
            _("self rows"): s.self_rows,
            _("self bytes"): f"{s.self_bytes:,}",
            _("cross rows"): s.cross_rows,
            _("cross bytes"): f"{s.cross_bytes:,}",
            _("cross K/V equal to step 0"): yes_no[s.cross_equal_to_first],
            _("cross same memory"): yes_no[s.cross_same_storage],
            _("old self rows unchanged"): yes_no[s.self_prefix_equal],
        }
        for s in run.steps
    ],
    alt=_(
        "Each decode step's self-attention and cross-attention rows and bytes, and whether the "
        "cross-attention K/V stayed the same tensors."
    ),
)
