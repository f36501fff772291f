"""Step through a GPT-2 generation token by token and watch the real KV cache fill."""
from __future__ import annotations

import streamlit as st

from kvviz import step_view, ui
from kvviz.figures import step as figs
from kvviz.stepping import ContextFullError, PromptError, Sampling

PRESETS = {
    "ROMEO:": "ROMEO:",
    "First Citizen": "First Citizen:\nBefore we proceed any further, hear me speak.",
    "To be, or not to be": "HAMLET:\nTo be, or not to be, that is the question:",
    "Repeat a pattern": "one two three one two three one two",
}

ui.ensure_router()  # before anything is drawn: see its docstring
st.title("Step through a generation")
with st.expander("What you are seeing", expanded=False):
    st.markdown(
        "A transformer generates text one token at a time. At every layer each token gets a **query**, a **key** "
        "and a **value** vector. A new token's query must be compared with the keys of *all* earlier tokens, and "
        "it averages their values. Those earlier keys and values never change, so the model stores them: the "
        "**KV cache**.\n\n"
        "1. **Prefill** feeds the whole prompt in one pass: every layer's cache gets one row per prompt token.\n"
        "2. Each **Next token** feeds only the newest token: every layer computes *one* new K row and *one* new "
        "V row (outlined in orange), appends them, and the new query attends over all cached rows.\n"
        "3. The token the model just chose (dashed box) is not in the cache yet: its K/V row is computed by the "
        "next step.\n4. **Back** crops the cache by one row, exactly as real engines roll back.\n\n"
        "Without the cache the model would recompute every row at every step, and get the same answer: "
        "see *Without the cache* below."
    )

loaded = ui.current_model("eager")
engine = ui.step_engine(loaded)
info = loaded.info

left, right = st.columns([3, 2])
with left:
    preset = st.selectbox("Classroom presets", list(PRESETS), key="step_preset")
    prompt = st.text_area("Prompt", value=PRESETS[preset], height=90, key=f"step_prompt_{preset}")
with right:
    with st.expander("Sampling", expanded=False):
        greedy = st.toggle("Greedy (always the most likely token)", value=True, key="step_greedy")
        temperature = st.slider("Temperature", 0.1, 2.0, 1.0, 0.05, key="step_temperature", disabled=greedy)
        top_k = st.number_input("Top-k (0 = off)", 0, 200, 40, key="step_top_k", disabled=greedy)
        seed = st.number_input("Seed", 0, 1_000_000, 0, key="step_seed", disabled=greedy)
    engine.sampling = Sampling(greedy=greedy, temperature=temperature, top_k=int(top_k), seed=int(seed))
    play_n = st.number_input("Play N steps", 1, 64, 8, key="step_play_n")

actions = {"prefill": "Prefill", "next": "Next token", "back": "Back", "play": f"Play {play_n}", "reset": "Reset"}
clicked = {
    action: col.button(label, key=f"step_btn_{action}", use_container_width=True,
                       type="primary" if action == "next" else "secondary")
    for (action, label), col in zip(actions.items(), st.columns(len(actions)))
}
try:
    if clicked["prefill"]:
        engine.prefill(prompt)
    elif clicked["next"]:
        engine.step()
    elif clicked["back"]:
        engine.back()
    elif clicked["play"]:
        for _ in range(int(play_n)):
            engine.step()
    elif clicked["reset"]:
        engine.reset()
except (PromptError, ContextFullError) as exc:
    st.warning(str(exc))

if not engine.started:
    st.info(f"Choose a prompt and press **Prefill**. Model: {info.label}.")
    st.stop()

st.markdown(step_view.strip_html(step_view.token_strip(engine)), unsafe_allow_html=True)
record = engine.records[-1]
count = step_view.counters(engine.records, info.n_layer, info.n_head)
m = st.columns(6)
m[0].metric("Cache length", f"{engine.cache_len} tokens", delta=record.n_fed, help=f"limit: {info.n_positions}")
m[1].metric("Cache bytes", f"{engine.cache_bytes:,} B",
            help=f"summed from the real K/V tensors: {step_view.format_bytes(engine.cache_bytes)}")
m[2].metric("Dot products this step", f"{count.this_dot_products_cached:,}", help="query-key scores, with the cache")
m[3].metric("...without cache", f"{count.this_dot_products_uncached:,}", help="the same step recomputing everything")
m[4].metric("Dot products so far", f"{count.total_dot_products_cached:,}", help="since the prefill, with the cache")
m[5].metric("...so far without cache", f"{count.total_dot_products_uncached:,}",
            help="since the prefill, recomputing everything at every step")
st.caption(
    f"{record.kind} step {record.index}: fed {record.n_fed} token(s) in {record.step_ms:.1f} ms. "
    f"This step, with cache: {count.this_dot_products_cached:,} query-key dot products and "
    f"{count.this_kv_rows_cached:,} new K (and V) rows; without cache: {count.this_dot_products_uncached:,} dot "
    f"products and {count.this_kv_rows_uncached:,} K (and V) rows, all recomputed. "
    f"Cache: {step_view.format_bytes(engine.cache_bytes)} = 2 (K,V) x {info.n_layer} layers x "
    f"{info.n_kv_heads} heads x {engine.cache_len} tokens x {info.head_dim} dims x 4 bytes."
)

sel = st.columns(2)
layer = sel[0].selectbox("Layer", range(info.n_layer), index=0, key="step_layer")
head = sel[1].selectbox("Head", range(info.n_kv_heads), index=0, key="step_head")
tokens = [t.text for t in step_view.token_strip(engine) if t.position is not None]
new_rows = record.fed_positions if record.kind == "decode" else ()
kv = st.columns(2)
kv[0].plotly_chart(figs.cache_heatmap(engine.layer_keys(layer)[head], tokens, new_rows,
                                      f"K cache, layer {layer}, head {head}"), key="step_fig_k")
kv[1].plotly_chart(figs.cache_heatmap(engine.layer_values(layer)[head], tokens, new_rows,
                                      f"V cache, layer {layer}, head {head}"), key="step_fig_v")
av = st.columns(2)
av[0].plotly_chart(figs.attention_bars(record.attention[layer, head], tokens, tokens[-1]), key="step_fig_attn")
av[1].plotly_chart(figs.next_token_bars([t.text for t in record.top_k], [t.prob for t in record.top_k],
                                        record.next_token_text), key="step_fig_next")

# Expanders with on_change="rerun" know whether they are open: their figures are built only when shown,
# which keeps a Next-token click fast (measured with bench/step_click.py).
overview = st.expander("All layers: every layer's cache grows by one row per step", key="step_exp_layers",
                       on_change="rerun")
if overview.open:
    with overview:
        keys = [engine.layer_keys(i) for i in range(info.n_layer)]
        st.plotly_chart(figs.layers_overview(keys, head, new_rows), key="step_fig_layers")

uncached = st.expander("Without the cache: recompute everything, get the same answer", key="step_exp_uncached",
                        on_change="rerun")
if uncached.open:
    with uncached:
        check = engine.check_without_cache()
        st.markdown(
            f"An uncached step feeds all **{check.recomputed_rows}** tokens again and recomputes every K and V row "
            f"(outlined in red) in all {info.n_layer} layers, just to get the last position's logits.\n\n"
            f"- max |logit difference| cached vs recomputed: **{check.max_abs_logit_diff:.2e}**\n"
            f"- max |K difference| {check.max_abs_key_diff:.2e}, max |V difference| {check.max_abs_value_diff:.2e}\n"
            f"- same next token: **{'yes' if check.same_next_token else 'no'}**\n\n"
            "The differences are float32 rounding (summation order), not a different result: caching changes "
            "speed, not answers."
        )
        st.plotly_chart(figs.cache_heatmap(engine.layer_keys(layer)[head], tokens, range(engine.cache_len),
                                           f"K rows an uncached step recomputes (layer {layer}, head {head})",
                                           highlight_color=figs.RECOMPUTED_COLOR), key="step_fig_uncached")
        steps, with_cache, without_cache = step_view.cumulative_series(engine.records, info.n_layer, info.n_head)
        st.plotly_chart(figs.growth_chart(steps, with_cache, without_cache, "query-key dot products"),
                        key="step_fig_growth")
