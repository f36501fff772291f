"""Count the work: exact matmul operations of a generation with the KV cache and without it."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from kvviz import ops, ui
from kvviz import ui_ops_memory as uim
from kvviz.figures import ops as figs

ui.ensure_router()  # before anything is drawn: see its docstring
st.title("Count the work")
with st.expander("What you are seeing", expanded=False):
    st.markdown(
        "Generating N tokens after a P-token prompt takes N forward passes. **With the cache**, pass k feeds "
        "one token: its Q, K, V, its MLP, and one query against every cached key. **Without it**, pass k "
        "recomputes everything for all P + k - 1 tokens, so the work grows with the square of the length.\n\n"
        "**Units.** 1 op = 1 multiply-add; **1 FLOP = half an op** (FLOPs = 2 x ops). One *attention dot "
        "product* is one query . key score over head_dim numbers (= head_dim ops). **Causal**: the query at "
        "position p scores keys 0..p; masked pairs are not counted. Only matrix multiplications are counted "
        "(layer norms, softmax, GELU and biases are small and elementwise). Pass 1 is the prefill."
    )
FIELDS = uim.ops_fields()
for notice in uim.seed_from_url(FIELDS):
    st.warning(notice)


@st.fragment
def counter() -> None:
    c = st.columns([2, 1, 1, 2])
    c[0].selectbox("Model", list(FIELDS["ops_model"].choices), key="ops_model")
    with c[1]:
        prompt_len = uim.int_input("Prompt tokens P", "ops_prompt", 1, 10**6)
    with c[2]:
        new_tokens = uim.int_input("New tokens N", "ops_new", 1, 10**6)
    c[3].radio("Logits computed for", ["last", "all"], key="ops_lm", horizontal=True,
               format_func=lambda v: {"last": "last position (generate)", "all": "every position (model(ids))"}[v])
    shape, limit = uim.ops_shape()
    t = st.columns(3)
    flops = t[0].toggle("Show FLOPs (2 per op)", key="ops_flops")
    log_y = t[1].toggle("Log scale", key="ops_log")
    uim.push_to_url(FIELDS)
    if shape is None:
        return
    if limit is not None and prompt_len + new_tokens - 1 > limit:
        st.warning(f"P + N - 1 = {prompt_len + new_tokens - 1:,} tokens exceeds this model's context limit of "
                   f"{limit:,}; the counts are still exact arithmetic, but the model could not run that far.")
    lm_all = st.session_state["ops_lm"] == "all"
    cached, uncached = ops.generation_totals(shape, prompt_len, new_tokens, lm_head_all_positions=lm_all)
    scale, unit = (ops.FLOPS_PER_OP, "FLOPs") if flops else (1, "ops")
    m = st.columns(3)
    m[0].metric(f"With KV cache ({unit})", uim.big_number(scale * cached.total_ops), help=f"{scale * cached.total_ops:,}")
    m[1].metric(f"Without cache ({unit})", uim.big_number(scale * uncached.total_ops), help=f"{scale * uncached.total_ops:,}")
    m[2].metric("Without / with", f"{uncached.total_ops / cached.total_ops:,.1f}x")

    tabs = st.tabs(["Cumulative", "Ratio", "Per component", "Per pass", "The '500x' claim", "Why no Q cache?"])
    points = ops.curve(shape, prompt_len, new_tokens, max_points=300, lm_head_all_positions=lm_all)
    with tabs[0]:
        quantity = st.selectbox("Quantity", list(figs.QUANTITIES), key="ops_quantity",
                                format_func=lambda q: figs.QUANTITIES[q][0])
        st.plotly_chart(figs.cumulative_figure(points, quantity, flops, log_y), key="ops_chart_cum")
    with tabs[1]:
        st.plotly_chart(figs.ratio_figure(points), key="ops_chart_ratio")
    with tabs[2]:
        st.plotly_chart(figs.breakdown_figure(cached, uncached, flops, log_y=True), key="ops_chart_parts")
        rows = [{"component": ops.COMPONENT_LABELS[k], f"with cache ({unit})": f"{scale * cached.ops(k):,}",
                 f"without ({unit})": f"{scale * uncached.ops(k):,}", "saved": f"{scale * (uncached.ops(k) - cached.ops(k)):,}",
                 "without / with": f"{uncached.ops(k) / cached.ops(k):,.1f}x"} for k in ops.COMPONENTS]
        st.dataframe(pd.DataFrame(rows), hide_index=True)
        st.markdown(
            f"Attention dot products: **{cached.attention_dot_products:,}** with the cache, "
            f"**{uncached.attention_dot_products:,}** without. The cache removes the recomputation of old tokens' "
            "projections and MLP (a factor ~L/2 over a generation) and of old queries' scores; the LM head saves "
            "nothing when only the last position's logits are computed."
        )
    with tabs[3]:
        shown = min(new_tokens, 64)
        steps = list(ops.generation_steps(shape, prompt_len, shown, lm_head_all_positions=lm_all))
        st.plotly_chart(figs.per_step_figure([s.index for s in steps], [s.cached for s in steps],
                                             [s.uncached for s in steps]), key="ops_chart_steps")
        st.dataframe(pd.DataFrame([{
            "pass": s.index, "context after": s.context_len, "tokens fed (cache)": s.cached.tokens_fed,
            "dot products (cache)": s.cached.attention_dot_products, "ops (cache)": s.cached.total_ops,
            "tokens fed (no cache)": s.uncached.tokens_fed, "dot products (no cache)": s.uncached.attention_dot_products,
            "ops (no cache)": s.uncached.total_ops} for s in steps]), hide_index=True)
        if shown < new_tokens:
            st.caption(f"First {shown} passes shown; the totals above cover all {new_tokens:,}.")
    with tabs[4]:
        n = 1000
        st.markdown("**Claim:** *with a KV cache, generating 1000 tokens takes ~500x fewer computations.* "
                    "Checked for this model, 1-token prompt, 1000 passes (LM head: last position):")
        st.dataframe(pd.DataFrame([{"quantity": r.quantity, "without cache": f"{r.uncached:,}", "with cache": f"{r.cached:,}",
                                    "ratio": f"{r.ratio:,.1f}x", "~500x?": "yes" if r.holds else "no"}
                                   for r in ops.check_speedup_claim(shape, n)]), hide_index=True)
        st.markdown(f"Exactly: the **attention of the last step** shrinks by (L+1)/2 = {(n + 1) / 2:g}x and the "
                    f"**projections + MLP summed over the generation** by (N+1)/2 = {(n + 1) / 2:g}x; but attention "
                    f"over the whole generation only by (N+2)/3 = {(n + 2) / 3:g}x, and one step's projections and "
                    f"MLP by L = {n}x. The claim mixes a per-step attention ratio with a whole-run saving.")
    with tabs[5]:
        st.markdown(
            "A query is used once: by its own token, at its own step, to read the past. No later token ever "
            "needs an old query. Keys and values are the opposite: every future query reads all of them. So "
            "the cache keeps K and V and throws Q away. With the cache, a decode pass computes exactly "
            f"**one** query per head per layer ({shape.n_layer * shape.n_head:,} queries for this model)."
        )


counter()
