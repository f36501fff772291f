"""Cache internals 7: speculative decoding's rollback. A draft proposes k tokens, the verifier checks them in one
pass, and its cache is cropped back to the accepted length; the output equals plain greedy decoding."""
from __future__ import annotations

import streamlit as st

from kvviz import ui
from kvviz.figures import internals as fig
from kvviz.internals.records import (SPEC_MAX_K, SPEC_MAX_NEW, SPEC_MAX_TEMPERATURE, SPEC_MIN_TEMPERATURE, SpecRun,
                                    SpeculativeError)
from kvviz.models import LoadedModel
from kvviz.prompt_rules import MAX_TEXT_CHARS, TEXT_CAP_HELP
from pages.internals_shared import MODEL_HASH, PLOT, explain


@st.cache_data(show_spinner="Drafting and verifying...", max_entries=16, hash_funcs=MODEL_HASH)
def spec_run(loaded: LoadedModel, prompt: str, n_new: int, k: int, temperature: float) -> SpecRun:
    """Deterministic (fixed seed, no timing): safe to share between sessions."""
    from kvviz.internals import speculative  # torch: imported only when the model runs

    return speculative.speculative_decode(loaded, prompt, n_new, k, temperature)


ui.ensure_router()  # before anything is drawn: see its docstring
st.title("Speculative decoding: rollback")
explain(
    "A draft proposes k tokens; the verifier (the model, greedy) checks all of them in ONE forward pass, which "
    "appends k+1 rows to its cache. It keeps the proposals up to the first disagreement and the cache is "
    "cropped back with `crop_cache`: the rejected rows are removed. Here the draft is the same model sampled at "
    "a temperature (lower = more agreement). The output equals plain greedy decoding."
)
prompt = st.text_area("Prompt", "ROMEO: But soft, what light", key="int_spec_prompt", height=70, max_chars=MAX_TEXT_CHARS,
                      help=TEXT_CAP_HELP)
c1, c2, c3 = st.columns(3)
# Caps are checked by the library, not clamped by the widget: a value past the cap gets a message.
k = c1.number_input(f"Draft length k (1..{SPEC_MAX_K})", min_value=1, value=4, key="int_spec_k")
n_new = c2.number_input(f"Tokens to generate (1..{SPEC_MAX_NEW})", min_value=1, value=16, key="int_spec_n")
temp = c3.number_input(f"Draft temperature ({SPEC_MIN_TEMPERATURE}..{SPEC_MAX_TEMPERATURE:g})", value=0.7, step=0.05,
                       key="int_spec_t")
try:
    run = spec_run(ui.current_model(), prompt, int(n_new), int(k), float(temp))
except SpeculativeError as exc:
    st.error(str(exc))
    st.stop()
m = st.columns(3)
m[0].metric("Acceptance", f"{run.acceptance_rate:.0%}")
m[1].metric(f"Verifier passes (plain greedy: {len(run.tokens)})", run.verifier_passes,
            help="plain greedy decoding needs one pass per generated token, the prefill included")
m[2].metric("Cache vs fresh prefill", f"{run.cache_vs_fresh_max_abs_diff:.1e}")
st.plotly_chart(fig.speculative_figure(run), **PLOT)
st.dataframe([{
    "round": r.index, "proposed": " | ".join(repr(t)[1:-1] for t in r.proposed_text), "accepted": r.accepted,
    "rows before": r.cache_len_before, "after verify": r.cache_len_verified, "after crop": r.cache_len_after_crop,
} for r in run.rounds], hide_index=True)
st.caption(f"The draft made {run.draft_passes} passes of its own; {run.rows_cropped} verifier cache rows were "
           "computed for rejected proposals and cropped away.")
st.markdown(f"**Generated:** `{run.text!r}`")
